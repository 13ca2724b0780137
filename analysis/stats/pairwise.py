"""Simultaneous pairwise planner contrasts with episode-cluster resampling (paper C.5;
docs/statistics.md, "Pairwise planner contrasts").

:func:`pairwise_simultaneous` checks a tidy frame, reduces it to per-episode sums
(:class:`analysis.stats.mover.EpisodeSums`), runs the family of the chosen method
(the default :func:`analysis.stats.mover.mover_family`, or a comparison method of
:mod:`analysis.stats.experimental`) and lays the contrasts out as a table.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ._core import (
    WARN_CLUSTERS,
    one_blas_thread,
    Provenance,
    check_cluster_count,
    check_cluster_ids,
    emit_warnings,
    recorded_seed,
    ESTIMAND,
    check_choice,
    check_columns,
    check_values,
    check_confidence,
    check_resamples,
)
from .intervals import satterthwaite_df  # noqa: F401  (public here since the first release)
# Public here since the first release; the implementations moved to their own modules.
from .experimental.candidates import NEAR_BOUND_COUNT  # noqa: F401
from .experimental.maxt import (effective_clusters, family_inference,  # noqa: F401
                                jackknife_se, maxt_family)
from .mover import (MOVER_METHODS, EpisodeSums, MoverFamily,  # noqa: F401
                    MoverOptions, mover_family)
from .multiplicity import _single_step, _stepdown, contrast_matrix  # noqa: F401

METHODS = (
    "mover_kg_maxz",
    "mover_wilson_maxz",
    "cr2bm_mover_maxz",
    "satt_maxt_tcal",
    "pairs_maxt_studentized",
    "gauss_maxt_tcal",
    "cr3_maxt_tcal",
    "geff_maxt_tcal",
    "bonferroni_t",
    "wild_maxt",
)
DEFAULT_METHOD = "mover_kg_maxz"
#: Why a stepdown p-value below the level can sit beside a tie (printed in table notes).
STEPDOWN_NOTE = ("Verdicts come from the simultaneous intervals; the single-step p-value "
                 "is below the level exactly when the interval excludes 0. Romano-Wolf "
                 "stepdown p-values are never larger than single-step ones (each step drops "
                 "the contrasts already rejected), so a tie can have a stepdown p below the "
                 "level: the stepdown test rejects, the simultaneous interval does not.")

#: Added to the note of the default with fewer than 8 episodes (mover_family step 4).
FEW_EPISODES_NOTE = (" With fewer than 8 episodes the family level is at least Sidak's and the "
                     "stepdown p-values are Holm-Sidak (the multiplier's correlation has rank "
                     "below G).")


@dataclass(frozen=True)
class PairwiseResult(Provenance):
    """Result of :func:`pairwise_simultaneous`.

    ``table``: one row per (planner_a, planner_b, metric) with ``estimate`` (a - b),
    ``se`` (CR1), ``t``, ``low``, ``high`` (simultaneous), ``p_single_step``,
    ``p_stepdown`` (Romano-Wolf; Holm for ``bonferroni_t``), ``verdict`` in
    {``a>b``, ``b>a``, ``tie``}, ``zero_se`` and ``set_aside``. ``critical_value`` is
    the family-wise threshold (|z| for ``mover_kg_maxz``, whose intervals are each at
    ``per_contrast_level``; |t| otherwise). Under ``mover_kg_maxz`` a zero-SE contrast
    keeps an honest interval (from the exact bounds of its two means) and is not set
    aside; under the t methods ``set_aside`` lists zero-SE contrasts (kept out of the
    family, never divided by zero; their interval is the point estimate).
    ``warnings`` holds the few-episode warning, ``note`` how p-values and verdicts relate.
    """

    table: pd.DataFrame
    critical_value: float
    set_aside: pd.DataFrame
    n_clusters: int
    family_size: int
    estimand: str = ESTIMAND
    per_contrast_level: float = float("nan")
    warnings: tuple = ()
    note: str = ""


@one_blas_thread
def pairwise_simultaneous(
    df: pd.DataFrame,
    metrics,
    planner_col: str = "planner",
    task_col: str = "task_id",
    cluster_col: str = "episode_id",
    method: str = DEFAULT_METHOD,
    n_resamples: int = 10_000,
    confidence_level: float = 0.95,
    seed: int | np.random.Generator | None = 0,
    planners=None,
) -> PairwiseResult:
    """All planner pairs x metrics with simultaneous intervals (episode clusters).

    ``df`` has one row per (planner, task); every planner must cover the same tasks.
    Each contrast is ``mean_a - mean_b`` over all tasks (a ratio of per-episode
    sums of task differences); its CR1 SE uses G/(G-1). Methods:

    * ``mover_kg_maxz`` (default, :func:`mover_family`): the family's max-|z| level
      from a Gaussian multiplier on the episode scores; each contrast the MOVER
      interval of its two means' Korn-Graubard Clopper-Pearson intervals at that level
      (asymmetric near 0 and 1; a zero-SE contrast keeps an honest interval, never a
      point; every other half-width at least ``t_{G-1}`` times the contrast's CR1 SE;
      family level at least Sidak's with fewer than 8 episodes); p-values by inverting
      the intervals, so single-step p < level exactly
      when the interval excludes 0. Holds family-wise coverage under true differences
      and rare success in ``bench/coverage.py`` (docs/statistics.md).
    * ``mover_wilson_maxz``, ``cr2bm_mover_maxz`` (issue 11's power round, not the
      default; :func:`mover_family`): as the default with each mean's Korn-Graubard
      Wilson interval in place of Clopper-Pearson, or with ``d +- t_nu se_CR2``
      (Bell-McCaffrey df) for contrasts whose means are away from 0 and 1. Neither both
      covers 0.93 in every design and matches Bonferroni-t's power (docs/statistics.md).
    * ``satt_maxt_tcal`` (the previous default): CR1 SEs; the contrasts' joint correlation from a
      Gaussian multiplier on the episode scores gives a max-|z| quantile, whose
      per-contrast tail probability is converted to a t quantile with Satterthwaite
      degrees of freedom (cluster score variances modelled as ``b1 n_g + b2 n_g^2``,
      fitted on the family; ``G - 1`` for equal episodes). Exact at both ends
      (perfectly correlated contrasts -> t, independent -> Sidak-t); covers under the
      null but not under true differences of binary rates or at zero SE.
    * ``pairs_maxt_studentized``: episode pairs bootstrap of max-|t|, re-studentised
      with CR1 SEs in every replicate (conservative with 18 episodes).
    * ``gauss_maxt_tcal``: as the default with t(G-1) (undercovers with unequal episodes).
    * ``cr3_maxt_tcal``: jackknife (CR3) SEs, jackknife correlation, t(G-1).
    * ``geff_maxt_tcal``: t(G_eff - 1), ``G_eff = (sum n_g)^2 / sum n_g^2``.
    * ``bonferroni_t``: CR1 SE with t(G-1) at alpha/(2m); Holm stepdown.
    * ``wild_maxt``: Rademacher weights per episode on the cluster scores.

    p-values are family-wise: ``p_single_step`` against the max over all active
    contrasts, ``p_stepdown`` Romano-Wolf. A contrast whose interval contains 0 is a
    ``tie`` (a stepdown p below the level can sit beside a tie: ``.note``). Under the t
    methods, contrasts with zero SE are set aside (flagged, interval = point).
    A missing episode ID, a task in different episodes across planners, an unknown
    planner or metric, or fewer than 3 episodes is an error; fewer than 8 a warning.

    Example
    -------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"planner": np.repeat(["a", "b", "c"], 40),
    ...                    "task_id": np.tile(np.arange(40), 3),
    ...                    "episode_id": np.tile(np.arange(40) // 4, 3),
    ...                    "success": rng.integers(0, 2, 120)})
    >>> r = pairwise_simultaneous(df, ["success"], n_resamples=1000)
    >>> len(r.table), r.method
    (3, 'mover_kg_maxz')
    """
    check_choice("method", method, METHODS)
    conf = check_confidence(confidence_level)
    B = check_resamples(n_resamples)
    metrics = [metrics] if isinstance(metrics, str) else list(metrics)
    df, plist = _checked_frame(df, metrics, planner_col, task_col, cluster_col, planners)
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    sums, integral, G = _episode_sums(df, metrics, plist, planner_col, task_col, cluster_col)
    warn = emit_warnings([check_cluster_count(G, f"pairwise contrasts ({', '.join(metrics)})")])
    if method in MOVER_METHODS:
        fam = mover_family(sums, conf, B, rng, MOVER_METHODS[method])
        set_aside, family_size = np.zeros(len(fam.estimate), bool), len(fam.estimate)
    else:
        fam = maxt_family(method, sums.S, sums.n_g, sums.n_planners, sums.n_metrics, integral,
                          1 - conf, B, rng)
        set_aside, family_size = fam.zero_se, fam.family_size
    table = _contrast_table(fam, set_aside, plist, metrics)
    return PairwiseResult(
        table=table,
        critical_value=float(fam.critical_value),
        set_aside=table.loc[set_aside, ["planner_a", "planner_b", "metric", "estimate"]].reset_index(drop=True),
        method=method,
        n_resamples=0 if method == "bonferroni_t" else B,
        confidence_level=conf,
        seed=recorded_seed(seed),
        n_clusters=G,
        family_size=family_size,
        per_contrast_level=fam.per_contrast_level,
        warnings=warn,
        note=STEPDOWN_NOTE + (FEW_EPISODES_NOTE if method in MOVER_METHODS and G < WARN_CLUSTERS
                              else ""),
    )


def _checked_frame(df, metrics, planner_col, task_col, cluster_col, planners):
    """Stage 1: the rows of the planners asked for (all by default) and their list, in
    order; refuses (``ValueError`` naming the column, planner or task) an unknown
    metric or planner, a missing value or episode ID, a duplicated (planner, task), a
    task in different episodes across planners, or fewer than two planners."""
    if not metrics:
        raise ValueError("metrics must name at least one column")
    missing = [m for m in metrics if m not in df.columns]
    if missing:
        raise ValueError(f"unknown metric(s) {missing}; valid columns: {sorted(map(str, df.columns))}")
    check_columns(df, [planner_col, task_col, cluster_col, *metrics])
    check_values(df, metrics)
    check_cluster_ids(df, cluster_col)
    known = list(pd.unique(df[planner_col]))
    if planners is not None:
        unknown = [p for p in planners if p not in set(known)]
        if unknown:
            raise ValueError(f"unknown planner(s) {unknown} in planners=; valid: {sorted(map(str, known))}")
        df = df[df[planner_col].isin(list(planners))]
    if df.duplicated([planner_col, task_col]).any():
        raise ValueError(f"df must have one row per ({planner_col}, {task_col}); found duplicates")
    nan_m = [m for m in metrics if df[m].isna().any()]
    if nan_m:
        raise ValueError(f"metrics {nan_m} contain missing values; every task needs a value")
    plist = known if planners is None else list(planners)
    if len(plist) < 2:
        raise ValueError(f"{planner_col} must have at least two planners; found {plist}")
    eps = df.groupby(task_col)[cluster_col].nunique()
    if (eps > 1).any():
        t0 = eps[eps > 1].index[0]
        found = sorted(map(str, df.loc[df[task_col] == t0, cluster_col].unique()))
        raise ValueError(f"{task_col} {t0!r} is mapped to different {cluster_col}s across "
                         f"planners: {found}; a task belongs to one episode")
    return df, plist


def _episode_sums(df, metrics, plist, planner_col, task_col, cluster_col):
    """Stage 2: ``(sums, integral, G)``: the per-episode sums and sums of squares of
    every (planner, metric) column, planner-major (p0m0, p0m1, ...), whether every task
    value is an integer, and the number of episodes. Every planner must cover the same
    tasks."""
    wide = df.pivot(index=task_col, columns=planner_col, values=metrics)
    if wide.isna().any().any():
        raise ValueError(f"every planner must cover the same {task_col} set")
    tasks = df.drop_duplicates(task_col).set_index(task_col)[cluster_col]
    ep = tasks.loc[wide.index]
    clusters, cl_idx = np.unique(ep.to_numpy(), return_inverse=True)
    G = len(clusters)
    P, M = len(plist), len(metrics)
    X = np.column_stack([wide[(m, p)].to_numpy(float) for p in plist for m in metrics])
    S = np.zeros((G, P * M))
    np.add.at(S, cl_idx, X)
    Q = np.zeros((G, P * M))
    np.add.at(Q, cl_idx, X * X)
    n_g = np.bincount(cl_idx, minlength=G).astype(float)
    bounded = np.array([bool(np.all((X[:, k::M] >= 0) & (X[:, k::M] <= 1))) for k in range(M)])
    sums = EpisodeSums(S=S, Q=Q, n_g=n_g, n_planners=P, n_metrics=M, bounded=bounded)
    return sums, bool(np.all(X == np.round(X))), G


def _contrast_table(fam, set_aside, plist, metrics) -> pd.DataFrame:
    """Stage 4: one row per (planner_a, planner_b, metric) with the family's estimate,
    SE, t, interval, p-values and verdict (``tie`` when the interval contains 0)."""
    theta, se, zero, low, high = fam.estimate, fam.se, fam.zero_se, fam.low, fam.high
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.where(~zero, theta / np.where(~zero, se, 1.0), np.nan)
    verdict = np.where(low > 0, "a>b", np.where(high < 0, "b>a", "tie"))
    return pd.DataFrame({
        "planner_a": [plist[a] for a, b in fam.pairs for _ in metrics],
        "planner_b": [plist[b] for a, b in fam.pairs for _ in metrics],
        "metric": [m for _ in fam.pairs for m in metrics],
        "estimate": theta, "se": se, "t": t, "low": low, "high": high,
        "p_single_step": fam.p_single_step, "p_stepdown": fam.p_stepdown, "verdict": verdict,
        "zero_se": zero, "set_aside": set_aside,
    })

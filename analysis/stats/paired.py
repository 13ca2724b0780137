"""Paired conditions (memory study): 2x2 table, exact tests, paired differences."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from ._core import (
    Provenance,
    recorded_seed,
    ESTIMAND,
    check_columns,
    check_confidence,
    check_resamples,
    cr1_se,
    pairs_weights,
    quantile,
)
from .bootstrap import interval_from_replicates

MCNEMAR_NOTE = "exact McNemar (binomial on discordant tasks); assumes independent tasks"
SIGN_FLIP_NOTE = ("exact cluster sign-flip test: statistic |sum_g d_g| with d_g the episode's "
                  "(only a - only b) count, over all 2^G sign patterns")


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p: binomial test of ``only_a`` out of the discordant pairs.

    >>> mcnemar_exact(2, 2)
    1.0
    """
    n = int(only_a) + int(only_b)
    if n == 0:
        return 1.0
    return float(stats.binomtest(int(only_a), n, 0.5).pvalue)


def sign_flip_enumerate(d, chunk: int = 1 << 16) -> float:
    """Exact sign-flip p by enumerating all sign patterns of the nonzero ``d`` in chunks.

    Clusters with ``d_g = 0`` do not change the statistic, so only the G' nonzero
    clusters are enumerated (2^G' patterns; the share is the same over 2^G).
    """
    d = np.asarray(d, dtype=float)
    d = d[d != 0]
    if d.size == 0:
        return 1.0
    obs = abs(d.sum())
    tol = 1e-9 * np.abs(d).sum()
    g = d.size
    total = 1 << g
    hits = 0
    bits = np.arange(g, dtype=np.int64)
    for start in range(0, total, chunk):
        k = np.arange(start, min(start + chunk, total), dtype=np.int64)
        signs = 1 - 2 * ((k[:, None] >> bits) & 1)
        hits += int((np.abs(signs @ d) >= obs - tol).sum())
    return hits / total


def sign_flip_p(d) -> float:
    """Exact two-sided cluster sign-flip p-value for ``sum_g d_g``.

    Integer ``d`` (counts of discordant tasks) uses the exact distribution of
    ``sum_g s_g d_g`` by convolution (cost G x sum|d|, any G); other ``d`` fall back
    to :func:`sign_flip_enumerate`.

    >>> sign_flip_p([1, -1, 2])  # sums +-4, +-2, +-2, 0, 0: |sum| >= 2 in 6 of 8
    0.75
    """
    d = np.asarray(d, dtype=float)
    if not np.all(d == np.round(d)):
        return sign_flip_enumerate(d)
    di = np.abs(d[d != 0]).astype(np.int64)
    if di.size == 0:
        return 1.0
    obs = abs(int(np.round(d.sum())))
    tot = int(di.sum())
    dist = np.zeros(2 * tot + 1, dtype=object)  # exact integer counts
    dist[tot] = 1
    for v in di:
        dist = np.roll(dist, v) + np.roll(dist, -v)  # no wrap: support stays in [-tot, tot]
    vals = np.arange(-tot, tot + 1)
    hits = int(dist[np.abs(vals) >= obs].sum())
    return hits / (1 << di.size)


@dataclass(frozen=True)
class PairedConditionsResult(Provenance):
    """Result of :func:`paired_conditions`.

    ``table``: one row per column (outcome first) with ``mean_a, mean_b,
    difference, low, high, se`` (paired difference a - b, episode bootstrap-t),
    ``sum_a, sum_b, relative_change`` ((sum a - sum b) / sum b) with a percentile
    interval ``rel_low, rel_high``. ``contingency``: the 2x2 counts ``both, only_a,
    only_b, neither``; ``discordant``: the same per episode.
    """

    table: pd.DataFrame
    contingency: dict
    discordant: pd.DataFrame
    mcnemar_p: float
    mcnemar_note: str
    sign_flip_p: float
    sign_flip_note: str
    n_sign_patterns: int
    a: str
    b: str
    estimand: str = ESTIMAND


def paired_conditions(
    df: pd.DataFrame,
    condition_col: str,
    a,
    b,
    task_col: str = "task_id",
    cluster_col: str = "episode_id",
    outcome_col: str = "success",
    value_cols=("action_validity", "query_attempts", "prompt_tokens", "completion_tokens"),
    n_resamples: int = 10_000,
    confidence_level: float = 0.95,
    seed: int | np.random.Generator | None = 0,
) -> PairedConditionsResult:
    """Compare two conditions on the same tasks (e.g. ``memory`` persistent vs reset).

    ``df`` has one row per (condition, task). The binary ``outcome_col`` gives the
    2x2 table and the exact tests (McNemar, labelled as assuming independent tasks;
    the cluster sign-flip over all 2^G episode sign patterns). For the outcome and
    every value column, the paired difference ``mean_a - mean_b`` over tasks gets an
    episode-cluster bootstrap-t interval (CR1 studentisation), and the relative change
    of sums ``(sum_a - sum_b) / sum_b`` a percentile interval from the same resamples.

    Example
    -------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"memory": ["p"] * 4 + ["r"] * 4, "task_id": [1, 2, 3, 4] * 2,
    ...     "episode_id": [1, 1, 2, 2] * 2, "success": [1, 1, 0, 0, 1, 0, 1, 0]})
    >>> r = paired_conditions(df, "memory", "p", "r", value_cols=(), n_resamples=200)
    >>> r.contingency, r.mcnemar_p
    ({'both': 1, 'only_a': 1, 'only_b': 1, 'neither': 1}, 1.0)
    """
    conf = check_confidence(confidence_level)
    B = check_resamples(n_resamples)
    value_cols = [value_cols] if isinstance(value_cols, str) else list(value_cols)
    check_columns(df, [condition_col, task_col, cluster_col, outcome_col, *value_cols])
    conds = set(df[condition_col].unique())
    for name, v in (("a", a), ("b", b)):
        if v not in conds:
            raise ValueError(f"{name}={v!r} is not a value of {condition_col}; found {sorted(map(str, conds))}")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    cols = [outcome_col, *[c for c in value_cols if c != outcome_col]]
    sub = df[df[condition_col].isin([a, b])]
    if sub.duplicated([condition_col, task_col]).any():
        raise ValueError(f"df must have one row per ({condition_col}, {task_col})")
    A = sub[sub[condition_col] == a].set_index(task_col)
    Bd = sub[sub[condition_col] == b].set_index(task_col)
    if set(A.index) != set(Bd.index):
        raise ValueError(f"conditions {a!r} and {b!r} must cover the same {task_col} set")
    Bd = Bd.loc[A.index]
    y_a = A[outcome_col].astype(float).to_numpy()
    y_b = Bd[outcome_col].astype(float).to_numpy()
    if not np.all(np.isin(np.concatenate([y_a, y_b]), [0.0, 1.0])):
        raise ValueError(f"outcome_col={outcome_col!r} must be binary (0/1 or bool)")
    ep = A[cluster_col].to_numpy()
    clusters, cl = np.unique(ep, return_inverse=True)
    G = len(clusters)
    if G < 2:
        raise ValueError(f"{cluster_col} must have at least 2 clusters; found {G}")
    ya, yb = y_a.astype(np.int64), y_b.astype(np.int64)
    cells = {"both": ya & yb, "only_a": ya & (1 - yb), "only_b": (1 - ya) & yb,
             "neither": (1 - ya) & (1 - yb)}
    disc = pd.DataFrame({k: np.bincount(cl, weights=v, minlength=G).astype(np.int64)
                         for k, v in cells.items()})
    disc.insert(0, "n_tasks", np.bincount(cl, minlength=G))
    disc.insert(0, cluster_col, clusters)
    contingency = {k: int(v.sum()) for k, v in cells.items()}
    d_g = (disc["only_a"] - disc["only_b"]).to_numpy()

    # per-episode sums (G, K) of a, b and their difference
    Xa = A[cols].astype(float).to_numpy()
    Xb = Bd[cols].astype(float).to_numpy()
    if np.isnan(Xa).any() or np.isnan(Xb).any():
        raise ValueError(f"columns {cols} contain missing values")
    Sa = np.zeros((G, len(cols)))
    Sb = np.zeros((G, len(cols)))
    np.add.at(Sa, cl, Xa)
    np.add.at(Sb, cl, Xb)
    Sd = Sa - Sb
    N = np.repeat(np.bincount(cl, minlength=G).astype(float)[:, None], len(cols), axis=1)
    theta, se, zero = cr1_se(Sd, N)
    W = pairs_weights(rng, B, G)
    alpha = (1 - conf) / 2
    low, high = interval_from_replicates("bootstrap_t", theta, se, zero, Sd, N, G, W, alpha)
    sa, sb = Sa.sum(axis=0), Sb.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        rel = np.where(sb != 0, (sa - sb) / sb, np.nan)
        rel_b = (W @ Sa) / (W @ Sb) - 1
    rlo, rhi = quantile(rel_b, [alpha, 1 - alpha], axis=0)
    table = pd.DataFrame({
        "column": cols, "mean_a": sa / N.sum(axis=0), "mean_b": sb / N.sum(axis=0),
        "difference": theta, "low": low, "high": high, "se": se,
        "sum_a": sa, "sum_b": sb, "relative_change": rel,
        "rel_low": np.where(np.isnan(rel), np.nan, rlo),
        "rel_high": np.where(np.isnan(rel), np.nan, rhi),
    })
    return PairedConditionsResult(
        table=table,
        contingency=contingency,
        discordant=disc,
        mcnemar_p=mcnemar_exact(contingency["only_a"], contingency["only_b"]),
        mcnemar_note=MCNEMAR_NOTE,
        sign_flip_p=sign_flip_p(d_g),
        sign_flip_note=SIGN_FLIP_NOTE,
        n_sign_patterns=1 << G,
        a=str(a),
        b=str(b),
        method="bootstrap_t",
        n_resamples=B,
        confidence_level=conf,
        seed=recorded_seed(seed),
    )

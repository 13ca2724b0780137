"""Paired conditions (memory study): 2x2 table, exact tests, paired differences."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from ._core import (
    one_blas_thread,
    Provenance,
    check_cluster_count,
    check_cluster_ids,
    emit_warnings,
    recorded_seed,
    ESTIMAND,
    check_columns,
    check_values,
    check_confidence,
    check_resamples,
    cr1_se,
    pairs_weights,
)
from .bootstrap import interval_from_replicates
from .intervals import column_df, kg_interval, mover_difference

MCNEMAR_NOTE = "exact McNemar (binomial on discordant tasks); assumes independent tasks"
SIGN_FLIP_NOTE = ("exact cluster sign-flip test: statistic |sum_g d_g| with d_g the episode's "
                  "(only a - only b) count, over all 2^G sign patterns")


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p: binomial test of ``only_a`` out of the discordant pairs.

    >>> mcnemar_exact(2, 2)
    1.0
    """
    for name, v in (("only_a", only_a), ("only_b", only_b)):
        if isinstance(v, bool) or not float(v) == int(v) or int(v) < 0:
            raise ValueError(f"{name}={v!r}: expected a non-negative integer count")
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
    if d.ndim != 1 or d.size == 0:
        raise ValueError(f"d: expected a non-empty 1-D array of per-cluster differences, "
                         f"got shape {d.shape}")
    if not np.all(np.isfinite(d)):
        i = int(np.flatnonzero(~np.isfinite(d))[0])
        raise ValueError(f"d: non-finite value {d[i]} at cluster {i}; values must be finite")
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


def _log_mover(pa, la, ua, pb, lb, ub, r):
    """Interval for ``pa / pb - 1`` by MOVER on the log scale (bounds of each mean
    carried to logs; ``r`` the correlation of the two means). A zero lower bound
    gives -1 (ratio 0); ``pb = 0`` leaves the change undefined (NaN)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        lpa, lpb = np.log(pa), np.log(pb)
        lla, lua = np.log(np.maximum(la, 0)), np.log(ua)
        llb, lub = np.log(np.maximum(lb, 0)), np.log(ub)
        lo, hi = mover_difference(lpa, lla, lua, lpb, llb, lub, r)
        lo = np.where(np.isfinite(lo), np.exp(lo) - 1, -1.0)
        hi = np.where(np.isfinite(hi), np.exp(hi) - 1, np.inf)
        # pa = 0: the ratio is 0 but its upper bound is ua / lb
        zero_a = (pa == 0) & (pb > 0)
        lo = np.where(zero_a, -1.0, lo)
        hi = np.where(zero_a, np.where(lb > 0, ua / np.where(lb > 0, lb, 1) - 1, np.inf), hi)
    undefined = ~(pb > 0)
    return np.where(undefined, np.nan, lo), np.where(undefined, np.nan, hi)


def paired_intervals(xa, xb, cl, G, bounded, confidence_level, n_resamples, rng):
    """Paired difference and relative-change intervals from task arrays.

    ``xa``, ``xb`` (n_tasks, K) values of the two conditions on the same tasks, ``cl``
    the episode index of each task, ``bounded`` (K,) columns in [0, 1]. Bounded
    columns: the difference gets the MOVER interval of the two means' Korn-Graubard
    Clopper-Pearson intervals (with the correlation of their episode scores; honest
    at 0 successes, asymmetric for rare outcomes), the relative change the same on the
    log scale. Other columns: episode bootstrap-t for the difference, and for the
    relative change the log-scale MOVER of CR1 t intervals (Satterthwaite df).
    Returns ``(low, high, rel_low, rel_high)``.
    """
    K = xa.shape[1]
    Sa, Sb = np.zeros((G, K)), np.zeros((G, K))
    np.add.at(Sa, cl, xa)
    np.add.at(Sb, cl, xb)
    Qa, Qb = np.zeros((G, K)), np.zeros((G, K))
    np.add.at(Qa, cl, xa * xa)
    np.add.at(Qb, cl, xb * xb)
    N = np.repeat(np.bincount(cl, minlength=G).astype(float)[:, None], K, axis=1)
    n = N.sum(axis=0)
    alpha = (1 - confidence_level) / 2
    lims = []
    scores = []
    for S_, Q_ in ((Sa, Qa), (Sb, Qb)):
        th, se, _ = cr1_se(S_, N)
        s2 = np.maximum(Q_.sum(axis=0) - n * th * th, 0) / np.maximum(n - 1, 1)
        e = S_ - th * N
        df = column_df(e, N)
        lo, hi, _ = kg_interval(np.clip(th, 0, 1), se * se, s2, n, df, alpha)
        q = stats.t.isf(alpha, df)
        lo = np.where(bounded, lo, th - q * se)
        hi = np.where(bounded, hi, th + q * se)
        lims.append((th, lo, hi))
        scores.append(e)
    (pa, la, ua), (pb, lb, ub) = lims
    ea, eb = scores
    Sd = Sa - Sb
    thd, sed, zerod = cr1_se(Sd, N)
    with np.errstate(invalid="ignore", divide="ignore"):
        den = np.sqrt((ea * ea).sum(axis=0) * (eb * eb).sum(axis=0))
        r = np.where((den > 0) & ~zerod, (ea * eb).sum(axis=0) / np.where(den > 0, den, 1), 0.0)
    mlo, mhi = mover_difference(pa, la, ua, pb, lb, ub, r)
    W = pairs_weights(rng, n_resamples, G)
    blo, bhi = interval_from_replicates("bootstrap_t", thd, sed, zerod, Sd, N, G, W, alpha)
    low, high = np.where(bounded, mlo, blo), np.where(bounded, mhi, bhi)
    rlo, rhi = _log_mover(pa, la, ua, pb, lb, ub, r)
    return low, high, rlo, rhi


@dataclass(frozen=True)
class PairedConditionsResult(Provenance):
    """Result of :func:`paired_conditions`.

    ``table``: one row per column (outcome first) with ``mean_a, mean_b,
    difference, low, high, se`` (paired difference a - b), ``sum_a, sum_b,
    relative_change`` ((sum a - sum b) / sum b) with ``rel_low, rel_high`` and
    ``method``: ``mover_kg_cp`` for [0, 1] columns (MOVER of the two means'
    Korn-Graubard CP intervals; log scale for the relative change), ``bootstrap_t``
    otherwise (see :func:`paired_intervals`). ``contingency``: the 2x2 counts ``both, only_a,
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
    warnings: tuple = ()


@one_blas_thread
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
    every value column, the paired difference ``mean_a - mean_b`` over tasks and the
    relative change of sums ``(sum_a - sum_b) / sum_b`` get intervals from
    :func:`paired_intervals` (exact-based MOVER for [0, 1] columns, which holds for rare
    outcomes; episode bootstrap-t otherwise). A task in different episodes under the
    two conditions, a missing episode ID or fewer than 3 episodes is an error.

    Example
    -------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"memory": ["p"] * 6 + ["r"] * 6, "task_id": [1, 2, 3, 4, 5, 6] * 2,
    ...     "episode_id": [1, 1, 2, 2, 3, 3] * 2, "success": [1, 1, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0]})
    >>> r = paired_conditions(df, "memory", "p", "r", value_cols=(), n_resamples=200)
    >>> r.contingency, r.mcnemar_p, len(r.warnings)  # 3 episodes: a visible warning
    ({'both': 1, 'only_a': 1, 'only_b': 1, 'neither': 3}, 1.0, 1)
    """
    conf = check_confidence(confidence_level)
    B = check_resamples(n_resamples)
    value_cols = [value_cols] if isinstance(value_cols, str) else list(value_cols)
    check_columns(df, [condition_col, task_col, cluster_col, outcome_col, *value_cols])
    check_values(df, [outcome_col, *value_cols])
    check_cluster_ids(df, cluster_col)
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
    ep_b = Bd[cluster_col].to_numpy()
    ep = A[cluster_col].to_numpy()
    diff_ep = ep != ep_b
    if diff_ep.any():
        t0 = A.index[diff_ep][0]
        raise ValueError(f"{task_col} {t0!r} is mapped to different {cluster_col}s under "
                         f"{a!r} and {b!r}: {ep[diff_ep][0]!r} vs {ep_b[diff_ep][0]!r}")
    clusters, cl = np.unique(ep, return_inverse=True)
    G = len(clusters)
    warn = emit_warnings([check_cluster_count(G, f"paired conditions {a!r} vs {b!r}")])
    ya, yb = y_a.astype(np.int64), y_b.astype(np.int64)
    cells = {"both": ya & yb, "only_a": ya & (1 - yb), "only_b": (1 - ya) & yb,
             "neither": (1 - ya) & (1 - yb)}
    disc = pd.DataFrame({k: np.bincount(cl, weights=v, minlength=G).astype(np.int64)
                         for k, v in cells.items()})
    disc.insert(0, "n_tasks", np.bincount(cl, minlength=G))
    disc.insert(0, cluster_col, clusters)
    contingency = {k: int(v.sum()) for k, v in cells.items()}
    d_g = (disc["only_a"] - disc["only_b"]).to_numpy()

    Xa = A[cols].astype(float).to_numpy()
    Xb = Bd[cols].astype(float).to_numpy()
    if np.isnan(Xa).any() or np.isnan(Xb).any():
        raise ValueError(f"columns {cols} contain missing values")
    bounded = np.array([bool(np.all((Xa[:, k] >= 0) & (Xa[:, k] <= 1) & (Xb[:, k] >= 0)
                                    & (Xb[:, k] <= 1))) for k in range(len(cols))])
    low, high, rlo, rhi = paired_intervals(Xa, Xb, cl, G, bounded, conf, B, rng)
    N = np.repeat(np.bincount(cl, minlength=G).astype(float)[:, None], len(cols), axis=1)
    Sa = np.zeros((G, len(cols)))
    Sb = np.zeros((G, len(cols)))
    np.add.at(Sa, cl, Xa)
    np.add.at(Sb, cl, Xb)
    theta, se, zero = cr1_se(Sa - Sb, N)
    sa, sb = Sa.sum(axis=0), Sb.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        rel = np.where(sb != 0, (sa - sb) / sb, np.nan)
    table = pd.DataFrame({
        "column": cols, "mean_a": sa / N.sum(axis=0), "mean_b": sb / N.sum(axis=0),
        "difference": theta, "low": low, "high": high, "se": se,
        "sum_a": sa, "sum_b": sb, "relative_change": rel,
        "rel_low": np.where(np.isnan(rel), np.nan, rlo),
        "rel_high": np.where(np.isnan(rel), np.nan, rhi),
        "method": np.where(bounded, "mover_kg_cp", "bootstrap_t"),
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
        method="+".join(dict.fromkeys(table["method"])),
        n_resamples=B,
        warnings=warn,
        confidence_level=conf,
        seed=recorded_seed(seed),
    )

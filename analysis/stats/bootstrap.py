"""Episode-cluster bootstrap of task-macro means (ratio of per-episode sums)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import special, stats

from ._core import (
    Provenance,
    recorded_seed,
    ESTIMAND,
    check_choice,
    check_confidence,
    check_resamples,
    cr1_se,
    pairs_weights,
    quantile,
    reduce_clusters,
    replicate_ratio_se,
    studentize,
)

METHODS = ("bootstrap_t", "cr1_t", "percentile", "basic", "bca")


@dataclass(frozen=True)
class ClusterBootstrapResult(Provenance):
    """Result of :func:`cluster_bootstrap`.

    ``table`` has one row per group (the ``by`` keys) and metric with columns
    ``estimate, low, high, se, n_records, n_clusters, degenerate``; ``se`` is the
    CR1 standard error, ``degenerate`` flags a zero SE (the interval is the point).
    """

    table: pd.DataFrame
    estimand: str = ESTIMAND
    notes: tuple = field(default_factory=tuple)


def _quantile(a, q):
    """Quantiles along axis 0 ignoring NaN replicates (linear, as scipy.stats.quantile)."""
    return quantile(a, q, axis=0)


def _bca_bounds(theta, theta_b, S, N, alpha):
    """BCa percentile levels, following scipy.stats.bootstrap (jackknife over clusters)."""
    B = theta_b.shape[0]
    below = (theta_b < theta).sum(axis=0) + (theta_b <= theta).sum(axis=0)
    z0 = special.ndtri(below / (2 * B))
    s, n = S.sum(axis=0), N.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        jack = (s - S) / (n - N)  # (G, J) leave-one-cluster-out
    G = S.shape[0]
    U = (G - 1) * (jack.mean(axis=0) - jack)
    with np.errstate(invalid="ignore", divide="ignore"):
        a = (U**3).sum(axis=0) / G**3 / ((U**2).sum(axis=0) / G**2) ** 1.5 / 6
    za = special.ndtri(alpha)
    lo = special.ndtr(z0 + (z0 + za) / (1 - a * (z0 + za)))
    hi = special.ndtr(z0 + (z0 - za) / (1 - a * (z0 - za)))
    return lo, hi


def interval_from_replicates(method, theta, se, zero, S, N, G, W, alpha):
    """Intervals (low, high) for every column given a (B, G) weight matrix."""
    if method == "cr1_t":
        q = stats.t.ppf(1 - alpha, G - 1)
        return theta - q * se, theta + q * se
    if method == "bootstrap_t":
        theta_b, se_b, zero_b = replicate_ratio_se(W, S, N, G)
        t = studentize(theta_b, theta, se_b, zero_b, se)
        qlo, qhi = _quantile(t, [alpha, 1 - alpha])
        low, high = theta - qhi * se, theta - qlo * se
        return np.where(zero, theta, low), np.where(zero, theta, high)
    with np.errstate(invalid="ignore", divide="ignore"):
        # Two products rather than one on [S | N]: each result stays under numpy's 4 MiB
        # hugepage threshold for the default 10,000 x 42 case, and faulting in fresh
        # hugepages cost more than the second product.
        theta_b = W @ S
        theta_b /= W @ N
    if method == "bca":
        lo_lvl, hi_lvl = _bca_bounds(theta, theta_b, S, N, alpha)
        lv = np.where(np.isfinite(lo_lvl), lo_lvl, 0.5)
        hv = np.where(np.isfinite(hi_lvl), hi_lvl, 0.5)
        qlo, qhi = _quantile(theta_b, np.vstack([lv, hv]))
        low = np.where(np.isfinite(lo_lvl), qlo, np.nan)
        high = np.where(np.isfinite(hi_lvl), qhi, np.nan)
        return low, high
    low, high = _quantile(theta_b, [alpha, 1 - alpha])
    if method == "basic":
        low, high = 2 * theta - high, 2 * theta - low
    return low, high


def cluster_bootstrap(
    df: pd.DataFrame,
    value_cols,
    cluster_col: str = "episode_id",
    by=("planner",),
    n_resamples: int = 10_000,
    method: str = "bootstrap_t",
    confidence_level: float = 0.95,
    seed: int | np.random.Generator | None = 0,
    bounds: tuple | None = None,
) -> ClusterBootstrapResult:
    """Episode-cluster bootstrap intervals for task-macro means.

    ``df`` holds one row per record (e.g. per run x task, as from
    :func:`analysis.metrics.task_metrics`). For each group of ``by`` and each column
    of ``value_cols`` the estimate is ``sum of values / number of non-missing
    values``, computed as a ratio of per-episode sums, and the interval resamples
    whole episodes. Methods: ``bootstrap_t`` (default; studentised with CR1 SEs
    recomputed in every replicate; a replicate with zero SE is scaled by the
    original SE, which keeps intervals finite near 0 and 1), ``cr1_t`` (CR1 SE with t(G-1)), ``percentile``,
    ``basic``, ``bca`` (the last three as in ``scipy.stats.bootstrap`` on the paired
    per-episode sums and counts, with the same resamples for the same seed).
    Groups with different episode sets are resampled separately, from one Generator.
    ``bounds=(lo, hi)`` clips the intervals to the metric's range (e.g. ``(0, 1)``
    for rates: the t-based intervals can cross it near 0 or 1).

    Example
    -------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"planner": ["p"] * 6, "episode_id": [1, 1, 2, 2, 3, 3],
    ...                    "success": [1, 0, 1, 1, 0, 0]})
    >>> r = cluster_bootstrap(df, ["success"], n_resamples=500, seed=1)
    >>> round(float(r.table.estimate[0]), 4), r.method, r.n_resamples
    (0.5, 'bootstrap_t', 500)
    """
    check_choice("method", method, METHODS)
    conf = check_confidence(confidence_level)
    B = check_resamples(n_resamples)
    value_cols = [value_cols] if isinstance(value_cols, str) else list(value_cols)
    if not value_cols:
        raise ValueError("value_cols must name at least one column")
    by = [by] if isinstance(by, str) else list(by or ())
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    clusters, cols, S, N = reduce_clusters(df, value_cols, cluster_col, by)
    alpha = (1 - conf) / 2

    # partition the columns by the set of clusters their group touches
    J = S.shape[1]
    if by:
        gkey = cols.groupby(by, sort=False, dropna=False).ngroup().to_numpy()
    else:
        gkey = np.zeros(J, dtype=object)
    group_present = {}
    for k in pd.unique(gkey):
        m = gkey == k
        group_present[k] = N[:, m].sum(axis=1) > 0
    sets = {}
    for k, pres in group_present.items():
        sets.setdefault(pres.tobytes(), (pres, []))[1].append(k)

    est = np.full(J, np.nan)
    low, high, se = est.copy(), est.copy(), est.copy()
    zero = np.zeros(J, bool)
    ncl = np.zeros(J, int)
    for pres, keys in sets.values():
        colmask = np.isin(gkey, keys)
        Sg, Ng = S[pres][:, colmask], N[pres][:, colmask]
        G = int(pres.sum())
        th, s, z = cr1_se(Sg, Ng)
        W = None if method == "cr1_t" else pairs_weights(rng, B, G)
        lo, hi = interval_from_replicates(method, th, s, z, Sg, Ng, G, W, alpha)
        est[colmask], se[colmask], zero[colmask] = th, s, z
        low[colmask], high[colmask], ncl[colmask] = lo, hi, G
    if bounds is not None:
        if len(bounds) != 2 or not bounds[0] < bounds[1]:
            raise ValueError(f"bounds={bounds!r} must be a (low, high) pair with low < high")
        low, high = np.clip(low, *bounds), np.clip(high, *bounds)
    table = cols.copy()
    table["estimate"], table["low"], table["high"], table["se"] = est, low, high, se
    table["n_records"] = N.sum(axis=0).astype(int)
    table["n_clusters"] = ncl
    table["degenerate"] = zero
    return ClusterBootstrapResult(
        table=table,
        method=method,
        n_resamples=0 if method == "cr1_t" else B,
        confidence_level=conf,
        seed=recorded_seed(seed),
    )

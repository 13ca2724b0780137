"""Episode-cluster bootstrap of task-macro means (ratio of per-episode sums)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import special, stats

from ._core import (
    one_blas_thread,
    MIN_CLUSTERS,
    WARN_CLUSTERS,
    Provenance,
    check_cluster_count,
    emit_warnings,
    recorded_seed,
    ESTIMAND,
    check_choice,
    check_confidence,
    check_resamples,
    cr1_se,
    pairs_weights,
    quantile,
    ratio,
    reduce_clusters,
    replicate_ratio_se,
    replicate_ratios_T,
    studentize,
)
from .intervals import column_df, kg_interval

METHODS = ("auto", "kg_cp", "bootstrap_t", "cr1_t", "percentile", "basic", "bca")
DEFAULT_METHOD = "auto"


@dataclass(frozen=True)
class ClusterBootstrapResult(Provenance):
    """Result of :func:`cluster_bootstrap`.

    ``table`` has one row per group (the ``by`` keys) and metric with columns
    ``estimate, low, high, se, n_records, n_clusters, degenerate, method,
    few_clusters``; ``se`` is the CR1 standard error, ``degenerate`` flags a zero SE,
    ``method`` the interval method used for that row (``auto`` picks one per metric),
    ``few_clusters`` fewer than 8 episodes. ``.method`` names every method used
    (``"kg_cp+bootstrap_t"`` when mixed); ``.warnings`` holds the few-episode warnings.
    """

    table: pd.DataFrame
    estimand: str = ESTIMAND
    notes: tuple = field(default_factory=tuple)
    warnings: tuple = field(default_factory=tuple)


def _quantile(a, q):
    """Quantiles along axis 0 ignoring NaN replicates (linear, as scipy.stats.quantile)."""
    return quantile(a, q, axis=0)


def _bca_bounds(theta, theta_b, S, N, alpha):
    """BCa percentile levels, following scipy.stats.bootstrap (jackknife over clusters)."""
    B = theta_b.shape[0]
    # A replicate that reproduces the estimate (e.g. every episode drawn once) is a tie
    # whatever the rounding of its sums; at G = 4-6 such replicates are common, and an
    # exact comparison splits them by floating-point noise (scipy does, so at small G
    # our BCa can differ from scipy.stats.bootstrap there: docs/statistics.md).
    tol = 1e-12 * np.maximum(np.abs(theta), 1e-300)
    # counted along the replicates of each column in memory order (theta_b is usually
    # the (B, J) view of a column-major array)
    T = theta_b.T
    below = (np.count_nonzero(T < (theta - tol)[:, None], axis=1)
             + np.count_nonzero(T <= (theta + tol)[:, None], axis=1))
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
    theta_b = replicate_ratios_T(W, S, N).T  # (B, J) view of a column-major array
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


def _bounded(df: pd.DataFrame, col: str) -> bool:
    x = pd.to_numeric(df[col], errors="coerce").astype(float)
    return bool(x.notna().any() and x.min() >= 0 and x.max() <= 1)


def _describe(cols: pd.DataFrame, j: int) -> str:
    return ", ".join(f"{k}={v}" for k, v in cols.iloc[j].items())


def _check_one_run(df: pd.DataFrame, by: list) -> None:
    """Refuse a group of ``by`` that holds the records of several runs (``run_id``)."""
    if "run_id" not in df.columns or "run_id" in by or df.empty:
        return
    if by:
        per_group = df.groupby(by, sort=True)["run_id"].unique()
        several = [(key, runs) for key, runs in per_group.items() if len(runs) > 1]
    else:
        several = [((), df["run_id"].unique())] if df["run_id"].nunique() > 1 else []
    if several:
        key, runs = several[0]
        key = key if isinstance(key, tuple) else (key,)
        runs = sorted(map(str, runs))
        shown = ", ".join(runs[:3]) + (f" and {len(runs) - 3} more" if len(runs) > 3 else "")
        group = f" in group {dict(zip(by, key))}" if by else ""
        raise ValueError(f"df holds {len(runs)} runs{group} ({shown}): each task would count "
                         "once per run; pass by=[..., 'run_id'] to get one interval per run, "
                         "select one run (df[df.run_id == ...]), or pool_runs=True to pool "
                         "them on purpose")


@one_blas_thread
def cluster_bootstrap(
    df: pd.DataFrame,
    value_cols,
    cluster_col: str = "episode_id",
    by=("planner",),
    n_resamples: int = 10_000,
    method: str = DEFAULT_METHOD,
    confidence_level: float = 0.95,
    seed: int | np.random.Generator | None = 0,
    bounds: tuple | None = None,
    too_few: str = "error",
    pool_runs: bool = False,
) -> ClusterBootstrapResult:
    """Episode-cluster intervals for task-macro means.

    ``df`` holds one row per record (e.g. per run x task, as from
    :func:`analysis.metrics.task_metrics`). For each group of ``by`` and each column
    of ``value_cols`` the estimate is ``sum of values / number of non-missing
    values``, computed as a ratio of per-episode sums; episodes are counted per column
    from its non-missing values. Methods:

    * ``auto`` (default): ``kg_cp`` for a column whose values all lie in [0, 1]
      (binary rates and fractions such as GCR), ``bootstrap_t`` otherwise (counts,
      tokens); the table's ``method`` column says which.
    * ``kg_cp``: Korn-Graubard cluster-adjusted Clopper-Pearson (effective number of
      tasks from the CR1 variance, design effect floored at 1, Satterthwaite df; see
      :mod:`analysis.stats.intervals`); holds nominal coverage from 0 to 1, including 0
      and n/n observed, where it gives the exact one-sided bound instead of a point.
    * ``bootstrap_t``: episode pairs bootstrap studentised with CR1 SEs recomputed in
      every replicate (a replicate with zero SE is scaled by the original SE).
    * ``cr1_t`` (CR1 SE with t(G-1)), ``percentile``, ``basic``, ``bca`` (the last
      three as in ``scipy.stats.bootstrap`` on the paired per-episode sums and counts,
      with the same resamples for the same seed).

    Fewer than 3 episodes behind a column is an error (``too_few="not_estimable"``
    instead leaves that row's interval NaN, flags it ``not_estimable`` and warns, for
    reports with many cells); fewer than 8 adds a warning to ``.warnings`` (and a
    ``FewClustersWarning``). A missing episode ID is an error.
    ``bounds=(lo, hi)`` clips the intervals to the metric's range.
    A frame with a ``run_id`` column holding several runs within one group of ``by`` is
    refused (each task would count once per run, silently): group by ``run_id`` (or the
    planner ``label``), select one run, or pass ``pool_runs=True`` to pool on purpose.

    Example
    -------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"planner": ["p"] * 16, "episode_id": list(range(8)) * 2,
    ...                    "success": [0] * 16})
    >>> r = cluster_bootstrap(df, ["success"])  # 0 of 16: an honest upper bound, not [0, 0]
    >>> float(r.table.low[0]), round(float(r.table.high[0]), 3), r.method
    (0.0, 0.247, 'kg_cp')
    """
    check_choice("method", method, METHODS)
    check_choice("too_few", too_few, ("error", "not_estimable"))
    conf = check_confidence(confidence_level)
    B = check_resamples(n_resamples)
    value_cols = [value_cols] if isinstance(value_cols, str) else list(value_cols)
    if not value_cols:
        raise ValueError("value_cols must name at least one column")
    by = [by] if isinstance(by, str) else list(by or ())
    if not pool_runs:
        _check_one_run(df, by)
    # sums of squares (the task-level variance floor of kg_cp) only where kg_cp may run
    need_q = method in ("auto", "kg_cp")
    red = reduce_clusters(df, value_cols, cluster_col, by, squares=need_q)
    clusters, cols, S, N = red[:4]
    Q = red[4] if need_q else None
    col_method = _column_methods(df, value_cols, method, cols)
    G_col = (N > 0).sum(axis=0)
    few, unest = _short_columns(cols, G_col, too_few)
    est, low, high, se, zero = _intervals(S, N, Q, col_method, unest, (1 - conf) / 2, B, seed)
    if bounds is not None:
        if len(bounds) != 2 or not bounds[0] < bounds[1]:
            raise ValueError(f"bounds={bounds!r} must be a (low, high) pair with low < high")
        low, high = np.clip(low, *bounds), np.clip(high, *bounds)
    J = S.shape[1]
    not_estimable = np.isin(np.arange(J), unest)
    if unest:
        low, high, se = (np.where(not_estimable, np.nan, a) for a in (low, high, se))
        zero = zero & ~not_estimable
    # one constructor (a column assignment at a time costs a tenth of the whole call)
    table = pd.DataFrame({**{c: cols[c] for c in cols.columns},
                          "estimate": est, "low": low, "high": high, "se": se,
                          "n_records": N.sum(axis=0).astype(int),
                          "n_clusters": G_col.astype(int), "degenerate": zero,
                          "method": col_method, "few_clusters": G_col < WARN_CLUSTERS,
                          "not_estimable": not_estimable}, index=cols.index)
    warn = emit_warnings(_warning_texts(cols, G_col, few, unest))
    used = list(dict.fromkeys(col_method))
    resampled = any(m not in ("cr1_t", "kg_cp") for m in used)
    return ClusterBootstrapResult(
        table=table,
        method="+".join(used),
        n_resamples=B if resampled else 0,
        confidence_level=conf,
        seed=recorded_seed(seed),
        warnings=warn,
    )


def _column_methods(df: pd.DataFrame, value_cols: list, method: str, cols: pd.DataFrame) -> np.ndarray:
    """Stage 1: the interval method of every (group, metric) column: under ``auto``
    ``kg_cp`` for a metric in [0, 1] and ``bootstrap_t`` otherwise; ``kg_cp`` asked for
    an unbounded metric is refused, naming the column."""
    metric_method = {}
    for c in value_cols:
        if method == "auto":
            metric_method[c] = "kg_cp" if _bounded(df, c) else "bootstrap_t"
        else:
            if method == "kg_cp" and not _bounded(df, c):
                raise ValueError(f"method='kg_cp' needs values in [0, 1]; column {c!r} has "
                                 "values outside (use 'bootstrap_t' or 'auto')")
            metric_method[c] = method
    return np.array([metric_method[m] for m in cols["metric"]], dtype=object)


def _short_columns(cols: pd.DataFrame, G_col: np.ndarray, too_few: str) -> tuple[list, list]:
    """Stage 2: the columns with fewer than 8 episodes (``few``: a warning) and, under
    ``too_few="not_estimable"``, those with fewer than 3 (``unest``: no interval); with
    ``too_few="error"`` fewer than 3 is a ``ValueError`` naming the column."""
    few, unest = [], []
    for j in np.flatnonzero(G_col < WARN_CLUSTERS):  # describe only the columns at fault
        if too_few == "not_estimable" and G_col[j] < MIN_CLUSTERS:
            unest.append(j)
        elif check_cluster_count(int(G_col[j]), _describe(cols, j)):
            few.append(j)
    return few, unest


def _intervals(S, N, Q, col_method, unest, alpha, B, seed):
    """Stage 3: ``(estimate, low, high, se, zero)`` of every column. Episodes are counted
    per column (from its non-missing values); columns sharing a set of episodes and a
    method share one weight matrix, so all their intervals come from one product. A
    not-estimable column keeps its point estimate, with NaN bounds."""
    J = S.shape[1]
    present = N > 0
    sets = {}
    for j in range(J):
        if j in unest:
            continue
        sets.setdefault((present[:, j].tobytes(), col_method[j]), []).append(j)
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    weights = {}

    def weights_for(G):
        # An integer seed gives every episode count the resamples scipy.stats.bootstrap
        # draws with that seed (so the same columns give the same intervals); a caller's
        # Generator is drawn from in order.
        if isinstance(seed, np.random.Generator):
            return pairs_weights(rng, B, G)
        if G not in weights:
            weights[G] = pairs_weights(np.random.default_rng(seed), B, G)
        return weights[G]

    est = np.full(J, np.nan)
    low, high, se = est.copy(), est.copy(), est.copy()
    zero = np.zeros(J, bool)
    for (pbytes, meth), js in sets.items():
        pres = present[:, js[0]]
        Sg, Ng = S[pres][:, js], N[pres][:, js]
        G = int(pres.sum())
        th, s, z = cr1_se(Sg, Ng)
        if meth == "kg_cp":
            n = Ng.sum(axis=0)
            with np.errstate(invalid="ignore", divide="ignore"):
                s2 = np.maximum(Q[pres][:, js].sum(axis=0) - n * th * th, 0) / np.maximum(n - 1, 1)
            df_j = column_df(Sg - th * Ng, Ng)
            lo, hi, _ = kg_interval(th, s * s, s2, n, df_j, alpha)
        else:
            W = None if meth == "cr1_t" else weights_for(G)
            lo, hi = interval_from_replicates(meth, th, s, z, Sg, Ng, G, W, alpha)
        est[js], se[js], zero[js] = th, s, z
        low[js], high[js] = lo, hi
    if unest:  # the point estimate stands; only the interval is not estimable
        est[unest] = ratio(S[:, unest], N[:, unest])
    return est, low, high, se, zero


def _warning_texts(cols: pd.DataFrame, G_col: np.ndarray, few: list, unest: list) -> list:
    """Stage 4: one text per kind of short column (few episodes, not estimable), naming
    at most five columns with their episode counts."""
    J = len(G_col)
    texts = []
    for js, what in ((few, f"rest on fewer than {WARN_CLUSTERS} episodes, coverage not assured"),
                     (unest, f"are not estimable (fewer than {MIN_CLUSTERS} episodes with values)")):
        if js:
            shown = "; ".join(f"{_describe(cols, j)} ({int(G_col[j])})" for j in js[:5])
            more = f" and {len(js) - 5} more" if len(js) > 5 else ""
            texts.append(f"{len(js)} of {J} intervals {what}: {shown}{more}")
    return texts

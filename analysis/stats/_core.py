"""Shared machinery: cluster reduction, replicate weights, ratio estimands, CR1 SEs.

Array convention (used by every function in :mod:`analysis.stats`)
-------------------------------------------------------------------
* Per-cluster arrays are ``(G, J)``: one row per cluster (episode), one column per
  statistic (a group x metric, or a contrast). ``S`` holds per-cluster sums of the
  record values and ``N`` the per-cluster counts of records (non-missing values).
* Replicate arrays are ``(B, G)`` weight matrices: row ``b`` gives, for every
  cluster, how many times it was drawn (pairs bootstrap: multinomial counts summing
  to ``G``) or its multiplier (wild / Gaussian). Replicate statistics are then
  ``(B, J)`` and come from one matrix product ``W @ S``.
* The estimand of every column is the task-weighted ratio of per-episode sums,
  ``theta_j = sum_g S[g, j] / sum_g N[g, j]`` (equal to the task-macro mean over
  all tasks; it is not the mean of per-episode means).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

ESTIMAND = (
    "task-weighted ratio of per-episode sums: sum over episodes of the record sums "
    "/ sum over episodes of the record counts (= the task-macro mean)"
)
RESAMPLING_UNIT = "episode (cluster)"
_REL_TOL = 1e-12


def check_choice(name: str, value, allowed) -> None:
    """Raise ``ValueError`` naming the parameter and the allowed values."""
    if value not in allowed:
        raise ValueError(f"{name}={value!r} is not allowed; choose one of {sorted(allowed)}")


def check_confidence(confidence_level: float) -> float:
    c = float(confidence_level)
    if not 0.0 < c < 1.0:
        raise ValueError(f"confidence_level={confidence_level!r} must lie strictly between 0 and 1")
    return c


def check_resamples(n_resamples: int) -> int:
    if int(n_resamples) != n_resamples or n_resamples < 1:
        raise ValueError(f"n_resamples={n_resamples!r} must be a positive integer")
    return int(n_resamples)


def check_columns(df: pd.DataFrame, cols, param: str = "df") -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ValueError(f"{param} lacks column(s) {missing}; it has {list(df.columns)}")


def pairs_weights(rng: np.random.Generator, n_resamples: int, n_clusters: int) -> np.ndarray:
    """(B, G) multinomial cluster counts of a pairs (cluster) bootstrap.

    The indices are drawn exactly as ``scipy.stats.bootstrap(..., paired=True)``
    draws them (``rng.integers(0, G, (B, G))``), so feeding scipy a Generator with
    the same seed reproduces our resamples one for one.
    """
    idx = rng.integers(0, n_clusters, (n_resamples, n_clusters))
    offs = idx + (np.arange(n_resamples)[:, None] * n_clusters)
    w = np.bincount(offs.ravel(), minlength=n_resamples * n_clusters)
    return w.reshape(n_resamples, n_clusters).astype(np.float64)


def ratio(S: np.ndarray, N: np.ndarray) -> np.ndarray:
    """theta_j = sum_g S[g, j] / sum_g N[g, j] (NaN where the count is 0)."""
    s, n = S.sum(axis=0), N.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, s / np.where(n > 0, n, 1), np.nan)


def _is_integral(a: np.ndarray) -> bool:
    return bool(np.all(np.isfinite(a)) and np.all(a == np.round(a)) and np.abs(a).max(initial=0) < 2**50)


def zero_residuals(S: np.ndarray, N: np.ndarray) -> np.ndarray:
    """Boolean (J,): True where every cluster residual ``S_g - theta N_g`` is zero.

    Integer data (binary metrics) are checked exactly, ``S_g * sum N == sum S * N_g``
    in integer arithmetic; other data with a relative tolerance.
    """
    if _is_integral(S) and _is_integral(N):
        Si, Ni = S.astype(np.int64), N.astype(np.int64)
        lhs = Si * Ni.sum(axis=0)
        rhs = Ni * Si.sum(axis=0)
        return np.all(lhs == rhs, axis=0)
    theta = ratio(S, N)
    e = S - theta * N
    scale = np.abs(S).max(axis=0) + np.abs(theta * N).max(axis=0)
    return np.all(np.abs(e) <= _REL_TOL * np.maximum(scale, 1e-300), axis=0)


def cr1_se(S: np.ndarray, N: np.ndarray, n_clusters: np.ndarray | int | None = None):
    """CR1 (cluster-robust, G/(G-1)) standard error of the ratio of sums.

    ``se_j = sqrt(G/(G-1) * sum_g (S_gj - theta_j N_gj)^2) / sum_g N_gj``.
    Returns ``(theta, se, zero)`` where ``zero`` flags exact zero SEs.
    """
    G = S.shape[0] if n_clusters is None else n_clusters
    theta = ratio(S, N)
    e = S - theta * N
    n = N.sum(axis=0)
    G = np.asarray(G, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.sqrt(G / (G - 1) * (e * e).sum(axis=0)) / n
    zero = zero_residuals(S, N)
    se = np.where(zero, 0.0, se)
    return theta, se, zero


def replicate_ratio_se(W: np.ndarray, S: np.ndarray, N: np.ndarray, n_clusters):
    """Replicate ratios and CR1 SEs for a (B, G) weight matrix, all by matrix products.

    A cluster drawn k times counts as k clusters (weights are counts), so
    ``sum_g w_g (S_g - theta_b N_g)^2`` is expanded as
    ``W(S^2) - 2 theta_b W(SN) + theta_b^2 W(N^2)``. Returns ``(theta_b, se_b, zero_b)``.
    """
    WS, WN = W @ S, W @ N
    WSS, WSN, WNN = W @ (S * S), W @ (S * N), W @ (N * N)
    with np.errstate(invalid="ignore", divide="ignore"):
        theta_b = WS / WN
        q = WSS - 2 * theta_b * WSN + theta_b**2 * WNN
        scale = WSS + theta_b**2 * WNN
        zero_b = q <= _REL_TOL * 16 * np.maximum(scale, 1e-300)
        G = np.asarray(n_clusters, dtype=float)
        se_b = np.sqrt(np.clip(q, 0, None) * G / (G - 1)) / WN
    se_b = np.where(zero_b, 0.0, se_b)
    return theta_b, se_b, zero_b


def studentize(theta_b, theta, se_b, zero_b):
    """t_b = (theta_b - theta) / se_b with explicit zero-SE handling.

    A replicate with zero SE gives t = 0 when it reproduces the estimate and +-inf
    otherwise (it is evidence of a larger deviation than any finite t).
    """
    diff = theta_b - theta
    tiny = _REL_TOL * 16 * np.maximum(np.abs(theta), 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = diff / np.where(zero_b, 1.0, se_b)
    same = np.abs(diff) <= tiny
    with np.errstate(invalid="ignore"):
        inf = np.where(np.isnan(diff), np.nan, np.copysign(np.inf, diff))
    t = np.where(zero_b, np.where(same, 0.0, inf), t)
    return t


def reduce_clusters(df: pd.DataFrame, value_cols, cluster_col: str, by=()):
    """Reduce records to per-cluster sums and counts.

    Returns ``(clusters, columns, S, N)``: ``clusters`` the sorted cluster labels
    (length G), ``columns`` a DataFrame with one row per statistic (the ``by`` keys
    and ``metric``), and ``S``, ``N`` of shape (G, J). Missing values are left out
    of both the sum and the count of their column.
    """
    value_cols = list(value_cols)
    by = list(by)
    check_columns(df, [cluster_col, *by, *value_cols])
    vals = df[value_cols].apply(pd.to_numeric, errors="raise").astype(float)
    keys = [df[c] for c in by] + [df[cluster_col]]
    sums = vals.groupby(keys, sort=True, observed=True).sum(min_count=0)
    cnts = vals.notna().astype(np.int64).groupby(keys, sort=True, observed=True).sum()
    if by:
        lv = list(range(len(by)))
        sums = sums.unstack(level=lv)
        cnts = cnts.unstack(level=lv)
        # columns: MultiIndex (metric, *by) after unstack/T -> reorder to (*by, metric)
        sums = sums.reorder_levels([*range(1, len(by) + 1), 0], axis=1).sort_index(axis=1)
        cnts = cnts.reorder_levels([*range(1, len(by) + 1), 0], axis=1).sort_index(axis=1)
        cols = sums.columns.to_frame(index=False)
        cols.columns = [*by, "metric"]
        # keep metric order as given
        order = {m: i for i, m in enumerate(value_cols)}
        cols["_o"] = cols["metric"].map(order)
        perm = cols.sort_values([*by, "_o"], kind="stable").index.to_numpy()
        cols = cols.loc[perm].drop(columns="_o").reset_index(drop=True)
        S = sums.fillna(0).to_numpy(float)[:, perm]
        N = cnts.fillna(0).to_numpy(float)[:, perm]
        clusters = sums.index.to_numpy()
    else:
        cols = pd.DataFrame({"metric": value_cols})
        S = sums.to_numpy(float)
        N = cnts.to_numpy(float)
        clusters = sums.index.to_numpy()
    return clusters, cols, S, N


_BIG = 1e300


def quantile(a: np.ndarray, q, axis: int = 0):
    """Linear quantiles (as ``np.quantile``/``scipy.stats.quantile``) that ignore NaN
    replicates and keep +-inf exact (no inf - inf interpolation)."""
    a = np.clip(a, -_BIG, _BIG)
    r = np.nanquantile(a, q, axis=axis) if np.isnan(a).any() else np.quantile(a, q, axis=axis)
    r = np.asarray(r, dtype=float)
    return np.where(r >= _BIG, np.inf, np.where(r <= -_BIG, -np.inf, r))

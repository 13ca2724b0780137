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

from dataclasses import dataclass

import numpy as np
import pandas as pd

ESTIMAND = (
    "task-weighted ratio of per-episode sums: sum over episodes of the record sums "
    "/ sum over episodes of the record counts (= the task-macro mean)"
)
RESAMPLING_UNIT = "episode (cluster)"


@dataclass(frozen=True, kw_only=True)
class Provenance:
    """How a statistics result was computed; every result object carries these fields
    (docs/statistics.md: method, resampling unit, resamples, confidence level, seed)."""

    method: str
    resampling_unit: str = RESAMPLING_UNIT
    n_resamples: int
    confidence_level: float
    seed: int | None


_BLAS = None


def one_blas_thread(func):
    """Run ``func`` with BLAS limited to one thread (threadpoolctl; restored afterwards).

    The products here are small ((10,000 x 18) by (18 x J)); a multithreaded OpenBLAS
    wakes its threads for some shapes and, on a shared machine, waits for a core on
    every call: a 1 ms product then takes 10-20 ms (docs/performance.md).
    """
    import functools

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        global _BLAS
        if _BLAS is None:
            from threadpoolctl import ThreadpoolController
            _BLAS = ThreadpoolController()
        with _BLAS.limit(limits=1, user_api="blas"):
            return func(*args, **kwargs)

    return wrapper


def recorded_seed(seed) -> int | None:
    """The seed a result records: the integer given, or None for a caller's Generator."""
    return None if isinstance(seed, np.random.Generator) else seed
_REL_TOL = 1e-12

#: Fewer episodes than this is an error: no cluster-robust interval is meaningful.
MIN_CLUSTERS = 3
#: Fewer episodes than this gives a visible warning in the result and the table notes.
WARN_CLUSTERS = 8


class FewClustersWarning(UserWarning):
    """Fewer than ``WARN_CLUSTERS`` episodes behind an interval (coverage is shaky)."""


def check_cluster_ids(df: pd.DataFrame, cluster_col: str) -> None:
    """A missing cluster ID is an error (it would silently merge records)."""
    bad = df[cluster_col].isna().to_numpy()
    if bad.any():
        first = df.index[bad][0]
        raise ValueError(f"{cluster_col} is missing (NaN/None) in {int(bad.sum())} row(s), first "
                         f"at row index {first!r}; every record needs an episode ID")


def check_cluster_count(G: int, what: str) -> str | None:
    """Error under ``MIN_CLUSTERS`` episodes; the warning text under ``WARN_CLUSTERS``."""
    if G < MIN_CLUSTERS:
        raise ValueError(f"{what}: only {G} episode(s) with values; episode-cluster intervals "
                         f"need at least {MIN_CLUSTERS}")
    if G < WARN_CLUSTERS:
        return (f"{what}: only {G} episodes (fewer than {WARN_CLUSTERS}); interval "
                "coverage with so few clusters is not assured")
    return None


def emit_warnings(texts) -> tuple:
    """Issue each warning text once as a :class:`FewClustersWarning`; return them."""
    import warnings

    texts = tuple(dict.fromkeys(t for t in texts if t))
    if texts:
        level = _first_outside_package()
        for t in texts:
            warnings.warn(t, FewClustersWarning, stacklevel=level)
    return texts


def _first_outside_package() -> int:
    """The ``stacklevel`` of the first frame outside ``analysis`` (the user's call, however
    deep the package's own calls go: ``Export.results().table(...)`` or
    ``cluster_bootstrap(...)``), counted from ``warnings.warn``'s caller."""
    import sys
    from pathlib import Path
    root = str(Path(__file__).resolve().parents[1])
    frame, level = sys._getframe(2), 2      # the caller of emit_warnings, as warn counts
    while frame is not None and str(Path(frame.f_code.co_filename).resolve()).startswith(root):
        frame, level = frame.f_back, level + 1
    return level


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


#: Columns that name a row in a refusal (first present wins, in this order).
_ROW_NAMES = ("planner", "task_id", "episode_id", "condition", "memory", "run_id")


def check_values(df: pd.DataFrame, cols, param: str = "df") -> None:
    """Refuse an empty ``df`` and an infinite value in ``cols`` (a NaN is a missing value
    and left out, as documented): one infinity would turn every contrast that shares a
    matrix product with it into NaN. The message names the column and the row's planner,
    task and episode.

    >>> check_values(pd.DataFrame({"planner": ["p"], "task_id": ["t"], "x": [float("inf")]}),
    ...              ["x"])
    Traceback (most recent call last):
    ...
    ValueError: df column 'x': non-finite value inf at row 0 (planner='p', task_id='t'); values must be finite (NaN marks a missing value)
    """
    if len(df) == 0:
        raise ValueError(f"{param} is empty (no rows): nothing to estimate")
    for c in cols:
        try:
            a = df[c].to_numpy(dtype=float, na_value=np.nan)
        except (TypeError, ValueError):
            raise ValueError(f"{param} column {c!r}: values must be numbers "
                             f"(dtype {df[c].dtype})") from None
        bad = np.isinf(a)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            row = df.iloc[i]
            where = ", ".join(f"{k}={row[k]!r}" for k in _ROW_NAMES if k in df.columns)
            raise ValueError(f"{param} column {c!r}: non-finite value {a[i]} at row {i}"
                             + (f" ({where})" if where else "")
                             + "; values must be finite (NaN marks a missing value)")


def pairs_weights(rng: np.random.Generator, n_resamples: int, n_clusters: int) -> np.ndarray:
    """(B, G) multinomial cluster counts of a pairs (cluster) bootstrap.

    The indices are drawn exactly as ``scipy.stats.bootstrap(..., paired=True)``
    draws them (``rng.integers(0, G, (B, G))``), so feeding scipy a Generator with
    the same seed reproduces our resamples one for one.
    """
    idx = rng.integers(0, n_clusters, (n_resamples, n_clusters))
    idx += np.arange(0, n_resamples * n_clusters, n_clusters)[:, None]  # in place: no copy
    w = np.bincount(idx.ravel(), minlength=n_resamples * n_clusters)
    # integer counts: the products convert them chunk by chunk (exactly), which is
    # cheaper than one conversion of the whole matrix into fresh memory
    return w.reshape(n_resamples, n_clusters)


def replicate_ratios_T(W: np.ndarray, S: np.ndarray, N: np.ndarray, chunk: int = 1024) -> np.ndarray:
    """Replicate ratios ``(W @ S) / (W @ N)`` laid out as (J, B) (one row per column).

    Computed in chunks of replicates so that every temporary stays small (cache-sized,
    below numpy's hugepage threshold), the count product is taken once per distinct
    count column (most columns share their planner's tasks), and the result is written
    straight into the column-major layout the per-column partial sorts of
    :func:`quantile` want (no transposed copy). ``.T`` gives the usual (B, J) view.
    """
    Nu, inv = np.unique(N, axis=1, return_inverse=True)
    inv = inv.reshape(-1)
    B, J = W.shape[0], S.shape[1]
    out = np.empty((J, B))
    with np.errstate(invalid="ignore", divide="ignore"):
        for b0 in range(0, B, chunk):
            Wc = W[b0:b0 + chunk]
            ws = Wc @ S
            wn = Wc @ Nu
            ws /= wn[:, inv]
            out[:, b0:b0 + chunk] = ws.T
    return out


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
    J = S.shape[1]
    B = W.shape[0]
    # one 2-D BLAS product per chunk of replicates on [S | N | S^2 | SN | N^2]; a batched
    # np.matmul with a broadcast W falls back to numpy's non-BLAS loop (10x slower)
    X = np.hstack([S, N, S * S, S * N, N * N])  # (G, 5J)
    G = float(n_clusters)
    theta_b = np.empty((B, J))
    se_b = np.empty((B, J))
    zero_b = np.empty((B, J), bool)
    chunk = max(1, (1 << 17) // max(5 * J, 1))
    with np.errstate(invalid="ignore", divide="ignore"):
        for b0 in range(0, B, chunk):
            P = W[b0:b0 + chunk] @ X
            WS, WN, WSS, WSN, WNN = (P[:, k * J:(k + 1) * J] for k in range(5))
            th = np.divide(WS, WN, out=theta_b[b0:b0 + chunk])
            q = th * WSN
            q *= -2.0
            q += WSS
            q += th * th * WNN
            scale = (WSS + WNN) * (_REL_TOL * 16)
            z = np.less_equal(q, scale, out=zero_b[b0:b0 + chunk])
            np.clip(q, 0, None, out=q)
            q *= G / (G - 1)
            sb = np.sqrt(q, out=se_b[b0:b0 + chunk])
            sb /= WN
            sb[z] = 0.0
    return theta_b, se_b, zero_b


def studentize(theta_b, theta, se_b, zero_b, se=None):
    """t_b = (theta_b - theta) / se_b with explicit zero-SE handling.

    A replicate whose own SE is zero (e.g. it drew only episodes where every task
    succeeded) has no studentisation; it is scaled by the original SE ``se`` instead
    (a percentile-t hybrid for those replicates, which keeps the interval finite at
    proportions near 0 or 1). Without ``se`` (or where it is zero too) such a
    replicate gives t = 0 when it reproduces the estimate and +-inf otherwise.
    """
    diff = theta_b - theta
    with np.errstate(invalid="ignore", divide="ignore"):
        t = diff / se_b
    if zero_b.any():
        tiny = _REL_TOL * 16 * np.maximum(np.abs(theta), 1.0)
        d = np.broadcast_to(diff, t.shape)[zero_b]
        tz = np.broadcast_to(tiny, t.shape)[zero_b]
        fb = np.zeros(t.shape) if se is None else np.broadcast_to(np.asarray(se, float), t.shape)
        f = fb[zero_b]
        with np.errstate(invalid="ignore", divide="ignore"):
            alt = np.where(np.isnan(d), np.nan, np.copysign(np.inf, d))
            alt = np.where(f > 0, d / np.where(f > 0, f, 1.0), alt)
            t[zero_b] = np.where(np.abs(d) <= tz, 0.0, alt)
    return t


def reduce_clusters(df: pd.DataFrame, value_cols, cluster_col: str, by=(), squares: bool = False):
    """Reduce records to per-cluster sums and counts.

    Returns ``(clusters, columns, S, N)``: ``clusters`` the sorted cluster labels
    (length G), ``columns`` a DataFrame with one row per statistic (the ``by`` keys,
    sorted, then ``metric`` in the given order), and ``S``, ``N`` of shape (G, J).
    Missing values are left out of both the sum and the count of their column.
    With ``squares=True`` a fifth item ``Q`` (G, J) holds the per-cluster sums of squares.
    """
    value_cols = list(value_cols)
    by = list(by)
    check_columns(df, [cluster_col, *by, *value_cols])
    check_values(df, value_cols)
    check_cluster_ids(df, cluster_col)
    try:
        # column by column: selecting a sub-frame first copies it (a third of this step)
        X = np.column_stack([df[c].to_numpy(dtype=float) for c in value_cols])
    except (TypeError, ValueError) as exc:
        raise ValueError(f"value columns {value_cols} must be numeric (or bool): {exc}") from None
    ccodes, clusters = pd.factorize(df[cluster_col], sort=True)
    G = len(clusters)
    if by:
        grp = df.groupby(by, sort=True, dropna=False, observed=True)
        gcodes = grp.ngroup().to_numpy()
        keys = grp.size().index.to_frame(index=False)[by]
    else:
        gcodes, keys = np.zeros(len(df), dtype=np.int64), pd.DataFrame(index=[0])
    nG = len(keys)
    flat = gcodes * G + ccodes
    ok = ~np.isnan(X)
    Xf = np.where(ok, X, 0.0)
    K = len(value_cols)
    S = np.empty((G, nG * K))
    N = np.empty((G, nG * K))
    Q = np.empty((G, nG * K)) if squares else None
    for k in range(K):
        s = np.bincount(flat, weights=Xf[:, k], minlength=nG * G).reshape(nG, G)
        n = np.bincount(flat, weights=ok[:, k], minlength=nG * G).reshape(nG, G)
        S[:, k::K] = s.T
        N[:, k::K] = n.T
        if squares:
            Q[:, k::K] = np.bincount(flat, weights=Xf[:, k] ** 2, minlength=nG * G).reshape(nG, G).T
    cols = keys.loc[np.repeat(np.arange(nG), K)].reset_index(drop=True)
    cols["metric"] = np.tile(value_cols, nG)
    if not by:
        cols = cols[["metric"]]
    if squares:
        return np.asarray(clusters), cols, S, N, Q
    return np.asarray(clusters), cols, S, N


def _order_stat_pairs(A: np.ndarray, k0: np.ndarray, step: int = 16):
    """Exact order statistics ``k0`` and ``min(k0 + 1, B - 1)`` (0-based) of every row.

    ``A`` (J, B), ``k0`` (L, J); returns ``(va, vb)``, each (L, J). Instead of a
    partial sort of every row (three introselect passes over B values per level), a
    sorted subsample (every ``step``-th replicate; the replicates are iid) gives a
    bracket ``[a, b]`` around each rank, two vectorised comparison passes count the
    values below and inside it, and only the few hundred values inside are
    partitioned. A bracket that misses its rank (checked by the counts) falls back to
    the partial sort of the row, so the result is always the exact order statistic
    (about 3x faster than the per-row partition for 42 columns of 10,000 replicates).
    """
    J, B = A.shape
    L = k0.shape[0]
    va, vb = np.empty((L, J)), np.empty((L, J))
    sub = np.sort(A[:, ::step], axis=1)
    ns = sub.shape[1]
    rows = np.arange(J)
    for i in range(L):
        k = k0[i]
        k1 = np.minimum(k + 1, B - 1)
        r = k * ns // B
        # 3 SDs of a subsample rank plus 2: a miss (fallback) about once in 500 brackets
        q = k / B
        margin = np.ceil(3 * np.sqrt(ns * q * (1 - q))).astype(np.int64) + 2
        ra = np.clip(r - margin, 0, ns - 1)
        rb = np.clip(r + margin + 1, 0, ns - 1)
        a = np.where(ra > 0, sub[rows, ra], -np.inf)
        b = np.where(rb < ns - 1, sub[rows, rb], np.inf)
        below = np.count_nonzero(A < a[:, None], axis=1)
        inside = A >= a[:, None]
        inside &= A <= b[:, None]
        cnt = np.count_nonzero(inside, axis=1)
        for j in range(J):
            lo, hi = k[j] - below[j], k1[j] - below[j]
            if lo >= 0 and hi < cnt[j]:
                c = A[j][inside[j]]
                c.partition([lo, hi] if hi > lo else lo)
                va[i, j], vb[i, j] = c[lo], c[hi]
            else:  # bracket missed (heavy ties or an unlucky subsample): exact fallback
                c = A[j].copy()
                c.partition(np.unique([k[j], k1[j]]))
                va[i, j], vb[i, j] = c[k[j]], c[k1[j]]
    return va, vb


def quantile(a: np.ndarray, q, axis: int = 0):
    """Linear quantiles along axis 0 (the ``np.quantile`` / ``scipy.stats.quantile``
    default), ignoring NaN replicates, keeping +-inf exact, one sort for all levels.

    ``q`` is a scalar, a list of levels (result (L, J)), a (J,) array of per-column
    levels (result (J,)) or an (L, J) array of per-column levels (result (L, J));
    1-D ``a`` is treated as one column.
    """
    a = np.asarray(a, dtype=float)
    one_d = a.ndim == 1
    if one_d:
        a = a[:, None]
    qa = np.asarray(q, dtype=float)
    per_col = (not isinstance(q, list) and not one_d and qa.ndim in (1, 2)
               and qa.shape[-1] == a.shape[1])
    per_col_2d = per_col and qa.ndim == 2
    B = a.shape[0]
    nan_cols = np.isnan(a).any(axis=0)
    if not per_col:
        # same levels for every column: partial sort at the needed order statistics for
        # the NaN-free columns, a full sort (NaN last) only for the others
        h0 = (B - 1) * np.atleast_1d(qa)
        kth = np.unique(np.clip(np.concatenate([np.floor(h0), np.floor(h0) + 1]), 0, B - 1).astype(np.int64))
        srt = np.empty((a.shape[1], B))
        if (~nan_cols).any():
            srt[~nan_cols] = np.partition(a.T[~nan_cols], kth, axis=1)
        if nan_cols.any():
            srt[nan_cols] = np.sort(a.T[nan_cols], axis=1)
    elif not nan_cols.any():
        # per-column levels (BCa): only two order statistics per level and column are
        # needed; _order_stat_pairs finds them exactly from a small bracketed subset
        srt = None
        h0 = np.clip(np.floor((B - 1) * np.atleast_2d(qa)).astype(np.int64), 0, B - 1)  # (L, J)
        pair = _order_stat_pairs(np.ascontiguousarray(a.T), h0)
    else:
        srt = np.sort(a.T, axis=1)  # NaN last
    n = np.full(a.shape[1], B)
    if nan_cols.any():
        n[nan_cols] = (~np.isnan(srt[nan_cols])).sum(axis=1)
    levels = np.atleast_2d(qa) if per_col else np.atleast_1d(qa)[:, None]
    h = (n[None, :] - 1) * levels
    lo = np.clip(np.floor(h).astype(np.int64), 0, np.maximum(n - 1, 0)[None, :])
    hi = np.minimum(lo + 1, np.maximum(n - 1, 0)[None, :])
    t = h - lo
    rows = np.arange(a.shape[1])[None, :]
    if srt is None:  # the same ranks lo, hi (n = B here), found without a sort
        va, vb = pair
    else:
        va, vb = srt[rows, lo], srt[rows, hi]
    with np.errstate(invalid="ignore"):
        d = vb - va
        r = np.where(t >= 0.5, vb - d * (1 - t), va + d * t)  # numpy's _lerp
    r = np.where(va == vb, va, r)
    r = np.where(n[None, :] == 0, np.nan, r)
    if per_col:
        return r if per_col_2d else r[0]
    if one_d:
        r = r[:, 0]
    return r[0] if np.ndim(q) == 0 else r

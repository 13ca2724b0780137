"""Family-wise multiplicity for planner contrasts (paper C.5, docs/statistics.md,
"Pairwise planner contrasts"): the contrast matrix of all planner pairs, single-step
max-statistic p-values, Romano-Wolf stepdown p-values and the Sidak / Holm-Sidak
adjustments the default uses with few episodes.

Shared by the default family (:mod:`analysis.stats.mover`) and the comparison methods
(:mod:`analysis.stats.experimental.maxt`).
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
from scipy import special


def contrast_matrix(n_planners: int, n_metrics: int):
    """(P*M, C) matrix of +1/-1 columns, pairs (a<b) outer, metrics inner.

    Columns of the per-cluster matrix are ordered planner-major (p0m0, p0m1, ...).

    >>> pairs, C = contrast_matrix(3, 1)
    >>> pairs, C.astype(int).tolist()
    ([(0, 1), (0, 2), (1, 2)], [[1, 1, 0], [-1, 0, 1], [0, -1, -1]])
    """
    pairs = list(combinations(range(n_planners), 2))
    C = np.zeros((n_planners * n_metrics, len(pairs) * n_metrics))
    k = 0
    for a, b in pairs:
        for m in range(n_metrics):
            C[a * n_metrics + m, k] = 1
            C[b * n_metrics + m, k] = -1
            k += 1
    return pairs, C


def _stepdown(null_abs, obs_abs: np.ndarray) -> np.ndarray:
    """Romano-Wolf stepdown p-values from a (B, m) null matrix of |statistics|, or from
    an iterable of row blocks of it (the same p-values, exactly: counts are summed)."""
    if obs_abs.size == 0:
        return obs_abs.copy()
    order = np.argsort(-obs_abs, kind="stable")
    hits, n = np.zeros(obs_abs.size), 0
    for block in ([null_abs] if isinstance(null_abs, np.ndarray) else null_abs):
        srt = block[:, order]
        rev = np.maximum.accumulate(srt[:, ::-1], axis=1)[:, ::-1]
        hits += np.count_nonzero(rev >= obs_abs[order][None, :], axis=0)
        n += block.shape[0]
    p = hits / n
    p = np.maximum.accumulate(p)
    out = np.empty_like(p)
    out[order] = p
    return out


def _single_step(null_abs, obs_abs):
    """Single-step p-values ``P(max_j |Z_j| >= |z_obs|)`` and the (B,) null maxima."""
    mx = null_abs.max(axis=1)
    return (mx[:, None] >= obs_abs[None, :]).mean(axis=0), mx


def sidak_z(alpha: float, family_size: int) -> float:
    """Normal quantile of Sidak's per-contrast two-sided level
    ``1 - (1 - alpha)^(1/C)``.

    >>> round(sidak_z(0.05, 1), 4), round(sidak_z(0.05, 45), 3)
    (1.96, 3.254)
    """
    return float(-special.ndtri(-np.expm1(np.log1p(-alpha) / family_size) / 2))


def sidak_and_holm_sidak(zj: np.ndarray, p_single: np.ndarray):
    """With few episodes: the single-step p at least Sidak's ``1 - (1 - p_j)^C`` and
    Holm-Sidak stepdown p-values (the k-th smallest raw p against the ``C - k + 1``
    contrasts still in the family), never above the single-step p. ``zj`` are the
    contrasts' |z|."""
    C = len(zj)
    praw = 2 * special.ndtr(-zj)
    p1 = np.maximum(p_single, -np.expm1(C * np.log1p(-np.minimum(praw, 1 - 1e-16))))
    order = np.argsort(praw, kind="stable")
    k = np.arange(C)
    adj = -np.expm1((C - k) * np.log1p(-np.minimum(praw[order], 1 - 1e-16)))
    psd = np.empty(C)
    psd[order] = np.maximum.accumulate(adj)
    return p1, np.minimum(psd, p1)

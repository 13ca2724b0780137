"""The symmetric max-|t| pairwise families (``estimate +- critical value x SE``) that
lost the validation to the default (docs/statistics.md, "Pairwise planner contrasts",
other methods; :mod:`analysis.stats.experimental` says why they are kept).

:func:`maxt_family` is what :func:`analysis.stats.pairwise_simultaneous` runs for
them; :func:`family_inference` gives a family's critical value and p-values from
per-episode contrast sums (the coverage bench calls it directly).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special, stats

from .._core import cr1_se, pairs_weights, quantile, replicate_ratio_se, studentize
from ..intervals import satterthwaite_df
from ..multiplicity import _single_step, _stepdown, contrast_matrix

#: the methods of this module (pairwise_simultaneous's ``method=``)
MAXT_METHODS = ("satt_maxt_tcal", "pairs_maxt_studentized", "gauss_maxt_tcal", "cr3_maxt_tcal",
                "geff_maxt_tcal", "bonferroni_t", "wild_maxt")


def _t_to_z(tabs, df):
    """Map |t| (t with df d.o.f.) to the normal |z| with the same two-sided tail."""
    return -special.ndtri(np.clip(stats.t.sf(tabs, df), 1e-300, None))


def effective_clusters(sizes) -> float:
    """Effective number of clusters ``(sum n_g)^2 / sum n_g^2`` (= G for equal sizes).

    The degrees of freedom of a cluster-robust t with unequal cluster sizes are
    closer to ``G_eff - 1`` than to ``G - 1`` (Carter, Schnepel and Steigerwald 2017,
    with a working model of independent tasks).

    >>> effective_clusters([4, 4, 4]), effective_clusters([1, 1, 4])
    (3.0, 2.0)
    """
    n = np.asarray(sizes, dtype=float)
    return float(n.sum() ** 2 / (n * n).sum())


def jackknife_se(D, N):
    """CR3-type (leave-one-cluster-out jackknife) SE of the ratio and the deviations.

    ``se_j = sqrt((G-1)/G * sum_g (theta_(g)j - mean_g theta_(g)j)^2)``; returns
    ``(se, dev)`` with ``dev`` the (G, C) centred leave-one-out estimates.
    """
    G = D.shape[0]
    with np.errstate(invalid="ignore", divide="ignore"):
        loo = (D.sum(axis=0) - D) / (N.sum(axis=0) - N)
    dev = loo - loo.mean(axis=0)
    return np.sqrt((G - 1) / G * (dev * dev).sum(axis=0)), dev


def _tcal(method, Da, Na, th, sa, alpha_fw, B, rng):
    """``satt_maxt_tcal``, ``geff_maxt_tcal``, ``cr3_maxt_tcal``: the Gaussian max-|z|
    quantile of the scores carried to a t quantile (Satterthwaite, G_eff - 1 or G - 1
    degrees of freedom; ``cr3`` with jackknife SEs and correlation)."""
    G = Da.shape[0]
    if method == "cr3_maxt_tcal":
        s_used, dev = jackknife_se(Da, Na)
        df = G - 1
    elif method == "satt_maxt_tcal":
        s_used, dev = sa, Da - th * Na
        df = satterthwaite_df(dev, Na[:, 0])
    else:
        s_used, dev = sa, Da - th * Na
        df = effective_clusters(Na[:, 0]) - 1
    t_obs = np.abs(th / s_used)
    xi = rng.standard_normal((B, G))
    Z = np.abs((xi @ dev) / np.sqrt((dev * dev).sum(axis=0)))
    z_obs = _t_to_z(t_obs, df)
    p1, mxz = _single_step(Z, z_obs)
    cz = float(quantile(mxz, 1 - alpha_fw))
    crit = float(stats.t.isf(special.ndtr(-cz), df))
    return crit, p1, _stepdown(Z, z_obs), s_used


def _bonferroni(t_obs, G, m, alpha_fw):
    """``bonferroni_t``: t(G-1) at ``alpha / 2m``; Holm stepdown p-values."""
    crit = stats.t.ppf(1 - alpha_fw / (2 * m), G - 1)
    praw = 2 * stats.t.sf(t_obs, G - 1)
    p1 = np.minimum(1.0, m * praw)
    order = np.argsort(praw, kind="stable")
    holm = np.minimum(1.0, (m - np.arange(m)) * praw[order])
    holm = np.maximum.accumulate(holm)
    psd = np.empty(m)
    psd[order] = holm
    return crit, p1, psd


def family_inference(method, D, N, theta, se, active, alpha_fw, B, rng):
    """Critical value, p-values and SEs for the active contrasts.

    ``D`` (G, C) per-cluster contrast sums, ``N`` (G, C) counts, ``se`` the CR1 SEs.
    Returns ``(crit, p_single, p_stepdown, se_used)`` for the active columns
    (``se_used`` is the CR1 SE except for ``cr3_maxt_tcal``, which uses the
    jackknife SE).
    """
    G = D.shape[0]
    Da, Na = D[:, active], N[:, active]
    th, sa = theta[active], se[active]
    m = int(active.sum())
    if m == 0:
        return np.nan, np.array([]), np.array([]), sa
    if method in ("cr3_maxt_tcal", "geff_maxt_tcal", "satt_maxt_tcal"):
        return _tcal(method, Da, Na, th, sa, alpha_fw, B, rng)
    t_obs = np.abs(th / sa)
    if method == "bonferroni_t":
        return (*_bonferroni(t_obs, G, m, alpha_fw), sa)
    if method == "pairs_maxt_studentized":
        W = pairs_weights(rng, B, G)
        tb, seb, zb = replicate_ratio_se(W, Da, Na, G)
        T = np.abs(studentize(tb, th, seb, zb, sa))
        T = np.where(np.isnan(T), 0.0, T)
        p1, mx = _single_step(T, t_obs)
        return float(quantile(mx, 1 - alpha_fw)), p1, _stepdown(T, t_obs), sa
    if method == "wild_maxt":
        xi = rng.choice(np.array([-1.0, 1.0]), size=(B, G))
        e = Da - th * Na
        T = np.abs((xi @ e) / np.sqrt(G / (G - 1) * (e * e).sum(axis=0)))
        p1, mx = _single_step(T, t_obs)
        return float(quantile(mx, 1 - alpha_fw)), p1, _stepdown(T, t_obs), sa
    if method == "gauss_maxt_tcal":
        # Gaussian multiplier on the cluster scores: Z has the contrasts' CR1 correlation
        xi = rng.standard_normal((B, G))
        e = Da - th * Na
        Z = np.abs((xi @ e) / np.sqrt((e * e).sum(axis=0)))
        z_obs = _t_to_z(t_obs, G - 1)
        p1g, mxz = _single_step(Z, z_obs)
        cz = float(quantile(mxz, 1 - alpha_fw))
        crit_g = float(stats.t.isf(special.ndtr(-cz), G - 1))
        return crit_g, p1g, _stepdown(Z, z_obs), sa
    raise AssertionError(method)


@dataclass(frozen=True, eq=False)
class MaxtFamily:
    """Result of :func:`maxt_family`: per contrast (pairs outer, metrics inner)
    ``estimate``, ``se`` (the method's SE), ``zero_se``, ``low``, ``high``
    (``estimate`` where set aside), ``p_single_step``, ``p_stepdown`` (NaN where set
    aside); the family's ``critical_value`` (|t|), ``per_contrast_level`` (its t(G-1)
    level), ``family_size`` (contrasts with nonzero SE) and ``pairs``."""

    estimate: np.ndarray
    se: np.ndarray
    zero_se: np.ndarray
    low: np.ndarray
    high: np.ndarray
    p_single_step: np.ndarray
    p_stepdown: np.ndarray
    critical_value: float
    per_contrast_level: float
    family_size: int
    pairs: list


def maxt_family(method, S, n_g, n_planners, n_metrics, integral, alpha_fw, B, rng) -> MaxtFamily:
    """The family of ``method`` (one of ``MAXT_METHODS``) on per-episode sums ``S``
    (G, P*M, planner-major) with ``n_g`` tasks per episode; ``integral``: every task
    value is an integer (the contrast sums are then rounded, so a zero SE is exact).
    Zero-SE contrasts are set aside: out of the family, interval = point, p NaN."""
    pairs, Cm = contrast_matrix(n_planners, n_metrics)
    D = S @ Cm
    if integral:
        D = np.round(D)
    G = D.shape[0]
    N = np.repeat(n_g[:, None], D.shape[1], axis=1)
    theta, se, zero = cr1_se(D, N)
    active = ~zero
    crit, p1a, psda, se_used = family_inference(method, D, N, theta, se, active, alpha_fw, B, rng)
    se = se.copy()
    se[active] = se_used
    C = D.shape[1]
    p1 = np.full(C, np.nan)
    psd = np.full(C, np.nan)
    p1[active], psd[active] = p1a, psda
    level = float(2 * stats.t.cdf(crit, G - 1) - 1) if np.isfinite(crit) else float("nan")
    return MaxtFamily(estimate=theta, se=se, zero_se=zero,
                      low=np.where(active, theta - crit * se, theta),
                      high=np.where(active, theta + crit * se, theta),
                      p_single_step=p1, p_stepdown=psd, critical_value=crit,
                      per_contrast_level=level, family_size=int(active.sum()), pairs=pairs)

"""Closed-form intervals for bounded task-macro means with episode clusters.

Korn-Graubard (1998) cluster-adjusted Clopper-Pearson: the design-based variance of
the mean is turned into an effective number of tasks, ``n_eff = theta (1 - theta) / v``,
and the exact binomial (Clopper-Pearson, Beta quantiles) interval is taken at
``x = theta n_eff`` successes out of ``n_eff``; a degrees-of-freedom factor
``(t_{n-1} / t_{df})^2`` shrinks ``n_eff`` for the few episodes behind ``v``.
Choices made here (simulated in ``bench/coverage.py``, docs/statistics.md):

* ``v = max(v_CR1, s^2 / n)``: the design effect is floored at 1 against independent
  tasks (``s^2`` the task-level variance). For binary data ``s^2 / n`` is the binomial
  variance, so ``n_eff <= n``; for fractions in [0, 1] (GCR, action validity) the floor
  keeps ``n_eff`` at what independent tasks would give. With few episodes holding the
  few successes, ``v_CR1`` is often far too small; the floor stops that from making the
  interval narrower than an independent-task exact interval.
* ``theta`` at 0 or 1 (every value equal): ``n_eff = n``, so 0 successes in n tasks get
  the exact upper bound ``1 - (alpha/2)^(1/n)`` (shrunk by the df factor), never [0, 0].
* ``df``: Satterthwaite degrees of freedom of the CR1 variance
  (:func:`satterthwaite_df`), ``G - 1`` for equal episodes, fewer when a few large
  episodes dominate.
"""

from __future__ import annotations

import numpy as np
from scipy import special


def satterthwaite_df(scores: np.ndarray, sizes) -> float:
    """Satterthwaite degrees of freedom of the CR1 variance for a set of columns.

    The cluster score variances are modelled as ``a_g = b1 n_g + b2 n_g^2`` (tasks
    with an exchangeable episode effect), fitted by non-negative least squares to the
    squared scores pooled over the columns (each scaled to unit sum), and
    ``df = (sum a_g)^2 / sum a_g^2 - 1`` (``G - 1`` for equal clusters or when every
    score is zero), at least 1.

    >>> satterthwaite_df(np.ones((10, 1)), [3] * 10)
    9.0
    """
    from scipy.optimize import nnls

    n = np.asarray(sizes, dtype=float)
    e2 = scores * scores
    tot = e2.sum(axis=0)
    ok = tot > 0
    if not ok.any():  # no variation to model: the equal-episode value
        return float(max(len(n) - 1, 1))
    v = (e2[:, ok] / tot[ok]).mean(axis=1)
    X = np.column_stack([n, n * n])
    coef, _ = nnls(X, v)
    a = X @ coef
    if not np.any(a > 0):
        a = n
    return float(max(a.sum() ** 2 / (a * a).sum() - 1, 1.0))


def column_df(scores: np.ndarray, N: np.ndarray) -> np.ndarray:
    """Per-column Satterthwaite df (clusters with no record of a column left out)."""
    out = np.empty(scores.shape[1])
    for j in range(scores.shape[1]):
        m = N[:, j] > 0
        out[j] = satterthwaite_df(scores[m, j:j + 1], N[m, j]) if m.sum() > 1 else 1.0
    return out


def kg_effective_n(theta, v_cr1, s2, n, df, alpha):
    """Korn-Graubard effective number of tasks after the df factor (see module doc).

    ``alpha`` is the one-sided level (0.025 for a 95% interval).
    """
    theta = np.asarray(theta, float)
    n = np.asarray(n, float)
    v = np.maximum(np.asarray(v_cr1, float), np.asarray(s2, float) / np.maximum(n, 1))
    inner = (theta > 0) & (theta < 1) & (v > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        neff = np.where(inner, theta * (1 - theta) / np.where(inner, v, 1.0), n)
    # t.isf(a, d) = -stdtrit(d, a): the bare ufunc, ~100x cheaper than scipy.stats.t
    fac = (special.stdtrit(np.maximum(n - 1, 1), alpha) / special.stdtrit(df, alpha)) ** 2
    return neff * fac


def kg_interval(theta, v_cr1, s2, n, df, alpha):
    """Korn-Graubard Clopper-Pearson bounds for means in [0, 1] (one-sided ``alpha``).

    Arguments broadcast. Returns ``(low, high, n_eff)``.

    >>> lo, hi, _ = kg_interval(0.0, 0.0, 0.0, 88, 87, 0.025)  # 0 of 88: exact CP bound
    >>> float(lo), round(float(hi), 4)
    (0.0, 0.0411)
    """
    theta = np.clip(np.asarray(theta, float), 0.0, 1.0)
    neff = kg_effective_n(theta, v_cr1, s2, n, df, alpha)
    x = theta * neff
    with np.errstate(invalid="ignore"):
        lo = np.where(x > 0, special.betaincinv(np.where(x > 0, x, 1), neff - x + 1, alpha), 0.0)
        hi = np.where(x < neff, special.betaincinv(x + 1, np.where(x < neff, neff - x, 1), 1 - alpha),
                      1.0)
    return lo, hi, neff


def mover_difference(pa, la, ua, pb, lb, ub, r):
    """MOVER interval for ``pa - pb`` from the two means' own intervals (Zou and Donner
    2008, with the estimates' correlation ``r``): asymmetric where the single intervals
    are (rates near 0 or 1), Wald-type where they are symmetric.

    >>> [round(float(v), 4) for v in mover_difference(0.5, 0.4, 0.6, 0.5, 0.4, 0.6, 0.0)]
    [-0.1414, 0.1414]
    """
    r = np.clip(np.asarray(r, float), -1.0, 1.0)
    a1, a2 = pa - la, ub - pb
    b1, b2 = ua - pa, pb - lb
    d = pa - pb
    low = d - np.sqrt(np.maximum(a1 * a1 + a2 * a2 - 2 * r * a1 * a2, 0.0))
    high = d + np.sqrt(np.maximum(b1 * b1 + b2 * b2 - 2 * r * b1 * b2, 0.0))
    return low, high


def kg_wilson_interval(theta, v_cr1, s2, n, df, alpha):
    """Wilson score bounds with a Korn-Graubard effective sample size (one-sided ``alpha``).

    ``n_eff = theta (1 - theta) / max(v_CR1, s^2 / n)`` as in :func:`kg_interval`
    (``n`` at 0 or 1) and the Wilson score interval at ``x = theta n_eff`` of ``n_eff``
    with the t quantile ``q = t_df(1 - alpha)`` in place of the normal one (the
    design-effect Wilson interval with a df correction, Dean and Pagano 2015;
    Franco, Little, Louis and Slud 2019). Using ``t_df`` with ``n_eff`` is the same as
    the normal quantile with ``n_eff (z / t_df)^2``, the Korn-Graubard df factor.
    Less conservative than Clopper-Pearson inside (0, 1); at 0 successes the upper
    bound ``q^2 / (n + q^2)`` is wider than the exact one at extreme levels.
    Returns ``(low, high, n_eff)``.

    >>> lo, hi, _ = kg_wilson_interval(0.5, 0.0025, 0.0, 100, 1e9, 0.025)  # 50 of 100
    >>> round(float(lo), 4), round(float(hi), 4)
    (0.4038, 0.5962)
    """
    theta = np.clip(np.asarray(theta, float), 0.0, 1.0)
    n = np.asarray(n, float)
    v = np.maximum(np.asarray(v_cr1, float), np.asarray(s2, float) / np.maximum(n, 1))
    inner = (theta > 0) & (theta < 1) & (v > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        neff = np.where(inner, theta * (1 - theta) / np.where(inner, v, 1.0), n)
    q = -special.stdtrit(df, alpha)
    fin = np.isfinite(q)  # an infinite quantile (level 1) gives [0, 1]
    q = np.where(fin, q, 0.0)
    q2 = q * q
    with np.errstate(divide="ignore", invalid="ignore"):
        centre = (theta * neff + q2 / 2) / (neff + q2)
        half = q / (neff + q2) * np.sqrt(theta * (1 - theta) * neff + q2 / 4)
    lo = np.where(fin & (theta > 0), np.maximum(centre - half, 0.0), 0.0)
    hi = np.where(fin & (theta < 1), np.minimum(centre + half, 1.0), 1.0)
    return lo, hi, neff


def bell_mccaffrey_df(sizes) -> float:
    """Bell-McCaffrey degrees of freedom of the CR2 variance of a mean over clusters.

    For the intercept-only model (a task-macro mean, or a mean of task differences)
    the CR2 (bias-reduced linearisation) variance is
    ``sum_g E_g^2 / (1 - n_g / n) / n^2`` (``E_g`` the episode's summed residuals), a
    quadratic form ``sum_g (b_g' y)^2`` with ``b_g = c_g (1_g - n_g / n)``,
    ``c_g = (1 - n_g / n)^(-1/2) / n``. Under the working model of independent
    tasks (Bell and McCaffrey 2002; the CR2 default of Pustejovsky and Tipton 2018)
    ``df = (tr K)^2 / tr K^2`` with ``K_gh = b_g' b_h = c_g c_h n_g (delta_gh - n_h / n)``
    (``G - 1`` for equal clusters).

    >>> round(bell_mccaffrey_df([3] * 10), 9)
    9.0
    """
    n_g = np.asarray(sizes, float)
    n = n_g.sum()
    c = 1.0 / np.sqrt(1.0 - n_g / n) / n
    K = (c[:, None] * c[None, :]) * n_g[:, None] * (np.eye(len(n_g)) - n_g[None, :] / n)
    return float(np.trace(K) ** 2 / np.sum(K * K.T))


def cr2_se(E, n_g) -> np.ndarray:
    """CR2 standard error of a mean from its (G, C) episode residual sums ``E``.

    ``sqrt(sum_g E_g^2 / (1 - n_g / n)) / n`` (the intercept-only CR2, see
    :func:`bell_mccaffrey_df`); equals CR1 for equal clusters.

    >>> float(cr2_se(np.array([[1.0], [-1.0]]), [2, 2])[0]) == float(np.sqrt(4.0) / 4)
    True
    """
    n_g = np.asarray(n_g, float)
    n = n_g.sum()
    w = 1.0 / (1.0 - n_g / n)
    return np.sqrt((w[:, None] * E * E).sum(axis=0)) / n

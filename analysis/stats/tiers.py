"""Leaderboard tiers: planners grouped only as far as the simultaneous family separates them.

A leaderboard that orders planners by their point estimates ranks pairs that the
intervals cannot tell apart. :func:`leaderboard_tiers` reads the default simultaneous
paired family (:func:`analysis.stats.pairwise_simultaneous`, the one Table 6 prints;
nothing here computes an interval) and groups the planners of each contrast metric into
tiers, so that **two planners share a tier exactly when the family does not separate
them** (their simultaneous interval contains 0). With the family's intervals
simultaneous at 95%, two planners that are truly equal land in different tiers with
probability at most 5% (jointly over every pair and metric): ``bench/tier_calibration.py``
checks this under the committed episode structure (docs/statistics.md, "Leaderboard
tiers").

Tier construction (compact letter display, Piepho 2004, "An algorithm for a
letter-based representation of all-pairwise comparisons", J. Comput. Graph. Stat. 13):

1. Separated pairs: the contrasts whose simultaneous interval excludes 0 (verdict
   ``a>b`` or ``b>a``). A contrast set aside for zero SE (t methods only; the default
   keeps every contrast) is not separated: it was left out of the family.
2. Rank: planners by their difference from the planners' average (``vs_average``, the
   mean of their contrasts, which is their mean minus the average of the planners'
   means), best first; equal values share a rank and are ordered by name, so the input
   order of the planners never matters.
3. Tiers: the maximal groups of planners no two of which are separated (insert and
   absorb: start with one group of all planners; for each separated pair, split every
   group holding both into one without each; drop a group contained in another). Then a
   group is dropped, worst-ranked first, when every planner and every pair in it is also
   in another group (Piepho's sweep at group level). Tiers are numbered from the best:
   by their members' ranks, compared as sorted lists.

A planner can sit in several tiers (three planners where only A and C are separated:
tiers {A, B} and {B, C}); a single partition cannot honour "share a tier unless
separated" when separation is not transitive, and a sequential rule ("a new tier starts
when the next planner is separated from the tier's best") would put B with A and cut B
from C although nothing separates them. When the separations are consistent with the
ranking (a planner separated from one above it is separated from all above that one),
every tier is a contiguous run of the ranking.

Minimum detectable difference (MDD) at ``power`` per metric: the smallest true
difference ``d`` that the family separates with probability ``power``. Analytic
(:func:`detectable_difference`, ``data=`` without ``n_sims``): per pair, one planner at
``q`` (the pair's mean rate mirrored to at most 1/2) and one at ``q + d``, each mean with
its Korn-Graubard effective number of tasks, Satterthwaite df and the pair's correlation;
the family's own half-width ``w(d)`` and SE ``se(d)`` at those rates, the estimate over
its SE taken as noncentral t, ``d`` by bisection. Exact to about 0.005 in power in the
binomial case, but short of ``power`` under the committed episode structure (about 0.79,
0.67 and 0.74 for validity, completed and GCR in ``bench/tier_calibration.py``): the
interval's width varies between datasets, which a computation at the mean design leaves
out. Without ``data`` the MDD is ``w + z_power se`` at the observed SE (optimistic).

Calibrated by simulation (:func:`calibrated_difference`; ``leaderboard_tiers(...,
n_sims=, seed=)``, what Table 17 prints): per metric one pooled pair design (the
planners' mean rate ``q``, mirrored to at most 1/2; the harmonic mean of the pairs'
``n_eff``; their mean correlation; the tasks' variance over ``p (1 - p)``) and the
data's episode layout (task counts). ``n_sims`` datasets of two planners at ``q`` and
``q + d`` (:func:`simulated_power`: Beta episode means with the design's variance,
Gaussian copula for the correlation), on each the family's own decision (each mean's
CR1 variance, Satterthwaite df and Korn-Graubard interval from that dataset, MOVER, the
``t_{G-1}`` floor); the MDD is the ``d`` where the share separated reaches ``power``,
by bisection on common random numbers (the same draws at every ``d``: the simulated
power is monotone in ``d``). One numpy Generator from ``seed`` draws everything; the
Monte Carlo SE of the power at the MDD, ``sqrt(power (1 - power) / n_sims)``, is
``mdd.power_mcse`` (docs/statistics.md, "Leaderboard tiers", for what the bench
measured at it).
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd
from scipy import special, stats

from ._core import ESTIMAND, Provenance, cr1_se
from .intervals import column_df, kg_interval

__all__ = ["LeaderboardTiersResult", "calibrated_difference", "detectable_difference",
           "leaderboard_tiers", "simulated_power", "tier_groups"]


@dataclass(frozen=True)
class LeaderboardTiersResult(Provenance):
    """Result of :func:`leaderboard_tiers`.

    ``table``: one row per (metric, planner), best first within a metric: ``rank``
    (1 = best; equal estimates share a rank), ``estimate`` (the planner's mean, when
    ``means`` was given, else NaN), ``vs_average`` (the planner's mean minus the
    planners' average, from the contrasts), ``tiers`` (tuple of tier numbers, 1 = the
    best tier), ``top_tier`` (in tier 1), ``separated_from`` (tuple of the planners the
    family separates it from). ``tiers_by_metric``: one row per (metric, tier) with
    ``planners`` (tuple, best first). ``mdd``: one row per metric with ``n_pairs``
    (contrasts with nonzero SE), ``n_undetectable`` (pairs whose MDD is infinite),
    ``se_at`` (``"alternative"``: at the alternative's rates, from ``data``;
    ``"observed"``: at the observed SE), ``se_median``, ``halfwidth_median``,
    ``mdd_median``, ``mdd_min``, ``mdd_max`` (same units as the metric; ``"simulated"``:
    one pooled value, so the three are equal), ``power_mcse`` (Monte Carlo SE of the
    simulated power at the MDD; NaN unless simulated). ``power`` the MDD's power;
    ``critical_value``, ``per_contrast_level``, ``n_clusters`` and the provenance fields
    are the family's.
    """

    table: pd.DataFrame
    tiers_by_metric: pd.DataFrame
    mdd: pd.DataFrame
    power: float
    critical_value: float
    per_contrast_level: float
    n_clusters: int
    estimand: str = ESTIMAND


def tier_groups(order, separated) -> list[tuple]:
    """Tiers of planners ``order`` (best first) given the ``separated`` pairs.

    Returns tuples of planners (each in ``order``'s order), best tier first: every pair
    not in ``separated`` shares a tier, no pair in it does, every planner is in one tier
    at least (module docstring, step 3).

    >>> tier_groups(["A", "B", "C"], {("A", "C")})
    [('A', 'B'), ('B', 'C')]
    >>> tier_groups(["A", "B", "C"], set())
    [('A', 'B', 'C')]
    >>> tier_groups(["A"], set())
    [('A',)]
    """
    order = list(order)
    rank = {p: i for i, p in enumerate(order)}
    if len(rank) != len(order):
        raise ValueError(f"order names a planner twice: {order}")
    sep = set()
    for a, b in separated:
        if a not in rank or b not in rank:
            raise ValueError(f"separated pair {(a, b)!r} names a planner not in order "
                             f"{order}")
        if a != b:
            sep.add(frozenset((a, b)))
    groups = [frozenset(order)] if order else []
    for pair in sorted(sep, key=lambda s: sorted(rank[p] for p in s)):
        a, b = sorted(pair, key=rank.get)
        split = []
        for g in groups:
            split += [g - {a}, g - {b}] if pair <= g else [g]
        # absorb: keep the maximal groups (one copy each)
        uniq = list(dict.fromkeys(split))
        groups = [g for g in uniq if g and not any(g < h for h in uniq)]
    key = lambda g: sorted(rank[p] for p in g)  # noqa: E731
    groups.sort(key=key)
    # sweep: a group all of whose members and pairs another group also holds says nothing
    for g in sorted(groups, key=key, reverse=True):
        rest = [h for h in groups if h != g]
        if all(any(p in h for h in rest) for p in g) and all(
                any({p, q} <= h for h in rest) for p, q in combinations(g, 2)):
            groups = rest
    return [tuple(sorted(g, key=rank.get)) for g in groups]


def detectable_difference(rate_a, rate_b, n_eff, df, r, critical_value, n_clusters,
                          power: float = 0.8):
    """Minimum detectable difference of a contrast of two rates (module docstring): the
    smallest ``d`` such that a planner at ``q + d`` is separated from one at ``q`` with
    probability ``power`` by the MOVER Korn-Graubard interval at the per-contrast
    critical value ``critical_value`` (a normal quantile, as in the family), ``q`` the
    pair's mean rate mirrored to at most 1/2.

    ``n_eff``: the pair's effective number of tasks (``p (1 - p) / v_CR1``, held as the
    rates move), ``df`` the degrees of freedom of its variance, ``r`` the correlation of
    the two means, ``n_clusters`` the episodes (the family's ``t_{G-1}`` floor). At the
    alternative rates: the interval's lower half-width ``w(d)`` and standard error
    ``se(d)``; power ``P(T > w(d) / se(d))`` with ``T`` noncentral t (``df``,
    ``d / se(d)``), whose estimated SE is what widens a t interval; the MDD is the root
    (bisection). NaN where no ``d`` below ``1 - q`` reaches ``power``. Arrays broadcast.

    Two independent binomial samples of 200 tasks (episodes of one task) at 0.2 and 0.3,
    a 95% interval: the MDD from the pair's mean 0.25 is 0.133, where the textbook
    ``(1.96 + 0.84) se`` at the observed SE gives 0.121.

    >>> d = detectable_difference(0.2, 0.3, 200, 199, 0.0, 1.96, 200)
    >>> round(float(d), 3)
    0.133
    """
    if not 0 < power < 1:
        raise ValueError(f"power={power!r}; valid: a number strictly between 0 and 1")
    ra, rb, ne, df, r = np.broadcast_arrays(*(np.asarray(v, float) for v in
                                              (rate_a, rate_b, n_eff, df, r)))
    if np.any((ra < 0) | (ra > 1) | (rb < 0) | (rb > 1)):
        raise ValueError("rate_a, rate_b: rates in [0, 1]")
    a1 = special.ndtr(-critical_value)              # the family's one-sided level
    t_floor = -special.stdtrit(max(n_clusters - 1.0, 1.0), a1)
    pm = (ra + rb) / 2
    q = np.minimum(pm, 1 - pm)
    r = np.clip(r, -1, 1)

    def pw(d):
        hi = q + d
        v1, v0 = hi * (1 - hi), q * (1 - q)
        # the family's single intervals (kg_interval) at the alternative rates with the
        # pair's effective size: n_eff = p (1 - p) / v, so v = p (1 - p) / n_eff
        lo1, _, _ = kg_interval(hi, v1 / ne, 0.0, ne, df, a1)
        _, hi0, _ = kg_interval(q, v0 / ne, 0.0, ne, df, a1)
        lw, uw = hi - lo1, hi0 - q
        w = np.sqrt(np.maximum(lw * lw + uw * uw - 2 * r * lw * uw, 0.0))
        with np.errstate(invalid="ignore", divide="ignore"):
            se = np.sqrt(np.maximum(v1 + v0 - 2 * r * np.sqrt(v1 * v0), 0.0) / ne)
            w = np.maximum(w, t_floor * se)
            return np.where(se > 0, stats.nct.sf(w / np.where(se > 0, se, 1), df,
                                                 d / np.where(se > 0, se, 1)), 0.0)

    lo, hi = np.zeros_like(q), 1 - q
    ok = (ne > 0) & (pw(hi) >= power)
    for _ in range(40):  # bisection: (1 - q) / 2^40, far below any printed digit
        mid = (lo + hi) / 2
        below = pw(mid) < power
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    return np.where(ok, (lo + hi) / 2, np.nan)[()]


def _satterthwaite_rows(e2, n):
    """:func:`analysis.stats.intervals.satterthwaite_df` of one column, for every row of
    the squared scores ``e2`` (..., G) at once: the non-negative least-squares fit of
    ``a_g = b1 n_g + b2 n_g^2`` solved in closed form (the unconstrained fit when both
    coefficients are >= 0, else the better of the two one-term fits)."""
    tot = e2.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        v = np.where(tot > 0, e2 / np.where(tot > 0, tot, 1), 0.0)
    x1, x2 = n, n * n
    s11, s12, s22 = x1 @ x1, x1 @ x2, x2 @ x2
    y1, y2 = v @ x1, v @ x2
    det = s11 * s22 - s12 * s12
    with np.errstate(invalid="ignore", divide="ignore"):  # det = 0: equal episodes
        b1, b2 = (s22 * y1 - s12 * y2) / det, (s11 * y2 - s12 * y1) / det
    # one-term fits (clipped at 0) and their residual sums of squares, v'v dropped
    c1, c2 = np.maximum(y1 / s11, 0), np.maximum(y2 / s22, 0)
    r1, r2 = c1 * c1 * s11 - 2 * c1 * y1, c2 * c2 * s22 - 2 * c2 * y2
    both = (b1 >= 0) & (b2 >= 0)
    b1 = np.where(both, b1, np.where(r1 <= r2, c1, 0.0))
    b2 = np.where(both, b2, np.where(r1 <= r2, 0.0, c2))
    a = b1[..., None] * x1 + b2[..., None] * x2
    none = ~np.any(a > 0, axis=-1) | (tot[..., 0] <= 0)
    a = np.where(none[..., None], x1, a)
    return np.maximum(a.sum(axis=-1) ** 2 / (a * a).sum(axis=-1) - 1, 1.0)


def _power_curve(rate_a, rate_b, n_eff, r, task_ratio, sizes, critical_value, z_a, z_b):
    """``(q, pw)``: the alternative's lower rate per pair and ``pw(d)``, the simulated
    power at ``d`` (:func:`simulated_power`), with the draws and the planner at ``q``
    fixed (computed once: only the planner at ``q + d`` moves with ``d``)."""
    n_g = np.asarray(sizes, float)
    G, n = len(n_g), float(n_g.sum())
    if G < 2:
        raise ValueError(f"sizes={list(sizes)!r}; valid: task counts of 2 or more episodes")
    a1 = special.ndtr(-critical_value)
    t_floor = -special.stdtrit(max(G - 1.0, 1.0), a1)
    pm = (np.asarray(rate_a, float) + np.asarray(rate_b, float)) / 2
    q = np.minimum(pm, 1 - pm)
    k = np.asarray(task_ratio, float)[:, None, None]
    ne = np.asarray(n_eff, float)[:, None, None]
    # the episode correlation that gives sum_g n_g a_g = n^2 / n_eff
    rho = np.maximum((n * n / (ne * k) - n) / max(float(n_g @ n_g) - n, 1e-12), 0.0)
    k = np.minimum(k, n / ne)                      # rho = 0 and still too much variance
    a_g = k * (1 + (n_g - 1) * rho)
    # an episode's mean is Beta(p phi, (1 - p) phi): mean p, variance p (1 - p) a_g / n_g
    # (phi + 1 = n_g / a_g); bounded and skewed near 0 and 1 as the data are, Bernoulli
    # in the limit phi -> 0 (one task per episode, k = 1)
    phi = np.maximum(n_g / a_g - 1, 1e-3)
    rr = np.clip(np.asarray(r, float), -1, 1)[:, None, None]
    u_a = special.ndtr(z_a)
    u_b = special.ndtr(rr * z_a + np.sqrt(1 - rr * rr) * z_b)
    cr1 = G / (G - 1)

    def parts(p, u):
        S = n_g * special.betaincinv(p * phi, (1 - p) * phi, u)
        th = S.sum(axis=-1) / n
        e = S - th[..., None] * n_g
        v = cr1 * (e * e).sum(axis=-1) / (n * n)
        return th, e, v, _satterthwaite_rows(e * e, n_g)

    q0 = q[:, None, None]
    th0, e0, v0, df0 = parts(q0, u_a)
    kk = k[..., 0]
    _, hi0, _ = kg_interval(th0, v0, kk * th0 * (1 - th0), n, df0, a1)
    uw = hi0 - th0
    ss0 = (e0 * e0).sum(axis=-1)

    def pw(d):
        th1, e1, v1, df1 = parts(q0 + np.asarray(d, float)[:, None, None], u_b)
        lo1, _, _ = kg_interval(th1, v1, kk * th1 * (1 - th1), n, df1, a1)
        lw = th1 - lo1
        with np.errstate(invalid="ignore", divide="ignore"):
            den = np.sqrt(ss0 * (e1 * e1).sum(axis=-1))
            rh = np.where(den > 0, (e0 * e1).sum(axis=-1) / np.where(den > 0, den, 1), 0.0)
        w = np.sqrt(np.maximum(lw * lw + uw * uw - 2 * rh * lw * uw, 0.0))
        ec = e1 - e0
        w = np.maximum(w, t_floor * np.sqrt(cr1 * (ec * ec).sum(axis=-1)) / n)
        return ((th1 - th0) > w).mean(axis=-1)

    return q, pw


def simulated_power(d, rate_a, rate_b, n_eff, r, task_ratio, sizes, critical_value,
                    z_a, z_b):
    """Power of the family's decision to separate a planner at ``q + d`` from one at
    ``q`` (``q`` the pair's mean rate mirrored to at most 1/2), the share of the
    datasets of the standard normal draws ``z_a``, ``z_b`` (n_sims, G) it separates;
    arrays over pairs (1-D).

    Each dataset: per episode g with ``n_g`` tasks (``sizes``) and each planner at rate
    ``p``, the episode mean is Beta with mean ``p`` and variance ``p (1 - p) a_g / n_g``,
    ``a_g = k (1 + (n_g - 1) rho)``: ``k`` the task variance over ``p (1 - p)``
    (``task_ratio``; 1 for 0/1 outcomes) and ``rho`` >= 0 the episode correlation that
    gives the mean the pair's effective size ``n_eff`` (``k`` lowered where even
    ``rho = 0`` is above it); the two planners' draws are correlated ``r`` (Gaussian
    copula). On each dataset the family's own decision at the per-contrast critical
    value: each mean's CR1 variance (floored at ``s^2 / n``, ``s^2 = k p (1 - p)``),
    Satterthwaite df from its episode scores, Korn-Graubard Clopper-Pearson interval,
    MOVER with the estimated correlation, the contrast's ``t_{G-1} se`` floor;
    separated when the lower bound exceeds 0.

    >>> z = np.random.default_rng(0).standard_normal((2, 400, 18))
    >>> pw = [float(simulated_power([d], [0.3], [0.3], [60.0], [0.0], [1.0], [5] * 18,
    ...                             2.5, *z)[0]) for d in (0.0, 0.2, 0.4)]
    >>> pw[0] < 0.01 < pw[1] < pw[2], pw[2] > 0.9
    (True, True)
    """
    _, pw = _power_curve(*(np.atleast_1d(np.asarray(v, float)) for v in
                           (rate_a, rate_b, n_eff, r, task_ratio)),
                         sizes, critical_value, z_a, z_b)
    return pw(np.atleast_1d(np.asarray(d, float)))


def calibrated_difference(rate_a, rate_b, n_eff, r, task_ratio, sizes, critical_value,
                          power: float = 0.8, n_sims: int = 400, seed=None):
    """Minimum detectable difference by simulation (module docstring): per pair the
    smallest ``d`` at which :func:`simulated_power` reaches ``power``, by bisection on
    common random numbers (the same ``n_sims`` datasets' draws at every ``d``, so the
    simulated power is monotone in ``d`` and the root is stable). ``seed``: an int or
    a numpy Generator, the only source of the draws. Returns ``(mdd, power_mcse)``:
    NaN where no ``d`` below ``1 - q`` reaches ``power``; ``power_mcse`` =
    ``sqrt(power (1 - power) / n_sims)``, the Monte Carlo SE of the power at ``mdd``.

    18 episodes of 5 tasks, 0/1 outcomes at 0.3 (no episode effect), a per-contrast
    critical value of 2.5:

    >>> d, e = calibrated_difference([0.3], [0.3], [90.0], [0.0], [1.0], [5] * 18, 2.5,
    ...                              seed=0)
    >>> round(float(d[0]), 2), e
    (0.29, 0.02)
    """
    if not 0 < power < 1:
        raise ValueError(f"power={power!r}; valid: a number strictly between 0 and 1")
    if int(n_sims) < 10:
        raise ValueError(f"n_sims={n_sims!r}; valid: an integer >= 10")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    ra, rb, ne, r, k = np.broadcast_arrays(*(np.atleast_1d(np.asarray(v, float)) for v in
                                             (rate_a, rate_b, n_eff, r, task_ratio)))
    z_a, z_b = rng.standard_normal((2, int(n_sims), len(sizes)))
    q, pw = _power_curve(ra, rb, ne, r, k, sizes, critical_value, z_a, z_b)
    lo, hi = np.zeros_like(q), 1 - q - 1e-9
    ok = (ne > 0) & (pw(hi) >= power)
    for _ in range(12):  # (1 - q) / 2^12 < 0.013 pp: below the printed digit
        mid = (lo + hi) / 2
        below = pw(mid) < power
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    return np.where(ok, hi, np.nan), float(np.sqrt(power * (1 - power) / int(n_sims)))


def pair_design(data, metric, pairs, planner_col="planner", task_col="task_id",
                cluster_col="episode_id"):
    """Per pair of ``pairs`` the inputs of :func:`detectable_difference` from the
    tidy per-task ``data`` (as :func:`analysis.stats.pairwise_simultaneous` takes it):
    ``(rate_a, rate_b, n_eff, df, r)``, the family's own per-mean quantities (CR1
    variance floored at ``s^2 / n``, Satterthwaite df, correlation of the episode
    scores); ``n_eff`` the pair's harmonic mean, ``df`` the mean, so that the MDD does
    not depend on which planner is called ``a``."""
    wide = data.pivot(index=task_col, columns=planner_col, values=metric)
    ep = data.drop_duplicates(task_col).set_index(task_col)[cluster_col].loc[wide.index]
    _, cl = np.unique(ep.to_numpy(), return_inverse=True)
    names = list(wide.columns)
    X = wide.to_numpy(float)
    G = int(cl.max()) + 1
    S, Q = np.zeros((G, X.shape[1])), np.zeros((G, X.shape[1]))
    np.add.at(S, cl, X)
    np.add.at(Q, cl, X * X)
    N1 = np.repeat(np.bincount(cl, minlength=G).astype(float)[:, None], X.shape[1], axis=1)
    th, se1, _ = cr1_se(S, N1)
    n = N1.sum(axis=0)
    s2 = np.maximum(Q.sum(axis=0) - n * th * th, 0) / np.maximum(n - 1, 1)
    e1 = S - th * N1
    dfs = column_df(e1, N1)
    v = np.maximum(se1 * se1, s2 / n)
    V = th * (1 - th)
    with np.errstate(invalid="ignore", divide="ignore"):
        # a mean at 0 or 1 has no variance to scale: n tasks, as kg_interval takes it
        neff = np.where((V > 0) & (v > 0), V / np.where(v > 0, v, 1), n)
    ia = np.array([names.index(a) for a, _ in pairs], int)
    ib = np.array([names.index(b) for _, b in pairs], int)
    with np.errstate(invalid="ignore", divide="ignore"):
        den = np.sqrt((e1[:, ia] ** 2).sum(axis=0) * (e1[:, ib] ** 2).sum(axis=0))
        r = np.where(den > 0, (e1[:, ia] * e1[:, ib]).sum(axis=0) / np.where(den > 0, den, 1),
                     0.0)
    return (th[ia], th[ib], 2 / (1 / neff[ia] + 1 / neff[ib]), (dfs[ia] + dfs[ib]) / 2, r)


def leaderboard_tiers(pairwise, means: pd.DataFrame | None = None,
                      power: float = 0.8, data: pd.DataFrame | None = None,
                      planner_col: str = "planner", task_col: str = "task_id",
                      cluster_col: str = "episode_id", n_sims: int | None = None,
                      seed=None) -> LeaderboardTiersResult:
    """Tiers per contrast metric from a simultaneous pairwise family, and the minimum
    detectable difference at ``power`` per metric (module docstring).

    ``pairwise``: a :class:`analysis.stats.PairwiseResult` (Table 6's is the default
    ``mover_kg_maxz`` family); ``means`` (optional): one row per (``planner``,
    ``metric``) with the planner's ``estimate``, shown beside the tiers and checked
    against the contrasts (mean_a - mean_b must equal the contrast's estimate);
    ``data`` (optional): the per-task frame the family was computed from (columns
    ``planner_col``, ``task_col``, ``cluster_col`` and the metrics), from which the MDD
    of a metric in [0, 1] is taken at the alternative's rates
    (:func:`detectable_difference`, ``mdd.se_at == "alternative"``); without it, the
    MDD is ``(k + z_power) se`` at the observed SE (``"observed"``), optimistic.
    ``n_sims`` (with ``data``): the MDD calibrated by simulation on each metric's
    pooled pair design (:func:`calibrated_difference`, ``mdd.se_at == "simulated"``),
    its draws from ``seed`` (an int or a numpy Generator; one Generator for every
    metric, in the family's metric order).

    Example
    -------
    >>> import numpy as np, pandas as pd
    >>> from analysis.stats import pairwise_simultaneous
    >>> rng = np.random.default_rng(0)
    >>> p = np.repeat([0.9, 0.55, 0.4], 60)
    >>> df = pd.DataFrame({"planner": np.repeat(["a", "b", "c"], 60),
    ...                    "task_id": np.tile(np.arange(60), 3),
    ...                    "episode_id": np.tile(np.arange(60) // 4, 3),
    ...                    "success": (rng.random(180) < p).astype(float)})
    >>> fam = pairwise_simultaneous(df, ["success"], n_resamples=1000, seed=rng)
    >>> r = leaderboard_tiers(fam, data=df)
    >>> r.tiers_by_metric.planners.tolist()
    [('a',), ('b', 'c')]
    >>> r.table.tiers.tolist()
    [(1,), (2,), (2,)]
    >>> r.mdd.se_at.tolist(), bool(r.mdd.mdd_median.iloc[0] > 0)
    (['alternative'], True)
    """
    if not 0 < power < 1:
        raise ValueError(f"power={power!r}; valid: a number strictly between 0 and 1")
    t = pairwise.table
    need = {"planner_a", "planner_b", "metric", "estimate", "se", "low", "high",
            "verdict", "set_aside", "zero_se"}
    missing = sorted(need - set(t.columns))
    if missing:
        raise ValueError(f"pairwise.table lacks columns {missing}; pass the result of "
                         "analysis.stats.pairwise_simultaneous")
    rows, tier_rows, mdd_rows = [], [], []
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    # plain arrays: the per-metric work is a few dozen rows, pandas indexing would dominate
    col = {c: t[c].to_numpy() for c in need}
    for metric in pd.unique(col["metric"]):
        idx = np.flatnonzero(col["metric"] == metric)
        pa, pb, est_ab = col["planner_a"][idx], col["planner_b"][idx], col["estimate"][idx]
        planners = list(pd.unique(np.concatenate([pa, pb])))
        P = len(planners)
        # vs_average: (1/P) sum_b (mean_a - mean_b) = mean_a - average of the means
        score = dict.fromkeys(planners, 0.0)
        for a, b, d in zip(pa, pb, est_ab):
            score[a] += d / P
            score[b] -= d / P
        # rounded before ordering: sums of the same differences in another order differ
        # in the last bits, and the input order must not decide a tie
        key = {p: round(score[p], 12) for p in planners}
        order = sorted(planners, key=lambda p: (-key[p], str(p)))
        rank = {p: 1 + sum(key[q] > key[p] for q in planners) for p in planners}
        set_aside = col["set_aside"][idx].astype(bool)
        sep_mask = (col["verdict"][idx] != "tie") & ~set_aside
        separated = set(zip(pa[sep_mask], pb[sep_mask]))
        groups = tier_groups(order, separated)
        sep_sets = {frozenset(s) for s in separated}
        est = _means(means, metric, planners, zip(pa, pb, est_ab))
        for p in order:
            mine = tuple(i + 1 for i, g in enumerate(groups) if p in g)
            away = tuple(q for q in order if frozenset((p, q)) in sep_sets)
            rows.append({"metric": metric, "rank": rank[p], "planner": p,
                         "estimate": est.get(p, np.nan), "vs_average": score[p],
                         "tiers": mine, "top_tier": 1 in mine, "separated_from": away})
        tier_rows += [{"metric": metric, "tier": i + 1, "planners": g}
                      for i, g in enumerate(groups)]
        ok = ~col["zero_se"][idx].astype(bool) & ~set_aside
        mdd_rows.append(_metric_mdd(pairwise, metric, planners, pa[ok], pb[ok],
                                    col["se"][idx].astype(float)[ok],
                                    ((col["high"][idx] - col["low"][idx]).astype(float) / 2)[ok],
                                    data, (planner_col, task_col, cluster_col), power,
                                    n_sims, rng))
    return LeaderboardTiersResult(
        table=pd.DataFrame(rows, columns=["metric", "rank", "planner", "estimate",
                                          "vs_average", "tiers", "top_tier",
                                          "separated_from"]),
        tiers_by_metric=pd.DataFrame(tier_rows, columns=["metric", "tier", "planners"]),
        mdd=pd.DataFrame(mdd_rows, columns=["metric", "n_pairs", "n_undetectable",
                                            "se_at", "se_median", "halfwidth_median",
                                            "mdd_median", "mdd_min", "mdd_max",
                                            "power_mcse"]),
        power=float(power),
        critical_value=float(pairwise.critical_value),
        per_contrast_level=float(getattr(pairwise, "per_contrast_level", np.nan)),
        n_clusters=int(pairwise.n_clusters),
        method=pairwise.method,
        resampling_unit=pairwise.resampling_unit,
        n_resamples=pairwise.n_resamples,
        confidence_level=pairwise.confidence_level,
        seed=pairwise.seed,
    )


def _metric_mdd(pairwise, metric, planners, pa, pb, se, half, data, cols, power, n_sims,
                rng) -> dict:
    """One metric's row of :attr:`LeaderboardTiersResult.mdd`: the minimum detectable
    difference of its kept pairs ``pa``/``pb`` (their ``se`` and interval half-widths
    ``half``), simulated (``n_sims`` with ``data``), at the alternative's rates (``data``)
    or at the observed SE (see :func:`leaderboard_tiers`)."""
    planner_col, task_col, cluster_col = cols
    bounded = (data is not None and metric in data.columns
               and bool(data[metric].between(0, 1).all()))
    mcse = np.nan
    # (a simulation needs two episodes at least; with one, the analytic MDD)
    if bounded and n_sims and len(se) > 0 and data[cluster_col].nunique() >= 2:
        # one pooled pair design per metric, its MDD calibrated by simulation
        sub = data[data[planner_col].isin(planners)]
        ra, rb, ne, _, rr = pair_design(sub, metric, list(zip(pa, pb)),
                                        planner_col, task_col, cluster_col)
        pm = float(np.mean((ra + rb) / 2))
        sizes = sub.drop_duplicates(task_col)[cluster_col].value_counts().to_numpy()
        d, mcse = calibrated_difference([pm], [pm], [len(ne) / np.sum(1 / ne)],
                                        [float(np.mean(rr))],
                                        [_task_ratio(sub, metric, planner_col)],
                                        sizes, pairwise.critical_value, power,
                                        n_sims, rng)
        mdd = np.full(len(se), float(d[0]))
        model = "simulated"
    elif bounded:
        # the rates of the alternative (detectable_difference); critical value: the
        # family's per-contrast normal quantile
        design = pair_design(data[data[planner_col].isin(planners)], metric,
                             list(zip(pa, pb)), planner_col, task_col,
                             cluster_col)
        mdd = detectable_difference(*design, pairwise.critical_value,
                                    pairwise.n_clusters, power)
        model = "alternative"
    else:
        mdd = (half / se + special.ndtri(power)) * se
        model = "observed"
    # a pair with no attainable MDD needs more than the rates allow: infinite
    mdd = np.where(np.isnan(mdd), np.inf, np.atleast_1d(mdd))
    top = lambda f: float(f(mdd)) if len(se) > 0 else np.nan  # noqa: E731
    return {"metric": metric, "n_pairs": len(se), "n_undetectable": int(np.isinf(mdd).sum()),
            "se_at": model, "se_median": float(np.median(se)) if len(se) > 0 else np.nan,
            "halfwidth_median": float(np.median(half)) if len(se) > 0 else np.nan,
            "mdd_median": top(np.median), "mdd_min": top(np.min), "mdd_max": top(np.max),
            "power_mcse": mcse}


def _task_ratio(data, metric, planner_col) -> float:
    """Mean over the planners (rates strictly inside (0, 1)) of the task variance over
    ``p (1 - p)``: 1 for 0/1 outcomes, below 1 for averages such as action validity."""
    g = data.groupby(planner_col)[metric]
    p, s2 = g.mean().to_numpy(float), g.var().to_numpy(float)
    inner = (p > 0) & (p < 1) & np.isfinite(s2)
    return float(np.mean(s2[inner] / (p[inner] * (1 - p[inner])))) if inner.any() else 1.0


def _means(means, metric, planners, contrasts) -> dict:
    """``{planner: estimate}`` of ``metric`` from ``means``, checked against the
    contrasts ({} without ``means``)."""
    if means is None:
        return {}
    missing = sorted({"planner", "metric", "estimate"} - set(means.columns))
    if missing:
        raise ValueError(f"means lacks columns {missing}; it needs planner, metric, "
                         "estimate")
    m = means[means.metric == metric].drop_duplicates("planner").set_index("planner")
    absent = [p for p in planners if p not in m.index]
    if absent:
        raise ValueError(f"means has no estimate of metric {metric!r} for planner(s) "
                         f"{absent}")
    est = {p: float(m.estimate[p]) for p in planners}
    for a, b, d in contrasts:
        d = float(d)
        if not np.isclose(est[a] - est[b], d, rtol=0, atol=1e-9):
            raise ValueError(f"means: {metric} of {a!r} minus {b!r} is {est[a] - est[b]!r}, "
                             f"the family's contrast is {d!r}; pass the means of the same "
                             "tasks the family compared")
    return est

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

Minimum detectable difference (MDD) at ``power`` per metric
(:func:`detectable_difference`): the smallest true difference ``d`` that the family
separates with probability ``power``, with the interval and standard error taken at the
rates of that alternative, not at the observed ones (a truly better planner has another
variance; at the observed ones the MDD, ``w + z_power se``, gave simulated power 0.77,
0.56 and 0.53 for validity, completed and GCR). Per pair: the alternative puts one
planner at ``q`` and one at ``q + d``, ``q`` the pair's mean rate mirrored to at most
1/2 (``min(p, 1 - p)``: towards 1/2, where the variance grows). Each mean keeps its
effective number of tasks ``n_eff = p (1 - p) / v`` (the Korn-Graubard one: variance
follows the rate as a binomial one does, with the observed design effect), its
Satterthwaite df and the pair's correlation; at ``q`` and ``q + d`` the family's own
construction gives the lower half-width ``w(d)`` (each mean's Korn-Graubard interval at
the family's per-contrast level, MOVER, the ``t_{G-1} se`` floor) and the SE ``se(d)``.
The family separates ``d`` when the estimate exceeds ``w(d)``; the estimate over its
estimated SE is taken as noncentral t (``df``, ``d / se(d)``), so power is
``P(T > w(d) / se(d))``, and the MDD is the ``d`` where it reaches ``power``
(bisection; NaN, counted as infinite, when no ``d`` below ``1 - q`` reaches it). Per
metric: the median over the pairs with nonzero SE, and the range. It needs the per-task
data (``data=``); without it the MDD is ``w + z_power se`` at the observed SE.
In the binomial case this is exact to about 0.005 in power; under the committed episode
structure ``bench/tier_calibration.py`` measured power 0.79 (validity), 0.67 (completed)
and 0.74 (GCR) at the printed MDD: the interval's width varies from dataset to dataset
(estimated df at an extreme level), which the computation at the true rates leaves out,
so the MDD is still somewhat optimistic (docs/statistics.md, "Leaderboard tiers").
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd
from scipy import special, stats

from ._core import ESTIMAND, Provenance, cr1_se
from .intervals import column_df, kg_interval

__all__ = ["LeaderboardTiersResult", "detectable_difference", "leaderboard_tiers",
           "tier_groups"]


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
    ``mdd_median``, ``mdd_min``, ``mdd_max`` (same units as the metric). ``power`` the MDD's power;
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
                      cluster_col: str = "episode_id") -> LeaderboardTiersResult:
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
        se = col["se"][idx].astype(float)[ok]
        half = ((col["high"][idx] - col["low"][idx]).astype(float) / 2)[ok]
        if data is not None and metric in data.columns and data[metric].between(0, 1).all():
            # the rates of the alternative (detectable_difference); critical value: the
            # family's per-contrast normal quantile
            design = pair_design(data[data[planner_col].isin(planners)], metric,
                                 list(zip(pa[ok], pb[ok])), planner_col, task_col,
                                 cluster_col)
            mdd = detectable_difference(*design, pairwise.critical_value,
                                        pairwise.n_clusters, power)
            model = "alternative"
        else:
            mdd = (half / se + special.ndtri(power)) * se
            model = "observed"
        # a pair with no attainable MDD needs more than the rates allow: infinite
        mdd = np.where(np.isnan(mdd), np.inf, np.atleast_1d(mdd))
        top = lambda f: float(f(mdd)) if ok.any() else np.nan  # noqa: E731
        mdd_rows.append({"metric": metric, "n_pairs": int(ok.sum()),
                         "n_undetectable": int(np.isinf(mdd).sum()),
                         "se_at": model,
                         "se_median": float(np.median(se)) if ok.any() else np.nan,
                         "halfwidth_median": float(np.median(half)) if ok.any() else np.nan,
                         "mdd_median": top(np.median), "mdd_min": top(np.min),
                         "mdd_max": top(np.max)})
    return LeaderboardTiersResult(
        table=pd.DataFrame(rows, columns=["metric", "rank", "planner", "estimate",
                                          "vs_average", "tiers", "top_tier",
                                          "separated_from"]),
        tiers_by_metric=pd.DataFrame(tier_rows, columns=["metric", "tier", "planners"]),
        mdd=pd.DataFrame(mdd_rows, columns=["metric", "n_pairs", "n_undetectable",
                                            "se_at", "se_median", "halfwidth_median",
                                            "mdd_median", "mdd_min", "mdd_max"]),
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

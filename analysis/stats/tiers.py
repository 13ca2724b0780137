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

Minimum detectable difference (MDD) at ``power`` per metric: for a contrast with CR1
standard error ``se`` and simultaneous half-width ``w`` (the mean of its two sides), the
family separates a true difference ``delta`` when the estimate exceeds ``w``; with the
estimate approximately normal around ``delta`` that has probability
``Phi((delta - w) / se)``, so ``MDD = w + z_power * se``: for a symmetric interval
``c * se`` the usual ``(c + z_power) * se``. An approximation: ``w`` and ``se`` are the
observed ones and move with the rates (the MOVER intervals are asymmetric near 0 and 1).
Per metric: the median over the pairs with nonzero SE, and the range. The bench checks
the median against simulated power: it is optimistic (power 0.52-0.74 at the printed
MDD, lowest for GCR-like fractions, whose variance grows with the rate), so read it as a
lower bound on the difference needed for 80% power.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd
from scipy import special

from ._core import ESTIMAND, Provenance

__all__ = ["LeaderboardTiersResult", "leaderboard_tiers", "tier_groups"]


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
    (contrasts with nonzero SE), ``se_median``, ``halfwidth_median``, ``mdd_median``,
    ``mdd_min``, ``mdd_max`` (same units as the metric). ``power`` the MDD's power;
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


def leaderboard_tiers(pairwise, means: pd.DataFrame | None = None,
                      power: float = 0.8) -> LeaderboardTiersResult:
    """Tiers per contrast metric from a simultaneous pairwise family, and the minimum
    detectable difference at ``power`` per metric (module docstring).

    ``pairwise``: a :class:`analysis.stats.PairwiseResult` (Table 6's is the default
    ``mover_kg_maxz`` family); ``means`` (optional): one row per (``planner``,
    ``metric``) with the planner's ``estimate``, shown beside the tiers and checked
    against the contrasts (mean_a - mean_b must equal the contrast's estimate).

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
    >>> r = leaderboard_tiers(fam)
    >>> r.tiers_by_metric.planners.tolist()
    [('a',), ('b', 'c')]
    >>> r.table.tiers.tolist()
    [(1,), (2,), (2,)]
    >>> bool(r.mdd.mdd_median.iloc[0] > 0)
    True
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
    z_pow = float(special.ndtri(power))
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
        mdd = half + z_pow * se
        mdd_rows.append({"metric": metric, "n_pairs": int(ok.sum()),
                         "se_median": float(np.median(se)) if ok.any() else np.nan,
                         "halfwidth_median": float(np.median(half)) if ok.any() else np.nan,
                         "mdd_median": float(np.median(mdd)) if ok.any() else np.nan,
                         "mdd_min": float(mdd.min()) if ok.any() else np.nan,
                         "mdd_max": float(mdd.max()) if ok.any() else np.nan})
    return LeaderboardTiersResult(
        table=pd.DataFrame(rows, columns=["metric", "rank", "planner", "estimate",
                                          "vs_average", "tiers", "top_tier",
                                          "separated_from"]),
        tiers_by_metric=pd.DataFrame(tier_rows, columns=["metric", "tier", "planners"]),
        mdd=pd.DataFrame(mdd_rows, columns=["metric", "n_pairs", "se_median",
                                            "halfwidth_median", "mdd_median", "mdd_min",
                                            "mdd_max"]),
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

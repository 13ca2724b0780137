"""Calibration of the leaderboard tiers (Table 17) under the committed episode structure.

Simulates planner suites with the committed planner suite's episodes (their number and
task counts, read from the hash-verified export) and its number of planners, runs the
pipeline of Table 17 on each dataset (the default ``mover_kg_maxz`` family of
``pairwise_simultaneous`` on the three contrast metrics, without its p-values, which the
tiers do not read; checked equal to ``pairwise_simultaneous`` on each design's first
dataset; then ``leaderboard_tiers``), and reports

* false separation: how often two truly identical planners land in different tiers
  (share no tier), per (pair, metric) and family-wise (some identical pair in some
  metric; the target is at most 5% at the 95% level);
* power: how often two truly different planners are in different tiers with the better
  one ranked above (wrong sign: separated the wrong way round);
* the MDD at 80% power the table would print (Table 17's pipeline with the per-task
  data: calibrated by simulation, 400 datasets drawn from this bench's Generator, so
  independent of the datasets that measure the power), as the mean over the pilot of a
  ``power-*`` design's null datasets, and in the ``power-*`` designs the power actually
  reached at that difference, printed last per metric. The other designs do not compute
  the MDD (the tiers do not read it), so their MDD column is empty.

Generator (its own, not bench/coverage.py's, which fixes 6 planners): per task t of
episode g, planner p and metric m a latent ``z = mu_pm + u_gm + w_pgm + v_tm + e_ptm``
with total variance 1 and episode ICC ``var(u + w)``; ``strong`` correlation puts half
the episode effect (u) and 80% of the task variance (v) in common to all planners (the
pairing the contrasts exploit), ``weak`` none. Metrics: action-validity-like
``Phi(z / 2)``, a completed-run-like rate ``1{z > 0}``, a GCR-like fraction
``1{z > 0} Phi(z - 1)`` (many zeros). The latent means are solved so that the task
means are exactly the design's rates (and, for the planners with an effect, the rates
plus the stated difference).

    PYTHONPATH=$PWD python bench/tier_calibration.py

``--n-sims`` datasets per design (default 300), ``--designs a,b`` a subset, ``--seed`` the
seed of the one numpy Generator every draw comes from (datasets and the family's
Gaussian multipliers), ``--resamples`` the family's multiplier draws (default 1,000; the
tables use 10,000), ``--pilot`` the null datasets that set a power design's difference
(default 40). Each ``power-*`` design alone
(``--designs power-validity``) takes a few minutes of CPU time, most of it the pilot's
MDD simulations.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from itertools import combinations

import numpy as np
import pandas as pd
from scipy import special
from scipy.optimize import brentq

from analysis.stats import PairwiseResult, leaderboard_tiers, pairwise_simultaneous
from analysis.report.leaderboard import MDD_SIMS
from analysis.stats.mover import EpisodeSums
from analysis.stats.pairwise import DEFAULT_METHOD, MOVER_METHODS, mover_family

METRICS = ("action_validity", "completed", "gcr")
KINDS = ("cont", "bin", "frac")
#: rates near the committed planners' medians (Table 4: validity 37-68%, completed
#: 44-100%, GCR 4-54%)
TYPICAL = (0.55, 0.75, 0.2)


def design(name, rates=TYPICAL, icc=0.3, corr="weak", effect=None):
    """``effect``: {metric: (planner indices, difference in the metric's mean)}."""
    return dict(name=name, rates=rates, icc=icc, corr=corr, effect=effect or {})


DESIGNS = [
    design("null-typical"),
    design("null-strong", corr="strong"),
    design("null-icc0.1", icc=0.1),
    design("null-icc0.6", icc=0.6),
    design("null-rare", rates=(0.9, 0.05, 0.02)),
    design("null-near1", rates=(0.97, 0.98, 0.9)),
    # two groups of identical planners (2 and 3 better than the other four)
    design("mixed", rates=(0.55, 0.6, 0.2), corr="strong",
           effect={m: ([2, 3], d) for m, d in zip(METRICS, (0.1, 0.25, 0.25))}),
    # one planner better by the MDD the table reports for the design (mean over a pilot
    # of null datasets): the power there should be about 0.8
    # (rates at or below 1/2 where the effect is: the MDD describes a difference from
    # q = min(p, 1 - p) towards 1/2, and from 0.55 upwards the variance is smaller)
    design("power-validity", rates=(0.45, 0.75, 0.2),
           effect={"action_validity": ([0], "mdd")}),
    design("power-completed", rates=(0.55, 0.35, 0.2), effect={"completed": ([0], "mdd")}),
    design("power-gcr", effect={"gcr": ([0], "mdd")}),
]
DESIGN_NAMES = [d["name"] for d in DESIGNS]


def frac_mean(mu):
    """E[1{z > 0} Phi(z - 1)], z ~ N(mu, 1) (Gauss-Hermite)."""
    x, w = np.polynomial.hermite_e.hermegauss(80)
    z = mu + x
    return float((w * (z > 0) * special.ndtr(z - 1)).sum() / w.sum())


#: validity-like scores are Phi(CONT_SCALE z): a task's validity averages many attempts,
#: so it varies less across tasks than Phi(z) would (per-task SD about 0.17 at 0.5)
CONT_SCALE = 0.5


def task_mean(mu, kind):
    if kind == "bin":
        return float(special.ndtr(mu))
    if kind == "cont":
        return float(special.ndtr(CONT_SCALE * mu / np.sqrt(1 + CONT_SCALE ** 2)))
    return frac_mean(mu)


def latent_mu(p, kind):
    """Latent mean whose task mean is exactly ``p``."""
    return brentq(lambda m: task_mean(m, kind) - p, -8, 8, xtol=1e-12)


def committed_structure():
    """Task counts of the committed planner suite's episodes and its number of planners."""
    import analysis
    ex = analysis.load()
    tasks = ex.suites[ex.suites.suite == "planner"].task_id
    eps = ex.tasks.set_index("task_id").loc[tasks, "episode_id"]
    sizes = eps.value_counts().sort_index().to_numpy()
    n_planners = int((ex.runs.suite == "planner").sum())
    return sizes, n_planners


def setup(dz, P):
    """(P, M) latent means and (P, M) true task means."""
    mu = np.empty((P, len(METRICS)))
    truth = np.empty_like(mu)
    for m, (metric, kind, p) in enumerate(zip(METRICS, KINDS, dz["rates"])):
        who, diff = dz["effect"].get(metric, ([], 0.0))
        for q in range(P):
            truth[q, m] = p + (diff if q in who else 0.0)
            if not 0 < truth[q, m] < 1:
                raise ValueError(f"design {dz['name']}: {metric} rate {p:g} + difference "
                                 f"{diff:.3f} leaves (0, 1); lower the design's rate")
            mu[q, m] = latent_mu(truth[q, m], kind)
    return mu, truth


def simulate(rng, dz, mu, sizes):
    """One planner suite: (n_tasks, P*M) values, planner-major columns (p0m0, p0m1, ...),
    and each task's episode index."""
    P, M = mu.shape
    G, n = len(sizes), int(sizes.sum())
    cl = np.repeat(np.arange(G), sizes)
    icc = dz["icc"]
    share_e, share_t = (0.5, 0.8) if dz["corr"] == "strong" else (0.0, 0.0)
    X = np.empty((n, P * M))
    for m, kind in enumerate(KINDS):
        u = rng.normal(0, np.sqrt(icc * share_e), G)
        w = rng.normal(0, np.sqrt(icc * (1 - share_e)), (P, G))
        v = rng.normal(0, np.sqrt((1 - icc) * share_t), n)
        e = rng.normal(0, np.sqrt((1 - icc) * (1 - share_t)), (P, n))
        z = mu[:, m][:, None] + u[cl] + w[:, cl] + v + e
        x = ((z > 0).astype(float) if kind == "bin" else special.ndtr(CONT_SCALE * z)
             if kind == "cont"
             else (z > 0) * special.ndtr(z - 1))
        X[:, m::M] = x.T
    return X, cl


def as_frame(X, cl, P):
    """The tidy frame ``pairwise_simultaneous`` takes (one row per planner and task)."""
    M, n = len(METRICS), len(cl)
    return pd.DataFrame({"planner": np.repeat([f"p{q}" for q in range(P)], n),
                         "task_id": np.tile(np.arange(n), P),
                         "episode_id": np.tile(cl, P),
                         **{m: X[:, k::M].T.ravel() for k, m in enumerate(METRICS)}})


def family(X, cl, P, B, rng) -> PairwiseResult:
    """``pairwise_simultaneous(as_frame(X, cl, P), METRICS, n_resamples=B, seed=rng)``
    without its p-values (40 bisection steps that the tiers do not read): the same
    ``mover_family`` call on the same per-episode sums, so the same intervals and
    verdicts; ``check_family`` asserts it on each design's first dataset."""
    M, G = len(METRICS), int(cl.max()) + 1
    S = np.zeros((G, P * M))
    Q = np.zeros((G, P * M))
    np.add.at(S, cl, X)
    np.add.at(Q, cl, X * X)
    n_g = np.bincount(cl, minlength=G).astype(float)
    bounded = np.array([bool(np.all((X[:, k::M] >= 0) & (X[:, k::M] <= 1))) for k in range(M)])
    f = mover_family(EpisodeSums(S, Q, n_g, P, M, bounded), 0.95, B, rng,
                     replace(MOVER_METHODS[DEFAULT_METHOD], pvalues=False))
    low, high = f.low, f.high
    table = pd.DataFrame({
        "planner_a": [f"p{a}" for a, b in f.pairs for _ in METRICS],
        "planner_b": [f"p{b}" for a, b in f.pairs for _ in METRICS],
        "metric": [m for _ in f.pairs for m in METRICS],
        "estimate": f.estimate, "se": f.se, "low": low, "high": high,
        "verdict": np.where(low > 0, "a>b", np.where(high < 0, "b>a", "tie")),
        "zero_se": f.zero_se, "set_aside": np.zeros(len(low), bool)})
    return PairwiseResult(table=table, critical_value=f.critical_value, set_aside=table.iloc[:0],
                          n_clusters=G, family_size=len(table), method=DEFAULT_METHOD,
                          n_resamples=B, confidence_level=0.95, seed=None,
                          per_contrast_level=f.per_contrast_level)


def planner_means(X, P):
    """Each planner's task mean of each metric, as ``leaderboard_tiers`` takes them (Table
    17 passes Table 4's): the MDD places its alternative at these rates."""
    M = len(METRICS)
    return pd.DataFrame([{"planner": f"p{q}", "metric": m, "estimate": float(X[:, q * M + k].mean())}
                         for q in range(P) for k, m in enumerate(METRICS)])


def table17(X, cl, P, B, rng, mdd=True):
    """Table 17's pipeline on one dataset: the family, then the tiers and (``mdd``) the
    MDD calibrated by simulation as Table 17 computes it (its 400 datasets, drawn from
    ``rng``); without ``mdd`` the tiers only (they do not read the MDD)."""
    fam = family(X, cl, P, B, rng)
    if not mdd:
        return leaderboard_tiers(fam, means=planner_means(X, P))
    return leaderboard_tiers(fam, means=planner_means(X, P), data=as_frame(X, cl, P),
                             n_sims=MDD_SIMS, seed=rng)


def check_family(X, cl, P, B, seed):
    """The fast family equals ``pairwise_simultaneous``'s (intervals, verdicts)."""
    fast = family(X, cl, P, B, np.random.default_rng(seed)).table
    full = pairwise_simultaneous(as_frame(X, cl, P), list(METRICS), n_resamples=B,
                                 seed=np.random.default_rng(seed)).table
    cols = ["planner_a", "planner_b", "metric", "estimate", "low", "high", "verdict"]
    pd.testing.assert_frame_equal(fast[cols], full[cols], rtol=1e-12)


def pilot_mdd(dz, metric, sizes, P, B, rng, n=40):
    """Mean MDD (80% power) the table reports for each metric on null datasets of
    ``dz`` (``{metric: mean}``)."""
    null = dict(dz, effect={})
    mu, _ = setup(null, P)
    got = {m: [] for m in METRICS}
    for _ in range(n):
        X, cl = simulate(rng, null, mu, sizes)
        r = table17(X, cl, P, B, rng)
        for m, v in zip(r.mdd.metric, r.mdd.mdd_median):
            got[m].append(float(v))
    return {m: float(np.mean(v)) for m, v in got.items()}


def run_design(dz, sizes, P, n_sims, B, rng, n_pilot=40):
    effect, pilot = {}, {}
    for m, (who, d) in dz["effect"].items():
        if d == "mdd":
            pilot = pilot_mdd(dz, m, sizes, P, B, rng, n_pilot)
        effect[m] = (who, pilot[m] if d == "mdd" else d)
    dz = dict(dz, effect=effect, mdd_effect=[m for m, (_, d) in dz["effect"].items()
                                             if d == "mdd"])
    mu, truth = setup(dz, P)
    names = [f"p{q}" for q in range(P)]
    pairs = list(combinations(range(P), 2))
    equal = {(m, a, b): abs(truth[a, k] - truth[b, k]) < 1e-12
             for k, m in enumerate(METRICS) for a, b in pairs}
    n_eq = sum(equal.values())
    n_diff = len(equal) - n_eq
    fw_false = false = power = wrong = 0
    for i in range(n_sims):
        X, cl = simulate(rng, dz, mu, sizes)
        if i == 0:
            check_family(X, cl, P, B, int(rng.integers(2**32)))
        r = table17(X, cl, P, B, rng, mdd=False)
        tiers = {(m, p): set(t) for m, p, t in zip(r.table.metric, r.table.planner,
                                                    r.table.tiers)}
        rank = {(m, p): k for m, p, k in zip(r.table.metric, r.table.planner,
                                             r.table["rank"])}
        any_false = False
        for (m, a, b), same in equal.items():
            apart = not (tiers[m, names[a]] & tiers[m, names[b]])
            if same:
                false += apart
                any_false |= apart
            elif apart:
                k = METRICS.index(m)
                better, worse = (a, b) if truth[a, k] > truth[b, k] else (b, a)
                right = rank[m, names[better]] < rank[m, names[worse]]
                power += right
                wrong += not right
        fw_false += any_false
    eff = "; ".join(f"{m} +{100 * d:.1f} pp for {len(w)}"
                    + (" (= MDD of a null pilot)" if m in dz["mdd_effect"] else "")
                    for m, (w, d) in dz["effect"].items())
    out = {"design": dz["name"], "rates": "/".join(f"{p:g}" for p in dz["rates"]),
           "icc": dz["icc"], "corr": dz["corr"], "effect": eff or "none",
           "n_sims": n_sims,
           "fw_false": fw_false / n_sims,
           "fw_false_mcse": np.sqrt(fw_false * (n_sims - fw_false) / n_sims) / n_sims,
           "pair_false": false / max(n_eq * n_sims, 1) if n_eq else np.nan,
           "power": power / (n_diff * n_sims) if n_diff else np.nan,
           "wrong_sign": wrong / (n_diff * n_sims) if n_diff else np.nan}
    for m in METRICS:
        out[f"mdd_{m}"] = pilot.get(m, np.nan)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n-sims", type=int, default=300)
    ap.add_argument("--designs", default=",".join(DESIGN_NAMES))
    ap.add_argument("--seed", type=int, default=20261206)
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--pilot", type=int, default=40,
                    help="null datasets of the pilot that sets a power design's difference")
    a = ap.parse_args(argv)
    chosen = [d.strip() for d in a.designs.split(",") if d.strip()]
    unknown = [d for d in chosen if d not in DESIGN_NAMES]
    if unknown:
        ap.error(f"--designs: unknown design(s) {unknown}; valid: {', '.join(DESIGN_NAMES)}")
    for opt in ("n_sims", "pilot", "resamples"):
        if getattr(a, opt) < 1:
            ap.error(f"--{opt.replace('_', '-')}={getattr(a, opt)}; valid: a positive integer")
    sizes, P = committed_structure()
    print(f"committed planner suite: {P} planners, {len(sizes)} episodes, {sizes.sum()} tasks "
          f"(episode sizes {sorted(sizes.tolist())}); {a.n_sims} datasets per design, "
          f"{a.resamples} multiplier draws, seed {a.seed}")
    rng = np.random.default_rng(a.seed)
    rows = []
    t0 = time.perf_counter()
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # few-episode warnings cannot arise with 18 episodes
        for dz in DESIGNS:
            if dz["name"] in chosen:
                rows.append(run_design(dz, sizes, P, a.n_sims, a.resamples, rng, a.pilot))
    res = pd.DataFrame(rows)
    print("\n| design | rates (validity/completed/GCR) | ICC | correlation | true differences | "
          "false separation, family-wise (MC SE) | false separation per pair | power "
          "(right order) | wrong order | MDD reported: validity / completed / GCR (pp) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    f = lambda v, d=3: "" if pd.isna(v) else f"{v:.{d}f}"  # noqa: E731
    for r in res.itertuples():
        print(f"| {r.design} | {r.rates} | {r.icc:g} | {r.corr} | {r.effect} | "
              f"{f(r.fw_false)} ({f(r.fw_false_mcse)}) | {f(r.pair_false, 4)} | {f(r.power)} | "
              f"{f(r.wrong_sign)} | {f(100 * r.mdd_action_validity, 1)} / "
              f"{f(100 * r.mdd_completed, 1)} / {f(100 * r.mdd_gcr, 1)} |")
    at_mdd = {m: res.power[res.design == f"power-{m.split('_')[-1]}"] for m in METRICS}
    shown = [f"{m} {float(v.iloc[0]):.3f}" for m, v in at_mdd.items() if len(v)]
    if shown:
        print("\npower at the MDD Table 17 prints (target 0.75-0.85): " + ", ".join(shown))
    print(f"\nfalse separation = two identical planners in different tiers; worst family-wise: "
          f"{res.fw_false.max():.3f} (target <= 0.05); {time.perf_counter() - t0:.0f} s")
    return res


if __name__ == "__main__":
    main()

"""Time the statistics stage against scipy.stats.bootstrap (same episode resampling).

Synthetic planner suite: 18 episodes of unequal size, 105 tasks, 6 planners, 7
task-macro metrics (Operational-TSR, Strict-TSR, GCR, GCR terminal, GCR event,
action validity, completed-run rate), 10,000 resamples.

* ours: one ``cluster_bootstrap`` call (all 42 planner x metric means, one weight
  matrix) with ``bca`` (scipy's default method, same resamples for the same seed) and
  with our default ``bootstrap_t``;
* scipy: ``scipy.stats.bootstrap`` per planner x metric on the paired per-episode
  sums and counts (``paired=True, vectorized=True``, BCa), i.e. the same cluster
  resampling;
* the 45-contrast simultaneous analysis alone (default method), and the whole
  statistics stage (bootstrap + pairwise + paired conditions + quarter profiles).

    python bench/bootstrap.py [--n-resamples 10000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd
from scipy import stats

from analysis.stats import cluster_bootstrap, paired_conditions, pairwise_simultaneous, quarter_profiles

SIZES = np.array([2, 2, 3, 3, 3, 4, 4, 5, 5, 5, 6, 6, 7, 7, 8, 9, 11, 15])
METRICS = ["success", "success_terminal", "gcr", "gcr_terminal", "gcr_event",
           "action_validity", "completed"]


def synthetic(seed=0):
    rng = np.random.default_rng(seed)
    ep = np.repeat(np.arange(len(SIZES)), SIZES)
    n = len(ep)
    tier = np.where(rng.random(n) < 0.33, "terminal", "event")
    rows = []
    for p in range(6):
        u = rng.normal(0, 0.5, len(SIZES))[ep]
        z = rng.normal(-0.5 + 0.1 * p, 1, n) + u
        completed = (z > -0.8).astype(float)
        gcr = completed * np.clip(rng.beta(1, 3, n) + 0.2 * (z > 0.5), 0, 1)
        success = completed * (gcr == 1)
        d = pd.DataFrame({"planner": f"p{p}", "task_id": np.arange(n), "episode_id": ep, "tier": tier,
                          "success": success, "gcr": gcr, "completed": completed,
                          "action_validity": stats.norm.cdf(z),
                          "query_attempts": rng.poisson(3, n), "prompt_tokens": rng.poisson(4000, n),
                          "completion_tokens": rng.poisson(300, n)})
        term = tier == "terminal"
        d["success_terminal"] = np.where(term, success, np.nan)
        d["gcr_terminal"] = np.where(term, gcr, np.nan)
        d["gcr_event"] = np.where(~term, gcr, np.nan)
        rows.append(d)
    return pd.concat(rows, ignore_index=True)


def best(f, repeat):
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t0)
    return min(ts)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n-resamples", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args(argv)
    warnings.filterwarnings("ignore")  # scipy warns on the degenerate (all-zero) columns
    B = a.n_resamples
    df = synthetic()

    def ours_bca():
        return cluster_bootstrap(df, METRICS, n_resamples=B, method="bca", seed=0)

    def ours_t():
        return cluster_bootstrap(df, METRICS, n_resamples=B, method="bootstrap_t", seed=0)

    # episodes are counted per metric (issue 11): an episode without a value of a tier
    # column is not one of that column's clusters, so scipy gets only the episodes
    # where the column has values
    sums = {}
    for (p, e), d in df.groupby(["planner", "episode_id"]):
        for m in METRICS:
            if d[m].notna().any():
                sums.setdefault((p, m), []).append((d[m].sum(), d[m].notna().sum()))

    def ratio(s, n, axis=-1):
        return s.sum(axis=axis) / n.sum(axis=axis)

    def scipy_all():
        out = []
        for arr in sums.values():
            arr = np.array(arr, float)
            out.append(stats.bootstrap((arr[:, 0], arr[:, 1]), ratio, paired=True, vectorized=True,
                                       n_resamples=B, method="BCa", rng=np.random.default_rng(0)))
        return out

    # same resamples -> same BCa intervals (checked here, timed below)
    mine = ours_bca().table.set_index(["planner", "metric"])
    ref = scipy_all()
    diffs = np.array([[mine.loc[k, "low"] - r.confidence_interval.low,
                       mine.loc[k, "high"] - r.confidence_interval.high] for k, r in zip(sums, ref)])
    both_nan = sum(np.isnan(mine.loc[k, "low"]) and np.isnan(r.confidence_interval.low)
                   for k, r in zip(sums, ref))
    print(f"max |BCa bound ours - scipy| over 42 intervals: {np.nanmax(np.abs(diffs)):.2e} "
          f"({both_nan} degenerate in both)")

    def pairwise():
        return pairwise_simultaneous(df, ["action_validity", "completed", "gcr"], n_resamples=B, seed=0)

    mem = df[df.planner.isin(["p0", "p1"])].assign(memory=lambda d: d.planner)
    groups = df[["planner", "episode_id"]].copy()
    groups["group_index"] = groups.groupby(["planner", "episode_id"]).cumcount()
    groups["n_groups_in_episode"] = groups.groupby(["planner", "episode_id"]).episode_id.transform("size")
    groups["query_attempts"] = df["query_attempts"]
    groups["prompt_tokens"] = df["prompt_tokens"]

    def stage():
        ours_t()
        pairwise()
        paired_conditions(mem, "memory", "p1", "p0", n_resamples=B)
        quarter_profiles(groups[groups.planner.isin(["p0", "p1"])], ["query_attempts", "prompt_tokens"],
                         "planner", n_resamples=B)

    # interleaved, so that both see the same machine load
    t_scipy, t_bca = np.inf, np.inf
    for _ in range(a.repeat):
        t_scipy = min(t_scipy, best(scipy_all, 1))
        t_bca = min(t_bca, best(ours_bca, 1))
    t_t = best(ours_t, a.repeat)
    t_pw = best(pairwise, a.repeat)
    t_stage = best(stage, a.repeat)
    print(f"resamples {B}; 6 planners x 7 metrics; 18 episodes, 105 tasks")
    print(f"scipy.stats.bootstrap (BCa, 42 calls): {t_scipy * 1e3:.1f} ms")
    print(f"ours cluster_bootstrap bca (1 call): {t_bca * 1e3:.1f} ms")
    print(f"ours cluster_bootstrap bootstrap_t (1 call): {t_t * 1e3:.1f} ms")
    print(f"ours pairwise_simultaneous 45 contrasts: {t_pw * 1e3:.1f} ms")
    print(f"ours whole statistics stage: {t_stage * 1e3:.1f} ms")
    print(f"scipy.stats.bootstrap: {t_scipy / t_bca:.1f}x (target >= 10x)")
    print(f"scipy.stats.bootstrap vs our bootstrap_t: {t_scipy / t_t:.1f}x")


if __name__ == "__main__":
    main()

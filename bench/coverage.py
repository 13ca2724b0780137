"""Monte Carlo coverage of the episode-cluster intervals (not a test; run with nice).

Design: 18 episodes of unequal size (2..15 tasks, 105 tasks), 6 planners, 3 metrics
(a continuous [0,1] score like action validity, a common binary like completed-run,
a rare binary like success), all planners with equal means (null: the 45 contrasts
are 0). Latent probit model per metric: z = mu + u_e + w_pe + v_i + eps_pi with total
variance 1; episode ICC var(u + w) in {0.1, 0.3, 0.6}; ``strong`` correlation shares
half of the episode effect (u) and most of the task variance (v, one latent task
difficulty) across planners; ``weak`` gives each planner its own episode effect and
independent outcomes per planner and task. Continuous metric = Phi(z) (mean
Phi(mu/sqrt 2)), binary = 1{z > 0} (mean Phi(mu)).

Reports family-wise coverage of the 45-contrast family per pairwise method and the
marginal coverage of the 18 single means (planner x metric) per interval method.

    nice -n 10 python bench/coverage.py                       # 1000 sims, 1000 resamples
    nice -n 10 python bench/coverage.py --n-sims 1500 --n-resamples 2000  # docs table
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import special

from analysis.stats._core import cr1_se, pairs_weights
from analysis.stats.bootstrap import interval_from_replicates
from analysis.stats.pairwise import METHODS as PW_METHODS
from analysis.stats.pairwise import contrast_matrix, family_inference

SIZES = np.array([2, 2, 3, 3, 3, 4, 4, 5, 5, 5, 6, 6, 7, 7, 8, 9, 11, 15])
P = 6
MUS = np.array([0.0, 0.3, -1.0])  # continuous, common binary, rare binary
KINDS = ("cont", "bin", "bin")
SINGLE_METHODS = ("bootstrap_t", "cr1_t", "percentile", "bca")


def true_means():
    return np.array([special.ndtr(MUS[0] / np.sqrt(2)), special.ndtr(MUS[1]), special.ndtr(MUS[2])])


def simulate(rng, icc, corr):
    """Task-level arrays: X (n_tasks, P*M) planner-major, cluster index per task."""
    G, n = len(SIZES), SIZES.sum()
    cl = np.repeat(np.arange(G), SIZES)
    share_e, share_t = (0.5, 0.8) if corr == "strong" else (0.0, 0.0)
    cols = []
    lat = {}
    for m, mu in enumerate(MUS):
        u = rng.normal(0, np.sqrt(icc * share_e), G)
        v = rng.normal(0, np.sqrt((1 - icc) * share_t), n)
        for p in range(P):
            w = rng.normal(0, np.sqrt(icc * (1 - share_e)), G)
            eps = rng.normal(0, np.sqrt((1 - icc) * (1 - share_t)), n)
            lat[p, m] = mu + u[cl] + w[cl] + v + eps
    for p in range(P):
        for m in range(len(MUS)):
            z = lat[p, m]
            cols.append(special.ndtr(z) if KINDS[m] == "cont" else (z > 0).astype(float))
    return np.column_stack(cols), cl


def one_sim(rng, icc, corr, B, conf, pw_methods):
    X, cl = simulate(rng, icc, corr)
    G = len(SIZES)
    S = np.zeros((G, X.shape[1]))
    np.add.at(S, cl, X)
    n_g = SIZES.astype(float)
    Nmat = np.repeat(n_g[:, None], S.shape[1], axis=1)
    # single means
    truth = np.tile(true_means(), P)
    theta, se, zero = cr1_se(S, Nmat)
    W = pairs_weights(rng, B, G)
    single = {}
    for meth in SINGLE_METHODS:
        lo, hi = interval_from_replicates(meth, theta, se, zero, S, Nmat, G, W, (1 - conf) / 2)
        single[meth] = np.mean((lo <= truth) & (truth <= hi))
    # family
    _, Cm = contrast_matrix(P, len(MUS))
    D = np.round(S @ Cm, 12)
    Nc = np.repeat(n_g[:, None], D.shape[1], axis=1)
    th, sd, z = cr1_se(D, Nc)
    active = ~z
    fam = {}
    for meth in pw_methods:
        crit, _, _, se_used = family_inference(meth, D, Nc, th, sd, active, 1 - conf, B, rng)
        ok = np.all(np.abs(th[active]) <= crit * se_used) and np.all(th[~active] == 0)
        fam[meth] = float(ok)
    return single, fam


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n-sims", type=int, default=1000)
    ap.add_argument("--n-resamples", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=20261129)
    ap.add_argument("--confidence-level", type=float, default=0.95)
    ap.add_argument("--iccs", type=float, nargs="+", default=[0.1, 0.3, 0.6])
    ap.add_argument("--corrs", nargs="+", default=["strong", "weak"])
    ap.add_argument("--methods", nargs="+", default=list(PW_METHODS))
    a = ap.parse_args(argv)
    rng = np.random.default_rng(a.seed)
    rows = []
    t0 = time.perf_counter()
    for corr in a.corrs:
        for icc in a.iccs:
            fam = {m: 0.0 for m in a.methods}
            sing = {m: 0.0 for m in SINGLE_METHODS}
            for _ in range(a.n_sims):
                s, f = one_sim(rng, icc, corr, a.n_resamples, a.confidence_level, a.methods)
                for k in fam:
                    fam[k] += f[k]
                for k in sing:
                    sing[k] += s[k]
            rows.append((corr, icc, {k: v / a.n_sims for k, v in fam.items()},
                         {k: v / a.n_sims for k, v in sing.items()}))
            print(f"# done corr={corr} icc={icc} after {time.perf_counter() - t0:.0f}s", flush=True)
    mcse = np.sqrt(0.95 * 0.05 / a.n_sims)
    print(f"\nFamily-wise coverage of the 45-contrast family (nominal {a.confidence_level}; "
          f"{a.n_sims} simulations, {a.n_resamples} resamples, MC s.e. ~{mcse:.3f}, seed {a.seed})\n")
    print("| design | ICC | " + " | ".join(a.methods) + " |")
    print("|---|---|" + "---|" * len(a.methods))
    for corr, icc, fam, _ in rows:
        print(f"| {corr} | {icc} | " + " | ".join(f"{fam[m]:.3f}" for m in a.methods) + " |")
    print("\nMarginal coverage of single task-macro means (18 planner x metric means)\n")
    print("| design | ICC | " + " | ".join(SINGLE_METHODS) + " |")
    print("|---|---|" + "---|" * len(SINGLE_METHODS))
    for corr, icc, _, sing in rows:
        print(f"| {corr} | {icc} | " + " | ".join(f"{sing[m]:.3f}" for m in SINGLE_METHODS) + " |")
    print(f"\nelapsed {time.perf_counter() - t0:.0f}s")


if __name__ == "__main__":
    main()

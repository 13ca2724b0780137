"""Monte Carlo coverage of the episode-cluster intervals (not a test; run with nice).

Own generators (not shared with the tests): a latent probit model per task,
``z = mu_pm + delta_pm(n_g) + u_e + w_pe + v_t + eps_pt`` with total variance 1,
episode ICC ``var(u + w)``; ``strong`` correlation shares half of the episode effect
(u) and 80% of the task variance (v, one latent task difficulty) across planners,
``weak`` gives every planner its own. Metrics: ``cont`` = Phi(z) (a [0, 1] score like
action validity), ``bin`` = 1{z > 0} (a rate like success), ``frac`` = 1{z > 0} *
Phi(z - 1) (a GCR-like fraction with many zeros). True means are exact (normal
integrals over the fixed episode sizes), so size-dependent effects have the
task-weighted truth the estimators target.

Designs (``DESIGNS``): null, small, large and partial-null planner effects; weak and
strong correlation; ICC 0.1 and 0.3; effects that grow with episode size; rare rates
p = 0.01-0.10 and rates near 1; extreme episode sizes (1-12 tasks); few episodes
(4, 6, 8); paired rare outcomes (two conditions on the same tasks).

Per design: single-mean coverage of the default (``auto``: Korn-Graubard CP for
[0, 1] metrics) and of the old ``bootstrap_t``; family-wise coverage (all contrasts'
simultaneous intervals contain the true differences) of the default
``mover_kg_maxz``, the old default ``satt_maxt_tcal`` and ``bonferroni_t``; power
(share of truly nonzero contrasts declared with the right sign) and wrong-sign rate
(share of contrasts declared with the wrong sign, over all contrasts); Monte Carlo SEs.
Paired designs: coverage of the paired difference and of the relative change.

    nice -n 10 python bench/coverage.py --n-sims 500 --out docs/coverage.csv

``--designs a,b`` runs only the named designs; ``--defaults-only`` only the default
methods (single means, paired conditions, the family default) with the first-round
default (no contrast floor) and Bonferroni-t on the same datasets; ``--merge-into CSV``
replaces that CSV's rows with the same (design, quantity, method) and labels every row
with its run (``run`` column, ``--run-label``). ``fw_miss_above`` / ``fw_miss_below``:
share of datasets where some interval lies entirely above / below its truth.

Power round of issue 11: ``--candidates cr2bm_mover_maxz,mover_wilson_maxz`` adds those
non-default family methods on the same datasets (their multipliers from a generator of
their own, so the other rows are unchanged); ``--calibrate`` adds matched power
(``power_size`` at the factor on each method's critical value that gives family-wise
coverage 0.95 on as many null datasets of the design, ``null_factor``; ``power_cal`` at
the factor that gives 0.95 on the design's own datasets, ``cal_factor``; inf / NaN when no
factor does) for the default, the default's construction at the Bonferroni level
alpha/m, the candidates and Bonferroni-t; ``--quantities`` keeps only the named
quantities of a run before merging.

Resamples inside the simulation: 1000 Gaussian multipliers for the max-|z| / max-|t|
quantiles, 400 episode resamples for ``bootstrap_t`` (the tables use 10,000).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import numpy as np
import pandas as pd
from scipy import special, stats

from analysis.stats._core import cr1_se, pairs_weights
from analysis.stats.bootstrap import interval_from_replicates
from analysis.stats.intervals import column_df, kg_interval
from analysis.stats.mover import EpisodeSums, MoverOptions
from analysis.stats.pairwise import MOVER_METHODS, contrast_matrix, family_inference, mover_family

SIZES18 = np.array([2, 2, 3, 3, 3, 4, 4, 5, 5, 5, 6, 6, 7, 7, 8, 9, 11, 15])
EXTREME18 = np.array([1, 1, 1, 1, 1, 2, 2, 3, 4, 5, 8, 10, 12, 12, 12, 12, 12, 12])
P = 6


def design(name, family, sizes=SIZES18, icc=0.3, corr="weak", effect="null", ps=(0.5, 0.62, 0.05),
           kinds=("cont", "bin", "bin"), size_dep=False, paired=False):
    return dict(name=name, family=family, sizes=np.asarray(sizes), icc=icc, corr=corr,
                effect=effect, ps=ps, kinds=kinds, size_dep=size_dep, paired=paired)


def build_designs():
    d = []
    for eff in ("null", "small", "large", "partial"):
        for corr in ("weak", "strong"):
            for icc in (0.1, 0.3):
                d.append(design(f"{eff}-{corr}-icc{icc}", f"effects ({eff})", icc=icc, corr=corr,
                                effect=eff))
    for corr in ("weak", "strong"):
        d.append(design(f"sizedep-{corr}", "effects grow with episode size", corr=corr,
                        effect="large", size_dep=True))
    for p in (0.01, 0.02, 0.05, 0.10):
        for eff in ("null", "large"):
            d.append(design(f"rare{p}-{eff}", "rare rates", effect=eff, ps=(0.5, p, p / 2)))
    for p in (0.95, 0.99):
        d.append(design(f"near1-{p}", "rates near 1", effect="small", ps=(0.9, p, 0.9)))
    d.append(design("frac-rare", "GCR-like fractions", effect="small", ps=(0.5, 0.3, 0.05),
                    kinds=("cont", "frac", "frac")))
    d.append(design("frac-rare-strong", "GCR-like fractions", corr="strong", effect="large",
                    ps=(0.5, 0.3, 0.05), kinds=("cont", "frac", "frac")))
    d.append(design("extreme-sizes-null", "extreme episode sizes (1-12)", sizes=EXTREME18))
    d.append(design("extreme-sizes-large", "extreme episode sizes (1-12)", sizes=EXTREME18,
                    effect="large", corr="strong"))
    for G in (4, 6, 8):
        d.append(design(f"G{G}", "few episodes", sizes=np.array([3, 5, 7, 9, 4, 6, 8, 2])[:G],
                        effect="small"))
    for p in (0.05, 0.10):
        for eff in ("null", "large"):
            d.append(design(f"paired-rare{p}-{eff}", "paired rare outcomes", effect=eff,
                            ps=(p, p, p), kinds=("bin", "bin", "bin"), corr="strong", paired=True))
    return d


def effects(kind, M):
    """(P, M) planner shifts on the latent scale."""
    base = np.arange(P) - (P - 1) / 2
    if kind == "null":
        return np.zeros((P, M))
    if kind == "small":
        return np.outer(base, np.full(M, 0.06))
    if kind == "large":
        return np.outer(base, np.full(M, 0.25))
    if kind == "partial":  # three planners equal, three differ
        e = np.where(base < 0, 0.0, base * 0.3)
        return np.outer(e, np.ones(M))
    raise ValueError(kind)


def latent_mu(p, kind):
    """Latent mean giving marginal mean p for the metric kind (total variance 1)."""
    if kind == "bin":
        return special.ndtri(p)
    if kind == "cont":
        return special.ndtri(p) * np.sqrt(2)
    from scipy.optimize import brentq
    return brentq(lambda m: frac_mean(m) - p, -6, 6)


def frac_mean(m):
    # E[1{z>0} Phi(z-1)], z ~ N(m, 1): Gauss-Hermite quadrature
    x, w = np.polynomial.hermite_e.hermegauss(80)
    z = m + x
    return float((w * (z > 0) * special.ndtr(z - 1)).sum() / w.sum())


def task_mean(mu, kind):
    if kind == "bin":
        return special.ndtr(mu)
    if kind == "cont":
        return special.ndtr(mu / np.sqrt(2))
    return np.vectorize(frac_mean)(mu)


def setup(dz):
    M = len(dz["ps"])
    sizes = dz["sizes"]
    G = len(sizes)
    mu0 = np.array([latent_mu(p, k) for p, k in zip(dz["ps"], dz["kinds"])])
    eff = effects(dz["effect"], M)
    scale = sizes / sizes.mean() if dz["size_dep"] else np.ones(G)
    mu = mu0[None, None, :] + eff[:, None, :] * scale[None, :, None]  # (P, G, M)
    truth = np.empty((P, M))
    for m, k in enumerate(dz["kinds"]):
        tm = task_mean(mu[:, :, m], k)  # (P, G)
        truth[:, m] = (tm * sizes).sum(axis=1) / sizes.sum()
    return mu, truth


def simulate(rng, dz, mu):
    """(n_tasks, P*M) values, planner-major, and the episode index of each task."""
    sizes, icc = dz["sizes"], dz["icc"]
    G, n = len(sizes), int(sizes.sum())
    cl = np.repeat(np.arange(G), sizes)
    share_e, share_t = (0.5, 0.8) if dz["corr"] == "strong" else (0.0, 0.0)
    M = len(dz["ps"])
    X = np.empty((n, P * M))
    for m, kind in enumerate(dz["kinds"]):
        u = rng.normal(0, np.sqrt(icc * share_e), G)
        v = rng.normal(0, np.sqrt((1 - icc) * share_t), n)
        w = rng.normal(0, np.sqrt(icc * (1 - share_e)), (P, G))
        eps = rng.normal(0, np.sqrt((1 - icc) * (1 - share_t)), (P, n))
        z = mu[:, cl, m] + u[cl] + w[:, cl] + v + eps  # (P, n)
        if kind == "bin":
            x = (z > 0).astype(float)
        elif kind == "cont":
            x = special.ndtr(z)
        else:
            x = (z > 0) * special.ndtr(z - 1)
        X[:, m::M] = x.T
    return X, cl


def single_means(X, cl, G, bounded, rng, B_boot):
    S = np.zeros((G, X.shape[1]))
    np.add.at(S, cl, X)
    Q = np.zeros_like(S)
    np.add.at(Q, cl, X * X)
    N = np.repeat(np.bincount(cl, minlength=G).astype(float)[:, None], X.shape[1], axis=1)
    th, se, zero = cr1_se(S, N)
    n = N.sum(axis=0)
    s2 = np.maximum(Q.sum(axis=0) - n * th * th, 0) / (n - 1)
    out = {}
    lo, hi, _ = kg_interval(th, se * se, s2, n, column_df(S - th * N, N), 0.025)
    out["kg_cp (default)"] = (lo, hi)
    if not B_boot:  # --defaults-only: the default alone
        return S, Q, N, out
    lo, hi, _ = kg_interval(th, se * se, s2, n, G - 1.0, 0.025)
    out["kg_cp df=G-1"] = (lo, hi)
    W = pairs_weights(rng, B_boot, G)
    out["bootstrap_t"] = interval_from_replicates("bootstrap_t", th, se, zero, S, N, G, W, 0.025)
    for k in out:
        if k.startswith("kg"):
            lo, hi = out[k]
            # non-[0, 1] metrics never occur in these designs
            assert np.all(bounded)
    return S, Q, N, out


#: family methods of a ``--defaults-only`` run: the default, the first-round default
#: (MOVER-KG without the contrast floor) and Bonferroni-t on the same datasets
DEFAULTS_ONLY = ("mover_kg_maxz (default)", "mover_kg_maxz no floor (first-round default)",
                 "bonferroni_t")


def _bisect(ok, C, hi=8.0, iters=16):
    """Smallest s in [0, hi] with ``ok(s)`` (vector over C contrasts, monotone in s);
    ``inf`` where even ``hi`` fails (a per-contrast level beyond 1 - 1e-15 counts as
    never)."""
    lo_s, hi_s = np.zeros(C), np.full(C, hi)
    good_hi = ok(hi_s)
    for _ in range(iters):
        mid = (lo_s + hi_s) / 2
        g = ok(mid)
        hi_s = np.where(g, mid, hi_s)
        lo_s = np.where(g, lo_s, mid)
    return np.where(good_hi, hi_s, np.inf)


def calibration_record(bounds, s0, theta, tdiff, excl=True):
    """One dataset's pieces of the size-matched comparison of a family method.

    ``bounds(s)`` gives the (low, high) of every contrast at critical value ``s``
    (per-contrast normal quantile for the max-|z| methods, |t| for Bonferroni-t), ``s0``
    the method's own critical value. Returns ``(lam_need, lam_excl)``: the smallest
    factor ``lam`` on ``s0`` at which every interval contains its true difference, and
    per contrast the factor up to which its interval excludes 0 (0 if it never does).
    """
    C = len(theta)
    se = getattr(bounds, "symmetric_se", None)
    if se is not None:  # theta +- s se: closed form (a zero SE covers only its own value)
        with np.errstate(divide="ignore", invalid="ignore"):
            need = np.where(se > 0, np.abs(theta - tdiff) / np.where(se > 0, se, 1),
                            np.where(theta == tdiff, 0.0, np.inf))
            ex = np.where(se > 0, np.abs(theta) / np.where(se > 0, se, 1),
                          np.where(theta == 0, 0.0, np.inf))
        return float(need.max() / s0), (ex / s0 if excl else None)

    def covers(s):
        lo, hi = bounds(s)
        return (lo <= tdiff) & (tdiff <= hi)

    def includes0(s):
        lo, hi = bounds(s)
        return (lo <= 0) & (0 <= hi)

    hi = max(8.0, 2.5 * s0)  # z up to 8 (a level of 1 - 1e-15); |t| up to 2.5 times its own
    need = _bisect(covers, C, hi)
    if not excl:  # the null pass needs lam_need only
        return float(need.max() / s0), None
    ex = np.where(theta == 0, 0.0, _bisect(includes0, C, hi))
    return float(need.max() / s0), ex / s0


def calibrated_power(records, tdiff, nonzero, level=0.95, lam=None):
    """Coverage-matched power: the factor ``lam*`` (the ``level`` quantile over datasets
    of ``lam_need``) makes the method's family-wise coverage ``level`` in this design;
    power is then the share of truly nonzero contrasts whose interval at ``lam* s0``
    excludes 0 with the right sign. ``lam`` given (e.g. from the design's null): power
    at that factor. Returns ``(lam*, power per dataset)``."""
    if lam is None:
        need = np.array([r[0] for r in records])
        lam = float(np.quantile(need, level, method="higher"))
    if not np.isfinite(lam):
        return lam, np.full(len(records), np.nan)
    pw = [float(((ex > lam) & (np.sign(th) == np.sign(tdiff)))[nonzero].mean())
          for ex, th in ((r[1], r[2]) for r in records)]
    return lam, np.array(pw)


def family_intervals(S, Q, n_g, M, Cm, bounded, rng, rng_c, B_mult, candidates, calibrate, t_meths):
    """The family methods' intervals on one dataset: ``(theta, {name: (low, high)},
    {name: (bounds, s0)})``. ``rng`` draws the default's multipliers, ``rng_c`` those of
    the candidates (so adding a candidate leaves the datasets and the default unchanged)."""
    fams, bnds = {}, {}
    sums = EpisodeSums(S, Q, n_g, P, M, bounded)
    f = mover_family(sums, 0.95, B_mult, rng, MoverOptions(df_mode="satt", pvalues=False))
    fams["mover_kg_maxz (default)"] = (f.low, f.high)
    bnds["mover_kg_maxz (default)"] = (f.bounds, f.critical_value)
    C = len(f.estimate)
    if calibrate:
        # the default's own per-contrast construction at the Bonferroni level alpha/m
        zb = float(-special.ndtri(0.05 / (2 * C)))
        fams["mover_kg_maxz at Bonferroni level"] = f.bounds(np.full(C, zb))
        bnds["mover_kg_maxz at Bonferroni level"] = (f.bounds, zb)
    for cand in candidates:
        fc = mover_family(sums, 0.95, B_mult, rng_c, replace(MOVER_METHODS[cand], pvalues=False))
        fams[cand] = (fc.low, fc.high)
        bnds[cand] = (fc.bounds, fc.critical_value)
    D = S @ Cm
    Nd = np.repeat(np.asarray(n_g, float)[:, None], D.shape[1], axis=1)
    th, se, zero = cr1_se(D, Nd)
    for meth in t_meths:
        crit, _, _, su = family_inference(meth, D, Nd, th, se, ~zero, 0.05, B_mult, rng)
        s = se.copy()
        s[~zero] = su
        fams[meth] = (np.where(zero, th, th - crit * s), np.where(zero, th, th + crit * s))
        bf = (lambda c, s=s: (np.where(zero, th, th - c * s), np.where(zero, th, th + c * s)))
        bf.symmetric_se = np.where(zero, 0.0, s)  # closed-form calibration (no bisection)
        bnds[meth] = (bf, crit)
    return th, fams, bnds


def null_calibration(dz, n_sims, seed, B_mult, candidates, t_meths):
    """Per family method, the factor on its critical value at which its family-wise
    coverage is 0.95 under this design's null (every planner equal, same rates, sizes,
    ICC and correlation), on ``n_sims`` null datasets of their own."""
    dz0 = dict(dz, effect="null", size_dep=False)
    mu0, truth0 = setup(dz0)
    M, G = len(dz["ps"]), len(dz["sizes"])
    _, Cm = contrast_matrix(P, M)
    t0 = truth0.reshape(-1) @ Cm
    rng, rng_c = np.random.default_rng([seed, 2]), np.random.default_rng([seed, 3])
    need = {}
    for _ in range(n_sims):
        X, cl = simulate(rng, dz0, mu0)
        S = np.zeros((G, X.shape[1]))
        np.add.at(S, cl, X)
        Q = np.zeros_like(S)
        np.add.at(Q, cl, X * X)
        n_g = np.bincount(cl, minlength=G).astype(float)
        th, _, bnds = family_intervals(S, Q, n_g, M, Cm, np.ones(M, bool), rng, rng_c, B_mult,
                                       candidates, True, t_meths)
        done = {}
        for k, (bf, s0) in bnds.items():
            if id(bf) not in done:
                done[id(bf)] = calibration_record(bf, 1.0, th, t0, excl=False)[0]
            need.setdefault(k, []).append(done[id(bf)] / s0)
    return {k: float(np.quantile(v, 0.95, method="higher")) for k, v in need.items()}


def run_design(dz, n_sims, seed, B_mult, B_boot, defaults_only=False, candidates=(),
               calibrate=False):
    rng = np.random.default_rng(seed)
    rng_c = np.random.default_rng([seed, 1])
    mu, truth = setup(dz)
    M = len(dz["ps"])
    G = len(dz["sizes"])
    tvec = truth.reshape(-1)  # planner-major
    pairs, Cm = contrast_matrix(P, M)
    tdiff = tvec @ Cm
    nonzero = np.abs(tdiff) > 1e-12
    bounded = np.ones(M, bool)
    rows = []
    acc = {}
    cal = {}  # method -> per-dataset calibration records

    def add(key, val):
        acc.setdefault(key, []).append(val)

    for _ in range(n_sims):
        X, cl = simulate(rng, dz, mu)
        if dz["paired"]:
            run_paired(X, cl, G, M, truth, rng, B_boot, add)
            continue
        fams = {}
        if defaults_only:
            S, Q, N, single = single_means(X, cl, G, bounded, rng, 0)
            for k, (lo, hi) in single.items():
                hit = (lo <= tvec) & (tvec <= hi)
                add(f"single:{k}", float(np.mean(hit)))
                for m in range(M):
                    add(f"single_m{m}:{k}", float(np.mean(hit[m::M])))
            n_g = N[:, 0]
            f = mover_family(EpisodeSums(S, Q, n_g, P, M, bounded), 0.95, B_mult, rng,
                             MoverOptions(pvalues=False, floor=None, few_sidak=False))
            fams[DEFAULTS_ONLY[1]] = (f.low, f.high)
            t_meths = ("bonferroni_t",)
        else:
            S, Q, N, single = single_means(X, cl, G, bounded, rng, B_boot)
            for k, (lo, hi) in single.items():
                hit = (lo <= tvec) & (tvec <= hi)
                add(f"single:{k}", float(np.mean(hit)))
                for m in range(M):  # per metric (its 6 planner means), so no rate hides
                    add(f"single_m{m}:{k}", float(np.mean(hit[m::M])))
            n_g = N[:, 0]
            sums = EpisodeSums(S, Q, n_g, P, M, bounded)
            f = mover_family(sums, 0.95, B_mult, rng, MoverOptions(df_mode="pooled", pvalues=False))
            fams["mover_kg_maxz pooled df"] = (f.low, f.high)
            f = mover_family(sums, 0.95, B_mult, rng, MoverOptions(df_mode="g1", pvalues=False))
            fams["mover_kg_maxz df=G-1"] = (f.low, f.high)
            t_meths = ("satt_maxt_tcal", "bonferroni_t")
        th, more, bnds = family_intervals(S, Q, n_g, M, Cm, bounded, rng, rng_c, B_mult, candidates,
                                          calibrate, t_meths)
        fams.update(more)
        if calibrate:
            done = {}  # the default at its own and at the Bonferroni level share bounds
            for k, (bf, s0) in bnds.items():
                if id(bf) not in done:
                    done[id(bf)] = calibration_record(bf, 1.0, th, tdiff)
                need, excl = done[id(bf)]
                cal.setdefault(k, []).append((need / s0, excl / s0, th))
        for k, (lo, hi) in fams.items():
            add(f"fw:{k}", float(np.all((lo <= tdiff) & (tdiff <= hi))))
            # the side of the misses: some interval entirely above / below its truth
            add(f"fw_miss_above:{k}", float(np.any(lo > tdiff)))
            add(f"fw_miss_below:{k}", float(np.any(hi < tdiff)))
            right = ((lo > 0) & (tdiff > 0)) | ((hi < 0) & (tdiff < 0))
            wrong = ((lo > 0) & (tdiff < 0)) | ((hi < 0) & (tdiff > 0))
            if nonzero.any():
                add(f"power:{k}", float(right[nonzero].mean()))
            add(f"wrong:{k}", float(wrong.mean()))
    if cal:
        t_meths = ("bonferroni_t",) if defaults_only else ("satt_maxt_tcal", "bonferroni_t")
        null_lam = (null_calibration(dz, n_sims, seed, B_mult, candidates, t_meths)
                    if nonzero.any() else None)
    for k, recs in cal.items():
        # coverage-matched: the factor giving 0.95 family-wise coverage on these datasets
        lam, pw = calibrated_power(recs, tdiff, nonzero)
        add(f"cal_factor:{k}", lam)  # one value per design (mc_se NaN)
        if nonzero.any():
            for v in pw:
                add(f"power_cal:{k}", v)
            # size-matched: the factor giving 0.95 under the design's null
            lam0 = null_lam[k]
            add(f"null_factor:{k}", lam0)
            for v in calibrated_power(recs, tdiff, nonzero, lam=lam0)[1]:
                add(f"power_size:{k}", v)
    for key, vals in acc.items():
        kind, meth = key.split(":", 1)
        v = np.asarray(vals)
        rows.append(dict(design=dz["name"], family=dz["family"], G=G, n_tasks=int(dz["sizes"].sum()),
                         icc=dz["icc"], corr=dz["corr"], effect=dz["effect"],
                         rates="/".join(f"{p:g}" for p in dz["ps"]), kinds="/".join(dz["kinds"]),
                         quantity=kind, method=meth, value=v.mean(),
                         mc_se=v.std(ddof=1) / np.sqrt(len(v)) if len(v) > 1 else np.nan,
                         n_sims=len(v) if not kind.endswith("_factor") else n_sims))
    return rows


def run_paired(X, cl, G, M, truth, rng, B_boot, add):
    """Planner 0 = condition a, planner 1 = condition b, metric 0 (a rare binary)."""
    from analysis.stats.paired import paired_intervals
    xa, xb = X[:, 0:1], X[:, M:M + 1]
    low, high, rlo, rhi = paired_intervals(xa, xb, cl, G, np.array([True]), 0.95, B_boot, rng)
    d = truth[0, 0] - truth[1, 0]
    rel = truth[0, 0] / truth[1, 0] - 1
    add("paired_diff:default", float(low[0] <= d <= high[0]))
    if np.isfinite(rlo[0]) and np.isfinite(rhi[0]):
        add("paired_rel:default", float(rlo[0] <= rel <= rhi[0]))
    else:
        add("paired_rel_undefined:default", 1.0)


def summarise(df: pd.DataFrame) -> str:
    """Markdown tables for docs/statistics.md from the long CSV."""
    def cell(q, m):
        r = df[(df.quantity == q) & (df.method == m)].set_index("design")
        return r.value, r.mc_se

    designs = list(dict.fromkeys(df.design))
    info = df.drop_duplicates("design").set_index("design")
    DEF, FIRST = "mover_kg_maxz (default)", DEFAULTS_ONLY[1]
    out = ["| design | family | G | rates | single-mean cov., worst metric (default) | bootstrap-t | "
           "family-wise cov. (default) | misses above / below | first-round default | pooled df | "
           "Bonferroni-t | satt_maxt_tcal | df=G-1 | "
           "power default / first-round / Bonferroni-t | wrong sign (default) |", "|" + "---|" * 15]
    def worst(meth):
        # the metric with the lowest coverage in each design (all metrics are reported
        # in the CSV): no rare rate hides behind an average
        r = df[df.quantity.str.startswith("single_m") & (df.method == meth)]
        r = r.loc[r.groupby("design").value.idxmin()].set_index("design")
        return r.value, r.mc_se

    sm, smb = worst("kg_cp (default)"), worst("bootstrap_t")
    fw = {m: cell("fw", m) for m in (DEF, FIRST, "bonferroni_t", "satt_maxt_tcal",
                                      "mover_kg_maxz df=G-1", "mover_kg_maxz pooled df")}
    pw = {m: cell("power", m) for m in (DEF, FIRST, "bonferroni_t")}
    above, below = cell("fw_miss_above", DEF), cell("fw_miss_below", DEF)
    ws = cell("wrong", DEF)

    def f(pair, d, se=True):
        v, s = pair
        if d not in v.index:
            return ""
        return f"{v[d]:.3f} ({s[d]:.3f})" if se else f"{v[d]:.3f}"

    for d in designs:
        if info.loc[d, "quantity"].startswith("paired"):
            continue
        out.append(f"| {d} | {info.loc[d, 'family']} | {info.loc[d, 'G']} | {info.loc[d, 'rates']} | "
                   f"{f(sm, d)} | {f(smb, d, False)} | {f(fw[DEF], d)} | "
                   f"{f(above, d, False)} / {f(below, d, False)} | {f(fw[FIRST], d, False)} | "
                   f"{f(fw['mover_kg_maxz pooled df'], d, False)} | "
                   f"{f(fw['bonferroni_t'], d, False)} | {f(fw['satt_maxt_tcal'], d, False)} | "
                   f"{f(fw['mover_kg_maxz df=G-1'], d, False)} | "
                   f"{f(pw[DEF], d)} / {f(pw[FIRST], d, False)} / {f(pw['bonferroni_t'], d)} | "
                   f"{f(ws, d, False)} |")
    pd_ = df[df.quantity.str.startswith("paired")]
    if len(pd_):
        out += ["", "| design | paired difference cov. | relative change cov. | share with "
                "relative change undefined (0 successes under b) |", "|---|---|---|---|"]
        for d in dict.fromkeys(pd_.design):
            r = pd_[pd_.design == d].set_index("quantity")
            g = lambda q: (f"{r.loc[q, 'value']:.3f} ({r.loc[q, 'mc_se']:.3f})"  # noqa: E731
                           if q in r.index else "")
            und = r.loc["paired_rel_undefined", "n_sims"] / r.loc["paired_diff", "n_sims"] \
                if "paired_rel_undefined" in r.index else 0.0
            out.append(f"| {d} | {g('paired_diff')} | {g('paired_rel')} | {und:.3f} |")
    # minimum per family of designs
    out += ["", "| family of designs | min single-mean cov. (default) | min family-wise cov. "
            "(default) | min Bonferroni-t family-wise | designs where default power >= "
            "Bonferroni-t | power default - Bonferroni-t (range) |", "|---|---|---|---|---|---|"]
    for fam in dict.fromkeys(info.family):
        ds = [d for d in designs if info.loc[d, "family"] == fam]
        mn = lambda pair: min((pair[0][d] for d in ds if d in pair[0].index), default=np.nan)  # noqa: E731
        wins = [d for d in ds if d in pw["bonferroni_t"][0].index and d in pw[DEF][0].index]
        gap = [pw[DEF][0][d] - pw["bonferroni_t"][0][d] for d in wins]
        nwin = sum(g >= 0 for g in gap)
        rng_ = f"{min(gap):+.3f} to {max(gap):+.3f}" if gap else ""
        out.append(f"| {fam} | {mn(sm):.3f} | {mn(fw[DEF]):.3f} | "
                   f"{mn(fw['bonferroni_t']):.3f} | {nwin} of {len(wins)} | {rng_} |")
    out += summarise_power(df, designs, info)
    if "run" in df.columns:
        out += ["", "| run (CSV column `run`) | designs | datasets per design | methods |",
                "|---|---|---|---|"]
        for run, r in df.groupby("run", sort=False):
            ns = str(int(r.n_sims.max()))
            out.append(f"| {run} | {r.design.nunique()} | {ns} | "
                       f"{', '.join(dict.fromkeys(r.method))} |")
    return "\n".join(out)


#: the power round of issue 11: candidates and the matched-power comparison
CANDIDATES = ("cr2bm_mover_maxz", "mover_wilson_maxz")
BONF_LEVEL = "mover_kg_maxz at Bonferroni level"


def summarise_power(df, designs, info):
    """Tables of the power round (candidates, size- and coverage-matched power)."""
    cands = [c for c in CANDIDATES if ((df.quantity == "fw") & (df.method == c)).any()]
    if not cands:
        return []
    DEF, BT = "mover_kg_maxz (default)", "bonferroni_t"

    def get(q, m):
        r = df[(df.quantity == q) & (df.method == m)].set_index("design")
        return r.value, r.mc_se

    def f(pair, d, se=False):
        v, s = pair
        if d not in v.index or not np.isfinite(v[d]):
            return "n/a" if d in v.index else ""
        return f"{v[d]:.3f} ({s[d]:.3f})" if se else f"{v[d]:.3f}"

    meths = [DEF, *cands, BT]
    out = ["", "Power round: family-wise coverage and power of the candidates, the default and "
           "Bonferroni-t on the same datasets.", "",
           "| design | " + " | ".join(f"cov. {m}" for m in meths) + " | "
           + " | ".join(f"power {m}" for m in meths) + " |", "|" + "---|" * (1 + 2 * len(meths))]
    fw = {m: get("fw", m) for m in meths}
    pw = {m: get("power", m) for m in meths}
    for d in designs:
        if d not in fw[DEF][0].index:
            continue
        out.append(f"| {d} | " + " | ".join(f(fw[m], d) for m in meths) + " | "
                   + " | ".join(f(pw[m], d, True) for m in meths) + " |")
    out += ["", "| method | worst family-wise cov. (design) | designs with cov. >= 0.93 | "
            "designs where power >= Bonferroni-t | ... not below it by 2 MC SE |", "|---|---|---|---|---|"]
    for m in meths:
        v = fw[m][0]
        eff = [d for d in pw[BT][0].index if d in pw[m][0].index]
        ge = sum(pw[m][0][d] >= pw[BT][0][d] for d in eff)
        nb = sum(pw[m][0][d] - pw[BT][0][d] >= -2 * np.hypot(pw[m][1][d], pw[BT][1][d]) for d in eff)
        out.append(f"| {m} | {v.min():.3f} ({v.idxmin()}) | {int((v >= 0.93).sum())} of {len(v)} | "
                   f"{ge} of {len(eff)} | {nb} of {len(eff)} |")
    if not (df.quantity == "power_size").any():
        return out
    cm = [DEF, BONF_LEVEL, *cands, BT]
    cm = [m for m in cm if ((df.quantity == "power_size") & (df.method == m)).any()]
    ps = {m: get("power_size", m) for m in cm}
    pc = {m: get("power_cal", m) for m in cm}
    nf = {m: get("null_factor", m) for m in cm}
    cf = {m: get("cal_factor", m) for m in cm}
    out += ["", "Matched power (designs with effects): `size-matched` scales each method's critical "
            "value by the factor (in brackets) that gives family-wise coverage 0.95 under the "
            "design's null; `coverage-matched` by the factor that gives 0.95 on the design's own "
            "datasets (n/a: no factor does, some interval is a point that misses).", "",
            "| design | " + " | ".join(f"size-matched {m}" for m in cm) + " | "
            + " | ".join(f"coverage-matched {m}" for m in cm) + " |", "|" + "---|" * (1 + 2 * len(cm))]
    for d in designs:
        if d not in ps[DEF][0].index:
            continue
        out.append(f"| {d} | " + " | ".join(f"{f(ps[m], d)} [{f(nf[m], d)}]" for m in cm) + " | "
                   + " | ".join(f"{f(pc[m], d)} [{f(cf[m], d)}]" for m in cm) + " |")
    out += ["", "| method | size-matched power >= Bonferroni-t's | coverage-matched power >= "
            "Bonferroni-t's (n/a counts as below for Bonferroni-t) |", "|---|---|---|"]
    for m in cm:
        if m == BT:
            continue
        eff = list(ps[BT][0].index)
        ge = sum(ps[m][0][d] >= ps[BT][0][d] for d in eff)
        gc = sum(np.isfinite(pc[m][0][d]) and (not np.isfinite(pc[BT][0][d])
                                               or pc[m][0][d] >= pc[BT][0][d]) for d in eff)
        out.append(f"| {m} | {ge} of {len(eff)} | {gc} of {len(eff)} |")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n-sims", type=int, default=500)
    ap.add_argument("--multipliers", type=int, default=1000)
    ap.add_argument("--boot", type=int, default=400)
    ap.add_argument("--seed", type=int, default=20261201)
    ap.add_argument("--only", default=None, help="substring of design names to run")
    ap.add_argument("--designs", default=None, help="comma-separated exact design names to run")
    ap.add_argument("--defaults-only", action="store_true",
                    help="the default methods only (single means, paired conditions, family: the "
                         "default, the first-round default and Bonferroni-t on the same datasets)")
    ap.add_argument("--merge-into", default=None,
                    help="CSV whose rows with the same (design, quantity, method) are replaced by "
                         "this run's rows (written back to --out)")
    ap.add_argument("--run-label", default=None, help="label of this run in the CSV's run column")
    ap.add_argument("--candidates", default="",
                    help="comma-separated non-default family methods of "
                         "analysis.stats.pairwise.MOVER_METHODS to run on the same datasets")
    ap.add_argument("--quantities", default=None,
                    help="comma-separated quantities kept from this run (e.g. "
                         "power_cal,cal_factor,power_size,null_factor), so a calibration run "
                         "merges without replacing the rows of a larger run")
    ap.add_argument("--calibrate", action="store_true",
                    help="size-matched power: each family method's critical value scaled per "
                         "design so its family-wise coverage is 0.95 on these datasets")
    ap.add_argument("--out", default=None, help="CSV path for the long table")
    ap.add_argument("--summary", default=None, help="print the markdown summary of a CSV and exit")
    a = ap.parse_args(argv)
    if a.summary:
        print(summarise(pd.read_csv(a.summary)))
        return None
    rows = []
    t0 = time.perf_counter()
    for i, dz in enumerate(build_designs()):
        if a.only and a.only not in dz["name"]:
            continue
        if a.designs and dz["name"] not in a.designs.split(","):
            continue
        cands = tuple(c for c in a.candidates.split(",") if c)
        r = run_design(dz, a.n_sims, a.seed + i, a.multipliers, a.boot, a.defaults_only, cands,
                       a.calibrate)
        rows += r
        summ = {x["quantity"] + ":" + x["method"]: round(x["value"], 3) for x in r}
        print(f"[{time.perf_counter() - t0:6.0f}s] {dz['name']}: {summ}", flush=True)
    df = pd.DataFrame(rows)
    if a.quantities:
        df = df[df.quantity.isin(a.quantities.split(","))].reset_index(drop=True)
    label = a.run_label or time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    df["run"] = f"{label}: " + " ".join(["--n-sims", str(a.n_sims), "--multipliers", str(a.multipliers)]
                                        + (["--defaults-only"] if a.defaults_only else [])
                                        + (["--candidates", a.candidates] if a.candidates else [])
                                        + (["--calibrate"] if a.calibrate else [])
                                        + (["--quantities", a.quantities] if a.quantities else []))
    if a.merge_into:
        old = pd.read_csv(a.merge_into)
        if "run" not in old.columns:
            old["run"] = "first-round full run (2026-12-01)"
        key = ["design", "quantity", "method"]
        new_keys = pd.MultiIndex.from_frame(df[key])
        keep = ~pd.MultiIndex.from_frame(old[key]).isin(new_keys)
        # rows of this run replace those with the same (design, quantity, method)
        df = pd.concat([old[keep], df], ignore_index=True)
        order = {d["name"]: i for i, d in enumerate(build_designs())}
        df = df.sort_values("design", key=lambda c: c.map(order), kind="stable").reset_index(drop=True)
    if a.out:
        df.to_csv(a.out, index=False, float_format="%.4f")
    print(summarise(df))
    return df


if __name__ == "__main__":
    main()

"""leaderboard_tiers / tier_groups: hand-checked tiers, ties, MDD, order invariance, and
Table 17 against the committed Table 6."""

import itertools
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from analysis.stats import PairwiseResult, leaderboard_tiers, pairwise_simultaneous
from analysis.stats.intervals import kg_interval, mover_difference
from analysis.stats.intervals import satterthwaite_df
from analysis.stats.tiers import (_satterthwaite_rows, calibrated_difference,
                                 detectable_difference, pair_design, simulated_power,
                                 tier_groups)

REPO = Path(__file__).resolve().parent.parent


def family(rows, crit=3.0):
    """A PairwiseResult from hand rows (a, b, metric, estimate, se, low, high)."""
    t = pd.DataFrame(rows, columns=["planner_a", "planner_b", "metric", "estimate", "se",
                                    "low", "high"])
    t["verdict"] = np.where(t.low > 0, "a>b", np.where(t.high < 0, "b>a", "tie"))
    t["zero_se"] = t.se == 0
    t["set_aside"] = False
    return PairwiseResult(table=t, critical_value=crit, set_aside=t.iloc[:0],
                          n_clusters=18, family_size=len(t), method="mover_kg_maxz",
                          n_resamples=1000, confidence_level=0.95, seed=0,
                          per_contrast_level=0.997)


def shares_tier(groups, a, b):
    return any(a in g and b in g for g in groups)


# --- tier_groups --------------------------------------------------------------------

def test_only_a_and_c_separated_gives_two_overlapping_tiers():
    assert tier_groups("ABC", {("A", "C")}) == [("A", "B"), ("B", "C")]
    # the pair's orientation does not matter
    assert tier_groups("ABC", {("C", "A")}) == [("A", "B"), ("B", "C")]


def test_nothing_separated_one_tier_everything_separated_singletons():
    assert tier_groups("ABCD", set()) == [("A", "B", "C", "D")]
    every = set(itertools.combinations("ABCD", 2))
    assert tier_groups("ABCD", every) == [("A",), ("B",), ("C",), ("D",)]


def test_one_planner_and_no_planner():
    assert tier_groups(["only"], set()) == [("only",)]
    assert tier_groups([], set()) == []


def test_separations_out_of_rank_order_give_non_contiguous_tiers():
    # A-C, A-D, B-D separated: the maximal unseparated groups are {A,B}, {B,C}, {C,D}
    got = tier_groups("ABCD", {("A", "C"), ("A", "D"), ("B", "D")})
    assert got == [("A", "B"), ("B", "C"), ("C", "D")]
    # A-B and C-D separated only: {A,C,D} is not a tier (C-D separated): {A,C}, {A,D},
    # {B,C}, {B,D}
    got = tier_groups("ABCD", {("A", "B"), ("C", "D")})
    assert got == [("A", "C"), ("A", "D"), ("B", "C"), ("B", "D")]


def test_a_maximal_group_that_says_nothing_new_is_swept():
    # unseparated pairs: 12 14 24 | 23 25 35 | 13 16 36; {1,2,3} is a maximal group,
    # but each of its pairs is in another tier: dropped
    sep = {(1, 5), (2, 6), (3, 4), (4, 5), (4, 6), (5, 6)}
    assert tier_groups([1, 2, 3, 4, 5, 6], sep) == [(1, 2, 4), (1, 3, 6), (2, 3, 5)]


def test_unknown_planner_in_a_pair_is_an_error():
    with pytest.raises(ValueError, match=r"\('A', 'Z'\) names a planner not in order"):
        tier_groups("AB", {("A", "Z")})


def test_share_a_tier_exactly_when_not_separated_random_graphs():
    rng = np.random.default_rng(1)
    for _ in range(300):
        P = int(rng.integers(1, 8))
        order = [f"p{i}" for i in range(P)]
        pairs = list(itertools.combinations(order, 2))
        sep = {pr for pr in pairs if rng.random() < rng.random()}
        groups = tier_groups(order, sep)
        for a, b in pairs:
            assert shares_tier(groups, a, b) == ((a, b) not in sep), (order, sep, groups)
        assert all(any(p in g for g in groups) for p in order)
        # no tier is redundant: each holds a planner or a pair no other tier holds
        for g in groups:
            rest = [h for h in groups if h != g]
            assert any(not any(p in h for h in rest) for p in g) or any(
                not any(p in h and q in h for h in rest) for p, q in itertools.combinations(g, 2))
        # the separated pairs' iteration order does not matter
        assert tier_groups(order, set(reversed(sorted(sep)))) == groups


# --- leaderboard_tiers on hand families ----------------------------------------------

def test_three_planners_hand_family():
    # means A 0.60, B 0.50, C 0.30; only A - C excludes 0
    f = family([("A", "B", "m", 0.10, 0.05, -0.05, 0.25),
                ("A", "C", "m", 0.30, 0.06, 0.10, 0.48),
                ("B", "C", "m", 0.20, 0.08, -0.04, 0.42)])
    means = pd.DataFrame({"planner": list("ABC"), "metric": "m",
                          "estimate": [0.6, 0.5, 0.3]})
    r = leaderboard_tiers(f, means=means)
    t = r.table
    assert t.planner.tolist() == ["A", "B", "C"]
    assert t["rank"].tolist() == [1, 2, 3]
    assert t.tiers.tolist() == [(1,), (1, 2), (2,)]
    assert t.top_tier.tolist() == [True, True, False]
    assert t.separated_from.tolist() == [("C",), (), ("A",)]
    # vs_average = mean - (0.6 + 0.5 + 0.3) / 3
    assert t.vs_average.to_numpy() == pytest.approx([0.6 - 1.4 / 3, 0.5 - 1.4 / 3,
                                                     0.3 - 1.4 / 3])
    assert t.estimate.tolist() == [0.6, 0.5, 0.3]
    assert r.tiers_by_metric.planners.tolist() == [("A", "B"), ("B", "C")]
    # MDD = half-width + z_0.8 se per pair: 0.15 + 0.8416 * 0.05, 0.19 + 0.8416 * 0.06,
    # 0.23 + 0.8416 * 0.08
    z = stats.norm.ppf(0.8)
    mdd = [0.15 + z * 0.05, 0.19 + z * 0.06, 0.23 + z * 0.08]
    m = r.mdd.iloc[0]
    assert m.n_pairs == 3
    assert m.mdd_median == pytest.approx(mdd[1])
    assert (m.mdd_min, m.mdd_max) == pytest.approx((mdd[0], mdd[2]))
    assert m.se_median == pytest.approx(0.06) and m.halfwidth_median == pytest.approx(0.19)
    # provenance is the family's
    assert (r.method, r.confidence_level, r.n_clusters, r.power) == \
        ("mover_kg_maxz", 0.95, 18, 0.8)
    # a symmetric interval c * se gives the textbook (c + z) se
    sym = family([("A", "B", "m", 0.1, 0.04, 0.1 - 3 * 0.04, 0.1 + 3 * 0.04)])
    assert leaderboard_tiers(sym, power=0.9).mdd.mdd_median[0] == \
        pytest.approx((3 + stats.norm.ppf(0.9)) * 0.04)


def test_equal_means_share_a_rank_and_are_ordered_by_name():
    rows = [("b", "a", "m", 0.0, 0.05, -0.1, 0.1), ("b", "c", "m", 0.3, 0.05, 0.2, 0.4),
            ("a", "c", "m", 0.3, 0.05, 0.2, 0.4)]
    r = leaderboard_tiers(family(rows))
    assert r.table.planner.tolist() == ["a", "b", "c"]
    assert r.table["rank"].tolist() == [1, 1, 3]
    assert r.table.tiers.tolist() == [(1,), (1,), (2,)]


def test_all_identical_planners_one_tier_everyone_on_top():
    rows = [(a, b, "m", 0.0, 0.0, -0.2, 0.2) for a, b in itertools.combinations("ABCD", 2)]
    r = leaderboard_tiers(family(rows))
    assert r.table.tiers.tolist() == [(1,)] * 4 and r.table.top_tier.all()
    assert r.table["rank"].tolist() == [1, 1, 1, 1]
    # every SE is zero: no pair gives an MDD
    assert r.mdd.n_pairs[0] == 0 and np.isnan(r.mdd.mdd_median[0])


def test_set_aside_contrast_does_not_separate():
    f = family([("A", "B", "m", 0.2, 0.0, 0.2, 0.2)])
    f.table.loc[0, "set_aside"] = True
    r = leaderboard_tiers(f)
    assert r.table.tiers.tolist() == [(1,), (1,)]
    assert r.mdd.n_pairs[0] == 0


def test_metrics_are_tiered_separately():
    f = family([("A", "B", "x", 0.3, 0.05, 0.2, 0.4), ("A", "B", "y", -0.3, 0.05, -0.4, -0.2)])
    r = leaderboard_tiers(f)
    assert r.table.metric.tolist() == ["x", "x", "y", "y"]
    assert r.table.planner.tolist() == ["A", "B", "B", "A"]
    assert r.tiers_by_metric.planners.tolist() == [("A",), ("B",), ("B",), ("A",)]


def test_user_mistakes_name_the_argument():
    f = family([("A", "B", "m", 0.1, 0.05, -0.05, 0.25)])
    with pytest.raises(ValueError, match=r"power=1\.5; valid: a number strictly between 0 and 1"):
        leaderboard_tiers(f, power=1.5)
    bad = pd.DataFrame({"planner": ["A", "B"], "metric": "m", "estimate": [0.5, 0.5]})
    with pytest.raises(ValueError, match=r"means: m of 'A' minus 'B' is 0\.0, the family's "
                                         r"contrast is 0\.1"):
        leaderboard_tiers(f, means=bad)
    with pytest.raises(ValueError, match=r"means has no estimate of metric 'm' for "
                                         r"planner\(s\) \['B'\]"):
        leaderboard_tiers(f, means=bad.iloc[:1])
    with pytest.raises(ValueError, match=r"means lacks columns \['estimate'\]"):
        leaderboard_tiers(f, means=bad.drop(columns="estimate"))


# --- minimum detectable difference at the alternative's rates ---------------------------

def exact_power(rate_hi, rate_lo, n, c):
    """Exact probability that the family's interval (Korn-Graubard Clopper-Pearson of
    each mean at one-sided level Phi(-c), MOVER, independent samples) excludes 0 for two
    binomial samples of n tasks (episodes of one task) at the given rates: a sum over
    every outcome pair weighted by scipy's binomial pmf."""
    x = np.arange(n + 1)
    th = x / n
    lo, hi, _ = kg_interval(th, th * (1 - th) / n, 0.0, n, n - 1, stats.norm.sf(c))
    low, _ = mover_difference(th[:, None], lo[:, None], hi[:, None], th[None, :],
                              lo[None, :], hi[None, :], 0.0)
    w = stats.binom.pmf(x, n, rate_hi)[:, None] * stats.binom.pmf(x, n, rate_lo)[None, :]
    return float((w * (low > 0)).sum())


@pytest.mark.parametrize("ra, rb", [(0.2, 0.3), (0.05, 0.1), (0.6, 0.8), (0.45, 0.55)])
def test_mdd_has_its_power_in_the_binomial_case(ra, rb):
    # 200 independent tasks, a 95% interval (c = 1.96): at q = the pair's mean rate
    # (mirrored to <= 1/2) and q + MDD the exact power is 0.80; the old MDD, (c + z_0.8)
    # se at the observed rates, falls short (0.61-0.78)
    n, c = 200, 1.96
    d = float(detectable_difference(ra, rb, n, n - 1, 0.0, c, n))
    q = min((ra + rb) / 2, 1 - (ra + rb) / 2)
    assert exact_power(q + d, q, n, c) == pytest.approx(0.80, abs=0.01)
    old = (c + stats.norm.ppf(0.8)) * np.sqrt((ra * (1 - ra) + rb * (1 - rb)) / n)
    assert exact_power(q + old, q, n, c) < 0.79
    # the mirror image (rates 1 - r) has the same MDD; the planners' order does not matter
    assert detectable_difference(1 - ra, 1 - rb, n, n - 1, 0.0, c, n) == pytest.approx(d)
    assert detectable_difference(rb, ra, n, n - 1, 0.0, c, n) == pytest.approx(d)


def test_mdd_grows_with_the_critical_value_and_shrinks_with_tasks():
    d = lambda **kw: float(detectable_difference(**{**dict(  # noqa: E731
        rate_a=0.3, rate_b=0.3, n_eff=100, df=17, r=0.0, critical_value=3.0,
        n_clusters=18), **kw}))
    assert d(critical_value=2.0) < d() < d(critical_value=3.5)
    assert d(n_eff=400) < d() < d(n_eff=50)
    # positively correlated means (paired planners) need a smaller difference
    assert d(r=0.5) < d()
    # 10 tasks at a critical value of 6: no difference up to 1 - q reaches 80% power
    assert np.isnan(d(n_eff=10, critical_value=6.0))
    with pytest.raises(ValueError, match=r"power=0; valid: a number strictly between 0 and 1"):
        detectable_difference(0.3, 0.3, 100, 17, 0.0, 3.0, 18, power=0)


def test_table_mdd_at_the_alternative_uses_the_data():
    df = make_df(shift={"A": 1.5, "B": 0.8, "C": 0.7})
    fam = pairwise_simultaneous(df, ["success", "validity"], n_resamples=2000, seed=3)
    obs = leaderboard_tiers(fam)
    alt = leaderboard_tiers(fam, data=df)
    assert obs.mdd.se_at.tolist() == ["observed"] * 2
    assert alt.mdd.se_at.tolist() == ["alternative"] * 2
    # the tiers do not depend on how the MDD is computed
    pd.testing.assert_frame_equal(obs.table, alt.table)
    # each pair's MDD is detectable_difference on the pair's own design
    t = fam.table[fam.table.metric == "success"]
    pairs = list(zip(t.planner_a, t.planner_b))
    per_pair = detectable_difference(*pair_design(df, "success", pairs),
                                     fam.critical_value, fam.n_clusters, 0.8)
    m = alt.mdd.set_index("metric").loc["success"]
    assert m.mdd_median == pytest.approx(np.median(per_pair))
    assert (m.mdd_min, m.mdd_max) == pytest.approx((per_pair.min(), per_pair.max()))
    # pair_design: the means are the planners' task means
    ra, rb, *_ = pair_design(df, "success", [("A", "D")])
    assert (ra[0], rb[0]) == pytest.approx((df[df.planner == "A"].success.mean(),
                                            df[df.planner == "D"].success.mean()))


# --- minimum detectable difference calibrated by simulation --------------------------

def test_simulated_mdd_has_its_power_in_the_binomial_case():
    # 80 independent tasks (episodes of one task) at 0.2 and 0.3, a 95% interval: the
    # simulated MDD (400 datasets, Monte Carlo SE of the power 0.02) has exact power
    # 0.80 within 2.5 Monte Carlo SEs (the exact sum of exact_power)
    n, c = 80, 1.96
    d, mcse = calibrated_difference([0.2], [0.3], [n], [0.0], [1.0], [1] * n, c, seed=1)
    assert mcse == pytest.approx(np.sqrt(0.8 * 0.2 / 400))
    assert exact_power(0.25 + d[0], 0.25, n, c) == pytest.approx(0.80, abs=2.5 * mcse)
    # the analytic MDD is the same difference up to the Monte Carlo error
    assert d[0] == pytest.approx(float(detectable_difference(0.2, 0.3, n, n - 1, 0.0, c, n)),
                                 abs=0.02)


def test_simulated_mdd_is_deterministic_and_its_power_monotone():
    args = ([0.4], [0.5], [60.0], [0.3], [0.6], [2, 3, 5, 8, 4, 6, 2, 9, 3, 5], 2.8)
    d1, _ = calibrated_difference(*args, seed=7)
    d2, _ = calibrated_difference(*args, seed=np.random.default_rng(7))
    assert d1 == d2  # an int seed and the Generator it makes: the same draws
    assert calibrated_difference(*args, seed=8)[0] != d1
    # common random numbers: on fixed draws the power never falls as d grows
    z = np.random.default_rng(0).standard_normal((2, 200, 10))
    grid = np.linspace(0, 0.5, 26)
    pw = [float(simulated_power([g], *args[:-1], args[-1], *z)[0]) for g in grid]
    assert np.all(np.diff(pw) >= 0) and pw[0] < 0.02 and pw[-1] > 0.95
    # the MDD is where that curve (on the MDD's own draws) crosses 0.8
    z7 = np.random.default_rng(7).standard_normal((2, 400, 10))
    assert simulated_power(d1, *args[:-1], args[-1], *z7)[0] >= 0.8
    assert simulated_power(d1 - 0.002, *args[:-1], args[-1], *z7)[0] < 0.8
    with pytest.raises(ValueError, match=r"n_sims=5; valid: an integer >= 10"):
        calibrated_difference(*args, n_sims=5)


def test_satterthwaite_rows_equals_the_family_df():
    rng = np.random.default_rng(2)
    n = np.array([2, 3, 5, 8, 15, 4, 6, 2, 9, 3], float)
    for _ in range(50):
        e = rng.standard_normal(10) * np.sqrt(n * rng.random() + n * n * rng.random()
                                              * (rng.random() < 0.5))
        assert _satterthwaite_rows((e * e)[None], n)[0] == pytest.approx(
            satterthwaite_df(e[:, None], n), rel=1e-9)


def test_table_mdd_simulated_on_the_pooled_design():
    df = make_df(shift={"A": 1.5, "B": 0.8, "C": 0.7})
    fam = pairwise_simultaneous(df, ["success", "validity"], n_resamples=2000, seed=3)
    sim = leaderboard_tiers(fam, data=df, n_sims=200, seed=5)
    again = leaderboard_tiers(fam, data=df, n_sims=200, seed=5)
    pd.testing.assert_frame_equal(sim.mdd, again.mdd)
    m = sim.mdd.set_index("metric").loc["success"]
    assert m.se_at == "simulated" and m.mdd_min == m.mdd_median == m.mdd_max
    assert m.power_mcse == pytest.approx(np.sqrt(0.16 / 200))
    # the pooled design: the pairs' mean rate, harmonic n_eff, mean correlation
    t = fam.table[fam.table.metric == "success"]
    ra, rb, ne, _, r = pair_design(df, "success", list(zip(t.planner_a, t.planner_b)))
    sizes = df.drop_duplicates("task_id").episode_id.value_counts().to_numpy()
    p = df.groupby("planner").success.agg(["mean", "var"])
    k = float(np.mean(p["var"] / (p["mean"] * (1 - p["mean"]))))
    want, _ = calibrated_difference([np.mean((ra + rb) / 2)] * 2, [np.mean((ra + rb) / 2)] * 2,
                                    [len(ne) / np.sum(1 / ne)] * 2, [np.mean(r)] * 2,
                                    [k] * 2, sizes, fam.critical_value, 0.8, 200,
                                    np.random.default_rng(5))
    assert m.mdd_median == pytest.approx(want[0])
    pd.testing.assert_frame_equal(sim.table, leaderboard_tiers(fam).table)


# --- on the real family ---------------------------------------------------------------

def make_df(seed=0, shift=None):
    rng = np.random.default_rng(seed)
    sizes = [2, 3, 3, 4, 5, 6, 8, 2, 4, 7, 3, 5]
    rows = []
    for g, n in enumerate(sizes):
        for i in range(n):
            diff = rng.normal()
            for p in "ABCD":
                z = diff + rng.normal(0, 0.7) + (shift or {}).get(p, 0.0)
                rows.append(dict(planner=p, task_id=f"t{g}_{i}", episode_id=f"e{g:02d}",
                                 success=float(z > 0), validity=float(stats.norm.cdf(z))))
    return pd.DataFrame(rows)


def test_invariant_to_planner_order():
    df = make_df(shift={"A": 1.5, "B": 0.8, "C": 0.7})
    out, crit = [], []
    for order in (list("ABCD"), list("DCBA"), list("BDAC")):
        fam = pairwise_simultaneous(df, ["success", "validity"], planners=order,
                                    n_resamples=2000, seed=3)
        r = leaderboard_tiers(fam)
        out.append(r.table)
        crit.append(r.critical_value)
    for other, c in zip(out[1:], crit[1:]):
        pd.testing.assert_frame_equal(out[0], other, rtol=1e-12)
        assert c == pytest.approx(crit[0], rel=1e-12)
    # and the tiers follow the family: validity separates A from the rest
    v = out[0][out[0].metric == "validity"]
    assert v.planner.iloc[0] == "A" and v.tiers.iloc[0] == (1,)


def test_table17_matches_committed_table6_and_regenerates():
    """The committed Table 17 is what Results gives, and its tiers follow the committed
    Table 6's verdicts exactly: two planners share a tier iff their verdict is a tie."""
    import analysis
    res = analysis.load().results()
    t17 = res.table("leaderboard_tiers")
    csv = pd.read_csv(REPO / "tables/table17_leaderboard_tiers.csv", keep_default_na=False,
                      dtype={"tiers": str})
    pd.testing.assert_frame_equal(t17.astype({"tiers": str}), csv, check_dtype=False,
                                  rtol=1e-9)
    t6 = pd.read_csv(REPO / "tables/table06_pairwise_contrasts.csv")
    tiers = {(m, p): set(s.split(";")) for m, p, s in zip(csv.metric, csv.planner, csv.tiers)}
    for row in t6.itertuples():
        share = bool(tiers[row.metric, row.planner_a] & tiers[row.metric, row.planner_b])
        assert share == (row.verdict == "tie"), row
    # the estimate column is Table 4's task-macro mean
    t4 = res.planner_bootstrap.table.set_index(["label", "metric"]).estimate
    for m, p, e in zip(csv.metric, csv.planner, csv.estimate):
        assert e == pytest.approx(t4[p, m], abs=1e-9)


def _bench():
    import importlib.util
    spec = importlib.util.spec_from_file_location("tier_calibration",
                                                  REPO / "bench/tier_calibration.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_calibration_bench_is_seeded_and_uses_the_committed_structure():
    tc = _bench()
    sizes, P = tc.committed_structure()
    assert (len(sizes), int(sizes.sum()), P) == (18, 108, 6)   # Table 2's planner suite
    dz = next(d for d in tc.DESIGNS if d["name"] == "power-gcr")
    runs = [tc.run_design(dz, sizes, P, n_sims=3, B=200, rng=np.random.default_rng(5),
                          n_pilot=2) for _ in range(2)]
    assert runs[0] == runs[1]
    assert runs[0]["effect"].startswith("gcr +") and "(= MDD of a null pilot)" in runs[0]["effect"]
    # the generator's task means are the design's rates
    mu, truth = tc.setup(next(d for d in tc.DESIGNS if d["name"] == "null-rare"), P)
    assert truth[:, 1] == pytest.approx(0.05) and truth[:, 2] == pytest.approx(0.02)
    for k, kind in enumerate(tc.KINDS):
        assert tc.task_mean(mu[0, k], kind) == pytest.approx(truth[0, k], abs=1e-9)


@pytest.mark.e2e
def test_calibration_bench_command_prints_its_table():
    cmd = [sys.executable, str(REPO / "bench/tier_calibration.py"), "--n-sims", "2",
           "--designs", "null-typical", "--resamples", "200"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "6 planners, 18 episodes, 108 tasks" in r.stdout
    row = next(line for line in r.stdout.splitlines() if line.startswith("| null-typical"))
    assert row.split(" | ")[4] == "none"      # identical planners: no true difference
    bad = subprocess.run([*cmd[:2], "--designs", "nope"], capture_output=True, text=True,
                         env=env, timeout=600)
    assert bad.returncode == 2 and "--designs: unknown design(s) ['nope']" in bad.stderr

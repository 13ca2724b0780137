"""Issue 11: intervals for rare rates, honest zero-SE contrasts, bad cluster input.

Each regression test names the bug of issue 11 it pins down. Oracles: scipy's exact
binomial (Clopper-Pearson) interval, closed forms, and brute force.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from analysis.stats import cluster_bootstrap, paired_conditions, pairwise_simultaneous
from analysis.stats._core import FewClustersWarning
from analysis.stats.intervals import kg_interval, mover_difference


def rates_df(successes_per_episode, sizes, planner="p"):
    rows = []
    for g, (k, n) in enumerate(zip(successes_per_episode, sizes)):
        for i in range(n):
            rows.append(dict(planner=planner, episode_id=f"e{g:02d}", task_id=f"t{g}_{i}",
                             success=float(i < k)))
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- Korn-Graubard CP

@pytest.mark.parametrize("k,n", [(0, 20), (1, 88), (5, 40), (20, 20)])
def test_kg_equals_clopper_pearson_without_design_effect(k, n):
    # df = n - 1 and v = binomial variance: n_eff = n, the exact CP interval of scipy
    th = k / n
    lo, hi, neff = kg_interval(th, th * (1 - th) / n, th * (1 - th), n, n - 1, 0.025)
    ci = stats.binomtest(k, n).proportion_ci(0.95, method="exact")
    assert neff == pytest.approx(n)
    assert lo == pytest.approx(ci.low, abs=1e-12) and hi == pytest.approx(ci.high, abs=1e-12)


def test_kg_design_effect_shrinks_n_and_widens():
    # variance twice the binomial one: n_eff = n / 2 (times the df factor)
    n, k, G = 100, 10, 20
    th = k / n
    v = 2 * th * (1 - th) / n
    lo, hi, neff = kg_interval(th, v, th * (1 - th), n, G - 1, 0.025)
    fac = (stats.t.isf(0.025, n - 1) / stats.t.isf(0.025, G - 1)) ** 2
    assert neff == pytest.approx(n / 2 * fac)
    x = th * neff
    assert lo == pytest.approx(stats.beta.ppf(0.025, x, neff - x + 1))
    assert hi == pytest.approx(stats.beta.ppf(0.975, x + 1, neff - x))


def test_published_one_success_in_88_gets_an_honest_upper_bound():
    # issue 11, bug 1: Table 4 showed 1 of 88 as 1.1 [0.0, 2.3]; the independent-task
    # Clopper-Pearson bound alone is 6.2%. The default must reach at least that.
    sizes = [5] * 16 + [4, 4]
    df = rates_df([1] + [0] * 17, sizes)
    t = cluster_bootstrap(df, ["success"]).table.iloc[0]
    assert t.method == "kg_cp" and t.n_records == 88
    cp = stats.binomtest(1, 88).proportion_ci(0.95, method="exact")
    assert t.high >= cp.high - 1e-12 and t.high > 0.0615
    assert t.low == pytest.approx(0.0, abs=1e-3)


def test_zero_successes_is_never_a_point_interval():
    df = rates_df([0] * 18, [2, 2, 3, 3, 3, 4, 4, 5, 5, 5, 6, 6, 7, 7, 8, 9, 11, 15])
    t = cluster_bootstrap(df, ["success"]).table.iloc[0]
    assert t.low == 0.0 and t.high > 0.02 and t.degenerate
    # exact one-sided bound with n = 105 shrunk by the df factor (equal-size df rule)
    assert t.high >= 1 - 0.025 ** (1 / 105)


def test_auto_picks_per_metric_and_says_so():
    df = rates_df([1, 2, 0, 1, 0, 3, 1, 0], [4] * 8)
    df["tokens"] = np.arange(len(df)) * 10.0
    df["gcr"] = np.linspace(0, 1, len(df))
    r = cluster_bootstrap(df, ["success", "tokens", "gcr"], n_resamples=300)
    assert r.table.set_index("metric").method.to_dict() == {
        "success": "kg_cp", "tokens": "bootstrap_t", "gcr": "kg_cp"}
    assert r.method == "kg_cp+bootstrap_t"
    with pytest.raises(ValueError, match="kg_cp.*'tokens'"):
        cluster_bootstrap(df, ["tokens"], method="kg_cp")


# ---------------------------------------------------------------- bad cluster input

def test_nan_episode_id_is_an_error_not_a_merge():
    # issue 11, bug 3a: a NaN episode_id after the first planner was merged into the
    # previous planner's last episode (an all-zero planner came out at 0.2)
    a = rates_df([1] * 8, [2] * 8, "a")
    b = rates_df([0] * 8, [2] * 8, "b")
    b.loc[b.index[0], "episode_id"] = np.nan
    df = pd.concat([a, b], ignore_index=True)
    with pytest.raises(ValueError, match=r"episode_id is missing .* 1 row.*row index 16"):
        cluster_bootstrap(df, ["success"])
    wide = df.assign(task_id=df.task_id)
    with pytest.raises(ValueError, match="episode_id is missing"):
        pairwise_simultaneous(wide, ["success"])


def test_clusters_counted_per_metric_from_non_missing_values():
    # issue 11, bug 3b: a tier column entirely NaN in some episodes counted them anyway,
    # and the interval of a column depended on which other columns were passed
    df = rates_df([1, 0, 2, 1, 0, 1, 1, 0, 2, 0, 1, 0], [3] * 12)
    df["tier_only"] = np.where(df.episode_id < "e08", df.success, np.nan)
    both = cluster_bootstrap(df, ["success", "tier_only"], method="bootstrap_t",
                             n_resamples=400, seed=1).table.set_index("metric")
    alone = cluster_bootstrap(df, ["tier_only"], method="bootstrap_t", n_resamples=400,
                              seed=1).table.set_index("metric")
    assert both.loc["tier_only", "n_clusters"] == 8 and both.loc["success", "n_clusters"] == 12
    for meth in ("auto", "cr1_t"):
        b2 = cluster_bootstrap(df, ["success", "tier_only"], method=meth).table.set_index("metric")
        a2 = cluster_bootstrap(df, ["tier_only"], method=meth).table.set_index("metric")
        assert b2.loc["tier_only", ["low", "high"]].tolist() == a2.loc["tier_only", ["low", "high"]].tolist()
    # CR1 with G = 8 (not 12): by hand
    sub = df[df.episode_id < "e08"].groupby("episode_id").tier_only.agg(["sum", "count"])
    th = sub["sum"].sum() / sub["count"].sum()
    se = np.sqrt(8 / 7 * ((sub["sum"] - th * sub["count"]) ** 2).sum()) / sub["count"].sum()
    cr1 = cluster_bootstrap(df, ["success", "tier_only"], method="cr1_t").table.set_index("metric")
    assert cr1.loc["tier_only", "high"] == pytest.approx(th + stats.t.ppf(0.975, 7) * se)
    assert alone.loc["tier_only", "n_clusters"] == 8


@pytest.mark.parametrize("G", [1, 2])
def test_fewer_than_three_episodes_is_an_error(G):
    # issue 11, bug 3c: G = 2 was accepted silently, G = 1 raised ZeroDivisionError
    df = rates_df([1] * G, [3] * G)
    for method in ("auto", "bootstrap_t", "cr1_t", "bca"):
        with pytest.raises(ValueError, match=f"only {G} episode.*at least 3"):
            cluster_bootstrap(df, ["success"], method=method, n_resamples=50)
    two = pd.concat([df, df.assign(planner="q")])
    with pytest.raises(ValueError, match=f"only {G} episode.*at least 3"):
        pairwise_simultaneous(two, ["success"], n_resamples=50)


def test_fewer_than_eight_episodes_warns_in_result():
    df = rates_df([1, 0, 1, 0, 2], [3] * 5)
    with pytest.warns(FewClustersWarning, match="fewer than 8 episodes") as caught:
        r = cluster_bootstrap(df, ["success"])
    assert r.table.few_clusters.all() and "(5)" in r.warnings[0]
    # the warning points at the caller's line, not inside the package
    assert {w.filename for w in caught if w.category is FewClustersWarning} == {__file__}
    two = pd.concat([df, df.assign(planner="q", success=1 - df.success)])
    with pytest.warns(FewClustersWarning):
        pw = pairwise_simultaneous(two, ["success"], n_resamples=200)
    assert "only 5 episodes" in pw.warnings[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r8 = cluster_bootstrap(rates_df([1] * 8, [3] * 8), ["success"])
    assert r8.warnings == () and not r8.table.few_clusters.any()


def test_task_in_different_episodes_across_planners_is_an_error():
    # issue 11, bug 3d: the pairwise analysis silently took one of the episodes
    a = rates_df([1, 0, 1, 0, 1, 0, 1, 0], [2] * 8, "a")
    b = a.assign(planner="b")
    b.loc[b.task_id == "t3_1", "episode_id"] = "e05"
    with pytest.raises(ValueError, match="task_id 't3_1' is mapped to different episode_ids "
                                         r"across planners: \['e03', 'e05'\]"):
        pairwise_simultaneous(pd.concat([a, b]), ["success"])


def test_unknown_planner_or_metric_lists_valid_names():
    # issue 11, bug 3e: an unknown planner raised a bare KeyError
    a = rates_df([1, 0, 1, 0, 1, 0, 1, 0], [2] * 8, "a")
    df = pd.concat([a, a.assign(planner="b")])
    with pytest.raises(ValueError, match=r"unknown planner\(s\) \['c'\].*valid: \['a', 'b'\]"):
        pairwise_simultaneous(df, ["success"], planners=["a", "c"])
    with pytest.raises(ValueError, match=r"unknown metric\(s\) \['gcr'\].*valid columns"):
        pairwise_simultaneous(df, ["gcr"])


# ---------------------------------------------------------------- pairwise default

def two_planner_df(succ_a, succ_b, sizes):
    a = rates_df(succ_a, sizes, "a")
    b = rates_df(succ_b, sizes, "b")
    return pd.concat([a, b], ignore_index=True)


def test_zero_se_contrast_gets_honest_interval_not_a_point():
    # issue 11, bug 2: two planners both at 0 successes got [0, 0]
    sizes = [4] * 10
    df = two_planner_df([0] * 10, [0] * 10, sizes)
    r = pairwise_simultaneous(df, ["success"], n_resamples=2000)
    row = r.table.iloc[0]
    assert row.zero_se and not row.set_aside and row.verdict == "tie"
    single = cluster_bootstrap(df[df.planner == "a"], ["success"],
                               confidence_level=r.per_contrast_level).table.iloc[0]
    # MOVER with both lower bounds at 0: exactly [-U_b, U_a]
    assert row.low == pytest.approx(-single.high) and row.high == pytest.approx(single.high)
    assert row.high > 0.05
    assert row.p_single_step == 1.0


def test_one_planner_always_right_other_never_is_a_clear_difference():
    sizes = [3] * 12
    df = two_planner_df(sizes, [0] * 12, sizes)
    r = pairwise_simultaneous(df, ["success"], n_resamples=2000).table.iloc[0]
    assert r.zero_se and r.estimate == 1.0 and r.verdict == "a>b" and 0 < r.low < 1
    assert r.high == 1.0 and r.p_single_step < 0.05


def test_mover_reduces_to_wald_for_symmetric_intervals():
    lo, hi = mover_difference(0.6, 0.5, 0.7, 0.4, 0.3, 0.5, 0.5)
    half = np.sqrt(0.1**2 + 0.1**2 - 2 * 0.5 * 0.1 * 0.1)
    assert lo == pytest.approx(0.2 - half) and hi == pytest.approx(0.2 + half)


def test_default_verdicts_agree_with_single_step_p_and_note_explains_stepdown():
    rng = np.random.default_rng(4)
    sizes = [2, 3, 3, 4, 5, 6, 8, 2, 4, 7, 3, 5]
    rows = []
    for g, n in enumerate(sizes):
        for i in range(n):
            d = rng.normal()
            for p, shift in (("A", 1.0), ("B", 0.0), ("C", -0.2), ("D", 0.3)):
                z = d + rng.normal(0, 0.8) + shift
                rows.append(dict(planner=p, task_id=f"t{g}_{i}", episode_id=g,
                                 success=float(z > 0.5), validity=float(stats.norm.cdf(z))))
    r = pairwise_simultaneous(pd.DataFrame(rows), ["success", "validity"], n_resamples=4000)
    t = r.table
    excl = (t.low > 0) | (t.high < 0)
    # single-step p below the level exactly when the interval excludes 0 (the critical
    # value is a resampled quantile, so allow the p-value grid of one resample)
    assert ((t.p_single_step <= 0.05 + 1 / 4000) | ~excl).all()
    assert ((t.p_single_step > 0.05 - 1 / 4000) | excl).all()
    assert (t.p_stepdown <= t.p_single_step + 1e-12).all()
    assert "stepdown" in r.note and "tie" in r.note
    assert excl.any() and (~excl).any()


def test_mover_collapse_under_high_correlation_is_floored_by_the_contrast_t():
    # issue 11 (second round), bug: with 4 episodes the two planners' KG-CP intervals
    # are cut at 0 and 1 and their episode scores correlate at r = 0.95, so the MOVER
    # half-width sqrt(a^2 + b^2 - 2 r a b) fell to ~1.4 contrast SEs (family-wise
    # coverage 0.70 with 4 episodes). The floor: at least t_{G-1} * CR1 SE of the contrast.
    sizes = [3, 5, 7, 9]
    df = two_planner_df([1, 2, 2, 5], [2, 3, 2, 8], sizes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FewClustersWarning)
        r = pairwise_simultaneous(df, ["success"], n_resamples=2000)
    row = r.table.iloc[0]
    # hand: episode scores e_a = S_a - (10/24) n, e_b = S_b - (15/24) n; d = e_a - e_b
    d = np.array([-0.375, 1 / 24, 35 / 24, -1.125])
    se = np.sqrt(4 / 3 * (d * d).sum()) / 24
    assert row.estimate == pytest.approx(-5 / 24) and row.se == pytest.approx(se)
    # one contrast: the family level is that of the single contrast (>= 95%)
    assert r.critical_value >= stats.norm.isf(0.025) - 1e-12
    q = stats.t.isf(stats.norm.sf(r.critical_value), 3)
    assert row.low <= -5 / 24 - q * se + 1e-12 and row.high >= -5 / 24 + q * se - 1e-12
    assert row.verdict == "tie" and row.p_single_step > 0.05


def test_few_episodes_family_level_is_at_least_sidak_and_p_values_agree():
    # issue 11 (second round), bug: with G < 8 the Gaussian multiplier's max-|z| comes
    # from a correlation of rank <= G - 1 (45 contrasts behaved like 3) and understated
    # the family level (family-wise coverage 0.72 with 4, 0.90 with 6 episodes)
    rng = np.random.default_rng(7)
    rows = []
    for g, n in enumerate([3, 5, 7, 9, 4, 6]):
        for i in range(n):
            for p, shift in (("A", 1.5), ("B", 0.0), ("C", -0.3), ("D", 0.2)):
                z = rng.normal() + shift
                rows.append(dict(planner=p, task_id=f"t{g}_{i}", episode_id=g,
                                 success=float(z > 0), validity=float(stats.norm.cdf(z))))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FewClustersWarning)
        r = pairwise_simultaneous(pd.DataFrame(rows), ["success", "validity"], n_resamples=4000)
    C = len(r.table)
    sidak = stats.norm.isf((1 - 0.95 ** (1 / C)) / 2)
    assert C == 12 and r.critical_value >= sidak - 1e-12
    t = r.table
    excl = (t.low > 0) | (t.high < 0)
    assert ((t.p_single_step <= 0.05 + 1e-9) | ~excl).all()
    assert ((t.p_single_step > 0.05 - 1e-9) | excl).all()
    assert (t.p_stepdown <= t.p_single_step + 1e-12).all()
    assert excl.any()


# ---------------------------------------------------------------- paired conditions

def test_paired_rare_outcome_difference_is_not_a_point_and_covers_zero():
    # both conditions 0 successes in 40 tasks: difference 0, zero SE
    rows = []
    for g in range(10):
        for i in range(4):
            for mem in ("persistent", "reset"):
                rows.append(dict(memory=mem, task_id=f"t{g}_{i}", episode_id=g, success=0,
                                 action_validity=0.5))
    r = paired_conditions(pd.DataFrame(rows), "memory", "persistent", "reset",
                          value_cols=("action_validity",), n_resamples=500)
    s = r.table.set_index("column").loc["success"]
    assert s.difference == 0 and s.low < -0.05 and s.high > 0.05
    assert s.method == "mover_kg_cp" and np.isnan(s.relative_change)


def test_bca_counts_rounding_level_replicates_as_ties():
    # issue 11, point 5: at G = 4-6 many replicates reproduce the estimate; whether
    # their ratio rounds just below or above it must not move the bias correction
    from analysis.stats.bootstrap import _bca_bounds
    S = np.array([[1.1], [0.7], [2.3], [0.9]])
    N = np.array([[2.0], [1.0], [3.0], [2.0]])
    theta = S.sum() / N.sum()
    exact = np.array([[theta]] * 4 + [[theta - 0.1]] * 3 + [[theta + 0.1]] * 3)
    noisy = exact.copy()
    noisy[:4, 0] = theta * (1 + np.array([-2e-16, 2e-16, -1e-16, 0.0]))
    a = _bca_bounds(np.array([theta]), exact, S, N, 0.025)
    b = _bca_bounds(np.array([theta]), noisy, S, N, 0.025)
    assert np.allclose(a, b, rtol=0, atol=0)
    # 3 below, 4 ties: z0 = ndtri((3 + 7) / 20) = 0, so the levels are the plain BCa ones
    assert a[0][0] < 0.5 < a[1][0]


def test_smoke_coverage_rare_rate_default_vs_old_bootstrap_t():
    # A small, fixed-seed Monte Carlo (the full study is bench/coverage.py): p = 0.05,
    # 18 unequal episodes, episode-level beta heterogeneity. The default holds; the old
    # bootstrap-t default (upper bound capped at 2 x estimate) misses far more often.
    from analysis.stats._core import cr1_se, pairs_weights
    from analysis.stats.bootstrap import interval_from_replicates
    from analysis.stats.intervals import column_df
    rng = np.random.default_rng(11)
    sizes = np.array([1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 8, 9, 10, 11, 12, 12])
    G, n = len(sizes), sizes.sum()
    cl = np.repeat(np.arange(G), sizes)
    p, rho = 0.05, 0.1
    a, b = p * (1 - rho) / rho, (1 - p) * (1 - rho) / rho
    hits_kg = hits_bt = 0
    sims = 300
    for _ in range(sims):
        x = (rng.random(n) < rng.beta(a, b, G)[cl]).astype(float)
        S = np.bincount(cl, x, G)[:, None]
        N = np.bincount(cl, None, G).astype(float)[:, None]
        th, se, z = cr1_se(S, N)
        s2 = x.var(ddof=1) if x.any() else 0.0
        lo, hi, _ = kg_interval(th, se * se, s2, n, column_df(S - th * N, N), 0.025)
        hits_kg += bool(lo[0] <= p <= hi[0])
        W = pairs_weights(rng, 200, G)
        lo, hi = interval_from_replicates("bootstrap_t", th, se, z, S, N, G, W, 0.025)
        hits_bt += bool(lo[0] <= p <= hi[0])
    assert hits_kg / sims >= 0.93
    assert hits_bt / sims < hits_kg / sims - 0.05


def test_tables_mode_marks_too_few_episodes_not_estimable():
    df = rates_df([1, 0, 1, 0, 2, 1, 0, 1], [3] * 8)
    df["tier_only"] = np.where(df.episode_id < "e02", df.success, np.nan)  # 2 episodes
    with pytest.warns(FewClustersWarning, match="not estimable"):
        r = cluster_bootstrap(df, ["success", "tier_only"], too_few="not_estimable")
    t = r.table.set_index("metric")
    assert t.loc["tier_only", "not_estimable"] and np.isnan(t.loc["tier_only", "low"])
    assert t.loc["tier_only", "estimate"] == pytest.approx(1 / 6)  # the point stands
    assert not t.loc["success", "not_estimable"] and t.loc["success", "high"] > 0
    with pytest.raises(ValueError, match="too_few"):
        cluster_bootstrap(df, ["success"], too_few="skip")

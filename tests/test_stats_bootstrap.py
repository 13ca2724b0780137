"""cluster_bootstrap against scipy.stats.bootstrap, closed forms and explicit loops."""

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from analysis.stats import cluster_bootstrap
from analysis.stats._core import cr1_se, pairs_weights

SIZES = [1, 2, 2, 3, 4, 5, 7, 9, 3, 2, 6, 1]


def make_df(seed=3, planners=("A", "B")):
    rng = np.random.default_rng(seed)
    rows = []
    for p in planners:
        for g, n in enumerate(SIZES):
            pe = rng.uniform(0.1, 0.8)
            for i in range(n):
                rows.append(dict(planner=p, episode_id=f"e{g:02d}", task_id=f"t{g}_{i}",
                                 success=int(rng.random() < pe), validity=rng.beta(2, 3)))
    return pd.DataFrame(rows)


def episode_arrays(df, planner, col):
    d = df[df.planner == planner].groupby("episode_id")[col].agg(["sum", "count"])
    return d["sum"].to_numpy(float), d["count"].to_numpy(float)


def ratio_stat(s, n, axis=-1):
    return s.sum(axis=axis) / n.sum(axis=axis)


@pytest.mark.parametrize("method", ["percentile", "basic", "bca"])
def test_agrees_with_scipy_bootstrap_same_resamples(method):
    df = make_df()
    B, seed = 2000, 11
    r = cluster_bootstrap(df, ["success", "validity"], method=method, n_resamples=B, seed=seed)
    t = r.table.set_index(["planner", "metric"])
    for p in ("A", "B"):
        for col in ("success", "validity"):
            s, n = episode_arrays(df, p, col)
            ref = stats.bootstrap((s, n), ratio_stat, paired=True, vectorized=True, n_resamples=B,
                                  method=method, rng=np.random.default_rng(seed))
            row = t.loc[(p, col)]
            assert row.estimate == pytest.approx(s.sum() / n.sum(), rel=1e-12)
            assert row.low == pytest.approx(ref.confidence_interval.low, rel=1e-9, abs=1e-12)
            assert row.high == pytest.approx(ref.confidence_interval.high, rel=1e-9, abs=1e-12)


def test_cr1_closed_form_by_hand():
    # per-episode sums 1, 2, 3 over counts 1, 2, 2: theta = 6/5, residuals -.2, -.4, .6
    df = pd.DataFrame({"episode_id": [1, 2, 2, 3, 3], "x": [1, 1, 1, 2, 1]})
    r = cluster_bootstrap(df, ["x"], by=(), method="cr1_t", n_resamples=10)
    row = r.table.iloc[0]
    se = np.sqrt(3 / 2 * 0.56) / 5
    assert row.estimate == pytest.approx(1.2)
    assert row.se == pytest.approx(se)
    q = stats.t.ppf(0.975, 2)
    assert (row.low, row.high) == pytest.approx((1.2 - q * se, 1.2 + q * se))
    assert r.n_resamples == 0 and r.method == "cr1_t"


def test_bootstrap_t_matches_explicit_loop():
    df = make_df(5, planners=("A",))
    B, seed = 300, 7
    r = cluster_bootstrap(df, ["validity"], method="bootstrap_t", n_resamples=B, seed=seed)
    s, n = episode_arrays(df, "A", "validity")
    G = len(s)
    theta, se, _ = cr1_se(s[:, None], n[:, None])
    idx = np.random.default_rng(seed).integers(0, G, (B, G))
    ts = []
    for row in idx:  # independent implementation: duplicate clusters explicitly
        sb, nb = s[row], n[row]
        th = sb.sum() / nb.sum()
        seb = np.sqrt(G / (G - 1) * ((sb - th * nb) ** 2).sum()) / nb.sum()
        ts.append((th - theta[0]) / seb)
    lo_q, hi_q = np.quantile(ts, [0.025, 0.975])
    row = r.table.iloc[0]
    assert row.low == pytest.approx(theta[0] - hi_q * se[0], rel=1e-9)
    assert row.high == pytest.approx(theta[0] - lo_q * se[0], rel=1e-9)


def test_weights_are_cluster_counts_of_scipy_indices():
    W = pairs_weights(np.random.default_rng(4), 50, 9)
    idx = np.random.default_rng(4).integers(0, 9, (50, 9))
    assert np.array_equal(W, np.stack([np.bincount(i, minlength=9) for i in idx]))
    assert (W.sum(axis=1) == 9).all()


def test_estimand_is_task_weighted_not_mean_of_episode_means():
    df = pd.DataFrame({"planner": "p", "episode_id": [1, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3],
                       "x": [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]})
    r = cluster_bootstrap(df, "x", n_resamples=100, method="bootstrap_t")
    assert r.table.estimate.iloc[0] == pytest.approx(1 / 12)  # not (1 + 0 + 0) / 3
    assert "task-weighted ratio" in r.estimand
    assert r.resampling_unit.startswith("episode")
    assert (r.seed, r.confidence_level, r.n_resamples) == (0, 0.95, 100)


def test_deterministic_for_seed_and_seed_matters():
    df = make_df()
    kw = dict(n_resamples=500, method="bootstrap_t")
    a = cluster_bootstrap(df, ["success"], seed=1, **kw).table
    b = cluster_bootstrap(df, ["success"], seed=1, **kw).table
    c = cluster_bootstrap(df, ["success"], seed=2, **kw).table
    pd.testing.assert_frame_equal(a, b)
    assert not np.allclose(a.low, c.low)


def test_zero_se_is_degenerate_without_warnings():
    df = pd.DataFrame({"planner": "p", "episode_id": [1, 1, 2, 3, 4, 5, 6, 7, 8],
                       "x": [1] * 9})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = cluster_bootstrap(df, ["x"], n_resamples=200, method="bootstrap_t")
        d = cluster_bootstrap(df, ["x"]).table.iloc[0]
    row = r.table.iloc[0]
    assert row.degenerate and row.se == 0 and row.low == row.high == 1.0
    # issue 11: the default never shows n/n as a point interval; it gives the exact
    # lower bound of 9/9 (Clopper-Pearson alpha/2^(1/n_eff), n_eff shrunk by the df factor)
    assert d.degenerate and d.method == "kg_cp" and d.high == 1.0
    fac = (stats.t.isf(0.025, 8) / stats.t.isf(0.025, d.n_clusters - 1)) ** 2
    assert d.low == pytest.approx(0.025 ** (1 / (9 * fac)))


def test_missing_values_and_separate_cluster_sets():
    df = make_df()
    df.loc[df.planner == "B", "validity"] = np.where(
        df.loc[df.planner == "B", "episode_id"] < "e04", df.loc[df.planner == "B", "validity"], np.nan)
    df = df[~((df.planner == "B") & (df.episode_id >= "e04"))]
    r = cluster_bootstrap(df, ["validity"], n_resamples=300).table.set_index("planner")
    assert r.loc["A", "n_clusters"] == len(SIZES) and r.loc["B", "n_clusters"] == 4
    assert r.loc["B", "n_records"] == sum(SIZES[:4])
    assert r.loc["B", "estimate"] == pytest.approx(df[df.planner == "B"].validity.mean())


def test_interval_covers_estimate_and_methods_differ():
    df = make_df()
    for m in ("auto", "kg_cp", "bootstrap_t", "cr1_t", "percentile", "basic", "bca"):
        t = cluster_bootstrap(df, ["validity"], method=m, n_resamples=400).table
        assert ((t.low <= t.estimate) & (t.estimate <= t.high)).all()


@pytest.mark.parametrize("kw,match", [
    (dict(method="normal"), "method='normal'.*bootstrap_t"),
    (dict(confidence_level=95), "confidence_level"),
    (dict(n_resamples=0), "n_resamples"),
    (dict(value_cols=["nope"]), "lacks column"),
])
def test_errors_name_parameter(kw, match):
    args = dict(df=make_df(), value_cols=["success"])
    args.update(kw)
    with pytest.raises(ValueError, match=match):
        cluster_bootstrap(**args)


@pytest.mark.parametrize("method", ["bootstrap_t", "percentile", "bca"])
def test_row_order_invariant_and_scale_equivariant(method):
    df = make_df(8)
    a = cluster_bootstrap(df, ["validity"], method=method, n_resamples=300, seed=3).table
    shuffled = df.sample(frac=1.0, random_state=1)
    b = cluster_bootstrap(shuffled, ["validity"], method=method, n_resamples=300, seed=3).table
    pd.testing.assert_frame_equal(a, b)
    scaled = df.assign(validity=df.validity * 7.0 + 0.0)
    c = cluster_bootstrap(scaled, ["validity"], method=method, n_resamples=300, seed=3).table
    assert np.allclose(c[["estimate", "low", "high", "se"]], 7.0 * a[["estimate", "low", "high", "se"]])


def test_bootstrap_t_finite_near_boundary():
    # 17 of 18 episodes all-success: many replicates have zero SE; interval stays finite
    rows = [dict(planner="p", episode_id=g, x=1) for g in range(17) for _ in range(5)]
    rows += [dict(planner="p", episode_id=17, x=0), dict(planner="p", episode_id=17, x=1)]
    df = pd.DataFrame(rows)
    t = cluster_bootstrap(df, ["x"], n_resamples=2000, seed=0, method="bootstrap_t").table.iloc[0]
    assert np.isfinite(t.low) and np.isfinite(t.high)
    assert t.estimate == pytest.approx(86 / 87)
    assert t.low < t.estimate <= t.high


def test_bounds_clip_rates():
    df = pd.DataFrame({"planner": "p", "episode_id": np.arange(18).repeat(5),
                       "x": np.r_[1, np.zeros(89)]})
    raw = cluster_bootstrap(df, ["x"], method="cr1_t").table.iloc[0]
    assert raw.low < 0
    t = cluster_bootstrap(df, ["x"], method="cr1_t", bounds=(0, 1)).table.iloc[0]
    assert t.low == 0 and t.high == raw.high
    with pytest.raises(ValueError, match="bounds"):
        cluster_bootstrap(df, ["x"], bounds=(1, 0))


@pytest.mark.parametrize("kind", ["continuous", "heavy_ties", "constant_columns"])
def test_per_column_quantiles_equal_numpy_exactly(kind):
    # the BCa path finds its two order statistics per level from a bracketed subset
    # (_order_stat_pairs) instead of a partial sort; oracle: np.quantile per column,
    # bit for bit, including ranks 0 and B - 1 and data where brackets must fall back
    from analysis.stats._core import quantile

    rng = np.random.default_rng(3)
    B, J = 10_000, 9
    a = rng.standard_normal((B, J))
    if kind == "heavy_ties":
        a = np.round(a, 0)  # five or so distinct values: brackets swallow whole ties
    elif kind == "constant_columns":
        a[:, :3] = 0.25
    levels = np.vstack([np.r_[0.0, 1e-5, 0.003, 0.025, 0.2, 0.5, 0.77, 0.975, 0.999],
                        np.r_[1.0, 0.9999, 0.997, 0.975, 0.8, 0.5, 0.23, 0.025, 0.001]])
    got = quantile(a, levels)
    ref = np.array([[np.quantile(a[:, j], levels[i, j]) for j in range(J)] for i in range(2)])
    assert np.array_equal(got, ref)

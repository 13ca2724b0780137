"""pairwise_simultaneous: closed forms, explicit-loop oracles and properties."""

import itertools
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from analysis.stats import PAIRWISE_DEFAULT_METHOD, pairwise_simultaneous
from analysis.stats.pairwise import _stepdown, satterthwaite_df

SIZES = [2, 3, 3, 4, 5, 6, 8, 2, 4, 7, 3, 5]


def make_df(seed=0, planners=("A", "B", "C", "D"), shift=None, sizes=SIZES):
    rng = np.random.default_rng(seed)
    shift = shift or {}
    rows = []
    for g, n in enumerate(sizes):
        for i in range(n):
            diff = rng.normal()
            for p in planners:
                z = diff + rng.normal(0, 0.7) + shift.get(p, 0.0)
                rows.append(dict(planner=p, task_id=f"t{g}_{i}", episode_id=f"e{g:02d}",
                                 success=int(z > 0), validity=float(stats.norm.cdf(z))))
    return pd.DataFrame(rows)


def hand_contrast(df, a, b, col):
    w = df.pivot(index="task_id", columns="planner", values=col)
    ep = df.drop_duplicates("task_id").set_index("task_id").episode_id.loc[w.index]
    d = (w[a] - w[b]).groupby(ep.to_numpy()).agg(["sum", "count"])
    D, N = d["sum"].to_numpy(), d["count"].to_numpy()
    G = len(D)
    th = D.sum() / N.sum()
    se = np.sqrt(G / (G - 1) * ((D - th * N) ** 2).sum()) / N.sum()
    return th, se, D, N


def test_estimates_and_cr1_se_match_closed_form():
    df = make_df()
    r = pairwise_simultaneous(df, ["success", "validity"], method="bonferroni_t")
    assert len(r.table) == 6 * 2 and r.family_size == 12
    for row in r.table.itertuples():
        th, se, _, _ = hand_contrast(df, row.planner_a, row.planner_b, row.metric)
        assert row.estimate == pytest.approx(th, abs=1e-12)
        assert row.se == pytest.approx(se, rel=1e-10)


def test_bonferroni_critical_value_and_holm():
    df = make_df(shift={"A": 1.0})
    r = pairwise_simultaneous(df, ["success", "validity"], method="bonferroni_t")
    G, m = len(SIZES), 12
    assert r.critical_value == pytest.approx(stats.t.ppf(1 - 0.05 / (2 * m), G - 1))
    t = r.table
    praw = 2 * stats.t.sf(np.abs(t.estimate / t.se), G - 1)
    assert np.allclose(t.p_single_step, np.minimum(1, m * praw))
    order = np.argsort(praw)
    holm = np.maximum.accumulate(np.minimum(1, (m - np.arange(m)) * praw[order]))
    assert np.allclose(t.p_stepdown.to_numpy()[order], holm)


def test_pairs_maxt_critical_value_matches_explicit_loop():
    df = make_df(3, planners=("A", "B", "C"))
    B, seed = 200, 5
    r = pairwise_simultaneous(df, ["validity"], method="pairs_maxt_studentized", n_resamples=B, seed=seed)
    cons = [hand_contrast(df, a, b, "validity") for a, b in [("A", "B"), ("A", "C"), ("B", "C")]]
    G = len(SIZES)
    idx = np.random.default_rng(seed).integers(0, G, (B, G))
    mx = []
    for row in idx:
        ts = []
        for th, se, D, N in cons:
            Db, Nb = D[row], N[row]
            thb = Db.sum() / Nb.sum()
            seb = np.sqrt(G / (G - 1) * ((Db - thb * Nb) ** 2).sum()) / Nb.sum()
            ts.append(abs(thb - th) / seb)
        mx.append(max(ts))
    assert r.critical_value == pytest.approx(np.quantile(mx, 0.95), rel=1e-9)
    t_obs = np.abs(r.table.estimate / r.table.se).to_numpy()
    assert np.allclose(r.table.p_single_step, [(np.array(mx) >= t).mean() for t in t_obs])


def test_default_single_contrast_equal_clusters_reduces_to_t():
    # one contrast, equal episode sizes: Satterthwaite df = G - 1, max|z| quantile ~ 1.96
    df = make_df(1, planners=("A", "B"), sizes=[4] * 15)
    r = pairwise_simultaneous(df, ["validity"], n_resamples=20_000, seed=2, method="satt_maxt_tcal")
    assert r.method == "satt_maxt_tcal"
    assert r.critical_value == pytest.approx(stats.t.ppf(0.975, 14), abs=0.04)
    assert satterthwaite_df(np.random.default_rng(0).normal(size=(15, 3)), [4] * 15) == pytest.approx(14)


def test_family_critical_value_between_single_and_bonferroni():
    df = make_df(2)
    m = 12
    for meth in ("satt_maxt_tcal", "gauss_maxt_tcal", "pairs_maxt_studentized"):
        r = pairwise_simultaneous(df, ["success", "validity"], method=meth, n_resamples=2000)
        assert stats.norm.ppf(0.975) < r.critical_value
        if meth == "gauss_maxt_tcal":
            assert r.critical_value <= stats.t.ppf(1 - 0.05 / (2 * m), len(SIZES) - 1) + 1e-9


def test_verdicts_and_tie_rule():
    df = make_df(4, shift={"A": 2.5})
    r = pairwise_simultaneous(df, ["validity"], n_resamples=2000).table
    for row in r.itertuples():
        contains0 = row.low <= 0 <= row.high
        assert (row.verdict == "tie") == contains0
        if row.planner_a == "A":
            assert row.verdict == "a>b"
        if row.planner_b == "A":
            assert row.verdict == "b>a"


def test_zero_se_contrasts_set_aside_without_division():
    df = make_df(6, planners=("A", "B", "C"))
    dup = df[df.planner == "A"].copy()
    dup["planner"] = "A2"  # identical to A: contrast A - A2 is 0 in every task
    df = pd.concat([df, dup])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = pairwise_simultaneous(df, ["success", "validity"], n_resamples=500,
                                  method="satt_maxt_tcal")
    sa = r.table[r.table.set_aside]
    assert set(zip(sa.planner_a, sa.planner_b)) == {("A", "A2")}
    assert (sa.se == 0).all() and (sa.estimate == 0).all() and (sa.verdict == "tie").all()
    assert sa.p_single_step.isna().all()
    assert len(r.set_aside) == 2 and r.family_size == len(r.table) - 2


def test_stepdown_matches_brute_force_and_is_below_single_step():
    rng = np.random.default_rng(0)
    null = np.abs(rng.standard_normal((400, 5)))
    obs = np.array([2.5, 0.3, 1.9, 3.1, 1.0])
    p = _stepdown(null, obs)
    order = np.argsort(-obs)
    brute = []
    for j in range(5):
        rest = order[j:]
        brute.append((null[:, rest].max(axis=1) >= obs[order[j]]).mean())
    brute = np.maximum.accumulate(brute)
    assert np.allclose(p[order], brute)
    single = (null.max(axis=1)[:, None] >= obs).mean(axis=0)
    assert np.all(p <= single + 1e-12)


def test_result_records_and_determinism():
    df = make_df()
    a = pairwise_simultaneous(df, ["success"], n_resamples=300, seed=9)
    b = pairwise_simultaneous(df, ["success"], n_resamples=300, seed=9)
    pd.testing.assert_frame_equal(a.table, b.table)
    assert (a.n_resamples, a.seed, a.confidence_level, a.n_clusters) == (300, 9, 0.95, len(SIZES))
    assert a.resampling_unit.startswith("episode") and "task-weighted" in a.estimand
    assert list(a.table.columns[:3]) == ["planner_a", "planner_b", "metric"]
    assert set(a.table.verdict) <= {"a>b", "b>a", "tie"}
    pairs = list(itertools.combinations(["A", "B", "C", "D"], 2))
    assert list(zip(a.table.planner_a, a.table.planner_b)) == pairs


def test_errors():
    df = make_df()
    with pytest.raises(ValueError, match="method='maxt'.*allowed"):
        pairwise_simultaneous(df, ["success"], method="maxt")
    with pytest.raises(ValueError, match="same task_id set"):
        pairwise_simultaneous(df.iloc[1:], ["success"])
    with pytest.raises(ValueError, match="duplicates"):
        pairwise_simultaneous(pd.concat([df, df.iloc[:1]]), ["success"])


def test_stepdown_from_row_blocks_equals_the_whole_matrix():
    # pins the memory fix of issue 13: the multiplier null is processed in row blocks
    rng = np.random.default_rng(3)
    null = np.abs(rng.standard_normal((1003, 7)))
    obs = np.abs(rng.standard_normal(7)) * 2
    whole = _stepdown(null, obs)
    blocks = _stepdown((null[i:i + 100] for i in range(0, 1003, 100)), obs)
    assert np.array_equal(whole, blocks)


def test_default_family_does_not_depend_on_the_null_block_size(monkeypatch):
    """The default's max-|z| quantile, p-values and intervals are the same whether the
    multiplier null is built in one block or in many (pins the x4-planner memory fix)."""
    import analysis.stats.mover as pw
    df = make_df(seed=11, planners=("A", "B", "C", "D", "E"), shift={"B": 0.8})
    monkeypatch.setattr(pw, "NULL_BLOCK", 10**9)
    one = pairwise_simultaneous(df, ["success", "validity"], n_resamples=2000, seed=4).table
    monkeypatch.setattr(pw, "NULL_BLOCK", 7)
    many = pairwise_simultaneous(df, ["success", "validity"], n_resamples=2000, seed=4).table
    pd.testing.assert_frame_equal(one, many, check_exact=True)

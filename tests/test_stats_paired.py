"""paired_conditions, McNemar and the cluster sign-flip test."""

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from analysis.stats import mcnemar_exact, paired_conditions, sign_flip_p
from analysis.stats.paired import sign_flip_enumerate


def brute_sign_flip(d):
    d = np.asarray(d, float)
    obs = abs(d.sum())
    pats = np.array(list(itertools.product([1, -1], repeat=len(d))))
    return float((np.abs(pats @ d) >= obs - 1e-9).mean())


@given(st.lists(st.integers(-4, 4), min_size=1, max_size=10))
@settings(max_examples=60, deadline=None)
def test_sign_flip_equals_brute_force(d):
    assert sign_flip_p(d) == pytest.approx(brute_sign_flip(d), abs=1e-12)


def test_sign_flip_enumeration_non_integer_and_chunks():
    rng = np.random.default_rng(1)
    d = rng.normal(size=9)
    assert sign_flip_enumerate(d, chunk=37) == pytest.approx(brute_sign_flip(d))
    d = np.array([3, -1, 0, 2, 0, 1, -2, 4, 1, 1, 0, -3, 2, 2, 1, 5, -1, 2, 1, 3, 2, 1])  # G = 22
    assert sign_flip_p(d) == pytest.approx(sign_flip_enumerate(d.astype(float), chunk=1 << 15))


@pytest.mark.parametrize("a,b", [(0, 0), (2, 2), (5, 1), (0, 7), (13, 4)])
def test_mcnemar_equals_binomtest(a, b):
    expect = 1.0 if a + b == 0 else stats.binomtest(a, a + b, 0.5).pvalue
    assert mcnemar_exact(a, b) == pytest.approx(expect)


def memory_df(cells_by_episode, validity=None, queries=None):
    """cells_by_episode: list of (both, only_p, only_r, neither) per episode."""
    rows = []
    k = 0
    for g, cells in enumerate(cells_by_episode):
        outs = [(1, 1)] * cells[0] + [(1, 0)] * cells[1] + [(0, 1)] * cells[2] + [(0, 0)] * cells[3]
        for sp, sr in outs:
            for mem, s in (("persistent", sp), ("reset", sr)):
                rows.append(dict(memory=mem, task_id=f"t{k}", episode_id=f"e{g:02d}", success=s,
                                 action_validity=0.0, query_attempts=1, prompt_tokens=10,
                                 completion_tokens=1))
            k += 1
    return pd.DataFrame(rows)


def test_paper_memory_figures_6_of_51_each():
    # 4 joint successes, 2 + 2 discordant, 43 neither (Table 18), across 6 episodes
    eps = [(2, 1, 0, 7), (1, 0, 1, 8), (1, 1, 0, 6), (0, 0, 1, 9), (0, 0, 0, 7), (0, 0, 0, 6)]
    df = memory_df(eps)
    r = paired_conditions(df, "memory", "persistent", "reset", n_resamples=500)
    assert r.contingency == {"both": 4, "only_a": 2, "only_b": 2, "neither": 43}
    row = r.table.set_index("column").loc["success"]
    assert row.sum_a == row.sum_b == 6
    assert round(100 * row.difference, 2) == 0.0
    assert r.mcnemar_p == 1.0 and "independent tasks" in r.mcnemar_note
    assert r.sign_flip_p == 1.0 and r.n_sign_patterns == 2**6
    assert r.discordant.only_a.tolist() == [1, 0, 1, 0, 0, 0]
    assert r.discordant.only_b.tolist() == [0, 1, 0, 1, 0, 0]
    assert r.discordant.n_tasks.sum() == 51


def test_paper_validity_difference_4_15_pp():
    df = memory_df([(0, 0, 0, 25)] * 4)
    n = 100
    rng = np.random.default_rng(0)
    base = rng.uniform(0.2, 0.6, n)
    p = base - base.mean() + 0.4594
    r_ = base - base.mean() + 0.4179 + rng.normal(0, 0.01, n)
    r_ = r_ - r_.mean() + 0.4179
    df.loc[df.memory == "persistent", "action_validity"] = p
    df.loc[df.memory == "reset", "action_validity"] = r_
    res = paired_conditions(df, "memory", "persistent", "reset", n_resamples=500).table.set_index("column")
    row = res.loc["action_validity"]
    assert round(100 * row.mean_a, 2) == 45.94 and round(100 * row.mean_b, 2) == 41.79
    assert round(100 * row.difference, 2) == 4.15
    assert row.low <= row.difference <= row.high


def test_relative_change_and_bootstrap_t_interval():
    df = memory_df([(1, 1, 0, 3), (0, 1, 1, 2), (1, 0, 0, 4), (0, 2, 0, 1)])
    df.loc[df.memory == "reset", "query_attempts"] = 10  # persistent 1 per task
    r = paired_conditions(df, "memory", "persistent", "reset", n_resamples=1000, seed=3)
    t = r.table.set_index("column")
    assert t.loc["query_attempts", "relative_change"] == pytest.approx(-0.9)
    assert t.loc["query_attempts", "difference"] == pytest.approx(-9.0)
    # constant per-task difference: zero SE, degenerate interval at the point
    assert t.loc["query_attempts", "se"] == 0
    assert t.loc["query_attempts", "low"] == t.loc["query_attempts", "high"] == -9.0
    s = t.loc["success"]
    assert s.difference == pytest.approx((4 - 1) / 17)
    assert s.low < s.difference < s.high
    assert r.sign_flip_p == pytest.approx(brute_sign_flip([1, 0, 0, 2]))
    r2 = paired_conditions(df, "memory", "persistent", "reset", n_resamples=1000, seed=3)
    pd.testing.assert_frame_equal(r.table, r2.table)


def test_errors():
    df = memory_df([(1, 0, 0, 1), (0, 1, 0, 1)])
    with pytest.raises(ValueError, match="b='none' is not a value of memory"):
        paired_conditions(df, "memory", "persistent", "none")
    with pytest.raises(ValueError, match="same task_id set"):
        paired_conditions(df.iloc[1:], "memory", "persistent", "reset")
    three = memory_df([(1, 0, 0, 1), (0, 1, 0, 1), (0, 0, 1, 1)])
    moved = three.copy()
    moved.loc[(moved.memory == "reset") & (moved.task_id == "t0"), "episode_id"] = "e09"
    with pytest.raises(ValueError, match="t0.*different episode_ids.*'e00' vs 'e09'"):
        paired_conditions(moved, "memory", "persistent", "reset")
    nan = three.copy()
    nan.loc[3, "episode_id"] = None
    with pytest.raises(ValueError, match="episode_id is missing.*1 row"):
        paired_conditions(nan, "memory", "persistent", "reset")
    with pytest.raises(ValueError, match="only 2 episode"):
        paired_conditions(df, "memory", "persistent", "reset")
    bad = df.copy()
    bad["success"] = 0.5
    with pytest.raises(ValueError, match="binary"):
        paired_conditions(bad, "memory", "persistent", "reset")

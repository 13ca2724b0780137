"""Issue 11 (power round): the non-default family methods ``mover_wilson_maxz`` and
``cr2bm_mover_maxz`` and their building blocks.

Oracles: scipy's Wilson interval, the CR2 / Bell-McCaffrey matrices built explicitly
(matrix square roots and eigenvalues), and hand computation from the data.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import linalg, stats

from analysis.stats import PAIRWISE_DEFAULT_METHOD, PAIRWISE_METHODS, pairwise_simultaneous
from analysis.stats._core import FewClustersWarning
from analysis.stats.intervals import (bell_mccaffrey_df, cr2_se, kg_interval,
                                      kg_wilson_interval, satterthwaite_df)

CANDIDATES = ("mover_wilson_maxz", "cr2bm_mover_maxz")
SIZES = [2, 3, 3, 4, 5, 6, 8, 2, 4, 7, 3, 5, 9, 2]


def test_candidates_are_listed_and_not_the_default():
    assert set(CANDIDATES) <= set(PAIRWISE_METHODS)
    assert PAIRWISE_DEFAULT_METHOD == "mover_kg_maxz"


# ---------------------------------------------------------------- building blocks

@pytest.mark.parametrize("k,n", [(1, 30), (7, 40), (25, 50), (39, 40)])
def test_kg_wilson_is_the_wilson_interval_without_design_effect(k, n):
    # v = binomial variance (n_eff = n) and a normal quantile (df -> inf): scipy's Wilson
    th = k / n
    lo, hi, neff = kg_wilson_interval(th, th * (1 - th) / n, th * (1 - th), n, 1e12, 0.025)
    ci = stats.binomtest(k, n).proportion_ci(0.95, method="wilson")
    assert neff == pytest.approx(n)
    assert lo == pytest.approx(ci.low, abs=1e-9) and hi == pytest.approx(ci.high, abs=1e-9)


def test_kg_wilson_design_effect_and_df_enter_as_n_eff_and_t_quantile():
    n, k, df = 100, 20, 11
    th, v = k / n, 3 * 0.2 * 0.8 / 100  # design effect 3: n_eff = 100 / 3
    lo, hi, neff = kg_wilson_interval(th, v, th * (1 - th), n, df, 0.005)
    q = stats.t.isf(0.005, df)
    ne = n / 3
    centre = (th * ne + q * q / 2) / (ne + q * q)
    half = q / (ne + q * q) * np.sqrt(th * (1 - th) * ne + q * q / 4)
    assert neff == pytest.approx(ne)
    assert lo == pytest.approx(centre - half) and hi == pytest.approx(centre + half)
    # narrower than Korn-Graubard Clopper-Pearson inside (0, 1)
    lo_cp, hi_cp, _ = kg_interval(th, v, th * (1 - th), n, df, 0.005)
    assert hi - lo < hi_cp - lo_cp


def test_kg_wilson_at_zero_and_at_level_one():
    lo, hi, _ = kg_wilson_interval(0.0, 0.0, 0.0, 40, 9, 0.025)
    q = stats.t.isf(0.025, 9)
    assert lo == 0.0 and hi == pytest.approx(q * q / (40 + q * q))
    lo, hi, _ = kg_wilson_interval(0.3, 0.01, 0.0, 40, 9, 0.0)  # infinite quantile
    assert lo == 0.0 and hi == 1.0


def explicit_cr2(y, cl):
    """CR2 variance and Bell-McCaffrey df of a mean by the textbook matrices."""
    n = len(y)
    X = np.ones((n, 1))
    H = X @ X.T / n
    e = y - y.mean()
    meat, B = 0.0, []
    for g in np.unique(cl):
        m = cl == g
        A = linalg.inv(linalg.sqrtm(np.eye(m.sum()) - H[np.ix_(m, m)])).real
        meat += (X[m].T @ A @ e[m]) ** 2
        a = np.zeros(n)
        a[m] = (A @ X[m]).ravel() / n  # (X'X)^-1 X_g' A_g, placed on cluster g
        B.append((np.eye(n) - H) @ a)
    B = np.array(B).T
    lam = linalg.eigvalsh(B.T @ B)
    return float(meat[0] / n ** 2), float(lam.sum() ** 2 / (lam ** 2).sum())


def test_cr2_se_and_bell_mccaffrey_df_match_the_explicit_matrices():
    rng = np.random.default_rng(3)
    cl = np.repeat(np.arange(len(SIZES)), SIZES)
    y = rng.normal(size=len(cl)) + rng.normal(size=len(SIZES))[cl]
    v, df = explicit_cr2(y, cl)
    E = np.bincount(cl, weights=y - y.mean())[:, None]
    assert cr2_se(E, SIZES)[0] ** 2 == pytest.approx(v, rel=1e-10)
    assert bell_mccaffrey_df(SIZES) == pytest.approx(df, rel=1e-10)
    assert 1 < df < len(SIZES) - 1


def test_cr2_equals_cr1_and_bm_df_is_g_minus_1_for_equal_episodes():
    E = np.array([[1.0], [-2.0], [0.5], [0.5]])
    G, n = 4, 12
    assert cr2_se(E, [3] * 4)[0] == pytest.approx(np.sqrt(G / (G - 1) * (E ** 2).sum()) / n)
    assert bell_mccaffrey_df([3] * 4) == pytest.approx(3.0)
    # the Satterthwaite df of the default with a pure task-level model agrees
    assert bell_mccaffrey_df(SIZES) == pytest.approx(
        satterthwaite_df(np.sqrt(np.array(SIZES, float))[:, None], SIZES), rel=0.01)


# ---------------------------------------------------------------- the family methods

def rates_df(successes_per_episode, sizes, planner):
    rows = []
    for g, (k, n) in enumerate(zip(successes_per_episode, sizes)):
        for i in range(n):
            rows.append(dict(planner=planner, episode_id=f"e{g:02d}", task_id=f"t{g}_{i}",
                             success=float(i < k)))
    return pd.DataFrame(rows)


@pytest.mark.parametrize("method", CANDIDATES)
def test_zero_se_contrast_is_never_a_point_interval(method):
    sizes = [4] * 10
    df = pd.concat([rates_df([0] * 10, sizes, "a"), rates_df([0] * 10, sizes, "b")])
    r = pairwise_simultaneous(df, ["success"], n_resamples=2000, method=method)
    row = r.table.iloc[0]
    assert row.zero_se and not row.set_aside and row.verdict == "tie"
    assert row.p_single_step == 1.0
    # one contrast with no active SE: the level is 95%; each mean 0 of 40 tasks, df G - 1
    q = stats.t.isf(0.025, 9)
    U = q * q / (40 + q * q) if method == "mover_wilson_maxz" else \
        kg_interval(0.0, 0.0, 0.0, 40, 9, 0.025)[1]
    assert row.low == pytest.approx(-U) and row.high == pytest.approx(U) and U > 0.05


def mixed_df(seed=4):
    rng = np.random.default_rng(seed)
    rows = []
    for g, n in enumerate(SIZES):
        for i in range(n):
            d = rng.normal()
            for p, shift in (("A", 1.0), ("B", 0.0), ("C", -0.2), ("D", 0.3)):
                z = d + rng.normal(0, 0.8) + shift
                rows.append(dict(planner=p, task_id=f"t{g}_{i}", episode_id=g,
                                 success=float(z > 0.5), validity=float(stats.norm.cdf(z)),
                                 rare=float(z > 2.9)))
    return pd.DataFrame(rows)


def test_cr2bm_contrast_away_from_bounds_is_t_with_cr2_and_bm_df_by_hand():
    df = mixed_df()
    r = pairwise_simultaneous(df, ["validity"], n_resamples=4000, method="cr2bm_mover_maxz")
    row = r.table[(r.table.planner_a == "A") & (r.table.planner_b == "B")].iloc[0]
    w = df.pivot(index="task_id", columns="planner", values="validity")
    ep = df.drop_duplicates("task_id").set_index("task_id").episode_id.loc[w.index]
    d = w.A - w.B
    E = (d - d.mean()).groupby(ep).sum()
    n_g = ep.value_counts().sort_index().to_numpy(float)
    n, G = n_g.sum(), len(n_g)
    se2 = np.sqrt((E.sort_index().to_numpy() ** 2 / (1 - n_g / n)).sum()) / n
    se1 = np.sqrt(G / (G - 1) * (E ** 2).sum()) / n
    a = stats.norm.sf(r.critical_value)
    half = max(stats.t.isf(a, bell_mccaffrey_df(n_g)) * se2, stats.t.isf(a, G - 1) * se1)
    assert row.estimate == pytest.approx(d.mean()) and row.se == pytest.approx(se1)
    assert row.low == pytest.approx(d.mean() - half) and row.high == pytest.approx(d.mean() + half)


def test_cr2bm_uses_the_default_mover_interval_for_rare_rates():
    # the rare metric has fewer than 10 effective successes per planner: same interval as
    # the default (same seed, so the same multiplier draws and family level)
    df = mixed_df()
    assert df.groupby("planner").rare.sum().max() < 10
    kw = dict(n_resamples=3000, seed=5)
    a = pairwise_simultaneous(df, ["rare", "validity"], method="cr2bm_mover_maxz", **kw).table
    b = pairwise_simultaneous(df, ["rare", "validity"], method="mover_kg_maxz", **kw).table
    rare = a.metric == "rare"
    assert np.allclose(a[rare][["low", "high"]], b[rare][["low", "high"]], rtol=0, atol=1e-12)
    assert not np.allclose(a[~rare][["low", "high"]], b[~rare][["low", "high"]])


@pytest.mark.parametrize("method", CANDIDATES)
def test_candidate_p_values_agree_with_verdicts(method):
    r = pairwise_simultaneous(mixed_df(), ["success", "validity", "rare"], n_resamples=4000,
                              method=method)
    t = r.table
    excl = (t.low > 0) | (t.high < 0)
    assert ((t.p_single_step <= 0.05 + 1 / 4000) | ~excl).all()
    assert ((t.p_single_step > 0.05 - 1 / 4000) | excl).all()
    assert (t.p_stepdown <= t.p_single_step + 1e-12).all()
    assert excl.any() and (~excl).any() and r.method == method


@pytest.mark.parametrize("method", CANDIDATES)
def test_candidates_keep_the_few_episode_sidak_level(method):
    df = mixed_df()
    df = df[df.episode_id < 5]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FewClustersWarning)
        r = pairwise_simultaneous(df, ["success", "validity"], n_resamples=2000, method=method)
    C = len(r.table)
    assert r.critical_value >= stats.norm.isf((1 - 0.95 ** (1 / C)) / 2) - 1e-12
    assert "fewer than 8 episodes" in r.note and r.warnings

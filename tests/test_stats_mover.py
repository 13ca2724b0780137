"""The default pairwise family as named stages (analysis/stats/mover.py): its options
object, its result dataclass, the experimental methods' new home, and the size limits
of issue 36 on analysis/stats/ and analysis/metrics.py."""

import ast
import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import special, stats

import analysis.stats.pairwise as pw
from analysis.stats import pairwise_simultaneous
from analysis.stats.experimental.maxt import maxt_family
from analysis.stats.mover import EpisodeSums, MoverFamily, MoverOptions, mover_family

REPO = Path(__file__).resolve().parents[1]

# Two planners, one 0/1 metric, 8 episodes of 4 tasks: successes per episode.
A = np.array([1, 2, 0, 1, 2, 1, 0, 2], float)   # 9 of 32
B = np.array([3, 4, 2, 4, 3, 4, 3, 4], float)   # 27 of 32


def two_planners():
    S = np.column_stack([A, B])
    return EpisodeSums(S=S, Q=S, n_g=np.full(8, 4.0), n_planners=2, n_metrics=1,
                       bounded=np.array([True]))


def as_frame():
    """The same data as one row per (planner, task)."""
    rows = []
    for g in range(8):
        for i in range(4):
            for p, col in (("a", A), ("b", B)):
                rows.append(dict(planner=p, task_id=f"t{g}_{i}", episode_id=g,
                                 success=int(i < col[g])))
    return pd.DataFrame(rows)


def test_hand_checked_contrast_and_its_floor():
    f = mover_family(two_planners(), 0.95, 2000, np.random.default_rng(0))
    assert f.pairs == [(0, 1)]
    assert f.estimate[0] == (9 - 27) / 32
    # CR1 SE of the difference by hand: d_g = a_g - b_g, theta = -18/32, n_g = 4
    d = A - B
    se = np.sqrt(8 / 7 * ((d - (-18 / 32) * 4) ** 2).sum()) / 32
    assert f.se[0] == pytest.approx(se, rel=1e-12)
    # one contrast: the max-|z| quantile is that of |N(0, 1)|, and with 8 episodes no Sidak
    assert f.critical_value == pytest.approx(1.96, abs=0.08)
    assert f.per_contrast_level == pytest.approx(1 - 2 * special.ndtr(-f.critical_value))
    # the contrast floor: each half-width at least t_{G-1} se at the per-contrast level
    q = stats.t.isf(special.ndtr(-f.critical_value), 7)
    assert f.estimate[0] - f.low[0] >= q * se - 1e-12
    assert f.high[0] - f.estimate[0] >= q * se - 1e-12
    assert f.high[0] < 0 and f.p_single_step[0] < 0.05 and f.p_stepdown[0] <= f.p_single_step[0]


def test_same_fields_whatever_the_options_and_pvalues_nan_when_not_asked():
    names = [fl.name for fl in dataclasses.fields(MoverFamily)]
    full = mover_family(two_planners(), 0.95, 500, np.random.default_rng(3))
    for opts in (MoverOptions(pvalues=False), MoverOptions(df_mode="pooled", pvalues=False),
                 MoverOptions(floor=None, few_sidak=False), MoverOptions(single="wilson"),
                 MoverOptions(contrast="cr2bm", pvalues=False)):
        f = mover_family(two_planners(), 0.95, 500, np.random.default_rng(3), opts)
        assert [fl.name for fl in dataclasses.fields(f)] == names
        assert f.low.shape == f.p_single_step.shape == (1,)
        assert np.isnan(f.p_single_step).all() == (not opts.pvalues)
    # the p-values do not change the intervals (same seed, same multipliers)
    lean = mover_family(two_planners(), 0.95, 500, np.random.default_rng(3),
                        MoverOptions(pvalues=False))
    assert (lean.low, lean.high, lean.critical_value) == (full.low, full.high, full.critical_value)
    # bounds(z) at the family's own z is the interval
    assert np.array_equal(np.column_stack(full.bounds(np.array([full.critical_value]))),
                          np.column_stack([full.low, full.high]))


def test_pairwise_simultaneous_is_the_family_laid_out_as_a_table():
    t = pairwise_simultaneous(as_frame(), "success", n_resamples=500, seed=5).table
    f = mover_family(two_planners(), 0.95, 500, np.random.default_rng(5))
    row = t.iloc[0]
    assert (row.planner_a, row.planner_b, row.estimate) == ("a", "b", -0.5625)
    assert (row.low, row.high, row.p_single_step, row.p_stepdown) == (
        f.low[0], f.high[0], f.p_single_step[0], f.p_stepdown[0])
    assert row.verdict == "b>a"


@pytest.mark.parametrize("kw, name, allowed", [
    (dict(df_mode="G-1"), "df_mode", "['contrast', 'g1', 'metric', 'pooled', 'satt']"),
    (dict(floor="t"), "floor", "['g1', None]"),
    (dict(single="score"), "single", "['cp', 'wilson']"),
    (dict(contrast="cr2"), "contrast", "['cr2bm', 'mover']"),
])
def test_options_refuse_an_unknown_value_naming_the_parameter(kw, name, allowed):
    with pytest.raises(ValueError) as e:
        MoverOptions(**kw)
    msg = str(e.value)
    assert msg.startswith(f"{name}={next(iter(kw.values()))!r}") and allowed in msg


def test_experimental_methods_run_through_pairwise_simultaneous():
    """Bonferroni-t moved to stats/experimental: same table as before, by hand."""
    t = pairwise_simultaneous(as_frame(), "success", method="bonferroni_t").table.iloc[0]
    crit = stats.t.ppf(1 - 0.05 / 2, 7)   # one contrast: Bonferroni is t(G-1) at 97.5%
    assert t.low == pytest.approx(-0.5625 - crit * t.se, abs=1e-12)
    f = maxt_family("bonferroni_t", two_planners().S, np.full(8, 4.0), 2, 1, True, 0.05, 10,
                    np.random.default_rng(0))
    assert (f.low[0], f.high[0], f.critical_value) == (t.low, t.high, crit)


def test_old_names_stay_importable_from_the_pairwise_module():
    for name in ("mover_family", "MOVER_METHODS", "NEAR_BOUND_COUNT", "contrast_matrix",
                 "family_inference", "jackknife_se", "effective_clusters", "satterthwaite_df",
                 "_stepdown", "METHODS", "DEFAULT_METHOD", "PairwiseResult"):
        assert hasattr(pw, name), name
    assert set(pw.MOVER_METHODS) == {"mover_kg_maxz", "mover_wilson_maxz", "cr2bm_mover_maxz"}
    assert pw.MOVER_METHODS["mover_kg_maxz"] == MoverOptions()


def _sizes(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    funcs = [(n.name, n.end_lineno - n.lineno + 1) for n in ast.walk(tree)
             if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return len(path.read_text(encoding="utf-8").splitlines()), funcs


def test_no_function_over_120_lines_and_no_module_over_600_in_stats_and_metrics():
    paths = [*sorted((REPO / "analysis/stats").rglob("*.py")), REPO / "analysis/metrics.py"]
    assert len(paths) > 10
    too_long = []
    for p in paths:
        n, funcs = _sizes(p)
        if n > 600:
            too_long.append(f"{p.relative_to(REPO)}: {n} lines")
        too_long += [f"{p.relative_to(REPO)}:{f} {k} lines" for f, k in funcs if k > 120]
    assert too_long == []


def test_experimental_package_says_why_its_methods_are_there():
    import analysis.stats.experimental as ex
    assert "lost the validation" in ex.__doc__
    for method in ("satt_maxt_tcal", "bonferroni_t", "cr2bm_mover_maxz", "mover_wilson_maxz"):
        assert method in ex.__doc__

"""Tables and figures (analysis.report, analysis.tables) on synthetic exports.

Small resample counts (200) keep this fast; the expectations are hand-checkable counts
and means of the tiny export in export_factory.build_export, plus structural checks on
the richer build_rich_export.
"""
from __future__ import annotations

import io
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.frozen import IntegrityError, read_records
from analysis.frozen.loader import load
from analysis.report import BUILDERS, Skipped, build_all, compute
from analysis.tables import regenerate

from export_factory import build_export, build_rich_export

REPO = Path(__file__).resolve().parent.parent
FAST = {"stats": {"n_resamples": 200, "confidence_level": 0.95, "seed": 0,
                  "method": "bootstrap_t", "pairwise_method": "default",
                  "contrast_metrics": ["action_validity", "completed", "gcr"]}}
quiet = lambda msg: None  # noqa: E731


@pytest.fixture(scope="module")
def rich(tmp_path_factory):
    root = build_rich_export(tmp_path_factory.mktemp("rich") / "export")
    out = tmp_path_factory.mktemp("rich_out")
    regenerate(root, out, FAST, progress=quiet)
    return root, out


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    root = build_export(tmp_path_factory.mktemp("small") / "export")
    out = tmp_path_factory.mktemp("small_out")
    regenerate(root, out, FAST, progress=quiet)
    return root, out


def _csv(out, name):
    return pd.read_csv(out / "tables" / f"{name}.csv")


# --- every artefact of DESIGN.md section 10 ------------------------------------------

def test_rich_export_produces_every_table_and_figure(rich):
    _, out = rich
    for name, *_ in BUILDERS:
        if name.startswith("table"):
            for ext in ("csv", "md", "tex"):
                assert (out / "tables" / f"{name}.{ext}").is_file(), name
        else:
            for ext in ("png", "pdf", "data.csv"):
                assert (out / "figures" / f"{name}.{ext}").is_file(), name
    index = (out / "tables" / "README.md").read_text()
    assert "Not produced" not in index
    for name, *_ in BUILDERS:
        assert f"`{name}`" in index
    # the index states method, unit, resamples and seed for estimated artefacts
    assert "resampling unit: episode; resamples: 200; seed: 0" in index


def test_latex_is_booktabs_and_markdown_has_title(rich):
    _, out = rich
    tex = (out / "tables" / "table04_planner_results.tex").read_text()
    assert "\\toprule" in tex and "\\midrule" in tex and "\\bottomrule" in tex
    md = (out / "tables" / "table04_planner_results.md").read_text()
    assert md.startswith("# Planner results") and "resamples: 200" in md


# --- hand-checkable numbers on the tiny export ----------------------------------------
# build_export: 3 episodes x 3 groups, tasks t1 (g0,g1 terminal), t2 (g2 event),
# t3 (g0-g2 terminal), t4 (g1 event); every group completed with one attempt, accepted
# for alpha at even group index, for beta at odd; alpha's c1 FALSE, beta's c1 TRUE,
# c2 (terminal only) TRUE. Group 1's attempt is pick_up(glass, counter) (the others a
# pour); each group queries the counter (anchor: the glass) before its attempt.

def test_endpoints_by_hand(small):
    _, out = small
    t = _csv(out, "table05_endpoints").set_index(["planner", "endpoint"]).tasks
    assert t[("alpha", "completed_partial")] == 2   # t1, t3: c1 FALSE, c2 TRUE
    assert t[("alpha", "completed_none")] == 2      # t2, t4: c1 FALSE
    assert t[("beta", "completed_all")] == 4
    assert t.groupby(level=0).sum().tolist() == [4, 4]
    fig = pd.read_csv(out / "figures" / "fig05_endpoints.data.csv")
    assert fig.groupby("planner").tasks.sum().tolist() == [4, 4]


def test_planner_results_by_hand(small):
    _, out = small
    t = _csv(out, "table04_planner_results").set_index(["planner", "metric"]).estimate
    assert t[("alpha", "success")] == 0 and t[("beta", "success")] == 1
    # alpha validity per task: t1 1/2, t2 1/1, t3 2/3, t4 0/1
    assert t[("alpha", "action_validity")] == pytest.approx((0.5 + 1 + 2 / 3 + 0) / 4)
    assert t[("beta", "gcr_terminal")] == 1 and t[("alpha", "gcr_terminal")] == 0.5
    assert t[("alpha", "completed")] == 1


def test_step_level_counts_by_hand(small):
    _, out = small
    t = _csv(out, "table12_step_level_execution").set_index("planner")
    assert t.loc["alpha", ["attempts", "planner accepted", "planner invalid",
                           "repair accepted"]].tolist() == [9, 6, 3, 0]
    assert t.loc["beta", "planner accepted"] == 3


def test_reobservation_excerpt_by_hand(small):
    # alpha's pick-up is rejected, so its counter reports never change; beta picks the
    # glass up in g001, so its g002 query keeps the anchor and removes the glass. The
    # g001 query (before the pick-up) is the latest one before the change; P01-ep1 comes
    # first of the three identical episodes.
    _, out = small
    t = pd.read_csv(out / "tables" / "table13_reobservation_excerpt.csv", dtype=str,
                    keep_default_na=False)
    assert t.step.tolist() == ["first query", "accepted action", "query again"]
    assert t.group.tolist() == ["P01-ep1/g001"] * 2 + ["P01-ep1/g002"]
    assert t.entry.tolist() == ["query(counter)", "pick_up(glass, counter) [planner]",
                                "query(counter)"]
    assert t.anchor.tolist() == ["glass", "", "glass"]
    assert t.visible.tolist() == ["glass", "", "(none)"]
    assert t["removed from anchor"].tolist() == ["(none)", "", "glass"]
    assert t["other removals"].tolist() == ["0", "", "0"]
    md = (out / "tables" / "table13_reobservation_excerpt.md").read_text()
    assert "Run beta__planner__persistent, episode P01-ep1" in md
    assert "No longer visible at the second query: glass" in md
    assert "no visual query between the two reported glass" in md


def test_pairwise_for_two_planners_has_one_pair_per_metric(small):
    _, out = small
    t = _csv(out, "table06_pairwise_contrasts")
    assert t[["planner_a", "planner_b"]].drop_duplicates().values.tolist() == [["alpha", "beta"]]
    assert sorted(t.metric) == ["action_validity", "completed", "gcr"]
    assert set(t.verdict) <= {"a>b", "b>a", "tie"}
    # completed is 1 for every task of both planners: zero SE, a tie at 0 with an honest
    # interval from the exact bounds of 9/9 (issue 11: never the point [0, 0])
    row = t[t.metric == "completed"].iloc[0]
    assert bool(row.zero_se) and row.estimate == 0 and row.verdict == "tie"
    assert row.low < 0 < row.high and not bool(row.set_aside)


def test_bonferroni_cross_check_is_the_closed_form(rich):
    # DESIGN.md section 9 asks for a Bonferroni-t cross-check beside the simultaneous
    # intervals: estimate +- t_{G-1}(1 - alpha / (2m)) * CR1 se, m = active contrasts.
    from scipy import stats
    root, out = rich
    t = _csv(out, "table06_pairwise_contrasts")
    active = t[~t.zero_se]  # Bonferroni-t sets zero-SE contrasts aside
    G = load(root).suites.query("suite == 'planner'").episode_id.nunique()
    crit = stats.t.ppf(1 - 0.05 / (2 * len(active)), G - 1)
    np.testing.assert_allclose(active.bonferroni_low, active.estimate - crit * active.se)
    np.testing.assert_allclose(active.bonferroni_high, active.estimate + crit * active.se)
    lo, hi = active.bonferroni_low, active.bonferroni_high
    expect = np.where(lo > 0, "a>b", np.where(hi < 0, "b>a", "tie"))
    assert active.bonferroni_verdict.tolist() == expect.tolist()


def test_missing_parts_are_skipped_with_reasons(small):
    _, out = small
    index = (out / "tables" / "README.md").read_text()
    skipped = index.split("## Not produced from this export")[1]
    for name in ("table03_validation_audit", "table08_memory_study", "fig10_quarter_profiles",
                 "table11_memory_counters"):
        assert f"`{name}`" in skipped
        assert not (out / "tables" / f"{name}.csv").exists()
    assert "no cohort/audit.jsonl records" in skipped
    assert "persistent and a reset run" in skipped


# --- the memory study against an independent count of the raw records ----------------

def test_paired_outcomes_match_raw_records(rich):
    root, out = rich
    success = {}
    for mem in ("persistent", "reset"):
        for r in read_records(root / f"runs/alpha__memory__{mem}/tasks.jsonl"):
            ok = r["completed"] and all(c["truth"] == "TRUE" for c in r["conditions"])
            success.setdefault(r["task_id"], {})[mem] = ok
    both = sum(v["persistent"] and v["reset"] for v in success.values())
    only_p = sum(v["persistent"] and not v["reset"] for v in success.values())
    only_r = sum(v["reset"] and not v["persistent"] for v in success.values())
    t = _csv(out, "table09_paired_outcomes")
    two = t[t.section == "2x2"].set_index("key").tasks
    assert (two["both"], two["only_a"], two["only_b"]) == (both, only_p, only_r)
    assert two.sum() == len(success)
    from scipy.stats import binomtest
    p = t[t.key == "mcnemar_exact"].p_value.iloc[0]
    expected = binomtest(only_p, only_p + only_r).pvalue if only_p + only_r else 1.0
    assert p == pytest.approx(expected)


def test_memory_counters_totals_match_raw_records(rich):
    root, out = rich
    import gzip, json
    tot = {}
    for mem in ("persistent", "reset"):
        recs = read_records(root / f"runs/alpha__memory__{mem}/groups.jsonl.gz")
        tot[mem] = sum(r["belief"]["cross_group_hits"] for r in recs)
    t = _csv(out, "table11_memory_counters")
    t = t[t.counter == "cross_group_hits"].set_index("memory").total
    assert t["persistent"] == tot["persistent"] and t["reset"] == tot["reset"] == 0


def test_quarter_profile_figure_data_is_what_the_table_holds(rich):
    _, out = rich
    fig = pd.read_csv(out / "figures" / "fig10_quarter_profiles.data.csv")
    tab = _csv(out, "table10_quarter_profiles")
    m = fig.merge(tab, on=["planner", "memory", "metric", "quarter"], suffixes=("", "_t"))
    assert len(m) == len(fig) > 0
    assert np.allclose(m.estimate, m.estimate_t)
    assert set(fig.quarter) == {1, 2, 3, 4}


# --- figures plot exactly the numbers of their data CSV --------------------------------

def test_endpoint_bars_are_the_csv_numbers(small):
    root, _ = small
    export = load(root)
    arts = {a.name: a for a in build_all(export, FAST)}
    fig = arts["fig05_endpoints"]
    widths = sorted(p.get_width() for p in fig.figure.axes[0].patches)
    assert widths == sorted(fig.data.tasks.astype(float))
    ax = fig.figure.axes[0]
    assert ax.get_xlabel() and ax.get_ylabel() and ax.get_legend() is not None
    # greyscale: every endpoint series has its own hatch
    hatches = {p.get_hatch() for p in ax.patches}
    assert len(hatches) >= len(set(fig.data.endpoint[fig.data.tasks > 0]))


def test_forest_plot_points_are_the_csv_numbers(rich):
    root, _ = rich
    export = load(root)
    res = compute(export, FAST)
    from analysis.report import pairwise_figure
    fig = pairwise_figure(export, res)
    xs = []
    for ax in fig.figure.axes:
        for line in ax.lines:
            x = line.get_xdata()
            if len(x) == 1 and line.get_marker() not in ("|", "_"):  # not an error-bar cap
                xs.append(float(x[0]))
    assert sorted(xs) == pytest.approx(sorted(fig.data.estimate_pp))
    assert (fig.data.low_pp >= -100).all() and (fig.data.high_pp <= 100).all()


# --- determinism, overrides, CLI, failure -----------------------------------------------

def test_regeneration_is_byte_identical(rich, tmp_path):
    root, out = rich
    regenerate(root, tmp_path, FAST, progress=quiet)
    for sub in ("tables", "figures"):
        for f in sorted((out / sub).iterdir()):
            assert (tmp_path / sub / f.name).read_bytes() == f.read_bytes(), f.name
    pdf = (out / "figures" / "fig05_endpoints.pdf").read_bytes()
    assert b"CreationDate" not in pdf


def test_confidence_level_and_contrast_override(rich, tmp_path):
    root, out = rich
    cfg = {"stats": dict(FAST["stats"], confidence_level=0.9, contrast_metrics=["gcr"])}
    regenerate(root, tmp_path, cfg, progress=quiet)
    t = _csv(tmp_path, "table06_pairwise_contrasts")
    assert set(t.metric) == {"gcr"} and len(t) == 15
    base = _csv(out, "table04_planner_results")
    narrow = _csv(tmp_path, "table04_planner_results")
    w0, w1 = (base.high - base.low), (narrow.high - narrow.low)
    ok = np.isfinite(w0) & np.isfinite(w1)
    assert (w1[ok] <= w0[ok] + 1e-12).all() and (w1[ok] < w0[ok]).any()
    assert "90% episode-cluster" in (tmp_path / "tables" / "table04_planner_results.md").read_text()


def test_verification_failure_writes_nothing(tmp_path):
    root = build_export(tmp_path / "export")
    f = root / "cohort" / "tasks.jsonl"
    f.write_bytes(f.read_bytes().replace(b"task t1", b"task tX"))
    with pytest.raises(IntegrityError):
        regenerate(root, tmp_path / "out", FAST, progress=quiet)
    assert not (tmp_path / "out").exists()


def test_hydra_cli_with_overrides(small, tmp_path):
    root, _ = small
    r = subprocess.run([sys.executable, "-m", "analysis.tables", f"export_root={root}",
                        f"out_dir={tmp_path}", "stats.n_resamples=100",
                        "stats.contrast_metrics=[gcr]"], capture_output=True, text=True,
                       cwd=tmp_path, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "[analysis.tables] building table04_planner_results" in r.stderr
    assert "resamples 100" in (tmp_path / "tables" / "README.md").read_text()
    assert set(_csv(tmp_path, "table06_pairwise_contrasts").metric) == {"gcr"}
    assert not (tmp_path / ".hydra").exists() and not (tmp_path / "outputs").exists()

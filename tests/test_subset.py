"""The LLM trial subset (analysis/planners/llm/subset.py): every option refused before
anything is written, and the cut export carries verified baselines (about 10 s)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import analysis
from analysis.planners.llm.subset import SubsetError, make_subset

REPO = Path(__file__).resolve().parent.parent
SRC = REPO / "frozen_exports"


@pytest.mark.e2e
@pytest.mark.parametrize("argv, message", [
    (["episode=1"], "unknown option 'episode'; did you mean episodes?"),
    (["suites=planer"], "'planer' is not a suite"),
    (["episodes=0"], "episodes=0: expected a positive integer"),
    (["episodes=x"], "episodes='x': expected a positive integer"),
    (["episodes=100000"], "has only"),
])
def test_options_are_refused_before_anything_is_written(tmp_path, argv, message):
    r = subprocess.run([sys.executable, "-m", "analysis.planners.llm.subset", str(SRC),
                        str(tmp_path / "dst"), *argv], capture_output=True, text=True)
    assert r.returncode == 2 and message in r.stderr, r.stderr
    assert list(tmp_path.iterdir()) == []


def test_folders_are_refused(tmp_path):
    (tmp_path / "used").mkdir()
    with pytest.raises(SubsetError, match="exists"):
        make_subset(SRC, tmp_path / "used", 1)
    with pytest.raises(SubsetError, match="outside SRC"):
        make_subset(SRC, SRC / "sub", 1)
    with pytest.raises(SubsetError, match="not an export"):
        make_subset(tmp_path, tmp_path / "x", 1)


@pytest.mark.e2e
@pytest.mark.slow(seconds=40)
def test_subset_carries_the_baselines_of_its_episodes(tmp_path):
    cut = make_subset(SRC, tmp_path / "sub", episodes=3)
    sub = analysis.load(tmp_path / "sub")  # verifies every cut run on the cut cohort
    full = analysis.load(SRC)
    assert sorted(sub.runs.run_id) == sorted(full.runs.run_id)
    for suite, s in cut.items():
        assert s["episode_ids"] == list(dict.fromkeys(
            full.suites[full.suites.suite == suite].episode_id))[:3]
    # each cut run's task records are the full run's, on the kept tasks
    suite_of = dict(zip(full.runs.run_id, full.runs.suite))
    keep = full.task_records.apply(
        lambda r: r.task_id in cut[suite_of[r.run_id]]["task_ids"], axis=1)
    a = full.task_records[keep]
    cols = ["run_id", "task_id", "completed", "n_true"]
    assert sorted(map(tuple, a[cols].to_numpy())) == \
        sorted(map(tuple, sub.task_records[cols].to_numpy()))
    t4 = sub.results(n_resamples=200).table("planner_results")
    assert set(t4.planner) == set(full.results().table("planner_results").planner)


def test_progress_bar_counts_failed_episodes_apart(capsys):
    from analysis._cli.run import _progress
    _progress(2, 2, "chat__planner__persistent", True, failed=2)
    err = capsys.readouterr().err
    assert "0/2 episodes done, 2 failed (provider error)" in err


def test_llm_doc_quotes_the_subset_of_the_committed_cohort():
    """docs/llm.md's counts for the two-episode trial are this cohort's."""
    import re
    full = analysis.load(SRC)
    eps = list(dict.fromkeys(full.suites[full.suites.suite == "planner"].episode_id))[:2]
    n_groups = int(full.groups.episode_id.isin(eps).sum())
    n_tasks = int(((full.suites.suite == "planner") & full.suites.episode_id.isin(eps)).sum())
    doc = re.sub(r"\s+", " ", (REPO / "docs" / "llm.md").read_text())
    assert f"the planner suite ({eps[0]} and {eps[1]})" in doc
    assert f"cuts them to {n_groups} groups and {n_tasks} tasks" in doc


@pytest.mark.e2e
def test_a_tampered_source_is_refused_exit_1_and_nothing_written(tmp_path):
    """SRC is verified first: an edited run record (its metadata, which re-execution does
    not check) would otherwise reach a subset that verifies clean."""
    import shutil
    src = tmp_path / "src"
    shutil.copytree(SRC, src)
    run = src / "runs" / "lexicon__planner__persistent" / "run.json"
    text = run.read_text()
    assert '"lexicon_size":47' in text
    run.write_text(text.replace('"lexicon_size":47', '"lexicon_size":4700'))
    r = subprocess.run([sys.executable, "-m", "analysis.planners.llm.subset", str(src),
                        str(tmp_path / "dst"), "episodes=1", "suites=planner"],
                       capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 1, r.stderr
    assert "verification FAILED, nothing written" in r.stderr
    assert "runs/lexicon__planner__persistent/run.json, line 1" in r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "dst").exists()


def test_a_cut_run_that_does_not_reexecute_is_a_refusal_during_the_work_exit_1(tmp_path, monkeypatch, capsys):
    import analysis.executor.replay as replay
    from analysis.planners.llm import subset

    class Diverged:
        ok = False
        divergences = [type("D", (), {"message": lambda self: "group 0: status differs"})()]

    monkeypatch.setattr(replay, "replay_run", lambda *a, **k: Diverged())
    assert subset.main([str(SRC), str(tmp_path / "dst"), "episodes=1", "suites=planner"]) == 1
    err = capsys.readouterr().err
    assert "the cut run does not re-execute on the subset: group 0: status differs" in err
    assert not (tmp_path / "dst").exists()


def test_a_destination_inside_another_export_is_refused(tmp_path):
    """Outside audit, session 13: DST inside another export left files its manifest does
    not list, and that export then failed verification."""
    other = tmp_path / "other"
    other.mkdir()
    (other / "MANIFEST.json").write_text("{}")
    with pytest.raises(SubsetError, match=f"is inside the export {other}"):
        make_subset(SRC, other / "sub", 1)
    assert sorted(p.name for p in other.iterdir()) == ["MANIFEST.json"]

"""analysis.add_planner end to end: a planner produced by analysis.run is added to a copy
of the export and appears in every regenerated table; bad inputs are rejected with a
clear message and nothing written.

The base export is the repository's compiled cohort with its suites trimmed to three
episodes (so that runs take seconds) and two baseline runs.
"""
from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from analysis._cli.add_planner import AddPlannerError, add_planner
from analysis.records import read_records, update_manifest, verify, write_record, write_records
from analysis.records.manifest import read_manifest

REPO = Path(__file__).resolve().parent.parent
COHORT = REPO / "frozen_exports" / "cohort"
FAST = {"stats": {"n_resamples": 200, "confidence_level": 0.95, "seed": 0,
                  "method": "bootstrap_t", "pairwise_method": "default",
                  "contrast_metrics": ["action_validity", "completed", "gcr"]}}

pytestmark = pytest.mark.skipif(not (COHORT / "episodes.jsonl.gz").exists(),
                                reason="no compiled cohort in frozen_exports/")


def _base(root: Path) -> Path:
    from analysis._cli.run import run_suite
    _cohort_only(root)
    for planner in ("greedy_hints", "random_hints"):
        run_suite(planner, "planner", "persistent", root, seed=1, progress=False)
    return root


def _cohort_only(root: Path) -> Path:
    """The repository's cohort, its suites cut to the first three episodes; no runs."""
    shutil.copytree(COHORT, root / "cohort")
    files = {rel: e["record_type"] for rel, e in read_manifest(REPO / "frozen_exports")
             ["files"].items() if rel.startswith("cohort/")}
    tasks = read_records(root / "cohort/tasks.jsonl")
    suites = []
    for s in read_records(root / "cohort/suites.jsonl"):
        eps = s["episode_ids"][:3]
        suites.append({**s, "episode_ids": eps,
                       "task_ids": [t for t in s["task_ids"]
                                    if next(x for x in tasks if x["task_id"] == t)
                                    ["episode_id"] in eps],
                       "definition": s["definition"] + " (test: first three episodes)"})
    write_records(root / "cohort/suites.jsonl", suites)
    update_manifest(root, files)
    return root


def shared_base(tmp_path_factory) -> Path:
    """:func:`_base` built once per test session (tests/shared_build.py), for this file and
    tests/test_transactions.py; read only (the tests copy it before changing it)."""
    from shared_build import build_once
    return build_once(tmp_path_factory, "add_planner_base",
                      lambda folder: _base(folder / "export")) / "export"


# session: built once per worker, however work stealing splits this file
@pytest.fixture(scope="session")
def setup(tmp_path_factory):
    from analysis._cli.run import run_suite
    base = shared_base(tmp_path_factory)
    _, recs = run_suite("belief_search", "planner", "persistent", base, seed=3,
                        progress=False, write=False)
    rec_dir = tmp_path_factory.mktemp("records")
    write_record(rec_dir / "run.json", recs["run"])
    write_records(rec_dir / "groups.jsonl.gz", recs["groups"])
    write_records(rec_dir / "tasks.jsonl", recs["tasks"])
    return base, rec_dir


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, symlinks=True)
    return dst


def _snapshot(root: Path) -> dict:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.e2e
@pytest.mark.slow(seconds=30)
def test_added_planner_appears_in_every_table(setup, tmp_path):
    from analysis._cli.tables import regenerate
    base, rec_dir = setup
    ex = _copy(base, tmp_path / "ex")
    res = add_planner(ex, rec_dir, "mine")
    assert res.run_id == "mine__planner__persistent" and res.reexecuted
    assert res.renamed_from == "belief_search__planner__persistent"
    assert read_manifest(ex)["runs"][res.run_id]["reexecuted"] is True
    # name= is the run's name; the planner that made the records stays recorded
    (run,) = read_records(ex / "runs" / res.run_id / "run.json")
    assert (run["planner"], run["run_name"]) == ("belief_search", "mine")
    assert "mine__planner__persistent" in verify(ex).runs
    regenerate(ex, tmp_path / "out", FAST, progress=lambda m: None)
    t4 = pd.read_csv(tmp_path / "out/tables/table04_planner_results.csv")
    assert sorted(t4.planner.unique()) == ["greedy_hints", "mine", "random_hints"]
    t6 = pd.read_csv(tmp_path / "out/tables/table06_pairwise_contrasts.csv")
    assert len(t6) == 3 * 3  # 3 pairs x 3 metrics
    assert ((t6.planner_a == "mine") | (t6.planner_b == "mine")).sum() == 2 * 3
    for name in ("table05_endpoints", "table07_contract_tiers", "table12_step_level_execution"):
        assert "mine" in set(pd.read_csv(tmp_path / f"out/tables/{name}.csv").planner)
    assert "mine" in set(pd.read_csv(tmp_path / "out/figures/fig05_endpoints.data.csv").planner)


@pytest.mark.e2e
def test_existing_name_is_rejected_and_nothing_written(setup, tmp_path):
    base, rec_dir = setup
    ex = _copy(base, tmp_path / "ex")
    before = _snapshot(ex)
    with pytest.raises(AddPlannerError, match="already holds planner 'greedy_hints'"):
        add_planner(ex, rec_dir, "greedy_hints")
    assert _snapshot(ex) == before


@pytest.mark.e2e
@pytest.mark.slow
def test_records_failing_reexecution_are_rejected(setup, tmp_path):
    base, rec_dir = setup
    ex = _copy(base, tmp_path / "ex")
    bad = _copy(rec_dir, tmp_path / "bad")
    groups = read_records(bad / "groups.jsonl.gz")
    g = next(g for g in groups if g["attempts"])
    a = g["attempts"][0]
    a["status"] = "invalid" if a["status"] == "accepted" else "accepted"
    write_records(bad / "groups.jsonl.gz", groups)
    before = _snapshot(ex)
    with pytest.raises(AddPlannerError, match=r"re-execution failed.*attempts\[0\]\.status"):
        add_planner(ex, bad, "tampered")
    assert _snapshot(ex) == before
    # the same records pass when re-execution is switched off, and the manifest says so
    res = add_planner(ex, bad, "tampered", reexecute=False)
    assert read_manifest(ex)["runs"][res.run_id]["reexecuted"] is False


@pytest.mark.e2e
def test_records_for_another_cohort_are_rejected(setup, tmp_path):
    base, rec_dir = setup
    ex = _copy(base, tmp_path / "ex")
    bad = _copy(rec_dir, tmp_path / "bad")
    run = read_records(bad / "run.json")[0]
    write_record(bad / "run.json", {**run, "cohort_sha256": "f" * 64})
    before = _snapshot(ex)
    with pytest.raises(AddPlannerError, match="another cohort"):
        add_planner(ex, bad, "other")
    assert _snapshot(ex) == before


@pytest.mark.e2e
def test_missing_and_unknown_tasks_are_rejected(setup, tmp_path):
    base, rec_dir = setup
    ex = _copy(base, tmp_path / "ex")
    bad = _copy(rec_dir, tmp_path / "bad")
    tasks = read_records(bad / "tasks.jsonl")
    write_records(bad / "tasks.jsonl", tasks[1:])
    with pytest.raises(AddPlannerError, match=f"missing, first '{tasks[0]['task_id']}'"):
        add_planner(ex, bad, "partial", reexecute=False)
    write_records(bad / "tasks.jsonl", tasks + [{**tasks[0], "task_id": "nope"}])
    with pytest.raises(AddPlannerError, match="unknown task_id 'nope'"):
        add_planner(ex, bad, "partial", reexecute=False)
    with pytest.raises(AddPlannerError, match="name='Bad__name'"):
        add_planner(ex, rec_dir, "Bad__name")
    assert not any(p.name.startswith(".") for p in (ex / "runs").iterdir())


@pytest.mark.e2e
def test_duplicate_keys_and_stray_files_in_the_records_are_refused(setup, tmp_path):
    """The records are read as strictly as verification reads an export: a key given
    twice (json would keep the last value) names the file and line; a file other than the
    three of a run folder is named, not silently left behind."""
    base, rec_dir = setup
    ex = _copy(base, tmp_path / "ex")
    before = _snapshot(ex)
    bad = _copy(rec_dir, tmp_path / "bad")
    lines = (bad / "tasks.jsonl").read_text().splitlines(keepends=True)
    assert lines[0].startswith('{"completed":')
    (bad / "tasks.jsonl").write_text(lines[0].replace('{"completed":', '{"completed":true,"completed":', 1)
                                     + "".join(lines[1:]))
    with pytest.raises(AddPlannerError, match=r"tasks\.jsonl: unreadable \(line 1: duplicate key 'completed'"):
        add_planner(ex, bad, "dup", reexecute=False)
    stray = _copy(rec_dir, tmp_path / "stray")
    (stray / "notes.txt").write_text("x")
    with pytest.raises(AddPlannerError, match="unexpected 'notes.txt': a run folder holds exactly"):
        add_planner(ex, stray, "stray", reexecute=False)
    assert _snapshot(ex) == before


@pytest.mark.e2e
def test_overlong_name_is_refused_with_one_line_and_nothing_written(setup, tmp_path):
    base, rec_dir = setup
    ex = _copy(base, tmp_path / "ex")
    before = _snapshot(ex)
    with pytest.raises(AddPlannerError, match=r"name='a{37}\.\.\.': use at most 64 "):
        add_planner(ex, rec_dir, "a" * 300)
    assert _snapshot(ex) == before


@pytest.mark.e2e
def test_incomplete_run_with_provider_errors_is_refused(setup, tmp_path):
    """Issue 14: a run whose model endpoint failed is incomplete; it is resumed, never
    added or scored. add_planner says so, naming the file, the first such group's line and
    the count, and writes nothing."""
    base, rec_dir = setup
    ex = _copy(base, tmp_path / "ex")
    before = _snapshot(ex)
    bad = _copy(rec_dir, tmp_path / "bad")
    groups = read_records(bad / "groups.jsonl.gz")
    for i in (2, 5):
        groups[i]["status"] = "provider_error"
    write_records(bad / "groups.jsonl.gz", groups)
    with pytest.raises(AddPlannerError, match=r"groups\.jsonl\.gz line 3: the run is "
                       r"incomplete: 2 of \d+ groups ended provider_error"):
        add_planner(ex, bad, "mine")
    assert _snapshot(ex) == before

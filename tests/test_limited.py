"""Issue 37 item 3: ``run limit=N`` runs the first N episodes of a suite, is recorded as
such (``episode_limit`` in run.json), verifies and re-executes as a run of those
episodes, and ``python -m analysis.tables`` refuses it unless ``allow_limited=true``.
The toy cohort of tests/test_shards.py: five episodes of three groups, two tasks each."""
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from analysis._cli import run as run_mod
from analysis.records import IntegrityError, verify
from analysis.records.io import read_records
from analysis.records.limited import LimitedRunsError, check_limited
from analysis._cli.reexecute import run_reexecute
from test_shards import EPS, FAST, make_export

REPO = Path(__file__).resolve().parent.parent
RID = "greedy_hints__planner__persistent"


def run(export, tmp_path, **kw):
    return run_mod.run_suite("greedy_hints", "planner", "persistent", export, progress=False,
                             state_dir=str(tmp_path / "state"), runtime=FAST, **kw)


def test_a_limited_run_is_the_first_episodes_of_the_whole_run_and_says_so(tmp_path):
    full = make_export(tmp_path / "full")
    _, whole = run(full, tmp_path)
    part = make_export(tmp_path / "part")
    summary, rec = run(part, tmp_path, limit=2)
    assert rec["run"]["episode_limit"] == 2 and summary.n_episodes == 2
    # exactly the records of episodes toy-a and toy-b of the whole run
    assert rec["groups"] == [g for g in whole["groups"] if g["episode_id"] in EPS[:2]]
    assert rec["tasks"] == [t for t in whole["tasks"] if t["episode_id"] in EPS[:2]]
    on_disk = read_records(part / "runs" / RID / "run.json")[0]
    assert on_disk["episode_limit"] == 2
    assert verify(part).n_files > 0                        # verifies as a 2-episode run
    assert run_reexecute(part, run=RID) == 0                # and re-executes with 0 divergences


def test_a_limit_covering_the_suite_is_a_whole_run(tmp_path):
    a, b = make_export(tmp_path / "a"), make_export(tmp_path / "b")
    said = []
    run(a, tmp_path)
    run(b, tmp_path, limit=len(EPS), say=said.append)
    assert (a / "runs" / RID / "run.json").read_bytes() == (b / "runs" / RID / "run.json").read_bytes()
    assert said == [f"limit={len(EPS)}: the suite 'planner' has {len(EPS)} episodes; running "
                    "all of them (a whole run, not a limited one)"]
    with pytest.raises(ValueError, match=r"limit=0: expected a positive number of episodes"):
        run(make_export(tmp_path / "c"), tmp_path, limit=0)


def test_verification_holds_a_limited_run_to_its_episodes(tmp_path):
    """A limited run whose record claims fewer episodes than its records hold fails."""
    from analysis.records.io import write_records
    from analysis.records.manifest import update_manifest
    ex = make_export(tmp_path / "ex")
    run(ex, tmp_path, limit=3)
    path = ex / "runs" / RID / "run.json"
    rec = read_records(path)[0]
    write_records(path, [{**rec, "episode_limit": 2}])
    update_manifest(ex, {f"runs/{RID}/run.json": "run"})
    # line 7: the first group of the third episode, toy-c, outside the first 2 episodes
    with pytest.raises(IntegrityError, match=r"groups\.jsonl\.gz, line 7 \(record g0\): "
                                             r"episode_id 'toy-c'"):
        verify(ex)


def _cli(*args, tmp_path):
    return subprocess.run([sys.executable, "-m", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO),
                               "E2W_CACHE_DIR": str(tmp_path / "cache")})


@pytest.mark.e2e
def test_the_command_records_the_limit_and_the_tables_refuse_it(tmp_path):
    ex = make_export(tmp_path / "ex")
    r = _cli("analysis.run", "planner=greedy_hints", "suite=planner", "limit=2",
             f"export_root={ex}", "progress=false", "runtime.max_planner_calls=2",
             tmp_path=tmp_path)
    assert r.returncode == 0, r.stderr
    assert f"{RID}: 2 episodes, 6 groups, 4 tasks" in r.stdout
    assert (f"{RID} is a limited run (first 2 episodes): python -m analysis.tables refuses "
            "it unless allow_limited=true") in r.stdout
    out = tmp_path / "out"
    t = _cli("analysis.tables", f"export_root={ex}", f"out_dir={out}", tmp_path=tmp_path)
    assert t.returncode == 1, t.stderr
    assert t.stderr.strip().splitlines()[-1] == (
        f"analysis.tables: refused, nothing written: the export {ex} holds 1 limited run "
        f"({RID}: first 2 episodes only, from run limit=N): the tables compare planners on "
        "whole suites; rerun it without limit= (overwrite=true), or pass allow_limited=true "
        "to tabulate it anyway")
    assert not (out / "tables").exists()
    bad = _cli("analysis.run", "planner=greedy_hints", "limit=0", f"export_root={ex}",
               tmp_path=tmp_path)
    assert bad.returncode == 2 and "limit=0: expected an integer from 1 to 1000000" in bad.stderr


def test_allow_limited_lets_the_limited_runs_through():
    runs = [{"run_id": "a__planner__persistent"},
            {"run_id": "b__planner__persistent", "episode_limit": 3}]
    assert check_limited(runs, True) == [("b__planner__persistent", 3)]
    assert check_limited(runs[:1], False) == []
    with pytest.raises(LimitedRunsError, match=r"1 limited run \(b__planner__persistent: "
                                               r"first 3 episodes only"):
        check_limited(runs, False)


def test_allow_limited_tabulates_a_limited_run_on_its_own_tasks_outside_the_contrasts(tmp_path):
    """The statistics behind the tables: a limited run (its first 2 of 3 episodes) counts
    the 3 tasks it covers; the contrasts and the memory study, which pair every task,
    leave it out and say so. Built by hand from tests/export_factory.py's export."""
    from analysis.records import load
    from analysis.records.io import write_record, write_records
    from analysis.records.manifest import update_manifest
    from analysis.report import compute
    from export_factory import EPISODES, build_export
    root = build_export(tmp_path / "ex", planners=("alpha", "beta", "gamma"))
    rid = "gamma__planner__persistent"
    folder = root / "runs" / rid
    first = sorted(EPISODES)[:2]
    run_rec = read_records(folder / "run.json")[0]
    write_record(folder / "run.json", {**run_rec, "episode_limit": 2})
    write_records(folder / "groups.jsonl.gz", [g for g in read_records(folder / "groups.jsonl.gz")
                                               if g["episode_id"] in first])
    write_records(folder / "tasks.jsonl", [t for t in read_records(folder / "tasks.jsonl")
                                           if t["episode_id"] in first])
    update_manifest(root, {f"runs/{rid}/{n}": t for n, t in (
        ("run.json", "run"), ("groups.jsonl.gz", "group_record"), ("tasks.jsonl", "task_record"))})
    with pytest.warns(Warning):   # three episodes: few-episode warnings
        res = compute(load(root), {"stats": {"n_resamples": 200}})
    counts = res.planner_tasks.groupby("label").task_id.nunique().to_dict()
    assert counts == {"alpha": 4, "beta": 4, "gamma": 3}   # t1, t2 (P01-ep1), t3 (P01-ep2)
    assert res.skipped["pairwise_limited"] == ("left out of the contrasts (limited runs, "
                                               "fewer tasks): gamma")
    t = res.pairwise.table
    assert sorted(set(t.planner_a) | set(t.planner_b)) == ["alpha", "beta"]

"""Sharded runs (analysis/shards.py): registered once, with the bytes of an unsharded run.

The toy cohort has five episodes of three groups; ``shard=i/n`` runs the episodes at
positions ``p % n == i - 1``. Every comparison is byte for byte: the run's three files
and the export's MANIFEST.json against an unsharded run of the same planner and seed.
About 15 s (the chat tests use a loopback server with a 20 ms reply delay).
"""
import gzip
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from killing import kill_when

from analysis._cli import run as run_mod
from analysis._cli.config_check import ConfigError
from analysis.executor import Rules
from analysis.records.io import write_record, write_records
from analysis.records.manifest import update_manifest
from analysis._runs.shards import Shard, parse_shard
from analysis.planners.toy import toy_episode, toy_suite, toy_tasks

REPO = Path(__file__).resolve().parent.parent
EPS = ("toy-a", "toy-b", "toy-c", "toy-d", "toy-e")
RUN_FILES = ("run.json", "groups.jsonl.gz", "tasks.jsonl")
FAST = {"max_planner_calls": 2}


def _episode(eid, tagged=True):
    ep = toy_episode(eid)
    for g in ep["groups"]:  # distinct prompts per episode (distinct cache keys)
        g["instruction"] += f" [{eid}]" if tagged else ""
    return ep


def make_export(root: Path, tagged: bool = True) -> Path:
    """The toy cohort; ``tagged=False``: every episode asks the same prompts."""
    c = root / "cohort"
    write_record(c / "rules.json", Rules.load().to_json())
    write_records(c / "episodes.jsonl.gz", [_episode(e, tagged) for e in EPS])
    write_records(c / "tasks.jsonl", [t for e in EPS for t in toy_tasks(e)])
    write_records(c / "suites.jsonl", [toy_suite(EPS), dict(toy_suite(EPS[:2]), suite="memory")])
    update_manifest(root, {"cohort/rules.json": "rules", "cohort/episodes.jsonl.gz": "episode",
                           "cohort/tasks.jsonl": "task", "cohort/suites.jsonl": "suite"})
    return root


def export_bytes(root: Path, rid: str) -> dict:
    d = root / "runs" / rid
    out = {n: (d / n).read_bytes() for n in RUN_FILES if (d / n).exists()}
    out["MANIFEST.json"] = (root / "MANIFEST.json").read_bytes()
    return out


def run(export, state, planner="greedy_hints", **kw):
    return run_mod.run_suite(planner, "planner", "persistent", export, progress=False,
                             state_dir=state, runtime=FAST, **kw)


RID = "greedy_hints__planner__persistent"


def test_shard_spec_is_checked_and_splits_every_episode_once(tmp_path):
    assert [Shard(i, 3).positions(7) for i in (1, 2, 3)] == [[0, 3, 6], [1, 4], [2, 5]]
    for bad in ("0/2", "3/2", "1-2", "a/b", "1/0", 2):
        with pytest.raises(ValueError, match="shard="):
            parse_shard(bad)
    from analysis._cli.hydra_glue import compose_config
    with pytest.raises(ConfigError, match=r"shard='1:2': expected i/n"):
        compose_config("run", ["shard=1:2", f"export_root={make_export(tmp_path / 'x')}"])
    with pytest.raises(ConfigError, match="needs resume=true"):
        compose_config("run", ["shard=1/2", "resume=false", f"export_root={make_export(tmp_path / 'x')}"])


@pytest.mark.parametrize("n", [2, 3])
def test_sharded_run_registers_once_with_the_bytes_of_an_unsharded_run(tmp_path, n):
    ref = make_export(tmp_path / "ref")
    run(ref, tmp_path / "s_ref")
    want = export_bytes(ref, RID)
    ex = make_export(tmp_path / "ex")
    before = (ex / "MANIFEST.json").read_bytes()
    for i in range(n, 0, -1):  # any order: the last one to finish registers
        summary, records = run(ex, tmp_path / "state", shard=f"{i}/{n}")
        if i > 1:
            assert records is None and summary.bytes_written == 0
            assert (ex / "MANIFEST.json").read_bytes() == before  # export untouched
            assert not (ex / "runs").exists()
            waiting = ", shard=".join(f"{j}/{n}" for j in range(1, i))
            assert f"run shard={waiting} " in summary.note
    assert summary.bytes_written > 0 and "registered" in summary.note
    assert export_bytes(ex, RID) == want
    # the journal is gone; a rerun of any shard says the run is registered, changes nothing
    assert not any((tmp_path / "state").glob("*/episodes"))
    again, recs = run(ex, tmp_path / "state", shard=f"1/{n}")
    assert recs is None and "is already registered" in again.note
    assert export_bytes(ex, RID) == want


def test_a_missing_shard_is_named_and_rerunning_only_it_completes_the_run(tmp_path):
    ref = make_export(tmp_path / "ref")
    run(ref, tmp_path / "s_ref")
    ex = make_export(tmp_path / "ex")
    before = (ex / "MANIFEST.json").read_bytes()
    run(ex, tmp_path / "state", shard="1/3")
    summary, _ = run(ex, tmp_path / "state", shard="3/3")
    assert "2 episode(s) still missing, run shard=2/3 " in summary.note
    assert (ex / "MANIFEST.json").read_bytes() == before
    journal = next((tmp_path / "state").glob(f"{RID}-*"))
    done = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in journal.rglob("*.json.gz")}
    assert sorted(done) == ["00000.json.gz", "00002.json.gz", "00003.json.gz"]
    assert sorted(p.name for p in (journal / "shards" / "3").iterdir()) == ["1.json", "3.json"]
    # what a multirun reports when a job of a process launcher failed
    from analysis._runs.shards import registered_runs, unregistered_runs
    runs = {(str(ex), RID): str(tmp_path / "state")}
    assert unregistered_runs(runs) == [
        f"{RID} is not registered in {ex}: rerun shard=2/3 (finished episodes are kept)"]
    assert registered_runs(runs) == []
    summary, _ = run(ex, tmp_path / "state", shard="2/3")
    assert summary.bytes_written > 0
    assert export_bytes(ex, RID) == export_bytes(ref, RID)
    assert unregistered_runs(runs) == []
    assert registered_runs(runs) == [f"{RID}: every shard done; registered in {ex}"]


def test_a_shard_of_an_existing_other_run_is_refused(tmp_path):
    ex = make_export(tmp_path / "ex")
    run(ex, tmp_path / "s1")  # registered without shards (no stamp)
    with pytest.raises(run_mod.RunExists):
        run(ex, tmp_path / "s2", shard="1/2")


def test_a_tampered_journal_entry_of_another_shard_is_refused_at_the_merge(tmp_path):
    from analysis._runs.journal import JournalMismatch
    ex = make_export(tmp_path / "ex")
    run(ex, tmp_path / "state", shard="2/2")
    entry = next((tmp_path / "state").glob(f"{RID}-*/episodes/00001.json.gz"))
    data = json.loads(gzip.decompress(entry.read_bytes()))
    data["groups"][0]["status"] = "completed" if data["groups"][0]["status"] != "completed" \
        else "empty_plan"
    entry.write_bytes(gzip.compress(json.dumps(data).encode()))
    with pytest.raises(JournalMismatch, match="00001.json.gz"):
        run(ex, tmp_path / "state", shard="1/2")
    assert not (ex / "runs").exists()


# -- chat shards against the loopback server, sharing one cache -------------------------

def _chat_cli(export, tmp_path, url, shard, extra=()):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return [sys.executable, "-m", "analysis.run", "planner=chat", "suite=planner",
            f"export_root={export}", f"state_dir={tmp_path / 'state'}", "progress=false",
            f"shard={shard}", f"planner.settings.base_url={url}",
            f"planner.settings.cache_dir={tmp_path / 'cache'}", "planner.settings.timeout=5",
            "planner.settings.model=toy-model", "runtime.max_planner_calls=2",
            f"planner.settings.call_log={tmp_path / 'calls.jsonl'}", *extra], env


@pytest.mark.e2e
@pytest.mark.slow
def test_killing_one_chat_shard_and_rerunning_it_completes_the_run(tmp_path):
    """Shard 1/2 finishes; shard 2/2 (episodes 2 and 4) is SIGKILLed after its first
    episode is journaled; shard 1's journal entries are not touched by the rerun, the
    export is unchanged until the rerun registers it, and the result equals an unsharded
    run with the cache off; every shared cache entry is whole and self-verifying."""
    pytest.importorskip("openai")
    from analysis.planners.llm.cache import ResponseCache
    from analysis.planners.llm.testserver import LoopbackServer
    seen = []  # the episode of every request the server gets
    # While shard 2/2 runs to be killed, its second episode's requests are held until
    # the kill, so it is killed after exactly one of its two episodes, however slowly
    # this test is scheduled.
    hold_d, killed = threading.Event(), threading.Event()

    def note(body, attempt):
        seen.append(body["messages"][-1]["content"].split("[toy-")[1][0])
        if seen[-1] == "d" and hold_d.is_set():
            killed.wait(timeout=120)
        return None
    srv = LoopbackServer(fault=note, delay=0.05).start()
    try:
        ref = make_export(tmp_path / "ref")
        run(ref, tmp_path / "s_ref", planner="chat",
            planner_settings=dict(base_url=srv.url, model="toy-model", timeout=5.0,
                                  cache_mode="off"))
        rid = "chat__planner__persistent"
        ex = make_export(tmp_path / "ex")
        before = (ex / "MANIFEST.json").read_bytes()
        cmd, env = _chat_cli(ex, tmp_path, srv.url, "1/2")
        out = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True,
                             timeout=120)
        assert out.returncode == 0, out.stderr[-2000:]
        assert "run shard=2/2 " in out.stdout
        journal = next((tmp_path / "state").glob(f"{rid}-*"))
        first = {p: (p.read_bytes(), p.stat().st_mtime_ns)
                 for p in (journal / "episodes").glob("0*.json.gz")}
        assert sorted(p.name for p in first) == ["00000.json.gz", "00002.json.gz",
                                                 "00004.json.gz"]
        cmd, env = _chat_cli(ex, tmp_path, srv.url, "2/2")
        hold_d.set()
        proc = subprocess.Popen(cmd, env=env, cwd=REPO, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, start_new_session=True)
        try:
            kill_when(proc, lambda: len(list((journal / "episodes").glob("0*.json.gz"))) >= 4)
        finally:
            hold_d.clear()
            killed.set()
        assert len(list((journal / "episodes").glob("0*.json.gz"))) == 4  # one of its two
        assert (ex / "MANIFEST.json").read_bytes() == before
        assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in first} == first
        del seen[:]
        out = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True,
                             timeout=120)
        assert out.returncode == 0, out.stderr[-2000:]
        assert "registered in the export" in out.stdout
        assert export_bytes(ex, rid) == export_bytes(ref, rid)
        # the rerun asked only for shard 2's episodes (b, d), and only what the cache of
        # its killed attempt did not hold: shard 1's work was read, not redone
        assert seen and set(seen) <= {"b", "d"}
        cache = ResponseCache(tmp_path / "cache")
        entries = list((tmp_path / "cache").rglob("*.json"))
        assert entries and all(cache.get(p.stem) is not None for p in entries)
        assert not list((tmp_path / "cache").rglob(".*"))  # no temp file left behind
        # each shard kept its own call log (one file per shard, never rotated by another)
        logs = sorted(p.name for p in tmp_path.glob("calls.shard-*.jsonl"))
        assert logs == ["calls.shard-1-of-2.jsonl", "calls.shard-2-of-2.jsonl"]
    finally:
        srv.stop()

"""The export store (analysis.records.store) and the pure manifest changes it stages
(analysis.records.manifest): hand-made manifests in, hand-checkable manifests out; each
store operation on a small export, checked by the export's own verification, byte for
byte against an export built another way, and left unchanged by a failure or a kill."""
from __future__ import annotations

import copy
import hashlib
import shutil
from pathlib import Path

import pytest

from analysis._fs.errors import UserError
from analysis.records import read_records, verify
from analysis.records.io import encode_records
from analysis.records.manifest import (MANIFEST_NAME, empty_manifest, with_cohort,
                                       with_files, with_run, without_runs)
from analysis.records.run_names import RunExists
from analysis.records.store import ExportStore

from export_factory import build_export
from test_transactions import _fork, _leftovers, _points, _snapshot

ALPHA, BETA = "alpha__planner__persistent", "beta__planner__persistent"
RUN_NAMES = ("run.json", "groups.jsonl.gz", "tasks.jsonl")


# --- pure manifest changes -------------------------------------------------------------

OLD = {"format_version": 1, "extra": "kept",
       "files": {"cohort/a.jsonl": {"sha256": "a"}, "cohort/b.jsonl": {"sha256": "b"},
                 "runs/r/run.json": {"sha256": "r"}, "runs/rr/run.json": {"sha256": "rr"}},
       "runs": {"r": {"reexecuted": True}, "rr": {"reexecuted": False}}}


def test_with_files_sets_entries_drops_the_prefix_and_sets_run_metadata():
    old = copy.deepcopy(OLD)
    new = with_files(old, {"cohort/c.jsonl": {"sha256": "c"}}, replace_prefix="cohort/",
                     runs={"rr": {"reexecuted": True}})
    assert new == {"format_version": 2, "extra": "kept",
                   "files": {"cohort/c.jsonl": {"sha256": "c"},
                             "runs/r/run.json": {"sha256": "r"},
                             "runs/rr/run.json": {"sha256": "rr"}},
                   "runs": {"r": {"reexecuted": True}, "rr": {"reexecuted": True}}}
    assert old == OLD  # pure: the input is left as it was


def test_with_files_without_a_prefix_keeps_every_other_entry():
    new = with_files({"files": {"x": {"sha256": "1"}}}, {"y": {"sha256": "2"}})
    assert new == {"format_version": 2, "files": {"x": {"sha256": "1"}, "y": {"sha256": "2"}},
                   "runs": {}}


def test_without_runs_removes_exactly_the_named_runs():
    # "runs/r/" must not take "runs/rr/" with it
    new = without_runs(OLD, ["r"])
    assert new == {"format_version": 1, "extra": "kept",
                   "files": {"cohort/a.jsonl": {"sha256": "a"},
                             "cohort/b.jsonl": {"sha256": "b"},
                             "runs/rr/run.json": {"sha256": "rr"}},
                   "runs": {"rr": {"reexecuted": False}}}
    assert without_runs(OLD, []) == OLD


def test_with_cohort_replaces_the_cohort_and_drops_stale_runs():
    new = with_cohort(OLD, {"cohort/a.jsonl": {"sha256": "A"}}, drop_runs=["rr"])
    assert new == {"format_version": 2, "extra": "kept",
                   "files": {"cohort/a.jsonl": {"sha256": "A"},
                             "runs/r/run.json": {"sha256": "r"}},
                   "runs": {"r": {"reexecuted": True}}}
    assert OLD["files"]["cohort/b.jsonl"] == {"sha256": "b"}


def test_with_run_replaces_a_run_and_keeps_the_format_version():
    new = with_run(OLD, "r", {"run.json": {"sha256": "R"}, "tasks.jsonl": {"sha256": "T"}})
    assert new["format_version"] == 1  # as a run write always did: the export's own
    assert {k: v for k, v in new["files"].items() if k.startswith("runs/r/")} == {
        "runs/r/run.json": {"sha256": "R"}, "runs/r/tasks.jsonl": {"sha256": "T"}}
    assert new["runs"] == {"rr": {"reexecuted": False}}  # no meta given: the old one goes
    meta = with_run(empty_manifest(), "n", {}, meta={"added_by": "x"})
    assert meta == {"format_version": 2, "files": {}, "runs": {"n": {"added_by": "x"}}}


# --- store operations ------------------------------------------------------------------

@pytest.fixture
def two(tmp_path):
    return build_export(tmp_path / "two" / "export", planners=("alpha", "beta"))


@pytest.fixture
def one(tmp_path):
    return build_export(tmp_path / "one" / "export", planners=("alpha",))


def _run_files(export: Path, rid: str) -> dict[str, bytes]:
    return {n: (export / "runs" / rid / n).read_bytes() for n in RUN_NAMES}


def test_put_run_gives_the_export_built_with_that_run(one, two):
    size = ExportStore(one).put_run(BETA, _run_files(two, BETA))
    assert size == sum(len(b) for b in _run_files(two, BETA).values())
    assert _snapshot(one) == _snapshot(two)  # manifest included, byte for byte
    verify(one)
    entry = ExportStore(one).manifest()["files"][f"runs/{BETA}/tasks.jsonl"]
    assert entry["sha256"] == hashlib.sha256(_run_files(two, BETA)["tasks.jsonl"]).hexdigest()
    assert _leftovers(one) == []


def test_put_run_refuses_an_existing_run_unless_overwrite(two):
    before = _snapshot(two)
    with pytest.raises(RunExists, match="overwrite=true"):
        ExportStore(two).put_run(ALPHA, _run_files(two, ALPHA))
    assert _snapshot(two) == before
    ExportStore(two).put_run(ALPHA, _run_files(two, ALPHA), overwrite=True,
                             meta={"reexecuted": True})
    manifest = ExportStore(two).manifest()
    assert manifest["runs"] == {ALPHA: {"reexecuted": True}}
    assert {k: v for k, v in _snapshot(two).items() if k != MANIFEST_NAME} == \
        {k: v for k, v in before.items() if k != MANIFEST_NAME}
    verify(two)


def test_a_failing_check_rolls_a_put_run_back(one, two):
    before = _snapshot(one)

    def check():
        assert (one / "runs" / BETA / "run.json").exists()  # runs on the switched export
        raise RuntimeError("no")

    with pytest.raises(RuntimeError):
        ExportStore(one).put_run(BETA, _run_files(two, BETA), check=check)
    assert _snapshot(one) == before and _leftovers(one) == []


def test_remove_runs_gives_the_export_built_without_them(one, two):
    new = ExportStore(two).remove_runs([BETA])
    assert not any(k.startswith(f"runs/{BETA}/") for k in new["files"])
    assert _snapshot(two) == _snapshot(one)
    verify(two)


def test_remove_runs_refuses_a_run_the_export_does_not_hold(two):
    before = _snapshot(two)
    with pytest.raises(ValueError, match=r"\['gamma__planner__persistent'\] not in"):
        ExportStore(two).remove_runs(["gamma__planner__persistent"])
    assert _snapshot(two) == before


def _cohort_files(export: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((export / "cohort").iterdir())}


TYPES = {"episodes.jsonl.gz": "episode", "tasks.jsonl": "task", "suites.jsonl": "suite",
         "scenes.jsonl": "scene"}


def test_replace_cohort_with_the_same_bytes_changes_nothing(two):
    before = _snapshot(two)
    ExportStore(two).replace_cohort(_cohort_files(two), TYPES)
    assert _snapshot(two) == before


def _retitled(export: Path) -> dict[str, bytes]:
    files = _cohort_files(export)
    tasks = read_records(export / "cohort" / "tasks.jsonl")
    tasks[0]["title"] = "changed"
    files["tasks.jsonl"] = encode_records("tasks.jsonl", tasks)
    return files


def test_replace_cohort_switches_the_cohort_and_drops_the_named_runs(two):
    files = _retitled(two)
    new = ExportStore(two).replace_cohort(files, TYPES, drop_runs=[ALPHA, BETA])
    assert read_records(two / "cohort" / "tasks.jsonl")[0]["title"] == "changed"
    assert not (two / "runs" / ALPHA).exists() and not (two / "runs" / BETA).exists()
    assert sorted(new["files"]) == [f"cohort/{n}" for n in sorted(TYPES)]
    assert new["files"]["cohort/tasks.jsonl"]["sha256"] == \
        hashlib.sha256(files["tasks.jsonl"]).hexdigest()
    verify(two)  # the runs of the old cohort would not have verified: they are gone


def test_an_exception_inside_a_transaction_leaves_the_export_as_it_was(two):
    before = _snapshot(two)
    with pytest.raises(RuntimeError):
        with ExportStore(two).transaction("test") as txn:
            txn.put_tree(f"runs/{ALPHA}", {"run.json": b"{}\n"})
            txn.remove(f"runs/{BETA}")
            raise RuntimeError("stop")
    assert _snapshot(two) == before and _leftovers(two) == []


@pytest.mark.parametrize("op", ["put_run", "replace_cohort"])
def test_a_kill_at_every_write_point_leaves_the_old_export_or_the_new(one, two, tmp_path,
                                                                     op):
    base = one if op == "put_run" else two
    beta, cohort = _run_files(two, BETA), _retitled(two)
    work = tmp_path / "work" / "export"

    def write():
        if work.exists():
            shutil.rmtree(work)
        shutil.copytree(base, work)
        store = ExportStore(work)
        if op == "put_run":
            store.put_run(BETA, beta, check=lambda: verify(work))
        else:
            store.replace_cohort(cohort, TYPES, drop_runs=[ALPHA, BETA])

    old = _snapshot(base)
    labels = _points(write, tmp_path)
    new = _snapshot(work)
    assert old != new and "commit" in labels
    commit = labels.index("commit") + 1
    for n in range(1, len(labels) + 1):
        assert _fork(n, write), labels[n - 1]
        ExportStore(work).recover(lambda m: None)
        assert _snapshot(work) == (old if n <= commit else new), f"kill at {labels[n - 1]}"
        assert _leftovers(work) == []
    verify(work)


def test_copy_to_copies_the_export_byte_for_byte(two, tmp_path):
    said = []
    dest = ExportStore(two).copy_to(tmp_path / "copy", said.append)
    assert _snapshot(dest) == _snapshot(two) and said == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy", "two"]  # no staging left


def test_copy_to_refuses_a_folder_with_files_and_a_copy_that_does_not_verify(two, tmp_path):
    full = tmp_path / "full"
    full.mkdir()
    (full / "mine.txt").write_text("x")
    with pytest.raises(UserError, match=r"copy_to=.*full: exists and is not an empty folder"):
        ExportStore(two).copy_to(full, print)
    (two / "cohort" / "tasks.jsonl").write_bytes(b"{}\n")  # a changed byte: no longer verifies
    with pytest.raises(UserError, match="the copy does not verify, nothing copied"):
        ExportStore(two).copy_to(tmp_path / "copy", print)
    assert not (tmp_path / "copy").exists()
    assert not [p for p in tmp_path.iterdir() if ".copy." in p.name]


def test_subset_writes_a_new_export_with_the_cut_suites(two, tmp_path):
    suites = read_records(two / "cohort" / "suites.jsonl")
    cut = [dict(suites[0], episode_ids=["P01-ep1"], task_ids=["t1", "t2"])]
    seen = []

    def runs(root, fingerprint):
        seen.append((sorted(p.name for p in (root / "cohort").iterdir()), fingerprint))
        return {}

    dst = ExportStore(two).subset(tmp_path / "cut", encode_records("suites.jsonl", cut), runs)
    assert read_records(dst / "cohort" / "suites.jsonl") == cut
    assert {k: v for k, v in _snapshot(dst).items()
            if k.startswith("cohort/") and k != "cohort/suites.jsonl"} == \
        {k: v for k, v in _snapshot(two).items()
         if k.startswith("cohort/") and k != "cohort/suites.jsonl"}
    from analysis.records.manifest import cohort_fingerprint, read_manifest
    assert seen == [(sorted(TYPES), cohort_fingerprint(read_manifest(dst)))]
    assert not (dst / "runs").exists()
    verify(dst)


def test_subset_whose_runs_refuse_leaves_no_destination(two, tmp_path):
    def runs(root, fingerprint):
        raise ValueError("a run that does not re-execute")

    with pytest.raises(ValueError, match="does not re-execute"):
        ExportStore(two).subset(tmp_path / "cut", b"", runs)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["two"]

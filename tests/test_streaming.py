"""Streaming verification, the parallel verify of ``analysis.verify`` and the figure worker
of ``analysis.tables``: the same answers as the one-process, keep-everything path.

These pin the speed work of issue 13 (group records streamed into the loader's columns,
a second verifying process, figures drawn by a process forked before the heavy imports):
each shortcut must be invisible in what a user gets.
"""
from __future__ import annotations

import gzip
import os
import time
from pathlib import Path

import pytest

from analysis.records import IntegrityError, load, verify
from analysis.records.integrity import StreamedRecords, verify_records
from analysis.records.io import read_records

from export_factory import build_export, build_rich_export

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def rich(tmp_path_factory):
    return build_rich_export(tmp_path_factory.mktemp("rich") / "export")


def _group_files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.glob("runs/*/groups.jsonl.gz"))


def test_streamed_records_decode_to_what_was_verified(rich):
    _, _, kept = verify_records(rich)
    seen = []
    _, _, streamed = verify_records(rich, stream={"group_record": seen.append})
    for rel in _group_files(rich):
        view = streamed[rel]
        assert isinstance(view, StreamedRecords)
        assert len(view) == len(kept[rel])
        assert list(view) == kept[rel] == read_records(rich / rel)
        assert view[0] == kept[rel][0] and view[-1] == kept[rel][-1]
        assert view[1:3] == kept[rel][1:3]
        with pytest.raises(IndexError, match="out of range"):
            view[len(view)]
    # the callback saw every group record once, in path order
    assert seen == [r for rel in _group_files(rich) for r in kept[rel]]
    # other record types are kept as lists
    assert isinstance(streamed["cohort/tasks.jsonl"], list)


def test_projection_keeps_only_the_named_fields(rich):
    _, _, streamed = verify_records(rich, stream={"group_record": None})
    rel = _group_files(rich)[0]
    full = list(streamed[rel])
    part = streamed[rel].decode(fields=("group_id", "attempts"))
    assert part == [{"group_id": g["group_id"], "attempts": g["attempts"]} for g in full]


def test_streamed_records_never_reread_the_disk(rich, tmp_path):
    """Decoding again uses the verified bytes held in memory: a file changed after
    verification cannot slip into an export that was loaded."""
    import shutil
    root = tmp_path / "copy"
    shutil.copytree(rich, root)
    export = load(root)
    rel = _group_files(root)[0]
    before = list(export.raw(rel))
    (root / rel).write_bytes(gzip.compress(b'{"forged":true}\n'))
    assert list(export.raw(rel)) == before


def test_load_builds_the_same_frames_as_the_kept_records(rich):
    """The loader's streaming columns equal a direct count over the kept records."""
    export = load(rich)
    _, _, kept = verify_records(rich)
    groups = [g for rel in _group_files(rich) for g in kept[rel]]
    gr = export.group_records
    assert list(gr.group_id) == [g["group_id"] for g in groups]
    assert list(gr.n_attempts) == [len(g["attempts"]) for g in groups]
    assert list(gr.n_accepted) == [sum(a["status"] == "accepted" for a in g["attempts"])
                                   for g in groups]
    assert list(gr.attempted_types) == [sorted({a["action"]["type"] for a in g["attempts"]
                                                if a["action"]}) for g in groups]
    assert len(export.attempts) == sum(len(g["attempts"]) for g in groups)
    run_id = export.runs.run_id.iloc[0]
    assert list(export.group_records_of(run_id)) == kept[f"runs/{run_id}/groups.jsonl.gz"]
    with pytest.raises(KeyError, match="runs:"):
        export.group_records_of("nobody__planner__persistent")


def test_two_processes_verify_like_one(rich):
    one = verify(rich)
    two = verify(rich, workers=2)
    assert two.summary() == one.summary()
    _, _, recs = verify_records(rich, stream={"group_record": None}, workers=2)
    _, _, kept = verify_records(rich)
    for rel in _group_files(rich):
        assert list(recs[rel]) == kept[rel]


def _corrupt_group_line(root: Path, rel: str, line: int) -> None:
    """Break one record's content while keeping the file hash consistent, so that the
    failure is found while decoding (not by the file hash)."""
    from analysis.records import update_manifest
    path = root / rel
    lines = gzip.decompress(path.read_bytes()).split(b"\n")
    lines[line] = lines[line].replace(b'"status":"', b'"status":"x', 1)
    recs = [__import__("json").loads(x) for x in lines if x]
    from analysis.records import write_records
    write_records(path, recs)
    update_manifest(root, {rel: "group_record"})


def test_two_processes_report_the_first_failing_file(rich, tmp_path):
    """Whichever process finds it, the error is that of the first bad file in path order,
    exactly as one process reports it."""
    import shutil
    root = tmp_path / "bad"
    shutil.copytree(rich, root)
    from analysis.records.integrity import _split
    from analysis.records.manifest import read_manifest
    files = _group_files(root)
    child = sorted(_split(read_manifest(root), {"group_record": None}))
    parent = [f for f in files if f not in child]
    assert child and parent  # both processes verify group files here
    # first a bad file of each process alone, then both (the earlier one is reported)
    for bad in ([child[0]], [parent[-1]], [child[-1], parent[0]], [parent[-1], child[0]]):
        work = tmp_path / f"bad{len(list(tmp_path.iterdir()))}"
        shutil.copytree(root, work)
        for i, rel in enumerate(bad):
            _corrupt_group_line(work, rel, i)
        with pytest.raises(IntegrityError) as one:
            verify(work)
        with pytest.raises(IntegrityError) as two:
            verify(work, workers=2)
        assert str(two.value) == str(one.value)
        first = min(bad)
        assert two.value.file == first and two.value.line == bad.index(first) + 1


def test_integrity_error_survives_pickling():
    import pickle
    exc = IntegrityError("runs/a/groups.jsonl.gz", "bad", line=3, record_id="g1")
    back = pickle.loads(pickle.dumps(exc))
    assert str(back) == str(exc)
    assert (back.file, back.line, back.record_id, back.message) == (
        "runs/a/groups.jsonl.gz", 3, "g1", "bad")


# --- the figure worker -------------------------------------------------------------------

@pytest.mark.skipif(not hasattr(os, "fork"), reason="the worker needs os.fork")
def test_worker_draws_the_figures_this_process_would(rich):
    from analysis._cli.figure_worker import FigureWorker, draw_figures
    from analysis.report import compute
    export = load(rich)
    results = compute(export, {"stats": {"n_resamples": 200}})
    here = draw_figures(results, export)
    worker = FigureWorker.start()
    worker.submit(results)
    there = worker.collect()
    assert list(there) == list(here) and there
    from analysis.report import Skipped
    for name in here:
        assert there[name][1] == here[name][1], name  # PNG, PDF and CSV bytes
        a, b = there[name][0], here[name][0]
        if isinstance(b, Skipped):   # fig15: the synthetic records do not re-execute
            assert a == b, name
            continue
        assert (a.name, a.title, a.notes, a.figure) == (b.name, b.title, b.notes, None)
        assert a.data.equals(b.data)
    assert any(not isinstance(here[n][0], Skipped) for n in here)   # some figure was drawn


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the worker needs os.fork")
def test_dismissed_worker_is_reaped_at_once():
    from analysis._cli.figure_worker import FigureWorker
    worker = FigureWorker.start()
    pid = worker.pid
    t = time.perf_counter()
    worker.close()
    assert time.perf_counter() - t < 5  # killed, not left to finish its imports
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, 0)  # already reaped: no zombie left behind
    worker.close()  # twice is harmless


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the worker needs os.fork")
def test_worker_hands_back_a_builder_error():
    from analysis._cli.figure_worker import FigureWorker
    worker = FigureWorker.start()
    worker.submit(object())  # not results: the figure builders fail on it
    with pytest.raises(AttributeError):
        worker.collect()


def test_records_grouped_by_a_field_decode_as_the_whole_file(rich):
    """``decode_by``/``grouped`` (one episode's records decoded at a time, the failure
    labels' and excerpts' memory) give exactly the records of a whole decode, grouped by
    the field in sorted order, file order within a group, also when the file is not
    ordered by that field."""
    from analysis.records.io import encode_records
    _, _, streamed = verify_records(rich, stream={"group_record": None})
    for rel in _group_files(rich):
        view = streamed[rel]
        full = view.decode()
        want: dict = {}
        for r in full:
            want.setdefault(r["episode_id"], []).append(r)
        got = list(view.decode_by("episode_id"))
        assert [e for e, _ in got] == sorted(want) and dict(got) == want
        part = dict(view.decode_by("episode_id", fields=("group_id",)))
        assert part == {e: [{"group_id": r["group_id"]} for r in rs] for e, rs in want.items()}
    # a file in no particular order: records of "b" at lines 0 and 2
    recs = [{"e": "b", "i": 0}, {"e": "a", "i": 1}, {"e": "b", "i": 2}, {"e": "c", "i": 3}]
    raw = encode_records("x.jsonl.gz", recs)
    view = StreamedRecords("x.jsonl.gz", {"record_type": "group_record",
                                          "decompressed_size": len(gzip.decompress(raw))},
                           raw, 4)
    assert list(view.decode_by("e", fields=("e", "i"))) == [
        ("a", [recs[1]]), ("b", [recs[0], recs[2]]), ("c", [recs[3]])]
    groups = view.grouped("e", fields=("i",))
    assert groups.values == ["a", "b", "c"]
    assert groups.decode("b") == [{"i": 0}, {"i": 2}] and groups.decode("z") == []

"""The suite's own plumbing: a folder built once for both xdist workers
(tests/shared_build.py) and the queue that spreads the slow files over the workers'
first chunks (tests/conftest.py)."""
from __future__ import annotations

import os
import time
import types
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from conftest import queue_order, worksteal_chunks
from shared_build import build_once


def _build_in_worker(session: str, worker: str, log: str) -> str:
    """What a worker's session fixture does: its basetemp is <session>/popen-<worker>."""
    os.environ["PYTEST_XDIST_WORKER"] = worker
    mine = Path(session) / f"popen-{worker}"
    mine.mkdir(exist_ok=True)
    factory = types.SimpleNamespace(getbasetemp=lambda: mine)

    def build(folder: Path) -> None:
        with open(log, "a") as f:
            f.write(f"{worker}\n")
        time.sleep(0.5)  # the other worker asks meanwhile
        (folder / "data.txt").write_text("built")

    return str(build_once(factory, "thing", build))


def test_two_workers_build_the_folder_once_and_share_it(tmp_path):
    log = tmp_path / "log"
    with ProcessPoolExecutor(2) as pool:
        a, b = pool.map(_build_in_worker, [str(tmp_path)] * 2, ["gw0", "gw1"], [str(log)] * 2)
    assert a == b == str(tmp_path / "shared-thing")  # in the session's folder, not a worker's
    assert len(log.read_text().splitlines()) == 1  # built by one worker only
    assert (Path(a) / "data.txt").read_text() == "built"
    assert not (tmp_path / "shared-thing.partial").exists()


def test_a_failed_build_leaves_nothing_and_the_next_call_builds_again(tmp_path):
    factory = types.SimpleNamespace(getbasetemp=lambda: tmp_path)

    def fail(folder: Path) -> None:
        (folder / "half").write_text("x")
        raise RuntimeError("boom")

    try:
        build_once(factory, "x", fail)
    except RuntimeError:
        pass
    assert not (tmp_path / "shared-x").exists()
    done = build_once(factory, "x", lambda folder: (folder / "ok").write_text("y"))
    assert sorted(p.name for p in done.iterdir()) == ["ok"]  # not the failed build's file


def test_worksteal_chunks_cover_the_queue_in_order():
    assert worksteal_chunks(1533, 2) == [766, 767]
    assert sum(worksteal_chunks(7, 3)) == 7 and worksteal_chunks(7, 3) == [2, 2, 3]


def test_slow_files_go_to_the_chunk_with_fewest_slow_seconds():
    # a 100-s file alone on one worker, the 60-, 30- and 20-s files on the other; the fast
    # files (no slow seconds) fill each chunk to its size in collection order
    files = [("f1", 0, 4), ("s60", 60, 2), ("s100", 100, 1), ("f2", 0, 3), ("s30", 30, 1),
             ("s20", 20, 1), ("f3", 0, 2)]
    assert worksteal_chunks(14, 2) == [7, 7]
    assert queue_order(files, 2) == [["s100", "f1", "f2"], ["s60", "s30", "s20", "f3"]]
    # the slow files of one chunk hold more tests than the chunk: no spread order
    assert queue_order([("s", 10, 9), ("t", 5, 1)], 2) is None

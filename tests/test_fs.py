"""The file-system plumbing every writer shares (analysis/_fs): the one atomic write and
the one fork worker (issue 36: one of each instead of four writers and two workers)."""
from __future__ import annotations

import os
import stat
import time

import pytest

from analysis._fs.atomic import atomic_write, default_file_mode, keep_previous
from analysis._fs.fork import ForkWorker


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "MANIFEST.json"
    target.write_bytes(b"old")
    with pytest.raises(TypeError):
        atomic_write(target, "not bytes")  # the write itself fails
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["MANIFEST.json"]


def test_permissions_are_private_unless_asked_and_the_name_is_as_given(tmp_path):
    private = atomic_write(tmp_path / "journal.json", b"{}", fsync=True)
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    plain = atomic_write(tmp_path / "t.csv", b"a\n", mode=default_file_mode())
    old = os.umask(0o022)
    os.umask(old)
    assert stat.S_IMODE(plain.stat().st_mode) == 0o666 & ~old
    assert plain.read_bytes() == b"a\n"


def test_keep_previous_replaces_an_older_previous(tmp_path):
    log = tmp_path / "calls.jsonl"
    (tmp_path / "calls.jsonl.previous").write_bytes(b"oldest")
    log.write_bytes(b"older")
    assert keep_previous(log).read_bytes() == b"older"
    assert not log.exists()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the worker needs os.fork")
def test_the_worker_answers_with_what_the_child_computed_after_the_fork():
    state = {"n": 2}
    worker = ForkWorker.start(lambda xs: [x * state["n"] for x in xs], name="doubling process",
                              takes_request=True)
    state["n"] = 3  # the parent's change after the fork is not the child's
    worker.submit([1, 2, 3])
    assert worker.collect() == [2, 4, 6]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the worker needs os.fork")
def test_the_worker_raises_the_childs_exception_and_names_a_missing_answer():
    worker = ForkWorker.start(lambda: {}["missing"], name="failing process")
    with pytest.raises(KeyError, match="missing"):
        worker.collect()
    worker = ForkWorker.start(lambda: os._exit(0), name="vanishing process")
    with pytest.raises(RuntimeError, match="^the vanishing process ended without an answer$"):
        worker.collect()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the worker needs os.fork")
def test_a_dismissed_worker_is_killed_and_reaped_at_once():
    worker = ForkWorker.start(lambda: time.sleep(60), name="sleeping process")
    pid = worker.pid
    t = time.perf_counter()
    worker.close()
    assert time.perf_counter() - t < 10
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, 0)  # already reaped
    worker.close()  # twice is harmless

"""A read-only folder that several tests need, built once per test session.

The suite runs on two pytest-xdist workers, and work stealing splits a file's tests between
them at whatever point it steals, so a module fixture is built once per worker holding some
of its tests, and again each time a worker comes back to the file. The folders returned
here are built by the first worker that asks, under a lock; the other waits for it and
reads the same folder (pytest-xdist's recipe for a session fixture that runs once: the
workers' temporary folders share a parent folder of this session). Without xdist the
folder lives in the session's own temporary folder.

A folder is built into a temporary name and renamed when complete, so a build that fails
leaves no half-built folder behind for the other worker: it builds it again (and fails
with the same error). Callers never write into the folder: a test that changes an export
copies it first.

>>> import tempfile, types
>>> session = Path(tempfile.mkdtemp())
>>> factory = types.SimpleNamespace(getbasetemp=lambda: session)  # as tmp_path_factory
>>> def build(folder):
...     (folder / "a.txt").write_text("built")
>>> first = build_once(factory, "example", build)
>>> (first / "a.txt").read_text()
'built'
>>> build_once(factory, "example", lambda folder: 1 / 0) == first  # built already
True
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Callable

from analysis._fs.locking import file_lock


def build_once(tmp_path_factory, name: str, build: Callable[[Path], None]) -> Path:
    """The folder ``name`` of this test session, filled by ``build(folder)`` the first time
    any worker asks for it (``build`` receives an empty folder that exists)."""
    root = tmp_path_factory.getbasetemp()
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker and root.name.endswith(worker):  # a worker's folder (.../popen-gw0)
        root = root.parent  # this session's, shared by its workers
    done = root / f"shared-{name}"
    with file_lock(root / f"shared-{name}.lock"):
        if not done.is_dir():
            partial = root / f"shared-{name}.partial"
            if partial.exists():  # a build that raised: start again
                shutil.rmtree(partial)
            partial.mkdir()
            build(partial)
            partial.rename(done)
    return done

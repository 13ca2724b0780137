"""Running a suite's episodes: serial, in processes or in threads, with a resume journal.

Episodes are independent (each starts from its own initial world with a fresh planner and
belief; planners seed from ``(seed, episode, group, call)``), so they may run in any order
and in parallel; results are returned in the suite's episode order, so the records equal a
serial run's. Processes suit CPU-bound planners; threads suit planners that wait on a
network endpoint (their class sets ``io_bound = True``).

Resume: every finished episode is written to a journal folder
(``<state_dir>/<run_id>-<fingerprint>/episodes/<n>.json.gz``, atomically) keyed by a
fingerprint of everything that determines the records (cohort, planner configuration,
seed, memory, runtime, and the executor's and planners' source code). A rerun of the same command after a crash or ``kill -9`` reads the
finished episodes back and runs only the others; the final records are byte-identical to
an uninterrupted run. An episode stopped by a provider error is not journaled (it reruns
on resume); the run is then incomplete: :class:`RunIncomplete` names the failed groups
and ``incomplete.json`` in the journal keeps their records. The journal is removed once
the run is written.

>>> fingerprint({"a": 1}) == fingerprint({"a": 1})
True
"""
from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from .._fs.atomic import atomic_write
from .._fs.locking import export_lock  # noqa: F401 -- re-exported: the one lock of every writer

__all__ = ["RunIncomplete", "RunJournal", "JournalMismatch", "run_episodes", "fingerprint",
           "default_state_dir", "export_lock"]


class RunIncomplete(RuntimeError):
    """Some groups ended ``provider_error``: nothing is written to the export; rerunning
    the same command resumes from the journal."""


def fingerprint(obj: Any) -> str:
    """SHA-256 of the canonical JSON of ``obj`` (first 16 hex digits)."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def default_state_dir(export_root: str | os.PathLike) -> Path:
    """The journal and lock folder of one export, under the user cache directory
    (:func:`analysis._fs.resources.user_cache_dir`): never inside the export (verification
    lists every file) nor beside it (a clone's working tree stays clean).

    >>> default_state_dir("/tmp/scratch").name.startswith("scratch-")
    True
    """
    from .._fs.resources import user_cache_dir
    root = Path(export_root).resolve()
    return user_cache_dir() / "run_state" / f"{root.name}-{fingerprint(str(root))}"


def code_fingerprint() -> str:
    """SHA-256 over the executor's and planners' sources (and rules): a journal written
    by other code is never resumed from."""
    pkg = Path(__file__).resolve().parents[1]  # the analysis package
    h = hashlib.sha256()
    for sub in ("executor", "planners"):
        for p in sorted((pkg / sub).rglob("*")):
            if p.suffix in (".py", ".yaml", ".json") and "__pycache__" not in p.parts:
                h.update(p.relative_to(pkg).as_posix().encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:16]


class JournalMismatch(ValueError):
    """A journaled episode that its own recorded planner replies do not derive (edited
    or planted): refused, nothing written."""


def _canon(obj) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


class RunJournal:
    """Finished episodes of one run configuration (and code version), on disk.

    The journal is state that may have been edited since it was written, so nothing in
    it is trusted: ``derive(index, groups)`` (set by the caller) re-executes a journaled
    episode from the cohort through the runtime loop with the journaled planner replies
    (no planner or provider call) and must give exactly the journaled records, else
    :class:`JournalMismatch` names the file; the derived records are what is used. A
    damaged entry (not gzip/JSON, another episode) is rerun; a symlink, FIFO or device in
    place of an entry is refused (never read).
    """

    def __init__(self, state_dir: str | os.PathLike, run_id: str, key: Mapping,
                 derive: Callable[[int, list], tuple] | None = None):
        self.key = {**dict(key), "code": code_fingerprint()}
        self.dir = Path(state_dir) / f"{run_id}-{fingerprint(self.key)}"
        self.derive = derive

    def _path(self, index: int) -> Path:
        return self.dir / "episodes" / f"{index:05d}.json.gz"

    def _hint(self) -> str:
        return f"nothing written; to clear it, remove {self.dir} (or pass resume=false)"

    def load(self, index: int, episode_id: str):
        from .._fs.confine import ConfinementError, read_regular
        p = self._path(index)
        for d in (Path(self.dir), p.parent):
            if d.is_symlink():
                raise ConfinementError(f"{d}: a resume journal folder that is a symlink; "
                                       f"{self._hint()}")
        if not os.path.lexists(p):
            return None
        try:
            raw = read_regular(p, limit=256 << 20)
        except ConfinementError as exc:
            raise ConfinementError(f"{exc}; {self._hint()}") from None
        try:
            data = json.loads(gzip.decompress(raw).decode("utf-8"))
            groups, tasks = data["groups"], data["tasks"]
            if data.get("episode_id") != episode_id or not isinstance(groups, list):
                return None
        except (OSError, ValueError, EOFError, KeyError, TypeError, AttributeError):
            return None  # a damaged entry is rerun, never trusted
        if self.derive is None:
            raise JournalMismatch(f"{p}: a journal entry cannot be checked without "
                                  f"derive; {self._hint()}")
        try:
            derived = self.derive(index, groups)
        except Exception as exc:  # noqa: BLE001 -- any failure to derive is a refusal
            raise JournalMismatch(f"{p}: the journaled episode cannot be re-executed "
                                  f"({type(exc).__name__}: {exc}); {self._hint()}") from None
        if derived[2] is not None or (_canon([derived[0], derived[1]])
                                      != _canon([groups, tasks])):
            raise JournalMismatch(f"{p}: the journaled records differ from what their own "
                                  "planner replies derive (edited or planted); "
                                  f"{self._hint()}")
        return derived[0], derived[1], None

    def save(self, index: int, episode_id: str, result) -> None:
        groups, tasks, _ = result
        p = self._path(index)
        p.parent.mkdir(parents=True, exist_ok=True)
        if not (self.dir / "key.json").exists():
            _atomic_write(self.dir / "key.json", json.dumps(self.key, sort_keys=True).encode())
        body = json.dumps({"episode_id": episode_id, "groups": groups, "tasks": tasks},
                          sort_keys=True, separators=(",", ":")).encode("utf-8")
        _atomic_write(p, gzip.compress(body, mtime=0))

    def record_incomplete(self, failures: list[dict]) -> Path:
        p = self.dir / "incomplete.json"
        _atomic_write(p, json.dumps(failures, sort_keys=True, indent=1).encode("utf-8"))
        return p

    def finish(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def _atomic_write(path: Path, data: bytes) -> None:
    """Replace the state file ``path`` (fsynced temporary file, then a rename); a
    symlink, FIFO or device in its place, or a symlink in place of its folder, is refused
    naming it before anything is written (:mod:`analysis._fs.confine`)."""
    from .._fs.confine import ConfinementError, disk_error, state_folder
    path = Path(path)
    if path.is_symlink() or (os.path.lexists(path) and not path.is_file()):
        raise ConfinementError(f"{path}: a state file that is not a regular file (a "
                               "symlink, FIFO or device); remove it")
    state_folder(path.parent, "the state folder")
    try:
        atomic_write(path, data, fsync=True)
    except OSError as exc:
        raise disk_error(path, exc, "nothing written to the export") from None


def run_episodes(job: Callable, args: Sequence, episode_ids: Sequence[str], jobs: int = 1,
                 threads: bool = False, journal: RunJournal | None = None,
                 on_done: Callable[[int, int], None] | None = None) -> list:
    """``[job(a) for a in args]`` (each ``(groups, tasks, provider_error)``), in order,
    with ``jobs`` workers and the resume journal; raises :class:`RunIncomplete` when an
    episode ended with a provider error (after every other episode finished).
    ``on_done(finished, failed)`` is called as episodes end (``failed``: of those, the
    ones stopped by a provider error)."""
    results: list = [None] * len(args)
    todo = []
    for i, eid in enumerate(episode_ids):
        got = journal.load(i, eid) if journal is not None else None
        if got is not None:
            results[i] = got
        else:
            todo.append(i)
    done = len(args) - len(todo)
    failed = 0
    if on_done:
        on_done(done, failed)

    def finish(i: int, res) -> None:
        nonlocal done, failed
        res = tuple(res)
        results[i] = res
        if journal is not None and res[2] is None:
            journal.save(i, episode_ids[i], res)
        done += 1
        failed += res[2] is not None
        if on_done:
            on_done(done, failed)

    if jobs == 1 or len(todo) <= 1:
        for i in todo:
            finish(i, job(args[i]))
    else:
        pool_cls = ThreadPoolExecutor if threads else ProcessPoolExecutor
        with pool_cls(max_workers=jobs) as pool:
            pending = {pool.submit(job, args[i]): i for i in todo}
            while pending:
                ready, _ = wait(pending, return_when=FIRST_COMPLETED)
                for fut in ready:
                    finish(pending.pop(fut), fut.result())
    failures = [{"episode_id": episode_ids[i], "group_id": r[0][-1]["group_id"] if r[0] else None,
                 "error": r[2], "groups": r[0]}
                for i, r in enumerate(results) if r[2] is not None]
    if failures:
        where = journal.record_incomplete(failures) if journal is not None else None
        first = failures[0]
        raise RunIncomplete(
            f"{len(failures)} episode(s) stopped by provider_error (first: episode "
            f"{first['episode_id']} group {first['group_id']}: {first['error']}); nothing "
            f"written to the export; {len(args) - len(failures)} finished episode(s) kept"
            + (f" in {journal.dir}" if journal is not None else "")
            + "; rerun the same command to resume"
            + (f" (failed groups' records: {where})" if where else ""))
    return results

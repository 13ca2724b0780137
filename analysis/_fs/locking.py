"""One lock for every writer of an export (``run``, ``add_planner``, ``compile``,
``tables``) and of an output folder.

The lock is an exclusive ``fcntl.flock`` on a lock file. The kernel releases it when its
holder exits, however it exits (``kill -9`` included), so a stale lock cannot exist and a
reused PID cannot wedge it. The holder writes its PID into the file only so that a waiting
command can say whom it waits for. The lock file itself is never deleted (deleting a lock
file races with a process about to lock it); it is an empty, harmless file.

Lock files of an export live in :func:`lock_path`: under the user cache directory
(:func:`analysis._fs.resources.user_cache_dir`, ``$E2W_CACHE_DIR`` to move it, e.g. onto a
filesystem shared by the nodes of a cluster), never inside the export (verification
lists every file) nor beside it (a clone's working tree stays clean), the same whatever
``state_dir`` a run was given, so that every writer of one export meets the same lock.

>>> import tempfile, pathlib
>>> root = pathlib.Path(tempfile.mkdtemp()) / "export"
>>> with export_lock(root):
...     pass
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Callable

from .confine import ConfinementError
from .errors import LockBusy, disk_error
from .resources import user_cache_dir

__all__ = ["export_lock", "file_lock", "lock_path", "LockBusy"]


def lock_path(export_root: str | os.PathLike) -> Path:
    """The lock file of the export ``export_root``."""
    root = Path(export_root).resolve()
    digest = hashlib.sha256(str(root).encode()).hexdigest()[:16]
    return user_cache_dir() / "locks" / f"{root.name}-{digest}.lock"


def _holder(fd: int) -> str:
    try:
        text = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
    except OSError:
        return "another process"
    return f"pid {text}" if text.isdigit() else "another process"


@contextmanager
def file_lock(path: str | os.PathLike, wait: bool = True,
              say: Callable[[str], None] | None = None, readonly_ok: bool = False):
    """Hold an exclusive ``flock`` on ``path`` (created if absent) for the ``with`` body.

    With ``wait`` the call blocks until the holder finishes (saying once whom it waits
    for); without, :class:`LockBusy` is raised at once. A symlink or a non-regular file
    in place of the lock file is refused (``ValueError`` naming it). ``readonly_ok``
    (for a command that only reads what the lock guards): where the lock file cannot be
    created for lack of permission or on a read-only file system, no writer can change
    it either, and the body runs without the lock.
    """
    import errno

    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
                     | getattr(os, "O_CLOEXEC", 0), 0o644)
    except OSError as exc:
        if path.is_symlink():
            raise ConfinementError(f"{path}: the lock file is a symlink; remove it (no "
                                   "process holds a lock through it)") from None
        if readonly_ok and exc.errno in (errno.EACCES, errno.EROFS, errno.EPERM):
            yield
            return
        raise disk_error(path, exc) from None
    try:
        import stat
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ConfinementError(f"{path}: the lock file is not a regular file; remove it")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            who = _holder(fd)
            if not wait:
                raise LockBusy(f"{path}: held by {who} (a live process: the lock is released "
                               "when it exits, so it can never be stale); wait for it "
                               "to finish") from None
            (say or (lambda m: print(m, file=sys.stderr, flush=True)))(
                f"waiting for {who} to release {path}")
            fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
        except OSError:
            pass  # the PID is only for the message above
        try:
            yield
        finally:
            try:
                os.ftruncate(fd, 0)
            except OSError:
                pass
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


_held: dict[str, int] = {}


@contextmanager
def export_lock(export_root: str | os.PathLike, wait: bool = True,
                say: Callable[[str], None] | None = None, readonly_ok: bool = False):
    """Serialize the writers of one export (re-entrant within a process: a command
    holding it may call a function that takes it again); ``readonly_ok`` as in
    :func:`file_lock`."""
    key = str(lock_path(export_root))
    if _held.get(key):
        _held[key] += 1
        try:
            yield
        finally:
            _held[key] -= 1
        return
    with file_lock(key, wait=wait, say=say, readonly_ok=readonly_ok):
        _held[key] = 1
        try:
            yield
        finally:
            _held.pop(key, None)

"""Confinement of the paths a command reads from its own state (journals, staging,
``GENERATION.json``, resume journals, cache entries, locks), and disk faults that name
their file.

Everything a command wrote earlier may have been edited, planted or truncated since, so
it is checked on read like user input: a path taken from such a file must be relative,
normalised (no ``..``, ``.`` or empty segment, no backslash), and stay inside its root
without passing through a symlink; a file read from state must be a regular file (a FIFO
would block, a device never ends), opened without following a symlink.

>>> confined_rel("tables/t1.csv", "GENERATION.json")
'tables/t1.csv'
>>> confined_rel("../victim.txt", "GENERATION.json")
Traceback (most recent call last):
...
analysis.confine.ConfinementError: GENERATION.json: path '../victim.txt' leaves its folder (segment '..')
"""
from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

__all__ = ["ConfinementError", "DiskError", "state_refusals", "export_holding",
           "state_path_problem", "confined_rel", "confined_path", "read_regular",
           "disk_error"]


class ConfinementError(ValueError):
    """A path read from a command's own state leaves its folder, or is not a regular
    file; nothing was touched."""


class DiskError(OSError):
    """A local write failed (disk full, file size limit, permissions): names the file."""

    def __str__(self) -> str:
        return self.strerror or super().__str__()


def confined_rel(rel, where: str) -> str:
    """``rel`` if it is a normalised relative POSIX path, else :class:`ConfinementError`
    naming ``where`` (the file ``rel`` was read from)."""
    if not isinstance(rel, str) or not rel:
        raise ConfinementError(f"{where}: path {rel!r} is not a non-empty string")
    if "\\" in rel or "\0" in rel:
        raise ConfinementError(f"{where}: path {rel!r} holds a backslash or NUL")
    if rel.startswith("/") or (len(rel) > 1 and rel[1] == ":"):
        raise ConfinementError(f"{where}: path {rel!r} is absolute")
    for seg in rel.split("/"):
        if seg in ("", ".", ".."):
            raise ConfinementError(f"{where}: path {rel!r} leaves its folder "
                                   f"(segment {seg!r})")
    return rel


def confined_path(root: str | os.PathLike, rel, where: str) -> Path:
    """``root / rel`` after :func:`confined_rel`, refused when a folder on the way below
    ``root`` is a symlink (it could point anywhere)."""
    rel = confined_rel(rel, where)
    root = Path(root)
    cur = root
    for seg in rel.split("/")[:-1]:
        cur = cur / seg
        if cur.is_symlink():
            raise ConfinementError(f"{where}: path {rel!r} passes through the symlink {cur}")
    return root / rel


def read_regular(path: str | os.PathLike, what: str | None = None,
                 limit: int = 1 << 30) -> bytes:
    """The bytes of ``path``, which must be a regular file (not a symlink, FIFO or
    device) of at most ``limit`` bytes; :class:`ConfinementError` otherwise, and
    ``FileNotFoundError`` when it is absent. Never blocks on a FIFO."""
    path = Path(path)
    what = what or str(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
                     | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ConfinementError(f"{what}: is a symlink, not a regular file") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ConfinementError(f"{what}: is not a regular file (mode "
                                   f"{stat.filemode(st.st_mode)})")
        if st.st_size > limit:
            raise ConfinementError(f"{what}: {st.st_size} bytes, more than the {limit} allowed")
        chunks, total = [], 0
        while True:
            b = os.read(fd, 1 << 20)
            if not b:
                break
            total += len(b)
            if total > limit:
                raise ConfinementError(f"{what}: more than the {limit} bytes allowed")
            chunks.append(b)
        return b"".join(chunks)
    finally:
        os.close(fd)


def export_holding(path: str | os.PathLike) -> Path | None:
    """The export (a folder with a ``MANIFEST.json``) that ``path`` is in or is, or None.
    An export holds only what its manifest lists, so no command may put state there."""
    p = Path(path).expanduser().resolve()
    for d in (p, *p.parents):
        if (d / "MANIFEST.json").is_file():
            return d
    return None


def state_path_problem(path, kind: str, export_root=None) -> str | None:
    """Why ``path`` cannot hold a command's state or output of ``kind`` (``"dir"`` or
    ``"file"``), or None: inside an export (``export_root`` or any other), or of the wrong
    kind (a file for a folder, a folder/FIFO/device for a file, a symlink).

    >>> state_path_problem("/dev/null", "dir")
    'is not a folder'
    """
    p = Path(path).expanduser()
    ex = export_holding(p)
    if ex is None and export_root is not None:
        root = Path(export_root).expanduser().resolve()
        r = p.resolve()
        if r == root or root in r.parents:
            ex = root
    if ex is not None:
        return (f"is inside the export {ex} (an export holds only what its manifest lists); "
                "choose a folder outside it")
    if kind == "dir":
        if p.is_symlink() and not p.is_dir():
            return "is a dangling symlink"
        if p.exists() and not p.is_dir():
            return "is not a folder"
    else:
        if p.is_symlink():
            return "is a symlink (a log is written to a regular file only)"
        if p.exists() and not p.is_file():
            return "is not a regular file (a folder, FIFO or device)"
    return None


def state_refusals() -> tuple:
    """The refusals of state a command's entry point reports as one line, exit 1."""
    from .locking import LockBusy
    from .transaction import JournalError, TransactionBusy
    return (ConfinementError, DiskError, JournalError, TransactionBusy, LockBusy)


def disk_error(path, exc: OSError, changed: str = "nothing was changed") -> DiskError:
    """A :class:`DiskError` naming ``path`` (what was being written) and what changed."""
    why = exc.strerror or str(exc)
    if exc.errno == errno.EFBIG:
        why = "file too large (a file size limit)"
    err = DiskError(exc.errno, f"cannot write {path}: {why}; {changed}")
    err.filename = str(path)
    return err

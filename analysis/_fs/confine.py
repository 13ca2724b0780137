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
analysis._fs.errors.ConfinementError: GENERATION.json: path '../victim.txt' leaves its folder (segment '..')
"""
from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from .atomic import atomic_write
from .errors import (ConfinementError, DiskError, JournalError, LocalFault, LockBusy,
                     TransactionBusy, disk_error, local_fault)

__all__ = ["LocalFault", "ConfinementError", "DiskError", "state_refusals", "export_holding",
           "state_path_problem", "confined_rel", "confined_path", "read_regular",
           "disk_error", "state_folder", "open_state", "write_state", "local_fault"]


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


def state_folder(path: str | os.PathLike, what: str, levels: int = 1) -> Path:
    """Create the folder ``path`` (parents too) for a command's state and return it;
    :class:`ConfinementError` when it, or one of the ``levels - 1`` folders above it (the
    folders the command owns, e.g. ``shards/<n>``), is a symlink or not a folder: a
    planted link would send the state anywhere.

    >>> import tempfile; d = Path(tempfile.mkdtemp())
    >>> (d / "rate").symlink_to("/tmp")
    >>> state_folder(d / "rate", "the rate-limit folder")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    analysis._fs.errors.ConfinementError: the rate-limit folder .../rate is a symlink; remove it (the command recreates it)
    """
    path = Path(path)
    chain = [path, *list(path.parents)[:max(0, levels - 1)]]
    for d in reversed(chain):
        if d.is_symlink():
            raise ConfinementError(f"{what} {d} is a symlink; remove it (the command "
                                   "recreates it)")
        if os.path.lexists(d) and not d.is_dir():
            raise ConfinementError(f"{what} {d} is not a folder; remove it (the "
                                   "command recreates it)")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise disk_error(path, exc, "the command stops (a local fault)") from None
    return path


def open_state(path: str | os.PathLike, flags: int, what: str, mode: int = 0o644) -> int:
    """A file descriptor of the state file ``path`` opened with ``flags`` (plus
    ``O_NOFOLLOW | O_NONBLOCK``), which must be a regular file: a symlink, FIFO or device
    is :class:`ConfinementError` naming it and the next step; other failures are a
    :class:`DiskError` naming it. Never blocks, never follows a link."""
    path = Path(path)
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK
                     | getattr(os, "O_CLOEXEC", 0), mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP or path.is_symlink():
            raise ConfinementError(f"{what} {path} is a symlink; remove it") from None
        raise disk_error(path, exc, "the command stops (a local fault)") from None
    try:
        st = os.fstat(fd)
    except OSError as exc:
        os.close(fd)
        raise disk_error(path, exc, "the command stops (a local fault)") from None
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise ConfinementError(f"{what} {path} is not a regular file (mode "
                               f"{stat.filemode(st.st_mode)}); remove it")
    return fd


def write_state(path: str | os.PathLike, data: bytes, what: str) -> Path:
    """Replace the state file ``path`` by ``data`` atomically (a temporary file beside
    it, then a rename), never writing through a symlink and never into a FIFO or device:
    one that is in its place is refused naming it (:class:`ConfinementError`), before
    anything is written; its folder must not be a symlink (:func:`state_folder`)."""
    path = Path(path)
    if os.path.lexists(path):
        if path.is_symlink():
            raise ConfinementError(f"{what} {path} is a symlink; remove it")
        if not stat.S_ISREG(os.lstat(path).st_mode):
            raise ConfinementError(f"{what} {path} is not a regular file; remove it")
    state_folder(path.parent, f"the folder of {what}")
    try:
        return atomic_write(path, data)
    except OSError as exc:
        raise disk_error(path, exc, "nothing was changed") from None


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
    return (ConfinementError, DiskError, JournalError, TransactionBusy, LockBusy, LocalFault)

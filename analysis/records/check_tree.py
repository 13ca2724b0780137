"""Trust layer 2 of verification: the folder (every file on disk a regular file listed
exactly once, no symbolic link, no unknown folder, every listed file present);
docs/FORMAT.md, "MANIFEST.json".
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

from .integrity_error import IntegrityError
from .manifest import UNLISTED_FILES


# --- the folder --------------------------------------------------------------------------

#: Folders an export may hold empty.
EMPTY_FOLDERS_ALLOWED = frozenset({"runs"})


def _files_on_disk(root: Path, follow: bool, with_folders: bool = False):
    found: set[str] = set()
    folders: set[str] = set()

    def rel_of(p) -> str:
        return Path(p).relative_to(root).as_posix()

    def onerror(exc: OSError):
        raise IntegrityError(rel_of(exc.filename) if exc.filename else str(root),
                             f"unreadable folder ({exc.strerror or exc})")

    for dirpath, dirs, names in os.walk(root, onerror=onerror, followlinks=follow):
        for name in dirs + names:
            full = os.path.join(dirpath, name)
            try:
                st = os.lstat(full)
            except OSError as exc:
                raise IntegrityError(rel_of(full), f"cannot be read ({exc.strerror})") from None
            if stat.S_ISLNK(st.st_mode):
                if follow:
                    if name in dirs:
                        continue
                    st = os.stat(full)
                else:
                    raise IntegrityError(rel_of(full), "is a symbolic link; an export holds "
                                         "regular files and folders only")
            if name in names:
                rel = rel_of(full)
                if not stat.S_ISREG(st.st_mode):
                    raise IntegrityError(rel, "not a regular file")
                if rel not in UNLISTED_FILES:
                    found.add(rel)
            elif not stat.S_ISLNK(st.st_mode):
                folders.add(rel_of(full))
    return (found, folders) if with_folders else found


def _empty_folders(found: set[str], folders: set[str], listed: set[str]) -> list[str]:
    """Folders holding no file (an empty ``runs/x``, a planted folder): as unknown as a
    stray file. Only the top-level ``runs/`` may be empty (every run dropped); a folder
    in place of a listed file is reported as that file missing."""
    holding = {"/".join(f.split("/")[:i]) for f in found for i in range(1, f.count("/") + 1)}
    return sorted(folders - holding - EMPTY_FOLDERS_ALLOWED - listed)


def _read_regular(path: Path, rel: str, follow: bool = False, limit: int | None = None) -> bytes:
    """The bytes of a regular file (at most ``limit + 1``), without following a symlink."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
    if not follow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if not follow and os.path.islink(path):
            raise IntegrityError(rel, "is a symbolic link; an export holds regular files "
                                 "only") from None
        raise IntegrityError(rel, f"cannot be read ({exc.strerror or exc})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise IntegrityError(rel, "not a regular file")
        chunks, total = [], 0
        want = (limit + 1) if limit is not None else None
        while want is None or total < want:
            try:
                chunk = os.read(fd, 1 << 22 if want is None else min(1 << 22, want - total))
            except OSError as exc:
                raise IntegrityError(rel, f"cannot be read ({exc.strerror or exc})") from None
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)

"""The one atomic file write of the package: a file is replaced whole or not at all
(docs/ARCHITECTURE.md, "Layers"; the frozen records, state files, journals and cache
entries all go through it).

The data is written to a temporary file beside ``path`` (same folder, so the rename
cannot cross file systems), optionally fsynced, then renamed over ``path``: a reader sees
the old file or the new one, never a part. On any failure the temporary file is removed
and the exception propagates (callers turn an ``OSError`` into their own one-line
:class:`~analysis._fs.errors.DiskError`, naming what was or was not changed).

>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> atomic_write(d / "a.json", b"{}").read_bytes()
b'{}'
>>> sorted(p.name for p in d.iterdir())  # no temporary file left
['a.json']
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["atomic_write", "default_file_mode", "keep_previous"]


def default_file_mode() -> int:
    """The permissions of a plain ``open(path, "w")`` under the current umask."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def atomic_write(path: str | os.PathLike, data: bytes, *, fsync: bool = False,
                 mode: int = 0o600, prefix: str | None = None, suffix: str = "") -> Path:
    """Replace ``path`` by ``data`` atomically; returns ``path``.

    ``fsync``: flush the file to disk before the rename (a journal that must survive a
    power loss; a cache entry that checks its own hash need not). ``mode``: the file's
    permissions (0600, private, by default; :func:`default_file_mode` for a normal
    file). ``prefix``/``suffix``: the temporary file's name (default ``.<name>.``), so
    that a leftover of a killed writer can be recognised and removed.
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=prefix if prefix is not None else f".{path.name}.",
                               suffix=suffix, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            if mode != 0o600:  # mkstemp creates 0600
                os.fchmod(fh.fileno(), mode)
            fh.write(data)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def keep_previous(path: str | os.PathLike, suffix: str = ".previous") -> Path:
    """Move ``path`` aside to ``path + suffix`` in one rename (replacing an older one),
    so that a fresh file can start at ``path``; returns the new name.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp()); _ = atomic_write(d / "calls.jsonl", b"1")
    >>> keep_previous(d / "calls.jsonl").name, (d / "calls.jsonl").exists()
    ('calls.jsonl.previous', False)
    """
    aside = Path(str(path) + suffix)
    os.replace(path, aside)
    return aside


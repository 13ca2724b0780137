"""The folder ``python -m analysis.tables`` writes into: refused before anything is
computed when it cannot take a generation (a file, read-only, an unwritable subfolder).

Lower than the entry point so that the configuration check (:mod:`analysis._cli.config_check`)
can run it without importing :mod:`analysis.tables`.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["SUBDIRS", "OutputDirError", "check_out_dir", "why_not_writable"]

#: The folders a generation writes under ``out_dir``.
SUBDIRS = ("tables", "figures")


class OutputDirError(ValueError):
    """``out_dir`` cannot take a generation (a file, read-only, ...); nothing computed."""


def why_not_writable(path: Path) -> str | None:
    """Why ``path`` (an existing folder) cannot be written to, or None (a probe file:
    a read-only mount or an ACL can refuse what access() allowed)."""
    if not path.is_dir():
        return "is not a folder"
    if not os.access(path, os.W_OK | os.X_OK):
        return "is not writable"
    try:  # a read-only mount or an ACL can refuse what access() allowed
        fd, probe = tempfile.mkstemp(prefix=".e2w_probe.", dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        return f"is not writable ({exc.strerror})"
    return None


def check_out_dir(out_dir) -> Path:
    """Refuse an ``out_dir`` that cannot take a generation, before anything is computed.

    >>> check_out_dir("/dev/null")
    Traceback (most recent call last):
    ...
    analysis._cli.out_dir.OutputDirError: out_dir=/dev/null: is not a folder
    """
    out = Path(out_dir)
    if out.exists() or out.is_symlink():
        why = why_not_writable(out)
        if why:
            raise OutputDirError(f"out_dir={out}: {why}")
        for sub in SUBDIRS:
            if (out / sub).exists() or (out / sub).is_symlink():
                why = why_not_writable(out / sub)
                if why:
                    raise OutputDirError(f"out_dir={out}: {sub}/ {why}")
        return out
    parent = out.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    why = why_not_writable(parent)
    if why:
        raise OutputDirError(f"out_dir={out}: cannot be created, {parent} {why}")
    return out

"""What the tests that promise "nothing written" compare before and after a command."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path


def tree_state(root: Path, skip=None) -> dict:
    """Every path under ``root`` (relative, POSIX) with the SHA-256 of a file, the target
    of a link (``("link", target)``, never followed), ``"dir"``, ``"fifo"`` or
    ``("special", mode)``; ``skip(path)`` true: that path is not recorded (a folder's
    contents still are). Two states are equal exactly when no path was added, removed,
    rewritten or changed kind.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     (Path(d) / "sub").mkdir(); _ = (Path(d) / "sub" / "f").write_bytes(b"x")
    ...     sorted(tree_state(Path(d)).items())[0]
    ('sub', 'dir')
    """
    out = {}
    for dirpath, dirs, names in os.walk(root):
        for n in dirs + names:
            p = Path(dirpath) / n
            if skip is not None and skip(p):
                continue
            rel = p.relative_to(root).as_posix()
            if p.is_symlink():
                out[rel] = ("link", os.readlink(p))
            elif p.is_fifo():
                out[rel] = "fifo"
            elif p.is_file():
                out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
            elif p.is_dir():
                out[rel] = "dir"
            else:
                out[rel] = ("special", p.stat().st_mode)
    return out

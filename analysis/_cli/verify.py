"""The ``python -m analysis.verify`` command: verify the frozen export's hashes and schemas.

Exit 0 with a one-line summary, or exit 1 with the error naming file and record.
``copy_to=DEST`` then copies the verified export to a new scratch folder (the safe start
of "Adding your planner"): DEST must not exist or be empty; the copy is made in a
temporary folder beside DEST, verified, and renamed into place in one step.

>>> from analysis._cli.verify import copy_export
>>> copy_export("frozen_exports", "/tmp/scratch")  # doctest: +SKIP
"""
from __future__ import annotations

import glob
import os
import shutil
import sys
import tempfile
from pathlib import Path

from .hydra_glue import UserError, command_main, resolve_path
from ..records import IntegrityError, verify
from .._fs.transaction import OWNER, TransactionBusy, _alive, recover_export, write_point

__all__ = ["run_verify", "copy_export", "main"]


def _say(msg: str) -> None:
    print(f"[analysis.verify] {msg}", file=sys.stderr, flush=True)


def _remove_stale_copies(dest: Path, say) -> None:
    """Remove the staging folders that a killed earlier ``copy_to=dest`` left beside it
    (their owner process is gone), and say so."""
    for old in sorted(dest.parent.glob(f".{glob.escape(dest.name)}.copy.*")):
        if not old.is_dir() or old.is_symlink():
            continue
        try:
            pid = int((old / OWNER).read_text())
        except (OSError, ValueError):
            pid = None
        if pid is not None and _alive(pid):
            continue
        shutil.rmtree(old, ignore_errors=True)
        say(f"removed {old}: the staging of an interrupted copy_to={dest}")


def copy_export(export_root, dest, say=_say) -> Path:
    """Copy the verified ``export_root`` to ``dest`` (absent or empty) atomically."""
    src, dest = Path(export_root), Path(dest)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise UserError(f"copy_to={dest}: exists and is not an empty folder; choose a new "
                        "folder (nothing copied)")
    dest.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_copies(dest, say)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.copy.", dir=dest.parent))
    try:
        (tmp / OWNER).write_text(str(os.getpid()))
        write_point(f"copy {src} to {tmp}")
        shutil.copytree(src, tmp / "export", symlinks=False)
        try:
            verify(tmp / "export")
        except IntegrityError as exc:
            raise UserError(f"the copy does not verify, nothing copied: {exc}") from None
        if dest.exists():
            dest.rmdir()
        write_point(f"rename to {dest}")
        (tmp / "export").rename(dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def run_verify(export_root, copy_to=None, keep: list | None = None) -> int:
    """Verify ``export_root``; print the summary or the error; return the exit code.
    ``keep`` receives the report (so that a caller can decide when it is freed)."""
    root = resolve_path(export_root)
    try:
        recover_export(root, _say)
        # two processes: the command has the machine to itself (the library default is one)
        report = verify(root, workers=2)
    except (IntegrityError, TransactionBusy) as exc:
        print(f"verification FAILED: {exc}", file=sys.stderr)
        return 1
    print(report.summary())
    if copy_to is not None:
        dest = copy_export(root, resolve_path(copy_to))
        print(f"copied the verified export to {dest}")
    if keep is not None:
        keep.append(report)
    return 0


def _body(cfg) -> int:
    keep: list = []
    code = run_verify(cfg.export_root, cfg.copy_to, keep)
    # Freeing the million decoded objects one by one at exit would cost a tenth of the
    # command's time; nothing else is pending but the two streams.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def main(argv=None) -> None:
    command_main("verify", _body, argv)

"""The ``python -m analysis.verify`` command: verify the frozen export's hashes and schemas.

Exit 0 with a one-line summary, or exit 1 with the error naming file and record.
``copy_to=DEST`` then copies the verified export to a new scratch folder (the safe start
of "Adding your planner"): DEST must not exist or be empty; the copy is made in a
temporary folder beside DEST, verified, and renamed into place in one step.

>>> from analysis._cli.verify import copy_export
>>> copy_export("frozen_exports", "/tmp/scratch")  # doctest: +SKIP
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from .hydra_glue import command_main, resolve_path
from ..records import IntegrityError, verify
from .._fs.transaction import TransactionBusy
from ..records.store import ExportStore

__all__ = ["run_verify", "copy_export", "main"]


def _say(msg: str) -> None:
    print(f"[analysis.verify] {msg}", file=sys.stderr, flush=True)


def copy_export(export_root, dest, say=_say) -> Path:
    """Copy the verified ``export_root`` to ``dest`` (absent or empty) atomically
    (:meth:`analysis.records.store.ExportStore.copy_to`)."""
    return ExportStore(export_root).copy_to(dest, say)


def run_verify(export_root, copy_to=None, keep: list | None = None) -> int:
    """Verify ``export_root``; print the summary or the error; return the exit code.
    ``keep`` receives the report (so that a caller can decide when it is freed)."""
    root = resolve_path(export_root)
    try:
        ExportStore(root).recover(_say)
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

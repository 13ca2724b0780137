"""``python -m analysis.compile [source=PATH] [out_dir=PATH] [stale_runs=refuse|drop]``.

Compiles HD-EPIC into the cohort of an export. The source defaults to ``$E2W_HDEPIC`` or
``../shared/hd-epic`` beside the repository, the export to the repository's
``frozen_exports`` (from any working directory: ``_hydra``'s path rule).

The cohort is compiled into a temporary folder outside the export, then switched in
(``cohort/`` and ``MANIFEST.json`` together) by one journaled transaction of the export
store (:meth:`analysis.records.store.ExportStore.replace_cohort`): a kill at any instant leaves the old cohort or the new one.
Runs are tied to the cohort they were produced on (``run.json``'s ``cohort_sha256``).
When the export holds runs of another cohort than the one compiled now, they would not
verify: the command refuses (``stale_runs=refuse``, the default, nothing written) and
names them, or with ``stale_runs=drop`` removes them in the same transaction (rerun them
with ``python -m analysis.run``). A byte-identical recompile keeps every run.

>>> from analysis._cli.compile import compile_export
>>> compile_export("../shared/hd-epic", "/tmp/e2w_export")  # doctest: +SKIP
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Callable

from analysis._cli.hydra_glue import UserError, command_main, resolve_path
from analysis.compiler.cohort import CompileReport, compile_cohort
from analysis.compiler.readers import SourceError

__all__ = ["compile_export", "STALE_RUNS", "main"]

STALE_RUNS = ("refuse", "drop")
_RUN_ID = re.compile(r"[a-z0-9][a-z0-9_-]*__[a-z0-9_-]+__[a-z0-9_-]+")


def _stale_runs(out: Path, manifest: dict, fingerprint: str) -> list[str]:
    """The export's runs whose ``run.json`` names another cohort than ``fingerprint``
    (or cannot be read: such a run would not verify either)."""
    from analysis.records.io import read_records
    # only well-formed run IDs: a forged manifest entry must never make us remove or
    # read anything outside runs/<run_id>/ (such an export fails verification anyway)
    rids = sorted(r for r in {rel.split("/")[1] for rel in manifest.get("files", {})
                              if isinstance(rel, str) and rel.startswith("runs/")}
                  | set(manifest.get("runs", {}) if isinstance(manifest.get("runs"), dict)
                        else ())
                  if isinstance(r, str) and _RUN_ID.fullmatch(r))
    stale = []
    for rid in rids:
        try:
            current = read_records(out / "runs" / rid / "run.json")[0]["cohort_sha256"]
        except (OSError, ValueError, KeyError, IndexError, TypeError):
            current = None
        if current != fingerprint:
            stale.append(rid)
    return stale


def compile_export(source, out_dir, stale_runs: str = "refuse",
                   say: Callable[[str], None] = lambda m: None,
                   progress: Callable[[str], None] | None = None) -> CompileReport:
    """Compile ``source`` and switch the export ``out_dir`` to the new cohort in one
    journaled step; see the module docstring for ``stale_runs``.

    Raises :class:`~analysis._fs.errors.UserError` (nothing written) for stale runs under
    ``stale_runs="refuse"`` and :class:`~analysis.compiler.readers.SourceError` for a bad
    source. Holds the export's writer lock (:mod:`analysis._fs.locking`) throughout.
    """
    from analysis.records.store import ExportStore
    with ExportStore(out_dir).lock(say=say):
        return _compile_export(source, out_dir, stale_runs, say, progress)


def _compile_export(source, out_dir, stale_runs, say, progress) -> CompileReport:
    from analysis.records.manifest import (FORMAT_VERSION, MANIFEST_NAME, cohort_fingerprint,
                                          read_manifest)
    from analysis.records.store import ExportStore

    if stale_runs not in STALE_RUNS:
        raise UserError(f"stale_runs={stale_runs!r}: use one of {list(STALE_RUNS)}")
    out = Path(out_dir)
    store = ExportStore(out)
    if out.exists():
        store.recover(say)
    old = (read_manifest(out) if (out / MANIFEST_NAME).is_file()
           else {"format_version": FORMAT_VERSION, "files": {}, "runs": {}})
    # staged beside the export (like its transaction folder), so that what a killed
    # compile left is found and removed by the next one instead of piling up elsewhere
    work = out.resolve().parent / f".{out.name}.e2w_compile"
    if work.is_symlink() or (work.exists() and not work.is_dir()):
        from analysis._fs.confine import ConfinementError
        raise ConfinementError(f"{work}: the compile staging is a symlink or not a folder "
                               "(planted); nothing was touched; remove it by hand")
    if work.exists():
        shutil.rmtree(work)
        say(f"removed {work}: the staging of an interrupted compile")
    staging = work / "export"
    try:
        kwargs = {} if progress is None else {"progress": progress}
        report = compile_cohort(source, staging, **kwargs)
        fresh = read_manifest(staging)
        runs = _stale_runs(out, old, cohort_fingerprint(fresh))
        if runs and stale_runs == "refuse":
            raise UserError(
                f"the export {out} holds {len(runs)} run(s) {runs} produced on another "
                "cohort than the one compiled now, so they would not verify; nothing "
                "written. Pass stale_runs=drop to remove them in the same step (then rerun "
                "them with python -m analysis.run), or compile into another out_dir")
        cohort = {p.name: p.read_bytes() for p in sorted((staging / "cohort").iterdir())}
        types = {rel.split("/", 1)[1]: e["record_type"] for rel, e in fresh["files"].items()
                 if rel.startswith("cohort/")}
        out.mkdir(parents=True, exist_ok=True)
        store.replace_cohort(cohort, types, drop_runs=runs, command="analysis.compile")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if runs:
        say(f"removed {len(runs)} run(s) produced on the previous cohort: {runs}; rerun "
            "them with python -m analysis.run")
    return report


def _body(cfg) -> int:
    say = lambda m: print(f"[analysis.compile] {m}", flush=True)  # noqa: E731
    try:
        report = compile_export(resolve_path(cfg.source), resolve_path(cfg.out_dir),
                                stale_runs=str(cfg.stale_runs), say=say)
    except SourceError as exc:
        raise UserError(f"refused, nothing written: {exc}") from None
    print(report.summary())
    return 0


def main(argv=None) -> None:
    command_main("compile", _body, argv)

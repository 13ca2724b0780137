"""``python -m analysis.compile [source=PATH] [out_dir=PATH] [stale_runs=refuse|drop]``.

Compiles HD-EPIC into the cohort of an export. The source defaults to ``$E2W_HDEPIC`` or
``../shared/hd-epic`` beside the repository, the export to the repository's
``frozen_exports`` (from any working directory: ``_hydra``'s path rule).

The cohort is compiled into a temporary folder outside the export, then switched in
(``cohort/`` and ``MANIFEST.json`` together) by one journaled transaction
(:mod:`analysis.transaction`): a kill at any instant leaves the old cohort or the new one.
Runs are tied to the cohort they were produced on. When the recompiled cohort differs
from the one the export holds and the export has runs, those runs would no longer
verify: the command refuses (``stale_runs=refuse``, the default, nothing written) and
names them, or with ``stale_runs=drop`` removes them in the same transaction (rerun them
with ``python -m analysis.run``). A byte-identical recompile keeps every run.

>>> from analysis.compile import compile_export
>>> compile_export("../shared/hd-epic", "/tmp/e2w_export")  # doctest: +SKIP
"""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Callable

from analysis._hydra import UserError, command_main, resolve_path
from analysis.compiler.cohort import CompileReport, compile_cohort
from analysis.compiler.readers import SourceError

__all__ = ["compile_export", "STALE_RUNS", "main"]

STALE_RUNS = ("refuse", "drop")


def _runs_in(manifest: dict) -> list[str]:
    return sorted({rel.split("/")[1] for rel in manifest.get("files", {})
                   if rel.startswith("runs/") and rel.count("/") >= 2}
                  | set(manifest.get("runs", {})))


def compile_export(source, out_dir, stale_runs: str = "refuse",
                   say: Callable[[str], None] = lambda m: None,
                   progress: Callable[[str], None] | None = None) -> CompileReport:
    """Compile ``source`` and switch the export ``out_dir`` to the new cohort in one
    journaled step; see the module docstring for ``stale_runs``.

    Raises :class:`~analysis._hydra.UserError` (nothing written) for stale runs under
    ``stale_runs="refuse"`` and :class:`~analysis.compiler.readers.SourceError` for a bad
    source.
    """
    from analysis.frozen.manifest import (FORMAT_VERSION, MANIFEST_NAME, cohort_fingerprint,
                                          read_manifest, write_manifest)
    from analysis.transaction import Transaction, export_txn_dir, recover_export

    if stale_runs not in STALE_RUNS:
        raise UserError(f"stale_runs={stale_runs!r}: use one of {list(STALE_RUNS)}")
    out = Path(out_dir)
    if out.exists():
        recover_export(out, say)
    old = (read_manifest(out) if (out / MANIFEST_NAME).is_file()
           else {"format_version": FORMAT_VERSION, "files": {}, "runs": {}})
    with tempfile.TemporaryDirectory(prefix="e2w_compile.") as tmp:
        staging = Path(tmp) / "export"
        kwargs = {} if progress is None else {"progress": progress}
        report = compile_cohort(source, staging, **kwargs)
        fresh = read_manifest(staging)
        runs = _runs_in(old)
        same = cohort_fingerprint(fresh) == cohort_fingerprint(old)
        drop = bool(runs) and not same
        if drop and stale_runs == "refuse":
            raise UserError(
                f"the recompiled cohort differs from the one in {out}, and the export's "
                f"{len(runs)} run(s) {runs} were produced on the old one, so they would no "
                "longer verify; nothing written. Pass stale_runs=drop to remove them in the "
                "same step (then rerun them with python -m analysis.run), or compile into "
                "another out_dir")
        keep = lambda rel: not rel.startswith("cohort/") and not (  # noqa: E731
            drop and rel.startswith("runs/"))
        new = {**old, "format_version": FORMAT_VERSION,
               "files": {**{k: v for k, v in old.get("files", {}).items() if keep(k)},
                         **fresh["files"]},
               "runs": {} if drop else dict(old.get("runs", {}))}
        cohort = {p.name: p.read_bytes() for p in sorted((staging / "cohort").iterdir())}
        out.mkdir(parents=True, exist_ok=True)
        txn = Transaction(out, export_txn_dir(out), "analysis.compile")
        try:
            txn.stage_tree("cohort", cohort)
            if drop:
                for rid in runs:
                    txn.remove(f"runs/{rid}")
            txn.stage_with(MANIFEST_NAME, lambda path: write_manifest(path.parent, new))
        except BaseException:
            txn.abort()
            raise
        txn.commit()
    if drop:
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


if __name__ == "__main__":
    main()

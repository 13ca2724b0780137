"""``python -m analysis.compile [source=PATH] [out_dir=PATH]``: compile HD-EPIC into the cohort.

A thin entry point around :func:`analysis.compiler.cohort.compile_cohort`. The source
defaults to ``$E2W_HDEPIC`` or ``../shared/hd-epic`` beside the repository, the output to
the repository's ``frozen_exports`` (from any working directory: ``_hydra``'s path rule).
"""
from __future__ import annotations

from analysis._hydra import UserError, command_main, resolve_path
from analysis.compiler.cohort import CompileReport, compile_cohort  # noqa: F401  (public API)
from analysis.compiler.readers import SourceError


def _body(cfg) -> int:
    from analysis.transaction import recover_export
    out = resolve_path(cfg.out_dir)
    if out.exists():
        recover_export(out, lambda m: print(f"[analysis.compile] {m}", flush=True))
    try:
        report = compile_cohort(resolve_path(cfg.source), out)
    except SourceError as exc:
        raise UserError(f"refused, nothing written: {exc}") from None
    print(report.summary())
    return 0


def main(argv=None) -> None:
    command_main("compile", _body, argv)


if __name__ == "__main__":
    main()

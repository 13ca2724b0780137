"""``python -m analysis.compile [source=PATH] [out_dir=PATH]``: compile HD-EPIC into the cohort.

A thin Hydra entry point around :func:`analysis.compiler.cohort.compile_cohort`.
The source defaults to ``../shared/hd-epic`` or the environment variable ``E2W_HDEPIC``.
"""
from __future__ import annotations

import os
import sys

import hydra
from omegaconf import DictConfig

from analysis.compiler.cohort import CompileReport, compile_cohort  # noqa: F401  (public API)
from analysis.compiler.readers import SourceError


@hydra.main(version_base="1.3", config_path="../configs", config_name="compile")
def main(cfg: DictConfig) -> None:
    source = cfg.source or os.environ.get("E2W_HDEPIC", "../shared/hd-epic")
    try:
        report = compile_cohort(source, cfg.out_dir)
    except SourceError as exc:
        print(f"compile: refused, nothing written: {exc}", file=sys.stderr)
        sys.exit(1)
    print(report.summary())


if __name__ == "__main__":
    main()

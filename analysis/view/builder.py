"""The trace viewer's build (docs/viewer.md; the paper's traceable execution, E.3):
the site of an export into a folder: read through the API, render, write all or nothing.

>>> from analysis.view.builder import build
>>> build("frozen_exports", "/tmp/e2w_site").index  # doctest: +SKIP
PosixPath('/tmp/e2w_site/index.html')
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from ..api import view_index
from .output import check_site_dir, write_site
from .site import build_site
from .source import open_source

__all__ = ["build", "BuildReport"]


@dataclass(frozen=True)
class BuildReport:
    """``index``: the overview page; ``files``: files of the site; ``pages``: HTML pages;
    ``written``: files written; ``seconds``: wall time."""

    index: Path
    files: int
    pages: int
    written: int
    seconds: float


def build(export_root, out_dir, stats: dict | None = None,
          progress=lambda msg: None) -> BuildReport:
    """Verify ``export_root``, compute the tables' statistics (``stats`` overrides the
    ``stats.*`` settings of ``configs/tables.yaml``) and write the site to ``out_dir``.

    Raises :class:`analysis.view.output.SiteDirError` (nothing computed) for an unusable
    ``out_dir`` and :class:`analysis.records.IntegrityError` (nothing written) when
    verification fails.
    """
    start = time.perf_counter()
    out = check_site_dir(out_dir, export_root)
    progress(f"verifying {export_root}")
    src = open_source(export_root, stats)
    progress(f"{len(src.runs)} runs, {len(src.tasks)} tasks; rendering the site")
    files = build_site(src, progress)
    written = write_site(out, files, progress)
    pages = sum(rel.endswith(".html") for rel in files)
    return BuildReport(index=out / view_index(), files=len(files), pages=pages,
                       written=written,
                       seconds=time.perf_counter() - start)

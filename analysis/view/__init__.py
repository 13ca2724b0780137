"""The trace viewer: a static, self-contained site of an export (``python -m analysis.view``).

The site shows every run against every task (endpoint matrix with filters, the tables'
metrics per run), one page per task (the task card, then each run's groups with their
attempts, queries, belief counters, statuses and the condition truths) and a compare page
per task (two runs aligned by group, first divergence marked). It opens from ``file://``
with no server and no network. Layers: :mod:`.source` reads the export through the API
(the only module that does), :mod:`.site` turns it into files, :mod:`.output` writes them
all or nothing, :mod:`.serve` serves a built site on 127.0.0.1. docs/viewer.md has the
details.

>>> from analysis.view import build
>>> report = build("frozen_exports", "/tmp/e2w_site")  # doctest: +SKIP
>>> report.pages  # doctest: +SKIP
515
"""
from __future__ import annotations

__all__ = ["build", "BuildReport"]


def __getattr__(name):
    # pandas and the statistics load only when a site is built
    if name in __all__:
        from . import builder as _build
        return getattr(_build, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

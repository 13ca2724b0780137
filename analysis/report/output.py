"""Table and figure outputs: one in-memory object per artefact (rendered by :mod:`.render`).

Rendering is separate from writing so that :mod:`analysis.tables` can build every
artefact first and write nothing at all if any step fails.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

__all__ = ["Table", "FigureOutput", "Skipped", "render_table", "render_figure"]


@dataclass
class Table:
    """A table: machine-readable ``data`` (CSV) and its formatted ``display`` (Markdown,
    LaTeX). ``display`` defaults to ``data`` with floats at ``decimals`` places."""

    name: str
    title: str
    paper_ref: str
    data: pd.DataFrame
    display: pd.DataFrame | None = None
    notes: str = ""
    decimals: int = 2


@dataclass
class FigureOutput:
    """A figure and ``data``, exactly the numbers it plots (written as CSV beside it)."""

    name: str
    title: str
    paper_ref: str
    figure: object  # matplotlib.figure.Figure
    data: pd.DataFrame
    notes: str = ""
    extra: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Skipped:
    """An artefact the export cannot support, with the reason (no file is written)."""

    name: str
    title: str
    paper_ref: str
    reason: str


def _csv(df: pd.DataFrame) -> bytes:
    # Rounded so that the last floating-point bits of a BLAS reduction cannot change a
    # committed byte; 10 significant digits is far below any reported precision.
    out = df.copy()
    for col in out.columns:
        if pd.api.types.is_float_dtype(out[col]):
            out[col] = out[col].map(lambda v: "" if pd.isna(v) else f"{v:.10g}")
    return out.to_csv(index=False, lineterminator="\n").encode("utf-8")


def _fmt(value, decimals: int) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return ""
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (float, np.floating)):
        return f"{value:.{decimals}f}"
    return str(value)


def _cells(table: Table) -> tuple[list[str], list[list[str]]]:
    df = table.display if table.display is not None else table.data
    rows = [[_fmt(v, table.decimals) for v in row] for row in df.itertuples(index=False)]
    return [str(c) for c in df.columns], rows

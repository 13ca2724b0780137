"""Formatting and figure-style helpers shared by the builders."""
from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402

__all__ = ["Skip", "ci", "pct_ci", "new_figure", "HATCHES", "MARKERS", "GREYS",
           "LINESTYLES", "estimand_note", "clip", "CLIP_NOTE"]

#: Greyscale-safe encodings: every series differs by hatch/marker/line style, not colour
#: alone.
HATCHES = ("", "///", "...", "xxx", "\\\\\\", "ooo", "---", "+++")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
LINESTYLES = ("-", "--", ":", "-.")
GREYS = ("0.15", "0.45", "0.7", "0.9", "0.3", "0.6", "0.8", "0.05")


class Skip(Exception):
    """Raised by a builder when the export cannot support its artefact (the reason is
    written into ``tables/README.md``)."""


def _num(v, decimals):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    if isinstance(v, float) and math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if abs(v) >= 1e9:
        return f"{v:.3g}"
    return f"{v:.{decimals}f}"


def ci(est, low, high, decimals=2, scale=1.0) -> str:
    """``"12.34 [10.00, 15.00]"``; ``scale=100`` for percentages."""
    f = lambda v: _num(None if v is None else float(v) * scale, decimals)  # noqa: E731
    if est is None or (isinstance(est, float) and math.isnan(est)):
        return "n/a"
    nan = lambda v: v is None or (isinstance(v, float) and math.isnan(v))  # noqa: E731
    if nan(low) and nan(high):  # fewer than 3 episodes: no interval (issue 11)
        return f"{f(est)} [not estimable]"
    return f"{f(est)} [{f(low)}, {f(high)}]"


def clip(v, lo, hi):
    """``v`` truncated to the parameter space ``[lo, hi]`` (NaN stays NaN)."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return v
    return min(max(float(v), lo), hi)


def pct_ci(est, low, high, decimals=1, bounds=(0.0, 1.0)) -> str:
    """A proportion in percent; the interval is truncated to ``bounds`` (the parameter
    space: [0, 1] for a rate, [-1, 1] for a difference of rates)."""
    if bounds is not None:
        low, high = clip(low, *bounds), clip(high, *bounds)
    return ci(est, low, high, decimals, 100.0)


CLIP_NOTE = ("Displayed intervals of rates are truncated to the parameter space ([0, 100]% "
             "for a rate, [-100, 100] pp for a difference); the CSV keeps the untruncated "
             "bounds, which can be infinite when a resampled episode set has zero "
             "variance (bootstrap-t with few episodes).")


def estimand_note() -> str:
    return ("Estimand: the task-macro mean (a ratio of per-episode sums over all tasks of "
            "the suite), not the mean of episode means.")


def new_figure(width=6.5, height=3.5) -> Figure:
    """A pyplot-free figure (no global state, deterministic fonts and sizes)."""
    fig = Figure(figsize=(width, height))
    fig.set_layout_engine("constrained")
    return fig

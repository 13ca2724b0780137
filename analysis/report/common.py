"""Formatting and figure-style helpers shared by the builders."""
from __future__ import annotations

import math

__all__ = ["Skip", "ci", "pct_ci", "new_figure", "HATCHES", "MARKERS", "GREYS",
           "LINESTYLES", "STYLE", "SINGLE_COLUMN", "DOUBLE_COLUMN", "PNG_DPI", "estimand_note", "clip",
           "CLIP_NOTE", "runs_note", "memory_runs_note", "plural", "PAPER_SECTIONS",
           "name_sections", "METHODS_POINTER"]

#: Where the full method text lives (written once, not into every table note).
METHODS_POINTER = "Methods, estimand, display and runs covered: tables/README.md."


def plural(n: int, word: str, many: str | None = None) -> str:
    """``"1 task"``, ``"2 tasks"``.

    >>> plural(1, "task"), plural(3, "episode"), plural(2, "is", "are")
    ('1 task', '3 episodes', '2 are')
    """
    return f"{n} {word if n == 1 else (many or word + 's')}"


#: The paper's section titles (arXiv:2610.02715), so a reference reads without the paper.
PAPER_SECTIONS = {
    "3": "Constructing the executable dataset", "6.2": "Task evidence and outcome checks",
    "6.3": "Goal attainment and execution profiles",
    "6.4": "Persistent belief in continuous execution", "7": "Discussion and limitations",
    "A.4": "A source-to-outcome example",
    "C.4": "Same-task reference consistency and evaluator stress tests",
    "C.5": "Bootstrap and paired comparisons",
    "C.6": "Paired memory effects and continuous resource profiles",
    "E.1": "Step-level execution across planners",
    "E.2": "Paired task outcomes and their execution evidence",
    "E.3": "A traceable execution excerpt", "E.4": "Executor repair versus planner actions",
    "E.5": "Re-observing a static anchor after a state change",
    "E.6": "Memory persistence and stale facts", "F": "Artifact scope and responsible use",
}


def name_sections(ref: str) -> str:
    """``ref`` with every section number followed by its title (tables and figures keep
    their numbers).

    >>> name_sections("paper 6.3 and C.1-C.3")
    'paper 6.3 (Goal attainment and execution profiles) and C.1-C.3'
    >>> name_sections("paper 6.3 (contract types)")
    'paper 6.3 (contract types)'
    >>> name_sections("paper Table 18 and E.2")
    'paper Table 18 and E.2 (Paired task outcomes and their execution evidence)'
    """
    import re

    def named(m):
        key = m.group(0)
        return f"{key} ({PAPER_SECTIONS[key]})" if key in PAPER_SECTIONS else key
    return re.sub(r"(?<!Table )(?<!Figure )(?<![\w.-])([A-F]\.\d+|\d\.\d+|\d|[A-F])(?![\w.-])(?! \()",
                  named, ref)

#: Greyscale-safe encodings: every series differs by hatch/marker/line style, not by
#: colour or shade alone (hatches are dense enough to survive a 3.5 in print).
HATCHES = ("", "////", "....", "xxxx", "\\\\\\\\", "oo", "----", "++++")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
LINESTYLES = ("-", "--", ":", "-.")
GREYS = ("0.15", "0.45", "0.7", "0.9", "0.3", "0.6", "0.8", "0.05")

#: Print widths in inches (a journal's single and double column).
SINGLE_COLUMN, DOUBLE_COLUMN = 3.5, 7.0
#: Raster resolution of the PNG (a preview; the PDF is the print artefact). Figures are
#: created at this dpi so the text extents measured for the layout are reused (cached)
#: by the PNG draw instead of recomputed.
PNG_DPI = 150

#: Font sizes in points at print size: axis labels and titles are never smaller than
#: the tick labels. Applied while a figure is built and while it is saved.
STYLE = {
    "font.size": 8, "axes.titlesize": 8, "axes.labelsize": 8, "xtick.labelsize": 7,
    "ytick.labelsize": 7, "legend.fontsize": 7, "legend.title_fontsize": 7,
    "figure.titlesize": 9, "hatch.linewidth": 0.6, "axes.linewidth": 0.6,
    "xtick.major.width": 0.6, "ytick.major.width": 0.6, "lines.linewidth": 1.0,
    "lines.markersize": 4.5, "errorbar.capsize": 2,
    # Type 3 PDF fonts (matplotlib's default). Type 42 (TrueType) is what venues that
    # reject Type 3 fonts ask for; it costs fontTools parsing the font in every process
    # plus a subset per PDF (about 0.5 s of a 3-figure run), so it is left to a venue's
    # build: set "pdf.fonttype": 42 here.
    "pdf.fonttype": 3, "svg.fonttype": "none",
}


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
    if nan(low) and nan(high):  # fewer than 3 episodes, or both BCa bounds undefined
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


def new_figure(width=DOUBLE_COLUMN, height=3.5):
    """A pyplot-free figure at print size (no global state; call inside
    :func:`analysis.report.render.figure_style` so the :data:`STYLE` sizes apply).

    matplotlib is imported here, not at module level, so that building the tables alone
    never pays for it.
    """
    from matplotlib.figure import Figure
    fig = Figure(figsize=(width, height), dpi=PNG_DPI)
    fig.set_layout_engine("constrained", h_pad=0.02, w_pad=0.02)
    return fig


def runs_note(results) -> str:
    """Which runs a per-planner artefact covers (so a reader adding a planner knows
    whether it appears): every planner-suite run, one row/bar per planner label."""
    labels = ", ".join(results.labels) if results is not None else ""
    return (f"Covers every run on the planner suite ({plural(len(results.labels), 'planner')}: "
            f"{labels}); a planner added to the export appears here once it has a "
            "planner-suite run.")


def memory_runs_note(results) -> str:
    """Which planners the memory-study artefacts cover, and why only those."""
    planners = sorted(results.memory) if results is not None else []
    return (f"Covers every planner with both a persistent and a reset run on the memory "
            f"suite ({', '.join(planners) or 'none'}); other planners are left out because "
            "every number here compares the two belief conditions on the same tasks.")

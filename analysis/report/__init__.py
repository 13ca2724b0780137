"""One function per table and figure of DESIGN.md section 10.

Each takes the loaded export (and statistics results) and returns a :class:`Table` or
:class:`FigureOutput`; :func:`build_all` lists them in paper order.
"""
from .cohort import cohort_scope
from .output import FigureOutput, Table, render_figure, render_table

__all__ = ["FigureOutput", "Table", "build_all", "cohort_scope", "render_figure",
           "render_table"]


def build_all(export, cfg=None, progress=None) -> list:
    """Every table and figure the export supports, in the order of DESIGN.md section 10."""
    builders = [cohort_scope]
    out = []
    for build in builders:
        if progress:
            progress(build.__name__)
        out.append(build(export))
    return out

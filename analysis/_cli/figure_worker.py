"""The figure process of ``python -m analysis.tables``.

Drawing the figures needs matplotlib, its PDF backend (which imports fontTools) and
the figure builders: about a second of imports, then about 0.8 s of drawing, and
nothing of it depends on the export. :meth:`FigureWorker.start` forks a process as the
command starts its work; it prepares matplotlib on the second core while the command
verifies the export, then draws every figure from the computed results
(:meth:`FigureWorker.submit`) while the command builds the tables. The figures only
read the results: the worker never sees the export.

The worker renders exactly what the command would render itself (same code, same
inputs, byte-identical files). Where ``os.fork`` does not exist, ``start`` returns
None and the caller draws in its own process.

>>> worker = FigureWorker.start()          # doctest: +SKIP
>>> worker.submit(results)                 # doctest: +SKIP
>>> figures = worker.collect()             # doctest: +SKIP
>>> figures["fig05_endpoints"][1].keys()   # doctest: +SKIP
dict_keys(['fig05_endpoints.data.csv', 'fig05_endpoints.png', 'fig05_endpoints.pdf'])
"""
from __future__ import annotations

from .._fs.fork import ForkWorker

__all__ = ["FigureWorker"]


def _prepare() -> None:
    """The imports the figures need (each would otherwise be paid on the first figure)."""
    import matplotlib
    matplotlib.use("Agg")  # never probe for a GUI backend
    import matplotlib.backends.backend_agg  # noqa: F401
    import matplotlib.backends.backend_pdf  # noqa: F401 - imports fontTools (the bulk)
    import matplotlib.figure  # noqa: F401

    from .. import report  # noqa: F401 - the builders, and the classes of the results


def draw_figures(results, export=None) -> dict:
    """``{name: (artefact, {filename: bytes})}`` for every figure of
    :data:`analysis.report.BUILDERS`, in paper order; the artefact is the
    :class:`~analysis.report.FigureOutput` without its matplotlib figure, or a
    :class:`~analysis.report.Skipped`."""
    import dataclasses

    from ..report import BUILDERS, Skip, Skipped, figure_style, render_figure
    out = {}
    for name, title, ref, build in BUILDERS:
        if not name.startswith("fig"):
            continue
        try:
            with figure_style():
                fo = build(export, results)
            out[name] = (dataclasses.replace(fo, figure=None), render_figure(fo))
        except Skip as exc:
            out[name] = (Skipped(name=name, title=title, paper_ref=ref, reason=str(exc)), {})
    return out


class FigureWorker:
    """A forked figure process (:class:`analysis._fs.fork.ForkWorker`): :meth:`start`,
    then :meth:`submit` once and :meth:`collect` once, or :meth:`close` to dismiss it
    (always safe to call)."""

    def __init__(self, worker: ForkWorker):
        self._worker = worker

    @property
    def pid(self) -> int | None:
        return self._worker.pid

    @classmethod
    def start(cls) -> FigureWorker | None:
        """Fork the worker (None where ``os.fork`` does not exist)."""
        worker = ForkWorker.start(draw_figures, name="figure process", prepare=_prepare,
                                  takes_request=True)
        return None if worker is None else cls(worker)

    def submit(self, results) -> None:
        """Send the results; returns at once (a thread writes them while the worker may
        still be importing, so the pipe never stalls the command)."""
        self._worker.submit(results)

    def collect(self) -> dict:
        """The worker's figures (see :func:`draw_figures`); raises what a builder raised."""
        return self._worker.collect()

    def close(self) -> None:
        """Dismiss the worker and reap it (killed when its figures were not collected)."""
        self._worker.close()

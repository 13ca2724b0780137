"""The results of the tables (paper 6.3, 6.4, C.5, C.6 and E.1: the metrics and the
statistics every table and figure is built from), as one object.

:func:`analysis.report.compute` fills a :class:`Results` once; the table builders read it
(``build(export, results)``), ``python -m analysis.tables`` writes what they build, the
Python API returns it (``analysis.load().results()``, docs/api.md) and the trace viewer
reads its intervals. :meth:`Results.table`, :meth:`Results.artefact` and
:meth:`Results.figure` run one builder of :data:`analysis.report.BUILDERS` on demand.
This module holds no statistics of its own: it stores and hands out what ``compute``
computed.
"""
from __future__ import annotations

import threading
import warnings
from contextlib import contextmanager

import pandas as pd

# the export's unknown-name error, so a wrong table name reads like a wrong task name
from ..records.loader import UnknownName, _did_you_mean

__all__ = ["Results"]

#: The few-episode warnings (analysis.stats.FewClustersWarning) already said in this
#: process: Export.results and Results.artefact say each text once, not on every call
#: (a notebook shows a warning again for every new cell it is raised from).
_SAID: set[str] = set()
_SAID_LOCK = threading.Lock()


@contextmanager
def _warnings_once():
    """Run the block; re-issue its few-episode warnings whose text was not said yet in
    this process (other warnings pass through unchanged)."""
    from ..stats import FewClustersWarning
    caught: list = []
    try:
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always", FewClustersWarning)
            caught = got
            yield
    finally:  # also when the block raised (a skipped artefact): what it warned is said
        for w in caught:
            if issubclass(w.category, FewClustersWarning):
                with _SAID_LOCK:
                    if str(w.message) in _SAID:
                        continue
                    _SAID.add(str(w.message))
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def _short(name: str) -> str:
    """``table04_planner_results`` -> ``planner_results``."""
    head, _, rest = name.partition("_")
    return rest if head.rstrip("0123456789") in ("table", "fig") else name


class Results:
    """The metrics and statistics every table and figure is built from.

    ``config`` (:class:`analysis.report.StatsConfig`), ``task_metrics`` (one row per run
    x task, with the planner ``label`` the tables use), ``planner_tasks`` (the
    planner-suite rows), ``labels`` (planners in table order), and the statistics
    results themselves: ``planner_bootstrap``, ``endpoint_bootstrap``,
    ``tier_bootstrap`` (:class:`analysis.stats.ClusterBootstrapResult`), ``pairwise``
    and ``pairwise_check`` (:class:`analysis.stats.PairwiseResult`; the default method
    and the Bonferroni-t cross-check), ``memory`` (planner -> memory-study results),
    ``failures`` (the planner-suite runs' failure labels and condition ledger, derived by
    re-execution: tables 15 and 16), ``skipped`` (result -> why the export cannot
    support it); ``export``: the export they were computed from.

    :meth:`table` gives one table's data (the CSV columns, raw interval bounds),
    :meth:`artefact` the whole :class:`analysis.report.Table` (display frame and note),
    :meth:`figure` a figure with the numbers it plots. Names are the file names without
    the prefix (``"planner_results"``) or with it (``"table04_planner_results"``).
    ``task_metrics``, ``planner_tasks``, ``labels``, ``memory`` and ``skipped`` are
    copies: changing one changes no table.

    >>> from analysis import load
    >>> res = load().results()
    >>> t4 = res.table("planner_results")
    >>> from analysis._fs.resources import REPO_ROOT
    >>> csv = pd.read_csv(REPO_ROOT / "tables/table04_planner_results.csv")
    >>> pd.testing.assert_frame_equal(t4, csv, check_dtype=False, rtol=1e-9)
    >>> res.planner_bootstrap.table.columns[:3].tolist()
    ['label', 'metric', 'estimate']
    """

    def __init__(self, config, task_metrics: pd.DataFrame, planner_tasks: pd.DataFrame,
                 labels, export=None, memory: dict | None = None,
                 skipped: dict | None = None):
        # ``memory`` and ``skipped`` are kept, not copied: compute fills them as it goes
        self.config = config
        self.export = export
        self._task_metrics = task_metrics
        self._planner_tasks = planner_tasks
        self._labels = list(labels)
        self.planner_bootstrap = None     # ClusterBootstrapResult by label (Table 4)
        self.endpoint_bootstrap = None    # endpoint shares by label (Table 5)
        self.tier_bootstrap = None        # by (label, tier) (Table 7)
        self.pairwise = None              # PairwiseResult (Table 6), or None
        self.pairwise_check = None        # the Bonferroni-t cross-check (docs/statistics.md)
        self.failures = None              # report.failure_labels.FailureResults
        self._memory = {} if memory is None else memory      # planner -> study (tables 8-11)
        self._skipped = {} if skipped is None else skipped   # key -> why a result is absent
        self._built: dict = {}

    def __getstate__(self) -> dict:
        # the figure worker of python -m analysis.tables gets the results without the
        # export (the records stay in the parent) and without built artefacts
        return {**self.__dict__, "export": None, "_built": {}}

    def __repr__(self) -> str:
        c = self.config
        return (f"Results(n_resamples={c.n_resamples}, confidence_level={c.confidence_level:g}, "
                f"seed={c.seed}, method={c.method!r}, planners={self.labels})")

    task_metrics = property(lambda self: self._task_metrics.copy())
    planner_tasks = property(lambda self: self._planner_tasks.copy())
    labels = property(lambda self: list(self._labels))
    memory = property(lambda self: dict(self._memory))
    skipped = property(lambda self: dict(self._skipped))

    @property
    def names(self) -> list[str]:
        """Every artefact name, in paper order (``table01_example_task``, ...)."""
        from . import BUILDERS
        return [b[0] for b in BUILDERS]

    def _resolve(self, name: str, kind: str | tuple) -> str:
        if not isinstance(name, str):
            raise TypeError(f"name={name!r}: expected a {kind if isinstance(kind, str) else 'table or figure'} "
                            "name (a string)")
        pool = [n for n in self.names if n.startswith(kind)]
        for n in pool:
            if name in (n, _short(n)):
                return n
        choices = list(dict.fromkeys(_short(n) for n in pool))   # a table and its figure share one
        what = kind if isinstance(kind, str) else "artefact"
        raise UnknownName(f"{what} {name!r}: not an artefact{_did_you_mean(name, choices)} "
                          f"({what}s: {', '.join(choices)})")

    def artefact(self, name: str):
        """The :class:`analysis.report.Table` or :class:`analysis.report.FigureOutput` of
        ``name`` (built once). An artefact the export cannot support raises
        ``LookupError`` with the reason."""
        from . import BUILDERS, Skip
        full = next((n for n in self.names if n == name), None)
        if full is None:
            full = self._resolve(name, ("table", "fig"))
        if full not in self._built:
            build = next(b[3] for b in BUILDERS if b[0] == full)
            # the builders read the loader's tables (the per-run ones without the run's
            # planner, suite and memory columns): analysis.Export.frozen
            records = getattr(self.export, "frozen", self.export)
            try:
                with _warnings_once():
                    if full.startswith("fig"):
                        from .render import figure_style
                        with figure_style():
                            self._built[full] = build(records, self)
                    else:
                        self._built[full] = build(records, self)
            except Skip as exc:
                self._built[full] = LookupError(f"{full}: not produced from this export: {exc}")
        got = self._built[full]
        if isinstance(got, LookupError):
            raise got
        return got

    def table(self, name: str) -> pd.DataFrame:
        """One table's data as written to ``tables/<name>.csv`` (a copy): estimates with
        their raw interval bounds, counts, labels.

        >>> from analysis import load
        >>> load().results().table("endpoints").columns[:3].tolist()
        ['planner', 'endpoint', 'tasks']
        """
        return self.artefact(self._resolve(name, "table")).data.copy()

    def figure(self, name: str):
        """One figure (:class:`analysis.report.FigureOutput`: ``figure``, a matplotlib
        Figure, and ``data``, exactly the numbers it plots)."""
        return self.artefact(self._resolve(name, "fig"))

    def compare(self, run_a: str, run_b: str, metric: str = "success",
                method: str = "percentile"):
        """Two runs of one suite, task by task (:func:`analysis.compare.compare_runs`):
        a :class:`analysis.compare.ComparisonResult` with the tasks one run solved and the
        other did not (``tasks``: the conditions each met, the first divergent attempt)
        and P(A > B) with its episode-cluster interval, at this result's resamples, level
        and seed. ``run_a``/``run_b``: a run ID, or a run name with one run.

        >>> from analysis import load
        >>> cmp = load().results().compare("belief_search__planner__persistent",
        ...                                "greedy_hints__planner__persistent")
        >>> cmp.n_a_only + cmp.n_b_only == len(cmp.tasks)
        True
        >>> sorted(set(cmp.tasks.solved_by))
        ['A', 'B']
        """
        from .compare import compare_runs
        c = self.config
        tm = self._task_metrics
        return compare_runs(self.export, run_a, run_b, metric=metric,
                            n_resamples=c.n_resamples, confidence_level=c.confidence_level,
                            seed=c.seed, method=method,
                            labels=dict(zip(tm.run_id, tm.label)))

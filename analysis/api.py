"""The Python front door: a verified export as joined DataFrames, and the statistics the
tables are built from (``docs/api.md``).

>>> import analysis
>>> export = analysis.load()                      # verified once per process
>>> results = export.results()                    # the statistics behind tables/
>>> results.table("planner_results").columns[:4].tolist()
['planner', 'metric', 'metric_label', 'estimate']

:func:`load` verifies every hash of the export and returns an :class:`Export`. A second
``load`` of the same unchanged folder in the same process returns the same object
without verifying again (unchanged: every listed file has the size and modification
time it had when verified); ``refresh=True`` verifies again.
:meth:`Export.results` runs the metrics and every statistic with the settings of
``configs/tables.yaml`` (``stats.*``; keyword overrides as on the command line), and
returns a :class:`Results` whose :meth:`Results.table` gives each table's data exactly
as ``python -m analysis.tables`` writes it to CSV.
"""
from __future__ import annotations

import difflib
import os
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from pathlib import Path

import pandas as pd
import yaml

from ._fs.resources import config_dir, default_export_root
from .settings import ConfigError, check_stats

#: What the tables and the trace viewer share besides the export and its results: the
#: vocabulary (endpoints and metric labels), the interval text, the task card's lines and
#: the viewer's page paths (docs/api.md, "Shared with the tables"). Imported on first use
#: (:func:`__getattr__`), so that ``analysis.load`` does not import the table builders.
SHARED = ("ENDPOINTS", "ENDPOINT_LABELS", "PLANNER_METRICS", "STUDY_METRICS", "ci", "pct_ci",
          "condition_lines", "source_lines", "ref_text", "task_slug", "view_index",
          "view_task_page", "view_compare_page", "DerivationError")

__all__ = ["load", "Export", "Results", "STATS_KEYS", *SHARED]

#: The keyword overrides :meth:`Export.results` takes (the ``stats.*`` keys of
#: ``python -m analysis.tables``).
STATS_KEYS = ("n_resamples", "confidence_level", "seed", "method", "pairwise_method",
              "contrast_metrics")

_RUN_COLS = ("planner", "suite", "memory")
_cache: dict = {}
_cache_lock = threading.Lock()


def _fingerprint(root: Path) -> tuple | None:
    """(name, size, mtime_ns) of the manifest and of every file it lists; None when the
    manifest cannot be read (then :func:`load` verifies and names the problem)."""
    from .records.manifest import MANIFEST_NAME, read_manifest
    try:
        manifest = read_manifest(root)
        out = []
        for rel in [MANIFEST_NAME, *sorted(manifest.get("files", {}))]:
            st = (root / rel).stat()
            out.append((rel, st.st_size, st.st_mtime_ns, st.st_ino))
        return tuple(out)
    except (OSError, ValueError, TypeError, AttributeError):
        return None


def load(export_root: str | os.PathLike | None = None, *, refresh: bool = False) -> "Export":
    """Verify the frozen export at ``export_root`` (default: the committed export, or the
    copy shipped with an installed package) and return it as an :class:`Export`.

    Raises :class:`analysis.records.IntegrityError` naming the file and record when
    verification fails (nothing is returned unverified) and ``FileNotFoundError`` when
    ``export_root`` is not a folder.

    >>> export = load()
    >>> export is load()                    # the same unchanged folder: not verified again
    True
    >>> sorted(export.runs.suite.unique())
    ['memory', 'planner']
    """
    from .records import load as load_frozen

    if export_root is not None and not isinstance(export_root, (str, os.PathLike)):
        raise TypeError(f"export_root={export_root!r}: expected a folder path (str or os.PathLike)")
    if not isinstance(refresh, bool):
        raise TypeError(f"refresh={refresh!r}: expected True or False")
    root = Path(export_root).expanduser() if export_root is not None else default_export_root()
    if not root.is_dir():
        raise FileNotFoundError(f"export_root={root}: " + (
            "a file, not a folder" if root.exists() else "no such folder"))
    key = str(root.resolve())
    with _cache_lock:
        before = _fingerprint(root)
        hit = _cache.get(key)
        if hit is not None and not refresh and before is not None and hit[0] == before:
            return hit[1]
        export = Export._from_frozen(load_frozen(root))
        after = _fingerprint(root)
        if before is not None and after == before:  # unchanged while it was verified
            _cache[key] = (before, export)
        else:
            _cache.pop(key, None)
        return export


def _with_runs(df: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """``df`` with the run's planner, suite and memory inserted after ``run_id``."""
    out = df.copy()
    for i, col in enumerate(_RUN_COLS):
        out.insert(1 + i, col, out["run_id"].map(dict(zip(runs.run_id, runs[col]))))
    return out


@dataclass(frozen=True, eq=False)
class Export:
    """A verified export: the loader's DataFrames with the joins done.

    Tables (pandas DataFrames, one row per ...):

    ``runs`` (run: ``run_id, planner, memory, suite, seed, attempt_limit, run_name``;
    ``run_name`` is the planner's name unless the run was named apart from it),
    ``episodes`` (episode), ``groups`` (cohort group), ``tasks`` (task, plus ``suites``:
    the suites holding it), ``task_groups`` (task x group: ``task_id, group_id,
    position`` (the group's place in the task), the task's and the group's columns),
    ``suites`` (suite x task), ``conditions`` (contract condition), ``group_records``
    (run x group), ``attempts`` (run x group x attempt), ``task_records`` (run x task) and
    ``condition_records`` (run x task x condition); every per-run table has ``planner,
    suite, memory`` right after ``run_id``. ``frozen`` is the underlying
    :class:`analysis.records.FrozenExport` (what :func:`analysis.metrics.task_metrics` and
    the report builders take); ``report`` the verification summary.

    >>> export = load()
    >>> export.group_records.columns[:5].tolist()
    ['run_id', 'planner', 'suite', 'memory', 'episode_id']
    >>> len(export.task_groups) == sum(map(len, export.tasks.group_ids))
    True
    """

    root: str
    frozen: object = field(repr=False)
    runs: pd.DataFrame = field(repr=False)
    episodes: pd.DataFrame = field(repr=False)
    groups: pd.DataFrame = field(repr=False)
    tasks: pd.DataFrame = field(repr=False)
    task_groups: pd.DataFrame = field(repr=False)
    suites: pd.DataFrame = field(repr=False)
    conditions: pd.DataFrame = field(repr=False)
    group_records: pd.DataFrame = field(repr=False)
    attempts: pd.DataFrame = field(repr=False)
    task_records: pd.DataFrame = field(repr=False)
    condition_records: pd.DataFrame = field(repr=False)
    _results: dict = field(default_factory=dict, repr=False)
    _metrics: list = field(default_factory=list, repr=False)
    _failures: dict = field(default_factory=dict, repr=False)

    @classmethod
    def _from_frozen(cls, fx) -> "Export":
        runs = fx.runs
        suites_of = fx.suites.groupby("task_id", sort=False)["suite"].agg(list)
        tasks = fx.tasks.copy()
        tasks["suites"] = tasks.task_id.map(suites_of).map(
            lambda v: v if isinstance(v, list) else [])
        tg = tasks[["task_id", "episode_id", "scene_id", "tier", "title", "group_ids"]].copy()
        tg["position"] = tg.group_ids.map(lambda g: list(range(len(g))))
        tg = tg.explode(["group_ids", "position"], ignore_index=True)
        tg = tg.dropna(subset=["group_ids"]).rename(columns={"group_ids": "group_id"})
        tg["position"] = tg.position.astype(int)
        tg = tg.merge(fx.groups.drop(columns=["episode_id"]), on="group_id", how="left")
        tg = tg[["task_id", "group_id", "position", "episode_id", "scene_id", "tier",
                 "title", "group_index", "n_groups_in_episode", "instruction",
                 "n_operations", "reference_action_types"]]
        return cls(root=str(fx.root), frozen=fx, runs=runs, episodes=fx.episodes,
                   groups=fx.groups, tasks=tasks, task_groups=tg, suites=fx.suites,
                   conditions=fx.conditions,
                   group_records=_with_runs(fx.group_records, runs),
                   attempts=_with_runs(fx.attempts, runs),
                   task_records=_with_runs(fx.task_records, runs),
                   condition_records=_with_runs(fx.condition_records, runs))

    def __repr__(self) -> str:
        return (f"Export(root={self.root!r}, runs={len(self.runs)}, tasks={len(self.tasks)}, "
                f"group_records={len(self.group_records)})")

    @property
    def report(self):
        """The verification summary (:class:`analysis.records.VerificationReport`)."""
        return self.frozen.report

    @property
    def manifest(self) -> dict:
        return self.frozen.manifest

    # -- runs and raw records ------------------------------------------------------------

    def run_ids(self, name: str | None = None) -> list[str]:
        """Every run ID, or those ``name`` denotes (a run ID or a planner name); an unknown
        name raises ``ValueError`` with the closest run ID or planner.

        >>> load().run_ids("belief_search")
        ['belief_search__memory__persistent', 'belief_search__memory__reset', 'belief_search__planner__persistent']
        """
        from .records.run_names import resolve_run
        ids = sorted(self.runs.run_id)
        return ids if name is None else resolve_run(name, ids, key="run")

    def _one_run(self, run: str) -> str:
        ids = self.run_ids(run)
        if len(ids) != 1:
            raise ValueError(f"run={run!r}: names {len(ids)} runs ({', '.join(ids)}); give "
                             "one run ID")
        return ids[0]

    def run(self, run: str) -> dict:
        """The ``run.json`` record of one run (a run ID, or a planner with one run)."""
        rid = self._one_run(run)
        return next(r for r in self.frozen.records_of("run") if r["run_id"] == rid)

    def group_records_of(self, run: str) -> list[dict]:
        """The raw group records (docs/FORMAT.md) of one run, decoded from the verified
        bytes, in file order. ``run`` is a run ID, or a planner name with one run.

        >>> recs = load().group_records_of("lexicon")
        >>> sorted(recs[0])[:4]
        ['attempts', 'belief', 'completion_tokens', 'episode_id']
        """
        return list(self.frozen.group_records_of(self._one_run(run)))

    def task(self, task_id: str) -> dict:
        """The cohort's task record (contract, groups, tier, title)."""
        for t in self.frozen.records_of("task"):
            if t["task_id"] == task_id:
                return t
        raise UnknownName(f"task_id {task_id!r}: not in the cohort"
                       f"{_did_you_mean(task_id, self.tasks.task_id)}")

    def task_trace(self, run: str, task_id: str) -> dict:
        """Everything recorded for one task in one run: ``{"task": <cohort task>,
        "task_record": <the run's task record>, "group_records": [<raw group record>,
        ...]}`` with the groups in the task's order.

        >>> export = load()
        >>> tid = export.tasks.task_id.iloc[0]
        >>> trace = export.task_trace("belief_search__planner__persistent", tid)
        >>> [g["group_id"] for g in trace["group_records"]] == trace["task"]["group_ids"]
        True
        """
        rid = self._one_run(run)
        task = self.task(task_id)
        rec = next((t for t in self.frozen.records_of("task_record")
                    if t["run_id"] == rid and t["task_id"] == task_id), None)
        if rec is None:
            raise UnknownName(f"task_id {task_id!r}: not in run {rid}'s suite")
        wanted = task["group_ids"]
        by_id = {g["group_id"]: g for g in self.frozen.group_records_of(rid)
                 if g["group_id"] in set(wanted)}
        return {"task": task, "task_record": rec,
                "group_records": [by_id[g] for g in wanted if g in by_id]}

    def failures(self, run: str):
        """Failure labels and condition ledger of one run, derived by re-executing its
        verified records (:mod:`analysis.executor.failures`; computed once per run): a
        ``FailureResults`` with DataFrames ``attempts`` (one row per rejected attempt:
        ``group_id, index, failure, check, failed_checks``), ``groups`` (one row per
        group that did not complete: ``status, failure``) and ``ledger`` (one row per
        task condition: ``kind, first_group, first_position, end_truth, undone``).

        >>> f = load().failures("lexicon")
        >>> f.attempts.failure.value_counts().index[0]
        'unmet_precondition:not_held'
        """
        rid = self._one_run(run)
        if rid not in self._failures:
            from .report.failure_labels import derive_failures
            planner = self.runs.set_index("run_id").planner[rid]
            self._failures[rid] = derive_failures(self.frozen, {rid: planner})
        return self._failures[rid]

    # -- metrics and statistics -----------------------------------------------------------

    @property
    def task_metrics(self) -> pd.DataFrame:
        """:func:`analysis.metrics.task_metrics` of every run: one row per (run, task)
        with success, GCR, action validity, endpoint and resources (computed once)."""
        if not self._metrics:
            from .metrics import task_metrics
            self._metrics.append(task_metrics(self.frozen))
        return self._metrics[0].copy()

    def results(self, **stats) -> "Results":
        """The metrics and statistics of every table, with the ``stats.*`` settings of
        ``configs/tables.yaml`` overridden by ``stats`` (keys :data:`STATS_KEYS`).
        Computed once per setting.

        A wrong key or value raises :class:`analysis.settings.ConfigError` (a
        ``ValueError``) naming it, as the command line does.

        >>> res = load().results(n_resamples=2000, confidence_level=0.9)
        >>> res.config.n_resamples, res.config.confidence_level
        (2000, 0.9)
        >>> load().results(n_resample=5)
        Traceback (most recent call last):
        ...
        analysis.settings.ConfigError: unknown stats key 'n_resample'; did you mean n_resamples? (keys: n_resamples, confidence_level, seed, method, pairwise_method, contrast_metrics)
        """
        cfg = _stats_config(stats)
        key = tuple(sorted((k, tuple(v) if isinstance(v, list) else v)
                           for k, v in cfg["stats"].items()))
        if key not in self._results:
            from .report import compute
            with _warnings_once():
                self._results[key] = Results(self, compute(self.frozen, cfg))
        return self._results[key]


#: The few-episode warnings (analysis.stats.FewClustersWarning) already said in this
#: process: Export.results and Results.artefact say each text once, not on every call
#: (a notebook shows a warning again for every new cell it is raised from).
_SAID: set[str] = set()
_SAID_LOCK = threading.Lock()


@contextmanager
def _warnings_once():
    """Run the block; re-issue its few-episode warnings whose text was not said yet in
    this process (other warnings pass through unchanged)."""
    import warnings

    from .stats import FewClustersWarning
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


class UnknownName(KeyError):
    """A task, table or figure name the export does not have. A ``KeyError`` (so
    ``except KeyError`` still catches it) whose message prints as written, not quoted.

    >>> str(UnknownName("table 'x': not an artefact"))
    "table 'x': not an artefact"
    """

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def _did_you_mean(word, choices) -> str:
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.6)
    return f"; did you mean {close[0]}?" if close else ""


def _stats_config(overrides: dict) -> dict:
    """``{"stats": {...}}``: configs/tables.yaml's stats block with ``overrides``, every
    value checked as ``python -m analysis.tables`` checks it."""
    for k in overrides:
        if k not in STATS_KEYS:
            raise ConfigError(f"stats.{k}", f"unknown stats key {k!r}"
                                            f"{_did_you_mean(k, STATS_KEYS)} (keys: "
                                            f"{', '.join(STATS_KEYS)})")
    # plain values (no interpolation in the stats block): YAML, not the command's Hydra
    base = yaml.safe_load((config_dir() / "tables.yaml").read_text())["stats"]
    stats = {**base, **{k: (list(v) if isinstance(v, tuple) else v)
                        for k, v in overrides.items()}}
    check_stats(stats)
    return {"stats": stats}


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
    support it).

    :meth:`table` gives one table's data (the CSV columns, raw interval bounds),
    :meth:`artefact` the whole :class:`analysis.report.Table` (display frame and note),
    :meth:`figure` a figure with the numbers it plots. Names are the file names without
    the prefix (``"planner_results"``) or with it (``"table04_planner_results"``).

    >>> res = load().results()
    >>> t4 = res.table("planner_results")
    >>> import pandas as pd
    >>> from analysis._fs.resources import REPO_ROOT
    >>> csv = pd.read_csv(REPO_ROOT / "tables/table04_planner_results.csv")
    >>> pd.testing.assert_frame_equal(t4, csv, check_dtype=False, rtol=1e-9)
    >>> res.planner_bootstrap.table.columns[:3].tolist()
    ['label', 'metric', 'estimate']
    """

    def __init__(self, export: Export, context):
        self.export = export
        self.context = context
        self._built: dict = {}

    def __repr__(self) -> str:
        c = self.config
        return (f"Results(n_resamples={c.n_resamples}, confidence_level={c.confidence_level:g}, "
                f"seed={c.seed}, method={c.method!r}, planners={self.labels})")

    config = property(lambda self: self.context.config)
    task_metrics = property(lambda self: self.context.tasks.copy())
    planner_tasks = property(lambda self: self.context.planner_tasks.copy())
    labels = property(lambda self: list(self.context.labels))
    planner_bootstrap = property(lambda self: self.context.planner_boot)
    endpoint_bootstrap = property(lambda self: self.context.endpoint_boot)
    tier_bootstrap = property(lambda self: self.context.tier_boot)
    pairwise = property(lambda self: self.context.pairwise)
    pairwise_check = property(lambda self: self.context.pairwise_check)
    memory = property(lambda self: dict(self.context.memory))
    skipped = property(lambda self: dict(self.context.skipped))
    failures = property(lambda self: self.context.failures)

    @property
    def names(self) -> list[str]:
        """Every artefact name, in paper order (``table01_example_task``, ...)."""
        from .report import BUILDERS
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
        from .report import BUILDERS, Skip
        full = next((n for n in self.names if n == name), None)
        if full is None:
            full = self._resolve(name, ("table", "fig"))
        if full not in self._built:
            build = next(b[3] for b in BUILDERS if b[0] == full)
            try:
                with _warnings_once():
                    if full.startswith("fig"):
                        from .report import figure_style
                        with figure_style():
                            self._built[full] = build(self.export.frozen, self.context)
                    else:
                        self._built[full] = build(self.export.frozen, self.context)
            except Skip as exc:
                self._built[full] = LookupError(f"{full}: not produced from this export: {exc}")
        got = self._built[full]
        if isinstance(got, LookupError):
            raise got
        return got

    def table(self, name: str) -> pd.DataFrame:
        """One table's data as written to ``tables/<name>.csv`` (a copy): estimates with
        their raw interval bounds, counts, labels.

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

        >>> cmp = load().results().compare("belief_search__planner__persistent",
        ...                                "greedy_hints__planner__persistent")
        >>> cmp.n_a_only + cmp.n_b_only == len(cmp.tasks)
        True
        >>> sorted(set(cmp.tasks.solved_by))
        ['A', 'B']
        """
        from .report.compare import compare_runs
        c = self.config
        tm = self.context.tasks
        return compare_runs(self.export, run_a, run_b, metric=metric,
                            n_resamples=c.n_resamples, confidence_level=c.confidence_level,
                            seed=c.seed, method=method,
                            labels=dict(zip(tm.run_id, tm.label)))


def __getattr__(name: str):
    """The names of :data:`SHARED`, each the very object the tables use (imported here on
    first use).

    >>> from analysis.api import ENDPOINTS, pct_ci
    >>> ENDPOINTS[-1], pct_ci(0.5, 0.25, 0.75)
    ('completed_all', '50.0 [25.0, 75.0]')
    """
    if name not in SHARED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from .executor.failures import DerivationError
    from .metrics import ENDPOINTS
    from .report.common import ci, pct_ci
    from .report.context import PLANNER_METRICS
    from .report.grounding import condition_lines, ref_text, source_lines
    from .report.links import task_slug, view_compare_page, view_index, view_task_page
    from .report.memory_stats import STUDY_METRICS
    from .report.planners import ENDPOINT_LABELS
    shared = {"DerivationError": DerivationError, "ENDPOINTS": ENDPOINTS, "ci": ci,
              "pct_ci": pct_ci, "PLANNER_METRICS": PLANNER_METRICS,
              "condition_lines": condition_lines, "ref_text": ref_text,
              "source_lines": source_lines, "task_slug": task_slug,
              "view_compare_page": view_compare_page, "view_index": view_index,
              "view_task_page": view_task_page, "STUDY_METRICS": STUDY_METRICS,
              "ENDPOINT_LABELS": ENDPOINT_LABELS}
    globals().update(shared)
    return shared[name]

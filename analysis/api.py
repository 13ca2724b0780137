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

import os
import threading
from dataclasses import dataclass, field
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
        from .report.results import UnknownName, _did_you_mean
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
        from .report.results import UnknownName
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
            from .report.results import _warnings_once
            with _warnings_once():
                results = compute(self.frozen, cfg)
            results.export = self   # Results.compare names runs as this export does
            self._results[key] = results
        return self._results[key]


def _stats_config(overrides: dict) -> dict:
    """``{"stats": {...}}``: configs/tables.yaml's stats block with ``overrides``, every
    value checked as ``python -m analysis.tables`` checks it."""
    from .report.results import _did_you_mean
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


#: The one Results class (:mod:`analysis.report.results`: the tables build from it) and
#: its helpers, imported on first use like :data:`SHARED`.
_FROM_RESULTS = ("Results", "UnknownName", "_SAID", "_warnings_once")


def __getattr__(name: str):
    """``Results`` and the names of :data:`SHARED`, each the very object the tables use (imported here on
    first use).

    >>> from analysis.api import ENDPOINTS, pct_ci
    >>> ENDPOINTS[-1], pct_ci(0.5, 0.25, 0.75)
    ('completed_all', '50.0 [25.0, 75.0]')
    """
    if name in _FROM_RESULTS:
        from .report import results
        value = getattr(results, name)
        globals()[name] = value
        return value
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

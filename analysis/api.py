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
from pathlib import Path

import pandas as pd
import yaml

from ._fs.resources import config_dir, default_export_root
from .records.loader import Export as _RecordsExport
from .records.loader import UnknownName, _did_you_mean  # noqa: F401 - the API's unknown-name error
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
        export = load_frozen(root).joined(Export)
        after = _fingerprint(root)
        if before is not None and after == before:  # unchanged while it was verified
            _cache[key] = (before, export)
        else:
            _cache.pop(key, None)
        return export


class Export(_RecordsExport):
    """A verified export, as :func:`load` returns it: the one export class
    (:class:`analysis.records.Export`: tables, raw records, runs and tasks by name), with
    the per-run tables joined (:meth:`~analysis.records.Export.joined`) and the metrics,
    failure labels and statistics computed from it (each once). The records layer
    imports nothing above it, so what needs the metrics, the executor or the report is
    added here, and nothing else: no table or record is described twice.

    Tables (pandas DataFrames, one row per ...):

    ``runs`` (run: ``run_id, planner, memory, suite, seed, attempt_limit, run_name``;
    ``run_name`` is the planner's name unless the run was named apart from it),
    ``episodes`` (episode), ``groups`` (cohort group), ``tasks`` (task, plus ``suites``:
    the suites holding it), ``task_groups`` (task x group: ``task_id, group_id,
    position`` (the group's place in the task), the task's and the group's columns),
    ``suites`` (suite x task), ``conditions`` (contract condition), ``group_records``
    (run x group), ``attempts`` (run x group x attempt), ``task_records`` (run x task) and
    ``condition_records`` (run x task x condition); every per-run table has ``planner,
    suite, memory`` right after ``run_id``. ``frozen`` is the loader's form
    (:class:`analysis.records.FrozenExport`, per-run tables without those columns: what
    :func:`analysis.metrics.task_metrics` and the report builders take); ``report`` the
    verification summary (:class:`analysis.records.VerificationReport`), ``manifest``
    the export's manifest.

    >>> export = load()
    >>> export.group_records.columns[:5].tolist()
    ['run_id', 'planner', 'suite', 'memory', 'episode_id']
    >>> len(export.task_groups) == sum(map(len, export.tasks.group_ids))
    True
    """

    def group_records_of(self, run: str) -> list[dict]:
        """The raw group records (docs/FORMAT.md) of one run, decoded from the verified
        bytes, in file order, as a list (the records' sequence decodes the whole run
        again at every index). ``run`` is a run ID, or a planner name with one run.

        >>> recs = load().group_records_of("lexicon")
        >>> sorted(recs[0])[:4]
        ['attempts', 'belief', 'completion_tokens', 'episode_id']
        """
        return list(super().group_records_of(run))

    # -- computed from the records (once) -------------------------------------------------

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
        key = ("failures", rid)
        if key not in self._computed:
            from .report.failure_labels import derive_failures
            planner = self.runs.set_index("run_id").planner[rid]
            self._computed[key] = derive_failures(self.frozen, {rid: planner})
        return self._computed[key]

    # -- metrics and statistics -----------------------------------------------------------

    @property
    def task_metrics(self) -> pd.DataFrame:
        """:func:`analysis.metrics.task_metrics` of every run: one row per (run, task)
        with success, GCR, action validity, endpoint and resources (computed once)."""
        if "task_metrics" not in self._computed:
            from .metrics import task_metrics
            self._computed["task_metrics"] = task_metrics(self.frozen)
        return self._computed["task_metrics"].copy()

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
        key = ("results", tuple(sorted((k, tuple(v) if isinstance(v, list) else v)
                                       for k, v in cfg["stats"].items())))
        if key not in self._computed:
            from .report import compute
            from .report.results import _warnings_once
            with _warnings_once():
                results = compute(self.frozen, cfg)
            results.export = self   # Results.compare names runs as this export does
            self._computed[key] = results
        return self._computed[key]


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


#: The one Results class (:mod:`analysis.report.results`: the tables build from it) and
#: its helpers, imported on first use like :data:`SHARED`.
_FROM_RESULTS = ("Results", "_SAID", "_warnings_once")


def __getattr__(name: str):
    """``Results`` and the names of :data:`SHARED`, each the very object the tables use
    (imported here on first use).

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

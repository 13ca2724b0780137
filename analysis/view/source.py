"""The one place the viewer reads the export: what the Python API returns (docs/api.md),
nothing else.

:func:`open_source` verifies and loads the export (``analysis.load``) and computes the
statistics of the tables (``Export.results``); :class:`Source` hands the site builder plain records (cohort tasks and episodes,
each run's raw group and task records) and the results objects the tables are built from
(task metrics, the planner-suite bootstrap, the memory study). Switching the viewer to
another loader is a change of this module only.

>>> src = open_source("frozen_exports")  # doctest: +SKIP
>>> [r["run_id"] for r in src.runs][:1]  # doctest: +SKIP
['belief_search__memory__persistent']
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field

__all__ = ["Source", "open_source"]


@dataclass
class Source:
    """A verified export as the viewer sees it (``export``: the API's ``Export``).

    ``runs``: one dict per run (``run_id, planner, memory, suite, label``), sorted by
    run ID; ``tasks``: the cohort's task records; ``suites``: suite -> task IDs;
    ``results``: the statistics results of the tables (``task_metrics``,
    ``planner_bootstrap``, ``memory``, ``config``); ``fingerprint``: SHA-256 of the
    manifest (the records' identity, shown on every page).
    """

    export: object = field(repr=False)
    results: object = field(repr=False)
    runs: list
    tasks: list = field(repr=False)
    suites: dict = field(repr=False)
    fingerprint: str = ""

    def episodes(self):
        """The cohort's episode records (groups with source steps and operations)."""
        return self.export.records_of("episode")

    def task_records(self, run_id: str) -> dict:
        """``{task_id: {"completed": bool, "conditions": [{"id", "truth"}, ...]}}`` of one
        run, truths in contract order (the API's ``task_records`` and
        ``condition_records``)."""
        ex = self.export
        cr = ex.condition_records[ex.condition_records.run_id == run_id]
        out = {tid: {"completed": bool(done), "conditions": []} for tid, done in
               zip(*[ex.task_records.loc[ex.task_records.run_id == run_id, c]
                     for c in ("task_id", "completed")])}
        for tid, cid, truth in zip(cr.task_id, cr.condition_id, cr.truth):
            out[tid]["conditions"].append({"id": cid, "truth": truth})
        return out

    def group_records(self, run_id: str) -> dict:
        """``{group_id: raw group record}`` of one run (attempts, queries, belief)."""
        return {g["group_id"]: g for g in self.export.group_records_of(run_id)}

    def failures(self, run_id: str):
        """The run's failure labels and condition ledger, as the API derives them by
        re-execution (``Results.failures`` for planner-suite runs, else
        ``Export.failures``): ``FailureResults`` with ``attempts`` and ``groups``, or the
        reason (a string) when the run's records do not re-execute."""
        from ..api import DerivationError
        f = getattr(self.results, "failures", None)
        if f is not None and run_id in set(f.group_counts.run_id):
            return f
        try:
            return self.export.failures(run_id)
        except DerivationError as exc:  # the records do not re-execute: no labels
            return str(exc)

    @property
    def task_metrics(self):
        """One row per (run, task): endpoint, GCR, success, resources, planner label."""
        return self.results.task_metrics

    def repair_counts(self) -> dict:
        """``{run_id: (attempts, repair attempts, accepted attempts)}`` from the attempts
        table (counts, as in table 12)."""
        att = self.export.attempts
        out = {}
        for run_id, part in att.groupby("run_id", sort=True):
            out[run_id] = (int(len(part)), int((part.source == "repair").sum()),
                           int((part.status == "accepted").sum()))
        return out


def open_source(export_root: str | os.PathLike, stats: dict | None = None) -> Source:
    """Verify and load ``export_root`` and compute the tables' statistics with the
    ``stats`` overrides (keys of ``configs/tables.yaml``'s ``stats`` block).

    Raises :class:`analysis.records.IntegrityError` when verification fails.
    """
    from ..api import load

    export = load(export_root)
    results = export.results(**(stats or {}))
    tm = results.task_metrics
    labels = dict(zip(tm.run_id, tm.label))
    runs = [{"run_id": r.run_id, "planner": r.planner, "run_name": r.run_name,
             "memory": r.memory, "suite": r.suite, "label": labels.get(r.run_id, r.run_id)}
            for r in export.runs.sort_values("run_id").itertuples()]
    suites = {s: sorted(part.task_id) for s, part in export.suites.groupby("suite")}
    tasks = sorted(export.records_of("task"), key=lambda t: t["task_id"])
    # the manifest's bytes are its canonical form (docs/FORMAT.md): hash what was verified
    text = json.dumps(export.manifest, sort_keys=True, indent=1, ensure_ascii=False) + "\n"
    fingerprint = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return Source(export=export, results=results, runs=runs, tasks=tasks, suites=suites,
                  fingerprint=fingerprint)


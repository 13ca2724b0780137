"""The failure labels and the condition ledger of a run, derived by re-execution (paper
6.3 and E.1; docs/executor.md, "Failure labels").

:func:`derive_failures` re-executes each run from the hash-verified records
(:mod:`analysis.executor.failures`) and returns a :class:`FailureResults` of DataFrames;
no recorded label is read. :func:`analysis.report.compute` derives the planner suite's
once (``Results.failures``, tables 15 and 16); ``Export.failures`` derives one run's. This
module computes and does not format: the tables are built in :mod:`.failures`.

>>> FailureResults.__dataclass_fields__.keys() >= {"attempts", "groups", "ledger"}
True
"""
from __future__ import annotations

import gc
import os
from dataclasses import dataclass

import pandas as pd

__all__ = ["FailureResults", "derive_failures"]


#: What the derivation reads of a group record (analysis.executor.failures): inside the
#: attempts, calls and queries only these fields, so that a run's raw replies and checks
#: are skipped while parsing (a third of the command's peak memory went to them).
_FIELDS = ("episode_id", "group_id", "status", "attempts.action", "attempts.status",
           "attempts.source", "attempts.index", "queries.region", "queries.responded",
           "planner_calls.raw")


@dataclass
class FailureResults:
    """Per-run labels and ledger as DataFrames (one row per rejected attempt, per
    non-completed group, per condition), with the run's planner ``label``."""

    attempts: pd.DataFrame   # label, run_id, episode_id, group_id, index, failure, check, failed_checks
    groups: pd.DataFrame     # label, run_id, episode_id, group_id, status, failure
    ledger: pd.DataFrame     # label, run_id, episode_id, task_id, condition_id, kind, ...
    group_counts: pd.DataFrame  # label, run_id, episode_id, group_id, task_ids (every group)


def derive_failures(export, run_labels, workers: int = 1) -> FailureResults:
    """Labels and ledger of every run in ``run_labels`` (``{run_id: planner label}``),
    derived by re-execution from the export's verified records. ``workers=2`` derives
    about half of the attempts in a forked process (where ``os.fork`` exists): the same
    rows in the same order, and the same first error (that of the first failing run in
    ``run_labels`` order)."""
    from ..executor import Rules
    from ..executor.failures import DerivationError

    if not export.records_of("rules"):
        raise DerivationError("cohort/rules.json: missing (re-execution needs the cohort's "
                              "rules)")
    cohort = (Rules.from_dict(export.records_of("rules")[0]),
              {e["episode_id"]: e for e in export.records_of("episode")},
              {t["task_id"]: t for t in export.records_of("task")},
              {s["suite"]: s for s in export.records_of("suite")},
              {r["run_id"]: r for r in export.records_of("run")})
    order = list(run_labels)
    theirs = _split(export, order) if workers > 1 and hasattr(os, "fork") else []
    worker = None
    if theirs:
        from .._fs.fork import ForkWorker
        worker = ForkWorker.start(lambda: _derive_runs(export, theirs, run_labels, cohort),
                                  name="re-executing process")
    try:
        rows = _derive_runs(export, [r for r in order if r not in theirs], run_labels, cohort)
        if worker is not None:
            rows.update(worker.collect())
    finally:
        if worker is not None:
            worker.close()
    att, grp, led = [], [], []
    for run_id in order:  # each process stops at its first error: none is skipped here
        got = rows[run_id]
        if isinstance(got, DerivationError):
            raise got
        att += got[0]
        grp += got[1]
        led += got[2]
    gr = export.group_records
    gr = gr[gr.run_id.isin(list(run_labels))]
    return FailureResults(
        attempts=pd.DataFrame(att, columns=["label", "run_id", "episode_id", "group_id",
                                            "index", "failure", "check", "failed_checks"]),
        groups=pd.DataFrame(grp, columns=["label", "run_id", "episode_id", "group_id",
                                          "status", "failure"]),
        ledger=pd.DataFrame(led, columns=["label", "run_id", "episode_id", "task_id",
                                          "condition_id", "kind", "n_groups", "first_group",
                                          "first_position", "end_truth", "undone"]),
        group_counts=pd.DataFrame({"label": gr.run_id.map(run_labels), "run_id": gr.run_id,
                                   "episode_id": gr.episode_id, "group_id": gr.group_id}))


def _split(export, order: list[str]) -> list[str]:
    """The runs a second process derives: about half of the attempts (the derivation's
    cost), dealt largest run first to the process with fewer so far, the largest to the
    second process (its memory grows from what the fork shares, this one's from all it
    holds: the command's peak is lower that way)."""
    n = export.group_records.groupby("run_id").n_attempts.sum().to_dict()
    theirs, load = [], {"mine": 0, "theirs": 0}
    for run_id in sorted(order, key=lambda r: (-n.get(r, 0), r)):
        side = "theirs" if load["theirs"] <= load["mine"] else "mine"
        load[side] += n.get(run_id, 0)
        if side == "theirs":
            theirs.append(run_id)
    return theirs if len(theirs) < len(order) else []


def _derive_runs(export, ids: list[str], run_labels: dict, cohort) -> dict:
    """``{run_id: (attempt rows, group rows, ledger rows)}`` of ``ids`` in order, up to
    the first run that does not re-execute, whose :class:`DerivationError` is its value
    (returned, not raised: :func:`derive_failures` orders the errors of two processes)."""
    from ..executor.failures import DerivationError, derive_run_by_episode

    rules, episodes, tasks, suites, runs = cohort
    out: dict = {}
    # Re-execution allocates millions of short-lived worlds, tuples and labels, none of
    # them in a reference cycle: the cyclic collector would only rescan the verified
    # export's objects again and again (about a fifth of the derivation's CPU).
    was = gc.isenabled()
    gc.disable()
    try:
        for run_id in ids:
            label, run = run_labels[run_id], runs[run_id]
            # One episode's records decoded at a time (about 50 MB for the committed
            # export's largest run when decoded whole): the command's peak memory.
            chunks = export.group_records_of(run_id).decode_by("episode_id", fields=_FIELDS)
            try:
                d = derive_run_by_episode(
                    run_id, chunks, episodes,
                    [tasks[t] for t in suites[run["suite"]]["task_ids"] if t in tasks],
                    rules, run.get("attempt_limit", 80))
            except (KeyError, TypeError, IndexError, AttributeError) as exc:
                # records that do not fit their cohort (a hand-made export): no labels
                out[run_id] = DerivationError(f"run {run_id}: the records do not re-execute "
                                              f"({type(exc).__name__}: {exc})")
                break
            except DerivationError as exc:
                out[run_id] = exc
                break
            out[run_id] = (
                [(label, run_id, a.episode_id, a.group_id, a.index, a.label, a.check,
                  " ".join(a.failed_checks)) for a in d.attempts],
                [(label, run_id, g.episode_id, g.group_id, g.status, g.label)
                 for g in d.groups],
                [(label, run_id, tasks[e.task_id]["episode_id"], e.task_id, e.condition_id,
                  e.kind, e.n_groups, e.first_group, e.first_position, e.end_truth, e.undone)
                 for e in d.ledger])
    finally:
        # what was built goes to the oldest generation unscanned (re-enabling would
        # otherwise start with a collection over all of it)
        gc.freeze()
        gc.unfreeze()
        if was:
            gc.enable()
    return out

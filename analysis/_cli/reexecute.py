"""``python -m analysis.reexecute [run=RUN_ID_OR_PLANNER]``: derive frozen runs by re-execution.

The export is verified first (nothing unchecked is replayed). Then every run under
``frozen_exports/runs/`` (or only ``run``: any run ID or planner name the export holds,
added planners included) is re-executed from each episode's initial world with its
recorded planner replies (:mod:`analysis.executor.replay`): group statuses, attempts,
repairs, queries, world hashes, task completion, condition lists and truths are derived,
never trusted; so are each run's failure labels and condition ledger
(:mod:`analysis.executor.failures`), summarised in one line per run. Exit 0 when every recorded value equals the derived one; else exit 1
naming the first divergence (file, record, field).

>>> from analysis._cli.reexecute import reexecute
>>> [r.summary() for r in reexecute("frozen_exports", planner="lexicon")]  # doctest: +ELLIPSIS
['lexicon__planner__persistent: ... groups, ... attempts, ... tasks replayed, 0 divergences']
"""
from __future__ import annotations

import sys
from pathlib import Path

from .config_check import ConfigError
from ..executor.replay import ReplayReport, replay_run
from ..records.integrity import IntegrityError, verify_records

__all__ = ["reexecute", "main"]


def reexecute(export_root, planner: str | None = None) -> list[ReplayReport]:
    """Verify the export, then derive every recorded run (of ``planner`` if given) from the
    cohort by re-execution; one report per run.

    Raises :class:`~analysis.records.IntegrityError` when the export does not verify (so
    no record is replayed unchecked) and ``ValueError`` for an unknown planner.
    """
    from ..executor.rules import Rules

    root = Path(export_root)
    _report, manifest, records = verify_records(root)
    of = {}
    for rel, e in sorted(manifest["files"].items()):
        of.setdefault(e["record_type"], []).append(rel)
    if not of.get("rules"):
        raise IntegrityError("cohort/rules.json", "missing: re-execution needs the cohort's "
                             "rules")
    rules_rel = of["rules"][0]
    try:
        rules = Rules.from_dict(records[rules_rel][0])
    except (ValueError, KeyError, TypeError) as exc:
        raise IntegrityError(rules_rel, f"rules do not load ({exc})", line=1) from None
    episodes = {e["episode_id"]: e for rel in of.get("episode", []) for e in records[rel]}
    tasks = {t["task_id"]: t for rel in of.get("task", []) for t in records[rel]}
    suites = {s["suite"]: s for rel in of.get("suite", []) for s in records[rel]}
    reports = []
    wanted = None
    if planner is not None:
        from ..records.run_names import resolve_run
        wanted = set(resolve_run(planner, [records[rel][0]["run_id"]
                                           for rel in of.get("run", [])]))
    for rel in of.get("run", []):
        run = records[rel][0]
        if wanted is not None and run["run_id"] not in wanted:
            continue
        base = rel.rsplit("/", 1)[0]
        reports.append(replay_run(
            run["run_id"], records[f"{base}/groups.jsonl.gz"], records[f"{base}/tasks.jsonl"],
            episodes, tasks, rules, groups_file=f"{base}/groups.jsonl.gz",
            tasks_file=f"{base}/tasks.jsonl", run=run, suite=suites[run["suite"]],
            run_file=rel))
    return reports


def failure_summary(derivation) -> str:
    """One line of a run's derived failure labels (docs/executor.md, Failure labels).

    >>> from analysis.executor.failures import RunDerivation
    >>> failure_summary(RunDerivation("r"))
    'failure labels: 0 rejected attempts (other: 0), 0 groups not completed; ledger: 0 conditions, 0 undone'
    """
    from collections import Counter
    n = len(derivation.attempts)
    c = Counter(a.label for a in derivation.attempts)
    top = ", ".join(f"{k} {v}" for k, v in sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[:3])
    return (f"failure labels: {n} rejected attempts (other: {c.get('other', 0)}"
            f"{'; ' + top if top else ''}), {len(derivation.groups)} groups not completed; "
            f"ledger: {len(derivation.ledger)} conditions, "
            f"{sum(e.undone for e in derivation.ledger)} undone")


def run_reexecute(export_root, planner: str | None = None, run: str | None = None) -> int:
    """Re-execute the export's runs (only ``run``, a run ID or planner name, if given);
    print one line per run and the first divergence; return the exit code (2 for a run
    the manifest does not name, before any verification)."""
    from .._fs.transaction import TransactionBusy
    from ..records.store import ExportStore
    name = run if run is not None else planner
    try:
        ExportStore(export_root).recover(lambda m: print(f"[analysis.reexecute] {m}",
                                                         file=sys.stderr, flush=True))
        if name is not None:
            # a misspelt run is refused from the manifest, before seconds of verification
            from ..records.run_names import manifest_run_ids, resolve_run
            ids = manifest_run_ids(export_root)
            if ids:
                try:
                    resolve_run(name, ids)
                except ValueError as exc:
                    raise ConfigError("run", f"{exc} (nothing was done)") from None
        reports = reexecute(export_root, name)
    except ConfigError as exc:  # refused before any work
        print(f"analysis.reexecute: {exc}", file=sys.stderr)
        return 2
    except (IntegrityError, ValueError, FileNotFoundError, TransactionBusy) as exc:
        print(f"reexecute FAILED: {exc}", file=sys.stderr)
        return 1
    for r in reports:
        print(r.summary())
        if r.ok and r.failures is not None:
            print("  " + failure_summary(r.failures))
    bad = [r for r in reports if not r.ok]
    if bad:
        print(f"first divergence: {bad[0].divergences[0].message()}", file=sys.stderr)
        return 1
    print(f"{len(reports)} run{'s' if len(reports) != 1 else ''} re-executed, 0 divergences")
    return 0


def main(argv=None) -> None:
    from .hydra_glue import command_main, resolve_path
    command_main("reexecute", lambda cfg: run_reexecute(resolve_path(cfg.export_root),
                                                        run=cfg.run), argv)

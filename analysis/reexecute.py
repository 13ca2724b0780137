"""``python -m analysis.reexecute [run=RUN_ID_OR_PLANNER]``: replay frozen run records.

Every run under ``frozen_exports/runs/`` (or only ``run``: any run ID or planner name the
export holds, added planners included) is replayed
through the executor from each episode's initial world (:mod:`analysis.executor.replay`).
Exit 0 when every attempt status, failed check, world hash and condition truth matches;
else exit 1 naming the first divergence (file, record, field).

>>> from analysis.reexecute import reexecute
>>> reexecute("frozen_exports", planner="no_such_planner")  # doctest: +SKIP
"""
from __future__ import annotations

import sys
from pathlib import Path

from .executor.replay import ReplayReport, replay_run
from .frozen.io import read_records
from .frozen.manifest import read_manifest
from .run import load_cohort

__all__ = ["reexecute", "main"]


def reexecute(export_root, planner: str | None = None) -> list[ReplayReport]:
    """Replay every recorded run (of ``planner`` if given); one report per run."""
    root = Path(export_root)
    cohort = load_cohort(root)
    manifest = read_manifest(root)
    run_files = sorted(rel for rel, e in manifest.get("files", {}).items()
                       if e["record_type"] == "run")
    reports = []
    known = set()
    for rel in run_files:
        run = read_records(root / rel)[0]
        known.add(run["planner"])
        if planner is not None and run["planner"] != planner:
            continue
        base = rel.rsplit("/", 1)[0]
        groups = read_records(root / base / "groups.jsonl.gz")
        tasks = read_records(root / base / "tasks.jsonl")
        reports.append(replay_run(run["run_id"], groups, tasks, cohort.episodes, cohort.tasks,
                                  cohort.rules, groups_file=f"{base}/groups.jsonl.gz",
                                  tasks_file=f"{base}/tasks.jsonl"))
    if planner is not None and not reports:
        raise ValueError(f"planner={planner!r}: no recorded run; recorded planners: "
                         f"{sorted(known)}")
    return reports


def _runs_of(export_root) -> dict[str, str]:
    """``{run_id: planner}`` of every run the export's manifest lists."""
    root = Path(export_root)
    out = {}
    for rel, e in sorted(read_manifest(root).get("files", {}).items()):
        if e.get("record_type") == "run":
            rec = read_records(root / rel)[0]
            out[rec["run_id"]] = rec["planner"]
    return out


def run_reexecute(export_root, planner: str | None = None, run: str | None = None) -> int:
    """Replay the export's runs (only ``run``, a run ID or planner name, if given); print
    one line per run and the first divergence; return the exit code."""
    from .transaction import TransactionBusy, recover_export
    name = run if run is not None else planner
    try:
        recover_export(export_root, lambda m: print(f"[analysis.reexecute] {m}",
                                                    file=sys.stderr, flush=True))
        only_run = None
        if name is not None:
            runs = _runs_of(export_root)
            if name in runs:
                only_run, name = name, runs[name]
            elif name not in set(runs.values()):
                known = sorted(set(runs) | set(runs.values()))
                raise ValueError(f"run={name!r}: no such run ID or planner in {export_root}; "
                                 f"the export holds {known}")
        reports = reexecute(export_root, name)
        if only_run is not None:
            reports = [r for r in reports if r.run_id == only_run]
    except (ValueError, FileNotFoundError, TransactionBusy) as exc:
        print(f"reexecute FAILED: {exc}", file=sys.stderr)
        return 1
    for r in reports:
        print(r.summary())
    bad = [r for r in reports if not r.ok]
    if bad:
        print(f"first divergence: {bad[0].divergences[0].message()}", file=sys.stderr)
        return 1
    print(f"{len(reports)} runs re-executed, 0 divergences")
    return 0


def main(argv=None) -> None:
    from ._hydra import command_main, resolve_path
    command_main("reexecute", lambda cfg: run_reexecute(resolve_path(cfg.export_root),
                                                        run=cfg.run), argv)


if __name__ == "__main__":
    main()

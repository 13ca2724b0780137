"""``python -m analysis.reexecute [planner=NAME]``: replay frozen run records.

Every run under ``frozen_exports/runs/`` (or only those of ``planner``) is replayed
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


def run_reexecute(export_root, planner: str | None = None) -> int:
    try:
        reports = reexecute(export_root, planner)
    except (ValueError, FileNotFoundError) as exc:
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


def main() -> None:
    import hydra
    from omegaconf import DictConfig

    from ._hydra import CONFIG_PATH, resolve_path

    @hydra.main(config_path=CONFIG_PATH, config_name="reexecute", version_base="1.3")
    def _main(cfg: DictConfig) -> None:
        planner = cfg.planner.name if cfg.get("planner") else None
        sys.exit(run_reexecute(resolve_path(cfg.export_root), planner))

    _main()


if __name__ == "__main__":
    main()

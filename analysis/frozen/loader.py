"""Loading a verified frozen export into pandas DataFrames (docs/ARCHITECTURE.md §7).

Nothing is returned before verification passes: :func:`load` verifies first and builds
the tables from the very bytes it verified.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import pandas as pd

from .integrity import VerificationReport, verify_records

__all__ = ["FrozenExport", "load"]


@dataclass(frozen=True)
class FrozenExport:
    """A verified export. Each table attribute is a DataFrame (see ARCHITECTURE.md §7)."""

    root: str
    manifest: dict = field(repr=False)
    report: VerificationReport = field(repr=False)
    episodes: pd.DataFrame = field(repr=False)
    groups: pd.DataFrame = field(repr=False)
    tasks: pd.DataFrame = field(repr=False)
    suites: pd.DataFrame = field(repr=False)
    conditions: pd.DataFrame = field(repr=False)
    runs: pd.DataFrame = field(repr=False)
    group_records: pd.DataFrame = field(repr=False)
    attempts: pd.DataFrame = field(repr=False)
    task_records: pd.DataFrame = field(repr=False)
    condition_records: pd.DataFrame = field(repr=False)
    _records: dict = field(repr=False, default_factory=dict)

    def raw(self, relpath: str) -> list[dict]:
        """The parsed records of one file, e.g. ``export.raw("cohort/tasks.jsonl")``."""
        try:
            return self._records[relpath]
        except KeyError:
            raise KeyError(f"relpath {relpath!r}: not in the export; files: "
                           f"{sorted(self._records)}") from None

    def files_of(self, record_type: str) -> list[str]:
        return sorted(rel for rel, e in self.manifest["files"].items()
                      if e["record_type"] == record_type)

    def records_of(self, record_type: str) -> list[dict]:
        return [r for rel in self.files_of(record_type) for r in self._records[rel]]


def _frame(rows: list[dict], columns: list[str]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=columns)


def load(root: str | os.PathLike = "frozen_exports") -> FrozenExport:
    """Verify the export at ``root`` and return its tables.

    >>> export = load("frozen_exports")  # doctest: +SKIP
    >>> export.task_records.groupby("run_id").completed.mean()  # doctest: +SKIP
    """
    report, manifest, records = verify_records(root)

    def of(rtype):
        return [r for rel, e in sorted(manifest["files"].items())
                if e["record_type"] == rtype for r in records[rel]]

    episodes, groups, group_pos = [], [], {}
    for ep in of("episode"):
        n = len(ep["groups"])
        episodes.append({"episode_id": ep["episode_id"], "scene_id": ep["scene_id"],
                         "videos": list(ep["videos"]), "n_groups": n})
        for g in ep["groups"]:
            group_pos[g["group_id"]] = (g["index"], n)
            groups.append({
                "episode_id": ep["episode_id"], "group_id": g["group_id"],
                "group_index": g["index"], "n_groups_in_episode": n,
                "instruction": g["instruction"], "n_operations": len(g["operations"]),
                "reference_action_types": sorted({op["type"] for op in g["operations"]}),
            })
    scene_of = {e["episode_id"]: e["scene_id"] for e in episodes}

    tasks, conditions = [], []
    for t in of("task"):
        tasks.append({
            "task_id": t["task_id"], "episode_id": t["episode_id"],
            "scene_id": scene_of.get(t["episode_id"]), "tier": t["tier"],
            "title": t["title"], "group_ids": list(t["group_ids"]),
            "n_conditions": len(t["contract"]["conditions"]),
            "reference_action_types": sorted(set(t["reference_action_types"])),
        })
        for c in t["contract"]["conditions"]:
            conditions.append({"task_id": t["task_id"], "condition_id": c["id"],
                               "kind": c["kind"]})
    task_episode = {t["task_id"]: t["episode_id"] for t in tasks}
    suites = [{"suite": s["suite"], "task_id": tid, "episode_id": task_episode[tid]}
              for s in of("suite") for tid in s["task_ids"]]

    runs = [{k: r[k] for k in ("run_id", "planner", "memory", "suite", "seed",
                               "attempt_limit")} for r in of("run")]

    group_records, attempts = [], []
    for g in of("group_record"):
        index, n = group_pos[g["group_id"]]
        atts = g["attempts"]
        group_records.append({
            "run_id": g["run_id"], "episode_id": g["episode_id"], "group_id": g["group_id"],
            "group_index": index, "n_groups_in_episode": n, "status": g["status"],
            "n_attempts": len(atts),
            "n_accepted": sum(a["status"] == "accepted" for a in atts),
            "n_repair_attempts": sum(a["source"] == "repair" for a in atts),
            "attempted_types": sorted({a["action"]["type"] for a in atts
                                       if a["action"] is not None}),
            "prompt_tokens": g["prompt_tokens"], "completion_tokens": g["completion_tokens"],
            "query_attempts": len(g["queries"]),
            "query_responses": sum(q["responded"] for q in g["queries"]),
            **g["belief"],
        })
        for a in atts:
            attempts.append({
                "run_id": g["run_id"], "episode_id": g["episode_id"], "group_id": g["group_id"],
                "index": a["index"], "source": a["source"],
                "action_type": a["action"]["type"] if a["action"] else None,
                "status": a["status"], "n_failed_checks": len(a["failed_checks"]),
            })

    task_records, condition_records = [], []
    for t in of("task_record"):
        truths = [c["truth"] for c in t["conditions"]]
        task_records.append({"run_id": t["run_id"], "task_id": t["task_id"],
                             "episode_id": t["episode_id"], "completed": t["completed"],
                             "n_conditions": len(truths),
                             "n_true": sum(x == "TRUE" for x in truths)})
        for c in t["conditions"]:
            condition_records.append({"run_id": t["run_id"], "task_id": t["task_id"],
                                      "condition_id": c["id"], "truth": c["truth"]})

    return FrozenExport(
        root=str(root), manifest=manifest, report=report,
        episodes=_frame(episodes, ["episode_id", "scene_id", "videos", "n_groups"]),
        groups=_frame(groups, ["episode_id", "group_id", "group_index", "n_groups_in_episode",
                               "instruction", "n_operations", "reference_action_types"]),
        tasks=_frame(tasks, ["task_id", "episode_id", "scene_id", "tier", "title", "group_ids",
                             "n_conditions", "reference_action_types"]),
        suites=_frame(suites, ["suite", "task_id", "episode_id"]),
        conditions=_frame(conditions, ["task_id", "condition_id", "kind"]),
        runs=_frame(runs, ["run_id", "planner", "memory", "suite", "seed", "attempt_limit"]),
        group_records=_frame(group_records, [
            "run_id", "episode_id", "group_id", "group_index", "n_groups_in_episode", "status",
            "n_attempts", "n_accepted", "n_repair_attempts", "attempted_types",
            "prompt_tokens", "completion_tokens", "query_attempts", "query_responses",
            "cross_group_hits", "repeated_region_queries", "anchor_delta_conflicts"]),
        attempts=_frame(attempts, ["run_id", "episode_id", "group_id", "index", "source",
                                   "action_type", "status", "n_failed_checks"]),
        task_records=_frame(task_records, ["run_id", "task_id", "episode_id", "completed",
                                           "n_conditions", "n_true"]),
        condition_records=_frame(condition_records, ["run_id", "task_id", "condition_id",
                                                     "truth"]),
        _records=records,
    )

"""Loading a verified frozen export into pandas DataFrames (docs/ARCHITECTURE.md §7).

Nothing is returned before verification passes: :func:`load` verifies first and builds
the tables from the very bytes it verified.
"""
from __future__ import annotations

import gc
import os
from dataclasses import dataclass, field
from sys import intern

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

    def raw(self, relpath: str):
        """The parsed records of one file, e.g. ``export.raw("cohort/tasks.jsonl")``: a
        list, or for group records a sequence that decodes them on demand."""
        try:
            return self._records[relpath]
        except KeyError:
            raise KeyError(f"relpath {relpath!r}: not in the export; files: "
                           f"{sorted(self._records)}") from None

    def files_of(self, record_type: str) -> list[str]:
        return sorted(rel for rel, e in self.manifest["files"].items()
                      if e["record_type"] == record_type)

    def records_of(self, record_type: str) -> list[dict]:
        """Every record of ``record_type``, in file order. For ``group_record`` this
        decodes all of them again: prefer :meth:`group_records_of` one run at a time."""
        return [r for rel in self.files_of(record_type) for r in self._records[rel]]

    def group_records_of(self, run_id: str):
        """The group records of run ``run_id`` (an iterable, decoded on demand from the
        verified bytes)."""
        rel = f"runs/{run_id}/groups.jsonl.gz"
        if self.manifest["files"].get(rel, {}).get("record_type") != "group_record":
            raise KeyError(f"run_id {run_id!r}: no group records in the export; runs: "
                           f"{sorted(self.runs.run_id)}")
        return self._records[rel]


def _frame(cols: dict[str, list], columns: list[str]) -> pd.DataFrame:
    """A DataFrame from column lists (no per-row dicts: a tenth of the time and memory of
    building one dict per row for the 100k+ attempts)."""
    if not cols[columns[0]]:
        return pd.DataFrame([], columns=columns)  # object columns, as from no rows
    # one column at a time, each list dropped once converted: the lists and the arrays
    # of a 500k-row table are never all alive together
    df = pd.DataFrame({columns[0]: pd.Series(cols.pop(columns[0]))})
    for c in columns[1:]:
        df[c] = pd.Series(cols.pop(c))
    return df


def _columns(names: str) -> dict[str, list]:
    return {n: [] for n in names.split()}


def load(root: str | os.PathLike = "frozen_exports") -> FrozenExport:
    """Verify the export at ``root`` and return its tables.

    >>> export = load("frozen_exports")  # doctest: +SKIP
    >>> export.task_records.groupby("run_id").completed.mean()  # doctest: +SKIP
    """
    groups = _GroupColumns()
    # The group records (nine tenths of the export) go into the columns as each is
    # verified and are not kept: ``raw``/``records_of`` decode them again on demand.
    report, manifest, records = verify_records(root, stream={"group_record": groups.add})
    # The tables are built from the decoded records without the cyclic collector: it
    # would scan the verified objects again at every generation-2 collection, and
    # nothing built here forms a cycle.
    was = gc.isenabled()
    gc.disable()
    try:
        frames = _build(manifest, records, groups)
    finally:
        # promote what was built to the oldest generation without scanning it (as
        # verification does): re-enabling would otherwise start a full collection
        gc.freeze()
        gc.unfreeze()
        if was:
            gc.enable()
    return FrozenExport(root=str(root), manifest=manifest, report=report, _records=records,
                        **frames)


class _GroupColumns:
    """The ``group_records`` and ``attempts`` columns, filled one verified group record at
    a time. Repeated strings (IDs, statuses, action types) are stored once: the decoder
    makes a new string for every occurrence, and the attempts table holds a hundred
    thousand rows of them."""

    GROUP = ("run_id episode_id group_id status n_attempts n_accepted n_repair_attempts "
             "attempted_types prompt_tokens completion_tokens query_attempts query_responses "
             "cross_group_hits repeated_region_queries anchor_delta_conflicts").split()
    ATTEMPT = "run_id episode_id group_id index source action_type status n_failed_checks".split()

    def __init__(self):
        self.g = {k: [] for k in self.GROUP}
        self.a = {k: [] for k in self.ATTEMPT}

    def add(self, g: dict) -> None:
        g_cols, a_cols = self.g, self.a
        (a_run, a_ep, a_group, a_index, a_source, a_type, a_status,
         a_failed) = a_cols.values()
        run_id, eid, gid = intern(g["run_id"]), intern(g["episode_id"]), intern(g["group_id"])
        atts = g["attempts"]
        n_acc = n_rep = 0
        types = set()
        for a in atts:
            status, source, action = intern(a["status"]), intern(a["source"]), a["action"]
            n_acc += status == "accepted"
            n_rep += source == "repair"
            a_run.append(run_id)
            a_ep.append(eid)
            a_group.append(gid)
            a_index.append(a["index"])
            a_source.append(source)
            a_status.append(status)
            a_failed.append(len(a["failed_checks"]))
            if action is not None:
                t = intern(action["type"])
                types.add(t)
                a_type.append(t)
            else:
                a_type.append(None)
        g_cols["run_id"].append(run_id)
        g_cols["episode_id"].append(eid)
        g_cols["group_id"].append(gid)
        g_cols["status"].append(intern(g["status"]))
        g_cols["n_attempts"].append(len(atts))
        g_cols["n_accepted"].append(n_acc)
        g_cols["n_repair_attempts"].append(n_rep)
        g_cols["attempted_types"].append(sorted(types))
        g_cols["prompt_tokens"].append(g["prompt_tokens"])
        g_cols["completion_tokens"].append(g["completion_tokens"])
        g_cols["query_attempts"].append(len(g["queries"]))
        g_cols["query_responses"].append(sum(q["responded"] for q in g["queries"]))
        belief = g["belief"]
        for k in ("cross_group_hits", "repeated_region_queries", "anchor_delta_conflicts"):
            g_cols[k].append(belief[k])


def _build(manifest: dict, records: dict, groups: _GroupColumns) -> dict[str, pd.DataFrame]:
    def of(rtype):
        return [r for rel, e in sorted(manifest["files"].items())
                if e["record_type"] == rtype for r in records[rel]]

    ep_cols = _columns("episode_id scene_id videos n_groups")
    g_cols = _columns("episode_id group_id group_index n_groups_in_episode instruction "
                      "n_operations reference_action_types")
    group_pos = {}
    scene_of = {}
    for ep in of("episode"):
        n = len(ep["groups"])
        eid = ep["episode_id"]
        scene_of[eid] = ep["scene_id"]
        ep_cols["episode_id"].append(eid)
        ep_cols["scene_id"].append(ep["scene_id"])
        ep_cols["videos"].append(list(ep["videos"]))
        ep_cols["n_groups"].append(n)
        for g in ep["groups"]:
            group_pos[g["group_id"]] = (g["index"], n)
            g_cols["episode_id"].append(eid)
            g_cols["group_id"].append(g["group_id"])
            g_cols["group_index"].append(g["index"])
            g_cols["n_groups_in_episode"].append(n)
            g_cols["instruction"].append(g["instruction"])
            g_cols["n_operations"].append(len(g["operations"]))
            g_cols["reference_action_types"].append(sorted({op["type"]
                                                            for op in g["operations"]}))

    t_cols = _columns("task_id episode_id scene_id tier title group_ids n_conditions "
                      "reference_action_types")
    c_cols = _columns("task_id condition_id kind")
    task_episode = {}
    for t in of("task"):
        tid, conds = t["task_id"], t["contract"]["conditions"]
        task_episode[tid] = t["episode_id"]
        t_cols["task_id"].append(tid)
        t_cols["episode_id"].append(t["episode_id"])
        t_cols["scene_id"].append(scene_of.get(t["episode_id"]))
        t_cols["tier"].append(t["tier"])
        t_cols["title"].append(t["title"])
        t_cols["group_ids"].append(list(t["group_ids"]))
        t_cols["n_conditions"].append(len(conds))
        t_cols["reference_action_types"].append(sorted(set(t["reference_action_types"])))
        for c in conds:
            c_cols["task_id"].append(tid)
            c_cols["condition_id"].append(c["id"])
            c_cols["kind"].append(c["kind"])
    s_cols = _columns("suite task_id episode_id")
    for s in of("suite"):
        for tid in s["task_ids"]:
            s_cols["suite"].append(s["suite"])
            s_cols["task_id"].append(tid)
            s_cols["episode_id"].append(task_episode[tid])

    run_keys = ("run_id", "planner", "memory", "suite", "seed", "attempt_limit")
    r_cols = {k: [] for k in (*run_keys, "run_name")}
    for r in of("run"):
        for k in run_keys:
            r_cols[k].append(r[k])
        # the run's name (docs/FORMAT.md): run_name where recorded, else the planner's
        r_cols["run_name"].append(r.get("run_name", r["planner"]))

    # position of each group in its episode (the verified records name only the group)
    gr_cols = dict(groups.g)
    pos = [group_pos[gid] for gid in gr_cols["group_id"]]
    gr_cols["group_index"] = [p[0] for p in pos]
    gr_cols["n_groups_in_episode"] = [p[1] for p in pos]
    a_cols = groups.a

    tr_cols = _columns("run_id task_id episode_id completed n_conditions n_true")
    cr_cols = _columns("run_id task_id condition_id truth")
    for t in of("task_record"):
        conds = t["conditions"]
        tr_cols["run_id"].append(t["run_id"])
        tr_cols["task_id"].append(t["task_id"])
        tr_cols["episode_id"].append(t["episode_id"])
        tr_cols["completed"].append(t["completed"])
        tr_cols["n_conditions"].append(len(conds))
        tr_cols["n_true"].append(sum(c["truth"] == "TRUE" for c in conds))
        for c in conds:
            cr_cols["run_id"].append(t["run_id"])
            cr_cols["task_id"].append(t["task_id"])
            cr_cols["condition_id"].append(c["id"])
            cr_cols["truth"].append(c["truth"])

    return dict(
        episodes=_frame(ep_cols, ["episode_id", "scene_id", "videos", "n_groups"]),
        groups=_frame(g_cols, ["episode_id", "group_id", "group_index", "n_groups_in_episode",
                               "instruction", "n_operations", "reference_action_types"]),
        tasks=_frame(t_cols, ["task_id", "episode_id", "scene_id", "tier", "title", "group_ids",
                              "n_conditions", "reference_action_types"]),
        suites=_frame(s_cols, ["suite", "task_id", "episode_id"]),
        conditions=_frame(c_cols, ["task_id", "condition_id", "kind"]),
        runs=_frame(r_cols, ["run_id", "planner", "memory", "suite", "seed", "attempt_limit",
                             "run_name"]),
        group_records=_frame(gr_cols, [
            "run_id", "episode_id", "group_id", "group_index", "n_groups_in_episode", "status",
            "n_attempts", "n_accepted", "n_repair_attempts", "attempted_types",
            "prompt_tokens", "completion_tokens", "query_attempts", "query_responses",
            "cross_group_hits", "repeated_region_queries", "anchor_delta_conflicts"]),
        attempts=_frame(a_cols, ["run_id", "episode_id", "group_id", "index", "source",
                                 "action_type", "status", "n_failed_checks"]),
        task_records=_frame(tr_cols, ["run_id", "task_id", "episode_id", "completed",
                                      "n_conditions", "n_true"]),
        condition_records=_frame(cr_cols, ["run_id", "task_id", "condition_id", "truth"]),
    )

"""Table 1: the example task (paper Table 1; the Add Squash task)."""
from __future__ import annotations

import re

import pandas as pd

from .common import Skip
from .output import Table

__all__ = ["find_example_task", "example_task"]

SQUASH_ATOM = ["in", "squash", "glass"]


def find_example_task(export) -> dict:
    """The task titled "Add Squash" (the step's own words: "Add Squash- Add the amount of
    Squash to your glass"), else the first whose contract has ``["in", "squash", "glass"]``;
    raises :class:`Skip` when there is none."""
    tasks = export.records_of("task")
    for t in tasks:
        if re.match(r"add squash\b", t["title"].strip().lower()):
            return t
    for t in tasks:
        if any(c.get("atom") == SQUASH_ATOM for c in t["contract"]["conditions"]):
            return t
    raise Skip('no task titled "Add Squash" and none with the condition in(squash, glass)')


def _op(op) -> str:
    return f"{op['type']}({', '.join(op['args'])})"


def _cond(c) -> str:
    if c["kind"] == "atom":
        return f"{c['id']}: {c['atom'][0]}({', '.join(c['atom'][1:])})"
    ev = c["event"]
    args = ", ".join("*" if a is None else a for a in ev.get("args", []))
    return f"{c['id']}: accepted {ev['type']}({args})"


def example_task(export, results=None) -> Table:
    """Groups, normalised operations, the frozen condition, and the outcome in every run
    that covers the task (memory-suite runs first: persistent vs reset belief)."""
    task = find_example_task(export)
    episode = next(e for e in export.records_of("episode")
                   if e["episode_id"] == task["episode_id"])
    groups = {g["group_id"]: g for g in episode["groups"]}
    rows = [("task", f"{task['title']} ({task['task_id']})"),
            ("episode", f"{episode['episode_id']} (scene {episode['scene_id']})")]
    for gid in task["group_ids"]:
        g = groups[gid]
        steps = ", ".join(g["source"].get("steps", []))
        rows.append((f"group {g['index']}", f"{g['instruction']} [source steps: {steps}]"))
        rows.append((f"group {g['index']} operations",
                     "; ".join(_op(o) for o in g["operations"]) or "(none)"))
    rows.append((f"frozen condition ({task['tier']})",
                 "; ".join(_cond(c) for c in task["contract"]["conditions"])))
    runs = export.runs
    order = {"memory": 0}
    runs = runs.assign(_o=runs.suite.map(lambda s: order.get(s, 1))).sort_values(
        ["_o", "planner", "memory"])
    # only the task's rows, so the per-run loop below stays linear in the runs
    gids = set(task["group_ids"])
    gr = export.group_records[export.group_records.group_id.isin(gids)].set_index(
        ["run_id", "group_id"])
    att = export.attempts[export.attempts.group_id.isin(gids)]
    cr = export.condition_records[export.condition_records.task_id == task["task_id"]]
    tr = export.task_records.set_index(["run_id", "task_id"])
    n_out = 0
    for run in runs.itertuples():
        if (run.run_id, task["task_id"]) not in tr.index:
            continue
        n_out += 1
        statuses = [gr.loc[(run.run_id, gid), "status"] for gid in task["group_ids"]]
        a = att[(att.run_id == run.run_id) & att.group_id.isin(task["group_ids"])]
        acc = a[a.status == "accepted"]
        truths = cr[(cr.run_id == run.run_id) & (cr.task_id == task["task_id"])]
        truth = ", ".join(f"{r.condition_id}={r.truth}" for r in truths.itertuples())
        n_done = sum(s == "completed" for s in statuses)
        acc_types = sorted(set(acc.action_type.dropna()))
        rows.append((f"outcome: {run.planner}, {run.memory} belief ({run.suite} suite)",
                     f"{n_done}/{len(statuses)} groups completed; {len(a)} attempts, "
                     f"{len(acc)} accepted ({', '.join(acc_types) or 'none'}); {truth}"))
    if n_out == 0:
        rows.append(("outcome", "no run in the export covers this task"))
    data = pd.DataFrame(rows, columns=["field", "value"])
    return Table(
        name="table01_example_task", title="Example task: groups, operations, frozen "
        "condition and outcomes", paper_ref="paper Table 1 and A.4", data=data,
        notes="Read from the cohort and run records; no statistic is estimated. A "
              "condition is TRUE, FALSE or UNKNOWN (missing evidence, counted as not met); "
              "completed groups do not by themselves prove the condition. Outcome rows: "
              "every run of the export whose suite holds this task (an added planner "
              "appears once it has such a run).")

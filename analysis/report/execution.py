"""Table 12 (step-level execution, paper Table 17) and the Table 13 trace excerpts
(paper Table 19, E.4 and E.5), all read directly from the group records."""
from __future__ import annotations

import pandas as pd

from .common import Skip
from .example import find_example_task
from .output import Table

__all__ = ["step_level_execution", "trace_excerpt", "repair_excerpt",
           "reobservation_excerpt"]

MAX_ROWS = 12


def step_level_execution(export, results) -> Table:
    """Pooled attempts per planner by source (planner / repair) and status."""
    if results is None or results.planner_tasks.empty:
        raise Skip(results.skipped.get("planner", "no planner-suite runs") if results
                   else "no statistics results")
    runs = results.planner_tasks.drop_duplicates("run_id").set_index("run_id").label
    a = export.attempts[export.attempts.run_id.isin(runs.index)]
    g = export.group_records[export.group_records.run_id.isin(runs.index)]
    rows = []
    for run_id, label in sorted(runs.items(), key=lambda kv: kv[1]):
        x = a[a.run_id == run_id]
        gg = g[g.run_id == run_id]
        row = {"planner": label, "groups": len(gg),
               "groups completed": int((gg.status == "completed").sum()),
               "attempts": len(x)}
        for src in ("planner", "repair"):
            for st in ("accepted", "invalid"):
                row[f"{src} {st}"] = int(((x.source == src) & (x.status == st)).sum())
        row["accepted (pooled share)"] = (float((x.status == "accepted").mean())
                                          if len(x) else float("nan"))
        row["repair share of attempts"] = (float((x.source == "repair").mean())
                                           if len(x) else float("nan"))
        rows.append(row)
    return Table(
        name="table12_step_level_execution", title="Step-level execution per planner",
        paper_ref="paper Table 17 and E.1", data=pd.DataFrame(rows), decimals=3,
        notes=("Pooled primitive-attempt counts over every group of the planner suite, "
               "including executor repairs. They describe execution volume and composition; "
               "the pooled accepted share is not the task-macro action validity of Table 4 "
               "(which averages per task). Counts, not estimates: no interval."))


class _Groups:
    """Raw group records indexed by run and group, in episode order."""

    def __init__(self, export):
        self.by_key = {}
        for g in export.records_of("group_record"):
            self.by_key[(g["run_id"], g["group_id"])] = g
        gr = export.group_records.sort_values(["run_id", "episode_id", "group_index"])
        self.order = list(zip(gr.run_id, gr.group_id))
        self.groups = {g["group_id"]: g for e in export.records_of("episode")
                       for g in e["groups"]}
        self.anchors = {e["episode_id"]: e["anchors"] for e in export.records_of("episode")}


def _run_order(export) -> list[str]:
    """Memory-suite persistent runs first (the paper's traces), then the rest by name."""
    r = export.runs.copy()
    r["_o"] = [(0 if s == "memory" else 1, 0 if m == "persistent" else 1)
               for s, m in zip(r.suite, r.memory)]
    return list(r.sort_values(["_o", "run_id"]).run_id)


def _action(a) -> str:
    if a["action"] is None:
        return f"(unparsed: {a['raw']!r:.40})"
    return f"{a['action']['type']}({', '.join(a['action']['args'])})"


def _attempt_row(run_id, g, a, instruction):
    return {"run": run_id, "group": g["group_id"], "instruction": instruction,
            "attempt": a["index"], "source": a["source"], "action": _action(a),
            "status": a["status"], "failed checks": ", ".join(a["failed_checks"])}


def trace_excerpt(export, results=None) -> Table:
    """The attempts of the example task's groups in one run (else the first group with
    at least two attempts), at most 12 rows."""
    idx = _Groups(export)
    runs = _run_order(export)
    chosen, why = None, ""
    try:
        task = find_example_task(export)
        for run_id in runs:
            if all((run_id, gid) in idx.by_key for gid in task["group_ids"]):
                chosen = (run_id, task["group_ids"])
                why = f"the groups of task {task['task_id']} ({task['title']})"
                break
    except Skip:
        pass
    if chosen is None:
        for run_id in runs:
            for r, gid in idx.order:
                if r == run_id and len(idx.by_key[(r, gid)]["attempts"]) >= 2:
                    chosen, why = (run_id, [gid]), "the first group with two or more attempts"
                    break
            if chosen:
                break
    if chosen is None:
        raise Skip("no run holds a group with attempts")
    run_id, gids = chosen
    rows, total = [], 0
    for gid in gids:
        g = idx.by_key[(run_id, gid)]
        total += len(g["attempts"])
        first = True
        for a in g["attempts"]:
            if len(rows) < MAX_ROWS:
                rows.append(_attempt_row(run_id, g, a, idx.groups[gid]["instruction"]
                                         if first else ""))
                first = False
        if not g["attempts"] and len(rows) < MAX_ROWS:
            rows.append({"run": run_id, "group": gid, "instruction":
                         idx.groups[gid]["instruction"], "attempt": pd.NA, "source": "",
                         "action": f"(no attempt; group status {g['status']})", "status": "",
                         "failed checks": ""})
    status = ", ".join(f"{gid.rsplit('/', 1)[-1]}: {idx.by_key[(run_id, gid)]['status']}"
                       for gid in gids)
    return Table(
        name="table13_trace_excerpt", title="Trace excerpt", paper_ref="paper Table 19 and E.3",
        data=pd.DataFrame(rows),
        notes=(f"Attempts of {why} in run {run_id}, in order ({min(total, MAX_ROWS)} of "
               f"{total} attempts shown). Group statuses: {status}. A completed group and "
               "accepted actions do not establish that the task's conditions hold."))


def repair_excerpt(export, results=None) -> Table:
    """Attempts around the first executor repair: planner actions vs repair actions."""
    idx = _Groups(export)
    fallback = None
    for run_id in _run_order(export):
        for r, gid in idx.order:
            if r != run_id:
                continue
            g = idx.by_key[(r, gid)]
            atts = g["attempts"]
            # prefer a repair that follows a rejected planner action (paper E.4)
            pos = [i for i, a in enumerate(atts) if a["source"] == "repair"
                   and any(b["source"] == "planner" and b["status"] == "invalid"
                           for b in atts[:i])]
            if not pos:
                fallback = fallback or next(((run_id, gid, i) for i, a in enumerate(atts)
                                             if a["source"] == "repair"), None)
                continue
            return _repair_table(idx, run_id, gid, pos[0])
    if fallback:
        return _repair_table(idx, *fallback)
    raise Skip("no group record holds a repair attempt")


def _repair_table(idx, run_id, gid, first):
    g = idx.by_key[(run_id, gid)]
    lo, hi = max(0, first - 4), min(len(g["attempts"]), first + 5)
    rows = [_attempt_row(run_id, g, a, "") for a in g["attempts"][lo:hi]]
    rows[0]["instruction"] = idx.groups[gid]["instruction"]
    return Table(
        name="table13_repair_excerpt", title="Executor repair versus planner actions",
        paper_ref="paper E.4", data=pd.DataFrame(rows),
        notes=(f"Attempts {lo}-{hi - 1} of group {gid} in run {run_id} (group status "
               f"{g['status']}), around its first repair attempt (attempt "
               f"{g['attempts'][first]['index']}). Repairs are inserted and validated by the "
               "runtime (source repair); planner-tagged actions come from the planner. "
               "Acceptance is not goal attainment."))


def _regions(action) -> set:
    return set(action["args"]) if action else set()


def reobservation_excerpt(export, results=None) -> Table:
    """A region queried, changed by an accepted action, and queried again in a later group
    of the same episode: the recorded anchor stays, the delta carries the change."""
    idx = _Groups(export)
    for run_id in _run_order(export):
        keys = [gid for r, gid in idx.order if r == run_id]
        by_episode: dict = {}
        for gid in keys:
            by_episode.setdefault(idx.by_key[(run_id, gid)]["episode_id"], []).append(gid)
        for ep, gids in by_episode.items():
            anchors = idx.anchors.get(ep, {})
            last_query: dict = {}   # region -> position of the group that queried it
            changes: dict = {}      # region -> [(position, attempt)] since that query
            for pos, gid in enumerate(gids):
                g = idx.by_key[(run_id, gid)]
                for q in g["queries"]:
                    r = q["region"]
                    if r in last_query and changes.get(r) and r in anchors:
                        return _reobs_table(run_id, ep, gids, r, last_query[r], changes[r],
                                            pos, q, anchors[r], idx)
                for q in g["queries"]:
                    last_query[q["region"]] = pos
                    changes[q["region"]] = []
                for a in g["attempts"]:
                    if a["status"] == "accepted":
                        for r in _regions(a["action"]) & set(last_query):
                            changes[r].append((pos, a))
    raise Skip("no region is queried, changed by an accepted action and queried again "
               "later in the same episode")


def _reobs_table(run_id, ep, gids, region, first, changes, again, query, anchor, idx):
    rows = [{"step": "recorded anchor", "group": "", "entry":
             f"{region}: {', '.join(anchor) or '(empty)'} (source-time frame)"},
            {"step": "first query", "group": gids[first], "entry": f"query({region})"}]
    for pos, a in changes[:6]:
        rows.append({"step": "accepted action (state change)", "group": gids[pos],
                     "entry": f"{_action(a)} [{a['source']}]"})
    rows.append({"step": "query again", "group": gids[again],
                 "entry": f"query({region}); responded: {'yes' if query['responded'] else 'no'}"})
    return Table(
        name="table13_reobservation_excerpt", title="Re-observing an anchor after a state "
        "change", paper_ref="paper E.5", data=pd.DataFrame(rows),
        notes=(f"Run {run_id}, episode {ep}. The second observation of {region} reuses the "
               "same recorded anchor and applies the symbolic delta since the episode's "
               "initial world: items moved away by the accepted actions are explicit "
               "removals (they override the frame), items moved in are added, and a "
               "destination never observed stays unknown. Observations themselves are not "
               "stored in the records; `python -m analysis.reexecute` replays them."))

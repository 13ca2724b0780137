"""Table 12 (step-level execution, paper Table 17) and the Table 13 trace excerpts
(paper Table 19, E.4 and E.5), all read directly from the group records."""
from __future__ import annotations

import pandas as pd

from .common import METHODS_POINTER, Skip
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
    # counts from one grouping of the columns: no copy of the (large) attempts table, and
    # linear in the number of runs
    att, gr = export.attempts, export.group_records
    by_kind = att.groupby(["run_id", "source", "status"]).size().to_dict()
    n_att = att.groupby("run_id").size().to_dict()
    n_groups = gr.groupby("run_id").size().to_dict()
    n_completed = gr[gr.status == "completed"].groupby("run_id").size().to_dict()
    rows = []
    for run_id, label in sorted(runs.items(), key=lambda kv: kv[1]):
        total = int(n_att.get(run_id, 0))
        row = {"planner": label, "groups": int(n_groups.get(run_id, 0)),
               "groups completed": int(n_completed.get(run_id, 0)), "attempts": total}
        for src in ("planner", "repair"):
            for st in ("accepted", "invalid"):
                row[f"{src} {st}"] = int(by_kind.get((run_id, src, st), 0))
        accepted = sum(v for (r, _src, st), v in by_kind.items()
                       if r == run_id and st == "accepted")
        repair = sum(v for (r, src, _st), v in by_kind.items() if r == run_id and src == "repair")
        row["accepted (pooled share)"] = accepted / total if total else float("nan")
        row["repair share of attempts"] = repair / total if total else float("nan")
        rows.append(row)
    data = pd.DataFrame(rows)
    disp = data.copy()
    for c, new in (("accepted (pooled share)", "accepted attempts (pooled, %)"),
                   ("repair share of attempts", "repair attempts (%)")):
        disp[c] = [("" if v != v else f"{100 * v:.1f}") for v in data[c]]
        disp = disp.rename(columns={c: new})
    return Table(
        name="table12_step_level_execution", title="Step-level execution per planner",
        paper_ref="paper Table 17 and E.1", data=data, display=disp, decimals=3,
        notes=("Pooled primitive-attempt counts over every group of the planner suite, "
               "including executor repairs. They describe execution volume and composition; "
               "the pooled accepted share is not the task-macro action validity of Table 4 "
               "(which averages per task). Counts, not estimates: no interval. "
               + METHODS_POINTER))


#: What the excerpts read of a group record (the planner calls are most of the rest).
_FIELDS = ("group_id", "episode_id", "status", "attempts", "queries")


class _Groups:
    """Group records indexed by run and group, in episode order (built once per export:
    the three excerpts share it). The records of one episode of one run at a time are
    decoded on demand (:meth:`record`); the excerpts walk the runs one after the other,
    and a run's episodes in order."""

    _last: tuple = (None, None)  # (export, index) of the latest export

    def __new__(cls, export):
        if cls._last[0] is export:
            return cls._last[1]
        self = super().__new__(cls)
        self._build(export)
        cls._last = (export, self)
        return self

    def _build(self, export):
        self.export = export
        gr = export.group_records.sort_values(["run_id", "episode_id", "group_index"])
        self.order = list(zip(gr.run_id, gr.group_id))
        self.keys = set(self.order)
        self.n_attempts = dict(zip(self.order, gr.n_attempts))
        # from the columns, so that the excerpts decode only the runs that can qualify
        self.n_repairs = dict(zip(self.order, gr.n_repair_attempts))
        responded = gr.groupby(["run_id", "episode_id"]).query_responses.sum()
        self.requery_runs = set(responded[responded >= 2].index.get_level_values("run_id"))
        self.by_run: dict = {}  # run -> its group IDs in episode order
        for r, gid in self.order:
            self.by_run.setdefault(r, []).append(gid)
        self.episode_of = dict(zip(self.order, gr.episode_id))
        self.groups = {g["group_id"]: g for e in export.records_of("episode")
                       for g in e["groups"]}
        self.anchors = {e["episode_id"]: e["anchors"] for e in export.records_of("episode")}
        self._run, self._grouped, self._episode, self._records = None, None, None, {}

    def record(self, run_id: str, gid: str) -> dict:
        """The group record of ``gid`` in run ``run_id``."""
        if run_id != self._run:
            # drop the previous run's text and records before decoding the next
            self._grouped, self._episode, self._records = None, None, {}
            self._grouped = self.export.group_records_of(run_id).grouped("episode_id",
                                                                          _FIELDS)
            self._run = run_id
        episode = self.episode_of[(run_id, gid)]
        if episode != self._episode:
            # one episode's records decoded at a time (a run's whole records: about
            # 50 MB for the committed export's largest, the command's peak memory)
            self._records = {}
            self._records = {g["group_id"]: g for g in self._grouped.decode(episode)}
            self._episode = episode
        return self._records[gid]


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
            if all((run_id, gid) in idx.keys for gid in task["group_ids"]):
                chosen = (run_id, task["group_ids"])
                why = f"the groups of task {task['task_id']} ({task['title']})"
                break
    except Skip:
        pass
    if chosen is None:
        for run_id in runs:
            for gid in idx.by_run.get(run_id, []):
                if idx.n_attempts[(run_id, gid)] >= 2:
                    chosen, why = (run_id, [gid]), "the first group with two or more attempts"
                    break
            if chosen:
                break
    if chosen is None:
        raise Skip("no run holds a group with attempts")
    run_id, gids = chosen
    rows, total = [], 0
    for gid in gids:
        g = idx.record(run_id, gid)
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
    status = ", ".join(f"{gid.rsplit('/', 1)[-1]}: {idx.record(run_id, gid)['status']}"
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
        for gid in idx.by_run.get(run_id, []):
            if not idx.n_repairs[(run_id, gid)]:
                continue  # no repair attempt: neither a choice nor a fallback
            g = idx.record(run_id, gid)
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
    g = idx.record(run_id, gid)
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


def _timeline(g):
    """The group's queries and attempts in the order they happened: a query recorded
    ``after_attempts = k`` came after the group's first k attempts."""
    out = []
    queries = sorted(enumerate(g["queries"]), key=lambda jq: (jq[1]["after_attempts"], jq[0]))
    k = 0
    for a in g["attempts"]:
        while k < len(queries) and queries[k][1]["after_attempts"] <= a["index"]:
            out.append(("query", queries[k][1]))
            k += 1
        out.append(("attempt", a))
    out.extend(("query", q) for _, q in queries[k:])
    return out


def _reobservations(idx, run_id):
    """Every responded query of a region whose reported items differ from the previous
    responded query of that region in the same episode (so accepted actions changed the
    region in between): ``dict`` per pair, in episode and time order."""
    if run_id not in idx.requery_runs:
        return []  # no episode of the run has two responded queries
    by_episode: dict = {}
    for gid in idx.by_run.get(run_id, []):
        by_episode.setdefault(idx.record(run_id, gid)["episode_id"], []).append(gid)
    found = []
    for ep, gids in by_episode.items():
        last: dict = {}      # region -> (group, query, accepted attempts before, reports before)
        accepted: list = []  # (group, attempt) in episode order
        reported: list = []  # (item, region, group) for every item a query reported added
        for gid in gids:
            for kind, x in _timeline(idx.record(run_id, gid)):
                if kind == "attempt":
                    if x["status"] == "accepted":
                        accepted.append((gid, x))
                    continue
                if not x["responded"]:
                    continue
                r = x["region"]
                prev = last.get(r)
                if prev is not None and any(prev[1][f] != x[f]
                                            for f in ("visible", "added", "removed")):
                    found.append({"episode": ep, "region": r, "first": prev[1],
                                  "first_group": prev[0], "again": x, "again_group": gid,
                                  "between": accepted[prev[2]:],
                                  # items other queries reported added since the first one
                                  "reported_added": reported[prev[3]:]})
                reported.extend((i, r, gid) for i in x["added"])
                last[r] = (gid, x, len(accepted), len(reported))  # after its own report
    return found


def _preference(c):
    """Most informative for paper E.5 first: an anchor item newly removed (the delta
    overrides the frame), then a non-empty anchor, then a change of what is visible; then
    the fewest accepted actions between the two queries (the whole gap fits the table)."""
    new_removed = set(c["again"]["removed"]) - set(c["first"]["removed"])
    return (not (new_removed & set(c["again"]["anchor"])), not c["again"]["anchor"],
            c["first"]["visible"] == c["again"]["visible"], len(c["between"]))


def _items(xs) -> str:
    return ", ".join(xs) if xs else "(none)"


def reobservation_excerpt(export, results=None) -> Table:
    """A region queried, changed by accepted actions, and queried again in the same
    episode, read from the recorded query contents (anchor, visible, added, removed)."""
    idx = _Groups(export)
    best = None
    for rank, run_id in enumerate(_run_order(export)):
        for pos, c in enumerate(_reobservations(idx, run_id)):
            key = (_preference(c), rank, pos)
            if best is None or key < best[0]:
                best = (key, run_id, c)
    if best is None:
        raise Skip("no region is queried, changed by accepted actions and queried again "
                   "in the same episode")
    return _reobs_table(idx, best[1], best[2])


MAX_CHANGES = 6


def _reobs_table(idx, run_id, c):
    region, q0, q1 = c["region"], c["first"], c["again"]
    anchor = set(q1["anchor"])
    changed = (set(q0["visible"]) ^ set(q1["visible"])) | (set(q0["removed"]) ^ set(q1["removed"]))

    def query_row(step, gid, q):
        removed = sorted(anchor & set(q["removed"]))
        return {"step": step, "group": gid, "when": f"after {q['after_attempts']} attempts",
                "entry": f"query({region})", "anchor": _items(q["anchor"]),
                "visible": _items(q["visible"]), "added": _items(q["added"]),
                "removed from anchor": _items(removed),
                "other removals": str(len(set(q["removed"]) - anchor))}

    # the accepted actions in between that name the region or an item whose report changed
    relevant = [(gid, a) for gid, a in c["between"]
                if a["action"] and (region in a["action"]["args"]
                                    or changed & set(a["action"]["args"]))]
    rows = [query_row("first query", c["first_group"], q0)]
    for gid, a in relevant[:MAX_CHANGES]:
        rows.append({"step": "accepted action", "group": gid, "when": f"attempt {a['index']}",
                     "entry": f"{_action(a)} [{a['source']}]", "anchor": "", "visible": "",
                     "added": "", "removed from anchor": "", "other removals": ""})
    rows.append(query_row("query again", c["again_group"], q1))
    # items the first query showed and the second does not: taken away from the region
    gone = sorted(set(q0["visible"]) - set(q1["visible"]))
    seen = {i for i, _r, _g in c["reported_added"]}
    unseen = [i for i in gone if i not in seen]
    frame = (f"The recorded anchor of {region} ({_items(q1['anchor'])}) is the same at both "
             "queries: the frame is kept and the delta since the episode's initial world is "
             "applied. " if q1["anchor"] else
             f"{region} has no recorded anchor (empty source frame), so this re-observation "
             "shows only the delta. No region with a non-empty anchor was queried again "
             "after a change in any run, so these records hold no re-observation in which "
             "an explicit removal overrides a recorded frame. ")
    if gone:
        dest = (f"No longer visible at the second query: {_items(gone)}; the observation "
                "does not say where " + ("it" if len(gone) == 1 else "they") + " went"
                + (f", and no visual query between the two reported {_items(unseen)} at any "
                   "region: no recorded observation shows its destination. The agent's "
                   "own accepted actions and the view of its current region at each planner "
                   "call (not recorded) can still inform its belief. " if unseen else ". "))
    else:
        dest = "No item visible at the first query is missing from the second. "
    shown = (f"{len(relevant)} of the {len(c['between'])} accepted attempts between the "
             "queries name the region or an item whose report changed"
             + (f" (first {MAX_CHANGES} shown)" if len(relevant) > MAX_CHANGES else "")
             + ". ")
    return Table(
        name="table13_reobservation_excerpt", title="Re-observing an anchor after a state "
        "change", paper_ref="paper E.5", data=pd.DataFrame(rows),
        notes=(f"Run {run_id}, episode {c['episode']}: query contents as recorded "
               "(visible = (anchor - removed) | added; 'removed from anchor' are anchor "
               "items the delta removes, 'other removals' counts removed items that were "
               "never in the frame). 'when' places a query among its group's attempts. " + frame
               + dest + shown + "Chosen among all re-observations after a change: an "
               "anchor item newly removed first, then a non-empty anchor, then a change of "
               "what is visible, then the fewest accepted actions in between. Replay "
               "(`python -m analysis.reexecute`) recomputes every recorded query."))

"""Vessel bindings of step key actions against their step segments, from a compiled cohort.

    python bench/vessel_bindings.py EXPORT_ROOT [--all] [--source=HDEPIC] [--quiet]

For every event-tier task (``cohort/tasks.jsonl``) and, with ``--all``, every compiled step
key action operation of every episode (``cohort/episodes.jsonl.gz``), prints the vessel
argument's track span (its own video's time, from the provenance row) against the step
segment (the task's ``refs`` or the group's ``source``), whether the track overlaps the
segment, and the provenance ``how`` text. With ``--source`` (the HD-EPIC folder) the
targets of compiled adds are listed too, against the add's own span in
``complete_recipes.json`` (the add of that ingredient in the track's video that starts
inside the group's step segment, or within 30 s before it). Ends with the counts:
bindings, bindings whose vessel track does not overlap the segment (or add), event tasks,
planner event tasks. ``--quiet`` prints only the bindings that do not overlap.

A vessel argument is one whose ``how`` comes from the target rule (it names the step
text's vessel noun, or says the vessel was the only one handled or put down); the track
``id`` is ``<video>/<association>/<track>``, so the comparison is made only when the track
and the segment are in the same video.
"""
from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

STEP_ACTIONS = {"stir", "whisk", "grate", "break_into", "pour", "add_ingredient", "put_in_container",
                "fill_from_tap", "empty_into"}
VESSEL_HOW = ("step text names", "the only vessel", "target of an earlier add", "vessel held during",
              "text names no vessel", "put down")


def _vessel_args(args):
    out = []
    for i, a in enumerate(args):
        r = a.get("refs", {})
        how = r.get("how") or ""
        if r.get("file") == "assoc_info.json" and any(h in how for h in VESSEL_HOW):
            out.append((i, r))
    return out


def _row(kind, ident, seg_video, s0, s1, r):
    video = r["id"].split("/")[0]
    t0, t1 = r.get("time"), r.get("end")
    same = video == seg_video
    over = same and t0 is not None and t1 is not None and t0 < s1 and s0 < t1
    gap = round(s0 - t1, 2) if same and t1 is not None and t1 <= s0 else None
    how = r.get("how") or ""
    return {"kind": kind, "id": ident, "segment": (seg_video, s0, s1), "track": (video, t0, t1),
            "name": r.get("name"), "overlaps": bool(over), "how": how, "gap": gap,
            # a non-overlapping binding whose how says it was put down before, within 60 s
            "put_down": (not over) and gap is not None and gap <= 60.0 and "put down in the 60 s before" in how}


def event_task_bindings(cohort: Path):
    rows = []
    for t in map(json.loads, (cohort / "tasks.jsonl").read_text().splitlines()):
        if t["tier"] != "event":
            continue
        ref = t["provenance"]["refs"]
        for c in t["contract"]["conditions"]:
            if c["kind"] != "event":
                continue
            p = t["provenance"]["conditions"][c["id"]]["refs"]
            for i, r in _vessel_args(p["args"]):
                rows.append(_row("task", f"{t['task_id']} {c['event']['type']}({', '.join(map(str, c['event']['args']))})"
                                 f" arg {i}", ref["video"], ref["start"], ref["end"], r))
    return rows


def operation_bindings(cohort: Path, adds: dict | None = None):
    rows = []
    with gzip.open(cohort / "episodes.jsonl.gz", "rt") as f:
        for line in f:
            e = json.loads(line)
            for g in e["groups"]:
                src = g["source"]
                for op in g["operations"]:
                    refs = op["provenance"]["refs"]
                    ev = refs.get("event") or ""
                    if op["type"] not in STEP_ACTIONS or not refs.get("step"):
                        continue
                    kind = ev.split(" ")[0]
                    if kind in (op["type"], "step"):     # "<action> <step>", or "step <step> at <t>s"
                        span = (src["video"], src["start"], src["end"])
                        k = "op"
                    elif kind == "add" and adds is not None:   # "add <ingredient> (<name>)"
                        span, k = None, "add"
                    else:
                        continue
                    for i, r in _vessel_args(refs["args"]):
                        if k == "add":
                            video = r["id"].split("/")[0]
                            hits = [(v, a, b) for v, a, b in adds.get((refs["ingredient"], video), [])
                                    if src["start"] - 30.0 <= a <= src["end"]]
                            if len(hits) != 1:
                                continue
                            span = hits[0]
                        rows.append(_row(k, f"{g['group_id']} {op['type']}({', '.join(map(str, op['args']))}) "
                                         f"arg {i}", *span, r))
    return rows


def add_spans(source: Path) -> dict:
    """``{(ingredient, video): [(video, start, end), ...]}`` of every add event."""
    rec = json.loads((Path(source) / "high-level" / "complete_recipes.json").read_text())
    out: dict = {}
    for r in rec.values():
        for cap in r["captures"]:
            for iid, ing in cap["ingredients"].items():
                for a in ing.get("add", []):
                    out.setdefault((iid, a["video"]), []).append((a["video"], a["start"], a["end"]))
    return out


def counts(cohort: Path) -> dict:
    tasks = [json.loads(x) for x in (cohort / "tasks.jsonl").read_text().splitlines()]
    suites = {s["suite"]: set(s["task_ids"]) for s in map(json.loads, (cohort / "suites.jsonl").read_text().splitlines())}
    ev = {t["task_id"] for t in tasks if t["tier"] == "event"}
    return {"tasks": len(tasks), "event tasks": len(ev), "planner event tasks": len(ev & suites["planner"]),
            "planner tasks": len(suites["planner"]), "memory tasks": len(suites["memory"])}


def main(argv):
    root = Path(argv[0])
    cohort = root / "cohort" if (root / "cohort").is_dir() else root
    rows = event_task_bindings(cohort)
    source = next((a.split("=", 1)[1] for a in argv if a.startswith("--source=")), None)
    if "--all" in argv:
        rows += operation_bindings(cohort, add_spans(source) if source else None)
    for r in rows:
        if "--quiet" in argv and r["overlaps"]:
            continue
        v, s0, s1 = r["segment"]
        tv, t0, t1 = r["track"]
        tag = "OVER" if r["overlaps"] else "PUT " if r["put_down"] else "NOT "
        print(f"{tag} {r['id']}\n     segment {v} {s0:.2f}-{s1:.2f}; "
              f"track {r['name']!r} {'' if tv == v else tv + ' '}{t0:.2f}-{t1:.2f}; how: {r['how']}")
    for kind in ("task", "op", "add"):
        mine = [r for r in rows if r["kind"] == kind]
        if mine:
            print(f"{kind} vessel bindings: {len(mine)}, vessel track not overlapping the "
                  f"{'add' if kind == 'add' else 'segment'}: {sum(not r['overlaps'] for r in mine)} "
                  f"(of these, put down <= 60 s before it and the how says so: "
                  f"{sum(r['put_down'] for r in mine)})")
    print(json.dumps(counts(cohort)))


if __name__ == "__main__":
    main(sys.argv[1:])

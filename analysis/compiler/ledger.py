"""The completeness ledger (paper section 3: tasks link agent behaviour back to source
activity; docs/compiler.md, "Completeness ledger"): every end-state row of a unit is
expressed or dropped with a reason.

Within each source unit (a recipe step with its prep segments, or an activity row:
``tasks.unit_of``), the rows that record an end state are

* every **add** row of ``complete_recipes.json`` (kind ``add``; weigh events are not adds),
* every **placement**: a VQA object-location answer or itinerary that gives the put-down of
  a named track with one candidate object (the tracks of one association are one
  candidate) within two frames, lasting to the unit's end (no later track of the object
  starts before it),
* every **close or off** snippet (``fine_grained_*``), the last one per object in the unit
  when no open or switch-on of it follows in the unit.

A moment belongs to one unit by the row rule of ``bench/evidence_ceiling.py`` (the strict
count): the most specific step segment holding it, else the latest-starting activity row
holding it; an add belongs to the step of its own recipe whose segments it overlaps most.

Each row is accounted for exactly once: **expressed** when a condition of the unit's
exported task cites it (``cohort/audit.jsonl`` check ``ledger_expressed``, one record per
condition naming its rows), else listed in ``cohort/dropped.jsonl`` (kind ``ledger``) with
a reason whose code (before the first colon) is one of :data:`REASONS`. A row the grounding
set aside is referenced (``refs.dropped``: that record's ``event_id``), never re-derived.

>>> sorted(REASONS)[:3]
['admission_refused', 'argument_not_observed', 'compiled_in_other_unit']
>>> reason("intermediate", "the unit moves the mug again")
'intermediate: the unit moves the mug again'
"""
from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass

from .readers import FRAME

#: Seconds between an answer's time and a track boundary (two frames; the row audit's).
TOL = 2 * FRAME
CLOSING = ("close", "turn off", "switch off", "shut")
OPENING = ("open", "turn on", "switch on")

#: The closed set of reasons a unit's row is not expressed (docs/compiler.md, "The
#: completeness ledger"; docs/FORMAT.md, ``dropped.jsonl`` kind ``ledger``).
REASONS = {
    "not_grounded": "the compiler set the row aside while grounding or binding it "
                    "(refs.dropped: that dropped.jsonl record)",
    "no_operation": "no compiled operation cites the row and no dropped record names it",
    "compiled_in_other_unit": "the row's compiled operation lies in another unit's groups",
    "not_lasting": "the row's compiled end state does not hold at the unit's end",
    "no_end_state": "the row's compiled operation sets no end state a condition can hold "
                    "(a switch-off, a sampled hob or tap)",
    "intermediate": "the unit handles the object again (or cuts it) after the row",
    "move_may_precede_unit": "an itinerary's final 'to' whose move may precede the unit",
    "evidence_before_unit": "the object's track lies mostly before the unit",
    "argument_not_observed": "an argument of the end state is curated",
    "true_at_task_start": "the end state holds at the task's start (no free credit)",
    "true_in_initial_world": "the end state holds in the episode's initial world (no free credit)",
    "same_operation_state": "one operation set two states of one object; the first is the condition",
    "same_add_row": "one add row put several instances in (tracked eggs of one 'eggs' add); "
                    "the first is the condition",
    "no_condition": "the unit kept no condition, so it has no task",
    "duplicate_condition_set": "an earlier unit of the episode has the same condition set",
    "admission_refused": "admission refused the unit's task (cohort/rejected.jsonl)",
    "not_in_suite": "the unit's task is in no suite (a memory episode's event task)",
    "unit_not_compiled": "no compiled group belongs to the unit",
}
#: codes the task builder gives an end state it leaves out (``tasks.unit_tasks``)
SKIP_CODES = ("intermediate", "move_may_precede_unit", "evidence_before_unit", "argument_not_observed",
              "true_at_task_start", "true_in_initial_world", "same_operation_state", "same_add_row")


def reason(code: str, detail: str) -> str:
    """A ledger reason: its code from :data:`REASONS`, then the detail."""
    if code not in REASONS:
        raise ValueError(f"ledger reason code {code!r}: use one of {sorted(REASONS)}")
    return f"{code}: {detail}"


@dataclass(frozen=True)
class Row:
    """One end-state row of a unit (local times of its video)."""
    kind: str           # add | placement | snippet
    unit: str           # unit key (tasks.unit_key)
    video: str
    time: float
    ids: tuple          # source IDs a compiled reference cites (recipe/ingredient; VQA ID)
    track: str | None   # "<video>/<association>/" of a placement's object
    what: str
    key: tuple = ()     # what a dropped record names: (recipe, ingredient) of an add,
                        # (association, track) of a placement


# --------------------------------------------------------------------------- the row rule

def _spans(recipes, activities, videos):
    vs, out = set(videos), []
    for r in recipes.values():
        for c in r.captures:
            if vs & set(c.videos):
                out += [(s.span.video, s.span.start, s.span.end, 0 if s.kind == "step" else 1,
                         f"{r.recipe_id}/{s.step_id}") for s in c.segments if s.span.video in vs]
    out += [(a.video, a.start, a.end, 2, a.source_row) for a in activities if a.video in vs]
    return out


def owner(spans, video: str, t: float) -> str | None:
    """The unit owning moment ``t`` of ``video``: the most specific step segment, then the
    latest start; else the latest-starting activity row; else none.

    >>> s = [("v", 0, 100, 2, "row"), ("v", 10, 20, 0, "R/S1")]
    >>> owner(s, "v", 15), owner(s, "v", 25), owner(s, "v", 150)
    ('R/S1', 'row', None)
    """
    hits = [s for s in spans if s[0] == video and s[1] - 1e-9 <= t <= s[2] + 1e-9]
    return min(hits, key=lambda s: (s[3], -s[1], s[4]))[4] if hits else None


def add_owner(spans, recipe: str, video: str, start: float, end: float) -> str | None:
    """The step of its own recipe whose segments overlap the add most, else the unit
    owning its start.

    >>> s = [("v", 0, 100, 2, "row"), ("v", 10, 20, 0, "R/S1"), ("v", 19, 40, 0, "R/S2")]
    >>> add_owner(s, "R", "v", 12, 21), add_owner(s, "R", "v", 18, 30), add_owner(s, "R", "v", 45, 50)
    ('R/S1', 'R/S2', 'row')
    """
    overlap: dict = defaultdict(float)
    for v, a, b, rank, key in spans:
        if v == video and rank < 2 and key.startswith(recipe + "/") and a < end and start < b:
            overlap[key] += min(b, end) - max(a, start)
    if overlap:
        return max(sorted(overlap), key=overlap.get)
    return owner(spans, video, start)


def unit_rows(recipes, activities, assocs, answers, itineraries, snippets, videos) -> list[Row]:
    """Every end-state row of the units of an episode's ``videos`` (raw, local times)."""
    spans = _spans(recipes, activities, videos)
    ends: dict = {}
    for v, a, b, _, key in spans:
        ends[(key, v)] = max(ends.get((key, v), b), b)
    vs, out = set(videos), []
    for r in recipes.values():
        for c in r.captures:
            for e in (e for e in c.events if e.kind == "add" and e.span.video in vs):
                u = add_owner(spans, r.recipe_id, e.span.video, e.span.start, e.span.end)
                if u is not None:
                    out.append(Row("add", u, e.span.video, e.span.start, (f"{r.recipe_id}/{e.ingredient_id}",),
                                   None, f"{r.recipe_id}/{e.ingredient_id} ({e.name})",
                                   (r.recipe_id, e.ingredient_id)))
    for v in videos:
        named = [a for a in assocs.get(v, []) if a.name]
        cands = []
        for ans in (x for x in answers if x.video == v):
            hits = set()
            for a in named:
                for i, t in enumerate(a.tracks):
                    if ans.kind == "put" and abs(t.start - ans.time) <= TOL:
                        hits.add((a, t))
                    if ans.kind == "take" and i > 0 and abs(t.end - ans.time) <= TOL:
                        hits.add((a, a.tracks[i - 1]))
            cands.append((ans.vqa_id, hits))
        for it in (x for x in itineraries if x.video == v):
            hits = set()
            for a in named:
                if any(min(abs(t.start - it.time), abs(t.end - it.time)) <= TOL for t in a.tracks):
                    covered = a.tracks if len(it.moves) == len(a.tracks) else a.tracks[-1:]
                    hits |= {(a, t) for t in covered}
            cands.append((it.vqa_id, hits))
        for qid, hits in cands:
            if len({a.assoc_id for a, _ in hits}) != 1:
                continue        # ambiguous (or none): no row that decides a placement
            for a, t in sorted(hits, key=lambda h: h[1].start):
                u = owner(spans, v, t.end)
                if u is None or any(t.end < x.start <= ends[(u, v)] for x in a.tracks):
                    continue
                out.append(Row("placement", u, v, t.end, (qid,), f"{v}/{a.assoc_id}/",
                               f"put-down of {a.raw_name!r} (track {t.track_id}) by {qid}",
                               (a.assoc_id, t.track_id)))
    last: dict = {}
    for x in sorted((x for x in snippets if x.video in vs), key=lambda x: (x.video, x.start, x.vqa_id)):
        verb = next((p for p in CLOSING + OPENING if x.action.startswith(p + " ")), None)
        u = owner(spans, x.video, x.end) if verb else None
        if u is not None:
            last[(u, x.video, x.action[len(verb) + 1:])] = (verb in CLOSING, x)
    for (u, v, obj), (closed, x) in sorted(last.items(), key=lambda kv: (kv[0][1], kv[1][1].start)):
        if closed:
            out.append(Row("snippet", u, v, x.start, (x.vqa_id,), None, f"<{x.action}> ({x.vqa_id})"))
    return sorted(out, key=lambda r: (r.video, r.time, r.kind, r.ids))


# --------------------------------------------------------------------------- accounting

def cited(provenance: dict) -> set[str]:
    """Source IDs an operation's or condition's argument references cite."""
    out = set()
    for a in provenance.get("refs", {}).get("args", []):
        r = a.get("refs", {})
        for k in ("id", "vqa"):
            if r.get(k):
                out.add(str(r[k]))
    return out


def _cites(ids: set, row: Row) -> bool:
    if not set(row.ids) & ids:
        return False
    return row.track is None or any(i.startswith(row.track) for i in ids)


_CITED: dict = {}


def _from_row(op, row: Row) -> bool:
    """Whether the compiled operation ``op`` rests on ``row``: its arguments cite the row's
    source IDs, or it is the grounded event of the row (an add bound to the food's own
    track cites the track, not the add row; its ``planned.refs`` name the add)."""
    ids = _CITED.get(id(op))
    if ids is None or ids[0] is not op:
        ids = _CITED[id(op)] = (op, cited(op.provenance))
    if _cites(ids[1], row):
        return True
    p = getattr(op, "planned", None)
    r = getattr(p, "refs", None) or {}
    if row.kind == "add" and p is not None and p.kind == "add":
        return ((r.get("recipe"), r.get("ingredient")) == row.key and r.get("video") == row.video
                and abs(float(r.get("start", -1e9)) - row.time) < 1e-3)
    if row.kind == "snippet" and p is not None and p.kind == "snippet":
        return (r.get("vqa") or r.get("id")) in row.ids
    return False


def _names(d: dict, text: str, row: Row) -> bool:
    """Whether the dropped record ``d`` (``text``: its what and refs as JSON) names ``row``."""
    r = d.get("refs") or {}
    if row.kind == "add":
        return (d["what"].startswith("add ") and (r.get("recipe"), r.get("ingredient")) == row.key
                and r.get("video") == row.video and abs(float(r.get("start", -1e9)) - row.time) < 1e-3)
    if row.kind == "placement" and (r.get("association"), r.get("track")) == row.key:
        return True
    return any(f'"{i}"' in text for i in row.ids)


def account(rows: list[Row], infos: dict, ops, op_group, exported: set, refused: dict,
            dropped: list[dict]) -> list[tuple[Row, str, dict]]:
    """``(row, status, refs)`` for every row: status ``expressed`` (refs: ``task_id``,
    ``condition_id``) or a reason (:func:`reason`; refs: ``dropped`` when a dropped record
    names the row). ``infos``: ``tasks.unit_tasks(ledger=...)``; ``ops``/``op_group``: the
    episode's operations and their groups; ``exported``: task IDs in a suite; ``refused``:
    task ID -> admission reason; ``dropped``: the episode's dropped records (with IDs)."""
    by_group = {}
    for k, op in enumerate(ops):
        by_group.setdefault(op_group[k], []).append(op)
    unit_of_group = {i: key for key, info in infos.items() for i in info["groups"]}
    text = [(d, json.dumps([d.get("what"), d.get("refs")])) for d in dropped if d["kind"] != "ledger"]
    out = []
    _CITED.clear()          # per episode: the operations' cited IDs, computed once
    # operations by the source IDs they may rest on (a row's candidates, then _from_row)
    index: dict = defaultdict(list)
    for k, op in enumerate(ops):
        r = getattr(getattr(op, "planned", None), "refs", None) or {}
        for i in cited(op.provenance) | {f"{r.get('recipe')}/{r.get('ingredient')}", str(r.get("vqa"))}:
            index[i].append(k)
    for row in rows:
        info = infos.get(row.unit)
        task = info["task"] if info else None
        st, refs = None, {}
        if task is not None:
            for c in task["conditions"]:
                wit = info["witnesses"].get(c["id"])
                if (wit is not None and _from_row(wit, row)) or _cites(
                        cited(task["provenance"]["conditions"][c["id"]]), row):
                    tid = task.get("task_id")
                    if tid in exported:
                        st, refs = "expressed", {"task_id": tid, "condition_id": c["id"]}
                    elif info["why"] == "duplicate_condition_set":
                        st = reason("duplicate_condition_set", f"task {tid} is rejected")
                    elif tid in refused:
                        st = reason("admission_refused", f"task {tid}: {refused[tid]}")
                    else:
                        st = reason("not_in_suite", f"task {tid} ({task['tier']}) is in no suite")
                    break
        if st is None and info is not None:
            skip = next(((atom, code) for atom, op, code in info["skipped"] if _from_row(op, row)), None)
            if skip is not None:
                st = reason(skip[1], f"{skip[0][0]}({', '.join(skip[0][1:])}): {REASONS[skip[1]]}")
                refs = {"atom": list(skip[0])}
        if st is None:
            own = set(info["groups"] if info else ())
            mine = [op for i in sorted(own) for op in by_group.get(i, []) if _from_row(op, row)]
            other = sorted({unit_of_group.get(op_group[k], "no unit") for k in
                            sorted({k for i in row.ids for k in index.get(i, ())})
                            if op_group[k] not in own and _from_row(ops[k], row)})
            hit = next((d for d, t in text if _names(d, t, row)), None)
            if mine:
                if row.kind == "snippet" or any(op.action["type"] in ("turn_off", "close_appliance")
                                                for op in mine):
                    st = reason("no_end_state", f"{mine[0].action['type']}({', '.join(mine[0].action['args'])})")
                else:
                    st = reason("not_lasting", f"{mine[0].action['type']}({', '.join(mine[0].action['args'])}) "
                                               "is changed before the unit ends")
            elif other:
                st = reason("compiled_in_other_unit", ", ".join(other))
            elif hit is not None:
                # referenced, never copied: its reason is the grounding's to state
                st = reason("not_grounded", f"set aside while grounding (dropped record {hit['event_id']}, "
                                            f"kind {hit['kind']})")
                refs = {"dropped": hit["event_id"]}
            elif info is None:
                st = reason("unit_not_compiled", REASONS["unit_not_compiled"])
            elif task is None:
                st = reason("no_condition", REASONS["no_condition"])
            else:
                st = reason("no_operation", REASONS["no_operation"])
        out.append((row, st, refs))
    _CITED.clear()
    return out


def ledger_records(episode_id: str, accounted, offsets: dict) -> tuple[list[dict], list[dict]]:
    """``(dropped records, audit records)`` of one episode's ledger: a ``ledger`` dropped
    record per row not expressed (IDs ``<episode>/l<n>``), one ``ledger_expressed`` audit
    record per condition that expresses rows (task ID ``<task>/<condition>``)."""
    drops, by_cond = [], defaultdict(list)
    for row, st, refs in accounted:
        if st == "expressed":
            by_cond[(refs["task_id"], refs["condition_id"], row.unit)].append(row)
            continue
        drops.append({"event_id": f"{episode_id}/l{len(drops):03d}", "episode_id": episode_id,
                      "kind": "ledger", "what": f"{row.kind} {row.what}", "reason": st,
                      "time": round(row.time + offsets.get(row.video, 0.0), 5),
                      "refs": {"unit": row.unit, "row": row.kind, "video": row.video,
                               "ids": list(row.ids), "code": st.split(":", 1)[0], **refs}})
    audit = [{"check": "ledger_expressed", "task_id": f"{tid}/{cid}", "condition_id": cid, "passed": True,
              "detail": f"{len(rows)} rows of unit {unit}: " + " | ".join(f"{r.kind} {r.what}" for r in rows)}
             for (tid, cid, unit), rows in sorted(by_cond.items())]
    return drops, audit

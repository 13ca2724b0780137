"""The completeness ledger (paper section 3: tasks link agent behaviour back to source
activity; docs/compiler.md, "Completeness ledger"): every end-state row of a unit is
expressed or dropped with a reason.

Within each source unit (a recipe step with its prep segments, or an activity row:
``tasks.unit_of``), the rows that record an end state are

* every **add** row of ``complete_recipes.json`` (kind ``add``; weigh events are not adds),
* every **placement**: a VQA object-location answer or itinerary that gives the put-down of
  a named track with one candidate object (the tracks of one association are one
  candidate; where no named object is one, one unnamed "Track N": accounted
  ``unnamed_track``) within two frames; one the unit moves again (a later track of the
  object starts before the unit's end) is accounted ``intermediate``, whatever the compiler
  made of it,
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
['admission_refused', 'argument_not_observed', 'compiled_in_no_unit']
>>> reason("intermediate", "the unit moves the mug again")
'intermediate: the unit moves the mug again'
"""
from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass

from .normalise import fixture_id
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
    "read_as_origin": "no compiled put-down rests on the placement; a take reads it as the object's "
                      "origin (the compiler places the row's move before the track the row rule "
                      "gives it)",
    "compiled_in_no_unit": "the row's compiled operation lies in a group no unit holds (its object's "
                           "track crosses the boundary between two activity rows, or lies outside "
                           "every row, so no row's task holds the group)",
    "not_lasting": "the row's compiled end state does not hold at the unit's end",
    "no_end_state": "the row's compiled operation sets no end state a condition can hold "
                    "(a switch-off, a sampled hob or tap)",
    "intermediate": "after the row, the unit moves the object again, or handles an object of its type "
                    "named otherwise in a later video (annotators name objects per video: it may be "
                    "this one), or cuts it, or opens again what the row closed, or a step whose text "
                    "takes food out handles the vessel the row added to",
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
    "unnamed_track": "the placement's one candidate object is an unnamed track ('Track N': the "
                     "annotators gave no object name), which the compiler does not compile "
                     "(refs.dropped: the record that set the row or track aside)",
}
#: The closed set of reasons a condition of an exported task expresses no end-state row of
#: its unit (``cohort/audit.jsonl`` check ``ledger_no_row``, one record per such condition;
#: docs/compiler.md, "The completeness ledger").
NO_ROW_REASONS = {
    "event": "an event condition records an action (a stir, a wash), not an end state; no row "
             "kind of the ledger is an action",
    "switch_on": "a powered or running state set by a switch-on (press, turn on): the ledger's rows "
                 "are adds, placements and closes or offs, a switch-on has no row kind",
    "transfer": "an in() of a content an earlier grounded add put into another container, poured "
                "on by this unit: the add row is that earlier unit's",
    "step_action": "an in() set by the step text's verb on an item held during the step or a tap "
                   "(fill, add, put, pour with no add event of it in the unit): no add row",
    "row_in_other_unit": "the add row or placement it rests on lies in another unit by the row rule "
                         "(that unit's ledger record says compiled_in_other_unit)",
    "row_ambiguous": "the answer it rests on has several candidate objects within two frames, so the "
                     "row rule makes no row of it (the compiler paired the questions asked at one "
                     "time with as many tracks)",
    "snippet_not_last": "the close snippet it rests on is not the row: the row rule keeps the last "
                        "close or off of each object word in the unit, and a later snippet of that "
                        "word (another object of the name, or the object opened again) follows it",
    "no_row": "no row of the ledger's row rule is the condition's evidence and no reason above "
              "applies (a defect of the ledger: the cohort has none)",
}
#: operations that take an object up: they read a placement (as the object's origin), never
#: compile it
TAKES = {"pick_up", "take_from_storage", "take_from_appliance", "pick_up_from_appliance",
         "take_from_sink", "take_out_of_container"}
#: operations that set an object down: what compiles a placement (an add's pour that also
#: cites where its target stands only reads it)
PUTS = {"put_on", "put_in_storage", "put_in_appliance", "place_on_appliance", "put_in_sink", "throw_away"}
#: codes the task builder gives an end state it leaves out (``tasks.unit_tasks``)
SKIP_CODES = ("intermediate", "move_may_precede_unit", "evidence_before_unit", "argument_not_observed",
              "true_at_task_start", "true_in_initial_world", "same_operation_state", "same_add_row")


def reason(code: str, detail: str, codes: dict = REASONS) -> str:
    """A ledger reason: its code from ``codes`` (:data:`REASONS`, or
    :data:`NO_ROW_REASONS` for a condition), then the detail."""
    if code not in codes:
        raise ValueError(f"ledger reason code {code!r}: use one of {sorted(codes)}")
    return f"{code}: {detail}"


@dataclass(frozen=True)
class Row:
    """One end-state row of a unit (local times of its video)."""
    kind: str           # add | placement | snippet
    unit: str           # unit key (tasks.unit_key)
    video: str
    time: float
    ids: tuple          # source IDs a compiled reference cites (recipe/ingredient; VQA ID)
    track: str | None   # "<video>/<association>/<track>" of a placement's put-down track
    what: str
    key: tuple = ()     # what a dropped record names: (recipe, ingredient) of an add,
                        # (association, track) of a placement
    place: str | None = None  # a placement's put-down fixture (fixture_id of its answer)
    unnamed: bool = False     # a placement whose one candidate is an unnamed track
    moved: float | None = None  # a placement's object's next track start inside the unit (the
                                # unit moves it again: no end state), else None (it lasts)


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
        # the strict count's candidates are the named objects; an answer whose one candidate
        # is an unnamed track (none named) is a row too, or it would go unaccounted
        named = [a for a in assocs.get(v, []) if a.tracks]
        cands = []
        for ans in (x for x in answers if x.video == v):
            hits = set()
            for a in named:
                for i, t in enumerate(a.tracks):
                    if ans.kind == "put" and abs(t.start - ans.time) <= TOL:
                        hits.add((a, t, ans.phrase))
                    if ans.kind == "take" and i > 0 and abs(t.end - ans.time) <= TOL:
                        hits.add((a, a.tracks[i - 1], ans.phrase))
            cands.append((ans.vqa_id, hits))
        for it in (x for x in itineraries if x.video == v):
            hits = set()
            for a in named:
                if any(min(abs(t.start - it.time), abs(t.end - it.time)) <= TOL for t in a.tracks):
                    # each track's 'to' when the moves pair with the tracks, else the last 'to'
                    hits |= ({(a, t, mv[1]) for t, mv in zip(a.tracks, it.moves)}
                             if len(it.moves) == len(a.tracks) else {(a, a.tracks[-1], it.moves[-1][1])})
            cands.append((it.vqa_id, hits))
        for qid, hits in cands:
            hits = {h for h in hits if h[0].name} or hits
            if len({a.assoc_id for a, _, _ in hits}) != 1:
                continue        # ambiguous (or none): no row that decides a placement
            for a, t, phrase in sorted(hits, key=lambda h: (h[1].start, h[1].track_id, h[0].assoc_id)):
                u = owner(spans, v, t.end)
                if u is None:
                    continue
                # a put-down the unit moves again is a row too (accounted ``intermediate``):
                # left out, it was accounted nowhere (162 rows of the cohort, the white bowl
                # of location 436 in P03-20240218-094452 among them)
                again = min((x.start for x in a.tracks if t.end < x.start <= ends[(u, v)]), default=None)
                out.append(Row("placement", u, v, t.end, (qid,), f"{v}/{a.assoc_id}/{t.track_id}",
                               f"put-down of {a.raw_name!r} (track {t.track_id}) by {qid}",
                               (a.assoc_id, t.track_id), fixture_id(phrase), not a.name, again))
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
    """Source IDs an operation's or condition's argument references cite; an add row's ID
    (``<recipe>/<ingredient>``, shared by every add of that ingredient) also as
    ``<id>@<time>`` when the reference gives the add's start.

    >>> arg = {"file": "complete_recipes.json", "id": "R/I1", "time": 12.0}
    >>> sorted(cited({"refs": {"args": [{"refs": arg}, {"refs": {"vqa": "q1"}}]}}))
    ['R/I1', 'R/I1@12.000', 'q1']
    """
    out = set()
    for a in provenance.get("refs", {}).get("args", []):
        r = a.get("refs", {})
        for k in ("id", "vqa"):
            if r.get(k):
                out.add(str(r[k]))
        if r.get("file") == "complete_recipes.json" and r.get("id") and r.get("time") is not None:
            out.add(f"{r['id']}@{float(r['time']):.3f}")
    return out


def _cites(ids: set, row: Row) -> bool:
    """Whether cited ``ids`` name ``row``: its source ID; for a placement its own put-down
    track; for an add its own start when the reference gives one (the two adds of one
    ingredient share an ID: garam masala added at 763 s and again at 1001 s)."""
    if not set(row.ids) & ids:
        return False
    if row.kind == "add":
        timed = {i.rsplit("@", 1)[1] for i in ids if i.startswith(row.ids[0] + "@")}
        return not timed or f"{row.time:.3f}" in timed
    return row.track is None or row.track in ids


_CITED: dict = {}


def _from_row(op, row: Row) -> bool:
    """Whether the compiled operation ``op`` rests on ``row``: its arguments cite the row's
    source IDs, or it is the grounded event of the row (an add bound to the food's own
    track cites the track, not the add row; its ``planned.refs`` name the add)."""
    if row.kind == "placement" and op.action["type"] in TAKES:
        return False        # a take reads the placement as its origin; it does not compile it
    ids = _CITED.get(id(op))
    if ids is None or ids[0] is not op:
        ids = _CITED[id(op)] = (op, cited(op.provenance))
    if _cites(ids[1], row):
        return True
    if (row.kind == "placement" and op.action["type"] in PUTS and row.track in ids[1]
            and op.action["args"][1:2] == [row.place]):
        # the compiled put-down of the row's own track, at the row's place, cites another
        # row that agrees (a location answer where the itinerary says the same): both rest on it
        return True
    if (row.kind == "placement" and op.action["type"] == "add_ingredient" and row.track in ids[1]
            and op.action["args"][-1] == row.place):
        # the row puts the food down at a fixture, and the compiled add of its own track puts
        # it into the vessel standing there (location 200 of P09-20240622-150155: the ginger
        # "on the hob", into the red saucepan on it): the add's in() is that end state
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


def _dropping(row: Row, named: list[dict]) -> dict | None:
    """The record that set ``row`` aside among the dropped records ``named`` naming it
    (:func:`_names`): a placement's own track dropped (``refs.track``) before a record
    that only cites the row's question (an itinerary's note that its final 'to' is
    observed drops nothing; P05-20240425-173353: d072, the one-hand model, not d027).

    >>> row = Row("placement", "u", "v", 1.0, ("it_1",), "v/a/t", "w", ("a", "t"))
    >>> note = {"event_id": "d1", "refs": {"id": "it_1"}}
    >>> track = {"event_id": "d2", "refs": {"association": "a", "track": "t"}}
    >>> _dropping(row, [note, track])["event_id"], _dropping(row, [note])["event_id"]
    ('d2', 'd1')
    """
    own = [d for d in named if row.kind == "placement"
           and ((d.get("refs") or {}).get("association"), (d.get("refs") or {}).get("track")) == row.key]
    return (own or named or [None])[0]


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
        if row.unnamed and row.moved is None:
            # nothing compiles an unnamed track, so no operation or condition can rest on it
            hit = _dropping(row, [d for d, t in text if _names(d, t, row)])
            out.append((row, reason("unnamed_track", f"{row.what}: the track has no object name"),
                        {"dropped": hit["event_id"]} if hit else {}))
            continue
        if task is not None:
            # the condition whose witness compiled the row, else one whose provenance cites it
            # (an add's pour also cites its source's put-down: never the bowl's placement)
            wits = sorted((c for c in task["conditions"] if info["witnesses"].get(c["id"]) is not None
                           and _from_row(info["witnesses"][c["id"]], row)),
                          key=lambda c: info["witnesses"][c["id"]].action["type"] not in PUTS)
            for c in wits or [c for c in task["conditions"]
                              if _cites(cited(task["provenance"]["conditions"][c["id"]]), row)][:1]:
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
        if st is None and row.moved is not None:
            # the rows themselves move the object again inside the unit: no end state, whatever
            # the compiler made of the put-down
            st = reason("intermediate", f"{row.what}: the object's next track starts at {row.moved:.2f} s, "
                                        "inside the unit")
        if st is None and info is not None:
            skip = next(((atom, code) for atom, op, code in info["skipped"] if _from_row(op, row)), None)
            if skip is not None:
                st = reason(skip[1], f"{skip[0][0]}({', '.join(skip[0][1:])}): {REASONS[skip[1]]}")
                refs = {"atom": list(skip[0])}
        if st is None:
            own = set(info["groups"] if info else ())
            mine = [op for i in sorted(own) for op in by_group.get(i, []) if _from_row(op, row)]
            other = sorted({unit_of_group.get(op_group[k]) or "" for k in
                            sorted({k for i in row.ids for k in index.get(i, ())})
                            if op_group[k] not in own and _from_row(ops[k], row)})
            hit = _dropping(row, [d for d, t in text if _names(d, t, row)])
            if mine:
                if row.kind == "snippet" or any(op.action["type"] in ("turn_off", "close_appliance")
                                                for op in mine):
                    st = reason("no_end_state", f"{mine[0].action['type']}({', '.join(mine[0].action['args'])})")
                else:
                    st = reason("not_lasting", f"{mine[0].action['type']}({', '.join(mine[0].action['args'])}) "
                                               "is changed before the unit ends")
            elif [u for u in other if u]:
                st = reason("compiled_in_other_unit", ", ".join(u for u in other if u))
            elif other:
                st = reason("compiled_in_no_unit", REASONS["compiled_in_no_unit"])
            elif hit is not None:
                # referenced, never copied: its reason is the grounding's to state
                st = reason("not_grounded", f"set aside while grounding (dropped record {hit['event_id']}, "
                                            f"kind {hit['kind']})")
                refs = {"dropped": hit["event_id"]}
            elif row.kind == "placement" and any(
                    ops[k].action["type"] in TAKES and _cites(cited(ops[k].provenance), row)
                    for k in sorted({k for i in row.ids for k in index.get(i, ())})):
                st = reason("read_as_origin", REASONS["read_as_origin"])
            elif info is None:
                st = reason("unit_not_compiled", REASONS["unit_not_compiled"])
            elif task is None:
                st = reason("no_condition", REASONS["no_condition"])
            else:
                st = reason("no_operation", REASONS["no_operation"])
        out.append((row, st, refs))
    _CITED.clear()
    return out


def _no_row(cond: dict, wit, ids: set, unit: str, rows: list[Row]) -> tuple[str, str]:
    """``(code, detail)``: why condition ``cond`` of unit ``unit`` expresses no row of it
    (:data:`NO_ROW_REASONS`); ``wit``: its witness operation, ``ids``: what its provenance
    cites."""
    if cond["kind"] == "event":
        e = cond["event"]
        return "event", f"event {e['type']}({', '.join(str(x) for x in e['args'] if x is not None)})"
    atom = cond["atom"]
    what = f"{atom[0]}({', '.join(atom[1:])})"
    op = f" by {wit.action['type']}" if wit is not None else ""
    if atom[0] in ("powered", "running"):
        return "switch_on", f"{what} set{op}"
    hits = [r for r in rows if (wit is not None and _from_row(wit, r)) or _cites(ids, r)]
    other = [r for r in hits if r.unit != unit]
    if other:
        return "row_in_other_unit", f"{what}: {other[0].kind} {other[0].what} lies in unit {other[0].unit}"
    p = getattr(wit, "planned", None)
    if not hits and p is not None and p.kind == "step" and atom[0] == "in":
        if (p.evidence.get("s") or {}).get("file") == "complete_recipes.json":
            return "transfer", f"{what}{op}: the content an earlier add put in {p.roles.get('src')}"
        return "step_action", f"{what}{op}, the step's {p.action}"
    if not hits and p is not None and p.kind == "snippet":
        return "snippet_not_last", f"{what}{op}: snippet {', '.join(sorted(i for i in ids if 'fine_grained' in i))}"
    answers = sorted(i for i in ids if "object_location" in i or "itinerary" in i)
    if not hits and answers and not any(set(r.ids) & set(answers) for r in rows):
        return "row_ambiguous", f"{what}{op}: {', '.join(answers)} is no row"
    return "no_row", f"{what}{op}"


def conditions_without_rows(rows: list[Row], accounted, infos: dict, exported: set) -> list[tuple]:
    """``(task ID, condition ID, reason)`` for every condition of an exported task that
    expresses no row of its unit (``accounted``: :func:`account`'s result), the reason's
    code from :data:`NO_ROW_REASONS` (check ``ledger_no_row``)."""
    done = {(refs["task_id"], refs["condition_id"]) for _, st, refs in accounted if st == "expressed"}
    out = []
    for key, info in sorted(infos.items()):
        task = info["task"]
        if task is None or task.get("task_id") not in exported:
            continue
        for c in task["conditions"]:
            if (task["task_id"], c["id"]) not in done:
                code, detail = _no_row(c, info["witnesses"].get(c["id"]),
                                       cited(task["provenance"]["conditions"][c["id"]]), key, rows)
                out.append((task["task_id"], c["id"], reason(code, detail, NO_ROW_REASONS)))
    return out


def ledger_records(episode_id: str, accounted, offsets: dict, unrowed=()) -> tuple[list[dict], list[dict]]:
    """``(dropped records, audit records)`` of one episode's ledger: a ``ledger`` dropped
    record per row not expressed (IDs ``<episode>/l<n>``), one ``ledger_expressed`` audit
    record per condition that expresses rows (task ID ``<task>/<condition>``) and one
    ``ledger_no_row`` record per condition of ``unrowed`` (:func:`conditions_without_rows`),
    its detail the reason."""
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
    audit += [{"check": "ledger_no_row", "task_id": f"{tid}/{cid}", "condition_id": cid, "passed": True,
               "detail": why} for tid, cid, why in unrowed]
    return drops, audit

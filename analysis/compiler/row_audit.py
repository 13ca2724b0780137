"""Every compiled fact against every raw location row (paper appendix A.2: deterministic
checks of the compiled world against the source; issue 34, docs/compiler.md "Row audit").

The compiler binds a VQA object-location answer or an itinerary to a track only when its
rules allow, and sets the others aside (ambiguous, a conflict, a track the one-hand model
does not compile). This audit reads *every* such row of an episode's videos again, with
one rule of its own, and checks the compiled episode against it:

* A row **decides** a place when it is unambiguous: exactly one object (an association;
  its tracks are one candidate) has a track boundary within two frames
  (``readers.TWO_FRAMES``) of the question's time, that object is an entity of the world,
  and the answer's phrase is a fixture of the scene. A "take" answer decides where the
  object stood in the gap *before* its track, a "put" answer the gap *after* it; an
  itinerary with one move per track decides every gap, else its first "from" (before the
  first track) and its final "to" (after the last). Two rows deciding one gap differently
  are **contested** and decide nothing, and so is a VQA answer naming a fixture the
  object's own itinerary never visits.
* **Checked**: every reference operation that takes an object from, or puts it on, a
  fixture (a track's pick-up against the gap before that track, its put-down against the
  gap after it; a curated move not bound to a track against the gap its time lies in),
  every initial ``at`` fact (against the gap before the first track of the object's
  association), and every ``at`` condition of an admitted task (against every gap between its
  witnessing operation and the task's end). A checked fact naming another fixture than
  the deciding row is a **contradiction**; the compile refuses one
  (:func:`refuse_contradictions`), since every curated fallback yields to the row that
  decides it (``worlds.ROW_RULE``).

>>> from analysis.compiler.readers import Association, LocationAnswer, Track
>>> mug = Association("v", "a1", "mug", "mug", (Track("t1", 10.0, 12.0), Track("t2", 30.0, 31.0)))
>>> ds, rows = decisions("v", [mug], [LocationAnswer("q1", "v", "put", 10.05, "sink")], [],
...                      frozenset({"sink"}), {("v", "a1"): "mug"}, 0.0, 100.0)
>>> [(d.entity, d.fixture, d.g0, d.g1) for d in ds], dict(rows)
([('mug', 'sink', 12.0, 30.0)], {'decided': 1})
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

from .normalise import fixture_id
from .readers import FRAME, TWO_FRAMES, Association, Itinerary, LocationAnswer

VQA_FILE = "3d_perception_object_location.json"
#: ``compiled_tracks.SETTLE_RULE`` (a curated move to the place a row decides)
SETTLE_PREFIX = "moved_where_a_row_puts_it_after_a_track_not_compiled"
#: ``compiled_tracks.AMB_SETTLE_RULE`` (the same catch-up to an ambiguous row's fixture)
AMB_SETTLE_PREFIX = "moved_where_an_ambiguous_row_puts_one_of_its_candidates_after_a_track_not_compiled"
ITIN_FILE = "object_motion_object_movement_itinerary.json"
TAKE_TYPES = frozenset({"pick_up", "take_from_storage", "take_from_appliance", "pick_up_from_appliance",
                        "take_from_sink", "take_out_of_container"})
PUT_TYPES = frozenset({"put_on", "put_in_storage", "put_in_appliance", "place_on_appliance",
                       "put_in_sink", "throw_away"})


@dataclass(frozen=True)
class Decision:
    """One row's decision: ``entity`` stood at ``fixture`` between its tracks, in the gap
    ``(g0, g1)`` (episode time) numbered ``gap`` (gap ``k`` lies before the association's
    track ``k``; the last one after its last track)."""
    file: str
    qid: str
    video: str
    assoc: str
    gap: int
    entity: str
    fixture: str
    phrase: str
    g0: float
    g1: float
    chain: tuple = ()      # an itinerary's fixtures (every move), when all are the scene's
    side: str = "after"    # "before": the place the object was taken from (a take answer, a
                           # move's 'from'); "after": where it was put (a put answer, a 'to')
    ambiguous: bool = False  # one of the candidates of an ambiguous row (``ambiguous``)

    @property
    def row(self) -> str:
        return f"{self.file} {self.qid}"


def _candidates(tracks, time: float, key: str) -> list:
    """Nearest track per association within two frames of ``time`` (``key``: the track
    boundary the row's time is: "start", "end" or "either")."""
    best: dict = {}
    for a, k, t in tracks:
        d = (min(abs(t.start - time), abs(t.end - time)) if key == "either"
             else abs(getattr(t, key) - time))
        if d <= TWO_FRAMES and (a.assoc_id not in best or d < best[a.assoc_id][2]):
            best[a.assoc_id] = (a, k, d)
    return list(best.values())


def decisions(video: str, assocs: list[Association], answers: list[LocationAnswer],
              itineraries: list[Itinerary], fixture_ids, entity_of: dict, offset: float,
              end: float) -> tuple[list[Decision], Counter]:
    """``(decisions, row counts)`` of one video (``end``: the video's end in episode time;
    ``entity_of[(video, association)]``: the world's entity). Row counts: ``decided``,
    ``ambiguous`` (two or more objects), ``no_candidate``, ``not_an_entity`` (the one
    object is unnamed, vague or not compiled), ``fixture_not_in_scene``. One exception to
    "one candidate", the compiler's (``answer_links._link_answers``): *n* VQA questions of one
    kind at one moment, *n* objects there and one answer for all decide each object's gap."""
    out, rows, _ = _read(video, assocs, answers, itineraries, fixture_ids, entity_of, offset, end)
    return out, rows


def ambiguous(video: str, assocs: list[Association], answers: list[LocationAnswer],
              itineraries: list[Itinerary], fixture_ids, entity_of: dict, offset: float,
              end: float) -> list[tuple]:
    """The ambiguous rows of one video whose every candidate object is a world entity and
    whose answer names a fixture of the scene: one tuple per row of each candidate's
    :class:`Decision` (the gap it would decide). The row says one of them stood there: a
    compiled world in which none does contradicts it whatever the binding.

    >>> from analysis.compiler.readers import Association, LocationAnswer, Track
    >>> mug = Association("v", "a1", "mug", "mug", (Track("t1", 10.0, 12.0),))
    >>> cup = Association("v", "a2", "cup", "cup", (Track("t2", 10.02, 11.0),))
    >>> [[(d.entity, d.gap, d.fixture) for d in row] for row in ambiguous(
    ...     "v", [mug, cup], [LocationAnswer("q1", "v", "put", 10.0, "sink")], [], frozenset({"sink"}),
    ...     {("v", "a1"): "mug", ("v", "a2"): "cup"}, 0.0, 100.0)]
    [[('mug', 1, 'sink'), ('cup', 1, 'sink')]]
    """
    return _read(video, assocs, answers, itineraries, fixture_ids, entity_of, offset, end)[2]


def gap_span(a: Association, g: int, offset: float, end: float, side: str = "after") -> tuple[float, float]:
    """``(g0, g1)`` in episode time of gap ``g`` seen from ``side``: "after" track ``g - 1``
    (from its end) or "before" track ``g`` (to its start). With tracks of one association
    overlapping (a track nested in another: "jar of sugar" 1260.9-1272.4 s holding
    1263.3-1264.3 s) the object is free only from the end of a track to the next moment
    a track holds it again (an empty gap, ``g1 <= g0``, while another track holds it).

    >>> from analysis.compiler.readers import Association, Track
    >>> jar = Association("v", "a", "jar", "jar", (Track("t1", 5.0, 6.0), Track("t2", 10.0, 20.0),
    ...                                             Track("t3", 12.0, 13.0)))
    >>> gap_span(jar, 0, 0.0, 100.0, "before"), gap_span(jar, 1, 0.0, 100.0), gap_span(jar, 2, 0.0, 100.0)
    ((0.0, 5.0), (6.0, 10.0), (20.0, 100.0))
    >>> gap_span(jar, 3, 0.0, 100.0), gap_span(jar, 2, 0.0, 100.0, "before")
    ((13.0, 13.0), (12.0, 12.0))
    """
    ts = a.tracks
    if side == "after" and g > 0:
        g0 = ts[g - 1].end
        later = [max(t.start, g0) for t in ts if t.end > g0]
        g1 = min(later) if later else end - offset
    else:
        g1 = ts[g].start
        g0 = max((min(t.end, g1) for t in ts if t.start < g1), default=0.0)
    return round(g0 + offset, 5), round(g1 + offset, 5)


def _read(video, assocs, answers, itineraries, fixture_ids, entity_of, offset, end):
    tracks = [(a, k, t) for a in assocs for k, t in enumerate(a.tracks)]
    rows: Counter = Counter()
    out: list[Decision] = []
    amb: list[tuple] = []

    def decide(file, qid, a, k, moves_of, chain):
        ent = entity_of.get((video, a.assoc_id))
        got = []
        for g, phrase, side in moves_of(a, k):
            fx = fixture_id(phrase)
            if fx not in fixture_ids:
                continue
            g0, g1 = gap_span(a, g, offset, end, side)
            got.append(Decision(file, qid, video, a.assoc_id, g, ent, fx, phrase, g0, g1, chain, side))
        return got

    def one(file, qid, time, key, moves_of, chain=(), peers=0):
        cands = _candidates(tracks, time, key)
        if not cands:
            rows["no_candidate"] += 1
            return
        if len(cands) > 1:
            ents = [entity_of.get((video, a.assoc_id)) for a, _, _ in cands]
            each = [decide(file, qid, a, k, moves_of, chain) for a, k, _ in cands]
            if peers == len(cands) and None not in ents and all(each):
                # n questions at this moment for n objects, one answer for all: each
                # object stood there, whichever question is about which
                rows["decided"] += 1
                out.extend(d for ds_ in each for d in ds_)
                return
            rows["ambiguous"] += 1
            if None not in ents and all(each):
                amb.append(tuple(replace(d, ambiguous=True) for ds_ in each for d in ds_))
            return
        a, k, _ = cands[0]
        if entity_of.get((video, a.assoc_id)) is None:
            rows["not_an_entity"] += 1
            return
        got = decide(file, qid, a, k, moves_of, chain)
        rows["decided" if got else "fixture_not_in_scene"] += 1
        out.extend(got)

    for ans in answers:
        if ans.video != video:
            continue
        peers = [b for b in answers if b.video == video and b.kind == ans.kind and abs(b.time - ans.time) <= FRAME]
        same = len({fixture_id(b.phrase) for b in peers}) == 1
        # "take ... before putting it at T": T ends the track, the answer is the gap before
        # it; "put ... after taking it at T": T starts the track, the answer the gap after
        one(VQA_FILE, ans.vqa_id, ans.time, "end" if ans.kind == "take" else "start",
            lambda a, k, ans=ans: [(k, ans.phrase, "before") if ans.kind == "take" else
                                   (k + 1, ans.phrase, "after")],
            peers=len(peers) if same else 0)
    for it in itineraries:
        if it.video != video or not it.moves:
            continue

        def moves_of(a, k, it=it):
            n = len(a.tracks)
            if len(it.moves) == n:
                return [(i + s, ph, side) for i, mv in enumerate(it.moves)
                        for s, ph, side in ((0, mv[0], "before"), (1, mv[1], "after"))]
            return [(0, it.moves[0][0], "before"), (n, it.moves[-1][1], "after")]
        fxs = {fixture_id(p) for mv in it.moves for p in mv}
        one(ITIN_FILE, it.vqa_id, it.time, "either", moves_of,
            tuple(sorted(fxs)) if fxs <= set(fixture_ids) else ())
    return out, rows, amb


def uncontested(ds: list[Decision]) -> tuple[list[Decision], list[Decision]]:
    """``(deciding, contested)``: rows deciding one gap differently decide nothing, and
    neither does a VQA answer naming a fixture that the object's own itinerary never
    visits (the itinerary covers the object's moves throughout the video: the compiler's
    conflict rule, ``answer_links._link_answers``)."""
    chains: dict = {}
    for d in ds:
        if d.chain:
            chains.setdefault((d.video, d.assoc), set()).update(d.chain)
    by_gap: dict = {}
    off_chain = []
    for d in ds:
        ch = chains.get((d.video, d.assoc))
        if d.file == VQA_FILE and ch and d.fixture not in ch:
            off_chain.append(d)
            continue
        by_gap.setdefault((d.video, d.assoc, d.gap), []).append(d)
    keep, contested = [], off_chain
    for xs in by_gap.values():
        (keep if len({d.fixture for d in xs}) == 1 else contested).extend(xs)
    return keep, contested


def _track_key(p: dict):
    r = (p or {}).get("refs", {})
    if r.get("file") != "assoc_info.json":
        return None
    parts = str(r.get("id", "")).split("/")
    return tuple(parts) if len(parts) == 3 else None


def _fixture_arg(op: dict) -> str:
    # take_out_of_container(item, container, fixture): the item stood where its container did
    return op["args"][2] if op["type"] == "take_out_of_container" else op["args"][1]


@dataclass
class RowAudit:
    """One episode's result: the rows read (counts by outcome), the contested rows, and one
    entry per checked fact: ``{kind, id, condition_id, passed, detail}`` with ``kind``
    ``operation``, ``initial_fact`` or ``condition``."""
    rows: Counter
    contested: int
    checks: list

    @property
    def contradictions(self) -> list:
        return [c for c in self.checks if not c["passed"]]


def track_index(assocs: list[Association]) -> dict:
    """``{(video, association, track): position of the track in its association}``
    (the gap before track ``k`` is gap ``k``)."""
    return {(a.video, a.assoc_id, t.track_id): k for a in assocs for k, t in enumerate(a.tracks)}


def _detail(what: str, compiled: str, prov: str, hits: list) -> str:
    wrong = [d for d in hits if d.fixture != compiled]
    rows = "; ".join(f"{d.row} ({d.phrase!r}: {d.fixture})" for d in (wrong or hits))
    return (f"{what} [{prov}]: " + (f"CONTRADICTED by {rows}" if wrong else f"agrees with {rows}"))


def audit_rows(ds: list[Decision], rows: Counter, facts: dict, group_recs: list,
               tasks: list, first_assoc: dict, index: dict) -> RowAudit:
    """Check the compiled episode (initial ``facts`` with provenance, ``group_recs``, the
    admitted ``tasks``) against the decisions ``ds`` (see the module docstring);
    ``first_assoc``: ``{entity: (video, association)}`` of the association that gave the
    entity its initial place; ``index``: :func:`track_index`."""
    keep, contested = uncontested(ds)
    by_ent: dict = {}
    by_gap: dict = {}
    all_gap: dict = {}
    for d in keep:
        by_ent.setdefault(d.entity, []).append(d)
        by_gap.setdefault((d.video, d.assoc, d.gap), []).append(d)
    all_ents = {d.entity for d in ds}
    for d in ds:
        all_gap.setdefault((d.video, d.assoc, d.gap), []).append(d)
    checks: list[dict] = []
    tol = TWO_FRAMES

    def add(kind, ident, cid, what, compiled, prov, hits):
        checks.append({"kind": kind, "id": ident, "condition_id": cid,
                       "passed": all(d.fixture == compiled for d in hits),
                       "detail": _detail(what, compiled, prov, hits)})

    for g in group_recs:
        for k, op in enumerate(g["operations"]):
            refs = op["provenance"]["refs"]
            t = refs["time"]
            if op["type"] not in TAKE_TYPES | PUT_TYPES:
                continue
            ent, fx = op["args"][0], _fixture_arg(op)
            if ent not in by_ent and ent not in all_ents:
                continue
            args = refs.get("args", [])
            key = _track_key(args[0] if args else None)
            side = "origin" if op["type"] in TAKE_TYPES else "destination"
            if side == "origin" and str(refs.get("rule", "")).startswith((SETTLE_PREFIX, AMB_SETTLE_PREFIX)):
                # the compiled world catching up with a row (compiled_tracks.SETTLE_RULE): the
                # take claims no place of the row's gap; the put-down that follows does
                continue
            if key is not None and refs.get("rule") is None:
                # the track's own pick-up (gap before it) or put-down (gap after it)
                idx = index.get(key)
                gap = None if idx is None else (idx if side == "origin" else idx + 1)
                hits = by_gap.get((key[0], key[1], gap), [])
                if args and args[-1].get("source") == "observed":
                    # an observed place must agree with every row of its track end, the
                    # contested ones too: rows that disagree leave the place curated
                    hits = all_gap.get((key[0], key[1], gap), [])
            else:
                hits = [d for d in by_ent.get(ent, ()) if d.g0 + tol < t < d.g1 - tol]
            if hits:
                add("operation", f"{g['group_id']}/o{k:03d}", None,
                    f"{op['type']}({', '.join(op['args'])}) {side} at {t}", fx,
                    _why(args[-1] if args else None), hits)
    for atom, prov in sorted(facts.items()):
        if atom[0] != "at" or atom[1] not in first_assoc:
            continue
        # the initial fact says where the object is before anything happens: the gap
        # before the first track of its (first) association
        hits = by_gap.get((*first_assoc[atom[1]], 0), [])
        if hits:
            add("initial_fact", f"at({atom[1]})", None, f"initial at({atom[1]}, {atom[2]})", atom[2],
                _why(prov), hits)
    for t in tasks:
        t_end = max((op["provenance"]["refs"]["time"] for op in group_recs[t["last"]]["operations"]),
                    default=0.0)
        for c in t["conditions"]:
            # one record per condition: a condition no row speaks to says so (passed)
            if c["kind"] != "atom" or c["atom"][0] != "at":
                what = (f"{c['atom'][0]}({', '.join(c['atom'][1:])})" if c["kind"] == "atom" else
                        f"event {c['event']['type']}({', '.join(a or '*' for a in c['event']['args'])})")
                checks.append({"kind": "condition", "id": t["task_id"], "condition_id": c["id"], "passed": True,
                               "detail": f"condition {what}: not a place, no location row speaks to it "
                                         "(not checked)"})
                continue
            tw = t["provenance"]["conditions"][c["id"]]["refs"]["time"]
            hits = [d for d in by_ent.get(c["atom"][1], ()) if d.g0 - tol <= max(t_end, tw) and d.g1 - tol > tw]
            text = f"condition at({', '.join(c['atom'][1:])}) from {tw} to the task's end {t_end}"
            if hits:
                add("condition", t["task_id"], c["id"], text, c["atom"][2], "observed", hits)
            else:
                checks.append({"kind": "condition", "id": t["task_id"], "condition_id": c["id"], "passed": True,
                               "detail": f"{text}: no row of its videos decides that place then (not checked)"})
    return RowAudit(rows, len(contested), checks)


def place_of(facts: frozenset, ent: str, depth: int = 0) -> str | None:
    """Where ``ent`` stands in ``facts``: its ``at`` fixture, ``"the hand"`` when held, or
    the place of the container it is ``in`` (a fixture itself when nothing places it)."""
    for a in facts:
        if a[1:2] == (ent,) and a[0] in ("at", "holding"):
            return a[2] if a[0] == "at" else "the hand"
    for a in sorted(facts):
        if a[0] == "in" and a[1] == ent and depth < 3:
            return place_of(facts, a[2], depth + 1) or a[2]
    return None


def audit_states(ds: list[Decision], amb: list[tuple], objects: dict, facts: frozenset,
                 group_recs: list, sim, index: dict) -> list[dict]:
    """Checks of the **replayed state** (issue 34): the reference operations replayed from
    the initial ``facts`` must leave each deciding row's object where the row puts it.
    A put answer or a move's 'to' is checked when the hand is first free after the
    track's end (two frames on; the one hand may be holding something else then), a take
    answer or a move's 'from' at the end of the gap (just before the compiled pick-up of
    the next track, else just before that track's start), and either at the latest there:
    an object whose last track the one-hand model dropped, left where an earlier put-down
    put it, contradicts the itinerary's final 'to' although no operation names it. An
    ambiguous row (every candidate a world entity, the answer a scene fixture) says one of
    its objects stood there: a candidate agrees when every gap the row gives it agrees,
    and when none does, the row contradicts the compiled world whatever the binding.
    Entries ``{kind: "state", id, condition_id, passed, detail}`` (``id``
    ``<question>/<entity>/g<gap>``, ``.../g<gap>/before`` for a take answer or a move's 'from',
    an ambiguous row's ``<question>/ambiguous``)."""
    keep, _ = uncontested(ds)
    ops = [op for g in group_recs for op in g["operations"]]
    times = [op["provenance"]["refs"]["time"] for op in ops]
    track_at = {(v, a, k): t for (v, a, t), k in index.items()}
    take_op: dict = {}
    for i, op in enumerate(ops):
        args = op["provenance"]["refs"].get("args", [])
        key = _track_key(args[0] if args else None)
        if op["type"] in TAKE_TYPES and key is not None and op["provenance"]["refs"].get("rule") is None:
            take_op.setdefault(key, i)
    tol = TWO_FRAMES
    # one replay, every state kept by position (states share their atoms)
    states, free = [facts], [("hand-empty",) in facts]
    f = facts
    for op in ops:
        ok, _, nf = sim.apply(objects, f, {"type": op["type"], "args": op["args"]})
        f = nf if ok else f
        states.append(f)
        free.append(("hand-empty",) in f)

    def first_after(tc: float) -> int:
        return next((i for i, t in enumerate(times) if t > tc), len(ops))

    def position(d: Decision) -> int | None:
        """How many operations are applied when ``d`` is checked; ``None`` for an empty gap."""
        if d.g1 <= d.g0:
            return None
        half = min(tol, (d.g1 - d.g0) / 2)
        tid = track_at.get((d.video, d.assoc, d.gap))
        i = take_op.get((d.video, d.assoc, tid)) if tid is not None else None
        end = i if i is not None else first_after(d.g1 - half)
        if d.side == "before":
            return end
        p = first_after(d.g0 + half)
        while p < end and not free[p]:
            p += 1
        while 0 < p < end and times[p] <= times[p - 1] + 0.002:
            p += 1                      # every operation of the moment the hand frees
        return min(p, end)

    out = []
    for d in keep:
        p = position(d)
        if p is None:
            continue
        got = place_of(states[p], d.entity)
        when = times[p - 1] if p else 0.0
        # an itinerary decides a middle gap from both sides (a move's 'to', the next one's
        # 'from'): the 'from' check is a record of its own, so its ID says the side
        side = "/before" if d.side == "before" else ""
        out.append({"kind": "state", "id": f"{d.qid}/{d.entity}/g{d.gap}{side}", "condition_id": None,
                    "passed": got == d.fixture,
                    "detail": f"replayed place of {d.entity} {'after' if d.side == 'after' else 'before'} its "
                              f"track (gap {d.g0}-{d.g1}, after the operation at {when}): {got}; "
                              + ("agrees with " if got == d.fixture else "CONTRADICTED by ")
                              + f"{d.row} ({d.phrase!r}: {d.fixture})"})
    decided = {(d.video, d.assoc, d.gap): d.fixture for d in keep}
    for row in amb:
        per: dict = {}
        d0 = row[0]
        against = sorted({d.entity for d in row if decided.get((d.video, d.assoc, d.gap), d.fixture) != d.fixture})
        if len(against) == len({d.entity for d in row}):
            # every candidate is placed elsewhere by an unambiguous row: the rows disagree
            # (contested, as two rows deciding one gap differently), and it decides nothing
            out.append({"kind": "state", "id": f"{d0.qid}/ambiguous", "condition_id": None, "passed": True,
                        "detail": f"ambiguous {d0.row}: contested, an unambiguous row places every "
                                  f"candidate elsewhere ({', '.join(against)}); not checked"})
            continue
        for d in row:
            p = position(d)
            if p is not None:
                per.setdefault(d.entity, []).append((d, place_of(states[p], d.entity)))
        if not per:
            continue
        ok = any(all(got == d.fixture for d, got in xs) for xs in per.values())
        out.append({"kind": "state", "id": f"{d0.qid}/ambiguous", "condition_id": None, "passed": ok,
                    "detail": f"ambiguous {d0.row}, {len(per)} candidates, replayed: "
                              + "; ".join(f"{e} " + ", ".join(f"g{d.gap} {got} (row: {d.fixture})" for d, got in xs)
                                          for e, xs in per.items())
                              + (": one candidate agrees" if ok else ": CONTRADICTED, no candidate agrees")})
    return out


class RowContradiction(RuntimeError):
    """A compiled fact contradicted by an unambiguous raw row: the compile writes nothing."""


def refuse_contradictions(results: dict) -> None:
    """Raise :class:`RowContradiction` naming the first contradictions of ``{episode:
    RowAudit}``. 0 are allowed: a curated fallback yields to the row deciding it
    (``worlds.ROW_RULE``), so a contradiction left is a compiler bug, not a fact to drop."""
    bad = [(eid, c) for eid, r in sorted(results.items()) for c in r.contradictions]
    if bad:
        raise RowContradiction(
            f"row audit: {len(bad)} compiled facts contradicted by an unambiguous raw row; nothing "
            "written. First: " + "; ".join(f"{eid} {c['id']}: {c['detail']}" for eid, c in bad[:3]))


CHECK_OF = {"operation": "row_operation", "initial_fact": "row_initial_fact", "condition": "row_condition",
            "state": "row_state"}


def row_audit_records(results: dict) -> list[dict]:
    """Audit records (docs/FORMAT.md, audit.jsonl) from ``{episode: RowAudit}``: one per
    checked fact (``row_operation`` with ``task_id`` ``<group>/o<k>``, ``row_initial_fact``
    with ``<episode>/at(<entity>)``, ``row_condition`` with the task and condition), one
    ``row_rows`` per episode (the rows read, informational) and one ``row_audit`` total
    (``task_id`` null; passed when no checked fact is contradicted)."""
    out = []
    total: Counter = Counter()
    bad: Counter = Counter()
    unchecked: Counter = Counter()
    rows_all: Counter = Counter()
    contested = 0
    for eid in sorted(results):
        r = results[eid]
        for c in r.checks:
            ident = c["id"] if c["kind"] not in ("initial_fact", "state") else f"{eid}/{c['id']}"
            out.append({"check": CHECK_OF[c["kind"]], "task_id": ident, "condition_id": c["condition_id"],
                        "passed": c["passed"], "detail": c["detail"]})
            total[c["kind"]] += 1
            bad[c["kind"]] += not c["passed"]
            unchecked[c["kind"]] += c["detail"].endswith("(not checked)") or "contested" in c["detail"]
        rows_all += r.rows
        contested += r.contested
        out.append({"check": "row_rows", "task_id": eid, "condition_id": None, "passed": True,
                    "detail": _rows_text(r.rows, r.contested)})
    n_bad = sum(bad.values())
    out.append({"check": "row_audit", "task_id": None, "condition_id": None, "passed": n_bad == 0,
                "detail": (f"{n_bad} contradictions with an unambiguous raw row: "
                           + ", ".join(f"{bad[k]} of {total[k]} {k.replace('_', ' ')}s checked"
                                       + (f" ({unchecked[k]} not checked: no row decides them)" if unchecked[k] else "")
                                       for k in CHECK_OF) + "; rows: " + _rows_text(rows_all, contested))})
    return out


def _rows_text(rows: Counter, contested: int) -> str:
    keys = ("decided", "ambiguous", "no_candidate", "not_an_entity", "fixture_not_in_scene")
    return ", ".join(f"{k.replace('_', ' ')} {rows.get(k, 0)}" for k in keys) + \
        f" (location rows and itineraries of the episodes' videos); contested decisions {contested}"


def _why(prov: dict | None) -> str:
    if not prov:
        return "unknown"
    if prov.get("source") == "observed":
        return "observed " + " ".join(str(prov.get("refs", {}).get(k, "")) for k in ("file", "id")).strip()
    return "curated " + str(prov.get("refs", {}).get("rule", ""))

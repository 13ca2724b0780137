"""A condition's evidence lies in its unit (paper section 3: frozen terminal-state
conditions "when supported by evidence"; docs/compiler.md, "Tasks"): whether an end state
an operation established is observed in each argument, is final in the unit (not moved,
renamed or cut later), and is not evidence from before the unit; the condition's
provenance. Used by :mod:`analysis.compiler.tasks`."""
from __future__ import annotations

import re

from .normalise import fixture_id


def _arg_refs(op) -> list[dict]:
    return op.provenance["refs"].get("args", [])


def _cond_prov(op, keep) -> dict:
    """A condition's provenance: the witnessing operation's time and the provenance of
    every argument it keeps (``keep``: argument indices)."""
    args = [a for k, a in enumerate(_arg_refs(op)) if k in keep]
    src = "observed" if args and all(a["source"] == "observed" for a in args) else "curated"
    return {"source": src, "refs": {"operation": op.action["type"], "time": op.time, "args": args}}


def _atom_keep(op, atom) -> list[int] | None:
    """Argument indices of ``op`` that observe each argument of ``atom``, or ``None``
    when some argument of the atom is not an observed argument of the operation. A
    transfer's ``in`` keeps its source too (the container the binding rests on)."""
    args, refs = op.action["args"], _arg_refs(op)
    keep = [1] if atom[0] == "in" and op.action["type"] in ("pour", "empty_into") \
        and refs[1]["source"] == "observed" else []
    for x in atom[1:]:
        ks = [k for k, a in enumerate(args) if a == x and refs[k]["source"] == "observed"]
        if not ks:
            return None
        keep.append(ks[0])
    return sorted(set(keep))


def _moves_again(world, atom, op, until: float) -> bool:
    """Whether the object of ``at(o, f)``, put down by ``op``, has another track in the
    rows (compiled or not: one the one-hand model dropped counts) that starts after the
    put-down and before ``until``: then the placement is an intermediate state."""
    o = atom[1]
    return any(tr.entity == o and op.time + 1e-6 < tr.start < until for tr in world.tracks)


def _may_move_renamed(world, atom, op, until: float) -> bool:
    """Whether an object of the same type as ``at(o, f)``'s, one no identity links to an
    earlier video (``worlds.IDENTITY_RULE`` needs the same name), has a track in a later
    video of the episode after the put-down and before ``until``: annotators name objects
    per video, so it may be ``o`` under another name ("bowl" in one video, "porridge bowl"
    in the next: ``P05-20240426-085333``, step S02 of ``P05_R02`` over three videos) and
    the placement may be an intermediate state. Not an end state, then."""
    o = atom[1]
    video = max((v for v in world.videos if world.offsets.get(v, 0.0) <= op.time + 1e-6),
                key=lambda v: world.offsets.get(v, 0.0), default=None)
    later = {v for v in world.videos if world.offsets.get(v, 0.0) > world.offsets.get(video, 0.0)}
    return bool(later) and any(tr.assoc.video in later and tr.entity != o and op.time < tr.start < until
               and world.objects.get(tr.entity) == world.objects.get(o)
               and f"{tr.assoc.video}/{tr.assoc.assoc_id}" not in world.identities
               for tr in world.tracks)


_CUT_RE = re.compile(r"^(?:.*\s)?(?:half|halves|slice|slices|piece|pieces|quarter|quarters|wedge|wedges|"
                     r"chunk|chunks|segment|segments)\s+of\s+(.+)$")


def _cut_later(world, atom, op, until: float, vocab) -> bool:
    """Whether ``at(o, f)``'s object, a food, is cut after the put-down and before
    ``until``: a track starts then whose name is a part of it ("left half of third orange"
    of the "third orange" put down at 254.97 s and cut at once): the whole food's
    placement is an intermediate state, its halves are what the unit leaves (a piece cut
    off a roll of baking paper leaves the roll where it is)."""
    names = {re.sub(r"\s+", " ", n.strip().lower()) for n in getattr(world, "names", {}).get(atom[1], ())}
    if not names or not vocab.is_a(world.objects.get(atom[1], ""), "food"):
        return False
    for tr in world.tracks:
        if not op.time + 1e-6 < tr.start < until:
            continue
        m = _CUT_RE.match(re.sub(r"\s+", " ", (tr.assoc.name or "").strip().lower()))
        if m and m.group(1) in names:
            return True
    return False


_MOVE_RE = re.compile(r"from (.+?) to (.+?)(?=, then from |$)")


def _move_may_precede(world, op, since: float) -> bool:
    """Whether the put-down ``op`` rests on an itinerary's final 'to' whose move may precede
    the unit (``since``: its start, episode time), so that the rows may already have the
    object there when the unit starts. The itinerary has fewer moves than the object has
    tracks, so any track from the n-th on (the *window*) may have made the final move; the
    later tracks are handlings in place. The move lies in the unit when the rows show that

    * the final arrival is after ``since``: no window track ends before it, the window
      starting after the last track whose observed destination (a VQA answer, or the next
      track's observed origin) is not the final 'to' (the object left such a track
      elsewhere, so the final move comes later), and
    * the object is not at the final 'to' at ``since``: the itinerary never has it there
      before its final move (the 'to' is no move's 'from'), or a track of the object spans
      ``since`` (it is in the hand), or the window starts after a track with such an
      observed destination that ended by ``since`` (it stood elsewhere).

    >>> from types import SimpleNamespace as NS
    >>> tr = lambda k, a, b, dst=None, src=None: NS(entity="mug", track_id=f"t{k}", start=a, end=b,
    ...     dst=dst, src=src, assoc=NS(video="v", assoc_id="m"))
    >>> def put(froms, tracks, since):
    ...     w = NS(offsets={"v": 0.0}, tracks=tracks)
    ...     moves = ", then ".join(f"from {f} to {t}" for f, t in froms)
    ...     o = NS(action={"args": ["mug", "sink"]}, provenance={"refs": {"args": [
    ...         {"refs": {"file": "assoc_info.json", "id": f"v/m/{tracks[-1].track_id}"}},
    ...         {"refs": {"video": "v", "final_move_possible_from": tracks[0].start, "answer": moves}}]}})
    ...     return _move_may_precede(w, o, since)
    >>> put([("hob", "sink")], [tr(1, 0, 5), tr(2, 50, 60)], 40)       # track 1 may have moved it
    True
    >>> put([("hob", "sink")], [tr(1, 30, 45), tr(2, 50, 60)], 40)     # every window track ends later
    False
    >>> put([("sink", "hob"), ("hob", "sink")], [tr(1, 30, 45), tr(2, 50, 60)], 40)  # in the hand at 40
    False
    >>> put([("sink", "hob"), ("hob", "sink")], [tr(1, 30, 35), tr(2, 50, 60)], 40)  # at the sink at 40?
    True
    >>> put([("sink", "hob"), ("hob", "sink")], [tr(1, 30, 35, dst="hob"), tr(2, 50, 60)], 40)
    False
    """
    refs = op.provenance["refs"].get("args", [{}, {}])
    ref = refs[1].get("refs", {})
    t = ref.get("final_move_possible_from")
    if t is None:
        return False
    off = world.offsets.get(ref.get("video"), 0.0)
    if t + off >= since - 1e-6:
        return False
    # without the object's tracks the window cannot be narrowed: the move may precede
    parts = str(refs[0].get("refs", {}).get("id", "")).split("/")
    tracks = sorted((tr for tr in getattr(world, "tracks", ()) if len(parts) == 3
                     and tr.assoc.video == parts[0] and tr.assoc.assoc_id == parts[1]), key=lambda tr: tr.start)
    k = next((i for i, tr in enumerate(tracks) if abs(tr.start - (t + off)) < 1e-3), None)
    if k is None or tracks[-1].track_id != parts[2]:
        return True
    to = op.action["args"][1]
    # the final move comes after every track the rows leave elsewhere than the final 'to'
    for i in range(k, len(tracks) - 1):
        nxt = tracks[i + 1]
        if (tracks[i].dst is not None and tracks[i].dst != to) or (nxt.src is not None and nxt.src != to):
            k = i + 1
    window = tracks[k:]
    if any(tr.end < since - 1e-6 for tr in window):
        return True
    froms = {fixture_id(f) for f, _ in _MOVE_RE.findall(str(ref.get("answer", "")))}
    held = any(tr.start - 1e-6 <= since <= tr.end + 1e-6 for tr in tracks)
    elsewhere = k > 0 and tracks[k - 1].end <= since + 1e-6 and (
        (tracks[k - 1].dst is not None and tracks[k - 1].dst != to)
        or (tracks[k].src is not None and tracks[k].src != to))
    return not (to not in froms or held or elsewhere)


def _track_span(op) -> tuple[float, float] | None:
    """The episode-time span of the track ``op`` (a put-down, a snippet's item) acts on:
    its first argument's ``assoc_info.json`` reference, else ``None``."""
    args = _arg_refs(op)
    r = args[0].get("refs", {}) if args else {}
    if r.get("file") != "assoc_info.json" or "start" not in r or "end" not in r:
        return None
    off = r.get("offset", 0.0)
    return r["start"] + off, r["end"] + off


#: a step text that takes a food out of its vessel ("remove it from the pan", "transfer
#: to a plate", "drain"; serving carries the vessel, its food still in it)
REMOVING = re.compile(r"\b(?:remove|take \w+ out|take out|transfer|drain|empty|tip|scoop out|lift out)\b",
                      re.IGNORECASE)


#: the unit's own step text taking the food it added out again ("Mix well and pour the
#: mixture onto a baking tray", "drain", "transfer to a plate"): "remove" alone is not,
#: "remove the pan from the heat" carries the vessel, its food still in it
OWN_REMOVING = re.compile(r"\b(?:pour (?:the |this )?(?:mixture|batter|contents|it|them)\b|transfer|drain|"
                          r"tip (?:out|it|them)\b|scoop out|lift out|take (?:it |them )?out|remove (?:it|them)\b)",
                          re.IGNORECASE)


def _emptied_between(world, atom, op, until: float, spans, others, own: str = "") -> bool:
    """Whether ``in(f, v)``, set by the add ``op``, may be undone before ``until`` (the
    unit's end) by a step that takes food out: by another step when ``v`` is handled by a track that starts after the add and
    before ``until``, lies mostly outside the unit's own ``spans``, and overlaps a segment
    of another step of the recipe (``others``: ``(start, end, text)``) whose text takes
    food out (:data:`REMOVING`). P04_R05's S05 "remove it from the pan" lifts the dosa pan
    between the two dosas of the scattered S04: the first dosa is no end state of S04.
    Handling inside the unit's own spans is the unit's own, and another step that adds
    or stirs takes nothing out.

    >>> from types import SimpleNamespace as NS
    >>> w = NS(tracks=[NS(entity="pan", start=50.0, end=60.0), NS(entity="pan", start=12.0, end=14.0)])
    >>> add, spans = NS(time=11.0), [(10.0, 20.0), (80.0, 90.0)]
    >>> _emptied_between(w, ("in", "dosa", "pan"), add, 90.0, spans, [(45.0, 65.0, "Remove it from the pan")])
    True
    >>> _emptied_between(w, ("in", "dosa", "pan"), add, 90.0, spans, [(45.0, 65.0, "Add the onions")])
    False
    >>> _emptied_between(w, ("in", "dosa", "pan"), add, 40.0, [(10.0, 40.0)], [])    # its own stir
    False
    >>> _emptied_between(w, ("in", "oil", "pan"), add, 40.0, [(10.0, 40.0)], [], "Mix and pour the mixture out")
    True

    The unit's ``own`` step text counts too when it takes the food out again
    (:data:`OWN_REMOVING`: P07_R07 S02 "Mix well and pour the mixture onto a baking tray"
    lifts the bowl the oil went into), for a track anywhere after the add.
    """
    v, own_takes = atom[2], bool(own and OWN_REMOVING.search(own))
    for tr in world.tracks:
        if tr.entity != v or not op.time + 1e-6 < tr.start < until:
            continue
        if own_takes:
            return True
        inside = sum(max(0.0, min(tr.end, b) - max(tr.start, a)) for a, b in spans)
        if inside < (tr.end - tr.start) / 2 and any(a < tr.end and tr.start < b and REMOVING.search(text)
                                                    for a, b, text in others):
            return True
    return False


def _before_unit(op, spans) -> bool:
    """Whether the track behind ``op`` lies mostly before its unit: more than half of it
    precedes the start of the unit's own span (``spans``: ``(start, end)`` in episode time,
    a step's segments or a row's span) that the track ends in or after, so the object was
    handled (and may have been put where it ends) before the unit began: no evidence of
    what the unit did (issue 34: "a track mostly before the unit's start gives none").

    >>> from types import SimpleNamespace as NS
    >>> op = lambda a, b: NS(provenance={"refs": {"args": [{"refs": {
    ...     "file": "assoc_info.json", "start": a, "end": b}}]}})
    >>> _before_unit(op(0.0, 12.0), [(10.0, 20.0)]), _before_unit(op(8.0, 12.0), [(10.0, 20.0)])
    (True, False)
    >>> _before_unit(op(35.0, 52.0), [(10.0, 20.0), (50.0, 60.0)])    # the later segment's
    True
    """
    span = _track_span(op)
    if span is None or not spans:
        return False
    t0, t1 = span
    starts = [a for a, _ in spans if a <= t1 + 1e-6]
    s0 = max(starts) if starts else min(a for a, _ in spans)
    before = max(0.0, min(t1, s0) - t0)
    return before > 0.5 * (t1 - t0) + 1e-9 if t1 > t0 else t0 < s0 - 1e-6


def _add_row(op, atom) -> tuple | None:
    """The add row behind an ``in`` end state ``atom`` that ``op`` establishes from a grounded
    add (``(recipe, ingredient, video, start)``), else ``None``.

    >>> from types import SimpleNamespace as NS
    >>> p = NS(kind="add", refs={"recipe": "R", "ingredient": "I", "video": "v", "start": 2.0})
    >>> _add_row(NS(planned=p), ("in", "egg2", "bowl")), _add_row(NS(planned=None), ("in", "egg2", "bowl"))
    (('R', 'I', 'v', 2.0), None)
    """
    p = op.planned
    if atom[0] != "in" or p is None or p.kind != "add":
        return None
    r = p.refs
    return r.get("recipe"), r.get("ingredient"), r.get("video"), r.get("start")


def _event_keep(op, world) -> list[int] | None:
    """Wildcard argument indices of a key event (unobserved fixtures), or ``None`` when a
    non-fixture argument is unobserved (no event condition)."""
    refs = _arg_refs(op)
    nulls = [k for k, a in enumerate(refs) if a["source"] != "observed"
             and op.action["args"][k] in world.fixture_ids]
    if any(a["source"] != "observed" for k, a in enumerate(refs) if k not in nulls):
        return None
    return nulls

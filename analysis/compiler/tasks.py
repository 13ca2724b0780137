"""Goal-aligned tasks: one task per source unit, its contract the conjunction of every
observed end state the unit produced (issue 18).

A *unit* is what a person set out to do in one unit of the source, never split and
never merged: a recipe step with its prep segments (every segment of the step, however
often the person came back to it), or, outside every step, an activity row of
``PXX_recipe_timestamps.csv`` (every track group inside that row). A step's task holds
only its own segments' groups (its segments may lie far apart: the groups between them
are other units'); a row's task spans its groups from the first to the last; the recipe
steps inside an activity row are units
of their own, and what their groups establish is theirs, not the row's. Groups outside
every activity row belong to no unit and give no task.

A unit's conditions, each resting on observed evidence only:

* **end states** (atoms TRUE after the unit's last group whose last establishing
  operation is one of the unit's own groups, so an intermediate state the unit later
  changed is not one, and that is FALSE in the reference state at the task's start and
  in the episode's initial world, so a planner that does nothing never meets it): every
  ``in`` an observed add or transfer established (``in(squash, glass_2)``), every ``at``
  an observed put-down established (destination from a VQA answer or an itinerary), and
  every appliance or container state (``powered``, ``open``, ``capped``, ``covered``,
  ``running``) an observed operation established, one per operation and object (a button
  press that sets ``powered`` and ``running`` gives ``powered``). An atom counts only when each of its
  arguments is an observed argument of the operation that last established it.
* **key events**: the unit's grounded key actions (stir, chop, press_button, ...; for an
  activity row, the verbs of its label, grounding.Grounder.ground_rows), an unobserved
  fixture argument a wildcard (``null``). A fine-grained snippet's operation (tap a
  spoon, close a bottle: :mod:`analysis.compiler.grounding.snippets`) is never one: it is handling
  on the way, and gives only the end states it leaves on an item (``capped``, when the
  item has no later track in the unit: a cap changes only in the hand); a hob or tap it
  switches gives none (it may be switched back unobserved).

The paper's rule decides the tier: *terminal* when the unit's goal is an end state in a
represented attribute (a grounded add or transfer, or, for an activity row, the observed
placements), with every end state as a condition; *event* when the step's goal is an
action whose result is not a represented end state (a stir, a chop, a button press): its
key events first, then the unit's observed end states. ``c1`` is the first condition FALSE
at the unit's start and in the episode's initial world. A condition's evidence lies in its
unit: none rests on an itinerary's final 'to' whose move may precede the unit
(:func:`_move_may_precede`) or on a track lying mostly before it (:func:`_before_unit`). Two units of an episode with the same condition set give
one task (the first); the second is rejected (``duplicate_condition_set``).

>>> sorted(END_PREDICATES)
['at', 'capped', 'covered', 'in', 'open', 'powered', 'running']
"""
from __future__ import annotations

import re

from .grounding import title_of
from .normalise import fixture_id

END_PREDICATES = {"in", "at", "open", "powered", "running", "capped", "covered"}
GOAL_ATOM_PREDICATES = {"in", "powered"}     # what an add, a transfer or a switch-on is for
MOVE_TYPES = {"navigate", "open_storage", "close_storage", "open_appliance", "close_appliance"}
# Retrieving and setting down items: logistics any plan needs, not what a step asks for.
HANDLING_TYPES = {"pick_up", "pick_up_from_appliance", "take_from_storage", "take_from_sink",
                  "take_from_appliance", "take_out_of_container", "put_on", "put_in_storage",
                  "put_in_sink", "place_on_appliance", "put_in_appliance", "throw_away"}
PREDICATE_RANK = {"in": 0, "at": 1}     # every state predicate ranks 2


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


def unit_of(seg, activities) -> tuple | None:
    """The source unit of a group's segment: ``("step", recipe, steps)`` for every step
    and prep segment of one recipe step (all its segments, in every video of the episode:
    the person returning to a step is still doing that step), ``("activity", row, ...)``
    for a track segment inside an activity row (the whole row: the recipe steps inside it
    are units of their own, and its contract keeps only what the row's own groups left
    in place), ``None`` outside every row."""
    if seg.kind in ("step", "prep"):
        return ("step", seg.recipe, tuple(seg.steps))
    hits = [a for a in activities if a.video == seg.video and a.start - 1e-9 <= seg.start
            and seg.end <= a.end + 1e-9]
    if not hits:
        return None
    a = sorted(hits, key=lambda a: (-a.start, a.label))[0]
    return ("activity", a.source_row, a.label, a.video, a.start, a.end)


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


def unit_key(u) -> str:
    """A unit's key as ``bench/evidence_ceiling.py`` and the ledger name it:
    ``<recipe>/<step>`` or the activity row's ``<file>:<line>``.

    >>> unit_key(("step", "P01_R01", ("P01_R01_S05",))), unit_key(("activity", "P01.csv:7", "x", "v", 0, 1))
    ('P01_R01/P01_R01_S05', 'P01.csv:7')
    """
    return f"{u[1]}/{','.join(u[2])}" if u[0] == "step" else u[1]


def unit_tasks(episode_id: str, world, groups, group_recs, builder, op_group, activities,
               sim, objects, states, segments=(), ledger: dict | None = None
               ) -> tuple[list[dict], list[dict], list[dict]]:
    """``(candidates, rejected, dropped)`` of one episode (see the module docstring;
    ``dropped``: the end states left out because they hold at the task's start); ``segments``
    are every recipe step and prep segment of the episode (``groups.episode_segments``),
    so that a step's card lists the segments no operation was compiled in too. ``ledger``,
    when given, is filled per unit key (:func:`unit_key`) with what
    :mod:`analysis.compiler.ledger` needs: the unit's own spans, its candidate task (or why
    none) and every end state left out with its reason code."""
    ops = builder.out.ops
    ops_of: dict[int, list] = {}
    for k, op in enumerate(ops):
        ops_of.setdefault(op_group[k], []).append(op)
    members: dict[tuple, list[int]] = {}
    for i, g in enumerate(groups):
        u = unit_of(g["seg"], activities)
        if u is not None:
            members.setdefault(u, []).append(i)
    members = {u: sorted(gs) for u, gs in members.items()}
    units = sorted(((u, gs[0], gs[-1], set(gs)) for u, gs in members.items()), key=lambda x: (x[1], x[2]))
    out, rejected, seen = [], [], {}
    held_at_start: list[tuple] = []     # (first group, atom, operation) of end states held at the start
    left_out: list[dict] = []           # adds of a step unit whose in() is no condition (dropped.jsonl)
    init = states[-1]
    for u, first, last, mine in units:
        start, end = states[first - 1], states[last]
        f = start
        by: dict[tuple, object] = {}
        goal_ops, key_ops = [], []
        for i in range(first, last + 1):
            for op in ops_of.get(i, []):
                ok, _, nf = sim.apply(objects, f, op.action)
                if not ok:
                    continue
                added = nf - f
                p = op.planned
                # a snippet samples one moment: a hob or tap it switches may be switched back
                # unobserved (no track shows it), so the state it sets is no end state
                sampled = p is not None and p.kind == "snippet" and op.action["args"][0] in world.fixture_ids
                for atom in added:
                    # None: produced by another unit's group, or a sampled fixture state
                    by[atom] = op if i in mine and not sampled else None
                f = nf
                # a snippet's operation is observed handling, not the unit's key action:
                # it gives end states (a bottle left capped), never the goal or an event
                if p is not None and i in mine and p.kind != "snippet":
                    goal = p.kind == "add" or any(a[0] in GOAL_ATOM_PREDICATES for a in added)
                    (goal_ops if goal else key_ops).append(op)
        atoms = []
        info = {"unit": u, "spans": [], "task": None, "why": None, "skipped": [], "groups": sorted(mine),
                "witnesses": {}}
        if ledger is not None:
            ledger[unit_key(u)] = info
        skip = lambda atom, code: info["skipped"].append((atom, by[atom], code))  # noqa: E731
        # every atom the unit's own groups last established and that still holds at the
        # unit's end (one that also held before the unit, such as the pan taken from the
        # sink, used and put back there, is dropped below: it gives free credit)
        if u[0] == "step":
            own = [x for x in segments if x.recipe == u[1] and tuple(x.steps) == u[2]]
            until = max([x.end for x in own] + [groups[i]["seg"].end for i in mine])
            since = min([x.start for x in own] + [groups[i]["seg"].start for i in mine])
            spans = sorted({(x.start, x.end) for x in own} | {(groups[i]["seg"].start, groups[i]["seg"].end)
                                                               for i in mine if groups[i]["seg"].kind != "track"})
        else:
            until, since = u[5], u[4]
            spans = [(since, until)]
        info["spans"] = spans
        for atom in sorted(a for a in end if by.get(a) is not None):
            if atom[0] not in END_PREDICATES:
                continue
            if atom[0] == "at" and (_moves_again(world, atom, by[atom], until)
                                    or _may_move_renamed(world, atom, by[atom], until)
                                    or _cut_later(world, atom, by[atom], until, sim.vocab)):
                skip(atom, "intermediate")
                continue
            if atom[0] in ("capped", "covered") and _moves_again(world, atom, by[atom], until):
                skip(atom, "intermediate")
                continue     # handled again in the unit: it may have been opened again
            if atom[0] == "at" and _move_may_precede(world, by[atom], since):
                # TRUE at the unit's end either way (the final 'to'), but the move may
                # precede the unit, so it may already hold at its start in the rows: no
                # condition at all (a planner could meet it for free), not only never c1
                skip(atom, "move_may_precede_unit")
                continue
            if by[atom].planned is None and _before_unit(by[atom], spans):
                # the object's track lies mostly before the unit: where it is put down is
                # not evidence of what the unit did (a grounded add or key action rests on
                # its own row, timed in the unit)
                skip(atom, "evidence_before_unit")
                continue
            keep = _atom_keep(by[atom], atom)
            if keep is None:
                skip(atom, "argument_not_observed")
                continue
            atoms.append((PREDICATE_RANK.get(atom[0], 2), ops.index(by[atom]), atom, keep))
        # no free credit: an end state that already holds when the task starts (an object
        # used and put back where it was), or in the episode's initial world (an object an
        # earlier unit took out and this one puts back: a planner that never took it out
        # finds it there), is met by a planner that does nothing, so it is no condition; it
        # is listed in dropped.jsonl (kind ``condition``) with its reason
        for a in [a for a in atoms if a[2] in start or a[2] in init]:
            atoms.remove(a)
            held_at_start.append((first, a[2], by[a[2]], a[2] in start))
            skip(a[2], "true_at_task_start" if a[2] in start else "true_in_initial_world")
        atoms.sort()
        # one observed end state, one condition: two state atoms one operation set on the
        # same object (``powered`` and ``running`` from one button press) count once, and
        # so do the instances one add row put in (three tracked eggs of one "eggs" add: the
        # row records one end state, the ingredient in its vessel; the first is the condition)
        seen_state: set = set()
        seen_rows: set = set()
        kept = []
        for a in atoms:
            if a[0] == 2:
                k = (a[1], a[2][1:])
                if k in seen_state:
                    skip(a[2], "same_operation_state")
                    continue
                seen_state.add(k)
            row = _add_row(by[a[2]], a[2])
            if row is not None:
                if row in seen_rows:
                    skip(a[2], "same_add_row")
                    continue
                seen_rows.add(row)
            kept.append(a)
        atoms = kept
        if u[0] == "step":
            left_out += _adds_left_out([op for i in sorted(mine) for op in ops_of.get(i, [])], by, end,
                                       start, init, atoms, group_recs[first]["group_id"])
        goal = [a for a in atoms if a[2][0] in GOAL_ATOM_PREDICATES and by[a[2]].planned is not None]
        events = []
        for op in key_ops:
            if op.action["type"] in MOVE_TYPES | HANDLING_TYPES:
                continue
            nulls = _event_keep(op, world)
            if nulls is None:
                continue
            ev = {"type": op.action["type"], "args": [None if k in nulls else a
                                                        for k, a in enumerate(op.action["args"])]}
            if ev not in [e for e, _, _ in events]:
                events.append((ev, op, [k for k in range(len(op.action["args"])) if k not in nulls]))
        if goal or (not events and atoms):
            tier = "terminal"
            conds = [{"kind": "atom", "atom": list(a[2])} for a in atoms]
            provs = [_cond_prov(by[a[2]], a[3]) for a in atoms]
            wit = [by[a[2]] for a in atoms]
        elif events:
            tier = "event"
            conds = [{"kind": "event", "event": e} for e, _, _ in events] + [
                {"kind": "atom", "atom": list(a[2])} for a in atoms]
            provs = [_cond_prov(op, keep) for _, op, keep in events] + [
                _cond_prov(by[a[2]], a[3]) for a in atoms]
            wit = [op for _, op, _ in events] + [by[a[2]] for a in atoms]
        else:
            info["why"] = "no_condition"
            continue
        # c1: the first condition that does not already hold at the unit's start (nor in the
        # initial world); a unit whose every end state already held is rejected by admission
        sure = list(range(len(conds)))
        lead = next((n for n in sure if conds[n]["kind"] == "event"
                     or (tuple(conds[n]["atom"]) not in start and tuple(conds[n]["atom"]) not in init)),
                    next((n for n in sure
                          if conds[n]["kind"] == "atom" and tuple(conds[n]["atom"]) not in start), sure[0]))
        order = [lead] + [n for n in range(len(conds)) if n != lead]
        conds = [{"id": f"c{m}", **conds[n]} for m, n in enumerate(order, 1)]
        provs = [provs[n] for n in order]
        info["witnesses"] = {c["id"]: wit[n] for c, n in zip(conds, order)}
        if u[0] == "step":
            segs = sorted({groups[i]["seg"].key: groups[i]["seg"] for i in mine}.values(),
                          key=lambda x: (x.start, x.key))
            seg = next((x for x in segs if x.kind == "step"), segs[0])
            title = title_of(seg.instruction.removeprefix("Prepare for: "))
            local = lambda x, compiled: {
                "kind": x.kind, "video": x.video, "start": round(x.start - world.offsets.get(x.video, 0.0), 5),
                "end": round(x.end - world.offsets.get(x.video, 0.0), 5), "compiled": compiled}
            keys = {x.key for x in segs}
            every = sorted({x.key: x for x in list(segments) + segs
                            if x.recipe == u[1] and tuple(x.steps) == u[2]}.values(),
                           key=lambda x: (x.start, x.key))
            refs = {"file": "complete_recipes.json", "recipe": u[1], "step": ",".join(u[2]),
                    **{k: v for k, v in local(seg, True).items() if k not in ("kind", "compiled")},
                    "segments": [local(x, x.key in keys) for x in every],
                    "unit": "recipe step with its prep segments"}
        else:
            title = title_of(u[2])
            refs = {"file": u[1].split(":")[0], "row": u[1], "label": u[2], "video": u[3],
                    "start": u[4] - world.offsets.get(u[3], 0.0), "end": u[5] - world.offsets.get(u[3], 0.0),
                    "unit": "activity row"}
        cset = frozenset(repr(sorted(c.items()) if c["kind"] == "atom" else c["event"]) for c in
                         [{k: v for k, v in c.items() if k != "id"} for c in conds])
        # a step's task holds only its own segments' groups (a step whose segments lie far
        # apart does not pull in the other units' groups between them); a row's task holds
        # every group from its first to its last (the steps inside it run in its time)
        cand = {"key": ("add" if any(op.planned.kind == "add" for op in goal_ops) else u[0], first),
                "tier": tier, "first": first, "last": last, "title": title, "conditions": conds,
                "groups": sorted(mine) if u[0] == "step" else list(range(first, last + 1)),
                "provenance": {"source": "observed", "refs": refs,
                               "conditions": {c["id"]: pr for c, pr in zip(conds, provs)}}}
        info["task"] = cand
        if cset in seen:
            rejected.append((cand, f"same condition set as the unit at group {seen[cset]}"))
            info["why"] = "duplicate_condition_set"
            continue
        seen[cset] = first
        out.append(cand)
    for c in out + [r[0] for r in rejected]:
        c["group_ids"] = [group_recs[i]["group_id"] for i in c["groups"]]
        c["reference_action_types"] = sorted({op["type"] for i in c["groups"]
                                              for op in group_recs[i]["operations"]})
    out.sort(key=lambda c: (c["first"], c["last"], c["tier"]))
    for n, c in enumerate(out):
        c["task_id"] = f"{episode_id}/t{n:03d}"
        c["episode_id"] = episode_id
    for n, (c, _) in enumerate(rejected):
        c["task_id"] = f"{episode_id}/x{n:03d}"
        c["episode_id"] = episode_id
    dropped = [{"kind": "condition", "what": f"{atom[0]}({', '.join(atom[1:])})",
                "reason": ("true_at_task_start: the end state already holds in the reference state "
                           f"before group {group_recs[first]['group_id']}, where the unit's task starts "
                           "(no free credit)") if at_start else
                          ("true_in_initial_world: the end state holds in the episode's initial world "
                           "(an earlier unit changed it and this one restores it): a planner that "
                           "never changed it meets it for free"),
                "time": op.time, "refs": {"group_id": group_recs[first]["group_id"],
                                          "operation": op.action["type"], "atom": list(atom)}}
               for first, atom, op, at_start in held_at_start] + left_out
    return out, [{"task_id": c["task_id"], "episode_id": episode_id, "reason": "duplicate_condition_set",
                  "detail": f"{c['title']}: {why}"} for c, why in rejected], dropped


#: the add operations and the arguments of the ``in`` they establish (content, vessel)
ADD_IN_ARGS = {"pour": (0, 2), "empty_into": (0, 2), "add_ingredient": (0, 1),
               "put_in_container": (0, 1), "insert": (0, 1)}


def _adds_left_out(unit_ops, by, end, start, init, atoms, group_id) -> list[dict]:
    """``dropped.jsonl`` records (kind ``add``, reason ``not a condition of its unit's task:
    ...``) for the grounded adds of a step unit's groups whose ``in`` is none of the
    unit's end-state atoms ``atoms``, saying why: the unit changes it again, it held at the
    task's start or in the initial world (no free credit), or an argument the condition
    would keep is curated (a vessel merged across videos, placed by a curated rule).
    Every add of a step unit is thus either an ``in()`` of its task or listed with its
    reason (issue 34)."""
    kept = {a[2] for a in atoms}
    out = []
    for op in unit_ops:
        p = op.planned
        if p is None or p.kind != "add" or op.action["type"] not in ADD_IN_ARGS:
            continue
        i, j = ADD_IN_ARGS[op.action["type"]]
        atom = ("in", op.action["args"][i], op.action["args"][j])
        if atom in kept:
            continue
        if atom not in end:
            why = "the unit changes it again before its end (the content moved on)"
        elif atom in start:
            why = "true_at_task_start: it already holds when the unit's task starts (no free credit)"
        elif atom in init:
            why = "true_in_initial_world: it holds in the episode's initial world (no free credit)"
        elif by.get(atom) is None:
            why = "it already held before this add (established by another unit's group)"
        elif by[atom] is not op:
            why = "a later operation of the unit establishes it again (that one is its witness)"
        elif _atom_keep(op, atom) is None:
            refs = _arg_refs(op)
            cur = [f"{a} ({(refs[k].get('refs') or {}).get('rule', 'curated')})"
                   for k, a in enumerate(op.action["args"]) if a in atom[1:]
                   and k < len(refs) and refs[k]["source"] != "observed"]
            why = f"an argument is not observed: {', '.join(cur)}"
        else:
            continue
        out.append({"kind": "add", "what": p.what or f"{op.action['type']}({', '.join(op.action['args'])})",
                    "reason": f"not a condition of its unit's task: in({atom[1]}, {atom[2]}): {why}",
                    "time": op.time, "refs": {**{k: v for k, v in sorted(p.refs.items()) if v is not None},
                                              "group_id": group_id, "atom": list(atom)}})
    return out


def _event_keep(op, world) -> list[int] | None:
    """Wildcard argument indices of a key event (unobserved fixtures), or ``None`` when a
    non-fixture argument is unobserved (no event condition)."""
    refs = _arg_refs(op)
    nulls = [k for k, a in enumerate(refs) if a["source"] != "observed"
             and op.action["args"][k] in world.fixture_ids]
    if any(a["source"] != "observed" for k, a in enumerate(refs) if k not in nulls):
        return None
    return nulls


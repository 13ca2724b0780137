"""Goal-aligned tasks (paper section 3 and appendix A.2: validated groups become
goal-aligned task units with terminal-state or accepted-event conditions): one task per
source unit, its contract the conjunction of every
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
  activity row, the verbs of its label, grounding.rows.ground_rows), an unobserved
  fixture argument a wildcard (``null``). A fine-grained snippet's operation (tap a
  spoon, close a bottle: :mod:`analysis.compiler.grounding.snippets`) is never one: it is handling
  on the way, and gives only the end states it leaves on an item (``capped``, unless the
  item is handled again in the unit and a row shows it opened then: :func:`_reopened`);
  a hob or tap it switches gives none (it may be switched back unobserved).

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

from .evidence import (_add_row, _arg_refs, _atom_keep, _before_unit, _cond_prov, _cut_later,
                       _emptied_between, _event_keep, _may_move_renamed, _move_may_precede, _moves_again)
from .grounding import name_head, title_of, words

END_PREDICATES = {"in", "at", "open", "powered", "running", "capped", "covered"}
GOAL_ATOM_PREDICATES = {"in", "powered"}     # what an add, a transfer or a switch-on is for
MOVE_TYPES = {"navigate", "open_storage", "close_storage", "open_appliance", "close_appliance"}
# Retrieving and setting down items: logistics any plan needs, not what a step asks for.
HANDLING_TYPES = {"pick_up", "pick_up_from_appliance", "take_from_storage", "take_from_sink",
                  "take_from_appliance", "take_out_of_container", "put_on", "put_in_storage",
                  "put_in_sink", "place_on_appliance", "put_in_appliance", "throw_away"}
PREDICATE_RANK = {"in": 0, "at": 1}     # every state predicate ranks 2


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


def unit_key(u) -> str:
    """A unit's key as ``bench/evidence_ceiling.py`` and the ledger name it:
    ``<recipe>/<step>`` or the activity row's ``<file>:<line>``.

    >>> unit_key(("step", "P01_R01", ("P01_R01_S05",))), unit_key(("activity", "P01.csv:7", "x", "v", 0, 1))
    ('P01_R01/P01_R01_S05', 'P01.csv:7')
    """
    return f"{u[1]}/{','.join(u[2])}" if u[0] == "step" else u[1]


def _units(groups, activities) -> list[tuple]:
    """``(unit, first group, last group, its groups)`` in order of first and last group."""
    members: dict[tuple, list[int]] = {}
    for i, g in enumerate(groups):
        u = unit_of(g["seg"], activities)
        if u is not None:
            members.setdefault(u, []).append(i)
    members = {u: sorted(gs) for u, gs in members.items()}
    return sorted(((u, gs[0], gs[-1], set(gs)) for u, gs in members.items()), key=lambda x: (x[1], x[2]))


def _establishing_ops(first, last, mine, start, ops_of, world, sim, objects) -> tuple:
    """Replay the unit's span from ``start``: ``(by, goal_ops, key_ops)``, ``by`` mapping
    each atom added to the operation of the unit's own groups that established it last
    (``None``: another unit's group, or a sampled fixture state)."""
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
    return by, goal_ops, key_ops


def _unit_spans(u, mine, groups, segments) -> tuple:
    """``(until, since, spans)``: the unit's end, start and own time spans."""
    if u[0] == "step":
        own = [x for x in segments if x.recipe == u[1] and tuple(x.steps) == u[2]]
        until = max([x.end for x in own] + [groups[i]["seg"].end for i in mine])
        since = min([x.start for x in own] + [groups[i]["seg"].start for i in mine])
        spans = sorted({(x.start, x.end) for x in own} | {(groups[i]["seg"].start, groups[i]["seg"].end)
                                                           for i in mine if groups[i]["seg"].kind != "track"})
    else:
        until, since = u[5], u[4]
        spans = [(since, until)]
    return until, since, spans


#: snippet verbs that show a container open (``<open bag>``, ``<pry open package>``,
#: ``<reach into bag>``): a close before them is undone
REOPENING = ("open", "pry open", "reach into")


def reopen_rows(snippets, recipes, offsets: dict) -> list[tuple]:
    """The rows that may undo a close, on episode time: ``("open", time, noun words)`` per
    snippet that opens or reaches into something (:data:`REOPENING`), ``("add", start,
    end)`` per add row of ``recipes`` (already on episode time)."""
    out = []
    for sn in snippets:
        verb = next((v for v in sorted(REOPENING, key=len, reverse=True) if sn.action.startswith(v + " ")), None)
        if verb is not None and sn.video in offsets:
            out.append(("open", sn.start + offsets[sn.video], frozenset(words(sn.action[len(verb) + 1:]))))
    for r in (recipes or {}).values():
        for c in r.captures:
            out += [("add", e.span.start, e.span.end) for e in c.events
                    if e.kind == "add" and e.span.video in offsets]
    return out


def _reopened(world, atom, op, until: float, rows) -> bool:
    """Whether ``capped(o)``, set by the close ``op``, may be undone before ``until`` (the
    unit's end). A cap changes only in the hand, so ``o`` must be handled again (a later
    track in the unit), and the rows ``rows`` (:func:`reopen_rows`) must show it opened
    then: a snippet after the close that opens or reaches into a container it names as
    ``o`` (the head noun of one of ``o``'s names, or a word of the close snippet's own
    noun: "close bag" of the tracked "coffee packet"), bound or not, or an add row timed
    during a later track of ``o`` (something may be taken out of it). Handling alone
    undoes nothing: the closed packet put away in the cupboard is still closed.

    >>> from types import SimpleNamespace as NS
    >>> w = NS(names={"bag": ["spice bag"]}, tracks=[NS(entity="bag", start=40.0, end=50.0)])
    >>> close = NS(time=10.0, planned=NS(title="close plastic bag"))
    >>> _reopened(w, ("capped", "bag"), close, 60.0, [])                  # put away: still closed
    False
    >>> _reopened(w, ("capped", "bag"), close, 60.0, [("open", 30.0, frozenset({"bag"}))])
    True
    >>> _reopened(w, ("capped", "bag"), close, 60.0, [("add", 44.0, 46.0)])   # poured from it
    True
    >>> _reopened(w, ("capped", "bag"), close, 35.0, [("open", 30.0, frozenset({"bag"}))])  # not handled again
    False
    """
    o, t = atom[1], op.time
    title = getattr(op.planned, "title", None) or ""
    named = {name_head(n) for n in getattr(world, "names", {}).get(o, ())} | set(words(" ".join(title.split()[1:])))
    later = [tr for tr in world.tracks if tr.entity == o and t + 1e-6 < tr.start < until]
    if not later:
        return False
    for row in rows:
        if row[0] == "open" and t < row[1] < until and row[2] & named:
            return True
        if row[0] == "add" and any(tr.start < row[2] and row[1] < min(tr.end, until) for tr in later):
            return True
    return False


def _end_atoms(end, by, world, until, since, spans, sim, ops, skip, reopen=(), others=(), own="") -> list[tuple]:
    """Every atom the unit's own groups last established and that still holds at the
    unit's end, as ``(rank, operation index, atom, kept arguments)``; the others go to
    ``skip`` with their reason code. ``reopen``: the rows that may undo a close
    (:func:`reopen_rows`); ``others``: the recipe's other step segments (``(start, end,
    text)``) and its ``own`` step text, which may take an added food out (:func:`_emptied_between`)."""
    atoms = []
    for atom in sorted(a for a in end if by.get(a) is not None):
        if atom[0] not in END_PREDICATES:
            continue
        if atom[0] == "at" and (_moves_again(world, atom, by[atom], until)
                                or _may_move_renamed(world, atom, by[atom], until)
                                or _cut_later(world, atom, by[atom], until, sim.vocab)):
            skip(atom, "intermediate")
            continue
        if atom[0] == "in" and _emptied_between(world, atom, by[atom], until, spans, others, own):
            skip(atom, "intermediate")
            continue
        if (atom[0] == "covered" and _moves_again(world, atom, by[atom], until)
                or atom[0] == "capped" and _reopened(world, atom, by[atom], until, reopen)):
            skip(atom, "intermediate")
            continue
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
    return atoms


def _one_per_end_state(atoms, by, skip) -> list[tuple]:
    """One observed end state, one condition: two state atoms one operation set on the
    same object (``powered`` and ``running`` from one button press) count once, and so do
    the instances one add row put in (three tracked eggs of one "eggs" add: the row
    records one end state, the ingredient in its vessel; the first is the condition)."""
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
    return kept


def _key_events(key_ops, world) -> list[tuple]:
    """``(event, operation, kept arguments)`` of the unit's key actions with no end state."""
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
    return events


def _contract(atoms, events, by) -> tuple | None:
    """``(tier, conditions, provenances, witnesses)`` (the paper's tier rule: terminal when
    the goal is an end state), ``None`` when the unit has no condition."""
    goal = [a for a in atoms if a[2][0] in GOAL_ATOM_PREDICATES and by[a[2]].planned is not None]
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
        return None
    return tier, conds, provs, wit


def _lead_first(conds, provs, wit, start, init) -> tuple:
    """c1: the first condition that does not already hold at the unit's start (nor in the
    initial world); a unit whose every end state already held is rejected by admission.
    ``(numbered conditions, provenances, witnesses by condition ID)``."""
    sure = list(range(len(conds)))
    lead = next((n for n in sure if conds[n]["kind"] == "event"
                 or (tuple(conds[n]["atom"]) not in start and tuple(conds[n]["atom"]) not in init)),
                next((n for n in sure
                      if conds[n]["kind"] == "atom" and tuple(conds[n]["atom"]) not in start), sure[0]))
    order = [lead] + [n for n in range(len(conds)) if n != lead]
    conds = [{"id": f"c{m}", **conds[n]} for m, n in enumerate(order, 1)]
    provs = [provs[n] for n in order]
    return conds, provs, {c["id"]: wit[n] for c, n in zip(conds, order)}


def _title_and_refs(u, mine, groups, segments, world) -> tuple[str, dict]:
    """The task's title and its source references (a recipe step with its segments, or an
    activity row), in video time."""
    if u[0] == "step":
        segs = sorted({groups[i]["seg"].key: groups[i]["seg"] for i in mine}.values(),
                      key=lambda x: (x.start, x.key))
        seg = next((x for x in segs if x.kind == "step"), segs[0])
        title = title_of(seg.instruction.removeprefix("Prepare for: "))
        local = lambda x, compiled: {  # noqa: E731
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
    return title, refs


def unit_tasks(episode_id: str, world, groups, group_recs, builder, op_group, activities,
               sim, objects, states, segments=(), ledger: dict | None = None, reopen=()
               ) -> tuple[list[dict], list[dict], list[dict]]:
    """``(candidates, rejected, dropped)`` of one episode (see the module docstring;
    ``dropped``: the end states left out because they hold at the task's start); ``segments``
    are every recipe step and prep segment of the episode (``groups.episode_segments``),
    so that a step's card lists the segments no operation was compiled in too. ``ledger``,
    when given, is filled per unit key (:func:`unit_key`) with what
    :mod:`analysis.compiler.ledger` needs: the unit's own spans, its candidate task (or why
    none) and every end state left out with its reason code. ``reopen``: the rows that may
    undo a close (:func:`reopen_rows`)."""
    ops = builder.out.ops
    ops_of: dict[int, list] = {}
    for k, op in enumerate(ops):
        ops_of.setdefault(op_group[k], []).append(op)
    out, rejected, seen = [], [], {}
    held_at_start: list[tuple] = []     # (first group, atom, operation) of end states held at the start
    left_out: list[dict] = []           # adds of a step unit whose in() is no condition (dropped.jsonl)
    init = states[-1]
    for u, first, last, mine in _units(groups, activities):
        start, end = states[first - 1], states[last]
        by, goal_ops, key_ops = _establishing_ops(first, last, mine, start, ops_of, world, sim, objects)
        info = {"unit": u, "spans": [], "task": None, "why": None, "skipped": [], "groups": sorted(mine),
                "witnesses": {}}
        if ledger is not None:
            ledger[unit_key(u)] = info
        skip = lambda atom, code: info["skipped"].append((atom, by[atom], code))  # noqa: E731
        # every atom the unit's own groups last established and that still holds at the
        # unit's end (one that also held before the unit, such as the pan taken from the
        # sink, used and put back there, is dropped below: it gives free credit)
        until, since, spans = _unit_spans(u, mine, groups, segments)
        info["spans"] = spans
        # the recipe's other steps, whose texts may take food out between this one's segments
        others = [(x.start, x.end, x.instruction) for x in segments if u[0] == "step" and x.kind == "step"
                  and x.recipe == u[1] and tuple(x.steps) != u[2]]
        own = " ".join(sorted({x.instruction for x in segments if u[0] == "step" and x.kind == "step"
                               and x.recipe == u[1] and tuple(x.steps) == u[2]}))
        atoms = _end_atoms(end, by, world, until, since, spans, sim, ops, skip, reopen, others, own)
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
        atoms = _one_per_end_state(atoms, by, skip)
        if u[0] == "step":
            left_out += _adds_left_out([op for i in sorted(mine) for op in ops_of.get(i, [])], by, end,
                                       start, init, atoms, group_recs[first]["group_id"])
        contract = _contract(atoms, _key_events(key_ops, world), by)
        if contract is None:
            info["why"] = "no_condition"
            continue
        tier, conds, provs, wit = contract
        conds, provs, info["witnesses"] = _lead_first(conds, provs, wit, start, init)
        title, refs = _title_and_refs(u, mine, groups, segments, world)
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
    return _numbered(episode_id, out, rejected, group_recs, held_at_start, left_out)


def _numbered(episode_id, out, rejected, group_recs, held_at_start, left_out) -> tuple:
    """Task IDs (``t`` admitted candidates, ``x`` duplicates), group IDs, reference action
    types and the ``condition`` drops, as :func:`unit_tasks` returns them."""
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

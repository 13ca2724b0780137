"""Goal-aligned tasks and their frozen contracts.

Terminal tier (a represented end state the evidence supports):
* each accepted ingredient add -> ``in(ingredient, target)`` (e.g. ``in(squash, glass)``);
* each track whose destination a VQA answer observes -> ``at(object, fixture)``.
Event tier (otherwise): the first occurrence of a recipe step whose group holds a
step-specific operation -> that accepted event (type and arguments).
A task spans the consecutive groups from the first group of its source segment up to the
group holding its witnessing operation.

Multi-condition contracts (``add_goal_conditions``, run after the reference replay): the
witnessing condition above stays ``c1`` (the task's primary goal), followed by up to
``MAX_CONDITIONS - 1`` more conditions chosen by a deterministic rule:
* terminal: goal-relevant facts the task's reference operations establish, i.e. atoms TRUE
  after the task's last group and FALSE before its first group (so a fact set and undone
  again inside the task never qualifies). Skipped: facts about the agent (``agent-at``,
  ``holding``, ``hand-empty``), ``filled`` (it only restates an ``in`` fact about the same
  container) and ``open`` (a door left open by inserted access steps, closed again by the
  next group: a side effect, not a goal). Relevant: the fact's first argument is an object
  the task's groups name in their ``objects`` (or an argument of ``c1``); for ``in`` the
  container may be the named one instead. Order: contents ``in`` first, then placements
  ``at``, then attributes (``cut``, ``cooked``, ``mixed``, ``powered``...), each in the
  order the operations established them (last establishing operation), then the atom.
* event: the distinct accepted key events of the task's reference operations (types outside
  navigation, access and plain pick/put handling), in replay order.
"""
from __future__ import annotations

MOVE_TYPES = {"navigate", "open_storage", "close_storage", "open_appliance", "close_appliance"}
# Retrieving and setting down items: logistics any plan needs, not what a step asks for
# (most are curated ``take_tool_for_step`` / ``put_down_after_use`` operations).
HANDLING_TYPES = {"pick_up", "pick_up_from_appliance", "take_from_storage", "take_from_sink",
                  "take_from_appliance", "take_out_of_container", "put_on", "put_in_storage",
                  "put_in_sink", "place_on_appliance", "put_in_appliance"}
MAX_CONDITIONS = 4                      # c1 plus up to 3 more
AGENT_PREDICATES = {"agent-at", "holding", "hand-empty"}
SKIPPED_PREDICATES = AGENT_PREDICATES | {"filled", "open"}
PREDICATE_RANK = {"in": 0, "at": 1}     # every attribute predicate ranks 2


def _span_start(groups, gi: int) -> int:
    """First group of the run of groups sharing group ``gi``'s step (interleaving allowed)."""
    key = groups[gi]["seg"].steps, groups[gi]["seg"].kind
    j = gi
    while j > 0 and (groups[j - 1]["seg"].steps, groups[j - 1]["seg"].kind) == key and key[0]:
        j -= 1
    return j


def candidate_tasks(episode_id: str, world, groups, group_recs, builder, adds, op_group,
                    recipes) -> list[dict]:
    out = []
    gid = lambda i: group_recs[i]["group_id"]
    # terminal: ingredient adds
    for op_i, ing, target, rid, sid, ev in adds:
        gi = op_group[op_i]
        g0 = _span_start(groups, gi)
        title = recipes[rid].steps.get(sid, "").split(" - ")[0].split("-")[0].strip() if sid else ""
        out.append({
            "key": ("add", op_i),
            "tier": "terminal", "first": g0, "last": gi,
            "title": title[:60] or f"Add {ev.name}",
            "conditions": [{"id": "c1", "kind": "atom", "atom": ["in", ing, target]}],
            "provenance": {"source": "observed",
                           "refs": {"recipe": rid, "step": sid, "ingredient": ev.ingredient_id,
                                    "video": ev.span.video, "start": ev.span.start, "end": ev.span.end}},
        })
    # terminal: observed destinations
    for op_i, op in enumerate(builder.out.ops):
        refs = op.provenance["refs"]
        if (op.provenance["source"] == "observed" and op.action["type"] in
                ("put_on", "put_in_storage", "put_in_sink", "place_on_appliance", "put_in_appliance")
                and refs.get("vqa") and refs.get("track")):
            gi = op_group[op_i]
            ent, fx = op.action["args"]
            out.append({
                "key": ("put", op_i), "tier": "terminal", "first": gi, "last": gi,
                "title": f"Put {ent.replace('_', ' ')} at {fx.replace('_', ' ')}",
                "conditions": [{"id": "c1", "kind": "atom", "atom": ["at", ent, fx]}],
                "provenance": {"source": "observed", "refs": dict(refs)},
            })
    # event: first occurrence of each step with a step-specific operation
    seen = set()
    for gi, g in enumerate(groups):
        seg = g["seg"]
        if seg.kind != "step" or not seg.steps or seg.steps[0] in seen:
            continue
        key_ops = [op for op in g["ops"] if op.action["type"] not in MOVE_TYPES]
        if not key_ops:
            continue
        seen.add(seg.steps[0])
        op = key_ops[-1]
        out.append({
            "key": ("event", gi), "tier": "event", "first": _span_start(groups, gi), "last": gi,
            "title": seg.instruction.split(" - ")[0][:60],
            "conditions": [{"id": "c1", "kind": "event",
                            "event": {"type": op.action["type"], "args": list(op.action["args"])}}],
            "provenance": {"source": "observed",
                           "refs": {"recipe": seg.recipe, "step": seg.steps[0], "video": seg.video,
                                    "start": seg.start, "end": seg.end}},
        })
    for c in out:
        c["group_ids"] = [gid(i) for i in range(c["first"], c["last"] + 1)]
        types = sorted({op["type"] for i in range(c["first"], c["last"] + 1)
                        for op in group_recs[i]["operations"]})
        c["reference_action_types"] = types
    out.sort(key=lambda c: (c["first"], c["last"], c["tier"], c["key"]))
    for n, c in enumerate(out):
        c["task_id"] = f"{episode_id}/t{n:03d}"
        c["episode_id"] = episode_id
    return out


def _task_ops(group_recs, first: int, last: int) -> list[dict]:
    return [{"type": o["type"], "args": list(o["args"])} for i in range(first, last + 1)
            for o in group_recs[i]["operations"]]


def goal_atoms(task: dict, sim, objects: dict, states: dict, group_recs) -> list[tuple]:
    """Extra terminal conditions (atoms, ordered, at most ``MAX_CONDITIONS - 1``); see the
    module docstring for the rule."""
    first, last = task["first"], task["last"]
    start, end = states[first - 1], states[last]
    primary = tuple(task["conditions"][0]["atom"])
    named = {x for i in range(first, last + 1) for x in group_recs[i]["objects"]}
    named |= set(primary[1:])
    established: dict[tuple, int] = {}       # atom -> index of the last operation adding it
    f = start
    for k, a in enumerate(_task_ops(group_recs, first, last)):
        ok, _, nf = sim.apply(objects, f, a)
        if ok:
            for atom in nf - f:
                established[atom] = k
            f = nf
    pool = []
    for atom in end - start:
        if atom == primary or atom[0] in SKIPPED_PREDICATES:
            continue
        relevant = atom[1] in named or (atom[0] == "in" and atom[2] in named)
        if relevant:
            pool.append((PREDICATE_RANK.get(atom[0], 2), established.get(atom, -1), atom))
    pool.sort()
    return [atom for _, _, atom in pool[: MAX_CONDITIONS - 1]]


def key_events(task: dict, events: dict) -> list[dict]:
    """Extra event conditions: distinct accepted key events of the task, in replay order,
    excluding ``c1``'s own event; at most ``MAX_CONDITIONS - 1``."""
    primary = task["conditions"][0]["event"]
    seen = {(primary["type"], tuple(primary["args"]))}
    out = []
    for i in range(task["first"], task["last"] + 1):
        for e in events[i]:
            key = (e["type"], tuple(e["args"]))
            if e["type"] in MOVE_TYPES or e["type"] in HANDLING_TYPES or key in seen:
                continue
            seen.add(key)
            out.append({"type": e["type"], "args": list(e["args"])})
    return out[: MAX_CONDITIONS - 1]


def add_goal_conditions(cands: list[dict], sim, objects: dict, states: dict, events: dict,
                        group_recs) -> None:
    """Extend each candidate's contract in place: ``c1`` stays first, ``c2``.. follow."""
    for c in cands:
        if c["tier"] == "terminal":
            extra = [{"kind": "atom", "atom": list(a)}
                     for a in goal_atoms(c, sim, objects, states, group_recs)]
        else:
            extra = [{"kind": "event", "event": e} for e in key_events(c, events)]
        c["conditions"] = c["conditions"][:1] + [
            {"id": f"c{n}", **x} for n, x in enumerate(extra, 2)]

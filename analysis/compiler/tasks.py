"""Goal-aligned tasks and their frozen contracts; every ``c1`` rests on observed evidence.

Terminal tier (a represented end state the evidence supports):
* each grounded ingredient add (:mod:`analysis.compiler.grounding`) -> ``in(ingredient,
  target)`` (e.g. ``in(squash, glass_2)``), admitted only when the ingredient, its source
  and the target are observed bindings (the fixture where it happens may be curated);
* each put-down whose destination a VQA answer observes -> ``at(object, fixture)``.
Event tier: each grounded step key action (the verb the step text names, bound to the
objects held or handled during the step) -> that event; an argument the evidence does not
observe is a fixture and becomes a wildcard (``null``); any other unobserved argument
means no task.
A task spans the consecutive groups of its step (prep and step segments) up to the group
holding its witnessing operation.

Multi-condition contracts (``add_goal_conditions``, run after the reference replay): the
witnessing condition stays ``c1``, followed by up to ``MAX_CONDITIONS - 1`` more:
* terminal: goal-relevant facts the task's *observed* operations establish, i.e. atoms TRUE
  after the task's last group and FALSE before its first, whose last establishing
  operation has every argument observed. Skipped: facts about the agent (``agent-at``,
  ``holding``, ``hand-empty``), ``filled`` and ``open``. Relevant: the fact's first argument
  is an object the task's groups name (or an argument of ``c1``); for ``in`` the container
  may be. Order: ``in`` first, then ``at``, then attributes, each in establishment order.
* event: the distinct accepted key events of the task's observed operations (types outside
  navigation, access and plain pick/put handling), in replay order.
Each condition's provenance (the witnessing operation, its time and the provenance of every
argument it keeps) is exported in the task's ``provenance.conditions``.
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
    """First group of the run of groups of group ``gi``'s step (its prep and step
    segments), going back over groups of the same step id only."""
    key = groups[gi]["seg"].steps, groups[gi]["seg"].recipe
    j = gi
    while j > 0 and key[0] and (groups[j - 1]["seg"].steps, groups[j - 1]["seg"].recipe) == key:
        j -= 1
    return j


def _observed(op) -> bool:
    return op.provenance["source"] == "observed"


def _arg_refs(op) -> list[dict]:
    return op.provenance["refs"].get("args", [])


def _cond_prov(op, nulls=()) -> dict:
    """A condition's provenance: the witnessing operation's time and the provenance of
    every argument it keeps (wildcard arguments are left out)."""
    args = [a for k, a in enumerate(_arg_refs(op)) if k not in nulls]
    src = "observed" if args and all(a["source"] == "observed" for a in args) else "curated"
    return {"source": src, "refs": {"operation": op.action["type"], "time": op.time, "args": args}}


def candidate_tasks(episode_id: str, world, groups, group_recs, builder, grounding, op_group,
                    recipes) -> list[dict]:
    """Candidate tasks of one episode (see the module docstring); every ``c1`` rests on an
    observed operation."""
    out = []
    gid = lambda i: group_recs[i]["group_id"]
    ops = builder.out.ops
    for op_i, op in enumerate(ops):
        p = op.planned
        typ, args = op.action["type"], op.action["args"]
        gi = op_group[op_i]
        if p is not None and p.kind == "add":
            ing, target = (args[0], args[2]) if typ in ("pour", "empty_into") else (args[0], args[1])
            keep = [k for k, a in enumerate(args) if a in (ing, target) or (typ in ("pour", "empty_into") and k == 1)]
            if any(_arg_refs(op)[k]["source"] != "observed" for k in keep):
                continue
            out.append({
                "key": ("add", op_i), "tier": "terminal", "first": _span_start(groups, gi), "last": gi,
                "title": p.title,
                "conditions": [{"id": "c1", "kind": "atom", "atom": ["in", ing, target]}],
                "cprov": [_cond_prov(op, [k for k in range(len(args)) if k not in keep])],
                "provenance": {"source": "observed", "refs": dict(p.refs)},
            })
        elif p is not None and p.kind == "step":
            # the step's own key action; a fixture argument the evidence does not observe
            # becomes a wildcard, every other argument must be observed
            nulls = [k for k, a in enumerate(_arg_refs(op)) if a["source"] != "observed"
                     and args[k] in world.fixture_ids]
            if any(a["source"] != "observed" for k, a in enumerate(_arg_refs(op)) if k not in nulls):
                continue
            ev_args = [None if k in nulls else a for k, a in enumerate(args)]
            out.append({
                "key": ("event", op_i), "tier": "event", "first": _span_start(groups, gi), "last": gi,
                "title": p.title,
                "conditions": [{"id": "c1", "kind": "event", "event": {"type": typ, "args": ev_args}}],
                "cprov": [_cond_prov(op, nulls)],
                "provenance": {"source": "observed", "refs": dict(p.refs)},
            })
        elif (p is None and _observed(op) and typ in ("put_on", "put_in_storage", "put_in_sink",
                                                        "place_on_appliance", "put_in_appliance")
              and _arg_refs(op)[1]["refs"].get("file", "").startswith("3d_perception")):
            ent, fx = args
            out.append({
                "key": ("put", op_i), "tier": "terminal", "first": gi, "last": gi,
                "title": f"Put {ent.replace('_', ' ')} at {fx.replace('_', ' ')}",
                "conditions": [{"id": "c1", "kind": "atom", "atom": ["at", ent, fx]}],
                "cprov": [_cond_prov(op)],
                "provenance": {"source": "observed", "refs": {"operation_time": op.time,
                                                              **_arg_refs(op)[1]["refs"]}},
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
    return [{"type": o["type"], "args": list(o["args"]), "provenance": o.get("provenance")}
            for i in range(first, last + 1) for o in group_recs[i]["operations"]]


def _op_observed(op: dict) -> bool:
    """Operations without provenance (hand-built unit cases) count as observed."""
    return op.get("provenance") is None or op["provenance"]["source"] == "observed"


def goal_atoms(task: dict, sim, objects: dict, states: dict, group_recs,
               prov_out: dict | None = None) -> list[tuple]:
    """Extra terminal conditions (atoms, ordered, at most ``MAX_CONDITIONS - 1``); see the
    module docstring for the rule. Only atoms whose last establishing operation is
    observed qualify; ``prov_out`` (if given) receives each chosen atom's operation."""
    first, last = task["first"], task["last"]
    start, end = states[first - 1], states[last]
    primary = tuple(task["conditions"][0]["atom"])
    named = {x for i in range(first, last + 1) for x in group_recs[i]["objects"]}
    named |= set(primary[1:])
    established: dict[tuple, int] = {}       # atom -> index of the last operation adding it
    by: dict[tuple, dict] = {}
    f = start
    for k, a in enumerate(_task_ops(group_recs, first, last)):
        ok, _, nf = sim.apply(objects, f, {"type": a["type"], "args": a["args"]})
        if ok:
            for atom in nf - f:
                established[atom] = k
                by[atom] = a
            f = nf
    pool = []
    for atom in end - start:
        if atom == primary or atom[0] in SKIPPED_PREDICATES:
            continue
        relevant = atom[1] in named or (atom[0] == "in" and atom[2] in named)
        if relevant and atom in by and _op_observed(by[atom]):
            pool.append((PREDICATE_RANK.get(atom[0], 2), established.get(atom, -1), atom))
    pool.sort()
    chosen = [atom for _, _, atom in pool[: MAX_CONDITIONS - 1]]
    if prov_out is not None:
        for atom in chosen:
            prov_out[atom] = by[atom]
    return chosen


def key_events(task: dict, events: dict) -> list[dict]:
    """Extra event conditions: distinct accepted key events of the task, in replay order,
    excluding ``c1``'s own event; at most ``MAX_CONDITIONS - 1``."""
    primary = task["conditions"][0]["event"]
    seen = {(primary["type"], tuple(primary["args"]))}
    out = []
    for i in range(task["first"], task["last"] + 1):
        for e in events[i]:
            key = (e["type"], tuple(e["args"]))
            wild = e["type"] == primary["type"] and len(e["args"]) == len(primary["args"]) and all(
                p is None or p == a for p, a in zip(primary["args"], e["args"]))
            if e["type"] in MOVE_TYPES or e["type"] in HANDLING_TYPES or key in seen or wild:
                continue
            seen.add(key)
            out.append({"type": e["type"], "args": list(e["args"])})
    return out[: MAX_CONDITIONS - 1]


def add_goal_conditions(cands: list[dict], sim, objects: dict, states: dict, events: dict,
                        group_recs) -> None:
    """Extend each candidate's contract in place: ``c1`` stays first, ``c2``.. follow."""
    obs_events, obs_ops = {}, {}
    for i, g in enumerate(group_recs):
        pairs = [(e, op) for e, op in zip(events[i], g["operations"]) if _op_observed(op)]
        obs_events[i] = [e for e, _ in pairs]
        obs_ops[i] = [op for _, op in pairs]
    for c in cands:
        if c["tier"] == "terminal":
            by: dict = {}
            atoms = goal_atoms(c, sim, objects, states, group_recs, by)
            extra = [{"kind": "atom", "atom": list(a)} for a in atoms]
            provs = [_rec_prov(by[a]) for a in atoms]
        else:
            evs = key_events(c, obs_events)
            extra = [{"kind": "event", "event": e} for e in evs]
            provs = []
            for e in evs:
                op = next(op for i in range(c["first"], c["last"] + 1) for op in obs_ops[i]
                          if op["type"] == e["type"] and op["args"] == e["args"])
                provs.append(_rec_prov(op))
        c["conditions"] = c["conditions"][:1] + [
            {"id": f"c{n}", **x} for n, x in enumerate(extra, 2)]
        c["cprov"] = c.get("cprov", [])[:1] + provs
        c["provenance"]["conditions"] = {cond["id"]: p for cond, p in zip(c["conditions"], c["cprov"])}


def _rec_prov(op: dict) -> dict:
    refs = (op.get("provenance") or {}).get("refs", {})
    return {"source": (op.get("provenance") or {}).get("source", "observed"),
            "refs": {"operation": op["type"], "time": refs.get("time"), "args": refs.get("args", [])}}

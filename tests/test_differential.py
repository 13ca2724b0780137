"""Differential test: our executor vs unified-planning's SequentialSimulator.

Both read the same rules: ours directly, unified-planning through our PDDL export.
Random small worlds are drawn from one pool of objects (so the PDDL problem is parsed
once); each sequence starts from its own random initial state, installed in the
simulator as a child of the parsed initial state. Every well-typed action is checked
against the simulator (accept/reject and the resulting values of every atom that was
true before or after or that the action's effects name); ill-typed or malformed
actions have no PDDL counterpart and must be rejected by us with the world unchanged.

The generators ``random_world``/``random_action`` are reused by tests/test_executor.py
and bench/executor.py.
"""
from __future__ import annotations

import random
from types import MappingProxyType
from functools import lru_cache

import pytest

from analysis.executor import Executor, Rules, World
from analysis.executor.pddl import domain_pddl, encode_name, problem_pddl

RULES = Rules.load()
EXECUTOR = Executor(RULES)

# The pool: a few objects of a spread of leaf types, enough to make most actions groundable.
POOL_TYPES = [
    "counter", "table", "cupboard", "drawer", "fridge", "oven", "microwave", "hob",
    "toaster", "coffee_machine", "kitchen_sink", "waste_bin",
    "glass", "mug", "bowl", "pan", "chopping_board", "bottle", "jar", "kettle",
    "knife", "spoon", "whisk_tool", "sponge", "egg", "bread", "vegetable", "scale",
    "capsule", "water", "squash", "milk", "salt", "coffee",
]
POOL = {f"{t}1": t for t in POOL_TYPES}
POOL.update({"glass2": "glass", "counter2": "counter", "vegetable2": "vegetable"})
POOL = MappingProxyType(POOL)  # shared, read-only: every generated world reuses it

UNARY_ATTRS = {  # attribute predicate -> the type its argument is drawn from
    "open": "fixture", "capped": "sealable_container", "powered": "entity",
    "running": "fixture", "dirty": "entity", "wet": "item", "cut": "food",
    "peeled": "food", "cooked": "food", "mixed": "entity", "filled": "container",
    "covered": "item",
}


_OBJECTS_OF: dict = {}


def objects_of(objects, t: str) -> list[str]:
    key = (id(objects), t)
    if key not in _OBJECTS_OF:  # worlds share their objects mapping: cache per mapping
        ok = RULES.descendants(t)
        _OBJECTS_OF[key] = (objects, sorted(o for o, ty in objects.items() if ty in ok))
    return _OBJECTS_OF[key][1]


def random_world(rng: random.Random, objects: dict = POOL) -> World:
    """A random, roughly physical world over ``objects``: the agent at one fixture,
    holding at most one item, every other item at a fixture or in a container,
    substances in containers, and random attributes."""
    fixtures = objects_of(objects, "fixture")
    items = objects_of(objects, "item")
    containers = objects_of(objects, "container")
    facts = {("agent-at", rng.choice(fixtures))}
    rng.shuffle(items)
    held = items[0] if rng.random() < 0.4 else None
    facts.add(("holding", held) if held else ("hand-empty",))
    placed = []
    for it in items:
        if it == held:
            continue
        hosts = [c for c in containers if c != it and c in placed]
        if hosts and rng.random() < 0.25:
            facts.add(("in", it, rng.choice(hosts)))
        else:
            facts.add(("at", it, rng.choice(fixtures)))
            placed.append(it)
    for s in objects_of(objects, "substance"):
        for c in rng.sample(containers, k=min(len(containers), rng.randint(0, 2))):
            facts.add(("in", s, c))
    appliances = objects_of(objects, "appliance")
    for a in rng.sample(appliances, k=min(2, len(appliances))):
        facts.add(("in", rng.choice(objects_of(objects, "substance")), a))
    for pred, t in UNARY_ATTRS.items():
        for o in objects_of(objects, t):
            if rng.random() < 0.3:
                facts.add((pred, o))
    return World(objects, facts)


def random_action(rng: random.Random, world: World, p_junk: float = 0.1,
                  tries: int = 40) -> dict:
    """A random action: mostly well-typed (half of them searched to be applicable),
    sometimes ill-typed, unknown or malformed."""
    r = rng.random()
    if r < p_junk:
        return rng.choice([
            {"type": "pick_up", "args": ["nosuch", "counter1"]},
            {"type": "pick_up", "args": ["counter1", "glass1"]},
            {"type": "pour", "args": ["glass1"]},
            {"type": "teleport", "args": []},
            {"type": "navigate", "args": ["counter1", 3]},
            {"args": ["counter1"]},
            ["navigate", "counter1", "fridge1"],
        ])
    names = list(RULES.actions)
    # Objects near the agent make applicable actions likely: its fixture, what it holds,
    # what stands there and what is inside that.
    near = {a[1] for a in world.facts if a[0] in ("agent-at", "holding")}
    near |= {a[1] for a in world.facts if a[0] == "at" and a[2] in near}
    near |= {a[1] for a in world.facts if a[0] == "in" and a[2] in near}
    candidate = None
    for _ in range(tries if r < 0.55 else 1):
        a = RULES.actions[rng.choice(names)]
        args = []
        for p in a.params:
            pool = objects_of(world.objects, p.type)
            if not pool:
                break
            close = [o for o in pool if o in near]
            args.append(rng.choice(close if close and rng.random() < 0.8 else pool))
        else:
            candidate = {"type": a.name, "args": args}
            if not EXECUTOR.check(world, candidate):
                return candidate
    return candidate or {"type": "check", "args": [objects_of(world.objects, "fixture")[0]]}


def well_typed(world: World, action) -> bool:
    if not isinstance(action, dict) or action.get("type") not in RULES.actions:
        return False
    rule = RULES.actions[action["type"]]
    args = action.get("args")
    return isinstance(args, list) and len(args) == len(rule.params) and all(
        isinstance(x, str) and world.objects.get(x) in RULES.descendants(p.type)
        for x, p in zip(args, rule.params))


# ---------------------------------------------------------------------------------------
@lru_cache(maxsize=1)
def _up():
    up = pytest.importorskip("unified_planning.shortcuts")
    from unified_planning.io import PDDLReader
    up.get_environment().credits_stream = None
    base = World(POOL, [])
    problem = PDDLReader().parse_problem_string(domain_pddl(RULES),
                                                problem_pddl(RULES, base, "pool"))
    sim = up.SequentialSimulator(problem)
    init = sim.get_initial_state()
    em = problem.environment.expression_manager
    fluents = {f.name: f for f in problem.fluents}
    objs = {o: problem.object(encode_name(o)) for o in POOL}
    actions = {a.name: a for a in problem.actions}
    cache = {}

    def expr(atom):
        e = cache.get(atom)
        if e is None:
            f = fluents[atom[0]]
            e = cache[atom] = em.FluentExp(f, [em.ObjectExp(objs[x]) for x in atom[1:]])
        return e

    return problem, sim, init, em, objs, actions, expr


def _ground_effects(action: dict) -> set:
    rule = RULES.actions[action["type"]]
    b = {p.name: x for p, x in zip(rule.params, action["args"])}
    return {t.ground(b) for t in (*rule.add, *rule.delete)}


def test_random_sequences_agree_with_unified_planning():
    problem, sim, init, em, objs, actions, expr = _up()
    TRUE, FALSE = em.TRUE(), em.FALSE()
    rng = random.Random(20240209)
    n_seq, n_checked, n_accepted, n_rejected_typed = 0, 0, 0, 0
    for _ in range(1000):
        world = random_world(rng)
        state = init.make_child({expr(a): TRUE for a in world.facts})
        n_seq += 1
        for _ in range(rng.randint(4, 10)):
            action = random_action(rng, world)
            out = EXECUTOR.apply(world, action)
            if not well_typed(world, action):
                assert not out.accepted and out.world is world and out.failed_checks
                continue
            params = [em.ObjectExp(objs[x]) for x in action["args"]]
            up_action = actions[action["type"]]
            ok = sim.is_applicable(state, up_action, params)
            assert ok == out.accepted, (action, out.failed_checks, sorted(world.facts))
            n_checked += 1
            if not ok:
                n_rejected_typed += 1
                continue
            n_accepted += 1
            new_state = sim.apply(state, up_action, params)
            for atom in world.facts | out.world.facts | _ground_effects(action):
                assert new_state.get_value(expr(atom)).bool_constant_value() == \
                    (atom in out.world.facts), (action, atom)
            world, state = out.world, new_state
    # Guard against a vacuous run: the generator must exercise both outcomes a lot.
    assert n_seq == 1000
    assert n_accepted > 2000 and n_rejected_typed > 1000, (n_accepted, n_rejected_typed)

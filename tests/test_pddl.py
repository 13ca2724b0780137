"""PDDL export: readable by unified-planning and pyperplan; pyperplan's grounded
operators on the positive-only export agree with our executor; plans replay."""
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from analysis.executor import Executor, Rules, World
from analysis.executor.pddl import (decode_name, domain_pddl, encode_name,
                                    negated_predicates, problem_pddl)

RULES = Rules.load()
EX = Executor(RULES)
KITCHEN = World(
    {"fridge": "fridge", "counter": "counter", "bottle": "bottle", "squash": "squash",
     "glass": "glass", "2nd-Glass": "glass"},
    [("agent-at", "fridge"), ("hand-empty",), ("at", "bottle", "counter"),
     ("capped", "bottle"), ("in", "squash", "bottle"), ("at", "glass", "counter"),
     ("at", "2nd-Glass", "fridge")])
GOAL = [("in", "squash", "glass")]


@given(st.text(alphabet="abcXYZ_-.0é9 ", min_size=1, max_size=12))
def test_names_round_trip_and_are_pddl_names(s):
    n = encode_name(s)
    assert decode_name(n) == s and decode_name(n.upper()) == s
    assert n[0].isalpha() and all(c.isalnum() and c.isascii() or c in "-_" for c in n)


def test_bad_problem_name_rejected():
    with pytest.raises(ValueError, match="name"):
        problem_pddl(RULES, KITCHEN, "1bad")


def _pyperplan_task(tmp_path, world, goal):
    from pyperplan.grounding import ground
    from pyperplan.pddl.parser import Parser
    d, p = tmp_path / "d.pddl", tmp_path / "p.pddl"
    d.write_text(domain_pddl(RULES, positive_only=True))
    p.write_text(problem_pddl(RULES, world, "kitchen", goal, positive_only=True))
    parser = Parser(str(d), str(p))
    return ground(parser.parse_problem(parser.parse_domain()))


def _to_action(op_name):
    parts = op_name.strip("()").split()
    return {"type": parts[0], "args": [decode_name(x) for x in parts[1:]]}


def _state(world):
    comp = {("not-" + a[0], *a[1:]) for pred in negated_predicates(RULES)
            for a in _all_ground(world, pred) if a not in world.facts}
    return frozenset("(" + " ".join([a[0], *map(encode_name, a[1:])]) + ")"
                     for a in world.facts | comp)


def _all_ground(world, pred):
    import itertools
    pools = [[o for o, t in sorted(world.objects.items()) if t in RULES.descendants(pt)]
             for pt in RULES.predicates[pred]]
    return [(pred, *args) for args in itertools.product(*pools)]


def test_pyperplan_plan_replays_in_our_executor(tmp_path):
    from pyperplan.search import breadth_first_search
    task = _pyperplan_task(tmp_path, KITCHEN, GOAL)
    plan = breadth_first_search(task)
    assert plan, "pyperplan found no plan for Add Squash"
    w = KITCHEN
    for op in plan:
        out = EX.apply(w, _to_action(op.name))
        assert out.accepted, (op.name, out.failed_checks)
        w = out.world
    assert w.holds(GOAL[0])
    # navigate, pick up, uncap, then pour (or empty_into): nothing shorter exists.
    assert [_to_action(op.name)["type"] for op in plan][:3] == \
        ["navigate", "pick_up", "open_container"] and len(plan) == 4


def test_positive_only_export_agrees_with_executor_on_a_random_walk(tmp_path):
    task = _pyperplan_task(tmp_path, KITCHEN, GOAL)
    # pyperplan's relevance analysis drops facts no operator tests (and their effects):
    # states are compared on the facts some precondition tests.
    tested = frozenset().union(*(op.preconditions for op in task.operators))
    assert task.initial_state & tested == _state(KITCHEN) & tested
    rng = random.Random(7)
    w, state = KITCHEN, task.initial_state
    for _ in range(40):
        for op in task.operators:
            assert op.applicable(state) == (not EX.check(w, _to_action(op.name))), op.name
        applicable = [op for op in task.operators if op.applicable(state)]
        op = rng.choice(applicable)
        w, state = EX.apply(w, _to_action(op.name)).world, op.apply(state)
        assert state & tested == _state(w) & tested


def test_unified_planning_reads_both_exports():
    up = pytest.importorskip("unified_planning.shortcuts")
    from unified_planning.io import PDDLReader
    up.get_environment().credits_stream = None
    for positive in (False, True):
        prob = PDDLReader().parse_problem_string(
            domain_pddl(RULES, positive_only=positive),
            problem_pddl(RULES, KITCHEN, "kitchen", GOAL, positive_only=positive))
        assert {a.name for a in prob.actions} == set(RULES.actions)
        assert {o.name for o in prob.all_objects} == {encode_name(o) for o in KITCHEN.objects}

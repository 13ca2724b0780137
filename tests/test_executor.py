"""Executor: hand-checked examples, every failed check reported, properties."""
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.executor import Executor, Rules, World
from analysis.executor.rules import RulesError

from test_differential import random_action, random_world

RULES = Rules.load()
EX = Executor(RULES)

KITCHEN = World(
    {"fridge": "fridge", "counter": "counter", "bottle": "bottle", "squash": "squash",
     "glass": "glass", "spoon": "spoon", "cupboard": "cupboard"},
    [("agent-at", "fridge"), ("hand-empty",), ("at", "bottle", "counter"),
     ("capped", "bottle"), ("in", "squash", "bottle"), ("at", "glass", "counter"),
     ("at", "spoon", "cupboard")])


def run(world, *actions):
    for a in actions:
        out = EX.apply(world, {"type": a[0], "args": list(a[1:])})
        assert out.accepted, (a, out.failed_checks)
        world = out.world
    return world


def test_add_squash():
    w = run(KITCHEN, ("navigate", "fridge", "counter"), ("pick_up", "bottle", "counter"),
            ("open_container", "bottle"))
    out = EX.apply(w, {"type": "pour", "args": ["squash", "bottle", "glass", "counter"]})
    assert out.accepted and out.world.holds(("in", "squash", "glass"))
    assert out.transition == {"added": [["filled", "glass"], ["in", "squash", "glass"]],
                              "removed": []}
    assert out.event == {"type": "pour", "args": ["squash", "bottle", "glass", "counter"]}
    assert out.world.holds(("in", "squash", "bottle"))  # quantities are not modelled


def test_pour_from_capped_bottle_names_every_failed_check():
    # At the fridge, hand empty, bottle capped: three preconditions fail at once (the glass
    # is at the counter, so target_at_fixture holds).
    out = EX.apply(KITCHEN, {"type": "pour", "args": ["squash", "bottle", "glass", "counter"]})
    assert not out.accepted and out.world is KITCHEN and out.event is None
    assert out.failed_checks == ["agent_at_fixture", "holding_source", "source_not_capped"]


def test_take_from_closed_storage_then_open():
    w = run(KITCHEN, ("navigate", "fridge", "cupboard"))
    out = EX.apply(w, {"type": "take_from_storage", "args": ["spoon", "cupboard"]})
    assert out.failed_checks == ["storage_open"]
    w = run(w, ("open_storage", "cupboard"), ("take_from_storage", "spoon", "cupboard"))
    assert w.holds(("holding", "spoon")) and not w.holds(("at", "spoon", "cupboard"))
    assert w.location_of("spoon") is None


@pytest.mark.parametrize("action,checks", [
    ("navigate", ["malformed_action"]),
    (None, ["malformed_action"]),
    ({"args": []}, ["field:type"]),
    ({"type": "navigate"}, ["field:args"]),
    ({"type": 3, "args": "x"}, ["field:type", "field:args"]),
    ({"type": "navigate", "args": ["fridge", 1]}, ["field:args"]),
    ({"type": "teleport", "args": []}, ["known_action_type"]),
    ({"type": "navigate", "args": ["fridge"]}, ["arity"]),
    ({"type": "navigate", "args": ["fridge", "moon"]}, ["known_object:to"]),
    ({"type": "pick_up", "args": ["counter", "glass"]},
     ["type:o", "type:f", "agent_at_source", "object_at_source"]),
])
def test_malformed_and_ill_typed_actions_are_rejected_not_raised(action, checks):
    out = EX.apply(KITCHEN, action)
    assert (out.accepted, out.failed_checks, out.world is KITCHEN) == (False, checks, True)


def test_args_must_be_a_list_even_after_the_list_was_accepted():
    # The grounded-operator cache is keyed by the arguments as a tuple: a tuple, or a
    # string of one-letter ids, must not hit the entry of the same action given as a list.
    ex = Executor(RULES)
    w = World({"a": "counter", "b": "fridge"}, [("agent-at", "a")])
    assert ex.apply(w, {"type": "navigate", "args": ["a", "b"]}).accepted
    for args in (("a", "b"), "ab"):
        out = ex.apply(w, {"type": "navigate", "args": args})
        assert (out.accepted, out.failed_checks, out.world is w) == (False, ["field:args"], True)
        assert ex.check(w, {"type": "navigate", "args": args}) == ["field:args"]


def test_navigate_to_same_fixture_keeps_agent_there():
    # STRIPS deletes first, then adds: the agent stays where it was.
    out = EX.apply(KITCHEN, {"type": "navigate", "args": ["fridge", "fridge"]})
    assert out.accepted and out.world.holds(("agent-at", "fridge"))
    assert out.transition == {"added": [], "removed": []}


def test_rules_validation_names_the_problem():
    base = RULES.to_json()
    bad = {**base, "actions": {"x": {"family": "f", "params": [["o", "item"]],
                                     "pre": {"p": ["open", "o"]}}}}
    with pytest.raises(RulesError, match=r"actions.x.pre.p: parameter 'o' of type 'item'"):
        Rules.from_dict(bad)
    with pytest.raises(RulesError, match="parent"):
        Rules.from_dict({**base, "types": {"a": "b"}})
    assert Rules.from_dict(base).to_json() == base


def test_vocabulary_covers_hd_epic_families():
    fams = {a.family for a in RULES.actions.values()}
    assert len(RULES.actions) >= 60
    assert {"retrieve", "leave", "access", "block", "merge", "clean", "split", "transition",
            "manipulate", "monitor", "distribute", "order", "sense"} <= fams


# ----------------------------------------------------------------------- properties
seeds = st.integers(0, 2**32 - 1)


@settings(max_examples=60, deadline=None)
@given(seeds)
def test_invalid_actions_leave_the_hash_unchanged(seed):
    rng = random.Random(seed)
    w = random_world(rng)
    for _ in range(15):
        before = w.sha256()
        out = EX.apply(w, random_action(rng, w))
        if out.accepted:
            w = out.world
        else:
            assert out.world is w and w.sha256() == before and out.failed_checks
            assert out.transition is None and out.event is None


@settings(max_examples=40, deadline=None)
@given(seeds)
def test_same_sequence_same_outcomes(seed):
    rng = random.Random(seed)
    w0 = random_world(rng)
    actions, w = [], w0
    for _ in range(12):
        a = random_action(rng, w)
        actions.append(a)
        out = EX.apply(w, a)
        w = out.world
    def replay():
        w, rec = w0, []
        for a in actions:
            o = EX.apply(w, a)
            rec.append((o.accepted, o.failed_checks, o.transition, o.event, o.world.sha256()))
            w = o.world
        return rec
    assert replay() == replay()


def _expected(objects, facts, action):
    """Reference STRIPS semantics on a plain fact set: (failed checks, successor facts,
    transition), the checks by the compiled check on a freshly built world."""
    failed = EX.check(World(objects, facts), action)
    if failed:
        return failed, facts, None
    rule = RULES.actions[action["type"]]
    b = {p.name: x for p, x in zip(rule.params, action["args"])}
    dels, adds = {t.ground(b) for t in rule.delete}, {t.ground(b) for t in rule.add}
    return [], (facts - dels) | adds, {"added": [list(a) for a in sorted(adds - facts)],
                                       "removed": [list(a) for a in sorted((dels - adds) & facts)]}


@settings(max_examples=25, deadline=None)
@given(seeds)
def test_successors_stored_as_changes_agree_with_plain_fact_sets(seed):
    # A successor keeps only its change against a base (World._successor) until its facts
    # are read, and is materialised past a size bound: over long lineages, with facts read
    # at random points, every outcome must be the one computed on plain frozensets. Each
    # action is applied twice, so the second attempt takes the grounded fast path.
    rng = random.Random(seed)
    w = random_world(rng)
    facts = frozenset(w.facts)
    for _ in range(150):
        a = random_action(rng, World(w.objects, facts), p_junk=0.05)  # leaves w unread
        failed, after, transition = _expected(w.objects, facts, a)
        for out in (EX.apply(w, a), EX.apply(w, a)):
            assert out.failed_checks == failed and out.accepted == (not failed)
            assert out.transition == transition
            assert (out.world is w) == bool(failed)
        w = out.world
        if rng.random() < 0.02:
            assert w.facts == after
        assert all(w.holds(x) == (x in after) for x in facts | after)
        facts = after
    assert w.facts == facts and w == World(w.objects, facts)
    assert hash(w) == hash(facts) and w.sha256() == World(w.objects, facts).sha256()


def _touched(world, action):
    rule = RULES.actions[action["type"]]
    b = {p.name: x for p, x in zip(rule.params, action["args"])}
    return {c.atom.ground(b) for c in rule.pre} | {t.ground(b) for t in rule.add + rule.delete}


@settings(max_examples=80, deadline=None)
@given(seeds)
def test_independent_accepted_actions_commute(seed):
    rng = random.Random(seed)
    w = random_world(rng)
    # Find two actions, each applicable in w, touching disjoint atoms.
    found = None
    for _ in range(60):
        a, b = random_action(rng, w, p_junk=0), random_action(rng, w, p_junk=0)
        if EX.check(w, a) or EX.check(w, b):
            continue
        if not (_touched(w, a) & _touched(w, b)):
            found = (a, b)
            break
    if found is None:
        return
    a, b = found
    ab = EX.apply(EX.apply(w, a).world, b)
    ba = EX.apply(EX.apply(w, b).world, a)
    assert ab.accepted and ba.accepted
    assert ab.world.sha256() == ba.world.sha256()


def test_docs_table_is_generated_from_the_rules():
    from pathlib import Path
    doc = (Path(__file__).resolve().parents[1] / "docs" / "executor.md").read_text()
    assert RULES.markdown_table() in doc


# ------------------------------------------------------------ reachable work places
# Negative suites for the rule that work needs a reachable fixture (issue 18): each
# action is accepted on the counter and rejected, naming exactly `fixture_reachable`, in
# the same world with the vessel (or food) standing in an enclosing fixture instead.
_REACH = [
    ("stir", ["spoon", "pot", "F"], [("holding", "spoon"), ("at", "pot", "F")]),
    ("whisk", ["whisk", "pot", "F"], [("holding", "whisk"), ("at", "pot", "F")]),
    ("pour", ["milk", "jug", "pot", "F"], [("holding", "jug"), ("in", "milk", "jug"), ("at", "pot", "F")]),
    ("add_ingredient", ["onion", "pot", "F"], [("holding", "onion"), ("at", "pot", "F")]),
    ("empty_into", ["onion", "jug", "pot", "F"], [("holding", "jug"), ("in", "onion", "jug"),
                                                  ("at", "pot", "F")]),
    ("chop", ["onion", "knife", "F"], [("holding", "knife"), ("at", "onion", "F")]),
    ("chop_in_container", ["onion", "knife", "pot", "F"], [("holding", "knife"), ("at", "pot", "F"),
                                                           ("in", "onion", "pot")]),
    ("knead", ["onion", "F"], [("hand-empty",), ("at", "onion", "F")]),
]
_REACH_OBJECTS = {"counter": "counter", "cupboard": "cupboard", "fridge": "fridge", "oven": "oven",
                  "spoon": "spoon", "whisk": "whisk_tool", "pot": "pot", "jug": "jug", "milk": "milk",
                  "onion": "other_food", "knife": "knife"}


@pytest.mark.parametrize("typ,args,facts", _REACH, ids=[r[0] for r in _REACH])
@pytest.mark.parametrize("place", ["cupboard", "fridge", "oven"])
def test_work_inside_enclosing_storage_is_rejected(typ, args, facts, place):
    def world(f):
        sub = lambda xs: [f if x == "F" else x for x in xs]
        fs = [("agent-at", f)] + [tuple(sub(a)) for a in facts]
        fs += [("enclosing", x) for x in ("cupboard", "fridge", "oven")] + [("open", place)]
        return World(_REACH_OBJECTS, fs), {"type": typ, "args": sub(args)}
    w, a = world("counter")
    assert EX.apply(w, a).accepted
    w, a = world(place)
    out = EX.apply(w, a)
    assert not out.accepted and out.failed_checks == ["fixture_reachable"]


def test_reachability_guards_every_work_action():
    # the actions that work on something at a fixture (families merge/split/manipulate...)
    guarded = {n for n, a in RULES.actions.items() if "fixture_reachable" in {c.name for c in a.pre}}
    assert {"stir", "whisk", "pour", "add_ingredient", "empty_into", "chop", "chop_in_container",
            "peel", "grate", "break_into", "knead", "sprinkle", "squeeze"} <= guarded
    # retrieving and putting away stay possible in storage
    assert not guarded & {"take_from_storage", "put_in_storage", "pick_up", "put_on"}

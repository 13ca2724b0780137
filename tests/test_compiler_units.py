"""Fast unit tests of the compiler's pieces: fixture-phrase normalisation and the
commute check of the stress test (no HD-EPIC source needed)."""
import pytest

from analysis.compiler.audit import both_orders, find_commute_pair, independent
from analysis.compiler.fixtures import scene_fixtures
from analysis.compiler.normalise import fixture_id, fixture_phrase
from analysis.compiler.readers import Itinerary, LocationAnswer
from analysis.compiler.sim import Sim
from analysis.compiler.vocabulary import Vocabulary


@pytest.fixture(scope="module")
def vocab():
    return Vocabulary.load()


# The three phrasings the HD-EPIC README names, and what docs/compiler.md promises.
@pytest.mark.parametrize("phrase, fid", [
    ("counter left from sink", "counter_left_of_sink"),
    ("counter left of sink", "counter_left_of_sink"),
    ("counter top right of dishwasher", "counter_right_of_dishwasher"),
    ("At the counter to the right of the fridge.", "counter_right_of_fridge"),
    ("counter right of fridge", "counter_right_of_fridge"),
])
def test_fixture_phrases_map_to_one_id(phrase, fid):
    assert fixture_id(phrase) == fid


def test_fixture_phrase_is_idempotent():
    once = fixture_phrase("At the counter to the right of the fridge.")
    assert once == "counter right of fridge"
    assert fixture_phrase(once) == once


def test_scene_fixtures_merge_phrasings_per_scene(vocab):
    # two phrasings of one fixture in P01 (answer + itinerary) must give one record with
    # both phrases; the same phrase in another scene must not leak into P01.
    answers = [LocationAnswer("q1", "P01-20240202-110250", "take", 1.0, "counter left from sink"),
               LocationAnswer("q2", "P02-20240209-194141", "put", 2.0, "counter top right of dishwasher")]
    itins = [Itinerary("q3", "P01-20240202-110250", 5.0,
                       (("counter left of sink", "At the counter to the right of the fridge."),))]
    fx = scene_fixtures("P01", answers, {}, itins, {}, {}, vocab)
    by_id = {f["id"]: f for f in fx}
    assert sorted(by_id) == ["counter_left_of_sink", "counter_right_of_fridge"]
    assert by_id["counter_left_of_sink"]["phrases"] == ["counter left from sink", "counter left of sink"]
    assert by_id["counter_left_of_sink"]["type"] == "counter"
    # stable: same input in another order gives the same records
    assert scene_fixtures("P01", answers[::-1], {}, itins, {}, {}, vocab) == fx


# ---- commute check: a world small enough to check by hand
OBJECTS = {"counter": "counter", "cupboard": "cupboard", "cup": "cup", "plate": "plate",
           "lid": "lid"}


def test_independence_by_touched_atoms(vocab):
    sim = Sim(vocab)
    facts = frozenset({("agent-at", "counter"), ("hand-empty",), ("at", "cup", "counter"),
                       ("at", "plate", "counter")})
    pick_cup = {"type": "pick_up", "args": ["cup", "counter"]}
    pick_plate = {"type": "pick_up", "args": ["plate", "counter"]}
    cover_cup = {"type": "cover", "args": ["cup", "counter"]}
    cover_plate = {"type": "cover", "args": ["plate", "counter"]}
    # both pick-ups delete hand-empty: dependent
    assert not independent(sim, facts, pick_cup, pick_plate)
    # covering two different items touches disjoint atoms (shared read agent-at only)
    assert independent(sim, facts, cover_cup, cover_plate)
    # covering the cup while picking it up: pick_up reads at(cup) ... cover reads
    # not covered(cup) which pick_up does not write, but both are fine only if writes
    # are disjoint from the other's reads: pick_up deletes at(cup, counter), cover reads it
    assert not independent(sim, facts, pick_cup, cover_cup)
    same, detail = both_orders(OBJECTS, facts, cover_cup, cover_plate)
    assert same and "in both orders" in detail


def test_find_commute_pair_prefers_adjacent_reference_ops_and_reports_none(vocab):
    sim = Sim(vocab)
    s0 = frozenset({("agent-at", "counter"), ("hand-empty",), ("at", "cup", "counter"),
                    ("at", "plate", "counter")})
    ops = [{"type": "cover", "args": ["cup", "counter"]},
           {"type": "cover", "args": ["plate", "counter"]}]
    groups = [{"group_id": "e/g0000", "operations": ops}]
    task = {"task_id": "e/t000", "first": 0, "last": 0}
    s, a, b, how = find_commute_pair(sim, OBJECTS, groups, task, {-1: s0})
    assert (a, b) == tuple(ops) and how.startswith("adjacent reference operations")
    # a world where every applicable action touches the hand: no independent pair
    lone = frozenset({("agent-at", "counter"), ("holding", "cup")})
    ops2 = [{"type": "put_on", "args": ["cup", "counter"]}]
    assert find_commute_pair(sim, {"counter": "counter", "cup": "cup"},
                             [{"group_id": "e/g0000", "operations": ops2}], task, {-1: lone}) is None


# ------------------------------------------------------------ multi-condition contracts
class _StubSim:
    """Applies the effects an action spells in its args: ``"+in|water|cup"`` adds
    ``in(water, cup)``, ``"-hand-empty"`` deletes ``hand-empty`` (enough for ``goal_atoms``)."""
    def apply(self, objects, facts, action):
        eff = lambda sign: {tuple(a[1:].split("|")) for a in action["args"] if a[0] == sign}
        return True, [], frozenset((set(facts) - eff("-")) | eff("+"))


def _stub_task(ops_by_group, objects_by_group, c1):
    group_recs = [{"group_id": f"g{i}", "objects": objs, "operations": ops}
                  for i, (ops, objs) in enumerate(zip(ops_by_group, objects_by_group))]
    return group_recs, {"tier": "terminal", "first": 1, "last": 2,
                        "conditions": [{"id": "c1", "kind": "atom", "atom": c1}]}


def test_goal_atoms_rule_by_hand():
    from analysis.compiler.admission import replay
    from analysis.compiler.tasks import goal_atoms
    op = lambda add=(), dele=(): {"type": "x", "args": ["+" + "|".join(a) for a in add]
                                  + ["-" + "|".join(a) for a in dele]}
    init = frozenset({("agent-at", "counter"), ("hand-empty",), ("at", "cup", "shelf")})
    ops = [
        [op(add=[("cut", "lemon")])],                          # g0: before the task
        [op(add=[("holding", "cup")], dele=[("at", "cup", "shelf"), ("hand-empty",)]),
         op(add=[("at", "cup", "counter"), ("hand-empty",)], dele=[("holding", "cup")]),
         op(add=[("open", "fridge")]),                         # skipped predicate
         op(add=[("powered", "kettle")]),                      # kettle: not named
         op(add=[("mixed", "bowl")]),                          # transient: undone below
         op(dele=[("mixed", "bowl")])],
        [op(add=[("in", "water", "cup"), ("filled", "cup")]),  # filled: skipped
         op(add=[("in", "juice", "cup")]),                     # c1 itself
         op(add=[("cut", "orange")]),
         op(add=[("at", "spoon", "counter")])],
    ]
    objs = [["lemon"], ["cup", "bowl"], ["juice", "orange", "spoon"]]
    grecs, task = _stub_task(ops, objs, ["in", "juice", "cup"])
    sim = _StubSim()
    states, _, _ = replay(sim, {}, init, grecs)
    # in first, then at in establishment order, then attributes; capped at 3 extras;
    # cut(lemon) predates the task, open/filled/agent facts skipped, mixed(bowl) undone
    assert goal_atoms(task, sim, {}, states, grecs) == [
        ("in", "water", "cup"), ("at", "cup", "counter"), ("at", "spoon", "counter")]


def test_key_events_skip_movement_handling_and_duplicates():
    from analysis.compiler.tasks import key_events
    ev = lambda t, *a: {"type": t, "args": list(a)}
    events = {0: [ev("stir", "spoon", "pot", "hob")],
              1: [ev("navigate", "a", "b"), ev("pick_up", "spoon", "b"),
                  ev("stir", "spoon", "pot", "hob"), ev("pour", "oil", "bottle", "pot", "hob"),
                  ev("pour", "oil", "bottle", "pot", "hob"), ev("turn_on", "hob")],
              2: [ev("put_on", "spoon", "b"), ev("chop", "onion", "knife", "b"),
                  ev("cover", "pot", "hob")]}
    task = {"first": 1, "last": 2, "conditions": [
        {"id": "c1", "kind": "event", "event": ev("stir", "spoon", "pot", "hob")}]}
    assert key_events(task, events) == [ev("pour", "oil", "bottle", "pot", "hob"),
                                        ev("turn_on", "hob"), ev("chop", "onion", "knife", "b")]


def test_negative_suite_one_record_per_condition():
    from analysis.compiler.audit import negative_suites
    objects = {"juice": "food", "cup": "container", "counter": "fixture"}
    end = frozenset({("in", "juice", "cup"), ("at", "cup", "counter")})
    task = {"task_id": "e/t000", "first": 0, "last": 0, "conditions": [
        {"id": "c1", "kind": "atom", "atom": ["in", "juice", "cup"]},
        {"id": "c2", "kind": "atom", "atom": ["at", "cup", "counter"]}]}
    recs = negative_suites(task, {-1: frozenset(), 0: end}, {0: []}, objects)
    assert [(r["task_id"], r["condition_id"]) for r in recs] == [("e/t000", "c1"), ("e/t000", "c2")]
    assert [r["detail"].split(":")[0] for r in recs] == ["c1 in(juice, cup)", "c2 at(cup, counter)"]
    assert all(r["passed"] for r in recs)

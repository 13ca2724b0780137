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

"""Belief: evidence sources, persistent vs reset, and the three counters."""
import pytest

from analysis.executor.belief import Belief
from analysis.executor.observation import observe_region


def _obs(anchor, before, after, region="counter"):
    return observe_region(region, anchor, {("at", x, region) for x in before},
                          {("at", x, region) for x in after})


def test_unknown_memory_mode_lists_valid_ones():
    with pytest.raises(ValueError, match="persistent.*reset"):
        Belief("forever")


@pytest.mark.parametrize("memory,kept", [("persistent", True), ("reset", False)])
def test_group_boundary(memory, kept):
    b = Belief(memory)
    b.begin_group(0)
    b.observe(_obs(["glass"], ["glass"], ["glass"]))
    b.begin_group(1)
    assert (b.location("glass") == ("at", "counter")) is kept
    assert b.knows_region("counter") is kept


def test_cross_group_hits_count_only_earlier_group_facts():
    b = Belief("persistent")
    b.begin_group(0)
    b.set_location("glass", ("at", "counter"), "observation")
    b.location("glass")
    assert b.take_counters()["cross_group_hits"] == 0    # stored in this group
    b.begin_group(1)
    b.location("glass"); b.location("glass"); b.location("nothing")
    assert b.take_counters()["cross_group_hits"] == 2
    b.set_location("glass", ("at", "sink"), "action")    # re-stored in group 1
    b.location("glass")
    assert b.take_counters()["cross_group_hits"] == 0


def test_repeated_region_queries_survive_reset():
    b = Belief("reset")
    b.begin_group(0)
    assert b.note_query("fridge") is False
    b.begin_group(1)
    assert b.note_query("fridge") is True and b.note_query("sink") is False
    assert b.take_counters()["repeated_region_queries"] == 1


def test_anchor_delta_conflict_counted_only_when_belief_must_resolve_it():
    moved = _obs(["glass"], ["glass"], [])              # anchor shows it, delta removed it
    b = Belief("persistent")
    b.begin_group(0)
    b.observe(moved)
    assert b.take_counters()["anchor_delta_conflicts"] == 1
    assert b.location("glass") is None                   # destination unknown
    b.set_location("glass", ("at", "sink"), "action")    # the agent moved it itself
    b.observe(moved)
    assert b.take_counters()["anchor_delta_conflicts"] == 0
    assert b.location("glass") == ("at", "sink")


def test_sources_and_updates_from_actions_and_feedback():
    b = Belief("persistent")
    b.begin_group(0)
    b.observe(_obs(["glass"], ["glass"], ["glass"]))
    assert b.locations["glass"].source == "observation"
    b.apply_transition(added=[["holding", "glass"]], removed=[["at", "glass", "counter"]])
    assert b.location("glass") == ("held",) and b.locations["glass"].source == "action"
    b.apply_transition(added=[["at", "glass", "cupboard"]], removed=[["holding", "glass"]])
    b.apply_feedback([(True, ("at", "glass", "cupboard")), (True, ("open", "cupboard"))])
    assert b.location("glass") is None
    assert b.is_open("cupboard") is False and b.open_states["cupboard"].source == "feedback"
    b.apply_feedback([(False, ("open", "fridge"))])      # "must be closed" failed: it is open
    assert b.is_open("fridge") is True


def test_as_dict_counts_earlier_group_facts_rendered():
    b = Belief("persistent")
    b.begin_group(0)
    b.set_location("a", ("at", "r"), "observation")
    b.set_open("fridge", True, "action")
    b.begin_group(1)
    d = b.as_dict()
    assert d["locations"]["a"] == {"where": ["at", "r"], "source": "observation"}
    assert b.take_counters()["cross_group_hits"] == 2

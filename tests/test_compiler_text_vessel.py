"""An untracked vessel the step text names (grounder.text_vessel, issue 34) is not invented
where a tracked vessel of its kind may be it (P09-20240622-150155: "into a pot" while a
"red saucepan" is handled just before the step)."""
import pytest

from analysis.compiler.readers import ClassTable
from analysis.compiler.vocabulary import Vocabulary


@pytest.fixture(scope="module")
def vocab():
    return Vocabulary.load()


def _add(vocab, tracks, text="Add the lettuce into a pot."):
    """One video ``v``: step S01 (100-110 s) of recipe R, the lettuce added at 104-106 s
    (no lettuce track), the tracks ``(name, start, end)``; ``(world, grounding)``."""
    from analysis.compiler.grounding import ground
    from analysis.compiler.readers import (Association, Capture, IngredientEvent, Recipe, Span,
                                           StepSegment, Track)
    from analysis.compiler.worlds import build_world
    assocs = [Association("v", f"a{i}", n, n, (Track(f"t{i}", a, b),)) for i, (n, a, b) in enumerate(tracks)]
    cap = Capture("R", 0, ("v",), {"I01": "lettuce"}, (IngredientEvent("I01", "lettuce", "add", Span("v", 104.0, 106.0)),),
                  (StepSegment("S01", "step", Span("v", 100.0, 110.0)),))
    recipe = Recipe("R", "P01", "test", {"S01": text}, (cap,))
    world = build_world("v", "P01", ["v"], [{"id": "counter", "type": "counter"}], "counter",
                        {"v": assocs}, [], [], {"R": recipe}, ClassTable({}, {}, {}), vocab)
    return world, ground(world, {"R": recipe}, vocab)


def _vessels(g):
    return [p.roles["c"] for p in g.planned if p.kind == "add"]


def _reason(g):
    """The add's drop reason (a source check of the untracked lettuce, then the target's)."""
    return next(d["reason"] for d in g.dropped if d["kind"] == "add")


def test_no_untracked_pot_where_a_tracked_pan_is_handled_just_before_the_step(vocab):
    # no tracked object is a "pot": alone, the pot is an untracked entity (curated place)
    _, g = _add(vocab, [])
    assert _vessels(g) == ["pot"] and g.objects["pot"] == "pot"
    # a "red saucepan" (a pan: one kind with a pot) put down 5 s before the step starts:
    # it may be the pot the text means; the add stays open, no pot is invented
    _, g = _add(vocab, [("red saucepan", 90.0, 95.0)])
    assert _vessels(g) == [] and "pot" not in g.objects
    assert _reason(g).endswith(
        "step text names 'pot', and no object of the episode has that noun; red_saucepan (a pan; handled "
        "90.00-95.00 s), handled in the step's segments or the 60 s before one, may be the pot it means: "
        "no untracked pot is created")
    # handled inside the step, after the add (108-109 s): the same
    _, g = _add(vocab, [("saucepan", 108.0, 109.0)])
    assert _vessels(g) == [] and "pot" not in g.objects
    # the text names a pan, a tracked "pot" is handled in the step: the same, either way round
    _, g = _add(vocab, [("pot", 101.0, 102.0)], text="Add the lettuce into a pan.")
    assert _vessels(g) == [] and "pan" not in g.objects


def test_an_untracked_pot_is_still_created_where_no_vessel_of_its_kind_is_near(vocab):
    # a saucepan last handled 75 s before the step starts (more than 60 s): not near the
    # unit; a bowl just before it is no pot; a pan in another step's time is not counted
    for tracks in ([("saucepan", 20.0, 25.0)], [("bowl", 90.0, 95.0)], [("saucepan", 111.0, 120.0)]):
        _, g = _add(vocab, tracks)
        assert _vessels(g) == ["pot"] and g.objects["pot"] == "pot", tracks

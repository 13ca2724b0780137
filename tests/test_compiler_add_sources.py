"""What a tracked object named for an ingredient is to its add (grounding.sources, issue 34):
the lemon half a juice is squeezed from and the jar a spread is scooped out of are the
ingredient's source, never the thing put in (P05_R01 S11 lemon juice, P05_R06_S04 peanut
butter: the squeezed lemon half and the whole jar were 'added' to the pan)."""
import pytest

from analysis.compiler.readers import ClassTable
from analysis.compiler.vocabulary import Vocabulary


#: HD-EPIC's noun classes of the foods (a lemon is a fruit, an onion a vegetable)
NOUNS = ClassTable({"lemon": "fruits and nuts", "onion": "vegetables"},
                   {"lemon": "lemon", "second half of lemon": "lemon", "onion": "onion"}, {})


@pytest.fixture(scope="module")
def vocab():
    return Vocabulary.load()


def _add(vocab, name, tracks):
    """One video ``v``: step S01 (100-110 s) "Add the <name> into the pan.", the add at
    104-106 s, a pan put down at 95 s and the tracks ``(name, start, end)``; the grounding."""
    from analysis.compiler.grounding import ground
    from analysis.compiler.readers import (Association, Capture, IngredientEvent, Recipe, Span,
                                           StepSegment, Track)
    from analysis.compiler.worlds import build_world
    tracks = [("pan", 90.0, 95.0)] + tracks
    assocs = [Association("v", f"a{i}", n, n, (Track(f"t{i}", a, b),)) for i, (n, a, b) in enumerate(tracks)]
    cap = Capture("R", 0, ("v",), {"I01": name}, (IngredientEvent("I01", name, "add", Span("v", 104.0, 106.0)),),
                  (StepSegment("S01", "step", Span("v", 100.0, 110.0)),))
    recipe = Recipe("R", "P01", "test", {"S01": f"Add the {name} into the pan."}, (cap,))
    world = build_world("v", "P01", ["v"], [{"id": "counter", "type": "counter"}], "counter",
                        {"v": assocs}, [], [], {"R": recipe}, NOUNS, vocab)
    return ground(world, {"R": recipe}, vocab)


def _ops(g):
    return [(p.action, p.roles) for p in g.planned if p.kind == "add"]


def _reason(g):
    return next(d["reason"] for d in g.dropped if d["kind"] == "add")


def test_a_juice_is_squeezed_from_its_fruit_which_never_goes_in(vocab):
    from analysis.compiler.grounding import add_drop_class
    g = _add(vocab, "lemon juice", [("second half of lemon", 103.0, 107.0)])
    assert _ops(g) == []
    assert _reason(g) == (
        "the tracked object is the ingredient's source: lemon (a fruit, track 103.00-107.00 s): "
        "'lemon juice' is squeezed from the lemon it is named for, which never goes in itself; the executor "
        "pours a substance only out of a container and a fruit is none: not compiled")
    assert add_drop_class(_reason(g)) == "source_not_added"
    # a bottle of the juice is its container: poured from, as before
    g = _add(vocab, "lemon juice", [("lemon juice bottle", 103.0, 107.0)])
    assert _ops(g) == [("pour", {"s": "juice", "src": "lemon_juice_bottle", "dst": "pan"})]


def test_a_spread_whose_lid_is_handled_or_that_a_spoon_scoops_is_its_container(vocab):
    # the jar tracked as "peanut butter", its lid taken off during its track
    g = _add(vocab, "peanut butter", [("peanut butter", 102.0, 108.0), ("lid of peanut butter", 102.5, 103.0)])
    assert _ops(g) == [] and "(its lid lid_peanut_butter is handled 102.50-103.00 s): it is the " \
        "ingredient's container; the executor pours a substance only out of a container and a butter is none" \
        in _reason(g)
    # no lid, but held through the whole add while a spoon is handled inside its track
    g = _add(vocab, "peanut butter", [("peanut butter", 102.0, 108.0), ("spoon", 103.0, 107.0)])
    assert _ops(g) == [] and "held through the add while spoon (a spoon) is handled 103.00-107.00 s: " \
        "scooped from" in _reason(g)
    # neither: the tracked peanut butter is what goes in (as before)
    g = _add(vocab, "peanut butter", [("peanut butter", 102.0, 108.0)])
    assert _ops(g) == [("add_ingredient", {"o": "peanut_butter", "c": "pan"})]
    # a spoon a bit beyond the track's end (more than 1 s) is not scooping from it
    g = _add(vocab, "peanut butter", [("peanut butter", 102.0, 108.0), ("spoon", 103.0, 110.0)])
    assert _ops(g) == [("add_ingredient", {"o": "peanut_butter", "c": "pan"})]


def test_a_whole_food_added_while_a_spoon_is_held_is_still_what_goes_in(vocab):
    # an onion is no jar: a spoon stirring while it goes in does not make it a container
    g = _add(vocab, "onion", [("onion", 102.0, 108.0), ("spoon", 103.0, 107.0)])
    assert _ops(g) == [("add_ingredient", {"o": "onion", "c": "pan"})]

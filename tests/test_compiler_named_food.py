"""An add no track overlaps, of a food the episode tracks under another name (grounding.
named_food, issue 34): the add binds the one tracked food its head noun names, or is
refused; never a second, curated entity of the same object (P08-20240613-123547: the
"sourdough baguette" of the add row placed in the fridge beside the tracked "baguette").

Hand-checkable: video "v", step S01 100-110 s "Add the <name> to the mortar.", the add
104-106 s, the mortar handled 103-105 s (the vessel), the food tracks as given."""
import pytest

from analysis.compiler.grounding.named_food import names_food
from analysis.compiler.grounding.text import words
from analysis.compiler.readers import ClassTable
from analysis.compiler.vocabulary import Vocabulary
from test_compiler_grounding import _checks

MORTAR = ("mortar", 103.0, 105.0)
#: HD-EPIC's noun classes of the onions, garlic and celery (vegetables: foods)
NOUNS = ClassTable({"onion": "vegetables", "garlic": "vegetables", "celery": "vegetables"},
                   {"onion": "onion", "red onion": "onion", "spring onion": "onion", "garlic": "garlic",
                    "garlic clove": "garlic", "clove:garlic": "garlic", "celery": "celery"}, {})


def _untracked_add(vocab, tracks, text, name):
    """The grounding of the add of ``name`` (104-106 s) in step S01 (100-110 s, ``text``);
    a track is (name, start, end), or (name, [(start, end), ...]) for one object's several."""
    from analysis.compiler.grounding import ground
    from analysis.compiler.readers import (Association, Capture, IngredientEvent, Recipe, Span,
                                           StepSegment, Track)
    from analysis.compiler.worlds import build_world
    assocs = [Association("v", f"a{i}", x[0], x[0], tuple(Track(f"t{i}_{k}", a, b) for k, (a, b) in
                                                         enumerate(x[1] if len(x) == 2 else [x[1:]])))
              for i, x in enumerate(tracks)]
    cap = Capture("R", 0, ("v",), {"I01": name}, (IngredientEvent("I01", name, "add", Span("v", 104.0, 106.0)),),
                  (StepSegment("S01", "step", Span("v", 100.0, 110.0)),))
    recipe = Recipe("R", "P01", "test", {"S01": text}, (cap,))
    world = build_world("v", "P01", ["v"], [{"id": "counter", "type": "counter"}], "counter",
                        {"v": assocs}, [], [], {"R": recipe}, NOUNS, vocab)
    return world, ground(world, {"R": recipe}, vocab)


@pytest.fixture(scope="module")
def vocab():
    return Vocabulary.load()


def _adds(g):
    return [(p.action, p.roles, p.pickup) for p in g.planned if p.kind == "add"]


def test_a_head_noun_names_a_food_in_either_number_or_by_its_part():
    assert names_food(words("red onion"), "onion") and names_food(words("red onions"), "onion")
    assert names_food(words("green chillies"), "chilli")            # "chilly" is spelled chilli
    assert names_food(words("twigs of coriander leaves"), "coriander")
    assert not names_food(words("ginger root"), "ginger")          # the head is root
    assert not names_food(words("onion bag"), "onion")              # the head is bag


def test_an_add_named_more_fully_than_its_one_tracked_food_binds_that_food(vocab):
    from analysis.compiler.grounding import WHERE_IT_STANDS
    # "red onions" goes in; the episode tracks one "onion" (chopped 50-52 s), never after
    _, g = _untracked_add(vocab, [("onion", 50.0, 52.0), MORTAR], text="Add the red onions to the mortar.",
                          name="red onions")
    assert _adds(g) == [("add_ingredient", {"o": "onion", "c": "mortar"}, WHERE_IT_STANDS)]
    assert not [f for f in g.facts if f[1] in ("red_onions", "onion") and f[0] == "at"]   # nothing curated
    assert _checks(g) == []


def test_an_add_whose_head_noun_names_several_tracked_foods_is_refused(vocab):
    # "red onion" and "spring onion" both tracked: which went in is not observed
    _, g = _untracked_add(vocab, [("red onion", 50.0, 52.0), ("spring onion", 60.0, 62.0), MORTAR],
                          text="Add the red onions to the mortar.", name="red onions")
    assert _adds(g) == []
    assert [c["check"] for c in _checks(g)] == ["add_without_track"]
    assert ("'red onions' names 2 tracked foods (red_onion, spring_onion): which one went in is not "
            "observed") in _checks(g)[0]["reason"]
    assert not [f for f in g.facts if f[1] == "red_onions"]


def test_an_add_whose_one_tracked_food_is_handled_after_it_is_refused(vocab):
    # the onion is tracked again at 120 s: what went in at 104 s may not be the tracked one
    _, g = _untracked_add(vocab, [("onion", [(50.0, 52.0), (120.0, 122.0)]), MORTAR],
                          text="Add the red onions to the mortar.", name="red onions")
    assert _adds(g) == []
    assert ("'red onions' names the tracked onion, tracked after the add (120.00 s in v)"
            in _checks(g)[0]["reason"])


def test_an_add_whose_one_tracked_food_is_two_objects_at_once_is_refused(vocab):
    # two tracks of the onion overlap (50-56 s and 54-58 s): several objects, not one
    _, g = _untracked_add(vocab, [("onion", [(50.0, 56.0), (54.0, 58.0)]), MORTAR],
                          text="Add the red onions to the mortar.", name="red onions")
    assert _adds(g) == []
    assert "names the tracked onion, two of whose tracks overlap" in _checks(g)[0]["reason"]


def test_an_add_naming_no_tracked_food_still_gets_its_curated_entity(vocab):
    # the onion bag is no food: the red onions stand alone, curated as before
    _, g = _untracked_add(vocab, [("onion bag", 50.0, 52.0), MORTAR], text="Add the red onions to the mortar.",
                          name="red onions")
    assert _adds(g) == [("add_ingredient", {"o": "red_onions", "c": "mortar"}, "counter")]
    assert g.facts[("at", "red_onions", "counter")]["source"] == "curated"


def test_an_ingredient_tracked_under_its_own_name_is_one_of_the_tracked_foods_it_names(vocab):
    # P04-20240415-175615 P04_R06_I19 "garlic": the entity id garlic is tracked (50-52 s), and
    # so is a "garlic clove" (60-62 s): its id alone never decides which went in (one rule
    # with a food tracked under another name: several named, refused)
    _, g = _untracked_add(vocab, [("garlic", 50.0, 52.0), ("garlic clove", 60.0, 62.0), MORTAR],
                          text="Add the garlic to the mortar.", name="garlic")
    assert _adds(g) == []
    assert [c["check"] for c in _checks(g)] == ["add_without_track"]
    assert "'garlic' names 2 tracked foods (garlic, garlic_clove): which one went in" in _checks(g)[0]["reason"]
    # the garlic alone: it goes in from where it stands
    from analysis.compiler.grounding import WHERE_IT_STANDS
    _, g = _untracked_add(vocab, [("garlic", 50.0, 52.0), MORTAR], text="Add the garlic to the mortar.",
                          name="garlic")
    assert _adds(g) == [("add_ingredient", {"o": "garlic", "c": "mortar"}, WHERE_IT_STANDS)]


def test_an_ingredient_tracked_under_its_own_name_after_the_add_is_refused(vocab):
    # the garlic clove is tracked after the add (120 s), the garlic before: two named, and
    # the one handled later is as likely what went in (P04's "few cloves of garlic")
    _, g = _untracked_add(vocab, [("garlic", 50.0, 52.0), ("garlic clove", 120.0, 122.0), MORTAR],
                          text="Add the garlic to the mortar.", name="garlic")
    assert _adds(g) == []
    assert "'garlic' names 2 tracked foods" in _checks(g)[0]["reason"]
    # the garlic itself handled again at 120 s: refused by the same rule as another name's
    _, g = _untracked_add(vocab, [("garlic", [(50.0, 52.0), (120.0, 122.0)]), MORTAR],
                          text="Add the garlic to the mortar.", name="garlic")
    assert _adds(g) == []
    assert "'garlic' names the tracked garlic, tracked after the add (120.00 s in v)" in _checks(g)[0]["reason"]


def test_an_ingredient_tracked_under_its_own_name_keeps_its_overlapping_tracks_one_food(vocab):
    # P08's celery: a 0.4 s track inside another while it is cut (50-56 s, 52-52.4 s) is its
    # pieces; under its own name it is the food, and it goes in
    from analysis.compiler.grounding import WHERE_IT_STANDS
    _, g = _untracked_add(vocab, [("celery", [(50.0, 56.0), (52.0, 52.4)]), MORTAR],
                          text="Add the celery to the mortar.", name="celery")
    assert _adds(g) == [("add_ingredient", {"o": "celery", "c": "mortar"}, WHERE_IT_STANDS)]

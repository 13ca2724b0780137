"""An add no track overlaps, of a food the episode tracks under another name (grounding.
named_food, issue 34): the add binds the one tracked food its head noun names, or is
refused; never a second, curated entity of the same object (P08-20240613-123547: the
"sourdough baguette" of the add row placed in the fridge beside the tracked "baguette").

Hand-checkable: video "v", step S01 100-110 s "Add the <name> to the mortar.", the add
104-106 s, the mortar handled 103-105 s (the vessel), the food tracks as given."""
import pytest

from analysis.compiler.grounding.named_food import is_plural, names_food
from analysis.compiler.grounding.text import words
from analysis.compiler.readers import ClassTable
from analysis.compiler.vocabulary import Vocabulary
from test_compiler_grounding import _checks

MORTAR = ("mortar", 103.0, 105.0)
#: HD-EPIC's noun classes of the onions, garlic and celery (vegetables: foods)
NOUNS = ClassTable({"onion": "vegetables", "garlic": "vegetables", "celery": "vegetables", "carrot": "vegetables"},
                   {"onion": "onion", "red onion": "onion", "spring onion": "onion", "garlic": "garlic",
                    "garlic clove": "garlic", "clove:garlic": "garlic", "celery": "celery", "carrot": "carrot",
                    "baby carrot": "carrot"}, {})


def _untracked_add(vocab, tracks, text, name, other=None):
    """The grounding of the add of ``name`` (104-106 s) in step S01 (100-110 s, ``text``);
    a track is (name, start, end), or (name, [(start, end), ...]) for one object's several;
    ``other``: the name of a second add row (I02, 20-22 s, before the step)."""
    from analysis.compiler.grounding import ground
    from analysis.compiler.readers import (Association, Capture, IngredientEvent, Recipe, Span,
                                           StepSegment, Track)
    from analysis.compiler.worlds import build_world
    assocs = [Association("v", f"a{i}", x[0], x[0], tuple(Track(f"t{i}_{k}", a, b) for k, (a, b) in
                                                         enumerate(x[1] if len(x) == 2 else [x[1:]])))
              for i, x in enumerate(tracks)]
    more = (IngredientEvent("I02", other, "add", Span("v", 20.0, 22.0)),) if other else ()
    cap = Capture("R", 0, ("v",), {"I01": name, **({"I02": other} if other else {})},
                  (IngredientEvent("I01", name, "add", Span("v", 104.0, 106.0)),) + more,
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


# ----------------------------------------------------- a plural ingredient's tracked pieces
# P02-20240209-184316 P02_R01_I01 "onions": onion and onion2, each chopped and put down
# before the add, never handled again; P05-20240427-145526 "carrots": carrot1 and carrot2
CARROTS = [("carrot1", 50.0, 52.0), ("carrot2", 53.0, 55.0), MORTAR]
CARROTS_TEXT = "Add the carrots to the mortar."


def _refusal(g):
    assert _adds(g) == [] and [c["check"] for c in _checks(g)] == ["add_without_track"]
    return _checks(g)[0]["reason"]


def test_a_plural_ingredient_binds_every_piece_its_head_noun_names(vocab):
    from analysis.compiler.grounding import WHERE_IT_STANDS
    _, g = _untracked_add(vocab, CARROTS, text=CARROTS_TEXT, name="carrots")
    assert _adds(g) == [("add_ingredient", {"o": "carrot1", "c": "mortar"}, WHERE_IT_STANDS),
                        ("add_ingredient", {"o": "carrot2", "c": "mortar"}, WHERE_IT_STANDS)]
    adds = [p for p in g.planned if p.kind == "add"]
    assert [p.what for p in adds] == ["add I01 (carrots): carrot1", "add I01 (carrots): carrot2"]
    assert {p.evidence["o"]["evidence"] for p in adds} == {"plural_ingredient_all_pieces"}
    # each piece cites its own last track (carrot2: 53-55 s)
    assert [(p.evidence["o"]["last_track"]["name"], p.evidence["o"]["last_track"]["end"]) for p in adds] == [
        ("carrot1", 52.0), ("carrot2", 55.0)]
    assert not [f for f in g.facts if f[0] == "at" and f[1] in ("carrot1", "carrot2", "carrots")]
    assert _checks(g) == []


def test_a_plural_name_is_told_from_a_singular_and_a_mass_noun():
    assert is_plural("finger chillies") and is_plural("chicken breasts") and is_plural("mangoes")
    assert not is_plural("mango") and not is_plural("broccoli") and not is_plural("asparagus")


def test_the_pieces_are_refused_when_the_ingredient_is_singular(vocab):
    _, g = _untracked_add(vocab, CARROTS, text="Add the carrot to the mortar.", name="carrot")
    assert "names 2 tracked foods (carrot1, carrot2): which one went in is not observed (the ingredient is " \
           "named in the singular)" in _refusal(g)


def test_the_pieces_are_refused_when_one_is_handled_at_or_after_the_add(vocab):
    _, g = _untracked_add(vocab, [("carrot1", 50.0, 52.0), ("carrot2", [(53.0, 55.0), (120.0, 121.0)]), MORTAR],
                          text=CARROTS_TEXT, name="carrots")
    assert "(carrot2 is tracked at or after the add)" in _refusal(g)


def test_the_pieces_are_refused_when_their_names_differ_or_a_track_names_several(vocab):
    # a baby carrot is not a piece of the same food as a carrot
    _, g = _untracked_add(vocab, [("carrot", 50.0, 52.0), ("baby carrot", 53.0, 55.0), MORTAR],
                          text=CARROTS_TEXT, name="carrots")
    assert "(the tracks name them by different words (not the pieces of one food))" in _refusal(g)
    # a track named "carrots" is several at once, or their pack (P02's "tomatoes")
    _, g = _untracked_add(vocab, [("carrots", 40.0, 45.0), ("carrot1", 50.0, 52.0), MORTAR],
                          text=CARROTS_TEXT, name="carrots")
    assert "(a track names several at once (carrot))" in _refusal(g)


def test_the_pieces_are_refused_when_there_are_more_than_five(vocab):
    many = [(f"carrot{i}", 40.0 + 2 * i, 41.0 + 2 * i) for i in range(1, 7)] + [MORTAR]
    _, g = _untracked_add(vocab, many, text=CARROTS_TEXT, name="carrots")
    assert "names 6 tracked foods" in _refusal(g) and "(more than 5 pieces)" in _refusal(g)


def test_the_pieces_are_refused_when_another_add_row_names_them(vocab):
    # an earlier "carrot" add (20-22 s): which piece went in by which row is not observed
    _, g = _untracked_add(vocab, CARROTS, text=CARROTS_TEXT, name="carrots", other="carrot")
    reasons = [c["reason"] for c in _checks(g)]
    assert any("(another add row (I02, 'carrot') names them too)" in r for r in reasons)
    assert not [p for p in g.planned if p.kind == "add" and p.hold in ("carrot1", "carrot2")]


def test_a_cube_names_the_food_before_it_for_tracks_and_ingredients_alike():
    # a track "X cube" names food X; an ingredient "Y cube" is food Y in cubes (food_head)
    from analysis.compiler.grounding.adds import names_ingredient
    from analysis.compiler.grounding.named_food import food_head
    assert names_food(words("butter cube"), "butter") and not names_food(words("butter cube"), "cube")
    assert food_head(words("chicken stock cube")) == "stock" and food_head(words("unsalted butter")) == "butter"
    for track in ("stock cube", "chicken stock cube", "another stock cube", "one cube of stock"):
        assert names_food(words(track), food_head(words("chicken stock cube"))), track
    assert not names_food(words("chicken stock cube"), "chicken")       # a stock cube is no chicken
    assert not names_food(words("ice cube tray"), "ice")                # a tray
    # the tracked path reads a track alike: the "butter cube" is the unsalted butter, the
    # "chicken stock cube" is no chicken breast (the word before the cube decides)
    assert names_ingredient(words("butter cube"), {"unsalted", "butter"})
    assert not names_ingredient(words("chicken stock cube"), {"chicken", "breast"})
    assert names_ingredient(words("chicken stock cube"), {"chicken", "stock", "cube"})


def test_a_tracked_cube_of_the_ingredient_during_its_add_is_what_goes_in(vocab):
    # P01_R09 (P01-20240204-121042): "butter cube" tracked 36.67-37.30 s, the unsalted butter
    # added 37.0-41.0 s: the cube is the ingredient's track; here 103.5-104.5 s, the add 104-106 s
    _, g = _untracked_add(vocab, [("butter cube", 103.5, 104.5), MORTAR],
                          text="Add the butter to the mortar.", name="unsalted butter")
    assert [(a, r) for a, r, _ in _adds(g)] == [("add_ingredient", {"o": "butter_cube", "c": "mortar"})]
    assert _checks(g) == []


def test_a_stock_cube_ingredient_still_names_its_tracked_stock_cubes(vocab):
    # no track overlaps the add: "chicken stock cube" names the one tracked "stock cube"
    # (handled 50-52 s), and with a second one (60-62 s) is refused: which went in is not observed
    from analysis.compiler.grounding import WHERE_IT_STANDS
    _, g = _untracked_add(vocab, [("stock cube", 50.0, 52.0), MORTAR],
                          text="Add the stock cube to the mortar.", name="chicken stock cube")
    assert _adds(g) == [("add_ingredient", {"o": "stock_cube", "c": "mortar"}, WHERE_IT_STANDS)]
    _, g = _untracked_add(vocab, [("stock cube", 50.0, 52.0), ("chicken stock cube", 60.0, 62.0), MORTAR],
                          text="Add the stock cube to the mortar.", name="chicken stock cube")
    assert _adds(g) == [] and "names 2 tracked foods (chicken_stock_cube, stock_cube)" in _checks(g)[0]["reason"]


def test_a_whole_cut_into_tracked_pieces_is_one_food_and_the_add_binds_the_pieces(vocab):
    from analysis.compiler.grounding import WHERE_IT_STANDS
    # P08-20240614-125650: the carrot (50-60 s) is cut, its "carrot pieces" tracked from 60.5 s
    _, g = _untracked_add(vocab, [("carrot", 50.0, 60.0), ("carrot pieces", 60.5, 70.0), MORTAR],
                          text=CARROTS_TEXT, name="carrots")
    assert _adds(g) == [("add_ingredient", {"o": "carrot_piece", "c": "mortar"}, WHERE_IT_STANDS)]
    assert _checks(g) == []


def test_pieces_tracked_before_the_whole_ends_are_not_cut_from_it(vocab):
    # the pieces first tracked at 55 s, while the whole carrot is still tracked (50-60 s)
    _, g = _untracked_add(vocab, [("carrot", 50.0, 60.0), ("carrot pieces", 55.0, 70.0), MORTAR],
                          text=CARROTS_TEXT, name="carrots")
    assert "names 2 tracked foods (carrot, carrot_piece)" in _refusal(g)

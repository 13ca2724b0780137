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
    # it may be the pot the text means; with no activity row to say so (below), the add
    # stays open, no pot is invented
    _, g = _add(vocab, [("red saucepan", 90.0, 95.0)])
    assert _vessels(g) == [] and "pot" not in g.objects
    assert _reason(g).endswith(
        "step text names 'pot', and no object of the episode has that noun; red_saucepan (a pan; handled "
        "90.00-95.00 s), handled in the step's segments or the 60 s before one, may be the pot it means: "
        "no untracked pot is created (no activity row of the recipe spanning the add names the food or the vessel)")
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


def _row_add(vocab, tracks, label, recipes=("R",), extra=None):
    """As ``_add``, with one activity row (recipes ``recipes``, 98-112 s, ``label``) and,
    with ``extra``, a second recipe Q whose step S01 (60-80 s) holds ``extra``'s times."""
    from analysis.compiler.grounding import ground
    from analysis.compiler.readers import (Activity, Association, Capture, IngredientEvent, Recipe, Span,
                                           StepSegment, Track)
    from analysis.compiler.worlds import build_world
    assocs = [Association("v", f"a{i}", n, n, (Track(f"t{i}", a, b),)) for i, (n, a, b) in enumerate(tracks)]
    cap = Capture("R", 0, ("v",), {"I01": "lettuce"}, (IngredientEvent("I01", "lettuce", "add", Span("v", 104.0, 106.0)),),
                  (StepSegment("S01", "step", Span("v", 100.0, 110.0)),))
    recipes = {"R": Recipe("R", "P01", "test", {"S01": "Add the lettuce into a pot."}, (cap,))}
    if extra:
        qcap = Capture("Q", 0, ("v",), {}, (), (StepSegment("S01", "step", Span("v", *extra)),))
        recipes["Q"] = Recipe("Q", "P01", "other", {"S01": "Boil the potatoes."}, (qcap,))
    rows = [Activity("v", recipes_, label, 98.0, 112.0, False, "P01_recipe_timestamps.csv:9")
            for recipes_ in [tuple(recipes)]] if label else []
    world = build_world("v", "P01", ["v"], [{"id": "counter", "type": "counter"}], "counter",
                        {"v": assocs}, [], [], recipes, ClassTable({}, {}, {}), vocab)
    return ground(world, recipes, vocab, rows)


def test_the_one_tracked_vessel_of_its_kind_the_add_row_corroborates_is_bound(vocab):
    # "into a pot", no object is a pot; the red saucepan (a pan: one kind) is put down 5 s
    # before the step; the activity row spanning the add names the food: it is the pot
    g = _row_add(vocab, [("red saucepan", 90.0, 95.0)], "Measure lettuce and add to water")
    assert _vessels(g) == ["red_saucepan"] and "pot" not in g.objects
    ev = next(p.evidence["c"] for p in g.planned if p.kind == "add")
    assert ev["evidence"] == "step_text" and ev["row"] == "P01_recipe_timestamps.csv:9"
    assert "red_saucepan (a pan, one kind with a pot) is the only vessel of its kind handled from 60 s before " \
           "the add to the end of activity row P01_recipe_timestamps.csv:9 'Measure lettuce and add to water' " \
           "(spanning the add, naming the food)" in ev["how"]
    # a row naming the vessel ("Pour oil into saucepan") corroborates as well; the saucepan
    # picked up right after the add, inside the row (108-109 s), is bound the same way
    g = _row_add(vocab, [("saucepan", 108.0, 109.0)], "Stir the saucepan")
    assert _vessels(g) == ["saucepan"]


def test_no_corroborating_row_or_two_vessels_leave_the_add_open(vocab):
    # a row naming neither the food nor a vessel noun: no binding, no pot invented
    g = _row_add(vocab, [("red saucepan", 90.0, 95.0)], "Clean up")
    assert _vessels(g) == [] and "pot" not in g.objects
    assert _reason(g).endswith("no untracked pot is created (no activity row of the recipe spanning the add "
                               "names the food or the vessel)")
    # two vessels of the kind in the row's time: which one is not decided
    g = _row_add(vocab, [("red saucepan", 90.0, 95.0), ("frying pan", 107.0, 108.0)], "Add lettuce")
    assert _vessels(g) == []
    assert "2 vessels of its kind handled from 60 s before the add to the end of activity row " \
           "P01_recipe_timestamps.csv:9 'Add lettuce' (frying_pan, red_saucepan)" in _reason(g)


def test_another_recipes_vessel_is_not_counted(vocab):
    # saucepan2 is handled only inside recipe Q's step (70-72 s, Q's segment 60-80 s): it is
    # Q's pot; the red saucepan, in R's step, is the one left
    g = _row_add(vocab, [("red saucepan", 101.0, 102.0), ("saucepan2", 70.0, 72.0)], "Add lettuce",
                 extra=(60.0, 80.0))
    assert _vessels(g) == ["red_saucepan"]
    assert "not counted: saucepan2 (its tracks lie in another recipe's segments, none of this one's)" in \
        next(p.evidence["c"] for p in g.planned if p.kind == "add")["how"]


def test_a_vessel_at_a_curated_place_stands_where_the_row_puts_the_food_added_into_it():
    """operations.vessel_row_places: the ginger put down "on the hob" (a row deciding the gap
    after its track) while it goes into the saucepan, whose last put-down before the add has
    no observed destination: the row decides the saucepan's gap after that track."""
    from types import SimpleNamespace as N

    from analysis.compiler.operations import vessel_row_places
    from analysis.compiler.row_audit import Decision

    def assoc(aid, spans):
        a = N(video="v", assoc_id=aid, tracks=[])
        a.tracks = [N(track_id=f"{aid}t{i}", start=s, end=e, assoc=a, entity=ent, dst=dst, src=None)
                    for i, (ent, s, e, dst) in enumerate(spans)]
        return a
    pan = assoc("p", [("saucepan", 10.0, 15.0, None), ("saucepan", 80.0, 90.0, None)])
    ginger = assoc("g", [("ginger", 40.0, 43.0, None)])
    row = Decision("3d_perception_object_location.json", "q200", "v", "g", 1, "ginger", "hob", "hob", 43.0, 99.0)
    world = N(tracks=pan.tracks + ginger.tracks, objects={"hob": "hob", "saucepan": "pan", "ginger": "vegetable"},
              row_places={("v", "g", 1): row})
    add = N(action="add_ingredient", hold_track="gt0", roles={"o": "ginger", "c": "saucepan"}, time=41.0)
    assert vessel_row_places(world, N(planned=[add])) == ["saucepan"]
    d = world.row_places[("v", "p", 1)]
    assert (d.entity, d.fixture, d.qid, d.g0, d.g1) == ("saucepan", "hob", "q200", 15.0, 80.0)
    # the saucepan's put-down observed elsewhere (a row of its own): nothing changes
    world.row_places = {("v", "g", 1): row}
    pan.tracks[0].dst = "counter"
    assert vessel_row_places(world, N(planned=[add])) == []

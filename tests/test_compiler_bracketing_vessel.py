"""The recipe's named vessel that brackets an add (issue 34,
analysis/compiler/grounding/bracketing_vessel.py): an add whose step names no vessel goes
into the one vessel the recipe's last vessel-naming step names, when it is the last vessel
of the video handled before the add and the first after it (P05_R03_S06: the cheese into the
one mortar, set down at 753.14 s, picked up at 827.48 s). Anything less stays dropped, its
reason naming the candidate, and bench/add_coverage.py classes it as one candidate refused."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import SimpleNamespace as N

import pytest

from analysis.compiler.vocabulary import Vocabulary

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def vocab():
    return Vocabulary.load()


PESTO = {"S01": "Boil the pasta in a pan of water.", "S02": "Pound the garlic in a pestle and mortar.",
         "S03": "Add the cheese."}


def _kitchen(vocab, vessels, steps=PESTO):
    """Synthetic video ``v``: the cheese (tracked 203-207 s, in the hand) added at 204-206 s in
    S03, whose text names no vessel; ``vessels``: ``(name, [(start, end), ...])`` tracked."""
    from test_compiler_grounding import NO_CLASSES

    from analysis.compiler.grounding import ground
    from analysis.compiler.readers import (Association, Capture, IngredientEvent, Recipe, Span,
                                           StepSegment, Track)
    from analysis.compiler.worlds import build_world
    tracks = [("cheese", [(203.0, 207.0)]), *vessels]
    assocs = [Association("v", f"a{i}", n, n, tuple(Track(f"t{i}_{k}", a, b) for k, (a, b) in enumerate(sp)))
              for i, (n, sp) in enumerate(tracks)]
    cap = Capture("R", 0, ("v",), {"I01": "cheese"},
                  (IngredientEvent("I01", "cheese", "add", Span("v", 204.0, 206.0)),),
                  (StepSegment("S01", "step", Span("v", 5.0, 15.0)), StepSegment("S02", "step", Span("v", 90.0, 100.0)),
                   StepSegment("S03", "step", Span("v", 200.0, 210.0))))
    recipe = Recipe("R", "P01", "test", dict(steps), (cap,))
    world = build_world("v", "P01", ["v"], [{"id": "counter", "type": "counter"}, {"id": "cupboard", "type": "cupboard"}],
                        "counter", {"v": assocs}, [], [], {"R": recipe}, NO_CLASSES, vocab)
    g = ground(world, {"R": recipe}, vocab)
    adds = {p.refs["ingredient"]: p for p in g.planned if p.kind == "add"}
    return adds, [d["reason"] for d in g.dropped if d["kind"] == "add"]


def test_the_one_mortar_set_down_before_the_add_and_picked_up_after_it_binds(vocab):
    # the pan of S01 handled at 10-12 s only; the mortar S02 names set down at 99 s, picked up at 215 s
    adds, dropped = _kitchen(vocab, [("pan", [(10.0, 12.0)]), ("mortar", [(95.0, 99.0), (215.0, 220.0)])])
    assert not dropped and adds["I01"].roles["c"] == "mortar"
    ev = adds["I01"].evidence["c"]
    assert ev["evidence"] == "step_text" and ev["track"] == "t2_0"          # its last track before the add
    assert ev["how"].startswith(
        "the recipe's named vessel bracketing the add: the text of S02, the recipe's last step naming a vessel, "
        "names 'mortar' (mortar), and mortar is the one mortar of v; it is put down at 99.00 s (t2_0) and picked "
        "up next at 215.00 s (t2_1)")


def test_another_vessel_handled_between_its_tracks_leaves_the_add_dropped_naming_the_mortar(vocab):
    adds, dropped = _kitchen(vocab, [("mortar", [(95.0, 99.0), (215.0, 220.0)]), ("bowl", [(150.0, 152.0)])])
    assert "I01" not in adds
    assert dropped == [
        "target not decided: the step text names no vessel; of the vessels the text of S02, the recipe's last step "
        "naming one, names (mortar), one candidate: mortar (the one mortar of v) is refused: another vessel (bowl) "
        "is handled between its tracks (99.00-215.00 s)"]


def test_only_the_vessel_the_recipe_last_named_is_a_candidate(vocab):
    # P05_R04_S04's salad: after "beat the eggs in a bowl" (no bowl tracked), the frying pan
    # stirred before and after the add is not where it went: nothing bound, no candidate named
    steps = {"S01": "Fry the bacon in a frying pan.", "S02": "Beat the eggs in a bowl.", "S03": "Add the cheese."}
    adds, dropped = _kitchen(vocab, [("frying pan", [(95.0, 99.0), (215.0, 220.0)])], steps)
    assert "I01" not in adds and len(dropped) == 1
    assert "recipe's last step naming one" not in dropped[0] and "no vessel named" in dropped[0]
    # with the texts swapped, the frying pan is the vessel last named, and it brackets the add
    steps = {"S01": "Beat the eggs in a bowl.", "S02": "Fry the bacon in a frying pan.", "S03": "Add the cheese."}
    adds, dropped = _kitchen(vocab, [("frying pan", [(95.0, 99.0), (215.0, 220.0)])], steps)
    assert adds["I01"].roles["c"] == "frying_pan" and not dropped


def test_with_no_vessel_named_before_the_add_the_next_step_naming_one_decides(vocab):
    # P03_R01_S05 "Fry the onion" before S07 "Add the paste to the pan": the video's one
    # pan, set down before the add and picked up next after it, is where the onion went
    steps = {"S01": "Chop the onion.", "S02": "Pound the garlic in a pestle and mortar.", "S03": "Add the cheese.",
             "S04": "Add the paste to the pan."}
    adds, dropped = _kitchen(vocab, [("frying pan", [(95.0, 99.0), (215.0, 220.0)])], steps)
    assert "I01" not in adds                        # S02 names the mortar (none tracked): the pan is not it
    del steps["S02"]
    adds, dropped = _kitchen(vocab, [("frying pan", [(95.0, 99.0), (215.0, 220.0)])], steps)
    assert adds["I01"].roles["c"] == "frying_pan" and not dropped
    assert adds["I01"].evidence["c"]["how"].startswith(
        "the recipe's named vessel bracketing the add: the text of S04, the recipe's first step naming a vessel, "
        "after the add's, names 'pan' (pan), and frying_pan is the one pan of v")


def test_the_first_pass_only_notes_the_add_and_a_vessel_not_seen_after_it_is_no_candidate():
    from analysis.compiler.grounding.bracketing_vessel import bracketing_vessel

    def tr(a, b):
        return N(start=a, end=b, offset=0.0, track_id=f"m{a}", dst=None, dst_ref=None, dst_file=None, src=None,
                 src_ref=None, conflict=None, assoc=N(video="v", assoc_id="m", name="mortar"))

    ctx = N(recipes={"R": N(steps=PESTO)}, tracks_of={"mortar": [tr(40.0, 45.0), tr(60.0, 62.0)]},
            w=N(objects={"mortar": "bowl"}, offsets={}, facts={}),
            vocab=N(data={"noun_types": {"mortar": "bowl"}}, is_a=lambda t, k: k == "vessel"),
            own_heads={"mortar": {"mortar"}}, vessel_heads={"mortar"}, running_left={}, bracket_open=set(),
            second_pass=False)
    win = N(recipe="R", step="S03", video="v", row=False)
    why = "no vessel named in the step text"
    assert bracketing_vessel(ctx, "R", win, set(), why, 50.0, 52.0) == (None, None)
    assert ctx.bracket_open == {("R", "S03", "v")}
    ctx.second_pass = True
    assert bracketing_vessel(ctx, "R", win, set(), why, 50.0, 52.0)[0] == "mortar"
    assert bracketing_vessel(ctx, "R", win, {"mortar"}, why, 50.0, 52.0) == (None, None)   # the add's own object
    # in the hand during the add (an add without a track of its food: the mortar may be its source)
    ctx.tracks_of["mortar"][1].start = 51.0
    ctx.running_left.clear()
    assert bracketing_vessel(ctx, "R", win, set(), why, 50.0, 52.0) == (None, None)
    assert ctx.running_left[("R", 50.0, 52.0)].endswith(
        "one candidate: mortar (the one mortar of v) is in the hand during the add: it may be the food's source")
    ctx.tracks_of["mortar"][1].start = 60.0
    ctx.tracks_of["mortar"].pop()                       # never seen after the add: no candidate, no reason
    ctx.running_left.clear()
    assert bracketing_vessel(ctx, "R", win, set(), why, 50.0, 52.0) == (None, None) and ctx.running_left == {}
    # a step text naming a vessel is the target rule's, never this one's
    assert bracketing_vessel(ctx, "R", win, set(), "step text 'pan': ambiguous vessel", 50.0, 52.0) == (None, None)


def test_add_coverage_classes_a_refused_bracketing_vessel_and_a_substance_by_their_candidates():
    spec = importlib.util.spec_from_file_location("add_coverage", REPO / "bench" / "add_coverage.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod       # dataclasses resolve annotations through the module
    spec.loader.exec_module(mod)
    refused = ("target not decided: the step text names no vessel; of the vessels the text of S02, the recipe's last "
               "step naming one, names (mortar), one candidate: mortar (the one mortar of v) is refused: another "
               "vessel (bowl) is handled between its tracks (99.00-215.00 s)")
    assert mod.candidates(refused) == "one" and mod.source_limit(refused).startswith(
        "vessel: the step text names none; the one vessel the recipe last named is refused")
    two = refused.split("one candidate:")[0] + "2 bracket the add, not decided: mortar (mortar) brackets the add"
    assert mod.candidates(two) == "open"
    # a substance refused for want of a tracked container of it: the vessels tracked during
    # the add are its candidates (the jasmine rice poured from a sieve into the one pot)
    rice = ("source check add_without_track: no track named for the ingredient overlaps the add; a substance "
            "(other_substance) is not held without a container, and no container of it is tracked during the add "
            "(none is invented): not compiled")
    assert [mod.candidates(rice, n) for n in (None, 0, 1, 2)] == ["none", "none", "one", "open"]

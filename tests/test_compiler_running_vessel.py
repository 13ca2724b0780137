"""The recipe's running vessel (issue 34, analysis/compiler/grounding/running_vessel.py): an add
whose step text names no vessel, left open because two vessels of the type the recipe's
earlier steps name are out of storage, stays dropped, and its reason names both candidates,
so bench/unit_gaps.py classes it ``open`` (the rows leave it), not as a gap of the compiler."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from analysis.compiler.readers import ClassTable
from analysis.compiler.vocabulary import Vocabulary

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))


@pytest.fixture(scope="module")
def vocab():
    return Vocabulary.load()


def _kitchen(vocab, extra=()):
    """Synthetic video ``v``: "Heat the oil in a pan." (S01, the oil poured at 102-104 s, the
    bottle tracked 101-105 s), then "Add the cheese." (S02, the cheese added at 204-206 s,
    tracked 203-207 s, names no vessel); the pan is put down at 99 s, picked up and set back
    at 150-152 s; ``extra``: more named tracks."""
    from analysis.compiler.grounding import ground
    from analysis.compiler.readers import (Association, Capture, IngredientEvent, Recipe, Span,
                                           StepSegment, Track)
    from analysis.compiler.worlds import build_world
    tracks = [("pan", [(95.0, 99.0), (150.0, 152.0)]), ("oil bottle", [(101.0, 105.0)]),
              ("cheese", [(203.0, 207.0)]), *extra]
    assocs = [Association("v", f"a{i}", n, n, tuple(Track(f"t{i}_{k}", a, b) for k, (a, b) in enumerate(sp)))
              for i, (n, sp) in enumerate(tracks)]
    cap = Capture("R", 0, ("v",), {"I01": "oil", "I02": "cheese"},
                  (IngredientEvent("I01", "oil", "add", Span("v", 102.0, 104.0)),
                   IngredientEvent("I02", "cheese", "add", Span("v", 204.0, 206.0))),
                  (StepSegment("S01", "step", Span("v", 100.0, 110.0)),
                   StepSegment("S02", "step", Span("v", 200.0, 210.0))))
    recipe = Recipe("R", "P01", "test", {"S01": "Heat the oil in a pan.", "S02": "Add the cheese."}, (cap,))
    world = build_world("v", "P01", ["v"], [{"id": "counter", "type": "counter"},
                                            {"id": "cupboard", "type": "cupboard"}],
                        "counter", {"v": assocs}, [], [], {"R": recipe}, ClassTable({}, {}, {}), vocab)
    g = ground(world, {"R": recipe}, vocab)
    adds = {p.refs["ingredient"]: p for p in g.planned if p.kind == "add"}
    dropped = [d["reason"] for d in g.dropped if d["kind"] == "add"]
    return adds, dropped


def test_two_pans_out_of_storage_leave_the_add_open_naming_both(vocab):
    from add_coverage import candidates
    from unit_gaps import rows_leave
    # a second pan ("frying pan", handled 160-162 s, between the steps, never put away)
    adds, dropped = _kitchen(vocab, [("frying pan", [(160.0, 162.0)])])
    assert set(adds) == {"I01"} and adds["I01"].roles["dst"] == "pan"   # the oil: into the pan by its text
    assert dropped == [
        "target not decided: the step text names no vessel; the recipe's running vessel (pan: the type the texts "
        "of its earlier steps name, pan) is not decided: ambiguous vessel, 2 pan instances of v out of storage "
        "at the add (frying_pan, pan)"]
    # the rows leave two candidates: open, no gap of the compiler
    assert rows_leave("add", dropped[0]) == "open" and candidates(dropped[0]) == "open"


def test_one_pan_binds_and_a_vessel_of_another_type_leaves_the_reason_as_it_was(vocab):
    adds, dropped = _kitchen(vocab)                       # the video's one pan: the running vessel
    assert adds["I02"].roles["c"] == "pan" and not dropped
    assert adds["I02"].evidence["c"]["how"].startswith("the recipe's running vessel")
    # a bowl beside the pan is not of the type the earlier text names: still the one pan
    adds, dropped = _kitchen(vocab, [("bowl", [(160.0, 162.0)])])
    assert adds["I02"].roles["c"] == "pan" and not dropped


def test_with_no_earlier_add_bound_two_pans_are_named_and_one_pan_is_not_bound():
    # "Heat oil in a pan" (S01, its add bound nowhere), "Add the onion" (S02, 50-52 s): the
    # recipe's type is a pan, two pans stand out of storage: open, both named; with one pan,
    # nothing says the recipe's pan is the tracked one (no earlier add went into it): no binding
    from types import SimpleNamespace as N

    from analysis.compiler.grounding.running_vessel import running_vessel

    def ctx(pans):
        trs = {p: [N(start=5.0, end=9.0, offset=0.0, track_id=f"t{p}", dst=None, dst_ref=None, dst_file=None,
                     src=None, src_ref=None, conflict=None, assoc=N(video="v", assoc_id=p, name="pan"))]
               for p in pans}
        return N(recipes={"R": N(steps={"S01": "Heat oil in a pan", "S02": "Add the onion"})}, step_add_vessels={},
                 tracks_of=trs, w=N(objects={p: "pan" for p in pans}, offsets={}, facts={}),
                 vocab=N(data={"noun_types": {"pan": "pan"}}, is_a=lambda t, k: k == "vessel"),
                 own_heads={p: {"pan"} for p in pans}, vessel_heads={"pan"}, running_open=set(), running_left={})

    win = N(recipe="R", step="S02", video="v", row=False)
    two = ctx(["pan", "pan2"])
    assert running_vessel(two, "R", win, set(), "no vessel named in the step text", 50.0, 52.0) == (None, None)
    assert two.running_left == {("R", 50.0, 52.0): (
        "the step text names no vessel; the recipe's running vessel (pan: the type the texts of its earlier steps "
        "name, pan) is not decided: ambiguous vessel, 2 pan instances of v out of storage at the add (pan, pan2)")}
    one = ctx(["pan"])
    assert running_vessel(one, "R", win, set(), "no vessel named in the step text", 50.0, 52.0) == (None, None)
    assert one.running_left == {}

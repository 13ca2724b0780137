"""The recipe's running vessel (issue 34, analysis/compiler/grounding/running_vessel.py): an add
whose step text names no vessel, left open because two vessels of the type the recipe's
earlier steps name are out of storage, stays dropped, and its reason names both candidates,
so bench/unit_gaps.py classes it ``open`` (the rows leave it), not as a gap of the compiler."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from analysis.compiler.vocabulary import Vocabulary

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))


@pytest.fixture(scope="module")
def vocab():
    return Vocabulary.load()


def _kitchen(vocab, extra=(), pan=((95.0, 99.0), (150.0, 152.0))):
    """Synthetic video ``v``: "Heat the oil in a pan." (S01, the oil poured at 102-104 s, the
    bottle tracked 101-105 s), then "Add the cheese." (S02, the cheese added at 204-206 s,
    tracked 203-207 s, names no vessel); the pan is put down at 99 s, picked up and set back
    at 150-152 s (``pan``: its tracks); ``extra``: more named tracks."""
    from test_compiler_grounding import _earlier_step      # the same synthetic kitchen
    adds, g = _earlier_step(vocab, list(pan), extra)
    return adds, [d["reason"] for d in g.dropped if d["kind"] == "add"]


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


#: the cheese's step S02 is the segment 200-210 s; the cheese is added at 204-206 s
_ADD = ("target not decided: the step text names no vessel; the recipe's running vessel (pan: the type the texts "
        "of its earlier steps name, pan) is not decided: ambiguous vessel, 2 pan instances of v out of storage "
        "at the add (frying_pan, pan)")


def test_of_two_pans_the_one_its_own_step_handles_binds(vocab):
    # the pan is handled again at 207-209 s, inside S02 (after the add: not its source); the
    # frying pan stands out of storage from 162 s but S02 never handles it: the pan binds
    adds, dropped = _kitchen(vocab, [("frying pan", [(160.0, 162.0)])],
                             pan=((95.0, 99.0), (150.0, 152.0), (207.0, 209.0)))
    assert adds["I02"].roles["c"] == "pan" and not dropped
    how = adds["I02"].evidence["c"]["how"]
    assert adds["I02"].evidence["c"]["evidence"] == "step_text"
    assert "the add of S01 at 102.0 s in v went into pan by its text" in how
    assert "standing from 152.00 s" in how
    assert how.endswith("of the pans out of storage then (frying_pan, pan), pan is the only one tracked during the "
                        "segments of the add's step S02 (200.00-210.00 s: t0_2 207.00-209.00 s), seen before the "
                        "add, and no add of another step went into it by its text")


def test_the_step_handling_both_pans_or_none_leaves_the_add_open(vocab):
    # both handled inside S02: not decided
    adds, dropped = _kitchen(vocab, [("frying pan", [(160.0, 162.0), (208.0, 209.5)])],
                             pan=((95.0, 99.0), (150.0, 152.0), (207.0, 208.0)))
    assert set(adds) == {"I01"} and dropped == [_ADD]
    # neither handled inside S02 (the frying pan at 211-212 s is after the segment)
    adds, dropped = _kitchen(vocab, [("frying pan", [(160.0, 162.0), (211.0, 212.0)])])
    assert set(adds) == {"I01"} and dropped == [_ADD]


def test_the_pan_its_step_handles_is_not_bound_when_first_seen_after_the_add(vocab):
    # the frying pan's first track is 207-209 s, inside S02 but after the add (204-206 s): it
    # was not in use then (P06-20240510-104642's saucepan), so the add stays open
    adds, dropped = _kitchen(vocab, [("frying pan", [(207.0, 209.0)])])
    assert set(adds) == {"I01"} and dropped == [_ADD]


def test_the_pan_its_step_handles_is_not_bound_against_the_earlier_step_text_binding(vocab):
    # S01's oil went into the pan by its text; S02 handles only the frying pan (201-203 s,
    # before the add): the recipe's pan by text and the step's disagree, so it stays open
    adds, dropped = _kitchen(vocab, [("frying pan", [(160.0, 162.0), (201.0, 203.0)])])
    assert set(adds) == {"I01"} and adds["I01"].roles["dst"] == "pan" and dropped == [_ADD]


def test_the_step_handles_a_pan_only_when_the_add_lies_within_its_segments():
    # P01-20240204-121042: the biscuits added at 748 s (crushed in the food processor) while
    # the step's one segment is 1353-1360 s, where the saucepan is handled: no binding
    from types import SimpleNamespace as N

    from analysis.compiler.grounding.running_vessel import handled_in_step

    def tr(a, b, tid):
        return N(start=a, end=b, track_id=tid, assoc=N(video="v"))

    def ctx(*segs):
        return N(segments=[("v", "R", "S02", "step", *x) for x in segs] + [("v", "R", "S02", "prep", 100.0, 120.0)],
                 tracks_of={"pan": [tr(5.0, 9.0, "p1"), tr(301.0, 303.0, "p2")], "pan2": [tr(6.0, 8.0, "q1")]},
                 step_add_vessels={}, w=N(offsets={}))

    win = N(step="S02", video="v")
    assert handled_in_step(ctx((290.0, 310.0)), "R", win, ["pan", "pan2"], 50.0, 52.0) is None
    # the add lies between the step's two segments (40-45 s, 290-310 s): the step's own time
    got = handled_in_step(ctx((40.0, 45.0), (290.0, 310.0)), "R", win, ["pan", "pan2"], 50.0, 52.0)
    assert got[:2] == ("pan", ["pan", "pan2"])
    assert "(40.00-45.00 s, 290.00-310.00 s: p2 301.00-303.00 s)" in got[2]
    # the prep segment (100-120 s) is no step segment: pan2 handled there is not counted
    c = ctx((40.0, 45.0), (290.0, 310.0))
    c.tracks_of["pan2"].append(tr(105.0, 110.0, "q2"))
    assert handled_in_step(c, "R", win, ["pan", "pan2"], 50.0, 52.0)[0] == "pan"
    # handled in a step segment too: both, not decided
    c.tracks_of["pan2"].append(tr(295.0, 296.0, "q3"))
    assert handled_in_step(c, "R", win, ["pan", "pan2"], 50.0, 52.0) is None
    c.tracks_of["pan2"].pop()
    # handled only in a segment away from the add's (another, 60-70 s, comes between)
    far = ctx((40.0, 45.0), (60.0, 70.0), (290.0, 310.0))
    assert handled_in_step(far, "R", win, ["pan", "pan2"], 50.0, 52.0) is None
    far.tracks_of["pan"].append(tr(61.0, 62.0, "p3"))
    assert handled_in_step(far, "R", win, ["pan", "pan2"], 50.0, 52.0)[0] == "pan"
    # first seen after the add (its only track 301-303 s): not in use then
    late = ctx((40.0, 45.0), (290.0, 310.0))
    late.tracks_of["pan"].pop(0)
    assert handled_in_step(late, "R", win, ["pan", "pan2"], 50.0, 52.0) is None
    # a later step's add went into it by its text: another step's vessel
    c.step_add_vessels = {("R", "S03", "v"): [(400.0, "pan", {"evidence": "step_text"}, "add R/I3")]}
    assert handled_in_step(c, "R", win, ["pan", "pan2"], 50.0, 52.0) is None

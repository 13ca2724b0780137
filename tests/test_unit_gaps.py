"""bench/unit_gaps.py on a kitchen small enough to check by hand.

One video ``v``: an activity row 0-100 s (``P00.csv:2``) holding step R/S1 (10-20 s).
Rows: the salt added at 12-14 s (S1), the pepper at 40-41 s (the row's); a mug put down
at 15 s (put answer q1, S1); the bottle closed at 16 s (snippet f1, S1). The ledger lists
the mug's put-down (``move_may_precede_unit``) and the pepper add (``not_grounded``); the
salt and the close are expressed by S1's task (two conditions). The row has no task.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from analysis.compiler.readers import (Activity, Association, Capture, IngredientEvent, LocationAnswer,
                                       Recipe, Snippet, Span, StepSegment, Track)

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(REPO / "bench"))
    spec = importlib.util.spec_from_file_location("unit_gaps", REPO / "bench" / "unit_gaps.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, mod)   # its dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


def _src():
    ev = lambda i, n, a, b: IngredientEvent(i, n, "add", Span("v", a, b))  # noqa: E731
    recipe = Recipe("R", "P00", "Toast", {"S1": "Salt it"}, (Capture(
        "R", 0, ("v",), {"I1": "salt", "I2": "pepper"}, (ev("I1", "salt", 12, 14), ev("I2", "pepper", 40, 41)),
        (StepSegment("S1", "step", Span("v", 10, 20)),)),))
    return SimpleNamespace(
        recipes={"R": recipe}, activities=[Activity("v", ("R",), "Make toast", 0, 100, False, "P00.csv:2")],
        assocs={"v": [Association("v", "mug", "mug", "mug", (Track("m0", 15, 15.5),))]},
        answers=[LocationAnswer("q1", "v", "put", 15.0, "sink")], itineraries=[],
        snippets=[Snippet("f1", "fine_grained_how_recognition.json", "v", 16, 16.5, "close bottle", "", "")],
        contents=[])


def _drop(unit, row, ids, time, code):
    return {"kind": "ledger", "time": time + 100.0,     # the episode clock: v starts at 100 s
            "refs": {"unit": unit, "row": row, "video": "v", "ids": ids, "code": code}}


def test_each_strict_end_state_is_expressed_or_carries_its_ledger_code(bench):
    ledger = [_drop("R/S1", "placement", ["q1"], 15.5, "move_may_precede_unit"),
              _drop("P00.csv:2", "add", ["R/I2"], 40.0, "not_grounded")]
    gaps = bench.episode_gaps(_src(), "planner", "ep", ["v"], {"v": 100.0}, {"R/S1": ("ep/t000", 2)}, ledger)
    assert [(g.unit, g.task, g.conditions, g.strict, g.expressed) for g in gaps] == [
        ("P00.csv:2", None, 0, 1, 0), ("R/S1", "ep/t000", 2, 3, 2)]
    row, step = gaps
    assert row.missing == [("add", "R/I2 (pepper)", "not_grounded")]
    assert [(k, s) for k, _, s in step.items] == [("add", "expressed"), ("placement", "move_may_precede_unit"),
                                                  ("close", "expressed")]
    lines = bench.summary(gaps)
    assert lines[0].startswith("planner: 2 units with a strict end state (1 with a task), 1 with two or more "
                               "(1 with a task of two or more conditions); sound ceiling 2 / 1; end states "
                               "expressed 2 of 4")
    assert lines[1] == "planner not expressed: move_may_precede_unit 1; not_grounded 1"
    # binding work could still express the pepper (not_grounded), never the mug's put-down
    assert [(g.unit, g.reachable) for g in gaps] == [("P00.csv:2", 1), ("R/S1", 2)]
    assert lines[2] == ("planner under the soundness rules: 2 units may have a task, 1 one of two or more "
                        "end states; blocked by them: ")


def test_no_credit_end_states_leave_the_sound_ceiling(bench):
    ledger = [_drop("R/S1", "placement", ["q1"], 15.5, "true_at_task_start")]
    step = [g for g in bench.episode_gaps(_src(), "planner", "ep", ["v"], {"v": 100.0}, {}, ledger)
            if g.unit == "R/S1"][0]
    assert (step.strict, step.sound, step.task) == (3, 2, None)
    assert bench.unit_lines([step])[1].split("\t")[:8] == ["planner", "ep", "R/S1", "3", "2", "-", "0", "2"]


def test_a_unit_the_soundness_rules_keep_below_two_is_named(bench):
    # S1's three end states are sound (none held at the start), but its task keeps only the
    # salt: the mug's put-down may precede the unit, the bottle is a curated (merged) object
    ledger = [_drop("R/S1", "placement", ["q1"], 15.5, "move_may_precede_unit"),
              _drop("R/S1", "snippet", ["f1"], 16.0, "argument_not_observed")]
    gaps = bench.episode_gaps(_src(), "planner", "ep", ["v"], {"v": 100.0}, {"R/S1": ("ep/t000", 1)}, ledger)
    step = [g for g in gaps if g.unit == "R/S1"][0]
    assert (step.sound, step.reachable, step.expressed) == (3, 1, 1)
    assert bench.blocked(gaps) == [step]
    assert bench.summary(gaps)[2].endswith("blocked by them: ep R/S1")


def test_an_end_state_the_rows_leave_undecided_leaves_the_estimate(bench):
    # the pepper add (row P00.csv:2) was set aside; whether binding work can still express it
    # depends on what its dropped record says the rows leave
    def gaps_for(reason, task_of=None):
        led = [{**_drop("P00.csv:2", "add", ["R/I2"], 40.0, "not_grounded")}]
        led[0]["refs"]["dropped"] = "ep/d001"
        return bench.episode_gaps(_src(), "planner", "ep", ["v"], {"v": 100.0}, task_of or {}, led,
                                  {"ep/d001": reason})
    row = lambda gs: [g for g in gs if g.unit == "P00.csv:2"][0]  # noqa: E731
    two_pans = "target not decided: step text 'pan': ambiguous vessel, 2 pan instances put down ..."
    silent = "target not decided: no vessel named in the step text or handled during the event"
    assert (row(gaps_for(two_pans)).left, row(gaps_for(two_pans)).decided) == (["open"], 0)
    # a step text naming no vessel leaves it to the recipe's other steps: binding work
    assert (row(gaps_for(silent)).left, row(gaps_for(silent)).decided) == ([None], 1)
    assert bench.unit_lines([row(gaps_for(two_pans))])[1].endswith("= not_grounded (open)")
    # S1's task holds its three end states (no ledger row sets one aside) and an event
    gs = gaps_for(two_pans, {"R/S1": ("ep/t000", 4)})
    step = [g for g in gs if g.unit == "R/S1"][0]
    assert (step.decided, step.others) == (3, 1)
    assert bench.summary(gs)[3] == (
        "planner if every end state the rows decide were bound: 1 units may have a task, 1 one of two or "
        "more end states, 1 of two or more conditions with its task's others; besides, 0 tasks of units "
        "with no strict end state (0 of two or more conditions)")


def test_rows_leave_classes_placements_and_closes(bench):
    assert bench.rows_leave("placement", "observed sources disagree (a b)") == "conflict"
    assert bench.rows_leave("close", "drawer names a fixture (drawer), not a tracked object: ...") == "fixture"
    assert bench.rows_leave("close", "unique binding: 2 tracked objects named 'jar' are handled") == "open"
    assert bench.rows_leave("close", "something the table does not know") is None
    assert bench.rows_leave("add", None) is None

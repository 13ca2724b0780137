"""The completeness ledger (issue 34 item 3) and units that stay in their unit (item 4).

Synthetic kitchens small enough to check by hand, plus one property over the committed
cohort: every end-state row of every unit of an exported episode is accounted for exactly
once (expressed by a condition, or a ``ledger`` record of ``dropped.jsonl``)."""
from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from types import SimpleNamespace as NS

import pytest

from analysis.compiler.ledger import (NO_ROW_REASONS, REASONS, Row, account, conditions_without_rows,
                                      ledger_records, reason, unit_rows)
from analysis.compiler.readers import (Activity, Association, Capture, IngredientEvent, Itinerary,
                                       LocationAnswer, Recipe, Snippet, Span, StepSegment, Track)

REPO = Path(__file__).resolve().parents[1]
SOURCE = Path(os.environ.get("E2W_HDEPIC") or REPO.parent / "shared" / "hd-epic")


def _kitchen():
    """One video ``v``: an activity row 0-100 s holding step S01 (10-20 s and again 60-70 s)
    of recipe R. Adds: salt at 12-14 s (S01), pepper at 40-41 s (in the row, outside the
    step). Tracks: a mug put down at 15 s (put answer q1), a bowl put down at 30 s (put
    answer q2) and handled again at 50 s (so q2 does not last to the row's end), a cup and
    a glass both starting at 80 s (put answer q3: two candidates, ambiguous). Snippets: the
    bottle opened at 62 s and closed at 65 s (S01), the jar closed at 44 s and opened again
    at 46 s (the row)."""
    seg = lambda s, a, b: StepSegment(s, "step", Span("v", a, b))  # noqa: E731
    ev = lambda i, n, a, b: IngredientEvent(i, n, "add", Span("v", a, b))  # noqa: E731
    recipes = {"R": Recipe("R", "P01", "Toast", {"S01": "Salt it"}, (Capture(
        "R", 0, ("v",), {"I1": "salt", "I2": "pepper"},
        (ev("I1", "salt", 12.0, 14.0), ev("I2", "pepper", 40.0, 41.0),
         IngredientEvent("I1", "salt", "weigh", Span("v", 11.0, 12.0))),
        (seg("S01", 10.0, 20.0), seg("S01", 60.0, 70.0))),))}
    acts = [Activity("v", ("R",), "Make toast", 0.0, 100.0, False, "P01.csv:2")]
    a = lambda i, n, *ts: Association("v", i, n, n, tuple(Track(f"{i}t{k}", s, e)  # noqa: E731
                                                          for k, (s, e) in enumerate(ts)))
    assocs = {"v": [a("mug", "mug", (15.0, 15.0)), a("bowl", "bowl", (25.0, 30.0), (50.0, 52.0)),
                    a("cup", "cup", (80.0, 81.0)), a("glass", "glass", (80.01, 81.0))]}
    answers = [LocationAnswer("q1", "v", "put", 15.0, "sink"), LocationAnswer("q2", "v", "put", 25.0, "sink"),
               LocationAnswer("q3", "v", "put", 80.0, "sink")]
    sn = lambda q, a, b, act: Snippet(q, "fine_grained_how_recognition.json", "v", a, b, act, "", "")  # noqa: E731
    snippets = [sn("f1", 62.0, 62.5, "open bottle"), sn("f2", 65.0, 65.5, "close bottle"),
                sn("f3", 44.0, 44.5, "close jar"), sn("f4", 46.0, 46.5, "open jar")]
    return recipes, acts, assocs, answers, [], snippets


def test_unit_rows_by_the_strict_row_rule():
    recipes, acts, assocs, answers, itins, snippets = _kitchen()
    rows = unit_rows(recipes, acts, assocs, answers, itins, snippets, ["v"])
    assert [(r.kind, r.unit, r.ids, r.moved) for r in rows] == [
        ("add", "R/S01", ("R/I1",), None),            # the salt add inside S01 (the weigh is no add)
        ("placement", "R/S01", ("q1",), None),        # the mug's put-down at 15 s, inside S01
        ("placement", "P01.csv:2", ("q2",), 50.0),    # the bowl's put-down at 30 s, moved again at 50 s
        ("add", "P01.csv:2", ("R/I2",), None),        # pepper: in the row, outside the step
        ("snippet", "R/S01", ("f2",), None),          # the bottle closed last in S01
    ]
    # the cup and glass both start at 80 s (q3): ambiguous, no row; the jar is opened again
    # after it is closed: no end state
    assert not [r for r in rows if set(r.ids) & {"q3", "f3", "f4"}]


def test_a_put_down_the_unit_moves_again_is_accounted_intermediate():
    # P03-20240218-094452: location 436 puts the white bowl down at 303.2 s (counter top left of
    # dishwasher); the bowl's next track starts at 321.13 s, inside the same activity row. The
    # ledger left such put-downs out of its rows, so they were accounted nowhere (162 in the
    # cohort). Now each is a row, accounted ``intermediate`` whatever the compiler made of it:
    # here a compiled put-down in the unit's own groups (before: it would read not_lasting)
    recipes, acts, assocs, answers, itins, snippets = _kitchen()
    bowl = next(r for r in unit_rows(recipes, acts, assocs, answers, itins, snippets, ["v"]) if r.ids == ("q2",))
    put = _op(30.0, "put_on", ["bowl", "sink"], [{"id": "v/bowl/bowlt0"}, {"id": "q2"}])
    infos = {"P01.csv:2": {"groups": [0], "task": None, "why": "no_condition", "witnesses": {}, "skipped": []}}
    got = account([bowl], infos, [put], [0], set(), {}, [])
    assert got[0][1] == ("intermediate: put-down of 'bowl' (track bowlt0) by q2: the object's next track "
                         "starts at 50.00 s, inside the unit")
    # nothing compiled and no task: still intermediate, never no_condition
    assert account([bowl], infos, [], [], set(), {}, [])[0][1].startswith("intermediate: ")
    drops, _ = ledger_records("e", got, {"v": 0.0})
    assert [(d["refs"]["code"], d["refs"]["ids"], d["time"]) for d in drops] == [("intermediate", ["q2"], 30.0)]


def _op(t, typ, args, refs, planned=None):
    return NS(time=t, action={"type": typ, "args": args}, planned=planned,
              provenance={"source": "observed", "refs": {"args": [{"source": "observed", "refs": r} for r in refs]}})


def test_account_expressed_skipped_grounding_drop_and_other_unit():
    salt = Row("add", "R/S01", "v", 12.0, ("R/I1",), None, "R/I1 (salt)", ("R", "I1"))
    pepper = Row("add", "P01.csv:2", "v", 40.0, ("R/I2",), None, "R/I2 (pepper)", ("R", "I2"))
    mug = Row("placement", "R/S01", "v", 15.0, ("q1",), "v/mug/mugt0", "put-down of 'mug' by q1", ("mug", "mugt0"))
    shut = Row("snippet", "R/S01", "v", 65.0, ("f2",), None, "<close bottle> (f2)")
    oil = Row("add", "R/S01", "v", 16.0, ("R/I3",), None, "R/I3 (oil)", ("R", "I3"))
    # the salt bound to the food's own track (its planned refs name the add row)
    add = _op(12.5, "add_ingredient", ["salt", "pan"], [{"file": "assoc_info.json", "id": "v/salt/s0"}, {}],
              NS(kind="add", refs={"recipe": "R", "ingredient": "I1", "video": "v", "start": 12.0}))
    put = _op(15.0, "put_on", ["mug", "sink"], [{"id": "v/mug/mugt0"}, {"id": "q1"}])
    close = _op(65.0, "close_container", ["bottle"], [{"vqa": "f2"}], NS(kind="snippet", refs={"vqa": "f2"}))
    task = {"task_id": "e/t000", "tier": "terminal",
            "conditions": [{"id": "c1", "kind": "atom", "atom": ["in", "salt", "pan"]}],
            "provenance": {"conditions": {"c1": {"refs": {"args": []}}}}}
    infos = {"R/S01": {"groups": [0], "task": task, "why": None, "witnesses": {"c1": add},
                       "skipped": [(("at", "mug", "sink"), put, "move_may_precede_unit")]},
             "P01.csv:2": {"groups": [1], "task": None, "why": "no_condition", "witnesses": {}, "skipped": []}}
    dropped = [{"event_id": "e/d000", "kind": "add", "what": "add I2 (pepper)", "reason": "target not decided: x",
                "refs": {"recipe": "R", "ingredient": "I2", "video": "v", "start": 40.0}}]
    got = account([salt, pepper, mug, shut, oil], infos, [add, put, close], [0, 0, 1], {"e/t000"}, {}, dropped)
    assert [(r.what, st.split(":")[0], refs) for r, st, refs in got] == [
        ("R/I1 (salt)", "expressed", {"task_id": "e/t000", "condition_id": "c1"}),
        ("R/I2 (pepper)", "not_grounded", {"dropped": "e/d000"}),           # referenced, not re-derived
        ("put-down of 'mug' by q1", "move_may_precede_unit", {"atom": ["at", "mug", "sink"]}),
        ("<close bottle> (f2)", "compiled_in_other_unit", {}),                   # its operation is in g1
        ("R/I3 (oil)", "no_operation", {}),
    ]
    # the same task outside every suite: the row is not expressed, and says why
    assert account([salt], infos, [add], [0], set(), {}, [])[0][1].startswith("not_in_suite: task e/t000")
    assert account([salt], infos, [add], [0], set(), {"e/t000": "initial_passes"}, [])[0][1] == \
        "admission_refused: task e/t000: initial_passes"
    drops, audit = ledger_records("e", got, {"v": 100.0})
    assert [d["event_id"] for d in drops] == ["e/l000", "e/l001", "e/l002", "e/l003"]
    assert drops[0]["time"] == 140.0 and drops[0]["kind"] == "ledger" and drops[0]["refs"]["code"] == "not_grounded"
    assert audit == [{"check": "ledger_expressed", "task_id": "e/t000/c1", "condition_id": "c1", "passed": True,
                      "detail": "1 rows of unit R/S01: add R/I1 (salt)"}]


def test_an_add_row_is_not_credited_to_the_other_add_of_its_ingredient():
    # garam masala (P05_R01_I13) is added twice: at 763 s (set aside while grounding) and at
    # 1001 s (compiled in S05); both rows share the ID R/I13, the compiled pour cites the
    # second add's start: the first row is not_grounded, never compiled_in_other_unit
    first = Row("add", "R/S02", "v", 763.035, ("R/I13",), None, "R/I13 (garam masala)", ("R", "I13"))
    second = Row("add", "R/S05", "v", 1001.0, ("R/I13",), None, "R/I13 (garam masala)", ("R", "I13"))
    pour = _op(1001.5, "pour", ["garam_masala", "packet", "pan", "counter"],
               [{"file": "complete_recipes.json", "id": "R/I13", "time": 1001.0}, {}, {}, {}])
    task = {"task_id": "e/t001", "tier": "terminal",
            "conditions": [{"id": "c1", "kind": "atom", "atom": ["in", "garam_masala", "pan"]}],
            "provenance": {"conditions": {"c1": {"refs": {"args": []}}}}}
    infos = {"R/S02": {"groups": [0], "task": None, "why": "no_condition", "witnesses": {}, "skipped": []},
             "R/S05": {"groups": [1], "task": task, "why": None, "witnesses": {"c1": pour}, "skipped": []}}
    dropped = [{"event_id": "e/d073", "kind": "add", "what": "add R/I13 (garam masala)",
                "reason": "source check add_time_matches_other_ingredient: x",
                "refs": {"recipe": "R", "ingredient": "I13", "video": "v", "start": 763.035}}]
    got = account([first, second], infos, [pour], [1], {"e/t001"}, {}, dropped)
    assert [(r.unit, st.split(":")[0], refs) for r, st, refs in got] == [
        ("R/S02", "not_grounded", {"dropped": "e/d073"}),
        ("R/S05", "expressed", {"task_id": "e/t001", "condition_id": "c1"})]


def test_a_placement_read_by_a_take_or_put_down_in_no_unit_says_so():
    # a take citing the answer reads the placement as its origin: not "compiled in another
    # unit"; a put-down in a group no unit holds (its track crosses a row boundary) is
    # compiled_in_no_unit
    glass = Row("placement", "P.csv:32", "v", 30.0, ("it14",), "v/glass/g1", "put-down of 'glass' by it14",
                ("glass", "g1"))
    rag = Row("placement", "P.csv:44", "v", 26.3, ("q101",), "v/rag/r1", "put-down of 'rag' by q101", ("rag", "r1"))
    take = _op(40.0, "pick_up", ["glass", "table"], [{"id": "v/glass/g1"}, {"id": "it14"}])
    put = _op(26.3, "put_on", ["rag", "shelf"], [{"id": "v/rag/r1"}, {"id": "q101"}])
    infos = {"P.csv:32": {"groups": [0], "task": None, "why": "no_condition", "witnesses": {}, "skipped": []},
             "P.csv:44": {"groups": [1], "task": None, "why": "no_condition", "witnesses": {}, "skipped": []},
             "P.csv:50": {"groups": [2], "task": None, "why": "no_condition", "witnesses": {}, "skipped": []}}
    got = account([glass, rag], infos, [take, put], [2, 3], set(), {}, [])
    assert [st.split(":")[0] for _, st, _ in got] == ["read_as_origin", "compiled_in_no_unit"]


def test_an_itinerary_row_is_expressed_by_the_put_down_of_its_track_that_cites_an_agreeing_answer():
    # P03-20240218-094452/t000 c4: the cup's put-down (track t1, cupboard) cites location
    # answer q106; itinerary it147 ends the same track at the same cupboard. Both rows are
    # the put-down the condition holds; an itinerary naming another place is not (and only a
    # take citing it reads it as the origin)
    recipes = {}
    acts = [Activity("v", (), "Tidy", 0.0, 100.0, False, "P03.csv:256")]
    cup = Association("v", "cup", "cup", "cup", (Track("t0", 5.0, 8.0), Track("t1", 30.0, 36.0)))
    rows = unit_rows(recipes, acts, {"v": [cup]}, [LocationAnswer("q106", "v", "put", 30.0, "cupboard left from fan")],
                     [Itinerary("it147", "v", 36.0, (("counter", "cupboard left from fan"),), ""),
                      Itinerary("it148", "v", 36.0, (("counter", "sink"),), "")], [], ["v"])
    assert [(r.ids, r.track, r.place) for r in rows] == [
        (("it147",), "v/cup/t1", "cupboard_left_of_fan"), (("it148",), "v/cup/t1", "sink"),
        (("q106",), "v/cup/t1", "cupboard_left_of_fan")]
    put = _op(36.0, "put_in_storage", ["cup", "cupboard_left_of_fan"], [{"id": "v/cup/t1"}, {"id": "q106"}])
    task = {"task_id": "e/t000", "tier": "terminal",
            "conditions": [{"id": "c4", "kind": "atom", "atom": ["at", "cup", "cupboard_left_of_fan"]}],
            "provenance": {"conditions": {"c4": {"refs": {"args": []}}}}}
    infos = {"P03.csv:256": {"groups": [0], "task": task, "why": None, "witnesses": {"c4": put}, "skipped": []}}
    got = account(rows, infos, [put], [0], {"e/t000"}, {}, [])
    assert [(r.ids[0], st.split(":")[0], refs.get("condition_id")) for r, st, refs in got] == [
        ("it147", "expressed", "c4"), ("it148", "no_operation", None), ("q106", "expressed", "c4")]


def test_a_placement_is_expressed_by_the_put_down_not_by_an_add_citing_where_its_vessel_stands():
    # P05-20240424-085204: in(oats, bowl) (its pour also cites the itinerary that placed the
    # bowl's earlier track) and at(bowl, microwave) (the put-down of the row's own track)
    row = Row("placement", "R/S01", "v", 99.9, ("it20",), "v/bowl/b2", "put-down of 'bowl' by it20", ("bowl", "b2"))
    pour = _op(35.0, "pour", ["oats", "bag", "bowl", "counter"],
               [{"id": "v/oats/o1"}, {}, {"id": "v/bowl/b1"}, {"id": "it20"}])
    put = _op(99.9, "put_in_appliance", ["bowl", "microwave"], [{"id": "v/bowl/b2"}, {"id": "it20"}])
    task = {"task_id": "e/t000", "tier": "terminal",
            "conditions": [{"id": "c1", "kind": "atom", "atom": ["in", "oats", "bowl"]},
                           {"id": "c2", "kind": "atom", "atom": ["at", "bowl", "microwave"]}],
            "provenance": {"conditions": {"c1": {"refs": {"args": []}}, "c2": {"refs": {"args": []}}}}}
    infos = {"R/S01": {"groups": [0], "task": task, "why": None, "witnesses": {"c1": pour, "c2": put},
                       "skipped": []}}
    got = account([row], infos, [pour, put], [0, 0], {"e/t000"}, {}, [])
    assert got[0][1:] == ("expressed", {"task_id": "e/t000", "condition_id": "c2"})


def test_a_food_put_down_at_a_fixture_is_expressed_by_its_add_into_the_vessel_standing_there():
    # P09-20240622-150155, location 200: the ginger (track g1) "put" on the hob at 792 s
    # went into the red saucepan standing on it; the add of that track cites it, and its
    # in() expresses the row. The same add with the pan on another fixture does not.
    row = Row("placement", "R/S01", "v", 792.0, ("q200",), "v/ginger/g1", "put-down of 'ginger' by q200",
              ("ginger", "g1"), place="hob")
    add = _op(791.0, "add_ingredient", ["ginger", "red_saucepan", "hob"], [{"id": "v/ginger/g1"}, {}, {}])
    task = {"task_id": "e/t006", "tier": "terminal",
            "conditions": [{"id": "c1", "kind": "atom", "atom": ["in", "ginger", "red_saucepan"]}],
            "provenance": {"conditions": {"c1": {"refs": {"args": []}}}}}
    infos = {"R/S01": {"groups": [0], "task": task, "why": None, "witnesses": {"c1": add}, "skipped": []}}
    got = account([row], infos, [add], [0], {"e/t006"}, {}, [])
    assert got[0][1:] == ("expressed", {"task_id": "e/t006", "condition_id": "c1"})
    elsewhere = _op(791.0, "add_ingredient", ["ginger", "red_saucepan", "counter"], [{"id": "v/ginger/g1"}, {}, {}])
    infos["R/S01"]["witnesses"] = {"c1": elsewhere}
    got = account([row], infos, [elsewhere], [0], {"e/t006"}, {}, [])
    assert got[0][1].startswith("no_operation")


def test_every_condition_without_a_row_gets_a_closed_reason():
    step = lambda action, ev, **roles: NS(kind="step", action=action, evidence=ev, roles=roles)  # noqa: E731
    stir = _op(5.0, "stir", ["spoon", "mug"], [{}, {}], step("stir", {}))
    on = _op(6.0, "press_button", ["coffee_machine"], [{}], step("press_button", {}))
    transfer = _op(7.0, "pour", ["milk", "frother", "mug", "counter"], [{}, {}, {}, {}],
                   step("pour", {"s": {"file": "complete_recipes.json", "id": "R/I2/S03"}}, src="frother"))
    fill = _op(8.0, "fill_from_tap", ["glass", "tap"], [{}, {}], step("fill_from_tap", {"c": {"file": "assoc_info.json"}}))
    oil = _op(9.0, "pour", ["oil", "bottle", "pan", "counter"],
              [{"file": "complete_recipes.json", "id": "R/I1", "time": 9.0}, {}, {}, {}],
              NS(kind="add", refs={"recipe": "R", "ingredient": "I1", "video": "v", "start": 9.0}))
    cap = _op(10.0, "close_container", ["bag_2"], [{"vqa": "f53"}], NS(kind="snippet", refs={"vqa": "f53"}))
    cup = _op(11.0, "put_on", ["cup", "table"], [{"id": "v/cup/c1"}, {"id": "3d_perception_object_location_258"}])
    atoms = [("event", {"type": "stir", "args": ["spoon", "mug", None]}), ["powered", "coffee_machine"],
             ["in", "milk", "mug"], ["in", "water", "glass"], ["in", "oil", "pan"], ["capped", "bag_2"],
             ["at", "cup", "table"]]
    conds = [{"id": f"c{k}", "kind": "event", "event": a[1]} if a[0] == "event" else
             {"id": f"c{k}", "kind": "atom", "atom": a} for k, a in enumerate(atoms, 1)]
    wits = dict(zip([c["id"] for c in conds], [stir, on, transfer, fill, oil, cap, cup]))
    task = {"task_id": "e/t000", "tier": "terminal", "conditions": conds,
            "provenance": {"conditions": {c["id"]: w.provenance for c, w in zip(conds, wits.values())}}}
    infos = {"R/S04": {"groups": [0], "task": task, "why": None, "witnesses": wits, "skipped": []}}
    # the oil's add row lies in S03 by the row rule; the cup's answer is ambiguous (no row)
    rows = [Row("add", "R/S03", "v", 9.0, ("R/I1",), None, "R/I1 (oil)", ("R", "I1"))]
    got = conditions_without_rows(rows, [], infos, {"e/t000"})
    assert [(cid, why.split(":")[0]) for _, cid, why in got] == [
        ("c1", "event"), ("c2", "switch_on"), ("c3", "transfer"), ("c4", "step_action"),
        ("c5", "row_in_other_unit"), ("c6", "snippet_not_last"), ("c7", "row_ambiguous")]
    assert got[4][2] == "row_in_other_unit: in(oil, pan): add R/I1 (oil) lies in unit R/S03"
    # a condition that expresses a row gets none; a task in no suite gets none
    assert conditions_without_rows(rows, [(rows[0], "expressed", {"task_id": "e/t000", "condition_id": "c5"})],
                                   infos, {"e/t000"})[4:5] == [("e/t000", "c6", got[5][2])]
    assert conditions_without_rows(rows, [], infos, set()) == []
    _, audit = ledger_records("e", [], {}, got[:1])
    assert audit == [{"check": "ledger_no_row", "task_id": "e/t000/c1", "condition_id": "c1", "passed": True,
                      "detail": "event: event stir(spoon, mug)"}]


def test_reason_codes_are_a_closed_set():
    assert reason("no_condition", "x") == "no_condition: x"
    with pytest.raises(ValueError, match="ledger reason code 'other'"):
        reason("other", "x")
    assert {"not_grounded", "evidence_before_unit", "move_may_precede_unit"} <= set(REASONS)
    assert reason("event", "x", NO_ROW_REASONS) == "event: x"
    with pytest.raises(ValueError, match="ledger reason code 'not_grounded'"):
        reason("not_grounded", "x", NO_ROW_REASONS)


def _scattered():
    """Step S01 in two segments (0-10 s, 40-50 s) with an activity-row group between them
    (20-30 s): the mug put on the table in S01's first segment, the spoon put on the table
    in the row, the bottle put on the table in S01's second segment from a track that lies
    mostly before that segment (28-41 s)."""
    from analysis.compiler.groups import Segment
    from analysis.compiler.op_builder import Op
    objects = {"counter": "counter", "table": "table", "mug": "mug", "spoon": "spoon", "bottle": "bottle"}
    o = lambda **r: {"source": "observed", "refs": {"file": "f", **r}}  # noqa: E731
    trk = lambda a, b: o(file="assoc_info.json", start=a, end=b)  # noqa: E731
    step = lambda a, b: Segment("step", f"step:S01:{a}", "R01", ["S01"], "v", a, b, "Lay the table")  # noqa: E731
    op = lambda t, typ, args, provs: Op(t, {"type": typ, "args": args}, {"source": "observed",  # noqa: E731
                                                                            "refs": {"args": provs}})
    nav = lambda t, x, y: op(t, "navigate", [x, y], [o(), o()])  # noqa: E731
    G = [(step(0.0, 10.0), [op(1, "pick_up", ["mug", "counter"], [o(), o()]), nav(2, "counter", "table"),
                            op(3, "put_on", ["mug", "table"], [trk(1.0, 3.0), o(id="q1")]),
                            nav(4, "table", "counter")]),
         (Segment("track", "track:x", None, [], "v", 20.0, 30.0, "Lay: handle"),
          [op(21, "pick_up", ["spoon", "counter"], [o(), o()]), nav(22, "counter", "table"),
           op(23, "put_on", ["spoon", "table"], [trk(21.0, 23.0), o(id="q2")]), nav(24, "table", "counter")]),
         (step(40.0, 50.0), [op(40, "pick_up", ["bottle", "counter"], [o(), o()]), nav(40.5, "counter", "table"),
                             op(41, "put_on", ["bottle", "table"], [trk(28.0, 41.0), o(id="q3")])])]
    groups = [{"seg": s, "ops": xs} for s, xs in G]
    ops = [x for _, xs in G for x in xs]
    op_group = [i for i, (_, xs) in enumerate(G) for _ in xs]
    grecs = [{"group_id": f"e/g{i:04d}", "operations": [{"type": x.action["type"], "args": x.action["args"],
                                                          "provenance": x.provenance} for x in xs]}
             for i, (_, xs) in enumerate(G)]
    acts = [Activity("v", ("R01",), "Lay the table", 0.0, 60.0, False, "P01.csv:3")]
    init = frozenset({("agent-at", "counter"), ("hand-empty",), ("at", "mug", "counter"),
                      ("at", "spoon", "counter"), ("at", "bottle", "counter")})
    world = NS(fixture_ids=frozenset({"counter", "table"}), offsets={"v": 0.0}, tracks=[], videos=["v"],
               objects=objects, identities={})
    return world, groups, grecs, NS(out=NS(ops=ops)), op_group, acts, objects, init


def test_a_scattered_step_holds_only_its_own_groups_and_evidence_inside_it():
    from analysis.compiler.admission import replay
    from analysis.compiler.sim import Sim
    from analysis.compiler.tasks import unit_tasks
    from analysis.compiler.vocabulary import Vocabulary
    world, groups, grecs, builder, op_group, acts, objects, init = _scattered()
    sim = Sim(Vocabulary.load())
    states, _, bad = replay(sim, objects, init, grecs)
    assert bad == []
    infos: dict = {}
    tasks, _, _ = unit_tasks("e", world, groups, grecs, builder, op_group, acts, sim, objects, states,
                             ledger=infos)
    got = {t["provenance"]["refs"].get("step") or t["provenance"]["refs"]["row"]:
           (t["group_ids"], [c["atom"] for c in t["conditions"]]) for t in tasks}
    # the step's task: its two segments' groups, not the row's group between them; the
    # bottle's track lies mostly (12 of 13 s) before the second segment: no condition
    assert got["S01"] == (["e/g0000", "e/g0002"], [["at", "mug", "table"]])
    assert got["P01.csv:3"] == (["e/g0001"], [["at", "spoon", "table"]])
    assert [(a, code) for a, _, code in infos["R01/S01"]["skipped"]] == [
        (("at", "bottle", "table"), "evidence_before_unit")]
    assert infos["R01/S01"]["groups"] == [0, 2]


def test_an_itinerary_final_to_that_may_precede_the_unit_is_no_condition_at_all():
    from analysis.compiler.admission import replay
    from analysis.compiler.sim import Sim
    from analysis.compiler.tasks import unit_tasks
    from analysis.compiler.vocabulary import Vocabulary
    world, groups, grecs, builder, op_group, acts, objects, init = _scattered()
    # the mug's destination: an itinerary's final 'to' whose move any track from 0.5 s on
    # may have made, before the step starts (1 s): neither c1 nor a later condition
    put = groups[0]["ops"][2]
    put.provenance["refs"]["args"][1]["refs"].update(video="v", final_move_possible_from=-5.0)
    sim = Sim(Vocabulary.load())
    states, _, _ = replay(sim, objects, init, grecs)
    infos: dict = {}
    tasks, _, _ = unit_tasks("e", world, groups, grecs, builder, op_group, acts, sim, objects, states,
                             ledger=infos)
    assert [t["provenance"]["refs"].get("step") for t in tasks] == [None]        # the row's task only
    assert infos["R01/S01"]["why"] == "no_condition"
    assert sorted(code for _, _, code in infos["R01/S01"]["skipped"]) == [
        "evidence_before_unit", "move_may_precede_unit"]


def test_ledger_table_counts_rows_per_suite_by_reason():
    from analysis.report.common import Skip
    from analysis.report.ledger import ledger_table
    records = {
        "suite": [{"suite": "planner", "task_ids": ["e/t000"], "episode_ids": ["e"]},
                  {"suite": "memory", "task_ids": ["f/t000"], "episode_ids": ["e", "f"]}],
        "audit": [{"check": "ledger_expressed", "task_id": "e/t000/c1", "condition_id": "c1", "passed": True,
                   "detail": "2 rows of unit R/S01: add R/I1 (salt) | placement put-down of 'mug' by q1"},
                  {"check": "ledger_expressed", "task_id": "f/t000/c1", "condition_id": "c1", "passed": True,
                   "detail": "1 rows of unit R/S02: snippet <close jar> (f9)"},
                  {"check": "reference_pass", "task_id": "e/t000", "condition_id": None, "passed": True,
                   "detail": "x"}],
        "dropped_event": [{"kind": "ledger", "episode_id": "e", "refs": {"code": "not_grounded", "row": "add"}},
                          {"kind": "ledger", "episode_id": "f", "refs": {"code": "not_grounded", "row": "add"}},
                          {"kind": "add", "episode_id": "e", "refs": {}}]}
    t = ledger_table(NS(records_of=lambda kind: records[kind]))
    got = [tuple(r) for r in t.data[["suite", "status", "add", "placement", "snippet", "rows"]].itertuples(index=False)]
    assert got == [
        ("memory", "expressed", 0, 0, 1, 1), ("memory", "not_grounded", 2, 0, 0, 2),
        ("memory", "not_in_suite", 1, 1, 0, 2),      # expressed by the planner suite's task
        ("planner", "expressed", 1, 1, 0, 2), ("planner", "not_grounded", 1, 0, 0, 1)]
    assert list(t.data.share[t.data.suite == "planner"]) == [2 / 3, 1 / 3]
    with pytest.raises(Skip, match="no completeness ledger"):
        ledger_table(NS(records_of=lambda kind: [] if kind != "suite" else records["suite"]))


def ledger_violations(export_root: Path, source: Path) -> list[str]:
    """Rows of the exported episodes' units not accounted for exactly once (recomputed from
    the raw rows by :func:`unit_rows`, against the ``ledger`` records of ``dropped.jsonl``
    and the ``ledger_expressed`` audit records)."""
    import gzip

    from analysis.compiler.readers import (read_activities, read_associations, read_durations,
                                           read_itineraries, read_location_answers, read_recipes,
                                           read_snippets)
    cohort = Path(export_root) / "cohort"
    read = lambda name: [json.loads(x) for x in (cohort / name).read_text().splitlines()]  # noqa: E731
    with gzip.open(cohort / "episodes.jsonl.gz", "rt") as f:
        videos = {e["episode_id"]: e["videos"] for e in map(json.loads, f)}
    seen: Counter = Counter()
    for d in read("dropped.jsonl"):
        if d["kind"] == "ledger":
            assert d["refs"]["code"] in REASONS and d["reason"].startswith(d["refs"]["code"] + ": ")
            seen[(d["episode_id"], d["refs"]["unit"], d["what"])] += 1
    tasks = {t["task_id"] for t in read("tasks.jsonl")}
    for a in read("audit.jsonl"):
        if a["check"] == "ledger_expressed":
            tid = a["task_id"].rsplit("/", 1)[0]
            assert tid in tasks, a
            head, rows = a["detail"].split(": ", 1)
            unit = head.split(" rows of unit ", 1)[1]
            for r in rows.split(" | "):
                seen[(tid.split("/")[0], unit, r)] += 1
    src = Path(source)
    durations = read_durations(src)
    raw = (read_recipes(src), read_activities(src, durations), read_associations(src),
           read_location_answers(src), read_itineraries(src), read_snippets(src))
    want: Counter = Counter()
    for eid, vids in videos.items():
        for r in unit_rows(*raw, vids):
            want[(eid, r.unit, f"{r.kind} {r.what}")] += 1
    return ([f"not accounted for: {k} x{n}" for k, n in (want - seen).items()]
            + [f"accounted for too often or not a row: {k} x{n}" for k, n in (seen - want).items()])


@pytest.mark.skipif(not (SOURCE / "SHA256SUMS").is_file(), reason="HD-EPIC source files absent")
def test_a_placement_not_grounded_cites_the_record_that_dropped_its_track():
    # P05-20240425-173353: the metal bowl's put-down at 968.1 s (itinerary 135's final 'to')
    # was filed citing d027, the itinerary's note that only its ends are observed (it names
    # the row's question, and came first); the track was dropped by the one-hand model (d072)
    bowl = Row("placement", "R/S03", "v", 968.1, ("it135",), "v/bowl/b3", "put-down of 'metal bowl' by it135",
               ("bowl", "b3"))
    note = {"event_id": "e/d027", "kind": "source", "what": "itinerary it135 (metal bowl)",
            "reason": "itinerary has 2 moves, the association 3 tracks: only the first 'from' and the final "
                      "'to' are observed", "refs": {"file": "itinerary.json", "id": "it135", "video": "v"}}
    drop = {"event_id": "e/d072", "kind": "track", "what": "track b3 (metal_bowl)",
            "reason": "ends while track f1 (fork) is held (one-hand model)",
            "refs": {"association": "bowl", "file": "assoc_info.json", "track": "b3", "video": "v"}}
    infos = {"R/S03": {"groups": [0], "task": None, "why": "no_condition", "witnesses": {}, "skipped": []}}
    got = account([bowl], infos, [], [], set(), {}, [note, drop])
    assert [(st.split(":")[0], refs) for _, st, refs in got] == [("not_grounded", {"dropped": "e/d072"})]
    assert "dropped record e/d072, kind track" in got[0][1]
    # only the note names it: it is still the record cited (nothing better)
    assert account([bowl], infos, [], [], set(), {}, [note])[0][2] == {"dropped": "e/d027"}


def test_a_placement_whose_one_candidate_is_an_unnamed_track_is_accounted_as_unnamed_track():
    # P09-20240621-093545: itinerary 238's only candidate is the unnamed "Track 100" (the
    # binding drops it, d194); the row was missing from the ledger, which skipped unnamed
    # tracks. An answer whose one candidate is an unnamed track (no named object within two
    # frames) is a row (code unnamed_track, citing the record that dropped the track); two
    # unnamed candidates are ambiguous (no row); next to a named object the row is the named
    # object's, as the strict count has it
    recipes, acts, _, _, _, _ = _kitchen()
    anon = Association("v", "t100", None, "Track 100", (Track("x0", 30.0, 31.0),))
    pot = Association("v", "pot", "pot", "pot", (Track("p0", 85.0, 86.0),))
    anon2 = Association("v", "t101", None, "Track 101", (Track("y0", 85.02, 87.0),))
    anon3 = Association("v", "t102", None, "Track 102", (Track("z0", 90.0, 91.0),))
    anon4 = Association("v", "t103", None, "Track 103", (Track("w0", 90.01, 91.0),))
    answers = [LocationAnswer("q7", "v", "put", 30.0, "sink"), LocationAnswer("q8", "v", "put", 85.0, "sink"),
               LocationAnswer("q9", "v", "put", 90.0, "sink")]
    rows = unit_rows(recipes, acts, {"v": [anon, pot, anon2, anon3, anon4]}, answers, [], [], ["v"])
    assert [(r.kind, r.unit, r.ids, r.track, r.unnamed) for r in rows if r.kind == "placement"] == [
        ("placement", "P01.csv:2", ("q7",), "v/t100/x0", True),             # Track 100 alone
        ("placement", "P01.csv:2", ("q8",), "v/pot/p0", False)]          # the pot, not Track 101; q9: two unnamed
    drop = {"event_id": "e/d195", "kind": "track", "what": "track x0 (Track 100)",
            "reason": "unnamed track (annotators gave no object name)",
            "refs": {"association": "t100", "file": "assoc_info.json", "track": "x0", "video": "v"}}
    infos = {"P01.csv:2": {"groups": [0], "task": None, "why": "no_condition", "witnesses": {}, "skipped": []}}
    got = account([r for r in rows if r.unnamed], infos, [], [], set(), {}, [drop])
    assert [(st.split(":")[0], refs) for _, st, refs in got] == [("unnamed_track", {"dropped": "e/d195"})]
    assert got[0][1] == "unnamed_track: put-down of 'Track 100' (track x0) by q7: the track has no object name"


def test_every_row_of_every_unit_of_the_committed_cohort_is_accounted_for_exactly_once():
    assert ledger_violations(REPO / "frozen_exports", SOURCE) == []


def condition_ledger_violations(export_root: Path) -> list[str]:
    """Conditions of the exported tasks without exactly one ledger record: a
    ``ledger_expressed`` record (the rows it expresses) or a ``ledger_no_row`` record whose
    reason is from :data:`NO_ROW_REASONS` and is not the defect code ``no_row``."""
    cohort = Path(export_root) / "cohort"
    read = lambda name: [json.loads(x) for x in (cohort / name).read_text().splitlines()]  # noqa: E731
    want = {f"{t['task_id']}/{c['id']}" for t in read("tasks.jsonl") for c in t["contract"]["conditions"]}
    seen: Counter = Counter()
    bad = []
    for a in read("audit.jsonl"):
        if a["check"] == "ledger_no_row":
            code = a["detail"].split(":", 1)[0]
            if code not in NO_ROW_REASONS or code == "no_row":
                bad.append(f"{a['task_id']}: {a['detail']}")
        if a["check"] in ("ledger_expressed", "ledger_no_row"):
            seen[a["task_id"]] += 1
    return (bad + [f"no ledger record: {k}" for k in sorted(want - set(seen))]
            + [f"{n} ledger records: {k}" for k, n in sorted(seen.items()) if n != 1 or k not in want])


@pytest.mark.skipif(not any('"ledger_no_row"' in x for x in
                            (REPO / "frozen_exports" / "cohort" / "audit.jsonl").read_text().splitlines()),
                    reason="the committed export predates the ledger_no_row check: regenerate it "
                           "(python -m analysis.compile)")
def test_every_condition_of_the_committed_cohort_expresses_rows_or_says_why_not():
    assert condition_ledger_violations(REPO / "frozen_exports") == []

"""Fast unit tests of the compiler's pieces: fixture-phrase normalisation and the
commute check of the stress test (no HD-EPIC source needed)."""
import pytest

from analysis.compiler.audit import both_orders, find_commute_pair, independent
from analysis.compiler.fixtures import scene_fixtures
from analysis.compiler.normalise import fixture_id, fixture_phrase
from analysis.compiler.readers import Itinerary, LocationAnswer
from analysis.compiler.sim import Sim
from analysis.compiler.vocabulary import Vocabulary


@pytest.fixture(scope="module")
def vocab():
    return Vocabulary.load()


# The three phrasings the HD-EPIC README names, and what docs/compiler.md promises.
@pytest.mark.parametrize("phrase, fid", [
    ("counter left from sink", "counter_left_of_sink"),
    ("counter left of sink", "counter_left_of_sink"),
    ("counter top right of dishwasher", "counter_right_of_dishwasher"),
    ("At the counter to the right of the fridge.", "counter_right_of_fridge"),
    ("counter right of fridge", "counter_right_of_fridge"),
])
def test_fixture_phrases_map_to_one_id(phrase, fid):
    assert fixture_id(phrase) == fid


def test_fixture_phrase_is_idempotent():
    once = fixture_phrase("At the counter to the right of the fridge.")
    assert once == "counter right of fridge"
    assert fixture_phrase(once) == once


def test_scene_fixtures_merge_phrasings_per_scene(vocab):
    # two phrasings of one fixture in P01 (answer + itinerary) must give one record with
    # both phrases; the same phrase in another scene must not leak into P01.
    answers = [LocationAnswer("q1", "P01-20240202-110250", "take", 1.0, "counter left from sink"),
               LocationAnswer("q2", "P02-20240209-194141", "put", 2.0, "counter top right of dishwasher")]
    itins = [Itinerary("q3", "P01-20240202-110250", 5.0,
                       (("counter left of sink", "At the counter to the right of the fridge."),))]
    fx = scene_fixtures("P01", answers, {}, itins, {}, {}, vocab)
    by_id = {f["id"]: f for f in fx}
    assert sorted(by_id) == ["counter_left_of_sink", "counter_right_of_fridge"]
    assert by_id["counter_left_of_sink"]["phrases"] == ["counter left from sink", "counter left of sink"]
    assert by_id["counter_left_of_sink"]["type"] == "counter"
    # stable: same input in another order gives the same records
    assert scene_fixtures("P01", answers[::-1], {}, itins, {}, {}, vocab) == fx


# ---- commute check: a world small enough to check by hand
OBJECTS = {"counter": "counter", "cupboard": "cupboard", "cup": "cup", "plate": "plate",
           "lid": "lid"}


def test_independence_by_touched_atoms(vocab):
    sim = Sim(vocab)
    facts = frozenset({("agent-at", "counter"), ("hand-empty",), ("at", "cup", "counter"),
                       ("at", "plate", "counter")})
    pick_cup = {"type": "pick_up", "args": ["cup", "counter"]}
    pick_plate = {"type": "pick_up", "args": ["plate", "counter"]}
    cover_cup = {"type": "cover", "args": ["cup", "counter"]}
    cover_plate = {"type": "cover", "args": ["plate", "counter"]}
    # both pick-ups delete hand-empty: dependent
    assert not independent(sim, facts, pick_cup, pick_plate)
    # covering two different items touches disjoint atoms (shared read agent-at only)
    assert independent(sim, facts, cover_cup, cover_plate)
    # covering the cup while picking it up: pick_up reads at(cup) ... cover reads
    # not covered(cup) which pick_up does not write, but both are fine only if writes
    # are disjoint from the other's reads: pick_up deletes at(cup, counter), cover reads it
    assert not independent(sim, facts, pick_cup, cover_cup)
    same, detail = both_orders(OBJECTS, facts, cover_cup, cover_plate)
    assert same and "in both orders" in detail


def test_find_commute_pair_prefers_adjacent_reference_ops_and_reports_none(vocab):
    sim = Sim(vocab)
    s0 = frozenset({("agent-at", "counter"), ("hand-empty",), ("at", "cup", "counter"),
                    ("at", "plate", "counter")})
    ops = [{"type": "cover", "args": ["cup", "counter"]},
           {"type": "cover", "args": ["plate", "counter"]}]
    groups = [{"group_id": "e/g0000", "operations": ops}]
    task = {"task_id": "e/t000", "first": 0, "last": 0}
    s, a, b, how = find_commute_pair(sim, OBJECTS, groups, task, {-1: s0})
    assert (a, b) == tuple(ops) and how.startswith("adjacent reference operations")
    # a world where every applicable action touches the hand: no independent pair
    lone = frozenset({("agent-at", "counter"), ("holding", "cup")})
    ops2 = [{"type": "put_on", "args": ["cup", "counter"]}]
    assert find_commute_pair(sim, {"counter": "counter", "cup": "cup"},
                             [{"group_id": "e/g0000", "operations": ops2}], task, {-1: lone}) is None


# ------------------------------------------------------------ goal-aligned task units
def _unit_fixture(snippets: bool = False):
    """Five groups of one video: an activity row 0-100 s split by two segments of step
    S01 ("Stir the juice") and one segment of step S02 ("Pour juice into the cup"), plus
    a group after the row. Hand-checkable: which end states each unit produced. With
    ``snippets``: the cup is tapped while held (1.5 s, g0) and the bottle closed after the
    pour (13.5 s, g1), both from fine-grained snippets."""
    from types import SimpleNamespace as NS
    from analysis.compiler.groups import Segment
    from analysis.compiler.op_builder import Op
    from analysis.compiler.readers import Activity
    objects = {"counter": "counter", "table": "table", "cupboard": "cupboard", "cup": "cup",
               "bottle": "bottle", "spoon": "spoon", "juice": "juice"}
    o = lambda ref: {"source": "observed", "refs": {"file": ref}}
    c = {"source": "curated", "refs": {"rule": "unobserved_destination_work_counter"}}
    step = lambda sid, t0, t1: Segment("step", f"step:{sid}:{t0}", "R01", [sid], "v", t0, t1, "Stir the juice")
    track = lambda t: Segment("track", f"track:{t}", None, [], "v", t, t + 1, "Make juice: handle")
    planned = lambda kind: NS(kind=kind, step=None, refs={}, title="")

    def op(t, typ, args, provs, p=None):
        return Op(t, {"type": typ, "args": args}, {"source": "observed" if all(
            x["source"] == "observed" for x in provs) else "curated", "refs": {"args": provs}}, planned=p)
    nav = lambda t, x, y: op(t, "navigate", [x, y], [c, c])
    G = [
        # g0 (activity row, run 1): the cup put on the table (observed), the spoon too (curated)
        (track(1.0), [op(1, "pick_up", ["cup", "counter"], [o("t"), o("t")]), nav(1, "counter", "table")]
         + ([op(1.5, "tap", ["cup"], [o("snip")], planned("snippet"))] if snippets else [])
         + [op(2, "put_on", ["cup", "table"], [o("t"), o("vqa")]), nav(2, "table", "counter"),
                      op(3, "pick_up", ["spoon", "counter"], [o("t"), o("t")]), nav(3, "counter", "table"),
                      op(4, "put_on", ["spoon", "table"], [o("t"), c])]),
        # g1 (S02): pour, then the bottle set down (observed): a terminal unit of 2 conditions
        (step("S02", 10.0, 20.0), [nav(11, "table", "counter"),
                                   op(11, "pick_up", ["bottle", "counter"], [o("t"), o("t")]),
                                   nav(12, "counter", "table"),
                                   op(13, "pour", ["juice", "bottle", "cup", "table"], [o("a"), o("t"), o("t"), c],
                                      planned("add"))]
         + ([op(13.5, "close_container", ["bottle"], [o("snip")], planned("snippet"))] if snippets else [])
         + [op(14, "put_on", ["bottle", "table"], [o("t"), o("vqa")])]),
        # g2 (S01 first segment): a stir, an event unit
        (step("S01", 30.0, 40.0), [op(31, "pick_up", ["spoon", "table"], [o("t"), o("t")]),
                                   op(33, "stir", ["spoon", "cup", "table"], [o("t"), o("t"), c],
                                      planned("step"))]),
        # g3 (S01 second segment): the same step again, the same unit as g2
        (step("S01", 50.0, 60.0), [op(51, "stir", ["spoon", "cup", "table"], [o("t"), o("t"), c],
                                      planned("step"))]),
        # g4 (activity row, after the steps): the spoon put back on the counter (observed),
        # where it started: TRUE at the row's start already, so no condition (free credit)
        (track(70.0), [nav(71, "table", "counter"), op(71, "put_on", ["spoon", "counter"], [o("t"), o("vqa")])]),
        # g5 (S03, another step): the same stir as S01's: same condition set, rejected
        (step("S03", 80.0, 90.0), [op(81, "pick_up", ["spoon", "counter"], [o("t"), o("t")]),
                                   nav(81, "counter", "table"),
                                   op(83, "stir", ["spoon", "cup", "table"], [o("t"), o("t"), c],
                                      planned("step"))]),
        # g6 (after the row): no unit, no task
        (track(150.0), [op(151, "put_on", ["spoon", "table"], [o("t"), o("vqa")])]),
    ]
    groups = [{"seg": seg, "ops": ops} for seg, ops in G]
    ops = [x for _, xs in G for x in xs]
    op_group = [i for i, (_, xs) in enumerate(G) for _ in xs]
    grecs = [{"group_id": f"e/g{i:04d}", "operations": [{"type": x.action["type"], "args": x.action["args"],
                                                          "provenance": x.provenance} for x in xs]}
             for i, (_, xs) in enumerate(G)]
    acts = [Activity("v", ("P01_R01",), "Make juice", 0.0, 100.0, False, "P01_recipe_timestamps.csv:2")]
    init = frozenset({("agent-at", "counter"), ("hand-empty",), ("at", "cup", "counter"),
                      ("at", "bottle", "counter"), ("at", "spoon", "counter"), ("in", "juice", "bottle")})
    world = NS(fixture_ids=frozenset({"counter", "table", "cupboard"}), offsets={"v": 0.0}, tracks=[],
               videos=["v"], objects=objects, identities={})
    return world, groups, grecs, NS(out=NS(ops=ops)), op_group, acts, objects, init


def test_unit_tasks_one_task_per_source_unit_with_every_observed_end_state():
    from analysis.compiler.admission import replay
    from analysis.compiler.sim import Sim
    from analysis.compiler.tasks import unit_tasks
    from analysis.compiler.vocabulary import Vocabulary
    world, groups, grecs, builder, op_group, acts, objects, init = _unit_fixture()
    sim = Sim(Vocabulary.load())
    states, _, bad = replay(sim, objects, init, grecs)
    assert bad == []
    tasks, rejected, dropped = unit_tasks("e", world, groups, grecs, builder, op_group, acts, sim, objects,
                                          states)
    got = [(t["tier"], t["group_ids"], [c.get("atom") or c["event"] for c in t["conditions"]]) for t in tasks]
    assert got == [
        # the whole activity row, its steps inside it (not split at them): the cup's observed
        # placement (g0); the spoon's (g4) puts it back where it started, TRUE at the row's
        # start already: no condition; the spoon's curated put-down on the table (g0) is an
        # intermediate state and curated: no condition, and the bottle's placement belongs
        # to step S02, not to the row
        ("terminal", [f"e/g{i:04d}" for i in range(5)], [["at", "cup", "table"]]),
        # the add's step: in() first, then the bottle's observed placement
        ("terminal", ["e/g0001"], [["in", "juice", "cup"], ["at", "bottle", "table"]]),
        # step S01, both of its segments one unit: one event (the unobserved fixture a wildcard)
        ("event", ["e/g0002", "e/g0003"], [{"type": "stir", "args": ["spoon", "cup", None]}]),
    ]
    assert [t["provenance"]["refs"]["unit"] for t in tasks] == [
        "activity row", "recipe step with its prep segments", "recipe step with its prep segments"]
    assert [(x["start"], x["end"]) for x in tasks[2]["provenance"]["refs"]["segments"]] == [(30.0, 40.0), (50.0, 60.0)]
    # step S03 asks for the same stir as S01: one task, the second unit rejected
    assert [r["reason"] for r in rejected] == ["duplicate_condition_set"]
    # the end state held at the row's start is listed with its reason, never silently lost
    assert [(d["kind"], d["what"], d["refs"]["group_id"]) for d in dropped] == [
        ("condition", "at(spoon, counter)", "e/g0000")]
    assert dropped[0]["reason"].startswith("true_at_task_start")
    # and no condition of any task is TRUE in the reference state at its task's start
    for t in tasks:
        start = states[t["first"] - 1]
        assert not [c for c in t["conditions"] if c["kind"] == "atom" and tuple(c["atom"]) in start]
    # every condition carries the provenance of the arguments it keeps
    prov = tasks[1]["provenance"]["conditions"]
    assert [a["refs"]["file"] for a in prov["c1"]["refs"]["args"]] == ["a", "t", "t"]   # with the source
    assert [a["refs"]["file"] for a in prov["c2"]["refs"]["args"]] == ["t", "vqa"]


def test_a_snippet_gives_a_capped_end_state_never_a_key_event():
    # the tapped cup (g0) adds no event to the row (it stays terminal, same conditions);
    # the bottle closed after the pour (g1) is an end state of step S02, also when the
    # bottle is handled again inside the step (a track at 16-17 s: put away, still closed),
    # unless a row shows it opened then (an <open bottle> snippet, or an add row during
    # that track: something poured out of it)
    from types import SimpleNamespace as NS
    from analysis.compiler.admission import replay
    from analysis.compiler.sim import Sim
    from analysis.compiler.tasks import unit_tasks
    from analysis.compiler.vocabulary import Vocabulary
    world, groups, grecs, builder, op_group, acts, objects, init = _unit_fixture(snippets=True)
    sim = Sim(Vocabulary.load())
    states, _, bad = replay(sim, objects, init, grecs)
    assert bad == []
    got = lambda: [(t["tier"], [c.get("atom") or c["event"] for c in t["conditions"]]) for t in
                   unit_tasks("e", world, groups, grecs, builder, op_group, acts, sim, objects, states)[0]][:2]
    assert got() == [("terminal", [["at", "cup", "table"]]),
                     ("terminal", [["in", "juice", "cup"], ["at", "bottle", "table"], ["capped", "bottle"]])]
    world.tracks = [NS(entity="bottle", start=16.0, end=17.0)]
    # handled again, no row opens it: capped stays (the placement is intermediate: moved again)
    assert got()[1] == ("terminal", [["in", "juice", "cup"], ["capped", "bottle"]])
    world.names = {"bottle": ["glass bottle"]}
    run = lambda rows: [[c.get("atom") for c in t["conditions"]] for t in unit_tasks(
        "e", world, groups, grecs, builder, op_group, acts, sim, objects, states, reopen=rows)[0]][1]
    open_bottle = ("open", 16.5, frozenset({"bottle"}))
    assert run([open_bottle]) == [["in", "juice", "cup"]]
    assert run([("add", 16.2, 16.8)]) == [["in", "juice", "cup"]]
    # an opening of another noun, an add outside the later track, or an opening after the
    # step's end (20 s) undoes nothing
    assert run([("open", 16.5, frozenset({"jar"})), ("add", 18.0, 19.0), ("open", 25.0, frozenset({"bottle"}))]) \
        == [["in", "juice", "cup"], ["capped", "bottle"]]
    # not handled again (no later track): an opening row names another bottle, not this one
    world.tracks = []
    assert run([open_bottle]) == [["in", "juice", "cup"], ["at", "bottle", "table"], ["capped", "bottle"]]


def test_a_placement_the_rows_move_again_within_the_unit_is_not_an_end_state():
    # the cup's observed put-down on the table at 2 s is followed, inside the row (0-100 s),
    # by another track of the cup that the compiled operations do not contain (the one-hand
    # model dropped it): the placement is an intermediate state, not the row's end state
    from types import SimpleNamespace as NS
    from analysis.compiler.admission import replay
    from analysis.compiler.sim import Sim
    from analysis.compiler.tasks import unit_tasks
    from analysis.compiler.vocabulary import Vocabulary
    world, groups, grecs, builder, op_group, acts, objects, init = _unit_fixture()
    sim = Sim(Vocabulary.load())
    states, _, _ = replay(sim, objects, init, grecs)
    row = lambda w: unit_tasks("e", w, groups, grecs, builder, op_group, acts, sim, objects, states)[0][0]
    assert ["at", "cup", "table"] in [c["atom"] for c in row(world)["conditions"]]
    later = NS(entity="cup", start=95.0, end=96.0)       # starts after the put-down, inside the row
    after = NS(entity="cup", start=120.0, end=121.0)     # after the row: does not matter
    world.tracks = [after]
    assert ["at", "cup", "table"] in [c["atom"] for c in row(world)["conditions"]]
    world.tracks = [later, after]
    # the row is left with no end state (the spoon's is TRUE at its start): no task for it
    assert row(world)["provenance"]["refs"]["unit"] != "activity row"


def test_atom_needs_every_argument_observed():
    from types import SimpleNamespace as NS
    from analysis.compiler.evidence import _atom_keep
    op = NS(action={"type": "put_on", "args": ["cup", "table"]},
            provenance={"refs": {"args": [{"source": "observed"}, {"source": "curated"}]}})
    assert _atom_keep(op, ("at", "cup", "table")) is None
    op.provenance["refs"]["args"][1]["source"] = "observed"
    assert _atom_keep(op, ("at", "cup", "table")) == [0, 1]


def test_negative_suite_one_record_per_condition():
    from analysis.compiler.audit import negative_suites
    objects = {"juice": "food", "cup": "container", "counter": "fixture"}
    end = frozenset({("in", "juice", "cup"), ("at", "cup", "counter")})
    task = {"task_id": "e/t000", "first": 0, "last": 0, "conditions": [
        {"id": "c1", "kind": "atom", "atom": ["in", "juice", "cup"]},
        {"id": "c2", "kind": "atom", "atom": ["at", "cup", "counter"]}]}
    recs = negative_suites(task, {-1: frozenset(), 0: end}, {0: []}, objects)
    assert [(r["task_id"], r["condition_id"]) for r in recs] == [("e/t000", "c1"), ("e/t000", "c2")]
    assert [r["detail"].split(":")[0] for r in recs] == ["c1 in(juice, cup)", "c2 at(cup, counter)"]
    assert all(r["passed"] for r in recs)


# ------------------------------------------------------------ unique binding, itinerary chains
def _assocs():
    from analysis.compiler.readers import Association, Track
    mug = Association("v", "a1", "mug", "mug", (Track("t1", 10.0, 12.0), Track("t2", 30.0, 31.0)))
    pan = Association("v", "a2", "pan", "pan", (Track("t3", 10.0, 15.0),))
    spoon = Association("v", "a3", "spoon", "spoon", (Track("t4", 50.0, 52.0),))
    return [mug, pan, spoon]


def test_time_keyed_answers_bind_only_one_matching_track():
    from analysis.compiler.readers import LocationAnswer
    from analysis.compiler.answer_links import _link_answers
    fx = frozenset({"hob", "sink", "counter_right_of_hob"})
    answers = [LocationAnswer("q1", "v", "put", 10.0, "hob"),      # mug t1 and pan t3 start at 10.0
               LocationAnswer("q2", "v", "put", 50.0, "sink")]     # only the spoon
    per_track, _, dropped, conflicts, _ = _link_answers("v", _assocs(), answers, [], fx)
    assert per_track == {("a3", "t4"): {"dst": ("sink", ("3d_perception_object_location.json", "q2",
                                                          "VQA: where the object was put",
                                                          {"answer": "sink", "question": "", "video": "v"}))}}
    # a second object's track 0.04 s away (within two frames) is enough
    from analysis.compiler.readers import Association, Track
    near = _assocs() + [Association("v", "a4", "fork", "fork", (Track("t5", 50.04, 53.0),))]
    per_track, _, dropped2, _, _ = _link_answers("v", near, answers[1:], [], fx)
    assert per_track == {} and "2 objects' tracks start/end within two frames" in dropped2[0]["reason"]
    assert len(dropped) == 1 and "2 objects' tracks start/end within" in dropped[0]["reason"] and "q1" in dropped[0]["what"]
    assert conflicts == []


def test_itinerary_chain_gives_every_track_its_source_and_destination():
    from analysis.compiler.readers import Itinerary, LocationAnswer
    from analysis.compiler.answer_links import _link_answers
    fx = frozenset({"hob", "sink", "counter_right_of_hob"})
    it = Itinerary("i1", "v", 30.0, (("hob", "sink"), ("sink", "counter right of hob")))
    per_track, initial, dropped, conflicts, chains = _link_answers("v", _assocs(), [], [it], fx)
    assert initial == {"a1": ("hob", "i1")}
    assert {k: (v["src"][0], v["dst"][0]) for k, v in per_track.items()} == {
        ("a1", "t1"): ("hob", "sink"), ("a1", "t2"): ("sink", "counter_right_of_hob")}
    assert dropped == [] and conflicts == []
    # a VQA answer that disagrees with the itinerary on the same track: neither is used
    put = LocationAnswer("q9", "v", "put", 30.0, "hob")
    per_track, _, _, conflicts, _ = _link_answers("v", _assocs(), [put], [it], fx)
    assert "dst" not in per_track[("a1", "t2")] and per_track[("a1", "t2")]["src"][0] == "sink"
    assert [(c["track"], c["side"], sorted(a["id"] for a in c["answers"])) for c in conflicts] == [
        ("t2", "dst", ["i1", "q9"])]


def test_itinerary_binds_the_one_object_seen_at_a_track_start_or_end():
    # "the object seen at T" is seen standing still: T is a track's start or its end.
    from analysis.compiler.readers import Association, Itinerary, Track
    from analysis.compiler.answer_links import _link_answers
    fx = frozenset({"hob", "sink", "counter_right_of_hob"})
    moves = (("hob", "sink"), ("sink", "counter right of hob"))
    # 12.0 is only the end of the mug's first track: the mug, both moves on its 2 tracks
    per_track, initial, dropped, _, _ = _link_answers("v", _assocs(), [], [Itinerary("i2", "v", 12.0, moves)], fx)
    assert initial == {"a1": ("hob", "i2")} and dropped == []
    assert {k: (v["src"][0], v["dst"][0]) for k, v in per_track.items()} == {
        ("a1", "t1"): ("hob", "sink"), ("a1", "t2"): ("sink", "counter_right_of_hob")}
    # 15.0 is the pan's end, 10.0 the start of the mug's and of the pan's: two objects
    _, initial, dropped, _, _ = _link_answers("v", _assocs(), [], [Itinerary("i3", "v", 10.0, moves)], fx)
    assert initial == {} and "2 objects' tracks start/end within two frames" in dropped[0]["reason"]
    # two tracks of one object at T (put down, picked up again at once) are one match
    cup = Association("v", "a9", "cup", "cup", (Track("t8", 60.0, 62.0), Track("t9", 62.01, 64.0)))
    _, initial, dropped, _, _ = _link_answers("v", [cup], [], [Itinerary("i4", "v", 62.0, moves)], fx)
    assert initial == {"a9": ("hob", "i4")} and dropped == []
    # nothing within the tolerance: the drop says so
    _, initial, dropped, _, _ = _link_answers("v", _assocs(), [], [Itinerary("i5", "v", 40.0, moves)], fx)
    assert initial == {} and "no track starts/ends at the question's time" in dropped[0]["reason"]


def _board(n_tracks: int):
    """A chopping board with ``n_tracks`` tracks 10 s apart (t1 at 10 s, t2 at 20 s, ...)."""
    from analysis.compiler.readers import Association, Track
    return Association("v", "b1", "chopping board", "chopping board",
                       tuple(Track(f"t{i}", 10.0 * i, 10.0 * i + 2.0) for i in range(1, n_tracks + 1)))


def test_itinerary_chain_with_extra_tracks_is_aligned_from_the_start():
    # 3 moves, 5 tracks: the chain leaves out moves within one fixture, so 2 of the 5
    # tracks are handlings that put the board back where it was picked up. Forward
    # alignment: t1 makes move 1 (-> counter right of hob), t2 move 2 (-> sink), t3 and
    # t4 stay at move 3's 'from' (the sink), t5 makes move 3 (-> hob, observed). The
    # backward alignment gave t1, t2 'cupboard' (taken out and put straight back).
    from analysis.compiler.readers import Itinerary
    from analysis.compiler.answer_links import _link_answers
    fx = frozenset({"cupboard_left_of_fridge", "counter_right_of_hob", "sink", "hob"})
    it = Itinerary("i7", "v", 10.0, (("cupboard left of fridge", "counter right of hob"),
                                     ("counter right of hob", "sink"), ("sink", "hob")))
    per_track, initial, dropped, conflicts, chains = _link_answers("v", [_board(5)], [], [it], fx)
    assert initial == {"b1": ("cupboard left of fridge", "i7")}
    # observed: only the chain's two ends
    assert {k: {s: v[s][0] for s in v} for k, v in per_track.items()} == {
        ("b1", "t1"): {"src": "cupboard_left_of_fridge"}, ("b1", "t5"): {"dst": "hob"}}
    order, guess, moves = chains["b1"]
    assert guess == {"t1": "counter_right_of_hob", "t2": "sink", "t3": "sink", "t4": "sink"}
    assert order[-1] == "hob" and moves == it.moves
    assert conflicts == [] and len(dropped) == 1
    assert "aligned from the first track" in dropped[0]["reason"]
    assert "3 moves, the association 5 tracks" in dropped[0]["reason"]
    # equal counts: every move observed on its own track, no curated defaults
    it3 = Itinerary("i8", "v", 10.0, it.moves)
    per_track, _, dropped, _, chains = _link_answers("v", [_board(3)], [], [it3], fx)
    assert chains["b1"][1] == {} and chains["b1"][2] == () and dropped == []
    assert {k: (v["src"][0], v["dst"][0]) for k, v in per_track.items()} == {
        ("b1", "t1"): ("cupboard_left_of_fridge", "counter_right_of_hob"),
        ("b1", "t2"): ("counter_right_of_hob", "sink"), ("b1", "t3"): ("sink", "hob")}


def test_chain_alignment_never_walks_the_chain_backwards():
    from analysis.compiler.answer_links import align_chain, chain_defaults
    abcd = (("a", "b"), ("b", "c"), ("c", "d"))
    # no anchors: tracks 1..m-1 make moves 1..m-1, the rest stay at move m's 'from'
    assert align_chain(abcd, [None] * 6) == ["b", "c", "c", "c", "c", None]
    assert chain_defaults((("a", "b"),), ["t1", "t2", "t3"]) == {"t1": "a", "t2": "a"}
    # fewer tracks than moves: the track before the last ends at the last move's 'from'
    assert align_chain(abcd, [None, None]) == ["c", None]
    # an observed destination fixes how far along the chain the object is: after 'b'
    # observed on track 3, tracks 1-2 have not gone past 'b' and track 4 goes on to 'c'
    assert align_chain(abcd, [None, None, "b", None, None]) == ["b", "b", None, "c", None]
    # round trip hob -> fridge -> hob, observed at the hob after tracks 2 and 4: one
    # excursion (track 3), never a second one to the fridge after the return
    assert align_chain((("hob", "fridge"), ("fridge", "hob")),
                       [None, "hob", None, "hob", None]) == ["hob", None, "fridge", None, None]
    # observed at the final fixture early: the later tracks stay there
    assert align_chain(abcd, ["b", "d", None, None]) == [None, None, "d", None]
    # anchors no forward walk satisfies (d then b) are ignored
    assert align_chain(abcd, ["d", "b", None, None]) == [None, None, "c", None]
    # the last track is not the association's last (its final 'to' not compiled)
    assert align_chain(abcd, [None] * 3, final_observed=False) == ["b", "c", "c"]
    # a fixture the scene does not know gives no default
    assert align_chain(abcd, [None] * 3, fixture_ids={"c", "d"}) == [None, "c", None]


def test_chain_defaults_are_realigned_over_the_compiled_tracks():
    # The scrubbing brush of P07-20240531-101357 (itinerary 482: sink -> windowsill ->
    # sink -> counter -> sink -> counter, 14 tracks): the one-hand model compiles only
    # tracks 3 and 14. Aligned over all 14 tracks, track 3 would make move 3 (-> counter)
    # and the moves on the dropped tracks would vanish, leaving the final observed
    # 'to counter' a no-op. Over the compiled tracks, track 3 ends at the last move's
    # 'from' (the sink), where the final move observes the brush before it.
    from analysis.compiler.compiled_tracks import realign_chains
    from analysis.compiler.readers import Association, Track
    from analysis.compiler.answer_links import chain_defaults
    from analysis.compiler.worlds import TrackInfo
    moves = (("sink", "windowsill"), ("windowsill", "sink"), ("sink", "counter"),
             ("counter", "sink"), ("sink", "counter"))
    a = Association("v", "b7", "brush", "brush", tuple(Track(f"t{i}", 10.0 * i, 10.0 * i + 2)
                                                        for i in range(1, 15)))
    everyone = chain_defaults(moves, [t.track_id for t in a.tracks])
    assert everyone["t3"] == "counter"
    infos = {t.track_id: TrackInfo("brush", a, t.track_id, t.start, t.end, chain_moves=moves,
                                   chain_dst=everyone.get(t.track_id)) for t in a.tracks}
    infos["t14"].dst = "counter"
    realign_chains([infos["t3"], infos["t14"]], {}, None)
    assert (infos["t3"].chain_dst, infos["t14"].chain_dst) == ("sink", None)
    # an observed destination of the compiled track (its own put answer, or the next
    # track's take answer) anchors it; the track after it goes on along the chain
    for t in infos.values():
        t.chain_dst = None
    nxt = {"t2": ("windowsill", "q1", 30.0, "f", "VQA", {}, infos["t3"])}
    realign_chains([infos["t2"], infos["t3"], infos["t14"]], nxt, None)
    assert [infos[k].chain_dst for k in ("t2", "t3", "t14")] == [None, "sink", None]
    # an association whose counts agree has no chain_moves: nothing is realigned
    infos["t5"].chain_moves, infos["t5"].chain_dst = (), None
    realign_chains([infos["t5"]], {}, None)
    assert infos["t5"].chain_dst is None


def test_instruction_states_observed_destinations_only():
    from analysis.compiler.groups import Segment, instruction_of
    from analysis.compiler.op_builder import Op
    seg = Segment("track", "track:x", None, [], "v", 1.0, 2.0, "Washing up: handle and put away items")
    obs, cur = {"source": "observed", "refs": {}}, {"source": "curated", "refs": {"rule": "r"}}
    op = lambda typ, args, provs: Op(1.0, {"type": typ, "args": args}, {"source": "x", "refs": {"args": provs}})
    ops = [op("take_from_storage", ["mug_2", "cupboard"], [obs, obs]),
           op("put_in_appliance", ["mug_2", "dishwasher"], [obs, obs]),      # VQA destination
           op("put_on", ["spoon", "counter"], [obs, cur])]                   # curated: not stated
    assert instruction_of(seg, ops) == ("Washing up: handle and put away items. "
                                        "Put the mug 2 in the dishwasher.")
    assert instruction_of(seg, ops[2:]) == "Washing up: handle and put away items"


# ------------------------------------------------------------ identity across the videos of one episode
def _two_video_world(second_names):
    """Episode "v1" + "v2" (v2 starts at 100 s of episode time); v1 has one "frying pan"
    tracked 10-12 s, put on the hob (VQA put answer at its start); v2 has ``second_names``,
    each tracked 5-7 s of v2, and "bowl" has one association in v1 (tracked 20-22 s)."""
    from analysis.compiler.readers import Association, ClassTable, LocationAnswer, Track
    from analysis.compiler.worlds import build_world
    vocab = Vocabulary.load()
    fixtures = [{"id": "counter", "type": "counter"}, {"id": "hob", "type": "hob"},
                {"id": "cupboard", "type": "cupboard"}]
    v1 = [Association("v1", "a1", "frying pan", "frying pan", (Track("t1", 10.0, 12.0),)),
          Association("v1", "a2", "bowl", "bowl", (Track("t2", 20.0, 22.0),))]
    v2 = [Association("v2", f"b{i}", n, n, (Track(f"u{i}", 5.0 + 3 * i, 7.0 + 3 * i),))
          for i, n in enumerate(second_names)]
    answers = [LocationAnswer("q1", "v1", "put", 10.0, "hob")]
    world = build_world("v1", "P01", ["v1", "v2"], fixtures, "counter", {"v1": v1, "v2": v2}, answers, [],
                        {}, ClassTable({}, {}, {}), vocab, offsets={"v1": 0.0, "v2": 100.0})
    return world, vocab


def test_the_only_frying_pan_of_two_videos_is_one_entity_picked_up_where_it_was_put():
    from analysis.compiler.grounding import ground
    from analysis.compiler.operations import build_operations
    world, vocab = _two_video_world(["Frying  pan"])
    assert sorted(e for e in world.objects if "pan" in e) == ["frying_pan"]
    assert [(t.entity, t.assoc.video, t.same_as) for t in world.tracks if "pan" in t.entity] == [
        ("frying_pan", "v1", None), ("frying_pan", "v2", "v1/a1")]
    assert [a for a in world.facts if a[:2] == ("at", "frying_pan")] == [("at", "frying_pan", "cupboard")]
    assert world.identities == {"v2/b0": {"rule": "same_name_across_videos_of_the_episode",
                                          "same_as": "v1/a1", "entity": "frying_pan", "name": "frying pan"}}
    b = build_operations(world, ground(world, {}, vocab), Sim(vocab))
    ops = [(o.action["type"], o.action["args"], o.time) for o in b.out.ops
           if o.action["args"] and o.action["args"][0] == "frying_pan"]
    # v1: out of the cupboard (curated default), onto the hob (observed); v2 (105-107 s):
    # picked up from the hob where v1 left it, never out of the cupboard again
    assert [x[:2] for x in ops] == [("take_from_storage", ["frying_pan", "cupboard"]),
                                    ("place_on_appliance", ["frying_pan", "hob"]),
                                    ("pick_up_from_appliance", ["frying_pan", "hob"]),
                                    ("put_on", ["frying_pan", "counter"])]
    later = [o for o in b.out.ops if o.action["type"] == "pick_up_from_appliance"][0]
    arg = later.provenance["refs"]["args"][0]
    # the track is observed, the identity is curated: the argument (and the operation) is curated
    assert arg["source"] == "curated" and later.provenance["source"] == "curated"
    assert (arg["refs"]["rule"], arg["refs"]["same_as"], arg["refs"]["id"], arg["refs"]["track_source"]) == (
        "same_name_across_videos_of_the_episode", "v1/a1", "v2/b0/u0", "observed")
    first = [o for o in b.out.ops if o.action["type"] == "place_on_appliance"][0]
    assert first.provenance["source"] == "observed"


def test_a_merged_objects_later_video_track_witnesses_no_condition():
    # Draw 22 (session 11 let such tracks witness conditions, never as c1): video 124504's
    # "bowl", merged by name with 121042's "bowl" (the dates' bowl), gave the step
    # "mix well" an event stir(spatula, bowl), while the mixture was in the large plastic
    # bowl: a wrong merge makes a condition name the wrong object. An argument curated
    # only for its identity therefore witnesses no condition, state or event.
    from types import SimpleNamespace as NS
    from analysis.compiler.evidence import _atom_keep, _event_keep
    track = {"file": "assoc_info.json", "id": "v2/a1/t1", "time": 12.8}
    merged = {"source": "curated", "refs": {**track, "rule": "same_name_across_videos_of_the_episode",
                                            "same_as": "v1/a0", "track_source": "observed"}}
    vqa = {"source": "observed", "refs": {"file": "3d_perception_object_location.json", "id": "q186"}}
    put = NS(action={"type": "put_on", "args": ["bowl", "counter"]}, provenance={"refs": {"args": [merged, vqa]}})
    assert _atom_keep(put, ("at", "bowl", "counter")) is None
    put.provenance["refs"]["args"] = [{"source": "observed", "refs": track}, vqa]
    assert _atom_keep(put, ("at", "bowl", "counter")) == [0, 1]
    spatula = {"source": "observed", "refs": {"file": "assoc_info.json", "id": "v2/a2/t2"}}
    stir = NS(action={"type": "stir", "args": ["spatula", "bowl", "counter"]},
              provenance={"refs": {"args": [spatula, merged, {"source": "curated", "refs": {"rule": "r"}}]}})
    assert _event_keep(stir, NS(fixture_ids={"counter"})) is None
    stir.provenance["refs"]["args"][1] = {"source": "observed", "refs": track}
    assert _event_keep(stir, NS(fixture_ids={"counter"})) == [2]
    # the card shows a merged argument's track and flags the identity
    from analysis.report.grounding import _fmt_ref
    assert _fmt_ref(merged) == ("observed row: assoc_info.json v2/a1/t1 @ 12.8 s; **CURATED** identity: "
                                "the same object as v1/a0 (rule `same_name_across_videos_of_the_episode`)")


def test_two_bowls_in_the_later_video_give_no_identity_and_say_why():
    world, _ = _two_video_world(["bowl", "bowl", "frying pan"])
    assert sorted(e for e in world.objects if "bowl" in e) == ["bowl", "bowl_2", "bowl_3"]
    assert set(world.identities) == {"v2/b2"}          # the frying pan still binds
    why = [d for d in world.dropped if d["kind"] == "source" and "no identity" in d["reason"]]
    assert [d["what"] for d in why] == ["association b0 (bowl) of v2", "association b1 (bowl) of v2"]
    assert why[0]["reason"] == ("unique binding: no identity (same_name_across_videos_of_the_episode) with the association "
                                "named 'bowl' of v1: 2 associations named 'bowl' in v2; a new entity")
    # exact names only: "pan" is not "frying pan", "bowl2" is not "bowl"
    world, _ = _two_video_world(["pan", "bowl2"])
    assert world.identities == {} and {"pan", "bowl2"} <= set(world.objects)


def test_a_frame_late_answer_written_with_three_decimals_still_binds():
    # question times have 3 decimals, track times 5: one frame (1/30 s) plus the rounding
    # of the question's time (0.0005 s) is still the same track boundary
    from analysis.compiler.readers import LocationAnswer
    from analysis.compiler.answer_links import _link_answers
    fx = frozenset({"sink"})
    late = [LocationAnswer("q1", "v", "put", 50.0337, "sink")]           # spoon t4 starts at 50.0
    per_track, _, dropped, _, _ = _link_answers("v", _assocs(), late, [], fx)
    assert per_track[("a3", "t4")]["dst"][0] == "sink" and dropped == []
    # issue 34: a single candidate up to two frames (plus the rounding) away binds too
    later = [LocationAnswer("q2", "v", "put", 50.036, "sink")]
    per_track, _, dropped, _, _ = _link_answers("v", _assocs(), later, [], fx)
    assert per_track[("a3", "t4")]["dst"][0] == "sink" and dropped == []
    too_late = [LocationAnswer("q3", "v", "put", 50.068, "sink")]
    per_track, _, dropped, _, _ = _link_answers("v", _assocs(), too_late, [], fx)
    assert per_track == {} and "no track starts/ends at the question's time" in dropped[0]["reason"]


def test_an_itinerary_final_move_that_may_precede_the_unit_is_never_c1():
    # an itinerary of 1 move over 3 tracks: any of the 3 may have made the move, so a put-down
    # of the last track says where the object ends, not that the unit moved it there
    from types import SimpleNamespace as NS
    from analysis.compiler.evidence import _move_may_precede
    world = NS(offsets={"v": 100.0})
    op = lambda start: NS(provenance={"refs": {"args": [{}, {"refs": {
        "video": "v", "final_move_possible_from": start}}]}})
    assert _move_may_precede(world, op(10.0), since=120.0)         # 110 s in the episode < 120
    assert not _move_may_precede(world, op(25.0), since=120.0)     # the window starts in the unit
    assert not _move_may_precede(world, NS(provenance={"refs": {"args": [{}, {"refs": {}}]}}), 120.0)


def test_an_object_handled_in_a_track_not_compiled_is_not_fetched_from_storage():
    # the stirrer's first track (103-132 s, held inside another track) is not compiled, its
    # second is: it starts on the work counter, not in its default drawer; the spoon's first
    # track is compiled (it stays in the drawer), the cup's default is observed (unchanged)
    from types import SimpleNamespace as NS
    from analysis.compiler.compiled_tracks import OUT_RULE, out_after_uncompiled_first_track
    tr = lambda ent, tid: NS(entity=ent, track_id=tid, conflict=None)
    tracks = [tr("stirrer", "s1"), tr("spoon", "p1"), tr("cup", "c1"), tr("stirrer", "s2"), tr("cup", "c2")]
    cur = lambda r: {"source": "curated", "refs": {"rule": r}}
    world = NS(tracks=tracks, work_counter="counter", facts={
        ("at", "stirrer", "drawer"): cur("default_locations:utensil"),
        ("at", "spoon", "drawer"): cur("default_locations:utensil"),
        ("at", "cup", "cupboard"): {"source": "observed", "refs": {"file": "vqa"}}})
    chosen = [tracks[1], tracks[3], tracks[4]]
    assert out_after_uncompiled_first_track(world, chosen) == ["stirrer"]
    assert world.facts[("at", "stirrer", "counter")] == cur(f"{OUT_RULE}:s1")
    assert ("at", "stirrer", "drawer") not in world.facts
    assert ("at", "spoon", "drawer") in world.facts and ("at", "cup", "cupboard") in world.facts


def test_a_placement_is_no_end_state_when_a_later_video_may_move_it_under_another_name():
    # the bowl put on the counter at 428 s of video v1; the unit goes on in v2 (episode
    # time 1000 s on), where a "porridge bowl" (same type, not identified with the bowl:
    # the names differ) is handled: the placement may be an intermediate state
    from types import SimpleNamespace as NS
    from analysis.compiler.evidence import _may_move_renamed

    def track(video, assoc, entity, start):
        return NS(assoc=NS(video=video, assoc_id=assoc), entity=entity, start=start)
    world = NS(videos=["v1", "v2"], offsets={"v1": 0.0, "v2": 1000.0},
               objects={"bowl": "bowl", "porridge_bowl": "bowl", "spoon": "spoon"},
               identities={}, tracks=[track("v1", "a1", "bowl", 425.0),
                                      track("v2", "a7", "porridge_bowl", 1005.0)])
    put = NS(time=428.3)
    atom = ("at", "bowl", "counter_left_of_table")
    assert _may_move_renamed(world, atom, put, until=1011.0)
    # the unit ends before the later track: nothing moves the bowl within it
    assert not _may_move_renamed(world, atom, put, until=1004.0)
    # an association identified with an earlier one (same name) is that object, judged
    # by its own tracks; another type is another object; the same video names its own
    world.identities = {"v2/a7": {"rule": "same_name_across_videos_of_the_episode"}}
    assert not _may_move_renamed(world, atom, put, until=1011.0)
    world.identities, world.objects["porridge_bowl"] = {}, "spoon"
    assert not _may_move_renamed(world, atom, put, until=1011.0)
    world.objects["porridge_bowl"] = "bowl"
    world.tracks[1] = track("v1", "a7", "porridge_bowl", 600.0)
    assert not _may_move_renamed(world, atom, put, until=1011.0)


# ------------------------------------------------------------ session 7: audit-11 patterns
def _tray_world(extra_answers=(), names=("tray", "cup"), first=(12.0, 14.0)):
    """One video: a "tray" tracked 10-20 s, a "cup" tracked 12-14 s (``first``: inside the
    tray's track, the one-hand model drops it) and 30-32 s; VQA 1 says the cup's first
    track took it from the dishwasher (take answer at its end)."""
    from analysis.compiler.readers import Association, ClassTable, LocationAnswer, Track
    from analysis.compiler.worlds import build_world
    vocab = Vocabulary.load()
    fixtures = [{"id": "counter", "type": "counter"}, {"id": "dishwasher", "type": "dishwasher"},
                {"id": "cupboard", "type": "cupboard"}, {"id": "table", "type": "table"}]
    tray = Association("v", "a1", names[0], names[0], (Track("t1", 10.0, 20.0),))
    cup = Association("v", "a2", names[1], names[1], (Track("c1", *first), Track("c2", 30.0, 32.0)))
    answers = [LocationAnswer("q1", "v", "take", first[1], "dishwasher"), *extra_answers]
    world = build_world("v", "P01", ["v"], fixtures, "counter", {"v": [tray, cup]}, answers, [], {},
                        ClassTable({}, {}, {}), vocab, offsets={"v": 0.0})
    return world, vocab


def test_an_observed_place_from_before_a_track_not_compiled_is_curated_at_the_next_pick():
    from analysis.compiler.grounding import ground
    from analysis.compiler.operations import build_operations
    world, vocab = _tray_world()
    assert world.facts[("at", "cup", "dishwasher")]["source"] == "observed"    # where it started
    b = build_operations(world, ground(world, {}, vocab), Sim(vocab))
    picks = [o for o in b.out.ops if o.action["args"][:1] == ["cup"] and o.action["type"].startswith("take")]
    # the 12-14 s track (not compiled) handled the cup: at 30 s the dishwasher is a default
    assert [(o.action["type"], o.action["args"], o.time) for o in picks] == [
        ("take_from_appliance", ["cup", "dishwasher"], 30.0)]
    arg = picks[0].provenance["refs"]["args"][1]
    assert arg["source"] == "curated" and picks[0].provenance["source"] == "curated"
    assert (arg["refs"]["rule"], arg["refs"]["track"], arg["refs"]["track_span"]) == (
        "place_after_a_track_not_compiled", "c1", [12.0, 14.0])
    assert arg["refs"]["last_observed"]["id"] == "q1"


def test_questions_at_one_moment_that_all_give_one_answer_bind_every_track_then():
    # the tray and the cup are put down at 20 s and 32 s; two put questions at 30 s would
    # be ambiguous if another track started then: a second object tracked 30-31 s
    from analysis.compiler.readers import Association, LocationAnswer, Track
    from analysis.compiler.answer_links import _link_answers
    fx = frozenset({"table", "counter", "dishwasher"})
    a = Association("v", "a1", "green cup", "green cup", (Track("t1", 30.0, 35.0),))
    b = Association("v", "a2", "green cup", "green cup", (Track("t2", 30.0, 36.0),))
    same = [LocationAnswer("q1", "v", "put", 30.0, "table"), LocationAnswer("q2", "v", "put", 30.0, "table")]
    per_track, _, dropped, _, _ = _link_answers("v", [a, b], same, [], fx)
    assert {k: v["dst"][0] for k, v in per_track.items()} == {("a1", "t1"): "table", ("a2", "t2"): "table"}
    assert dropped == []
    differ = [same[0], LocationAnswer("q2", "v", "put", 30.0, "counter")]
    per_track, _, dropped, _, _ = _link_answers("v", [a, b], differ, [], fx)
    assert per_track == {} and len(dropped) == 2
    assert all("2 objects' tracks start/end within" in d["reason"] for d in dropped)
    one = [same[0]]               # one question for two tracks: which one is it about?
    per_track, _, dropped, _, _ = _link_answers("v", [a, b], one, [], fx)
    assert per_track == {} and len(dropped) == 1


def test_dishes_first_handled_in_an_unload_row_start_in_the_dishwasher():
    from analysis.compiler.readers import Activity
    from analysis.compiler.out_of_storage import UNLOAD_RULE, unload_sources
    world, vocab = _tray_world(names=("tray", "plate"))
    world.facts = {a: p for a, p in world.facts.items() if a[:2] != ("at", "plate")}
    world.facts[("at", "plate", "cupboard")] = {"source": "curated", "refs": {"rule": "default_locations:vessel"}}
    row = Activity("v", (), "Unload dishwasher and put clean crockery away", 5.0, 50.0, False, "P01.csv:7")
    before = dict(world.facts)
    assert unload_sources(world, [Activity("v", (), "Make coffee", 5.0, 50.0, False, "P01.csv:6")], vocab) == []
    assert world.facts == before
    # the plate and the tray (a vessel too) have curated cupboard defaults and first tracks
    # in the row: both start in the dishwasher; an observed first place is never changed
    world.facts[("at", "tray", "cupboard")] = {"source": "observed", "refs": {"file": "vqa"}}
    changed = unload_sources(world, [row], vocab)
    assert changed == ["plate"]
    assert world.facts[("at", "tray", "cupboard")]["source"] == "observed"
    assert world.facts[("at", "plate", "dishwasher")] == {"source": "curated",
                                                          "refs": {"rule": f"{UNLOAD_RULE}:P01.csv:7"}}
    assert ("at", "plate", "cupboard") not in world.facts


def test_what_a_tidy_up_row_first_handles_and_spent_objects_start_out_of_storage():
    # draw 23: the reference took a used tea bag and the dirty plates out of a cupboard to
    # clear the table. A curated storage default of a container, food or cutlery first
    # handled in a row that only tidies up, or of an object whose name says it is spent,
    # becomes the work counter (citing the row); an observed first place never changes
    from analysis.compiler.readers import Activity
    from analysis.compiler.out_of_storage import CUT_RULE, SPENT_RULE, TIDY_RULE, out_of_storage_sources
    def fresh(names):
        world, vocab = _tray_world(names=names)
        for ent in world.names:                 # "used tea bag" is the entity tea_bag
            world.facts = {a: p for a, p in world.facts.items() if a[:2] != ("at", ent)}
            world.facts[("at", ent, "cupboard")] = {"source": "curated",
                                                    "refs": {"rule": "default_locations:vessel"}}
        return world, vocab
    tidy = Activity("v", (), "Put stuff away and load dishwasher", 5.0, 50.0, False, "P03.csv:317")
    for label in ("Make coffee", "Clear the table, get jam from the fridge", "Unload dishwasher"):
        world, vocab = fresh(("tray", "plate"))
        before = dict(world.facts)
        assert out_of_storage_sources(world, [Activity("v", (), label, 5.0, 50.0, False, "P.csv:2")],
                                      vocab) == [], label
        assert world.facts == before
    world, vocab = fresh(("tray", "plate"))
    world.facts[("at", "tray", "cupboard")] = {"source": "observed", "refs": {"file": "vqa"}}
    assert out_of_storage_sources(world, [tidy], vocab) == ["plate"]
    assert world.facts[("at", "tray", "cupboard")]["source"] == "observed"
    assert world.facts[("at", "plate", "counter")] == {"source": "curated",
                                                       "refs": {"rule": f"{TIDY_RULE}:P03.csv:317"}}
    assert ("at", "plate", "cupboard") not in world.facts
    # a row starting after an object's first track (the tray's, 10 s) does not decide it
    world, vocab = fresh(("tray", "plate"))
    late = Activity("v", (), "Tidy up", 11.0, 50.0, False, "P03.csv:9")
    assert out_of_storage_sources(world, [late], vocab) == ["plate"]
    # a sponge the row fetches to clean with stays in its cupboard; a used one does not
    world, vocab = fresh(("sponge", "used tea bag"))
    assert out_of_storage_sources(world, [tidy], vocab) == ["tea_bag"]
    assert world.facts[("at", "tea_bag", "counter")]["refs"]["rule"] == SPENT_RULE
    world, vocab = fresh(("sponge", "used tea bag"))
    assert out_of_storage_sources(world, [], vocab) == ["tea_bag"]     # in any row
    # draw 24: a cut piece of food is made on a work surface; unpacking and starting the
    # dishwasher fetch nothing from storage
    world, vocab = fresh(("tray", "piece of tomato"))
    world.objects["tomato"] = "vegetable"          # HD-EPIC's noun class (none in this fixture)
    assert out_of_storage_sources(world, [], vocab) == ["tomato"]
    assert world.facts[("at", "tomato", "counter")]["refs"]["rule"] == CUT_RULE
    for label in ("Unpack the groceries", "Clean and clear, including loading and starting the dishwasher"):
        world, vocab = fresh(("tray", "plate"))
        assert out_of_storage_sources(world, [Activity("v", (), label, 5.0, 50.0, False, "P.csv:3")],
                                      vocab) == ["plate", "tray"], label


def test_an_association_named_for_a_fixture_is_that_fixture_not_a_second_object():
    world, _ = _tray_world(names=("dishwasher", "cup"))
    assert "dishwasher_2" not in world.objects and world.objects["dishwasher"] == "dishwasher"
    assert [d["reason"] for d in world.dropped if d["what"] == "track t1 (dishwasher)"] == [
        "the association names the scene's fixture dishwasher (one object; fixtures do not move in the "
        "world): not a new object"]


# ------------------------------------------------------------ session 7: audit-12 patterns
def test_an_object_moved_in_a_track_not_compiled_is_caught_up_to_where_the_rows_put_it():
    # the builder compiles only the cup's second track (c2, 30-32 s), not its first (c1,
    # 12-14 s); c2's own take answer (VQA q2 at its end) says it was taken from the table:
    # before c2's pick-up the cup is moved from the dishwasher (where q1 left it before
    # c1) to the table by curated operations naming c1, and the pick-up cites q2, observed
    from analysis.compiler.op_builder import OpBuilder
    from analysis.compiler.readers import LocationAnswer

    def pick_c2(conflict=None, extra=()):
        world, vocab = _tray_world(extra_answers=[LocationAnswer("q2", "v", "take", 32.0, "table"), *extra])
        c1, c2 = (next(t for t in world.tracks if t.track_id == k) for k in ("c1", "c2"))
        c1.conflict = conflict
        b = OpBuilder(world, Sim(vocab))
        b.compiled, b.now = {"t1", "c2"}, 30.0
        assert b.pick(c2, 30.0)
        return [(o.action["type"], o.action["args"], o.provenance) for o in b.out.ops
                if o.action["type"] != "navigate" and not o.action["type"].startswith(("open", "close"))]

    ops = pick_c2()
    assert [(t, a, p["source"]) for t, a, p in ops] == [
        ("take_from_appliance", ["cup", "dishwasher"], "curated"), ("put_on", ["cup", "table"], "curated"),
        ("pick_up", ["cup", "table"], "observed")]
    assert {p["refs"]["rule"] for _, _, p in ops[:2]} == {"moved_in_a_track_not_compiled:c1"}
    assert ops[2][2]["refs"]["args"][1]["refs"]["id"] == "q2"
    # c1 dropped because its observed sources disagree (q3 puts the cup on the counter,
    # q2 takes it from the table): where it left the cup is contested, no row decides it
    # (row_audit.uncontested), and a conflict compiles neither side: no catch-up, the
    # pick-up's place is curated
    q3 = LocationAnswer("q3", "v", "put", 12.0, "counter")
    ops = pick_c2(conflict="q3: counter; q2: table", extra=[q3])
    assert [(t, a, p["source"]) for t, a, p in ops] == [("take_from_appliance", ["cup", "dishwasher"], "curated")]
    assert ops[0][2]["refs"]["args"][1]["refs"]["rule"] == "place_after_a_track_not_compiled"
    # a track dropped for a conflict that no row of the gap before c2 shares: q2 alone
    # decides that gap, and the curated fallback yields to it (issue 34): caught up to the
    # table, curated, citing the row
    ops = pick_c2(conflict="q4: counter; itinerary 9: sink")
    assert [(t, a) for t, a, _ in ops] == [("take_from_appliance", ["cup", "dishwasher"]),
                                          ("put_on", ["cup", "table"]), ("pick_up", ["cup", "table"])]
    assert ops[2][2]["refs"]["args"][1]["refs"]["rule"] == (
        "place_of_cup:place_decided_by_a_row_the_compiler_set_aside:3d_perception_object_location.json q2")


def test_a_pick_up_after_a_track_dropped_for_a_conflict_is_disputed_when_its_place_is_a_side():
    # the cup's first track (c1, 12-14 s) is dropped because rows disagree on where it left
    # the cup: q3 says the dishwasher, q4 the counter. Its second track's pick-up (30 s)
    # takes it from the dishwasher (q1's, from before c1): one side of that conflict, so the
    # curated place names the rows (P02-20240211-104948's itinerary 438); a conflict between
    # two other places leaves it undisputed
    from analysis.compiler.op_builder import OpBuilder

    def pick_c2(conflict):
        world, vocab = _tray_world()
        c1, c2 = (next(t for t in world.tracks if t.track_id == k) for k in ("c1", "c2"))
        c1.conflict = conflict
        b = OpBuilder(world, Sim(vocab))
        b.compiled, b.now = {"t1", "c2"}, 30.0
        assert b.pick(c2, 30.0)
        return [o.provenance["refs"]["args"][1]["refs"] for o in b.out.ops if o.action["type"] == "take_from_appliance"]

    refs = pick_c2("f q3: dishwasher; f q4: counter")
    assert [(r["rule"], r["disputed"]) for r in refs] == [
        ("place_after_a_track_not_compiled", "f q3: dishwasher; f q4: counter")]
    refs = pick_c2("f q3: table; f q4: counter")
    assert [(r["rule"], "disputed" in r) for r in refs] == [("place_after_a_track_not_compiled", False)]


def test_a_food_cut_after_its_placement_leaves_no_end_state():
    # the third orange is put down at 2 s and its halves are tracked from 5 s: within a unit
    # ending at 10 s the whole orange's placement is intermediate; a unit ending at 4 s keeps it
    from types import SimpleNamespace as NS
    from analysis.compiler.evidence import _cut_later
    vocab = Vocabulary.load()
    half = NS(start=5.0, assoc=NS(name="Left half of third  orange"))
    world = NS(names={"orange_3": ["third orange"], "paper": ["baking paper"]},
               objects={"orange_3": "fruit", "paper": "other_supply"},
               tracks=[half, NS(start=6.0, assoc=NS(name="piece of baking paper"))])
    op = NS(time=2.0)
    assert _cut_later(world, ("at", "orange_3", "counter"), op, 10.0, vocab)
    assert not _cut_later(world, ("at", "orange_3", "counter"), op, 4.0, vocab)
    # a piece cut off a roll of paper leaves the roll where it is; another orange's half is not this one's
    assert not _cut_later(world, ("at", "paper", "counter"), op, 10.0, vocab)
    world.tracks = [NS(start=5.0, assoc=NS(name="left half of second orange"))]
    assert not _cut_later(world, ("at", "orange_3", "counter"), op, 10.0, vocab)


def test_admission_refuses_a_task_with_any_condition_true_at_its_start():
    # c1 (the put-down on the table) is FALSE at the task's start, c2 (the bottle on the
    # counter) already holds there: the whole contract fails at the start, yet a planner
    # doing nothing would meet c2, so admission refuses it per condition
    from analysis.compiler.admission import admit, true_at_start
    objects = {"cup": "mug", "bottle": "bottle", "counter": "counter", "table": "table"}
    s0 = frozenset({("at", "cup", "counter"), ("at", "bottle", "counter")})
    s1 = frozenset({("at", "cup", "table"), ("at", "bottle", "counter")})
    states, events = {-1: s0, 0: s0, 1: s1}, {0: [], 1: []}
    conds = [{"id": "c1", "kind": "atom", "atom": ["at", "cup", "table"]},
             {"id": "c2", "kind": "atom", "atom": ["at", "bottle", "counter"]}]
    task = {"tier": "terminal", "first": 1, "last": 1, "conditions": conds}
    assert true_at_start(task, states, objects) == ["c2"]
    ok, reason, detail = admit(task, states, events, objects)
    assert (ok, reason) == (False, "condition_true_at_start")
    assert detail.startswith("c2 already TRUE")
    assert admit({**task, "conditions": conds[:1]}, states, events, objects) == (True, "", "")
    # c2 FALSE at the task's start but TRUE in the initial world (an earlier group moved the
    # bottle away, this task puts it back): a planner that never moved it meets c2 for free
    s_mid = frozenset({("at", "cup", "counter"), ("at", "bottle", "table")})
    moved = {-1: s0, 0: s_mid, 1: s1}
    assert true_at_start(task, moved, objects) == []
    ok, reason, detail = admit(task, moved, events, objects)
    assert (ok, reason) == (False, "initial_passes") and detail.startswith("c2 TRUE in the initial world")
    # an event condition never holds at a start (no accepted event yet)
    ev = {"id": "c1", "kind": "event", "event": {"type": "stir", "args": [None, None, None]}}
    assert true_at_start({**task, "tier": "event", "conditions": [ev]}, states, objects) == []


def test_an_add_whose_in_is_no_condition_of_its_step_task_is_listed_with_the_reason():
    # issue 34: every add of a step unit is an in() of its task or in dropped.jsonl
    from types import SimpleNamespace as NS
    from analysis.compiler.grounding import add_drop_class
    from analysis.compiler.tasks import _adds_left_out

    def add(args, sources, t):
        return NS(action={"type": "add_ingredient", "args": args}, time=t,
                  planned=NS(kind="add", what=f"add {args[0]}", refs={"recipe": "R", "ingredient": args[0],
                                                                      "start": t, "step": None}),
                  provenance={"refs": {"args": [{"source": s, "refs": {"rule": r} if r else {}}
                                                for s, r in sources]}})
    obs = ("observed", None)
    kept = add(["onion", "pan", "hob"], [obs, obs, ("curated", "x")], 1.0)
    merged = add(["garlic", "pan", "hob"], [obs, ("curated", "same_name_across_videos_of_the_episode"),
                                            ("curated", "x")], 2.0)
    again = add(["salt", "pan", "hob"], [obs, obs, obs], 3.0)        # salt was in the pan already
    moved = add(["egg", "bowl", "hob"], [obs, obs, obs], 4.0)        # the egg moves on in the unit
    not_an_add = NS(action={"type": "stir", "args": ["spoon", "pan", "hob"]}, time=5.0,
                    planned=NS(kind="step", what="stir", refs={}), provenance={"refs": {"args": []}})
    end = {("in", "onion", "pan"), ("in", "garlic", "pan"), ("in", "salt", "pan")}
    by = {("in", "onion", "pan"): kept, ("in", "garlic", "pan"): merged}
    atoms = [(0, 0, ("in", "onion", "pan"), [0, 1])]
    out = _adds_left_out([kept, merged, again, moved, not_an_add], by, end, {("in", "salt", "pan")},
                         frozenset(), atoms, "e/g0001")
    assert [(d["kind"], d["refs"]["atom"], d["refs"]["group_id"]) for d in out] == [
        ("add", ["in", "garlic", "pan"], "e/g0001"), ("add", ["in", "salt", "pan"], "e/g0001"),
        ("add", ["in", "egg", "bowl"], "e/g0001")]
    assert [d["reason"] for d in out] == [
        "not a condition of its unit's task: in(garlic, pan): an argument is not observed: pan "
        "(same_name_across_videos_of_the_episode)",
        "not a condition of its unit's task: in(salt, pan): true_at_task_start: it already holds when the "
        "unit's task starts (no free credit)",
        "not a condition of its unit's task: in(egg, bowl): the unit changes it again before its end (the "
        "content moved on)"]
    assert {add_drop_class(d["reason"]) for d in out} == {"not_a_condition"}


def test_an_itinerary_final_move_the_rows_place_inside_the_unit_counts():
    # the wooden spoon of P03-20240218-190556 (itinerary_51: drawer right of oven -> counter
    # left of hob -> counter top left of dishwasher, 2 moves over 7 tracks; row 328 starts at
    # 2623.0 s): the take answer 389 says track 5 (2623.7-2702.9 s) took it from the counter
    # left of the hob, so the final move is made by track 5, 6 or 7, all ending in the row;
    # the dishwasher counter is no move's 'from', so the spoon is not there at the row's start
    from types import SimpleNamespace as NS
    from analysis.compiler.evidence import _move_may_precede
    spans = [(1113.4, 1132.3), (1480.3, 1487.1), (1998.1, 2010.9), (2133.1, 2149.2), (2623.7, 2702.9),
             (2707.8, 2748.4), (2752.7, 2789.9)]
    tracks = [NS(track_id=f"t{k}", start=a, end=b, dst=None, src=None, assoc=NS(video="v", assoc_id="spoon"))
              for k, (a, b) in enumerate(spans)]
    answer = ("from drawer right of oven to counter left of hob, then from counter left of hob to counter top "
              "left of dishwasher")
    op = NS(action={"args": ["wooden_spoon", "counter_left_of_dishwasher"]}, provenance={"refs": {"args": [
        {"refs": {"file": "assoc_info.json", "id": "v/spoon/t6"}},
        {"refs": {"video": "v", "final_move_possible_from": 1480.3, "answer": answer}}]}})
    world = NS(offsets={"v": 0.0}, tracks=tracks)
    assert _move_may_precede(world, op, since=2623.0)       # without the take answer: track 2 may have
    tracks[4].src = "counter_left_of_hob"                   # take answer 389 (2702.9 s)
    assert not _move_may_precede(world, op, since=2623.0)
    tracks[4].src = "counter_left_of_dishwasher"            # taken from the final 'to': no narrowing
    assert _move_may_precede(world, op, since=2623.0)


# ------------------------------------------------------------ session 17: one disputed end
def _glass_world(extra_answers=()):
    """One video: a "glass" tracked 10-12 s. VQA q1 (take, at its end) says it was taken
    from the table; itinerary it1 (seen at 10 s, one move for its one track) says from the
    counter to the cupboard. The rows disagree on the track's origin only
    (P02-20240209-194141: VQA 11 and itinerary 427)."""
    from analysis.compiler.readers import Association, ClassTable, Itinerary, LocationAnswer, Track
    from analysis.compiler.worlds import build_world
    vocab = Vocabulary.load()
    fixtures = [{"id": "counter", "type": "counter"}, {"id": "table", "type": "table"},
                {"id": "cupboard", "type": "cupboard"}, {"id": "sink", "type": "sink"}]
    glass = Association("v", "a1", "glass", "glass", (Track("g1", 10.0, 12.0),))
    answers = [LocationAnswer("q1", "v", "take", 12.0, "table"), *extra_answers]
    itins = [Itinerary("it1", "v", 10.0, (("counter", "cupboard"),))]
    world = build_world("v", "P02", ["v"], fixtures, "counter", {"v": [glass]}, answers, itins, {},
                        ClassTable({}, {}, {}), vocab, offsets={"v": 0.0})
    return world, vocab


def test_rows_that_disagree_on_a_track_origin_leave_its_put_down_observed():
    from analysis.compiler.grounding import ground
    from analysis.compiler.operations import build_operations
    world, vocab = _glass_world()
    # the disputed origin is a conflict (listed), neither row gives it: the start is curated
    assert [(c["track"], c["side"]) for c in world.conflicts] == [("g1", "src")]
    (tr,) = world.tracks
    assert (tr.conflict, tr.src, tr.dst, tr.dst_ref) == (None, None, "cupboard", "it1")
    (start,) = [a for a in world.facts if a[:2] == ("at", "glass")]
    assert world.facts[start]["source"] == "curated"
    b = build_operations(world, ground(world, {}, vocab), Sim(vocab))
    glass = [o for o in b.out.ops if o.action["args"][:1] == ["glass"]]
    assert [(o.action["type"], o.action["args"][1], o.time) for o in glass][-1] == (
        "put_in_storage", "cupboard", 12.0)
    put = glass[-1].provenance["refs"]["args"][1]
    assert put["source"] == "observed" and put["refs"]["id"] == "it1"


def test_rows_that_disagree_on_both_ends_of_a_track_keep_it_out():
    from analysis.compiler.readers import LocationAnswer
    # a put answer at its start says the sink: the destination is disputed too
    world, _ = _glass_world([LocationAnswer("q2", "v", "put", 10.0, "sink")])
    assert sorted((c["track"], c["side"]) for c in world.conflicts) == [("g1", "dst"), ("g1", "src")]
    assert world.tracks[0].conflict is not None


def test_reopen_rows_are_openings_and_adds_on_episode_time():
    # <open bag> and <reach into bag> show a container open, <pry open package> too (the
    # longest verb first: its noun is "package"); a <close bag> or <tap spoon> does not.
    # Snippet times are video times (offset 100 s for video w); add rows already episode time
    from types import SimpleNamespace as NS
    from analysis.compiler.readers import Snippet
    from analysis.compiler.tasks import reopen_rows
    sn = lambda v, t, a: Snippet(f"q{t}", "fine_grained_how_recognition.json", v, t, t + 1, a, "", "")
    snippets = [sn("v", 1.0, "open bag"), sn("w", 2.0, "reach into spice bag"), sn("w", 3.0, "pry open package"),
                sn("v", 4.0, "close bag"), sn("v", 5.0, "tap spoon"), sn("x", 6.0, "open jar")]
    add = lambda v, a, b: NS(kind="add", span=NS(video=v, start=a, end=b))
    recipes = {"R": NS(captures=[NS(events=[add("w", 150.0, 155.0), NS(kind="weigh", span=NS(video="w", start=1, end=2)),
                                            add("x", 1.0, 2.0)])])}
    assert reopen_rows(snippets, recipes, {"v": 0.0, "w": 100.0}) == [
        ("open", 1.0, frozenset({"bag"})), ("open", 102.0, frozenset({"spice", "bag"})),
        ("open", 103.0, frozenset({"package"})), ("add", 150.0, 155.0)]

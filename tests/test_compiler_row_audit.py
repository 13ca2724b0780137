"""Issue 34 item 2: every compiled fact against every raw location row, and the binding
window (two frames; tracks of one object are one candidate). Synthetic sources, checked
by hand."""
from analysis.compiler.readers import TWO_FRAMES, Association, Itinerary, LocationAnswer, Track
from analysis.compiler.row_audit import audit_rows, decisions, row_audit_records, track_index
from analysis.compiler.answer_links import _link_answers

FX = frozenset({"sink", "counter", "table", "cupboard", "hob"})


def _mug():
    return Association("v", "a1", "mug", "mug", (Track("t1", 10.0, 12.0), Track("t2", 30.0, 31.0)))


def _op(typ, args, time, track=None, rule=None, fixture_prov=None):
    """A compiled operation record as ``groups.group_records`` writes it."""
    own = ({"source": "observed", "refs": {"file": "assoc_info.json", "id": f"v/a1/{track}", "time": time}}
           if track else {"source": "curated", "refs": {"rule": rule}})
    refs = {"time": time, "args": [own, fixture_prov or {"source": "curated", "refs": {"rule": "x"}}]}
    if rule:
        refs["rule"] = rule
    return {"type": typ, "args": args, "provenance": {"source": "observed", "refs": refs}}


# ------------------------------------------------------------------ binding window
def test_a_single_candidate_43_ms_away_binds_within_two_frames():
    # one frame at 30 fps is 33 ms: the mug's track starting 43 ms before the question was
    # refused under the one-frame rule; two frames (plus the 3-decimal rounding) bind it
    assert abs(TWO_FRAMES - (2 / 30 + 0.0005 + 1e-6)) < 1e-12
    ans = [LocationAnswer("q1", "v", "put", 10.043, "sink")]
    per_track, _, dropped, _, _ = _link_answers("v", [_mug()], ans, [], FX)
    assert per_track[("a1", "t1")]["dst"][0] == "sink" and dropped == []
    # 68 ms is more than two frames and the rounding: no candidate, dropped with the reason
    far = [LocationAnswer("q2", "v", "put", 10.068, "sink")]
    per_track, _, dropped, _, _ = _link_answers("v", [_mug()], far, [], FX)
    assert per_track == {} and "no track starts/ends at the question's time" in dropped[0]["reason"]
    # a second object's track 60 ms away (within two frames) makes the answer ambiguous
    pan = Association("v", "a2", "pan", "pan", (Track("t3", 10.1, 15.0),))
    per_track, _, dropped, _, _ = _link_answers("v", [_mug(), pan], ans, [], FX)
    assert per_track == {} and "2 objects' tracks start/end within two frames" in dropped[0]["reason"]


def test_two_tracks_of_one_object_are_one_candidate():
    # the mug's annotation has two tracks starting 20 ms apart (10.00 and 10.02 s): one
    # object, so the put answer binds its nearest track instead of being ambiguous
    mug = Association("v", "a1", "mug", "mug", (Track("t1", 10.0, 10.01), Track("t1b", 10.02, 12.0)))
    ans = [LocationAnswer("q1", "v", "put", 10.02, "sink")]
    per_track, _, dropped, _, _ = _link_answers("v", [mug], ans, [], FX)
    assert list(per_track) == [("a1", "t1b")] and dropped == []
    # the audit's own rule counts candidates the same way
    ds, rows = decisions("v", [mug], ans, [], FX, {("v", "a1"): "mug"}, 0.0, 100.0)
    assert dict(rows) == {"decided": 1} and [(d.gap, d.fixture) for d in ds] == [(2, "sink")]
    # two objects there are two candidates
    pan = Association("v", "a2", "pan", "pan", (Track("t3", 10.03, 15.0),))
    ds, rows = decisions("v", [mug, pan], ans, [], FX, {("v", "a1"): "mug", ("v", "a2"): "pan"}, 0.0, 100.0)
    assert ds == [] and dict(rows) == {"ambiguous": 1}


# ------------------------------------------------------------------ decisions
def test_rows_decide_the_gaps_between_an_objects_tracks():
    mug, ent = _mug(), {("v", "a1"): "mug"}
    rows_in = [LocationAnswer("q1", "v", "take", 12.0, "cupboard"),     # before t1: gap 0
               LocationAnswer("q2", "v", "put", 30.0, "table")]         # after t2: gap 2
    ds, rows = decisions("v", [mug], rows_in, [], FX, ent, 5.0, 105.0)  # video starts at 5 s
    assert [(d.qid, d.gap, d.fixture, d.g0, d.g1) for d in ds] == [
        ("q1", 0, "cupboard", 5.0, 15.0), ("q2", 2, "table", 36.0, 105.0)]
    # an itinerary with one move per track decides every gap; the object must be an entity
    it = Itinerary("i1", "v", 31.0, (("hob", "sink"), ("sink", "counter")))
    ds, rows = decisions("v", [mug], [], [it], FX, ent, 0.0, 100.0)
    assert [(d.gap, d.fixture) for d in ds] == [(0, "hob"), (1, "sink"), (1, "sink"), (2, "counter")]
    assert decisions("v", [mug], [], [it], FX, {}, 0.0, 100.0)[1] == {"not_an_entity": 1}
    # a phrase that is no fixture of the scene decides nothing
    odd = [LocationAnswer("q3", "v", "put", 10.0, "moon")]
    assert decisions("v", [mug], odd, [], FX, ent, 0.0, 100.0)[1] == {"fixture_not_in_scene": 1}


def _episode(put_to: str, initial: str = "cupboard", cond_fixture: str | None = None):
    """The mug taken from ``initial`` (track t1, 10-12 s), put on ``put_to``; a task whose
    condition is at(mug, cond_fixture) witnessed by that put-down."""
    groups = [{"group_id": "v/g0000", "operations": [
        _op("take_from_storage", ["mug", initial], 10.0, track="t1"),
        _op("put_on", ["mug", put_to], 12.0, track="t1")]}]
    facts = {("at", "mug", initial): {"source": "curated", "refs": {"rule": "default_locations:cup"}}}
    task = {"task_id": "v/t000", "last": 0, "conditions": [
        {"id": "c1", "kind": "atom", "atom": ["at", "mug", cond_fixture or put_to]}],
        "provenance": {"conditions": {"c1": {"refs": {"time": 12.0}}}}}
    return groups, facts, [task]


def test_the_audit_catches_a_contradicted_operation_fact_and_condition():
    mug, ent = _mug(), {("v", "a1"): "mug"}
    rows_in = [LocationAnswer("q1", "v", "take", 12.0, "cupboard"),
               LocationAnswer("q2", "v", "put", 10.0, "sink")]          # after t1: gap 1, 12-30 s
    ds, rows = decisions("v", [mug], rows_in, [], FX, ent, 0.0, 100.0)
    idx = track_index([mug])
    # the compiled world agrees: nothing contradicted, 2 operations + 1 fact + 1 condition checked
    groups, facts, tasks = _episode("sink")
    ok = audit_rows(ds, rows, facts, groups, tasks, {"mug": ("v", "a1")}, idx)
    assert [(c["kind"], c["passed"]) for c in ok.checks] == [
        ("operation", True), ("operation", True), ("initial_fact", True), ("condition", True)]
    # the put-down on the counter contradicts VQA q2 (the sink), and so does the condition
    groups, facts, tasks = _episode("counter")
    bad = audit_rows(ds, rows, facts, groups, tasks, {"mug": ("v", "a1")}, idx)
    assert [(c["kind"], c["id"]) for c in bad.contradictions] == [("operation", "v/g0000/o001"),
                                                                 ("condition", "v/t000")]
    assert "CONTRADICTED by 3d_perception_object_location.json q2 ('sink': sink)" in bad.contradictions[0]["detail"]
    # an initial place other than the take answer's is a contradicted world fact
    groups, facts, tasks = _episode("sink", initial="table")
    assert [c["kind"] for c in audit_rows(ds, rows, facts, groups, tasks, {"mug": ("v", "a1")}, idx).contradictions] == [
        "operation", "initial_fact"]
    # the compile refuses it, naming the fact and the row
    import pytest
    from analysis.compiler.row_audit import RowContradiction, refuse_contradictions
    refuse_contradictions({"v": ok})
    with pytest.raises(RowContradiction, match=r"2 compiled facts contradicted .* v v/g0000/o001: put_on"):
        refuse_contradictions({"v": bad})
    # the exported records: one per checked fact, one per episode, one total that fails
    recs = row_audit_records({"v": bad})
    assert [(r["check"], r["passed"]) for r in recs] == [
        ("row_operation", True), ("row_operation", False), ("row_initial_fact", True),
        ("row_condition", False), ("row_rows", True), ("row_audit", False)]
    assert recs[-1]["detail"].startswith("2 contradictions with an unambiguous raw row: 1 of 2 operations")


def test_rows_that_decide_one_gap_differently_are_contested_and_decide_nothing():
    mug, ent = _mug(), {("v", "a1"): "mug"}
    rows_in = [LocationAnswer("q2", "v", "put", 10.0, "sink"),          # after t1
               LocationAnswer("q3", "v", "take", 31.0, "table")]        # before t2: the same gap
    ds, rows = decisions("v", [mug], rows_in, [], FX, ent, 0.0, 100.0)
    groups, facts, tasks = _episode("counter")
    res = audit_rows(ds, rows, facts, groups, tasks, {"mug": ("v", "a1")}, track_index([mug]))
    # nothing decides the gap: the condition's record says no row speaks to it
    assert res.contested == 2 and [(c["kind"], c["passed"]) for c in res.checks] == [("condition", True)]
    assert res.checks[0]["detail"].endswith("no row of its videos decides that place then (not checked)")


# ------------------------------------------------------------------ fallbacks yield
def _cup_world(moves=(("cupboard", "table"), ("table", "counter"), ("counter", "dishwasher")),
               vqa=("q1", "put", 10.0, "sink")):
    """One video, a cup tracked 10-12, 30-32 and 50-52 s; itinerary i1 (seen at 31 s, the
    end of the second track) with ``moves``; VQA ``vqa``. With the defaults: one move per
    track, and q1 puts the cup after its first track in the sink, a fixture the itinerary
    never visits: the compiler drops the first track as a conflict."""
    from analysis.compiler.readers import ClassTable
    from analysis.compiler.vocabulary import Vocabulary
    from analysis.compiler.worlds import build_world
    vocab = Vocabulary.load()
    fixtures = [{"id": "counter", "type": "counter"}, {"id": "dishwasher", "type": "dishwasher"},
                {"id": "cupboard", "type": "cupboard"}, {"id": "table", "type": "table"},
                {"id": "sink", "type": "sink"}]
    cup = Association("v", "a1", "cup", "cup", (Track("c1", 10.0, 12.0), Track("c2", 30.0, 32.0),
                                                 Track("c3", 50.0, 52.0)))
    it = Itinerary("i1", "v", 32.0, tuple(moves))
    answers = [LocationAnswer(vqa[0], "v", vqa[1], vqa[2], vqa[3])] if vqa else []
    world = build_world("v", "P01", ["v"], fixtures, "counter", {"v": [cup]}, answers, [it], {},
                        ClassTable({}, {}, {}), vocab, offsets={"v": 0.0})
    return world, vocab, cup, answers, it


def _cup_ops(world, vocab):
    from analysis.compiler.grounding import ground
    from analysis.compiler.operations import build_operations
    from analysis.compiler.sim import Sim
    b = build_operations(world, ground(world, {}, vocab), Sim(vocab))
    return b, [(o.action["type"], o.action["args"], o.time) for o in b.out.ops if o.action["args"][:1] == ["cup"]]


def test_a_curated_fallback_yields_to_the_row_that_decides_it():
    world, vocab, cup, answers, it = _cup_world()
    assert [(c["track"], c["side"]) for c in world.conflicts] == [("c1", "dst")]   # q1 vs i1
    # the row audit: q1 decides nothing (off the itinerary), i1 decides every gap
    d = world.row_places[("v", "a1", 1)]
    assert (d.qid, d.fixture, d.g0, d.g1) == ("i1", "table", 12.0, 30.0)
    # c1's source (i1's first 'from') is undisputed, so c1 is compiled; where it put the
    # cup is disputed, and so is i1's move-2 'from' (c2's source, the same gap): the
    # put-down is curated, recording the conflict. Without the row audit's decision it
    # is the work counter
    from analysis.compiler.worlds import ROW_RULE
    assert [t.src for t in world.tracks] == ["cupboard", None, "counter"]
    world.row_places = {}
    _, before = _cup_ops(world, vocab)
    assert before[:3] == [("take_from_storage", ["cup", "cupboard"], 10.0), ("put_on", ["cup", "counter"], 12.0),
                          ("pick_up", ["cup", "counter"], 30.0)]
    # the fallback yields to i1 (curated, citing it, the conflict recorded)
    world, vocab, cup, answers, it = _cup_world()
    b, ops = _cup_ops(world, vocab)
    assert ops[:3] == [("take_from_storage", ["cup", "cupboard"], 10.0), ("put_on", ["cup", "table"], 12.0),
                       ("pick_up", ["cup", "table"], 30.0)]
    put = next(o for o in b.out.ops if o.action["type"] == "put_on" and o.action["args"][0] == "cup")
    assert put.provenance["refs"]["args"][1] == {"source": "curated", "refs": {
        "rule": f"{ROW_RULE}:object_motion_object_movement_itinerary.json i1",
        "disputed": "3d_perception_object_location.json q1: sink; object_motion_object_movement_itinerary.json "
                    "i1: table; object_motion_object_movement_itinerary.json i1: chain:counter|cupboard|dishwasher|table"}}
    pick = next(o for o in b.out.ops if o.action["type"] == "pick_up" and o.action["args"][0] == "cup")
    assert pick.provenance["refs"]["args"][1]["refs"]["rule"] == f"place_of_cup:{ROW_RULE}:" \
        "object_motion_object_movement_itinerary.json i1"
    # the audit of the compiled operations: nothing contradicted; the old pick-up from the
    # cupboard is what it flags
    ds, rows = decisions("v", [cup], answers, [it], world.fixture_ids, {("v", "a1"): "cup"}, 0.0, 100.0)
    recs = [{"group_id": "v/g0000", "operations": [
        {"type": o.action["type"], "args": o.action["args"], "provenance": o.provenance} for o in b.out.ops]}]
    res = audit_rows(ds, rows, world.facts, recs, [], {"cup": ("v", "a1")}, track_index([cup]))
    assert res.contradictions == [] and res.contested == 1 and len(res.checks) >= 5
    old = [dict(op) for op in recs[0]["operations"]]
    k = next(i for i, op in enumerate(old) if op["type"] == "pick_up" and op["args"][0] == "cup")
    old[k] = {**old[k], "type": "take_from_storage", "args": ["cup", "cupboard"]}
    res = audit_rows(ds, rows, world.facts, [{"group_id": "v/g0000", "operations": old}], [],
                     {"cup": ("v", "a1")}, track_index([cup]))
    assert [(c["kind"], c["id"]) for c in res.contradictions] == [("operation", f"v/g0000/o{k:03d}")]


def test_a_vqa_answer_off_the_objects_itinerary_decides_nothing():
    # itinerary i1 (2 moves over 3 tracks: only its first 'from' and final 'to' decide)
    # visits cupboard, table, dishwasher; VQA q1 puts the cup in the sink: the two rows
    # disagree (the compiler's conflict), so q1 decides no gap and nothing yields to it;
    # an answer on the chain (q2, the table) decides
    from analysis.compiler.row_audit import uncontested
    two = (("cupboard", "table"), ("table", "dishwasher"))
    world, vocab, cup, answers, it = _cup_world(moves=two, vqa=("q1", "put", 30.0, "sink"))
    ents = {("v", "a1"): "cup"}
    ds, _ = decisions("v", [cup], answers, [it], world.fixture_ids, ents, 0.0, 100.0)
    keep, contested = uncontested(ds)
    assert [(d.qid, d.gap) for d in keep] == [("i1", 0), ("i1", 3)] and [d.qid for d in contested] == ["q1"]
    assert ("v", "a1", 2) not in world.row_places
    q2 = LocationAnswer("q2", "v", "put", 30.0, "table")
    ds, _ = decisions("v", [cup], [q2], [it], world.fixture_ids, ents, 0.0, 100.0)
    assert [(d.qid, d.gap, d.fixture) for d in uncontested(ds)[0]] == [
        ("q2", 2, "table"), ("i1", 0, "cupboard"), ("i1", 3, "dishwasher")]


def test_an_initial_place_the_rows_dispute_is_curated_and_records_the_dispute():
    # P02-20240209-194141's glass: VQA 11 (a take: where it came from) and itinerary 427's
    # first 'from' disagree on where the glass started; the initial place followed 427
    # (curated, decided by a row: an answer off the object's itinerary is contested) but
    # said nothing of the dispute, while a put-down does (refs.disputed). Here: q1 takes the
    # cup from the sink at the end of its first track (gap 0), i1's first 'from' is the
    # table (the cup's default, the cupboard, yields to it)
    from analysis.compiler.row_audit import uncontested
    from analysis.compiler.worlds import ROW_RULE, mark_disputed_origins
    two = (("table", "counter"), ("counter", "dishwasher"))
    world, vocab, cup, answers, it = _cup_world(moves=two, vqa=("q1", "take", 12.0, "sink"))
    assert [(c["track"], c["side"]) for c in world.conflicts] == [("c1", "src")]
    ds, _ = decisions("v", [cup], answers, [it], world.fixture_ids, {("v", "a1"): "cup"}, 0.0, 100.0)
    keep, contested = uncontested(ds)
    assert [(d.qid, d.gap) for d in keep] == [("i1", 0), ("i1", 3)] and [d.qid for d in contested] == ["q1"]
    assert mark_disputed_origins(world) == ["cup"]
    (atom, prov), = [(a, p) for a, p in world.facts.items() if a[:2] == ("at", "cup")]
    assert atom == ("at", "cup", "table") and prov == {"source": "curated", "refs": {
        "rule": f"{ROW_RULE}:object_motion_object_movement_itinerary.json i1",
        "disputed": "3d_perception_object_location.json q1: sink; object_motion_object_movement_itinerary.json "
                    "i1: table; object_motion_object_movement_itinerary.json i1: chain:counter|dishwasher|table"}}
    # an undisputed origin is left alone: the same itinerary with an answer on its chain
    world, *_ = _cup_world(moves=two, vqa=("q1", "take", 12.0, "table"))
    assert world.conflicts == [] and mark_disputed_origins(world) == []


def test_a_track_whose_start_a_put_down_before_it_binds_is_kept_when_only_its_end_is_disputed():
    # P03-20240217-210958's orange cloth: answer 81 (a put) and itinerary 471 dispute where
    # track 0022a734 ends (81 names a fixture the chain never visits); its start is the sink,
    # where answer 147 put the cloth at the end of the track before. The one-end rule keeps
    # a track with one end bound undisputed, but only the track's own links counted, so it
    # was dropped whole. Here: q0 puts the cup on the table after c1 (c2's start), q1 puts
    # it in the sink after c2 while itinerary i1 (2 moves, 3 tracks) never visits the sink
    from analysis.compiler.readers import ClassTable
    from analysis.compiler.vocabulary import Vocabulary
    from analysis.compiler.worlds import build_world
    fixtures = [{"id": f, "type": f} for f in ("counter", "dishwasher", "cupboard", "table", "sink")]
    cup = Association("v", "a1", "cup", "cup", (Track("c1", 10.0, 12.0), Track("c2", 30.0, 32.0),
                                                 Track("c3", 50.0, 52.0)))
    it = Itinerary("i1", "v", 52.0, (("cupboard", "table"), ("table", "dishwasher")))
    q0, q1 = LocationAnswer("q0", "v", "put", 10.0, "table"), LocationAnswer("q1", "v", "put", 30.0, "sink")
    world = build_world("v", "P01", ["v"], fixtures, "counter", {"v": [cup]}, [q0, q1], [it], {},
                        ClassTable({}, {}, {}), Vocabulary.load(), offsets={"v": 0.0})
    assert [(c["track"], c["side"]) for c in world.conflicts] == [("c2", "dst")]
    c2 = next(t for t in world.tracks if t.track_id == "c2")
    assert c2.conflict is None and c2.src is None and c2.dst is None      # kept; its end stays curated
    c1 = next(t for t in world.tracks if t.track_id == "c1")
    assert (c1.dst, c1.dst_ref, c1.disputed) == ("table", "q0", None)      # what binds c2's start
    assert "3d_perception_object_location.json q1: sink" in c2.disputed      # its put-down says why
    # with nothing binding its start (no q0), the track has no undisputed end: not compiled
    world = build_world("v", "P01", ["v"], fixtures, "counter", {"v": [cup]}, [q1], [it], {},
                        ClassTable({}, {}, {}), Vocabulary.load(), offsets={"v": 0.0})
    assert next(t for t in world.tracks if t.track_id == "c2").conflict is not None


def test_table_3_counts_the_row_audit():
    from types import SimpleNamespace as NS
    from analysis.report.audit import validation_audit
    mug, ent = _mug(), {("v", "a1"): "mug"}
    rows_in = [LocationAnswer("q1", "v", "take", 12.0, "cupboard"), LocationAnswer("q2", "v", "put", 10.0, "sink")]
    ds, rows = decisions("v", [mug], rows_in, [], FX, ent, 0.0, 100.0)
    groups, facts, tasks = _episode("counter")
    from analysis.compiler.row_audit import audit_states
    res = audit_rows(ds, rows, facts, groups, tasks, {"mug": ("v", "a1")}, track_index([mug]))
    res.checks += audit_states(ds, [], OBJ, START, _ops(*FETCH_MUG), _sim(), track_index([mug]))
    recs = row_audit_records({"v": res})
    export = NS(records_of=lambda kind: recs if kind == "audit" else [])
    data = validation_audit(export).data.set_index("check")
    assert list(data.index) == ["row_operation", "row_initial_fact", "row_condition", "row_state", "row_rows",
                                "row_audit"]
    # the replayed state: the mug on the counter after t1 (q2 says the sink), in the
    # cupboard before it (q1 agrees)
    assert list(data.result) == ["1/2", "1/1", "0/1", "1/2", "1/1", "0/1"]
    assert data.loc["row_state", "what"].startswith("row audit: the replayed reference state")
    assert data.loc["row_audit", "what"].startswith("row audit: no compiled fact contradicted")



# ------------------------------------------------------------------ the replayed state
def _sim():
    from analysis.compiler.sim import Sim
    from analysis.compiler.vocabulary import Vocabulary
    return Sim(Vocabulary.load())


OBJ = {"counter": "counter", "cupboard": "cupboard", "sink": "kitchen_sink", "table": "table",
       "mug": "mug", "cup": "cup"}
START = frozenset({("at", "mug", "cupboard"), ("at", "cup", "cupboard"), ("agent-at", "counter"), ("hand-empty",)})


def _ops(*steps):
    """Operation records (one group) from ``(type, args, time)``, each curated."""
    return [{"group_id": "v/g0000", "operations": [
        {"type": t, "args": list(a), "provenance": {"source": "curated", "refs": {"time": tm, "args": [], "rule": "x"}}}
        for t, a, tm in steps]}]


FETCH_MUG = [("navigate", ["counter", "cupboard"], 10.0), ("open_storage", ["cupboard"], 10.0),
             ("take_from_storage", ["mug", "cupboard"], 10.0), ("close_storage", ["cupboard"], 10.0),
             ("navigate", ["cupboard", "counter"], 12.0), ("put_on", ["mug", "counter"], 12.0)]


def test_the_replayed_place_of_an_object_whose_last_track_is_not_compiled_is_checked():
    from analysis.compiler.row_audit import audit_states
    # the mug: t1 10-12 s compiled (cupboard -> counter), t2 30-31 s dropped by the one-hand
    # model; VQA q2 (put, at t2's start) says t2 left it in the sink: gap 2, 31-100 s
    mug = _mug()
    ds, _ = decisions("v", [mug], [LocationAnswer("q2", "v", "put", 30.0, "sink")], [], FX,
                      {("v", "a1"): "mug"}, 0.0, 100.0)
    checks = audit_states(ds, [], OBJ, START, _ops(*FETCH_MUG), _sim(), track_index([mug]))
    # no operation names the sink (the row audit of operations sees nothing), but the
    # replayed world leaves the mug on the counter after t2: contradicted
    assert [(c["id"], c["passed"]) for c in checks] == [("q2/mug/g2", False)]
    assert "replayed place of mug after its track (gap 31.0-100.0" in checks[0]["detail"]
    assert checks[0]["detail"].endswith("counter; CONTRADICTED by 3d_perception_object_location.json q2 ('sink': sink)")
    # moved to the sink once the hand is free after t2 (31 s): agrees; at 40 s the hand was
    # free at 31.07 s already (nothing held), so a move at 40 s is too late
    settle = [("pick_up", ["mug", "counter"], 31.0), ("navigate", ["counter", "sink"], 31.0),
              ("put_in_sink", ["mug", "sink"], 31.0)]
    ok = audit_states(ds, [], OBJ, START, _ops(*FETCH_MUG, *settle), _sim(), track_index([mug]))
    assert [(c["id"], c["passed"]) for c in ok] == [("q2/mug/g2", True)]
    late = [(t, a, 40.0) for t, a, _ in settle]
    assert [c["passed"] for c in audit_states(ds, [], OBJ, START, _ops(*FETCH_MUG, *late), _sim(),
                                              track_index([mug]))] == [False]
    # with the cup held from 30 s to 35 s (the reason t2 was dropped), the hand is first free
    # at 35 s: the move then agrees
    busy = [("navigate", ["counter", "cupboard"], 30.0), ("open_storage", ["cupboard"], 30.0),
            ("take_from_storage", ["cup", "cupboard"], 30.0), ("close_storage", ["cupboard"], 30.0),
            ("navigate", ["cupboard", "table"], 35.0), ("put_on", ["cup", "table"], 35.0),
            ("navigate", ["table", "counter"], 35.0)]
    moved = [("pick_up", ["mug", "counter"], 35.0), ("navigate", ["counter", "sink"], 35.0),
             ("put_in_sink", ["mug", "sink"], 35.0)]
    res = audit_states(ds, [], OBJ, START, _ops(*FETCH_MUG, *busy, *moved), _sim(), track_index([mug]))
    assert [c["passed"] for c in res] == [True]


def test_an_ambiguous_row_is_contradicted_only_when_no_candidate_agrees():
    from analysis.compiler.row_audit import ambiguous, audit_states
    # the mug's t1 and the cup's c1 both start at 10.0 s: "where did I put the object
    # after taking it at 10.0?" 'sink' is about one of them (gap 1 of each)
    mug = Association("v", "a1", "mug", "mug", (Track("t1", 10.0, 12.0),))
    cup = Association("v", "a2", "cup", "cup", (Track("c1", 10.02, 12.0),))
    ents = {("v", "a1"): "mug", ("v", "a2"): "cup"}
    ans = [LocationAnswer("q1", "v", "put", 10.0, "sink")]
    ds, rows = decisions("v", [mug, cup], ans, [], FX, ents, 0.0, 100.0)
    amb = ambiguous("v", [mug, cup], ans, [], FX, ents, 0.0, 100.0)
    assert ds == [] and dict(rows) == {"ambiguous": 1} and [[d.entity for d in r] for r in amb] == [["mug", "cup"]]
    idx = track_index([mug, cup])
    # both on the counter: the row contradicts the compiled world whatever the binding
    bad = audit_states(ds, amb, OBJ, START, _ops(*FETCH_MUG), _sim(), idx)
    assert [(c["id"], c["passed"]) for c in bad] == [("q1/ambiguous", False)]
    assert "mug g1 counter (row: sink); cup g1 cupboard (row: sink): CONTRADICTED" in bad[0]["detail"]
    # the mug in the sink: one candidate agrees
    sink = [(t, ["mug", "sink"] if a == ["mug", "counter"] else ["cupboard", "sink"] if a == ["cupboard", "counter"]
             else a, tm) for t, a, tm in FETCH_MUG[:-1]] + [("put_in_sink", ["mug", "sink"], 12.0)]
    assert [c["passed"] for c in audit_states(ds, amb, OBJ, START, _ops(*sink), _sim(), idx)] == [True]
    # an unambiguous row placing every candidate elsewhere contests the ambiguous one
    more = ans + [LocationAnswer("q2", "v", "take", 30.0, "table")]   # no track ends at 30: no candidate
    assert decisions("v", [mug, cup], more, [], FX, ents, 0.0, 100.0)[0] == []
    mug2 = Association("v", "a1", "mug", "mug", (Track("t1", 10.0, 12.0), Track("t2", 50.0, 51.0)))
    cup2 = Association("v", "a2", "cup", "cup", (Track("c1", 10.02, 12.0), Track("c2", 60.0, 61.0)))
    other = ans + [LocationAnswer("q3", "v", "take", 51.0, "table"), LocationAnswer("q4", "v", "take", 61.0, "table")]
    ds, _ = decisions("v", [mug2, cup2], other, [], FX, ents, 0.0, 100.0)
    amb = ambiguous("v", [mug2, cup2], other, [], FX, ents, 0.0, 100.0)
    res = audit_states(ds, amb, OBJ, START, _ops(*FETCH_MUG), _sim(), track_index([mug2, cup2]))
    contested = [c for c in res if c["id"] == "q1/ambiguous"]
    assert [c["passed"] for c in contested] == [True] and "contested" in contested[0]["detail"]


def test_n_questions_at_one_moment_for_n_objects_with_one_answer_decide_each():
    # the compiler's exception (worlds._link_answers): two put questions at 10.0 s, the
    # mug's and the cup's tracks start there, both answers 'table': each object's gap 1
    mug = Association("v", "a1", "mug", "mug", (Track("t1", 10.0, 12.0),))
    cup = Association("v", "a2", "cup", "cup", (Track("c1", 10.0, 11.0),))
    ents = {("v", "a1"): "mug", ("v", "a2"): "cup"}
    two = [LocationAnswer("q1", "v", "put", 10.0, "table"), LocationAnswer("q2", "v", "put", 10.0, "table")]
    ds, rows = decisions("v", [mug, cup], two, [], FX, ents, 0.0, 100.0)
    assert dict(rows) == {"decided": 2}
    assert sorted({(d.entity, d.gap, d.fixture, d.g0) for d in ds}) == [("cup", 1, "table", 11.0), ("mug", 1, "table", 12.0)]
    # answers that differ (or one question for two objects) stay ambiguous
    differ = [two[0], LocationAnswer("q2", "v", "put", 10.0, "sink")]
    assert dict(decisions("v", [mug, cup], differ, [], FX, ents, 0.0, 100.0)[1]) == {"ambiguous": 2}
    assert dict(decisions("v", [mug, cup], two[:1], [], FX, ents, 0.0, 100.0)[1]) == {"ambiguous": 1}


def test_every_condition_has_one_row_condition_record():
    # an `at` condition no row decides and an `in` condition each get a record saying so
    mug, ent = _mug(), {("v", "a1"): "mug"}
    groups, facts, tasks = _episode("counter")
    tasks[0]["conditions"].append({"id": "c2", "kind": "atom", "atom": ["in", "tea", "mug"]})
    res = audit_rows([], {}, facts, groups, tasks, {"mug": ("v", "a1")}, track_index([mug]))
    conds = [c for c in res.checks if c["kind"] == "condition"]
    assert [(c["condition_id"], c["passed"]) for c in conds] == [("c1", True), ("c2", True)]
    assert conds[0]["detail"].endswith("no row of its videos decides that place then (not checked)")
    assert conds[1]["detail"] == "condition in(tea, mug): not a place, no location row speaks to it (not checked)"
    recs = row_audit_records({"v": res})
    assert sum(r["check"] == "row_condition" for r in recs) == sum(len(t["conditions"]) for t in tasks)
    assert "0 of 2 conditions checked (2 not checked: no row decides them)" in recs[-1]["detail"]


def test_a_worn_glove_is_moved_where_its_row_puts_it_once_the_hand_is_free():
    # a glove is worn, never compiled as held; VQA q1 puts it on the table after its track
    # (10-12 s): with the hand free at 12 s, curated operations move it there from its
    # default place, citing the row (compiled_tracks.SETTLE_RULE)
    from analysis.compiler.grounding import ground
    from analysis.compiler.compiled_tracks import SETTLE_RULE
    from analysis.compiler.operations import build_operations
    from analysis.compiler.readers import ClassTable
    from analysis.compiler.sim import Sim
    from analysis.compiler.vocabulary import Vocabulary
    from analysis.compiler.worlds import build_world
    vocab = Vocabulary.load()
    fixtures = [{"id": "counter", "type": "counter"}, {"id": "drawer", "type": "drawer"},
                {"id": "table", "type": "table"}]
    glove = Association("v", "g1", "oven glove", "oven glove", (Track("t1", 10.0, 12.0),))
    world = build_world("v", "P01", ["v"], fixtures, "counter", {"v": [glove]},
                        [LocationAnswer("q1", "v", "put", 10.0, "table")], [], {}, ClassTable({}, {}, {}), vocab,
                        offsets={"v": 0.0})
    b = build_operations(world, ground(world, {}, vocab), Sim(vocab))
    moved = [(o.action["type"], o.action["args"], o.time, o.provenance["refs"].get("rule")) for o in b.out.ops
             if o.action["args"][:1] == ["oven_glove"]]
    start = next(a for a in world.facts if a[:2] == ("at", "oven_glove"))[2]
    rule = f"{SETTLE_RULE}:3d_perception_object_location.json q1"
    assert [m[1][1] for m in moved] == [start, "table"] and {m[2] for m in moved} == {12.0}
    assert {m[3] for m in moved} == {rule}
    assert any("worn on the hand" in d["reason"] for d in b.out.dropped)


def test_an_ambiguous_row_gives_each_candidate_its_place_where_nothing_else_does():
    # the mug's and the cup's tracks start together at 10 s; 'table' is about one of them:
    # neither has an observed destination, so both curated put-downs follow the row
    from analysis.compiler.grounding import ground
    from analysis.compiler.operations import build_operations
    from analysis.compiler.readers import ClassTable
    from analysis.compiler.sim import Sim
    from analysis.compiler.vocabulary import Vocabulary
    from analysis.compiler.worlds import AMB_RULE, build_world
    vocab = Vocabulary.load()
    fixtures = [{"id": "counter", "type": "counter"}, {"id": "cupboard", "type": "cupboard"},
                {"id": "table", "type": "table"}]
    mug = Association("v", "a1", "mug", "mug", (Track("t1", 10.0, 12.0),))
    cup = Association("v", "a2", "cup", "cup", (Track("c1", 10.02, 10.5), Track("c2", 20.0, 21.0)))
    world = build_world("v", "P01", ["v"], fixtures, "counter", {"v": [mug, cup]},
                        [LocationAnswer("q1", "v", "put", 10.0, "table")], [], {}, ClassTable({}, {}, {}), vocab,
                        offsets={"v": 0.0})
    assert sorted(k[1:] for k in world.amb_places) == [("a1", 1), ("a2", 1)] and world.row_places == {}
    b = build_operations(world, ground(world, {}, vocab), Sim(vocab))
    puts = [(o.action["args"], o.provenance["refs"]["args"][1]["refs"].get("rule")) for o in b.out.ops
            if o.action["type"] == "put_on"]
    # the mug's put-down goes there; the cup's c1 is nested in the mug's t1 and dropped:
    # the mug's compiled track answers the row, which does not say which object it saw, so
    # the cup is not moved to the table by curation (issue 34: itinerary 218's knife4 of
    # P03-20240216-185832 beside knife5); it stays out on the work counter
    # (compiled_tracks.OUT_RULE) and is picked up there at 20 s
    assert (["mug", "table"], f"{AMB_RULE}:3d_perception_object_location.json q1") in puts
    cup_ops = [(o.action["type"], o.action["args"][1], o.time) for o in b.out.ops if o.action["args"][:1] == ["cup"]]
    assert cup_ops == [("pick_up", "counter", 20.0), ("put_on", "counter", 21.0)]


def test_an_ambiguous_row_moves_its_candidates_only_when_no_compiled_track_answers_it():
    # both candidates' tracks are nested in the bowl's (9-13 s) and dropped: no compiled
    # track answers the row, and the world must not contradict it (one of them went to the
    # table), so each is moved there once the hand frees at 13 s, and the rule says the
    # row is ambiguous (itinerary 78 of P03-20240216-084005: spoon and metal spoon)
    from analysis.compiler.grounding import ground
    from analysis.compiler.compiled_tracks import AMB_SETTLE_RULE
    from analysis.compiler.operations import build_operations
    from analysis.compiler.readers import ClassTable
    from analysis.compiler.sim import Sim
    from analysis.compiler.vocabulary import Vocabulary
    from analysis.compiler.worlds import build_world
    vocab = Vocabulary.load()
    fixtures = [{"id": "counter", "type": "counter"}, {"id": "cupboard", "type": "cupboard"},
                {"id": "table", "type": "table"}]
    bowl = Association("v", "a0", "bowl", "bowl", (Track("b1", 9.0, 13.0),))
    mug = Association("v", "a1", "mug", "mug", (Track("t1", 10.0, 12.0),))
    cup = Association("v", "a2", "cup", "cup", (Track("c1", 10.02, 10.5),))
    world = build_world("v", "P01", ["v"], fixtures, "counter", {"v": [bowl, mug, cup]},
                        [LocationAnswer("q1", "v", "put", 10.0, "table")], [], {}, ClassTable({}, {}, {}), vocab,
                        offsets={"v": 0.0})
    b = build_operations(world, ground(world, {}, vocab), Sim(vocab))
    moved = [(o.action["type"], o.action["args"], o.time, o.provenance["refs"].get("rule")) for o in b.out.ops
             if o.action["args"][:1] in (["mug"], ["cup"])]
    rule = f"{AMB_SETTLE_RULE}:3d_perception_object_location.json q1"
    assert moved == [("take_from_storage", ["cup", "cupboard"], 13.0, rule), ("put_on", ["cup", "table"], 13.0, rule),
                     ("take_from_storage", ["mug", "cupboard"], 13.0, rule), ("put_on", ["mug", "table"], 13.0, rule)]
    # the cup taken again at 12.5 s (a track of its own, compiled once the bowl is down): it
    # is caught up to the table before that pick-up, and the catch-up's rule names the
    # ambiguous row as well as the track not compiled (P01-20240203-130505: itinerary 446)
    from analysis.compiler.worlds import AMB_RULE
    cup2 = Association("v", "a2", "cup", "cup", (Track("c1", 10.02, 10.5), Track("c2", 12.5, 14.0)))
    world = build_world("v", "P01", ["v"], fixtures, "counter", {"v": [bowl, mug, cup2]},
                        [LocationAnswer("q1", "v", "put", 10.0, "table")], [], {}, ClassTable({}, {}, {}), vocab,
                        offsets={"v": 0.0})
    b = build_operations(world, ground(world, {}, vocab), Sim(vocab))
    cup_ops = [(o.action["type"], o.action["args"][1], o.provenance["refs"].get("rule")) for o in b.out.ops
               if o.action["args"][:1] == ["cup"]]
    caught = f"moved_in_a_track_not_compiled:c1;{AMB_RULE}:3d_perception_object_location.json q1"
    assert cup_ops == [("pick_up", "counter", caught), ("put_on", "table", caught), ("pick_up", "table", None),
                       ("put_on", "counter", None)]


def test_an_untracked_text_vessel_stands_where_the_row_puts_the_food_added_into_it():
    # VQA 200 of P09-20240622-150155: the ginger (its track 10-20 s ends with the add into
    # the untracked pot the step text names) was put "on the hob": the pot stands there,
    # not on the curated work counter
    from analysis.compiler.grounding import TEXT_VESSEL_RULE, Grounding, Planned
    from analysis.compiler.operations import text_vessel_places
    from analysis.compiler.readers import ClassTable
    from analysis.compiler.vocabulary import Vocabulary
    from analysis.compiler.worlds import ROW_RULE, build_world
    vocab = Vocabulary.load()
    fixtures = [{"id": "counter", "type": "counter"}, {"id": "hob", "type": "hob"}, {"id": "fridge", "type": "fridge"}]
    ginger = Association("v", "a1", "ginger", "ginger", (Track("t1", 10.0, 20.0),))

    def world_with(answer):
        w = build_world("v", "P09", ["v"], fixtures, "counter", {"v": [ginger]},
                        [LocationAnswer("q1", "v", "put", 10.0, answer)], [], {}, ClassTable({}, {}, {}), vocab,
                        offsets={"v": 0.0})
        w.objects["pot"] = "pot"
        w.facts[("at", "pot", "counter")] = {"source": "curated", "refs": {"rule": TEXT_VESSEL_RULE}}
        return w
    add = Planned("add", 19.0, "add_ingredient", {"o": "ginger", "c": "pot"}, {}, {}, hold="ginger", hold_track="t1")
    w = world_with("hob")
    assert text_vessel_places(w, Grounding(planned=[add])) == ["pot"]
    assert w.facts[("at", "pot", "hob")] == {"source": "curated", "refs": {
        "rule": f"{ROW_RULE}:3d_perception_object_location.json q1"}}
    # a stir (not an add of the held food) says nothing about the pot's place
    w = world_with("hob")
    stir = Planned("step", 19.0, "stir", {"t": "ginger", "c": "pot"}, {}, {}, hold="ginger", hold_track="t1")
    assert text_vessel_places(w, Grounding(planned=[stir])) == [] and ("at", "pot", "counter") in w.facts


def test_an_itinerary_deciding_a_gap_from_both_sides_gives_two_state_records_with_their_own_ids():
    from analysis.compiler.row_audit import audit_states
    # i1's move 1 puts the mug in the sink (gap 1 after t1), its move 2 takes it from there
    # (gap 1 before t2): two checks of one gap, each with its own ID (the records' key is
    # unique); with no operation the mug stays in the cupboard, so every check fails
    mug = _mug()
    it = Itinerary("i1", "v", 31.0, (("hob", "sink"), ("sink", "counter")))
    ds, _ = decisions("v", [mug], [], [it], FX, {("v", "a1"): "mug"}, 0.0, 100.0)
    checks = audit_states(ds, [], OBJ, START, _ops(), _sim(), track_index([mug]))
    assert sorted((c["id"], c["passed"]) for c in checks) == [
        ("i1/mug/g0/before", False), ("i1/mug/g1", False), ("i1/mug/g1/before", False), ("i1/mug/g2", False)]
    assert all(c["detail"].startswith("replayed place of mug") and "cupboard; CONTRADICTED" in c["detail"]
               for c in checks)


# ------------------------------------------------------------------ disputed track ends
def test_a_disputed_track_end_leaves_the_next_tracks_source_unbound_too():
    # itinerary i1 pairs its two moves with the mug's two tracks: t1 ends at the sink,
    # t2 starts there; VQA q1 says t1 put the mug on the counter. The gap between t1 and
    # t2 is one place, so i1's 'from' of move 2 (t2's source) is disputed as well: before
    # this rule the put-down read it and was "observed" (P01-20240204-121042's bowl2)
    it = Itinerary("i1", "v", 31.0, (("hob", "sink"), ("sink", "counter")))
    ans = [LocationAnswer("q1", "v", "put", 10.0, "counter")]
    per_track, _, _, conflicts, _ = _link_answers("v", [_mug()], ans, [it], FX)
    assert per_track[("a1", "t1")] == {"src": per_track[("a1", "t1")]["src"]}     # hob, undisputed
    assert per_track[("a1", "t1")]["src"][0] == "hob"
    assert per_track[("a1", "t2")].keys() == {"dst"} and per_track[("a1", "t2")]["dst"][0] == "counter"
    assert [(c["track"], c["side"], [(x["id"], x["fixture"]) for x in c["answers"]]) for c in conflicts] == [
        ("t1", "dst", [("q1", "counter"), ("i1", "sink")])]
    # a take answer for t2 agreeing with i1 is unbound too, and joins the conflict's list
    take = LocationAnswer("q2", "v", "take", 31.0, "sink")
    per_track, _, _, conflicts, _ = _link_answers("v", [_mug()], ans + [take], [it], FX)
    assert per_track[("a1", "t2")].keys() == {"dst"}
    assert [(x["id"], x["fixture"]) for x in conflicts[0]["answers"]] == [
        ("q1", "counter"), ("i1", "sink"), ("q2", "sink")]


def test_an_observed_place_is_checked_against_every_row_of_its_track_end():
    mug, ent = _mug(), {("v", "a1"): "mug"}
    rows_in = [LocationAnswer("q2", "v", "put", 10.0, "sink"),          # after t1
               LocationAnswer("q3", "v", "take", 31.0, "table")]        # before t2: the same gap
    ds, rows = decisions("v", [mug], rows_in, [], FX, ent, 0.0, 100.0)
    seen = {"source": "observed", "refs": {"file": "3d_perception_object_location.json", "id": "q2"}}
    for prov, failed in ((seen, ["v/g0000/o000"]), ({"source": "curated", "refs": {"rule": "x"}}, [])):
        groups = [{"group_id": "v/g0000", "operations": [
            _op("put_on", ["mug", "sink"], 12.0, track="t1", fixture_prov=prov)]}]
        res = audit_rows(ds, rows, {}, groups, [], {"mug": ("v", "a1")}, track_index([mug]))
        # observed on one side of contested rows: a contradiction naming the other row;
        # curated there: the rows decide nothing, nothing is checked
        assert [c["id"] for c in res.contradictions] == failed
    assert "CONTRADICTED by 3d_perception_object_location.json q3 ('table': table)" in \
        audit_rows(ds, rows, {}, [{"group_id": "v/g0000", "operations": [
            _op("put_on", ["mug", "sink"], 12.0, track="t1", fixture_prov=seen)]}], [],
            {"mug": ("v", "a1")}, track_index([mug])).contradictions[0]["detail"]


def test_a_catch_up_that_takes_one_side_of_an_observed_conflict_records_the_dispute():
    # the worn glove of the test above, with two rows on where it ends: itinerary i1 moves it
    # from the drawer to the table, VQA q1 puts it in the sink (off the itinerary, so it
    # decides nothing and i1 decides the gap). The catch-up follows i1 and its put-down says
    # the place is disputed (P05-20240423-172243's wooden spoon: itinerary 247 vs answer 170);
    # a later pick-up from there keeps the dispute
    from analysis.compiler.grounding import ground
    from analysis.compiler.compiled_tracks import SETTLE_RULE
    from analysis.compiler.operations import build_operations
    from analysis.compiler.readers import ClassTable
    from analysis.compiler.sim import Sim
    from analysis.compiler.vocabulary import Vocabulary
    from analysis.compiler.worlds import build_world
    vocab = Vocabulary.load()
    fixtures = [{"id": "counter", "type": "counter"}, {"id": "drawer", "type": "drawer"},
                {"id": "table", "type": "table"}, {"id": "sink", "type": "sink"}]
    glove = Association("v", "g1", "oven glove", "oven glove", (Track("t1", 10.0, 12.0),))
    world = build_world("v", "P01", ["v"], fixtures, "counter", {"v": [glove]},
                        [LocationAnswer("q1", "v", "put", 10.0, "sink")],
                        [Itinerary("i1", "v", 12.0, (("drawer", "table"),))], {}, ClassTable({}, {}, {}), vocab,
                        offsets={"v": 0.0})
    assert [(c["track"], c["side"]) for c in world.conflicts] == [("t1", "dst")]
    b = build_operations(world, ground(world, {}, vocab), Sim(vocab))
    ops = [o for o in b.out.ops if o.action["args"][:1] == ["oven_glove"]]
    put = next(o for o in ops if o.action["args"][1] == "table")
    rule = f"{SETTLE_RULE}:object_motion_object_movement_itinerary.json i1"
    assert put.provenance["refs"]["rule"] == rule
    disputed = put.provenance["refs"]["args"][1]["refs"]["disputed"]
    assert "3d_perception_object_location.json q1: sink" in disputed
    # the take from where the world had it claims nothing of the contested place
    take = ops[0]
    assert take.action["args"][1] != "table" and "disputed" not in take.provenance["refs"]["args"][1]["refs"]
    assert b.place["oven_glove"]["refs"]["disputed"] == disputed
    assert b.fixture_prov("oven_glove", "table")["refs"]["disputed"] == disputed


def test_an_ambiguous_row_binds_the_candidate_left_when_the_others_own_rows_put_them_elsewhere():
    # the mug's and the cup's tracks start together at 10 s and 'table' is about one of
    # them (q1, ambiguous); the mug's next track (20-21 s) was taken from the counter (q2,
    # keyed at its put-down: the mug stood on the counter from 12 s), so q1's table is the
    # cup's, and the cup (its track nested in the mug's, dropped) is moved there once the
    # hand is free at 12 s
    # (P03-20240217-100448: itinerary 334 puts the plates left of the microwave, so
    # itinerary 12 and answer 411, right of it, are the plate's)
    from analysis.compiler.grounding import ground
    from analysis.compiler.compiled_tracks import AMB_SETTLE_RULE
    from analysis.compiler.operations import build_operations
    from analysis.compiler.readers import ClassTable
    from analysis.compiler.sim import Sim
    from analysis.compiler.vocabulary import Vocabulary
    from analysis.compiler.worlds import build_world
    vocab = Vocabulary.load()
    fixtures = [{"id": "counter", "type": "counter"}, {"id": "cupboard", "type": "cupboard"},
                {"id": "table", "type": "table"}]
    mug = Association("v", "a1", "mug", "mug", (Track("t1", 10.0, 12.0), Track("t2", 20.0, 21.0)))
    cup = Association("v", "a2", "cup", "cup", (Track("c1", 10.02, 10.5),))
    answers = [LocationAnswer("q1", "v", "put", 10.0, "table"), LocationAnswer("q2", "v", "take", 21.0, "counter")]
    world = build_world("v", "P01", ["v"], fixtures, "counter", {"v": [mug, cup]}, answers, [], {},
                        ClassTable({}, {}, {}), vocab, offsets={"v": 0.0})
    assert world.amb_bound == {("3d_perception_object_location.json", "q1"): "cup"}
    assert sorted(k[1:] for k in world.amb_places) == [("a2", 1)]
    b = build_operations(world, ground(world, {}, vocab), Sim(vocab))
    mug_puts = [o.action["args"][1] for o in b.out.ops if o.action["args"][:1] == ["mug"]
                and o.action["type"] == "put_on"]
    assert mug_puts == ["counter", "counter"]
    rule = f"{AMB_SETTLE_RULE}:3d_perception_object_location.json q1"
    cup_ops = [(o.action["type"], o.action["args"][1], o.time, o.provenance["refs"].get("rule"))
               for o in b.out.ops if o.action["args"][:1] == ["cup"]]
    start = next(a for a in world.facts if a[:2] == ("at", "cup"))[2]
    assert cup_ops == [("take_from_storage", start, 12.0, rule), ("put_on", "table", 12.0, rule)]
    # were the mug's own row to put it on the table too, the mug would answer q1, which
    # would then say nothing of the cup: no place, no move
    answers[1] = LocationAnswer("q2", "v", "take", 21.0, "table")
    world = build_world("v", "P01", ["v"], fixtures, "counter", {"v": [mug, cup]}, answers, [], {},
                        ClassTable({}, {}, {}), vocab, offsets={"v": 0.0})
    assert world.amb_bound == {} and world.amb_places == {}

"""Observed operations from the fine-grained snippets (analysis.compiler.grounding.snippets).

One video "v1" (episode time = video time), fixtures counter/hob/cupboard; tracked: a
"spoon" 10-14 s, a "teaspoon" 11-13 s, a "milk bottle" 20-30 s, a "bowl" 40-45 s and a
second "bowl" 41-44 s. Every expectation below is read off those spans.
"""
from __future__ import annotations

import pytest

from analysis.compiler.grounding import ground
from analysis.compiler.operations import build_operations
from analysis.compiler.readers import Association, ClassTable, Snippet, Track
from analysis.compiler.sim import Sim
from analysis.compiler.grounding.snippets import verb_of
from analysis.compiler.vocabulary import Vocabulary
from analysis.compiler.worlds import build_world


@pytest.fixture(scope="module")
def vocab():
    return Vocabulary.load()


def _world(vocab):
    fixtures = [{"id": "counter", "type": "counter"}, {"id": "hob", "type": "hob"},
                {"id": "cupboard", "type": "cupboard"}]
    a = [Association("v1", "a1", "spoon", "spoon", (Track("t1", 10.0, 14.0),)),
         Association("v1", "a2", "teaspoon", "teaspoon", (Track("t2", 11.0, 13.0),)),
         Association("v1", "a3", "milk bottle", "milk bottle", (Track("t3", 20.0, 30.0),)),
         Association("v1", "a4", "bowl", "bowl", (Track("t4", 40.0, 45.0),)),
         Association("v1", "a5", "bowl", "bowl", (Track("t5", 41.0, 44.0),))]
    return build_world("v1", "P01", ["v1"], fixtures, "counter", {"v1": a}, [], [], {},
                       ClassTable({}, {}, {}), vocab, offsets={"v1": 0.0})


def _snip(n, action, start, end):
    return Snippet(f"fine_grained_why_recognition_{n}", "fine_grained_why_recognition.json", "v1",
                   start, end, action, f"Why did the person <{action}>?", "answer text")


def _compile(vocab, snippets):
    world = _world(vocab)
    g = ground(world, {}, vocab, (), snippets)
    for atom, prov in g.facts.items():
        world.facts.setdefault(atom, prov)
    b = build_operations(world, g, Sim(vocab))
    ops = [(o.action["type"], o.action["args"], round(o.time, 3), o.provenance["source"]) for o in b.out.ops
           if o.action["type"] not in ("navigate", "pick_up", "put_on", "take_from_storage", "open_storage",
                                       "close_storage")]
    drops = {d["what"].split(" (")[0]: d["reason"] for d in g.dropped + b.out.dropped if d["kind"] == "snippet"}
    return world, g, ops, drops


def test_verb_phrase_is_two_words_only_when_the_vocabulary_lists_them():
    verbs = {"turn off": {}, "turn": {}, "tap": {}}
    assert verb_of("turn off burner", verbs) == ("turn off", "burner")
    assert verb_of("turn saucepan", verbs) == ("turn", "saucepan")
    assert verb_of("tap wooden spoon", verbs) == ("tap", "wooden spoon")


def test_a_particle_after_the_verb_is_part_of_the_verb_phrase():
    # how_86 "turn on blender": the verb is "turn on" (a switch-on), never "turn" (rotate)
    # with the noun "on blender"; listed or not, the particle stays with its verb
    verbs = {"turn": {}, "tap": {}, "pick": {}}
    assert verb_of("turn on blender", verbs) == ("turn on", "blender")
    assert verb_of("switch off tap", verbs) == ("switch off", "tap")
    assert verb_of("pick up bowl", verbs) == ("pick up", "bowl")
    assert verb_of("turn on", verbs) == ("turn", "on")          # no noun left: one word


def _blender_world(vocab, second=False):
    """A "blender" tracked 10-12 s (then on the counter) and 60-62 s; with ``second``
    also a "blender2" 70-71 s: two blenders in the video."""
    fixtures = [{"id": "counter", "type": "counter"}, {"id": "cupboard", "type": "cupboard"}]
    a = [Association("v1", "b1", "blender", "blender", (Track("t1", 10.0, 12.0), Track("t2", 60.0, 62.0)))]
    if second:
        a.append(Association("v1", "b2", "blender2", "blender2", (Track("t3", 70.0, 71.0),)))
    return build_world("v1", "P01", ["v1"], fixtures, "counter", {"v1": a}, [], [], {},
                       ClassTable({}, {}, {}), vocab, offsets={"v1": 0.0})


def test_turn_on_blender_switches_on_the_videos_only_blender_where_it_stands(vocab):
    world = _blender_world(vocab)
    assert world.objects["blender"] == "blender"
    g = ground(world, {}, vocab, (), [_snip(20, "turn on blender", 30.0, 32.0)])
    b = build_operations(world, g, Sim(vocab))
    ops = [(o.action["type"], o.action["args"], o.time, o.provenance["source"]) for o in b.out.ops
           if o.action["type"] == "turn_on_container"]
    # not held at 30-32 s (tracks 10-12 and 60-62): switched on where its first track left
    # it (the work counter, curated), the blender observed by the snippet; on once the
    # snippet ends (32 s: the unit of a snippet is the one holding its end)
    assert ops == [("turn_on_container", ["blender", "counter"], 32.0, "curated")]
    op = next(o for o in b.out.ops if o.action["type"] == "turn_on_container")
    arg = op.provenance["refs"]["args"][0]
    assert arg["source"] == "observed" and arg["refs"]["id"] == "fine_grained_why_recognition_20"
    assert "the only electric_container named 'blender' tracked in the video" in arg["refs"]["how"]
    # two blenders in the video: neither binds
    world = _blender_world(vocab, second=True)
    g = ground(world, {}, vocab, (), [_snip(21, "turn on blender", 30.0, 32.0)])
    assert [d["reason"] for d in g.dropped if d["kind"] == "snippet"] == [
        "unique binding: 2 objects named 'blender' of electric_container are tracked in the video "
        "['blender', 'blender2']"]


def test_a_held_item_named_by_its_head_noun_gets_the_snippet_action(vocab):
    # "tap teaspoon" at 11.5-12: the spoon (10-14) and the teaspoon (11-13) are both
    # tracked, but only the teaspoon's head noun is named; the snippet reserves the
    # teaspoon's track (one hand: the spoon, held around it, is picked up once the
    # teaspoon is put down at 13 s), so the tap is emitted on the teaspoon at 11.5 s
    _, _, ops, drops = _compile(vocab, [_snip(1, "tap teaspoon", 11.5, 12.0)])
    assert ops == [("tap", ["teaspoon"], 11.5, "observed")]
    assert drops == {}
    # "shake spoon" at 10.5: the spoon is the only object named spoon during 10.5-10.9
    _, _, ops, drops = _compile(vocab, [_snip(2, "shake spoon", 10.5, 10.9)])
    assert ops == [("shake_item", ["spoon"], 10.5, "observed")]
    assert drops == {}


def test_two_tracked_objects_named_alike_bind_neither(vocab):
    _, _, ops, drops = _compile(vocab, [_snip(3, "tilt bowl", 42.0, 43.0)])
    assert ops == []
    assert drops["<tilt bowl>"] == ("unique binding: 2 tracked objects named 'bowl' are handled during the "
                                    "snippet ['bowl', 'bowl_2']")


def test_a_verb_or_a_noun_the_vocabulary_does_not_compile_is_dropped_with_the_reason(vocab):
    _, _, ops, drops = _compile(vocab, [_snip(4, "pour water", 21.0, 22.0),
                                        _snip(5, "tap phone", 21.0, 22.0),
                                        _snip(6, "close bottle", 35.0, 36.0)])
    assert ops == []
    assert drops["<pour water>"].startswith("verb 'pour': no action type in vocabulary snippet_verbs")
    assert drops["<tap phone>"].startswith("unique binding: 0 tracked objects named 'phone'")
    # the bottle's track ended at 30 s: nothing named bottle is handled at 35 s
    assert drops["<close bottle>"].startswith("unique binding: 0 tracked objects named 'bottle'")


def test_the_first_opening_observes_the_container_capped_and_closing_caps_it(vocab):
    world, g, ops, drops = _compile(vocab, [_snip(7, "open bottle", 21.0, 22.0),
                                            _snip(8, "close bottle", 27.0, 28.0)])
    assert g.facts[("capped", "milk_bottle")]["source"] == "observed"
    assert g.facts[("capped", "milk_bottle")]["refs"]["id"] == "fine_grained_why_recognition_7"
    assert ops == [("open_container", ["milk_bottle"], 21.0, "observed"),
                   ("close_container", ["milk_bottle"], 28.0, "observed")]
    # closing first: nothing says it was capped before, so no initial fact
    _, g, ops, _ = _compile(vocab, [_snip(9, "close bottle", 27.0, 28.0)])
    assert ("capped", "milk_bottle") not in g.facts
    assert ops == [("close_container", ["milk_bottle"], 28.0, "observed")]
    # opened twice with no closing seen between: the closing is inserted, curated
    _, _, ops, _ = _compile(vocab, [_snip(10, "open bottle", 21.0, 22.0), _snip(11, "open bottle", 25.0, 26.0)])
    assert ops == [("open_container", ["milk_bottle"], 21.0, "observed"),
                   ("close_container", ["milk_bottle"], 25.0, "curated"),
                   ("open_container", ["milk_bottle"], 25.0, "observed")]


def test_a_snippet_on_the_hob_binds_the_scenes_only_hob_and_needs_it_on(vocab):
    # the hob is off in this world: turning it off or adjusting it is rejected by the
    # rules, and switching it on is never compiled from a snippet (see vocabulary.yaml)
    _, _, ops, drops = _compile(vocab, [_snip(12, "turn off burner", 50.0, 51.0),
                                        _snip(13, "increase heat of hob", 52.0, 53.0),
                                        _snip(14, "turn on hob", 54.0, 55.0)])
    assert ops == []
    assert drops["<turn off burner>"] == "turn_off(hob) rejected by the rules: appliance_on"
    assert drops["<increase heat of hob>"] == "adjust(hob) rejected by the rules: appliance_on"
    # "turn on" switches on only an electric container (never the hob): the noun is "hob",
    # never "on hob" read after the verb "turn" (rotate a held item)
    assert drops["<turn on hob>"] == ("unique binding: 0 objects named 'hob' of electric_container are "
                                      "tracked in the video []")


def test_snippet_evidence_cites_the_row_with_question_answer_and_video(vocab):
    world = _world(vocab)
    g = ground(world, {}, vocab, (), [_snip(2, "shake spoon", 10.5, 10.9)])
    b = build_operations(world, g, Sim(vocab))
    op = next(o for o in b.out.ops if o.action["type"] == "shake_item")
    ref = op.provenance["refs"]["args"][0]["refs"]
    assert (ref["file"], ref["id"], ref["time"], ref["end"], ref["video"]) == (
        "fine_grained_why_recognition.json", "fine_grained_why_recognition_2", 10.5, 10.9, "v1")
    assert ref["question"] == "Why did the person <shake spoon>?" and ref["answer"] == "answer text"
    assert "track t1, 10.0-14.0 s" in ref["how"]


def test_the_vocabulary_doc_lists_every_snippet_verb(vocab):
    from pathlib import Path
    doc = (Path(__file__).resolve().parents[1] / "docs" / "vocabulary.md").read_text(encoding="utf-8")
    rows = [f"| {verb} | {kind} | {t} |" for verb, by_kind in vocab.snippet_verbs.items()
            for kind, t in by_kind.items()]
    assert rows and all(r in doc for r in rows)


def test_a_snippet_on_an_object_merged_across_videos_is_curated(vocab):
    # "milk bottle" is tracked in v1 (10-12 s) and v2 (5-8 s of v2, 105-108 s of the
    # episode): one entity by the curated name rule, so the snippet closing it in v2 is
    # observed but its object is not: the operation (and any capped end state) is curated
    from analysis.compiler.worlds import IDENTITY_RULE
    fixtures = [{"id": "counter", "type": "counter"}, {"id": "cupboard", "type": "cupboard"}]
    assocs = {"v1": [Association("v1", "a1", "milk bottle", "milk bottle", (Track("t1", 10.0, 12.0),))],
              "v2": [Association("v2", "b1", "milk bottle", "milk bottle", (Track("u1", 5.0, 8.0),))]}
    world = build_world("v1", "P01", ["v1", "v2"], fixtures, "counter", assocs, [], [], {},
                        ClassTable({}, {}, {}), vocab, offsets={"v1": 0.0, "v2": 100.0})
    assert world.identities["v2/b1"]["rule"] == IDENTITY_RULE
    sn = Snippet("fine_grained_how_recognition_9", "fine_grained_how_recognition.json", "v2", 6.0, 6.5,
                 "close bottle", "How did the person <close bottle>?", "by turning the cap")
    g = ground(world, {}, vocab, (), [sn])
    b = build_operations(world, g, Sim(vocab))
    op = next(o for o in b.out.ops if o.action["type"] == "close_container")
    arg = op.provenance["refs"]["args"][0]
    assert op.provenance["source"] == "curated"
    assert (arg["source"], arg["refs"]["rule"], arg["refs"]["same_as"], arg["refs"]["id"]) == (
        "curated", IDENTITY_RULE, "v1/a1", "fine_grained_how_recognition_9")


def _jar_world(vocab, lid_start=14.0):
    """A "jar of tahini" tracked 10-20 s, its lid ("jar of tahini lid") 14-16 s (or from
    ``lid_start``), a "sugar jar" 31.02-35 s and a "tupperware" 50-55 s."""
    fixtures = [{"id": "counter", "type": "counter"}, {"id": "cupboard", "type": "cupboard"}]
    a = [Association("v1", "j1", "jar of tahini", "jar of tahini", (Track("t1", 10.0, 20.0),)),
         Association("v1", "j2", "jar of tahini lid", "jar of tahini lid", (Track("t2", lid_start, 16.0),)),
         Association("v1", "j3", "sugar jar", "sugar jar", (Track("t3", 31.02, 35.0),)),
         Association("v1", "j4", "tupperware", "tupperware", (Track("t4", 50.0, 55.0),))]
    return build_world("v1", "P01", ["v1"], fixtures, "counter", {"v1": a}, [], [], {},
                       ClassTable({}, {}, {}), vocab, offsets={"v1": 0.0})


def _jar_ops(vocab, snippets):
    world = _jar_world(vocab)
    g = ground(world, {}, vocab, (), snippets)
    b = build_operations(world, g, Sim(vocab))
    ops = [(o.action["type"], o.action["args"], round(o.time, 3)) for o in b.out.ops
           if o.action["type"] == "close_container"]
    drops = {d["what"].split(" (")[0]: d["reason"] for d in g.dropped + b.out.dropped if d["kind"] == "snippet"}
    return world, ops, drops


def test_close_jar_binds_the_jar_not_its_tracked_lid_and_holds_the_jar(vocab):
    # how_131: "close jar" at 15-15.5 s while the jar of tahini (10-20) and its lid
    # (14-16, head noun "jar" too) are both tracked: the lid is the lid put on, so the one
    # candidate is the jar; its track is reserved for the close (the lid, nested in it,
    # is the other hand), so the jar is in the hand and capped at 15.5 s (a close is at
    # the snippet's end, when the jar is closed)
    world, ops, drops = _jar_ops(vocab, [_snip(30, "close jar", 15.0, 15.5)])
    jar = next(e for e, n in world.names.items() if n == ["jar of tahini"])
    assert ops == [("close_container", [jar], 15.5)] and drops == {}
    # "close lid": the lid's own head noun is "jar" ("jar of tahini lid"), and the jar
    # is no lid: nothing named lid is handled, nothing is capped
    world, ops, drops = _jar_ops(vocab, [_snip(31, "close lid", 15.0, 15.5)])
    assert ops == [] and drops["<close lid>"].startswith("unique binding: 0 tracked objects named 'lid'")


def test_a_track_one_frame_off_the_snippet_binds(vocab):
    # the sugar jar's track starts 0.02 s (under a frame, 1/30 s) after "close jar"
    # 30-31 s ends: the one candidate, closed once it is in the hand (31.02 s)
    world, ops, drops = _jar_ops(vocab, [_snip(32, "close jar", 30.0, 31.0)])
    assert ops == [("close_container", ["sugar_jar"], 31.02)] and drops == {}
    # 0.12 s off (three frames) is not the same moment: no candidate
    _, ops, drops = _jar_ops(vocab, [_snip(33, "close jar", 30.0, 30.9)])
    assert ops == [] and drops["<close jar>"].startswith("unique binding: 0 tracked objects named 'jar'")


def test_a_tupperware_is_closed_like_a_container(vocab):
    # "tupperware" is typed a tub (sealable), as "container" is: "close tupperware" caps it
    world, ops, drops = _jar_ops(vocab, [_snip(34, "close tupperware", 52.0, 53.0)])
    assert world.objects["tupperware"] == "tub"
    assert ops == [("close_container", ["tupperware"], 53.0)] and drops == {}


def test_a_snippet_closing_a_fixture_says_why_it_is_not_compiled(vocab):
    # "close cutlery drawer" / "close food waste bin" / "open cupboard": a fixture, never a
    # track (the world's cupboard included): no candidate, and the reason names the fixture
    _, _, ops, drops = _compile(vocab, [_snip(40, "close cutlery drawer", 21.0, 22.0),
                                        _snip(41, "close food waste bin", 21.0, 22.0),
                                        _snip(42, "open cupboard", 21.0, 22.0)])
    assert ops == []
    assert drops["<close cutlery drawer>"] == (
        "'cutlery drawer' names a fixture (drawer), not a tracked object: its door state is curated around "
        "each access (and closed is the absence of open: no condition atom): not compiled")
    assert drops["<close food waste bin>"] == ("'food waste bin' names a fixture (waste_bin), not a tracked "
                                               "object: a bin's lid is no state of the rules: not compiled")
    assert drops["<open cupboard>"] == ("'cupboard' names a fixture (cupboard), not a tracked object: its "
                                        "door state is curated around each access: not compiled")
    # a tracked object so named still binds: "close bottle" while the milk bottle is held
    _, _, ops, drops = _compile(vocab, [_snip(43, "close bottle", 21.0, 22.0)])
    assert ops == [("close_container", ["milk_bottle"], 22.0, "observed")] and drops == {}


def _bag_world(vocab, box_end=None):
    """A "coffee packet" tracked 10-20 s (type packet), a "rice bag" 30-40 s (type bag),
    a "yeast can" 50-55 s (type tin); with ``box_end``, a "biscuit packet" 10 s to it."""
    fixtures = [{"id": "counter", "type": "counter"}, {"id": "cupboard", "type": "cupboard"}]
    a = [Association("v1", "p1", "coffee packet", "coffee packet", (Track("t1", 10.0, 20.0),)),
         Association("v1", "p2", "rice bag", "rice bag", (Track("t2", 30.0, 40.0),)),
         Association("v1", "p3", "yeast can", "yeast can", (Track("t3", 50.0, 55.0),))]
    if box_end is not None:
        a.append(Association("v1", "p4", "biscuit packet", "biscuit packet", (Track("t4", 10.0, box_end),)))
    return build_world("v1", "P01", ["v1"], fixtures, "counter", {"v1": a}, [], [], {},
                       ClassTable({}, {}, {}), vocab, offsets={"v1": 0.0})


def _bag_ops(vocab, snippets, box_end=None):
    world = _bag_world(vocab, box_end)
    g = ground(world, {}, vocab, (), snippets)
    for atom, prov in g.facts.items():
        world.facts.setdefault(atom, prov)
    b = build_operations(world, g, Sim(vocab))
    ops = [(o.action["type"], o.action["args"], round(o.time, 3)) for o in b.out.ops
           if o.action["type"] in ("close_container", "open_container")]
    drops = {d["what"].split(" (")[0]: d["reason"] for d in g.dropped + b.out.dropped if d["kind"] == "snippet"}
    return world, ops, drops


def test_a_snippet_noun_binds_the_one_container_of_its_kind(vocab):
    # how_468 (P03-20240218-094452): "close bag" 14-16 s while only the coffee packet
    # (10-20 s) is handled: no tracked object is named "bag", but a bag and a packet are
    # one kind of container (vocabulary container_kinds): the packet is closed at 16 s
    world, ops, drops = _bag_ops(vocab, [_snip(50, "close bag", 14.0, 16.0)])
    assert world.objects["coffee_packet"] == "packet"
    assert ops == [("close_container", ["coffee_packet"], 16.0)] and drops == {}
    # the same type under another word: "open tin" 51-52 s binds the yeast can (a tin)
    _, ops, drops = _bag_ops(vocab, [_snip(51, "open tin", 51.0, 52.0)])
    assert ops == [("open_container", ["yeast_can"], 51.0)] and drops == {}
    # the name still comes first: "close bag" 32-33 s binds the rice bag
    _, ops, _ = _bag_ops(vocab, [_snip(52, "close bag", 32.0, 33.0)])
    assert ops == [("close_container", ["rice_bag"], 33.0)]


def test_two_containers_of_the_kind_or_another_kind_bind_none(vocab):
    # a second packet (the biscuit packet, 10-18 s) handled during "close bag" 14-16 s:
    # two candidates of the kind, neither is closed
    _, ops, drops = _bag_ops(vocab, [_snip(53, "close bag", 14.0, 16.0)], box_end=18.0)
    assert ops == [] and drops["<close bag>"] == (
        "unique binding: 2 tracked objects named 'bag' (its kind of container) are handled during the "
        "snippet ['biscuit_packet', 'coffee_packet']")
    # the biscuit packet's track ends 13.9 s, more than a frame before the snippet: one candidate
    _, ops, drops = _bag_ops(vocab, [_snip(54, "close bag", 14.0, 16.0)], box_end=13.9)
    assert ops == [("close_container", ["coffee_packet"], 16.0)] and drops == {}
    # a jar is no kind of the tin: "close jar" during the yeast can binds nothing
    _, ops, drops = _bag_ops(vocab, [_snip(55, "close jar", 51.0, 52.0)])
    assert ops == [] and drops["<close jar>"].startswith("unique binding: 0 tracked objects named 'jar'")

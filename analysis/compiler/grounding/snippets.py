"""Grounding (paper section 3, entity bindings): observed operations from the fine-grained
snippets (``fine_grained_{how,why}_recognition.json``).

Each snippet times one action of a video, ``<verb noun>`` ("tap teaspoon", "turn off
burner"), with how or why it was done. It compiles to an operation only when both halves
are observed:

* the verb phrase is listed in the vocabulary's ``snippet_verbs`` (its first two words,
  else its first word; a particle after the verb is always part of it, ``PARTICLES``:
  "turn on blender" is the verb "turn on", never "turn" with the noun "on blender"),
  which names the action type for what the noun binds;
* the noun binds uniquely: either a word of ``snippet_fixtures`` naming the scene's only
  fixture of that type (the hob), or exactly one tracked object whose own head
  noun the snippet names and whose track overlaps the snippet within a frame (two tracked
  spoons in the hand's reach during "tap spoon" bind neither; the tracks of one object are
  one candidate; a name ending in a lid word, "jar of tahini lid", is the lid put on, never
  the jar closed: :func:`is_lid`); with none so named, exactly one tracked container of the
  kind the noun is typed as (:func:`same_kind`: "close bag" and the tracked "coffee
  packet"). A close is timed at the snippet's end, when the container is closed, or at its track's end
  if the object is put down first (it is closed in the hand). An item action also needs the item in the hand when it
  is emitted (``op_builder.OpBuilder.emit`` checks it): its track is reserved for it,
  after every add's and step's (``one_hand.select_tracks``, ``weak``). A noun naming a
  fixture with a door (a cupboard, a drawer, an oven, a bin: :func:`fixture_named`) and no
  tracked object is dropped with that reason: the replay opens and closes doors around
  each access (curated), and closed is the absence of ``open``, no condition atom. A switch-on of
  an electric container (``STANDING_ACTIONS``) acts on it where it stands, on its base,
  not in the hand: with no object so named tracked during the snippet, the noun binds the
  only object so named tracked in the snippet's video.

Everything else is dropped with the reason (``dropped.jsonl``, kind ``snippet``).

A sealable container whose first bound open/close snippet opens it was capped before:
that is an initial fact observed by the snippet (``capped(c)``), so the snippet's
``open_container`` is executable and a pour before it needs the container opened.

>>> verb_of("turn off burner", {"turn off": {}, "turn": {}})
('turn off', 'burner')
>>> verb_of("tap teaspoon", {"tap": {}})
('tap', 'teaspoon')
>>> verb_of("turn on blender", {"turn": {}})
('turn on', 'blender')
"""
from __future__ import annotations

import re

from analysis.compiler.readers import FRAME, Snippet

from .grounder import GroundingContext, drop, has_head, is_a, local
from .text import overlaps, words
from .windows import Planned

#: the role an item action's object fills in ``Planned.roles``
ITEM_ROLE = "o"
#: the role of a fixture action's fixture (an appliance ``a``, a sink ``k``)
FIXTURE_ROLE = {"hob": "a"}
#: particles that make a phrasal verb with the word before them: they change its meaning
#: ("turn on" is no "turn"), so they are never read as the start of the noun
PARTICLES = frozenset({"on", "off", "up", "down", "out"})
#: words naming a lid: a tracked "jar of tahini lid" (its head noun is "jar") during
#: "close jar" is the lid put on, never the jar closed (the one candidate is the jar)
LID_WORDS = frozenset({"lid", "lids", "cap", "caps", "cover", "top"})
#: verbs that close (the ledger's closing snippets)
CLOSING_VERBS = frozenset({"close", "shut", "turn off", "switch off"})
#: fixture kinds that are closed (a door, a lid): a snippet closing one acts on no tracked object
DOORS = ("storage", "enclosed_appliance", "bin")
#: item actions on an object standing at a fixture (a blender switched on on its base):
#: the object is not in the hand, so it binds by name in the video, role ``c``
STANDING_ACTIONS = {"turn_on_container": "c"}


def verb_of(action: str, verbs: dict) -> tuple[str, str]:
    """``(verb phrase, noun phrase)``: the first two words when ``verbs`` lists them or
    the second is a particle (``PARTICLES``), else the first word."""
    toks = action.split()
    two = " ".join(toks[:2])
    if len(toks) > 2 and (two in verbs or toks[1] in PARTICLES):
        return two, " ".join(toks[2:])
    return (toks[0] if toks else ""), " ".join(toks[1:])


def snippet_refs(sn: Snippet, off: float) -> dict:
    """The snippet's source row as ``Planned.refs`` and the drop records cite it."""
    return {"file": sn.file, "vqa": sn.vqa_id, "video": sn.video, "start": sn.start, "end": sn.end,
            "offset": off or None}


def ground_snippets(g: GroundingContext, snippets: list[Snippet]) -> None:
    """Add the snippets' operations to ``g.out.planned`` (and their drops, and the
    initial ``capped`` facts their first opening observes)."""
    w = g.w
    verbs, fix_words = g.vocab.snippet_verbs, g.vocab.snippet_fixtures
    first_seal: dict[str, tuple] = {}          # container -> (time, action type, snippet)
    for sn in snippets:
        if sn.video not in w.videos:
            continue
        off = w.offsets.get(sn.video, 0.0)
        t0, t1 = sn.start + off, sn.end + off
        what = f"<{sn.action}> ({sn.vqa_id})"
        refs = snippet_refs(sn, off)
        verb, noun = verb_of(sn.action, verbs)
        by_kind = verbs.get(verb)
        if by_kind is None:
            drop(g, "snippet", what, f"verb {verb!r}: no action type in vocabulary snippet_verbs "
                   "(picking, placing, pouring, stirring come from the tracks and recipes)", t0, **refs)
            continue
        nwords = set(words(noun))
        ev = {**refs, "question": sn.question, "answer": sn.answer}
        fixture_kinds = [k for k in by_kind if k in fix_words and nwords & set(fix_words[k])]
        if fixture_kinds:
            kind = fixture_kinds[0]
            fids = sorted(f for f in w.fixture_ids if is_a(g, f, kind))
            if len(fids) != 1:
                drop(g, "snippet", what, f"unique binding: {len(fids)} fixtures of type {kind} in the scene",
                       t0, **refs)
                continue
            role = FIXTURE_ROLE[kind]
            g.out.planned.append(Planned(
                "snippet", t0, by_kind[kind], {role: fids[0]},
                {role: {**ev, "how": f"the scene's only {kind}, named by the snippet's noun {noun!r}"}},
                refs, what=what, title=sn.action))
            continue
        item_kinds = [k for k in by_kind if k not in fix_words]
        if not item_kinds:
            drop(g, "snippet", what, f"verb {verb!r} with noun {noun!r}: no fixture of "
                   f"{sorted(by_kind)} named", t0, **refs)
            continue
        # a track one frame off the snippet still overlaps it (the times are frame-rounded)
        cands = sorted({tr.entity for tr in w.tracks if overlaps(tr.start, tr.end, t0, t1, FRAME)
                        and has_head(g, tr.entity, nwords) and not is_lid(g, tr.entity, nwords)})
        kind_of = ""
        if not cands:
            # no head noun named: the one container of the same kind ("close bag": the coffee packet)
            cands, kind_of = same_kind(g, nwords, t0, t1)
        standing = {by_kind[k] for k in item_kinds} <= set(STANDING_ACTIONS)
        if standing and not cands:
            sn_ = _standing(g, sn, nwords, item_kinds, by_kind, what, ev, refs, t0, noun)
            if sn_ is not None:
                g.out.planned.append(sn_)
            continue
        door = fixture_named(g, nwords) if not cands else None
        if door is not None:
            # a cupboard, drawer, oven or bin is a fixture, never a track: the replay opens and
            # closes it around each access (curated), so no observed door state is there to bind
            # (a bin's lid is no state of the rules at all)
            shut = " (and closed is the absence of open: no condition atom)" if verb in CLOSING_VERBS else ""
            state = ("a bin's lid is no state of the rules" if g.vocab.is_a(door, "bin") else
                     f"its door state is curated around each access{shut}")
            drop(g, "snippet", what, f"{noun!r} names a fixture ({door}), not a tracked object: {state}: "
                 "not compiled", t0, **refs)
            continue
        if len(cands) != 1:
            drop(g, "snippet", what, f"unique binding: {len(cands)} tracked objects named {noun!r}"
                 f"{' (its kind of container)' if cands and kind_of else ''} are "
                   f"handled during the snippet {cands}", t0, **refs)
            continue
        ent = cands[0]
        # the most specific kind first: a bottle is opened as a sealable container
        kinds = sorted(item_kinds, key=lambda k: (k == "item", k))
        kind = next((k for k in kinds if is_a(g, ent, k)), None)
        if kind is None:
            drop(g, "snippet", what, f"{ent} is a {w.objects.get(ent)}, not a "
                   f"{' or '.join(kinds)} ({verb!r})", t0, **refs)
            continue
        tr = min((x for x in g.tracks_of[ent] if overlaps(x.start, x.end, t0, t1, FRAME)),
                 key=lambda x: (x.start, x.track_id))
        action = by_kind[kind]
        # inside the track (the object is in the hand then), also for a frame-off track
        # a close at the snippet's end, when the container is closed (the ledger's row rule
        # places a snippet by its end): "close bag" 529.83-534.64 s closes in the unit from 530 s
        t = min(max(t1 if action == "close_container" else t0, tr.start), max(tr.start, tr.end - 0.001))
        # a track of an association merged by name with an earlier video's
        # (``worlds.IDENTITY_RULE``): the snippet is observed, the object's identity is not
        ident = w.identities.get(f"{tr.assoc.video}/{tr.assoc.assoc_id}")
        same = {"same_as": tr.same_as, "identity_rule": ident["rule"]} if tr.same_as and ident else {}
        role = STANDING_ACTIONS.get(action, ITEM_ROLE)
        g.out.planned.append(Planned(
            "snippet", t, action, {role: ent},
            {role: {**ev, **same, "how": f"the one tracked {kind_of or 'object named'} {noun!r} during the snippet "
                                         f"(track {tr.track_id}, {local(g, tr.assoc.video, tr.start)}-"
                                         f"{local(g, tr.assoc.video, tr.end)} s)"}},
            refs, hold=None if action in STANDING_ACTIONS else ent,
            # the held object's track is reserved for the action (one hand: the jar, not
            # its lid held in the other hand, is the track compiled then)
            hold_track=None if action in STANDING_ACTIONS else tr.track_id, what=what, title=sn.action))
        if action in ("open_container", "close_container") and ent not in first_seal:
            first_seal[ent] = (t, action, sn, same)
    for ent, (t, action, sn, same) in sorted(first_seal.items()):
        if action == "open_container":
            refs = {"file": sn.file, "id": sn.vqa_id, "time": sn.start, "end": sn.end, "video": sn.video,
                    "question": sn.question, "answer": sn.answer,
                    "how": "opened in the snippet, so capped before it (its first open or close)"}
            g.out.facts[("capped", ent)] = (
                {"source": "curated", "refs": {**refs, "rule": same["identity_rule"], "same_as": same["same_as"],
                                               "track_source": "observed"}}
                if same else {"source": "observed", "refs": refs})


def same_kind(g: GroundingContext, nwords: set, t0: float, t1: float) -> tuple[list, str]:
    """``(candidates, how)``: the tracked objects handled within a frame of ``[t0, t1]``
    whose container type is of the kind a word of the snippet's noun is typed as
    (``noun_types``, then ``container_kinds``: a "bag" and a "packet" are one kind, a
    "tin" and a "can" one type), never a lid; ``([], "")`` when no word names a
    sealable container. The caller binds only a single candidate.

    >>> from types import SimpleNamespace as NS
    >>> from analysis.compiler.vocabulary import Vocabulary
    >>> tr = lambda e, a, b: NS(entity=e, start=a, end=b)
    >>> w = NS(tracks=[tr("coffee_packet", 5.0, 20.0), tr("cereal_box", 5.0, 20.0), tr("rice_bag", 30.0, 40.0)],
    ...        objects={"coffee_packet": "packet", "cereal_box": "box", "rice_bag": "bag"}, names={})
    >>> g = NS(vocab=Vocabulary.load(), w=w)
    >>> same_kind(g, {"bag"}, 10.0, 12.0)
    (['coffee_packet'], 'container of the kind (bag, packet) of')
    >>> same_kind(g, {"jar"}, 10.0, 12.0), same_kind(g, {"spoon"}, 10.0, 12.0)
    (([], 'container of the kind (jar) of'), ([], ''))
    """
    nt = g.vocab.data["noun_types"]
    kinds = {k for x in nwords if x in nt and g.vocab.is_a(nt[x], "sealable_container")
             for k in g.vocab.container_kind(nt[x])}
    if not kinds:
        return [], ""
    cands = sorted({tr.entity for tr in g.w.tracks if overlaps(tr.start, tr.end, t0, t1, FRAME)
                    and g.w.objects.get(tr.entity) in kinds and not is_lid(g, tr.entity, nwords)})
    return cands, f"container of the kind ({', '.join(sorted(kinds))}) of"


def fixture_named(g: GroundingContext, nwords: set) -> str | None:
    """The fixture type a word of the snippet's noun names (``fixture_types``: "cutlery
    drawer" a drawer, "food waste bin" a bin), when it is one with a door or lid (storage,
    an enclosed appliance, a bin) and no word names an item (``noun_types``: "bottle of
    washing up liquid" is a bottle, "lid of food bin" a lid); else ``None``.

    >>> from types import SimpleNamespace as NS
    >>> from analysis.compiler.vocabulary import Vocabulary
    >>> g = NS(vocab=Vocabulary.load())
    >>> [fixture_named(g, set(n.split())) for n in ("cutlery drawer", "oven door", "jar", "bottle washing liquid")]
    ['drawer', 'oven', None, None]
    """
    if nwords & set(g.vocab.data["noun_types"]):
        return None
    for w in sorted(nwords):
        ftype, rule = g.vocab.fixture_type(w)
        if rule != "fixture_types:default" and any(g.vocab.is_a(ftype, k) for k in DOORS):
            return ftype
    return None


def is_lid(g: GroundingContext, ent: str, nwords: set) -> bool:
    """Whether one of the object's names ends in a lid word (``LID_WORDS``) the snippet's
    noun does not name: during "close jar" the tracked "jar of tahini lid" is the lid put
    on, not the jar; a "jar with green lid" is the jar ("lid of sugar jar" has the head
    noun "lid" and is no jar already).

    >>> from types import SimpleNamespace as NS
    >>> g = NS(w=NS(names={"lid_jar": ["jar of tahini lid"], "jar": ["jar 2"], "green_jar": ["jar with green lid"]}))
    >>> [is_lid(g, e, {"jar"}) for e in ("lid_jar", "jar", "green_jar")], is_lid(g, "lid_jar", {"lid"})
    ([True, False, False], False)
    """
    for name in g.w.names.get(ent, ()):
        toks = re.findall(r"[a-z]+", name.lower())
        if toks and toks[-1] in LID_WORDS - nwords and "with" not in toks:
            return True
    return False


def _standing(g: GroundingContext, sn: Snippet, nwords: set, kinds: list, by_kind: dict, what: str,
              ev: dict, refs: dict, t0: float, noun: str) -> Planned | None:
    """A switch-on of a container standing on its base (``STANDING_ACTIONS``): the only
    object of the snippet's video whose own head noun the snippet names and whose type
    the verb acts on; else dropped with the reason."""
    w = g.w
    cands = sorted({tr.entity for tr in w.tracks if tr.assoc.video == sn.video
                    and has_head(g, tr.entity, nwords) and any(is_a(g, tr.entity, k) for k in kinds)})
    if len(cands) != 1:
        drop(g, "snippet", what, f"unique binding: {len(cands)} objects named {noun!r} of "
             f"{' or '.join(kinds)} are tracked in the video {cands}", t0, **refs)
        return None
    ent = cands[0]
    kind = next(k for k in kinds if is_a(g, ent, k))
    role = STANDING_ACTIONS[by_kind[kind]]
    # an association merged by name with an earlier video's: the object is not observed
    tr = next(x for x in g.tracks_of[ent] if x.assoc.video == sn.video)
    ident = w.identities.get(f"{tr.assoc.video}/{tr.assoc.assoc_id}")
    same = {"same_as": tr.same_as, "identity_rule": ident["rule"]} if tr.same_as and ident else {}
    # done when the snippet ends (the ledger's row rule places a snippet by its end too)
    return Planned("snippet", round(t0 + sn.end - sn.start, 5), by_kind[kind], {role: ent},
                   {role: {**ev, **same, "how": f"the only {kind} named {noun!r} tracked in the video, switched "
                                        "on where it stands (not held during the snippet)"}},
                   refs, what=what, title=sn.action)

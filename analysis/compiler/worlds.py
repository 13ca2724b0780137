"""Initial worlds: the scene's fixtures, the episode's objects and substances, their
initial locations (observed from VQA, else curated by type) and container states, every
fact with its provenance."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .grounding import CONTAINER_WORDS, words
from .normalise import canonical_object, fixture_id, resolve_noun
from .readers import FRAME, Association, Itinerary, LocationAnswer, Recipe
from .vocabulary import Vocabulary


def observed(**refs) -> dict:
    return {"source": "observed", "refs": {k: v for k, v in sorted(refs.items()) if v is not None}}


def curated(rule: str) -> dict:
    return {"source": "curated", "refs": {"rule": rule}}


@dataclass
class TrackInfo:
    """A named track with its observed source/destination fixture (if any VQA links it)."""
    entity: str
    assoc: Association
    track_id: str
    start: float
    end: float
    src: str | None = None
    src_ref: str | None = None
    dst: str | None = None
    dst_ref: str | None = None
    offset: float = 0.0      # start of the track's video in episode time (start/end are episode time)


@dataclass
class EpisodeWorld:
    episode_id: str
    scene_id: str
    videos: list[str]
    objects: dict                     # entity -> leaf type
    facts: dict                       # atom tuple -> provenance
    tracks: list[TrackInfo]
    work_counter: str
    ingredient_entities: dict         # ingredient_id -> entity
    substance_sources: dict           # substance -> source container entity
    names: dict = field(default_factory=dict)   # entity -> raw names (for step-text matching)
    fixture_ids: frozenset = frozenset()
    notes: list[str] = field(default_factory=list)
    assocs_unnamed: list = field(default_factory=list)   # "Track N" associations (not compiled)
    offsets: dict = field(default_factory=dict)          # video -> its start in episode time


def _link_answers(video: str, assocs: list[Association], answers: list[LocationAnswer],
                  itineraries: list[Itinerary]):
    """``{(assoc_id, track_id): {"src": (phrase, vqa), "dst": (phrase, vqa)}}`` and
    ``{assoc_id: (first_from_phrase, vqa)}`` for the video's named associations."""
    per_track: dict = {}
    initial: dict = {}
    tracks = [(a, t) for a in assocs if a.name for t in a.tracks]
    for ans in answers:
        if ans.video != video:
            continue
        for a, t in tracks:
            # "take ... from before putting it at T": T is the track's end; the answer is
            # where the track started. "put ... after taking it at T": T is the start.
            if ans.kind == "take" and abs(t.end - ans.time) <= FRAME:
                per_track.setdefault((a.assoc_id, t.track_id), {})["src"] = (ans.phrase, ans.vqa_id)
            elif ans.kind == "put" and abs(t.start - ans.time) <= FRAME:
                per_track.setdefault((a.assoc_id, t.track_id), {})["dst"] = (ans.phrase, ans.vqa_id)
    for it in itineraries:
        if it.video != video:
            continue
        for a, t in tracks:
            if abs(t.start - it.time) <= FRAME and it.moves:
                initial.setdefault(a.assoc_id, (it.moves[0][0], it.vqa_id))
    return per_track, initial


def build_world(episode_id: str, scene: str, videos: list[str], fixtures: list[dict],
                work_counter: str, assocs: dict[str, list[Association]],
                answers: list[LocationAnswer], itineraries: list[Itinerary],
                recipes: dict[str, Recipe], nouns, vocab: Vocabulary,
                offsets: dict[str, float] | None = None) -> EpisodeWorld:
    """The episode's initial world. ``videos`` are the episode's videos in time order;
    ``offsets`` gives each video's start in episode time (tracks are shifted by it, so one
    clock orders a multi-video episode)."""
    offsets = offsets or {v: 0.0 for v in videos}
    objects: dict[str, str] = {}
    facts: dict[tuple, dict] = {}
    names: dict[str, list[str]] = {}
    notes: list[str] = []
    fixture_ids = {f["id"] for f in fixtures}
    for f in fixtures:
        objects[f["id"]] = f["type"]
    objects["hand"] = None  # placeholder removed below; keeps ID "hand" out of use
    del objects["hand"]

    def new_id(stem: str) -> str:
        if stem not in objects:
            return stem
        i = 2
        while f"{stem}_{i}" in objects:
            i += 1
        return f"{stem}_{i}"

    overrides = vocab.overrides
    substances: dict[str, str] = {}      # substance -> source container
    tracks: list[TrackInfo] = []
    for video in videos:
        vassocs = assocs.get(video, [])
        per_track, initial = _link_answers(video, vassocs, answers, itineraries)
        for a in vassocs:
            if a.unnamed or not a.tracks or vague_name(a.name):
                continue
            stem, leaf, content = track_entity(a.name, nouns, overrides, vocab)
            ent = new_id(stem)
            objects[ent] = leaf
            names[ent] = [a.name.lower()]
            if content:
                if content not in objects:
                    objects[content] = vocab.data["noun_types"][content]
                facts[("in", content, ent)] = observed(file="assoc_info.json", association=a.assoc_id,
                                                       video=video, name=a.name,
                                                       how="the track's name names its content")
                substances.setdefault(content, ent)
            # initial location: observed (first track's take answer, or itinerary) else curated
            first = a.tracks[0]
            link = per_track.get((a.assoc_id, first.track_id), {})
            loc, prov = None, None
            if "src" in link and fixture_id(link["src"][0]) in fixture_ids:
                loc = fixture_id(link["src"][0])
                prov = observed(file="3d_perception_object_location.json", id=link["src"][1],
                                time=first.end, vqa=link["src"][1], association=a.assoc_id, track=first.track_id,
                                video=video, start=first.start, end=first.end)
            elif a.assoc_id in initial and fixture_id(initial[a.assoc_id][0]) in fixture_ids:
                loc = fixture_id(initial[a.assoc_id][0])
                prov = observed(file="object_motion_object_movement_itinerary.json", id=initial[a.assoc_id][1],
                                vqa=initial[a.assoc_id][1], association=a.assoc_id, video=video)
            if loc is None:
                loc, rule2 = default_location(leaf, fixtures, work_counter, vocab)
                prov = curated(rule2)
            facts[("at", ent, loc)] = prov
            for t in a.tracks:
                off = offsets[video]
                info = TrackInfo(ent, a, t.track_id, t.start + off, t.end + off, offset=off)
                lk = per_track.get((a.assoc_id, t.track_id), {})
                if "src" in lk and fixture_id(lk["src"][0]) in fixture_ids:
                    info.src, info.src_ref = fixture_id(lk["src"][0]), lk["src"][1]
                if "dst" in lk and fixture_id(lk["dst"][0]) in fixture_ids:
                    info.dst, info.dst_ref = fixture_id(lk["dst"][0]), lk["dst"][1]
                tracks.append(info)
    tracks.sort(key=lambda t: (t.start, t.end, t.entity, t.track_id))

    facts[("agent-at", work_counter)] = curated("agent_starts_at_work_counter")
    facts[("hand-empty",)] = curated("agent_starts_hand_empty")
    unnamed = [a for v in videos for a in assocs.get(v, [])
               if a.tracks and (a.unnamed or vague_name(a.name))]
    return EpisodeWorld(episode_id, scene, list(videos), dict(sorted(objects.items())), facts,
                        tracks, work_counter, {}, dict(sorted(substances.items())),
                        names, frozenset(fixture_ids), notes, unnamed, dict(offsets))


VAGUE_WORDS = {"something", "thing", "stuff", "clue", "object", "item"}


def vague_name(name: str | None) -> bool:
    """A name that does not say what the object is ("something", "no clue2", "red
    thing"): such a track is not compiled, like an unnamed one.

    >>> vague_name("no clue2"), vague_name("Small thing to throw"), vague_name("pan lid")
    (True, True, False)
    """
    ws = set(re.findall(r"[a-z]+", (name or "").lower()))
    return bool(name) and (bool(ws & VAGUE_WORDS) or ws == {"unknown"})


_PART_WORDS = {"piece", "slice", "half", "bunch", "head", "clove", "end", "ends", "handful", "bit"}


def track_entity(name: str, nouns, overrides: dict, vocab: Vocabulary) -> tuple[str, str, str | None]:
    """``(stem, leaf type, content substance)`` of a tracked object from its own name.

    The stem is the name's own content words ("pan lid" -> ``pan_lid``, "new glass" ->
    ``glass``); the type comes from the name's head noun ("pan lid" is a lid, "bottle of
    squash" a bottle holding squash, "piece of bread" bread), then from HD-EPIC's noun
    classes for the head, then for the whole name.

    >>> from analysis.compiler.readers import ClassTable
    >>> v = Vocabulary.load()
    >>> track_entity("pan lid", ClassTable({}, {}, {}), v.overrides, v)
    ('pan_lid', 'lid', None)
    >>> track_entity("bottle of squash", ClassTable({}, {}, {}), v.overrides, v)
    ('squash_bottle', 'bottle', 'squash')
    """
    low = re.sub(r"\s+", " ", name.strip().lower())
    m = re.match(r"^(.*?[a-z])\s*(\d+)$", low)
    base, digits = (m.group(1), m.group(2)) if m else (low, "")
    if base in overrides:
        stem = overrides[base]
        leaf, _ = vocab.item_type(stem, None, None)
        return snake_id(stem + digits), leaf, None
    of = re.match(r"^(.+?) of (.+)$", base)
    content = None
    if of:
        left, right = words(of.group(1)), words(of.group(2))
        if left and right and left[-1] in _PART_WORDS:
            ws, head = right, right[-1]
        elif left and right and left[-1] in CONTAINER_WORDS:
            ws, head = right + [left[-1]], left[-1]
            content = right[-1]
        else:
            ws = (left or []) + (right or [])
            head = left[-1] if left else (right[-1] if right else "")
    else:
        ws = words(base)
        head = ws[-1] if ws else ""
        if len(ws) > 1 and head in CONTAINER_WORDS:
            content = ws[-2]
    if not ws:
        ws, head = [re.sub(r"[^a-z0-9]+", "_", base).strip("_") or "object"], ""
    nt = vocab.data["noun_types"]
    if head in nt:
        leaf = nt[head]
    else:
        key, _ = resolve_noun(head, nouns) if head else (None, "")
        if key is not None:
            leaf, _ = vocab.item_type(head, key, nouns.category.get(key))
        else:
            co = canonical_object(base, nouns, overrides)
            leaf, _ = vocab.item_type(re.sub(r"\d+$", "", co.stem), co.class_key, co.category)
    if head in CONTAINER_WORDS and len(ws) > 1 and not vocab.is_a(leaf, "sealable_container"):
        leaf = "other_sealable"          # "mango pot", "coffee jug" hold a content: not a vessel
    if vocab.is_a(leaf, "substance"):
        # a tracked "oat milk" is the milk's container; the substance sits inside it
        content, leaf, ws = head, "other_sealable", ws + ["container"]
    if content is not None:
        c_leaf = nt.get(content)
        if not (c_leaf and vocab.is_a(c_leaf, "substance")):
            content = None
    return snake_id("_".join(ws) + digits), leaf, content


def snake_id(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_") or "object"


def default_location(leaf: str, fixtures: list[dict], work_counter: str, vocab: Vocabulary):
    kinds, rule = vocab.default_location_kinds(leaf)
    for kind in kinds:
        if kind == "counter":
            return work_counter, rule
        cands = sorted(f["id"] for f in fixtures if vocab.is_a(f["type"], kind))
        if cands:
            return cands[0], rule
    return work_counter, rule + ":work_counter"

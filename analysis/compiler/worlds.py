"""Initial worlds (paper section 3: typed world graphs initialised from the source; appendix
A.2): the scene's fixtures, the episode's objects and substances, their initial locations
(observed from VQA, else curated by type) and container states, every fact with its
provenance. Binding answers to tracks: :mod:`.answer_links`; entity names and types:
:mod:`.entities`; items that start out of storage: :mod:`.out_of_storage`."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .answer_links import _link_answers
from .entities import track_entity, vague_name
from .fixtures import default_location
from .normalise import fixture_id
from .readers import Association, Itinerary, LocationAnswer, Recipe
from .row_audit import ambiguous, decisions, uncontested
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
    src_how: str | None = None
    src_extra: dict | None = None     # question, answer, video of the source's row
    dst_how: str | None = None
    dst_extra: dict | None = None
    dst_file: str | None = None
    conflict: str | None = None   # observed sources disagree on this track: not compiled
    disputed: str | None = None   # rows disagree on where it ends (the gap after it): a curated put-down
    chain: tuple = ()             # fixtures of the object's itinerary chain (final 'to' last)
    chain_dst: str | None = None  # curated default inside the chain (moves aligned from the start)
    chain_moves: tuple = ()       # the itinerary's moves (phrases) when their count differs from the tracks'
    same_as: str | None = None    # "<video>/<association>" of an earlier video this association is
                                  # identified with (curated rule IDENTITY_RULE), else None


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
    dropped: list = field(default_factory=list)          # answers not bound (unique binding)
    conflicts: list = field(default_factory=list)        # observed sources that disagree
    identities: dict = field(default_factory=dict)       # "<video>/<assoc>" -> identity record (curated)
    # (video, association, gap) -> the uncontested row deciding where the object stood in
    # that gap of its tracks (row_audit.decisions, set-aside rows included): a curated
    # fallback yields to it (ROW_RULE)
    row_places: dict = field(default_factory=dict)
    # the same for a gap no uncontested row decides but an ambiguous row does, for each of
    # its candidates (row_audit.ambiguous: the row decides the place, not the object)
    amb_places: dict = field(default_factory=dict)
    # (file, question) -> the one candidate an ambiguous row is left with once the others'
    # own uncontested rows put them elsewhere in that gap (``ambiguous_places``: elimination)
    amb_bound: dict = field(default_factory=dict)


IDENTITY_RULE = "same_name_across_videos_of_the_episode"


def identity_name(name: str | None) -> str:
    """The name an association is identified by across the videos of one episode: the
    compiler's normalisation of the raw name (lower case, runs of white space as one
    space), nothing looser ("frying pan" is "Frying  pan", never "pan"; "bowl2" is not
    "bowl").

    >>> identity_name(" Frying  Pan "), identity_name("bowl2")
    ('frying pan', 'bowl2')
    """
    return re.sub(r"\s+", " ", (name or "").strip().lower())


@dataclass
class _Draft:
    """The episode's world while it is built: what ``EpisodeWorld`` gets at the end."""
    objects: dict = field(default_factory=dict)
    facts: dict = field(default_factory=dict)
    names: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    substances: dict = field(default_factory=dict)      # substance -> source container
    tracks: list = field(default_factory=list)
    dropped: list = field(default_factory=list)
    conflicts: list = field(default_factory=list)
    identities: dict = field(default_factory=dict)
    # identity across videos: normalised name -> (video, number of associations with that
    # name in it, entity of the only one when compiled, its last TrackInfo) for the latest
    # video processed that has the name
    last_of_name: dict = field(default_factory=dict)

    def new_id(self, stem: str) -> str:
        if stem not in self.objects:
            return stem
        i = 2
        while f"{stem}_{i}" in self.objects:
            i += 1
        return f"{stem}_{i}"


@dataclass(frozen=True)
class _VideoLinks:
    """One video's observed sources bound to its tracks (``_link_answers``)."""
    video: str
    per_track: dict
    initial: dict
    chains: dict
    bad: dict                 # (association, track) -> its conflicts
    itq: dict                 # itinerary ID -> question and answer
    name_count: dict          # normalised name -> associations so named in the video


def build_world(episode_id: str, scene: str, videos: list[str], fixtures: list[dict],
                work_counter: str, assocs: dict[str, list[Association]],
                answers: list[LocationAnswer], itineraries: list[Itinerary],
                recipes: dict[str, Recipe], nouns, vocab: Vocabulary,
                offsets: dict[str, float] | None = None) -> EpisodeWorld:
    """The episode's initial world. ``videos`` are the episode's videos in time order;
    ``offsets`` gives each video's start in episode time (tracks are shifted by it, so one
    clock orders a multi-video episode)."""
    offsets = offsets or {v: 0.0 for v in videos}
    d = _Draft()
    fixture_ids = {f["id"] for f in fixtures}
    for f in fixtures:
        d.objects[f["id"]] = f["type"]
        if vocab.is_a(f["type"], "storage") or vocab.is_a(f["type"], "enclosed_appliance"):
            # a static fact the rules read: nothing is stirred, chopped or poured in there
            d.facts[("enclosing", f["id"])] = curated(f"enclosing_by_fixture_type:{f['type']}")
    d.objects["hand"] = None  # placeholder removed below; keeps ID "hand" out of use
    del d.objects["hand"]
    for video in videos:
        _add_video(d, video, assocs, answers, itineraries, fixtures, fixture_ids, work_counter,
                   nouns, vocab, offsets)
    d.tracks.sort(key=lambda t: (t.start, t.end, t.entity, t.track_id))

    row_places = decided_places(videos, assocs, answers, itineraries, fixture_ids, d.tracks, offsets)
    amb_bound: dict = {}
    amb_places = ambiguous_places(videos, assocs, answers, itineraries, fixture_ids, d.tracks, offsets,
                                  row_places, amb_bound)
    yield_initial_places(d.facts, d.tracks, {**amb_places, **row_places}, d.identities)
    d.facts[("agent-at", work_counter)] = curated("agent_starts_at_work_counter")
    d.facts[("hand-empty",)] = curated("agent_starts_hand_empty")
    unnamed = [a for v in videos for a in assocs.get(v, [])
               if a.tracks and (a.unnamed or vague_name(a.name))]
    return EpisodeWorld(episode_id, scene, list(videos), dict(sorted(d.objects.items())), d.facts,
                        d.tracks, work_counter, {}, dict(sorted(d.substances.items())),
                        d.names, frozenset(fixture_ids), d.notes, unnamed, dict(offsets),
                        d.dropped, d.conflicts, d.identities, row_places, amb_places, amb_bound)


def _add_video(d: _Draft, video: str, assocs, answers, itineraries, fixtures, fixture_ids,
               work_counter, nouns, vocab: Vocabulary, offsets: dict) -> None:
    """The entities, initial places and tracks of one video's named associations."""
    vassocs = assocs.get(video, [])
    name_count: dict[str, int] = {}
    for a in vassocs:
        if a.name and not a.unnamed:
            n = identity_name(a.name)
            name_count[n] = name_count.get(n, 0) + 1
    seen_here: dict[str, tuple] = {}
    per_track, initial, dr, cf, chains = _link_answers(video, vassocs, answers, itineraries,
                                                       fixture_ids, offsets.get(video, 0.0))
    d.dropped += dr
    d.conflicts += cf
    # a track's conflicts (a side may have two: the answers and the itinerary chain)
    bad: dict = {}
    for c in cf:
        bad.setdefault((c["association"], c["track"]), []).append(c)
    itq = {it.vqa_id: {"question": it.question,
                       "answer": ", then ".join(f"from {x} to {y}" for x, y in it.moves)}
           for it in itineraries if it.video == video}
    vl = _VideoLinks(video, per_track, initial, chains, bad, itq, name_count)
    for a in vassocs:
        if a.unnamed or not a.tracks or vague_name(a.name):
            continue
        stem, leaf, content = track_entity(a.name, nouns, vocab.overrides, vocab)
        if stem in fixture_ids:
            # the association is the scene's fixture itself (the "coffee machine" the
            # step text switches on, touched for 0.2 s): one physical appliance, not
            # a second, movable object; a fixture does not move in the world
            for t in a.tracks:
                d.dropped.append({"kind": "track", "what": f"track {t.track_id} ({a.name})",
                                  "reason": f"the association names the scene's fixture {stem} (one "
                                            "object; fixtures do not move in the world): not a new object",
                                  "time": round(t.start + offsets.get(video, 0.0), 5),
                                  "refs": {"file": "assoc_info.json", "association": a.assoc_id,
                                           "track": t.track_id, "video": video}})
            continue
        same = _identity(d, vl, a, fixture_ids, offsets)
        if same is not None:
            # the same object as the only one so named in the nearest earlier video:
            # one entity; its state carries over (no new initial place, no content fact)
            ent = same[1]
            nm = identity_name(a.name)
            d.identities[f"{video}/{a.assoc_id}"] = {
                "rule": IDENTITY_RULE, "same_as": f"{same[2].assoc.video}/{same[2].assoc.assoc_id}",
                "entity": ent, "name": nm}
            d.notes.append(f"{video}/{a.assoc_id} '{a.name}' is {ent} of {same[0]} ({IDENTITY_RULE}, curated)")
            _add_tracks(d, vl, a, ent, offsets, seen_here, d.identities[f"{video}/{a.assoc_id}"]["same_as"])
            continue
        ent = d.new_id(stem)
        d.objects[ent] = leaf
        d.names[ent] = [a.name.lower()]
        if content:
            if content not in d.objects:
                d.objects[content] = vocab.data["noun_types"][content]
            d.facts[("in", content, ent)] = observed(file="assoc_info.json", association=a.assoc_id,
                                                     video=video, name=a.name,
                                                     how="the track's name names its content")
            d.substances.setdefault(content, ent)
        loc, prov = _initial_place(d, vl, a, fixture_ids)
        if loc is None:
            loc, rule2 = default_location(leaf, fixtures, work_counter, vocab)
            prov = curated(rule2)
        d.facts[("at", ent, loc)] = prov
        _add_tracks(d, vl, a, ent, offsets, seen_here, None)
    for nm, cnt in name_count.items():
        got = seen_here.get(nm)
        d.last_of_name[nm] = (video, cnt, got[0] if got and cnt == 1 else None, got[1] if got else None)


def _identity(d: _Draft, vl: _VideoLinks, a: Association, fixture_ids, offsets: dict):
    """``(earlier video, entity, its last TrackInfo)`` when ``a`` is the same object as the
    only association so named in the nearest earlier video (``IDENTITY_RULE``), else
    ``None`` (a drop says why not, when an earlier video has the name)."""
    video = vl.video
    first = a.tracks[0]
    link = vl.per_track.get((a.assoc_id, first.track_id), {})
    it0 = vl.initial.get(a.assoc_id)
    it_fx = fixture_id(it0[0]) if it0 and fixture_id(it0[0]) in fixture_ids else None
    nm = identity_name(a.name)
    name_count = vl.name_count
    same, why_not = None, None
    prev = d.last_of_name.get(nm)
    if prev is not None:
        pv, pcount, pent, plast = prev
        src_obs = link["src"][0] if "src" in link else it_fx
        if name_count.get(nm, 0) != 1:
            why_not = f"{name_count[nm]} associations named '{nm}' in {video}"
        elif pcount != 1:
            why_not = f"{pcount} associations named '{nm}' in {pv}, the nearest earlier video with the name"
        elif pent is None:
            why_not = f"the association named '{nm}' in {pv} is not compiled"
        elif src_obs is not None and src_obs != (plast.dst if plast.assoc.tracks[-1].track_id ==
                                                 plast.track_id else None):
            why_not = (f"{video} observes where its first track takes it from ({src_obs}), which "
                       f"no observed destination of the last track in {pv} confirms")
        else:
            same = (pv, pent, plast)
        if why_not:
            d.dropped.append({"kind": "source", "what": f"association {a.assoc_id} ({a.name}) of {video}",
                              "reason": f"unique binding: no identity ({IDENTITY_RULE}) with the association named "
                                        f"'{nm}' of {pv}: {why_not}; a new entity",
                              "time": round(first.start + offsets.get(video, 0.0), 5),
                              "refs": {"file": "assoc_info.json", "id": f"{video}/{a.assoc_id}",
                                       "video": video}})
    return same


def _initial_place(d: _Draft, vl: _VideoLinks, a: Association, fixture_ids) -> tuple:
    """``(fixture, provenance)`` of a new entity's observed initial place: the first
    track's take answer, else its itinerary's first 'from'; ``(None, None)`` when neither
    (or they disagree: a conflict)."""
    video = vl.video
    first = a.tracks[0]
    link = vl.per_track.get((a.assoc_id, first.track_id), {})
    it0 = vl.initial.get(a.assoc_id)
    it_fx = fixture_id(it0[0]) if it0 and fixture_id(it0[0]) in fixture_ids else None
    loc, prov = None, None
    if "src" in link and it_fx and link["src"][0] != it_fx and link["src"][1][0] != (
            "object_motion_object_movement_itinerary.json"):
        d.conflicts.append({"video": video, "association": a.assoc_id, "track": first.track_id,
                            "side": "initial", "answers": [
                                {"file": link["src"][1][0], "id": link["src"][1][1], "fixture": link["src"][0]},
                                {"file": "object_motion_object_movement_itinerary.json", "id": it0[1],
                                 "fixture": it_fx}]})
    elif "src" in link:
        loc = link["src"][0]
        f_, q_, how_, ex_ = link["src"][1]
        prov = observed(file=f_, id=q_, time=first.end if f_.startswith("3d") else first.start,
                        vqa=q_, association=a.assoc_id, track=first.track_id,
                        start=first.start, end=first.end, how=how_, **ex_)
    elif it_fx and (a.assoc_id, first.track_id) not in vl.bad:
        loc = it_fx
        prov = observed(file="object_motion_object_movement_itinerary.json", id=it0[1],
                        vqa=it0[1], association=a.assoc_id, video=video,
                        how="itinerary: the object's first 'from'",
                        question=vl.itq.get(it0[1], {}).get("question"),
                        answer=vl.itq.get(it0[1], {}).get("answer"))
    return loc, prov


def _add_tracks(d: _Draft, vl: _VideoLinks, a: Association, ent: str, offsets: dict,
                seen_here: dict, same_as: str | None) -> None:
    """A TrackInfo per track of ``a`` (episode time), with its bound sources."""
    nm = identity_name(a.name)
    for k, t in enumerate(a.tracks):
        off = offsets[vl.video]
        chain, guess, moves = vl.chains.get(a.assoc_id, ((), {}, ()))
        info = TrackInfo(ent, a, t.track_id, t.start + off, t.end + off, offset=off,
                         chain=chain, chain_dst=guess.get(t.track_id), chain_moves=moves,
                         same_as=same_as)
        lk = vl.per_track.get((a.assoc_id, t.track_id), {})
        # the gap before a track is the gap after the one before it: a put-down bound there
        # binds this track's start (and the next track's take binds this one's end)
        near = tuple(vl.per_track.get((a.assoc_id, a.tracks[j].track_id), {}) if 0 <= j < len(a.tracks) else {}
                     for j in (k - 1, k + 1))
        _fill_links(info, lk, _track_conflict(vl.bad.get((a.assoc_id, t.track_id), []), lk, *near))
        info.disputed = gap_dispute(vl.bad, a, k)
        d.tracks.append(info)
        seen_here[nm] = (ent, info)


#: a curated place that yields to the row deciding it: ``<ROW_RULE>:<file> <question>``
ROW_RULE = "place_decided_by_a_row_the_compiler_set_aside"


def decided_places(videos, assocs, answers, itineraries, fixture_ids, tracks, offsets) -> dict:
    """``{(video, association, gap): Decision}``: the uncontested rows of the row audit
    (``row_audit.decisions``) over the episode's videos, for the world's entities."""
    entity_of = {(t.assoc.video, t.assoc.assoc_id): t.entity for t in tracks}
    ds = []
    for v in videos:
        off = offsets.get(v, 0.0)
        ds += decisions(v, assocs.get(v, []), answers, itineraries, fixture_ids, entity_of, off,
                        float("inf"))[0]
    return {(d.video, d.assoc, d.gap): d for d in uncontested(ds)[0]}


#: a curated place an ambiguous row gives each of its candidates: ``<AMB_RULE>:<file> <question>``
AMB_RULE = "place_named_by_an_ambiguous_row_for_each_candidate"


def ambiguous_places(videos, assocs, answers, itineraries, fixture_ids, tracks, offsets, decided,
                     bound: dict | None = None) -> dict:
    """``{(video, association, gap): Decision}`` for gaps no uncontested row decides
    (``decided``) but an ambiguous row does (``row_audit.ambiguous``: every candidate a
    world entity, the answer a scene fixture): the row says one of its objects stood
    there, so each candidate's curated place there follows it (``AMB_RULE``), a row
    decides the place even if not the object. Two ambiguous rows naming one gap
    differently give it nothing. A candidate whose gaps ``decided`` puts where the row
    does answers the row, which then says nothing of the others; a candidate ``decided``
    puts elsewhere is not the row's object (:func:`eliminate`), and a row left with one
    candidate is recorded in ``bound`` (``{(file, question): entity}``)."""
    entity_of = {(t.assoc.video, t.assoc.assoc_id): t.entity for t in tracks}
    by_gap: dict = {}
    for v in videos:
        for row in ambiguous(v, assocs.get(v, []), answers, itineraries, fixture_ids, entity_of,
                             offsets.get(v, 0.0), float("inf")):
            answered, left = eliminate(row, decided)
            if answered:
                continue
            if len(left) == 1 and bound is not None:
                bound[(row[0].file, row[0].qid)] = left[0]
            for d in row:
                key = (d.video, d.assoc, d.gap)
                if key not in decided:
                    by_gap.setdefault(key, []).append(d)
    return {k: xs[0] for k, xs in by_gap.items() if len({d.fixture for d in xs}) == 1}


def eliminate(row, decided: dict) -> tuple[bool, list]:
    """``(answered, left)`` for an ambiguous row's decisions ``row`` (every gap of every
    candidate): ``answered`` when a candidate's every gap in the row is ``decided`` (an
    uncontested row) at the row's fixture, so that candidate explains the row; ``left``
    the candidates, in order, no uncontested row puts elsewhere in a gap of the row. The
    row says one of its candidates stood there: one an unambiguous row puts elsewhere
    then is not it (P03-20240217-100448: itinerary 334 puts the plates on the counter
    left of the microwave, so itinerary 12's counter right of it is the plate's).

    >>> from types import SimpleNamespace as D
    >>> row = [D(video="v", assoc="a1", gap=1, entity="plates", fixture="c_right"),
    ...        D(video="v", assoc="a2", gap=1, entity="plate", fixture="c_right")]
    >>> eliminate(row, {("v", "a1", 1): D(fixture="c_left")})
    (False, ['plate'])
    >>> eliminate(row, {("v", "a1", 1): D(fixture="c_right")})
    (True, ['plates', 'plate'])
    >>> eliminate(row, {})
    (False, ['plates', 'plate'])
    """
    per: dict = {}                          # candidate -> [(decided?, decided there?)] per gap
    for d in row:
        x = decided.get((d.video, d.assoc, d.gap))
        per.setdefault(d.entity, []).append((x is not None, x is not None and x.fixture == d.fixture))
    answered = any(all(agree for _, agree in xs) for xs in per.values())
    left = [e for e, xs in per.items() if not any(known and not agree for known, agree in xs)]
    return answered, left


def row_rule(d) -> str:
    return f"{AMB_RULE if d.ambiguous else ROW_RULE}:{d.file} {d.qid}"


def yield_initial_places(facts: dict, tracks: list, row_places: dict, identities: dict) -> list[str]:
    """An object whose initial place is a curated default while a row decides where it
    stood before its first track (the gap before it: a take answer, an itinerary's first
    'from' the compiler set aside) starts there instead (curated ``ROW_RULE``, citing the
    row). Changes ``facts``; returns the entities changed."""
    first: dict = {}
    for tr in tracks:                      # time order
        if tr.same_as is None:
            first.setdefault(tr.entity, tr)
    changed = []
    for ent, tr in sorted(first.items()):
        d = row_places.get((tr.assoc.video, tr.assoc.assoc_id, 0))
        atom = next((a for a in facts if a[0] == "at" and a[1] == ent), None)
        if d is None or atom is None or facts[atom]["source"] != "curated" or atom[2] == d.fixture:
            continue
        del facts[atom]
        facts[("at", ent, d.fixture)] = curated(row_rule(d))
        changed.append(ent)
    return changed


def mark_disputed_origins(world: EpisodeWorld) -> list[str]:
    """An object whose rows disagree on where it started (a conflict on the source of its
    first track: ``side`` "src" or "initial", ``answer_links._link_answers``) keeps a curated
    initial place, and the fact says so: ``refs.disputed`` names the rows, as a put-down's
    does (``gap_dispute``). Run after every pass that rewrites initial places. Changes
    ``world.facts``; returns the entities marked.

    >>> from types import SimpleNamespace as N
    >>> a = N(video="v", assoc_id="a", tracks=[N(track_id="t0")])
    >>> w = N(tracks=[N(entity="glass", same_as=None, assoc=a, track_id="t0")],
    ...       facts={("at", "glass", "counter"): {"source": "curated", "refs": {"rule": "r"}}},
    ...       conflicts=[{"video": "v", "association": "a", "track": "t0", "side": "src", "answers": [
    ...           {"file": "f", "id": "q11", "fixture": "sink"}, {"file": "g", "id": "it427", "fixture": "hob"}]}])
    >>> mark_disputed_origins(w), w.facts[("at", "glass", "counter")]["refs"]["disputed"]
    (['glass'], 'f q11: sink; g it427: hob')
    """
    bad: dict = {}
    for c in world.conflicts:
        if c["side"] in ("src", "initial"):
            bad.setdefault((c["video"], c["association"], c["track"]), []).extend(c["answers"])
    first: dict = {}
    for tr in world.tracks:                # time order
        if tr.same_as is None:
            first.setdefault(tr.entity, tr)
    marked = []
    for ent, tr in sorted(first.items()):
        rows = bad.get((tr.assoc.video, tr.assoc.assoc_id, tr.track_id)) if tr.track_id == tr.assoc.tracks[0].track_id else None
        atom = next((x for x in world.facts if x[0] == "at" and x[1] == ent), None)
        if not rows or atom is None or world.facts[atom]["source"] != "curated":
            continue
        text = "; ".join(dict.fromkeys(f"{x['file']} {x['id']}: {x['fixture']}" for x in rows))
        world.facts[atom] = {**world.facts[atom], "refs": {**world.facts[atom]["refs"], "disputed": text}}
        marked.append(ent)
    return marked


def gap_dispute(bad: dict, a, k: int) -> str | None:
    """The rows disputing where track ``k`` of ``a`` left its object (its destination or
    the next track's source: one place), as ``"file id: fixture; ..."``, else ``None``
    (``answer_links._dispute_gaps`` unbinds both sides; the put-down records this).

    >>> from types import SimpleNamespace as N
    >>> a = N(assoc_id="a", tracks=[N(track_id="t0"), N(track_id="t1")])
    >>> bad = {("a", "t1"): [{"side": "src", "answers": [{"file": "f", "id": "q1", "fixture": "sink"}]}]}
    >>> gap_dispute(bad, a, 0), gap_dispute(bad, a, 1)
    ('f q1: sink', None)
    """
    own = [c for c in bad.get((a.assoc_id, a.tracks[k].track_id), []) if c["side"] == "dst"]
    nxt = ([c for c in bad.get((a.assoc_id, a.tracks[k + 1].track_id), []) if c["side"] == "src"]
           if k + 1 < len(a.tracks) else [])
    text = "; ".join(f"{x['file']} {x['id']}: {x['fixture']}" for c in own + nxt for x in c["answers"])
    return text or None


def _track_conflict(conflicts: list, lk: dict, before: dict | None = None, after: dict | None = None) -> dict | None:
    """The conflict that keeps a track out of the world, else ``None``: rows that disagree
    only on one end of a track leave its other end, bound undisputed, observed; the
    disputed end stays curated (it is listed as an observed conflict). An end is bound by
    the track's own links (``lk``) or by its neighbour's across the gap: its start by the
    previous track's destination (``before``), its end by the next track's source
    (``after``; P03-20240217-210958's orange cloth: answer 81 and itinerary 471 dispute
    where track 0022a734 ends, answer 147 put it in the sink before it starts). A track
    with no undisputed end is not compiled (P02-20240209-194141's glass: answer 11 and
    itinerary 427 disagree on where it came from, nothing disputes where 427 puts it).

    >>> c = {"side": "src", "answers": []}
    >>> _track_conflict([c], {"dst": ("sink", None)}) is None, _track_conflict([c], {}) is c
    (True, True)
    >>> _track_conflict([c, {"side": "dst", "answers": []}], {}) is c
    True
    >>> d = {"side": "dst", "answers": []}
    >>> _track_conflict([d], {}, before={"dst": ("sink", None)}) is None, _track_conflict([d], {}, after={"src": ("hob", None)}) is d
    (True, True)
    >>> _track_conflict([c], {}, after={"src": ("hob", None)}) is None
    True
    """
    sides = {c["side"] for c in conflicts}
    bound = {"src": "src" in lk or "dst" in (before or {}), "dst": "dst" in lk or "src" in (after or {})}
    other = {"src": "dst", "dst": "src"}
    if len(sides) == 1 and bound.get(other.get(next(iter(sides)), ""), False):
        return None
    return conflicts[0] if conflicts else None


def _fill_links(info: TrackInfo, lk: dict, conflict: dict | None) -> None:
    if "src" in lk:
        info.src, info.src_ref = lk["src"][0], lk["src"][1][1]
        info.src_how, info.src_extra = lk["src"][1][2], lk["src"][1][3]
    if "dst" in lk:
        info.dst, info.dst_ref = lk["dst"][0], lk["dst"][1][1]
        info.dst_how, info.dst_file = lk["dst"][1][2], lk["dst"][1][0]
        info.dst_extra = lk["dst"][1][3]
    if conflict is not None:
        info.conflict = "; ".join(f"{x['file']} {x['id']}: {x['fixture']}" for x in conflict["answers"])

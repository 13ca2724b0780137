"""Initial worlds: the scene's fixtures, the episode's objects and substances, their
initial locations (observed from VQA, else curated by type) and container states, every
fact with its provenance."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .fixtures import default_location
from .grounding.text import CONTAINER_WORDS, PART_WORDS, name_head, strip_postposed, words
from .normalise import canonical_object, fixture_id, resolve_noun
from .readers import FRAME, TWO_FRAMES, Association, Itinerary, LocationAnswer, Recipe
from .row_audit import decisions, uncontested
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


# seconds: the candidates of a time-keyed answer are the objects with a track boundary this
# close to its time (two frames plus rounding, ``readers.TWO_FRAMES``); one candidate binds,
# two are ambiguous. Tracks of one association are one candidate (the nearest is bound).
AMBIGUITY = TWO_FRAMES


def _nearest_per_object(hits: list) -> list:
    """``[(association, track, distance)]`` with one entry per association (its nearest
    track): tracks of one object instance are one candidate of a time-keyed answer.

    >>> from analysis.compiler.readers import Association, Track
    >>> mug = Association("v", "a1", "mug", "mug", (Track("t1", 9.0, 10.0), Track("t2", 10.04, 12.0)))
    >>> [(a.assoc_id, t.track_id) for a, t, _ in _nearest_per_object([(mug, mug.tracks[0], 0.0), (mug, mug.tracks[1], 0.04)])]
    [('a1', 't1')]
    """
    best: dict = {}
    for a, t, d in hits:
        if a.assoc_id not in best or d < best[a.assoc_id][2]:
            best[a.assoc_id] = (a, t, d)
    return sorted(best.values(), key=lambda h: (h[2], h[0].assoc_id, h[1].track_id))


def _link_answers(video: str, assocs: list[Association], answers: list[LocationAnswer],
                  itineraries: list[Itinerary], fixture_ids=frozenset(), offset: float = 0.0):
    """``(per_track, initial, dropped, conflicts, chains)`` for the video's named associations.

    The fifth item maps an association to ``(fixtures of its itinerary chain, {track:
    default destination inside the chain}, the itinerary's moves when their count differs
    from the association's track count, else ())``; the defaults align the moves over
    all the association's tracks (``chain_defaults``); the operations re-align them over
    the tracks actually compiled.
    ``per_track[(assoc_id, track_id)]`` holds ``"src"`` / ``"dst"`` as ``(fixture, ref)``
    with ``ref = (file, question, how)``; ``initial[assoc_id]`` the first "from" of the
    object's itinerary. Unique binding: a time-keyed answer binds only when exactly one
    track of the video (named or not) starts (put) or ends (take), or exactly one object
    has a track starting or ending (itinerary: "the object seen at T"), within two frames (tracks of one association are one candidate)
    of its time; otherwise it is dropped with the reason. One exception, where the
    binding does not matter: *n* VQA questions of one kind at one moment, *n* named
    tracks of *n* objects there, and one answer for all (each track gets it). The whole
    itinerary chain
    is used: when the itinerary has one move per track of the association, move ``i``
    gives track ``i`` its source and its destination. Two observed sources that disagree
    on one track's source or destination are a conflict: neither is used."""
    per_track: dict = {}
    initial: dict = {}
    dropped: list[dict] = []
    conflicts: list[dict] = []
    alltracks = [(a, t) for a in assocs for t in a.tracks]
    cand: dict = {}                      # (assoc, track, side) -> [(fixture, ref)]

    def note(a, t, side, phrase, ref):
        fx = fixture_id(phrase)
        if fx in fixture_ids:
            cand.setdefault((a.assoc_id, t.track_id, side), []).append((fx, ref, phrase))

    def unique(hits, what, qid, time, file):
        # one candidate object (its nearest track) within two frames binds; a second
        # object there makes the answer ambiguous
        if len(hits) == 1 and hits[0][0].name and hits[0][2] <= AMBIGUITY:
            return hits[0][:2]
        why = ("no track starts/ends at the question's time" if not hits else
               "the only matching track is unnamed" if len(hits) == 1 and not hits[0][0].name else
               f"{len(hits)} objects' tracks start/end within two frames ({AMBIGUITY:.4f} s) of the question's time: " +
               ", ".join(f"{a.raw_name} ({t.track_id})" for a, t, _ in hits))
        dropped.append({"kind": "source", "what": f"{file} {qid} ({what})",
                        "reason": f"unique binding: {why}; not bound", "time": round(time + offset, 5),
                        "refs": {"file": file, "id": qid, "video": video}})
        return None

    for ans in answers:
        if ans.video != video:
            continue
        # "take ... from before putting it at T": T is the track's end; the answer is
        # where the track started. "put ... after taking it at T": T is the start.
        key = "end" if ans.kind == "take" else "start"
        hits = _nearest_per_object([(a, t, abs(getattr(t, key) - ans.time)) for a, t in alltracks
                                    if abs(getattr(t, key) - ans.time) <= AMBIGUITY])
        peers = sorted((b for b in answers if b.video == video and b.kind == ans.kind
                        and abs(b.time - ans.time) <= FRAME), key=lambda b: b.vqa_id)
        how = ("VQA: where the object was taken from" if ans.kind == "take" else
               "VQA: where the object was put")
        if (len(hits) > 1 and len(peers) == len(hits) == len({a.assoc_id for a, _, _ in hits})
                and len({fixture_id(b.phrase) for b in peers}) == 1
                and all(a.name and d <= AMBIGUITY for a, _, d in hits)):
            # as many questions as tracks at that moment, one per object (their boxes
            # differ), and every answer the same fixture: each track gets it, whichever
            # question is about which object (two cups put on the table together)
            a, t, _ = sorted(hits, key=lambda h: (h[0].assoc_id, h[1].track_id))[peers.index(ans)]
            note(a, t, "src" if ans.kind == "take" else "dst", ans.phrase,
                 ("3d_perception_object_location.json", ans.vqa_id,
                  f"{how} (one of {len(peers)} questions at this time, for {len(hits)} tracks; "
                  f"every answer is {ans.phrase!r})",
                  {"question": ans.question, "answer": ans.phrase, "video": video}))
            continue
        hit = unique(hits, ans.kind, ans.vqa_id, ans.time, "3d_perception_object_location.json")
        if hit:
            a, t = hit
            note(a, t, "src" if ans.kind == "take" else "dst", ans.phrase,
                 ("3d_perception_object_location.json", ans.vqa_id,
                  "VQA: where the object was taken from" if ans.kind == "take" else
                  "VQA: where the object was put",
                  {"question": ans.question, "answer": ans.phrase, "video": video}))
    chains: dict = {}                    # assoc -> (fixtures of the whole chain, tracks it covers, ref)
    for it in itineraries:
        if it.video != video or not it.moves:
            continue
        # "the object seen at T": the frame shows the object standing still, just before a
        # pick-up or just after a put-down, so T is a track's start or its end (itinerary
        # 20 of P05-20240424-085204 is 0.002 s from a track's end). The answer is about
        # the object, so two tracks of one association are one match (the nearer kept).
        near: dict = {}
        for a, t in alltracks:
            d = min(abs(t.start - it.time), abs(t.end - it.time))
            if d <= AMBIGUITY and (a.assoc_id not in near or d < near[a.assoc_id][2]):
                near[a.assoc_id] = (a, t, d)
        hits = list(near.values())
        hit = unique(hits, "itinerary", it.vqa_id, it.time, "object_motion_object_movement_itinerary.json")
        if not hit:
            continue
        a, t = hit
        initial.setdefault(a.assoc_id, (it.moves[0][0], it.vqa_id))
        # the itinerary covers the object's moves "throughout the video": every track
        rest = a.tracks
        answer = ", then ".join(f"from {x} to {y}" for x, y in it.moves)
        fxs = {fixture_id(p) for mv in it.moves for p in mv}
        last = fixture_id(it.moves[-1][1])
        order = tuple(x for x in dict.fromkeys(fixture_id(p) for mv in it.moves for p in mv)
                      if x != last and x in fixture_ids) + ((last,) if last in fixture_ids else ())
        if order:
            # a chain with a phrase that names no fixture of the scene is not used to
            # judge answers (the answer may be that fixture), only to keep defaults in it
            guess = (chain_defaults(it.moves, [x.track_id for x in rest], fixture_ids)
                     if len(it.moves) != len(rest) else {})
            chains.setdefault(a.assoc_id, (fxs, {x.track_id for x in rest}, it.vqa_id,
                                           {"question": it.question, "answer": answer}, order,
                                           fxs <= set(fixture_ids), guess,
                                           it.moves if len(it.moves) != len(rest) else ()))
        if len(it.moves) == len(rest):
            for k, (tr, (frm, to)) in enumerate(zip(rest, it.moves)):
                ref = ("object_motion_object_movement_itinerary.json", it.vqa_id,
                       f"itinerary move {k + 1} of {len(it.moves)}: from {frm} to {to}",
                       {"question": it.question, "video": video, "answer": answer})
                note(a, tr, "src", frm, ref)
                note(a, tr, "dst", to, ref)
        else:
            # more or fewer tracks than moves: the chain's two ends are still observed,
            # the first track starts at the first 'from' and the object's last track
            # ends at the final 'to' (where the object is at the end of the itinerary)
            n = len(it.moves)
            note(a, rest[0], "src", it.moves[0][0],
                 ("object_motion_object_movement_itinerary.json", it.vqa_id,
                  f"itinerary move 1 of {n}: from {it.moves[0][0]} (first 'from')",
                  {"question": it.question, "video": video, "answer": answer}))
            # with more tracks than moves the final move is made by one of the tracks
            # from the n-th on (the others are handlings in place): where that window
            # starts, so that a unit holding only its end does not claim the move
            window = {"final_move_possible_from": round(rest[n - 1].start, 5)} if len(rest) > n else {}
            note(a, rest[-1], "dst", it.moves[-1][1],
                 ("object_motion_object_movement_itinerary.json", it.vqa_id,
                  f"itinerary move {n} of {n}: to {it.moves[-1][1]} (final 'to', on the object's last track)",
                  {"question": it.question, "video": video, "answer": answer, **window}))
            dropped.append({"kind": "source", "what": f"itinerary {it.vqa_id} ({a.raw_name})",
                            "reason": f"itinerary has {len(it.moves)} moves, the association "
                                      f"{len(rest)} tracks: only the first 'from' and the "
                                      "final 'to' are observed; the compiled tracks between get "
                                      "the moves aligned from the first track as curated defaults "
                                      "(extra tracks stay at the last move's 'from')",
                            "time": round(it.time + offset, 5),
                            "refs": {"file": "object_motion_object_movement_itinerary.json",
                                     "id": it.vqa_id, "video": video}})
    # a VQA answer naming a fixture the object's own itinerary chain never visits
    # disagrees with the itinerary: a conflict, compiled by neither
    for (aid, tid, side), xs in list(cand.items()):
        ch = chains.get(aid)
        if not ch or not ch[5] or tid not in ch[1]:
            continue
        off_chain = [x for x in xs if x[1][0] != "object_motion_object_movement_itinerary.json"
                     and x[0] not in ch[0]]
        if off_chain:
            xs.append((f"chain:{'|'.join(sorted(ch[0]))}",
                       ("object_motion_object_movement_itinerary.json", ch[2],
                        "itinerary chain (the answer's fixture is not in it)", ch[3]),
                       ch[3]["answer"]))
    for (aid, tid, side), xs in sorted(cand.items()):
        if len({fx for fx, _, _ in xs}) > 1:
            conflicts.append({"video": video, "association": aid, "track": tid, "side": side,
                              "answers": [{"file": r[0], "id": r[1], "phrase": ph, "fixture": fx}
                                          for fx, r, ph in xs]})
            continue
        per_track.setdefault((aid, tid), {})[side] = xs[0][:2]
    return per_track, initial, dropped, conflicts, {k: (v[4], v[6], v[7]) for k, v in chains.items()}


def chain_defaults(moves, track_ids: list, fixture_ids=None) -> dict:
    """``{track: curated destination}`` for every track of ``track_ids`` but the last
    (which carries the observed final "to"), when an itinerary's move count differs from
    its association's track count (only the chain's two ends are then observed): the
    moves aligned from the first track forwards (``align_chain`` without anchors).

    >>> chain_defaults((("cupboard", "counter"), ("counter", "hob")), ["t1", "t2", "t3", "t4"])
    {'t1': 'counter', 't2': 'counter', 't3': 'counter'}
    >>> chain_defaults((("a", "b"), ("b", "c"), ("c", "d")), ["t1", "t2", "t3", "t4", "t5"])
    {'t1': 'b', 't2': 'c', 't3': 'c', 't4': 'c'}
    >>> chain_defaults((("a", "b"), ("b", "c"), ("c", "d")), ["t1", "t2"])
    {'t1': 'c'}
    """
    got = align_chain(moves, [None] * len(track_ids), True, fixture_ids)
    return {t: g for t, g in zip(track_ids, got) if g is not None}


def align_chain(moves, observed: list, final_observed: bool = True, fixture_ids=None) -> list:
    """Curated destinations (``None`` where none) for tracks that carry an itinerary
    chain whose moves are not observed one per track.

    ``moves`` are the itinerary's ``(from, to)`` phrases; ``observed[j]`` is the fixture
    an observed source gives track ``j``'s destination (a VQA answer), else ``None``;
    ``final_observed``: the last track is the association's last, where the final "to"
    is observed. The chain leaves out moves within one fixture, so tracks beyond the
    move count are handlings that put the object back where it was picked up. Each
    track either makes the next move of the chain (ends at that move's "to") or stays
    (ends at the next move's "from": handled in place). The moves are aligned from the
    first track forwards: track ``i`` makes move ``i``, the remaining tracks stay at the
    last move's "from" (the object fetched, moved along the chain, then handled in place
    where it is used) and the last track makes the last move; with fewer tracks than
    moves the skipped moves are the ones before the last move (the track before the
    last ends at the last move's "from", which the final move observes as the object's
    place before it). Observed destinations anchor the alignment: the chain is never
    walked backwards to reach one (a track observed at a fixture of the chain fixes how
    far along the chain the object is), the fewest moves are skipped, and the last move
    is left to the last track where the anchors allow it. Anchors that no forward walk
    of the chain satisfies are ignored. A fixture not in ``fixture_ids`` (when given)
    gives no default.

    >>> align_chain((("a", "b"), ("b", "c"), ("c", "d")), [None] * 5)
    ['b', 'c', 'c', 'c', None]
    >>> # a round trip hob -> fridge -> hob, the object observed back at the hob after
    >>> # tracks 2 and 4: one excursion, never a second one after the first return
    >>> align_chain((("hob", "fridge"), ("fridge", "hob")), [None, "hob", None, "hob", None])
    ['hob', None, 'fridge', None, None]
    """
    m, n = len(moves), len(observed)
    if not m or not n:
        return [None] * n
    to = [fixture_id(moves[0][0])] + [fixture_id(b) for _, b in moves]     # position k: after move k
    stay = [fixture_id(a) for a, _ in moves] + [to[m]]                     # handled in place at k
    last = n - 1 if final_observed else None

    def solve(obs):
        def allowed(j):
            if j == last:
                return [m]
            if obs[j] is not None:
                ks = [k for k in range(m + 1) if obs[j] in (to[k], stay[k])]
                if ks:
                    return ks
            return list(range(m + 1))

        def step(j, p, q):
            # (moves skipped, tracks off the rule's shape: the last move made before the
            # last track, or the track before the last not at the last move's 'from',
            # which the final move observes as the object's place before it)
            return (max(0, q - p - 1),
                    int(q == m and j != last) + int(last is not None and j == last - 1 and q != m - 1))

        big = (1 << 30, 1 << 30)
        best = [dict() for _ in range(n)]                 # cost of tracks j+1.. given p_j
        for q in allowed(n - 1):
            best[n - 1][q] = (0, 0)
        for j in range(n - 2, -1, -1):
            for p in allowed(j):
                c = big
                for q, rest in best[j + 1].items():
                    if q >= p:
                        s = step(j + 1, p, q)
                        c = min(c, (s[0] + rest[0], s[1] + rest[1]))
                if c != big:
                    best[j][p] = c
        out, p = [], 0
        for j in range(n):
            cands = []
            for q, rest in best[j].items():
                if q >= p:
                    s = step(j, p, q)
                    cands.append(((s[0] + rest[0], s[1] + rest[1]), q != p + 1, abs(q - p - 1), q))
            if not cands:
                return None
            q = min(cands)[3]
            out.append(to[q] if q > p else stay[q])
            p = q
        return out

    got = solve(observed) or solve([None] * n)
    return [None if (j == last or observed[j] is not None or
                     (fixture_ids is not None and g not in fixture_ids)) else g
            for j, g in enumerate(got)]


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
        if vocab.is_a(f["type"], "storage") or vocab.is_a(f["type"], "enclosed_appliance"):
            # a static fact the rules read: nothing is stirred, chopped or poured in there
            facts[("enclosing", f["id"])] = curated(f"enclosing_by_fixture_type:{f['type']}")
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
    wdropped: list[dict] = []
    wconflicts: list[dict] = []
    identities: dict[str, dict] = {}
    # identity across videos: normalised name -> (video, number of associations with that
    # name in it, entity of the only one when compiled, its last TrackInfo) for the latest
    # video processed that has the name
    last_of_name: dict[str, tuple] = {}
    for video in videos:
        vassocs = assocs.get(video, [])
        name_count: dict[str, int] = {}
        for a in vassocs:
            if a.name and not a.unnamed:
                n = identity_name(a.name)
                name_count[n] = name_count.get(n, 0) + 1
        seen_here: dict[str, tuple] = {}
        per_track, initial, dr, cf, chains = _link_answers(video, vassocs, answers, itineraries,
                                                           fixture_ids, offsets.get(video, 0.0))
        wdropped += dr
        wconflicts += cf
        bad = {(c["association"], c["track"]): c for c in cf}
        itq = {it.vqa_id: {"question": it.question,
                           "answer": ", then ".join(f"from {x} to {y}" for x, y in it.moves)}
               for it in itineraries if it.video == video}
        for a in vassocs:
            if a.unnamed or not a.tracks or vague_name(a.name):
                continue
            stem, leaf, content = track_entity(a.name, nouns, overrides, vocab)
            if stem in fixture_ids:
                # the association is the scene's fixture itself (the "coffee machine" the
                # step text switches on, touched for 0.2 s): one physical appliance, not
                # a second, movable object; a fixture does not move in the world
                for t in a.tracks:
                    wdropped.append({"kind": "track", "what": f"track {t.track_id} ({a.name})",
                                     "reason": f"the association names the scene's fixture {stem} (one "
                                               "object; fixtures do not move in the world): not a new object",
                                     "time": round(t.start + offsets.get(video, 0.0), 5),
                                     "refs": {"file": "assoc_info.json", "association": a.assoc_id,
                                              "track": t.track_id, "video": video}})
                continue
            first = a.tracks[0]
            link = per_track.get((a.assoc_id, first.track_id), {})
            it0 = initial.get(a.assoc_id)
            it_fx = fixture_id(it0[0]) if it0 and fixture_id(it0[0]) in fixture_ids else None
            nm = identity_name(a.name)
            same, why_not = None, None
            prev = last_of_name.get(nm)
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
                    wdropped.append({"kind": "source", "what": f"association {a.assoc_id} ({a.name}) of {video}",
                                     "reason": f"unique binding: no identity ({IDENTITY_RULE}) with the association named "
                                               f"'{nm}' of {pv}: {why_not}; a new entity",
                                     "time": round(first.start + offsets.get(video, 0.0), 5),
                                     "refs": {"file": "assoc_info.json", "id": f"{video}/{a.assoc_id}",
                                              "video": video}})
            if same is not None:
                # the same object as the only one so named in the nearest earlier video:
                # one entity; its state carries over (no new initial place, no content fact)
                ent = same[1]
                identities[f"{video}/{a.assoc_id}"] = {
                    "rule": IDENTITY_RULE, "same_as": f"{same[2].assoc.video}/{same[2].assoc.assoc_id}",
                    "entity": ent, "name": nm}
                notes.append(f"{video}/{a.assoc_id} '{a.name}' is {ent} of {same[0]} ({IDENTITY_RULE}, curated)")
                for t in a.tracks:
                    off = offsets[video]
                    chain, guess, moves = chains.get(a.assoc_id, ((), {}, ()))
                    info = TrackInfo(ent, a, t.track_id, t.start + off, t.end + off, offset=off,
                                     chain=chain, chain_dst=guess.get(t.track_id), chain_moves=moves,
                                     same_as=identities[f"{video}/{a.assoc_id}"]["same_as"])
                    lk = per_track.get((a.assoc_id, t.track_id), {})
                    _fill_links(info, lk, bad.get((a.assoc_id, t.track_id)))
                    tracks.append(info)
                    seen_here[nm] = (ent, info)
                continue
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
            loc, prov = None, None
            if "src" in link and it_fx and link["src"][0] != it_fx and link["src"][1][0] != (
                    "object_motion_object_movement_itinerary.json"):
                wconflicts.append({"video": video, "association": a.assoc_id, "track": first.track_id,
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
            elif it_fx and (a.assoc_id, first.track_id) not in bad:
                loc = it_fx
                prov = observed(file="object_motion_object_movement_itinerary.json", id=it0[1],
                                vqa=it0[1], association=a.assoc_id, video=video,
                                how="itinerary: the object's first 'from'",
                                question=itq.get(it0[1], {}).get("question"),
                                answer=itq.get(it0[1], {}).get("answer"))
            if loc is None:
                loc, rule2 = default_location(leaf, fixtures, work_counter, vocab)
                prov = curated(rule2)
            facts[("at", ent, loc)] = prov
            for t in a.tracks:
                off = offsets[video]
                chain, guess, moves = chains.get(a.assoc_id, ((), {}, ()))
                info = TrackInfo(ent, a, t.track_id, t.start + off, t.end + off, offset=off,
                                 chain=chain, chain_dst=guess.get(t.track_id), chain_moves=moves)
                lk = per_track.get((a.assoc_id, t.track_id), {})
                _fill_links(info, lk, bad.get((a.assoc_id, t.track_id)))
                tracks.append(info)
                seen_here[nm] = (ent, info)
        for nm, cnt in name_count.items():
            got = seen_here.get(nm)
            last_of_name[nm] = (video, cnt, got[0] if got and cnt == 1 else None, got[1] if got else None)
    tracks.sort(key=lambda t: (t.start, t.end, t.entity, t.track_id))

    row_places = decided_places(videos, assocs, answers, itineraries, fixture_ids, tracks, offsets)
    yield_initial_places(facts, tracks, row_places, identities)
    facts[("agent-at", work_counter)] = curated("agent_starts_at_work_counter")
    facts[("hand-empty",)] = curated("agent_starts_hand_empty")
    unnamed = [a for v in videos for a in assocs.get(v, [])
               if a.tracks and (a.unnamed or vague_name(a.name))]
    return EpisodeWorld(episode_id, scene, list(videos), dict(sorted(objects.items())), facts,
                        tracks, work_counter, {}, dict(sorted(substances.items())),
                        names, frozenset(fixture_ids), notes, unnamed, dict(offsets),
                        wdropped, wconflicts, identities, row_places)


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


def row_rule(d) -> str:
    return f"{ROW_RULE}:{d.file} {d.qid}"


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


VAGUE_WORDS = {"something", "thing", "stuff", "clue", "object", "item"}


def vague_name(name: str | None) -> bool:
    """A name that does not say what the object is ("something", "no clue2", "red
    thing"): such a track is not compiled, like an unnamed one.

    >>> vague_name("no clue2"), vague_name("Small thing to throw"), vague_name("pan lid")
    (True, True, False)
    """
    ws = set(re.findall(r"[a-z]+", (name or "").lower()))
    return bool(name) and (bool(ws & VAGUE_WORDS) or ws == {"unknown"})


_PART_WORDS = PART_WORDS        # one rule with grounding.name_head


#: a "stack of bowls" is bowls (moved as one); a "stack of wheat bixies" stays what it was
STACK_WORDS = {"stack", "pile"}


def _is_dish(head: str, vocab: Vocabulary) -> bool:
    leaf = vocab.data["noun_types"].get(head)
    return head in CONTAINER_WORDS or bool(leaf) and any(vocab.is_a(leaf, k) for k in ("vessel", "utensil", "blade"))


#: HD-EPIC noun categories' leaf types that are solid foods, never poured (track_entity)
SOLID_FOOD_TYPES = ("vegetable", "fruit", "meat")
#: words that make a "roll" a roll of material (track_entity)
ROLL_MATERIALS = {"kitchen", "paper", "tissue", "towel", "foil", "film", "cling", "parchment", "liner",
                  "bag", "baking", "toilet", "recyclable", "foodwaste", "freezer", "drawer"}


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
    >>> squash = ClassTable({"squash": "vegetables"}, {"squash": "squash"}, {})
    >>> track_entity("remaining squash", squash, v.overrides, v)
    ('squash', 'vegetable', None)
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
        if left and right and (left[-1] in _PART_WORDS or (left[-1] in STACK_WORDS and _is_dish(right[-1], vocab))):
            ws, head = right, right[-1]
        elif left and right and left[-1] in CONTAINER_WORDS:
            ws, head = right + [left[-1]], left[-1]
            content = right[-1]
        else:
            ws = (left or []) + (right or [])
            head = left[-1] if left else (right[-1] if right else "")
    else:
        ws = words(base)
        core = strip_postposed(ws)       # the stem keeps its colour; the type does not
        head = core[-1] if core else ""
        if len(core) > 1 and head in CONTAINER_WORDS:
            content = core[-2]
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
    if head == "roll" and set(ws) & ROLL_MATERIALS:
        # HD-EPIC's "roll" class holds bread rolls and rolls of kitchen paper alike: a roll
        # of a material is a supply ("kitchen roll", "roll of cling film"), never a food
        leaf = "other_supply"
    if head in CONTAINER_WORDS and len(ws) > 1 and not vocab.is_a(leaf, "sealable_container"):
        leaf = "other_sealable"          # "mango pot", "coffee jug" hold a content: not a vessel
    if vocab.is_a(leaf, "substance") and head:
        # the vocabulary's substance word may also name a solid food: "squash" is the
        # drink poured from a bottle and the vegetable cut into pieces. A tracked thing
        # is never a liquid by itself, so HD-EPIC's own class decides: filed under a
        # solid food category (squash: vegetables), it is that food
        key, _ = resolve_noun(head, nouns)
        solid = vocab.data["category_types"].get(nouns.category.get(key)) if key is not None else None
        if solid in SOLID_FOOD_TYPES:
            leaf = solid
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


UNLOAD_RULE = "taken_out_of_the_dishwasher_in_an_unload_row"
#: what a dishwasher holds: crockery, cutlery, utensils (never a food or a supply)
DISHWASHER_KINDS = ("vessel", "utensil", "blade")
_UNLOAD_RE = re.compile(r"\b(?:unload\w*|empty\w*)\s+(?:the\s+)?dishwasher\b", re.IGNORECASE)


def unload_sources(world: EpisodeWorld, activities, vocab: Vocabulary) -> list[str]:
    """Objects the person takes out of the dishwasher: an object whose first track starts
    inside an activity row whose label says the dishwasher is unloaded or emptied
    ("Unload dishwasher and put clean crockery away"), that a dishwasher holds
    (``DISHWASHER_KINDS``), and whose initial place is only a curated storage default,
    starts in the scene's only dishwasher instead (curated ``UNLOAD_RULE``, citing the
    row): fetching the clean mugs from their cupboard and putting them back there would
    invert the row. Changes ``world.facts``; returns the
    entities changed."""
    dws = sorted(f for f in world.fixture_ids if vocab.is_a(world.objects.get(f, ""), "dishwasher"))
    rows = [a for a in activities if a.video in world.videos and _UNLOAD_RE.search(a.label)]
    if len(dws) != 1 or not rows:
        return []
    first: dict = {}
    for tr in world.tracks:                     # time order
        first.setdefault(tr.entity, tr)
    changed = []
    for ent, tr0 in sorted(first.items()):
        row = next((a for a in rows if a.video == tr0.assoc.video and a.start <= tr0.start < a.end), None)
        atom = next((a for a in world.facts if a[0] == "at" and a[1] == ent), None)
        prov = world.facts.get(atom) if atom else None
        leaf = world.objects.get(ent, "")
        if row is None or prov is None or prov["source"] != "curated" \
                or not prov["refs"].get("rule", "").startswith("default_locations") \
                or not vocab.is_a(world.objects.get(atom[2], ""), "storage") \
                or not any(vocab.is_a(leaf, k) for k in DISHWASHER_KINDS):
            continue
        del world.facts[atom]
        world.facts[("at", ent, dws[0])] = curated(f"{UNLOAD_RULE}:{row.source_row}")
        changed.append(ent)
    return changed


TIDY_RULE = "first_handled_in_a_tidy_up_row_starts_out_of_storage"
SPENT_RULE = "spent_item_starts_out_of_storage"
# a row that only puts things back, unpacks, cleans or clears: what it first handles was out
_TIDY_RE = re.compile(r"\b(?:clean\w*|clear\w*|tid(?:y|ied|ying)\w*|away|unpack\w*|wash\w*\s+up|"
                      r"wash\w*\s+(?:the\s+)?dishes|load\w*\s+(?:the\s+)?dishwasher)\b", re.IGNORECASE)
# ... unless the label also fetches, prepares or serves something (which may come from storage)
_FETCH_RE = re.compile(r"\b(?:get\w*|take\w*|fetch\w*|set|setting|serv\w*|prepar\w*|mak\w*|cook\w*|"
                       r"read\w*|measur\w*|slic\w*|chop\w*|add\w*|weigh\w*|peel\w*|mix\w*|fry\w*|"
                       r"bak\w*|boil\w*|drink\w*|eat\w*|pour\w*|refill\w*|fill\w*|plat\w*|check\w*|"
                       r"wait\w*|unload\w*|empty\w*|continu\w*|replac\w*)\b", re.IGNORECASE)
#: what a tidy-up row puts back: containers, food, devices and cutlery; never the
#: cleaning tools and supplies the row may fetch from storage (a sponge, a cloth, foil)
TIDY_KINDS = ("container", "food", "device", "blade", "fork", "spoon", "spatula", "ladle",
              "masher", "whisk_tool", "tongs", "grater", "peeler", "rolling_pin", "other_utensil")
#: words of a name that say the object is spent, as an adjective anywhere ("dirty
#: bowl", "used tea bag") or as its head noun ("butter packaging", "slice of potato peel",
#: "eggshell halves"; not "food waste bin": its head is the bin)
SPENT_ADJECTIVES = {"used", "dirty", "discarded"}
SPENT_NOUNS = {"rubbish", "waste", "trash", "wrapper", "wrapping", "packaging", "peel", "peeling",
               "scrap", "leftover", "shell", "eggshell", "skin", "rind", "stalk", "core",
               "ground"}     # singular: name_head's words
#: tools named by a spent noun ("wooden pizza peel": the vocabulary names only the bare one)
NOT_SPENT = ("pizza peel",)
#: words that say a food is a cut piece: it exists only once cut, on a work surface
#: (never "slice": bread, ham and cheese are bought sliced and kept so)
CUT_WORDS = {"piece", "pieces", "chunk", "chunks", "cut", "chopped", "diced", "peeled", "grated",
             "minced", "crushed"}
CUT_RULE = "cut_food_starts_out_of_storage"


def spent(names: list[str], leaf: str, vocab: Vocabulary) -> bool:
    """A name says the object is used up or waste ("used tea bag", "butter packaging",
    "egg shell"); "empty" says so of a sealed food container only ("empty milk carton";
    an "empty glass" is clean).

    >>> v = Vocabulary.load()
    >>> [spent([n], t, v) for n, t in [("used tea bag", "tea_bag"), ("empty carton", "carton"),
    ...     ("empty glass", "glass"), ("food waste bin", "other_supply"), ("pizza peel", "other_utensil")]]
    [True, True, False, False, False]
    """
    for n in names:
        ws = set(re.findall(r"[a-z]+", n.lower()))
        if ws & SPENT_ADJECTIVES or ("empty" in ws and vocab.is_a(leaf, "sealable_container")):
            return True
        head = words(n)
        while len(head) > 1 and head[-1] in PART_WORDS | {"halve"}:   # "eggshell halves" (words: halve)
            head = head[:-1]
        if (name_head(n) in SPENT_NOUNS or (head and head[-1] in SPENT_NOUNS)) \
                and not vocab.is_a(leaf, "utensil") and not n.lower().rstrip("0123456789 ").endswith(NOT_SPENT):
            return True
    return False


def cut_piece(names: list[str], leaf: str, vocab: Vocabulary) -> bool:
    """A food named as a cut piece ("piece of tomato", "cut pieces of butter", "pile of
    peeled carrots"): it is made on a work surface, not kept in storage; bread (bought
    as slices and pieces of a loaf) is left alone.

    >>> v = Vocabulary.load()
    >>> [cut_piece([n], t, v) for n, t in [("piece of tomato", "vegetable"), ("tomato", "vegetable"),
    ...     ("piece of bread", "bread"), ("slice of egg", "egg"), ("piece of foil", "foil")]]
    [True, False, False, False, False]
    """
    if not vocab.is_a(leaf, "food") or vocab.is_a(leaf, "bread"):
        return False
    return any(set(re.findall(r"[a-z]+", n.lower())) & CUT_WORDS for n in names)


def out_of_storage_sources(world: EpisodeWorld, activities, vocab: Vocabulary) -> list[str]:
    """Objects whose initial place is only a curated storage default, but which the rows
    show were out: a spent object (``spent``: a used tea bag is not fetched from a
    cupboard), a cut piece of food (``cut_piece``: the tomato's pieces are not in the
    fridge), or one first handled inside a row that only tidies up or unpacks (``_TIDY_RE``, and
    no fetching verb in the label: "Put stuff away and load dishwasher") and of a kind a
    tidy-up puts back (``TIDY_KINDS``). They start on the work counter instead (curated
    ``SPENT_RULE``, ``CUT_RULE`` or ``TIDY_RULE``, citing the row): the reference would otherwise take
    the used mug out of its cupboard to put it in the dishwasher. Run after
    ``unload_sources``. Changes ``world.facts``; returns the entities changed."""
    rows = [a for a in activities if a.video in world.videos and _TIDY_RE.search(a.label)
            and not _FETCH_RE.search(a.label)]
    first: dict = {}
    for tr in world.tracks:                     # time order
        first.setdefault(tr.entity, tr)
    changed = []
    for ent, tr0 in sorted(first.items()):
        atom = next((a for a in world.facts if a[0] == "at" and a[1] == ent), None)
        prov = world.facts.get(atom) if atom else None
        leaf = world.objects.get(ent, "")
        if prov is None or prov["source"] != "curated" \
                or not prov["refs"].get("rule", "").startswith("default_locations") \
                or not vocab.is_a(world.objects.get(atom[2], ""), "storage"):
            continue
        if spent(world.names.get(ent, []), leaf, vocab):
            rule = SPENT_RULE
        elif cut_piece(world.names.get(ent, []), leaf, vocab):
            rule = CUT_RULE
        else:
            row = next((a for a in rows if a.video == tr0.assoc.video and a.start <= tr0.start < a.end),
                       None)                # episode time, both
            if row is None or not any(vocab.is_a(leaf, k) for k in TIDY_KINDS):
                continue
            rule = f"{TIDY_RULE}:{row.source_row}"
        del world.facts[atom]
        world.facts[("at", ent, world.work_counter)] = curated(rule)
        changed.append(ent)
    return changed

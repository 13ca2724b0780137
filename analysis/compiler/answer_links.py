"""Observed places of tracked objects (paper appendix A.1: source-step links keep the
temporal and object evidence): binding VQA object-location answers and itineraries to the
tracks of one video (unique binding, within two frames), and aligning an itinerary's chain
of moves over the tracks when their counts differ (curated defaults)."""
from __future__ import annotations

from dataclasses import dataclass, field

from .normalise import fixture_id
from .readers import FRAME, TWO_FRAMES, Association, Itinerary, LocationAnswer

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


@dataclass
class _Links:
    """One video's binding in progress: the candidate ``(fixture, ref, phrase)`` of each
    ``(association, track, side)``, the itineraries' first 'from' and chains, the drops."""
    video: str
    offset: float
    fixture_ids: frozenset
    alltracks: list
    cand: dict = field(default_factory=dict)      # (assoc, track, side) -> [(fixture, ref, phrase)]
    initial: dict = field(default_factory=dict)
    dropped: list = field(default_factory=list)
    chains: dict = field(default_factory=dict)    # assoc -> (fixtures of the whole chain, tracks it covers, ref)

    def note(self, a, t, side, phrase, ref):
        fx = fixture_id(phrase)
        if fx in self.fixture_ids:
            self.cand.setdefault((a.assoc_id, t.track_id, side), []).append((fx, ref, phrase))

    def unique(self, hits, what, qid, time, file):
        # one candidate object (its nearest track) within two frames binds; a second
        # object there makes the answer ambiguous
        if len(hits) == 1 and hits[0][0].name and hits[0][2] <= AMBIGUITY:
            return hits[0][:2]
        why = ("no track starts/ends at the question's time" if not hits else
               "the only matching track is unnamed" if len(hits) == 1 and not hits[0][0].name else
               f"{len(hits)} objects' tracks start/end within two frames ({AMBIGUITY:.4f} s) of the question's time: " +
               ", ".join(f"{a.raw_name} ({t.track_id})" for a, t, _ in hits))
        self.dropped.append({"kind": "source", "what": f"{file} {qid} ({what})",
                             "reason": f"unique binding: {why}; not bound", "time": round(time + self.offset, 5),
                             "refs": {"file": file, "id": qid, "video": self.video}})
        return None


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
    st = _Links(video, offset, fixture_ids, [(a, t) for a in assocs for t in a.tracks])
    _bind_answers(st, answers)
    _bind_itineraries(st, itineraries)
    return _settle(st)


def _bind_answers(st: _Links, answers: list[LocationAnswer]) -> None:
    """VQA object-location answers: "take" at a track's end, "put" at a track's start."""
    video, alltracks, note, unique = st.video, st.alltracks, st.note, st.unique
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


def _bind_itineraries(st: _Links, itineraries: list[Itinerary]) -> None:
    """Itineraries: "the object seen at T" at a track's start or end; the chain of moves."""
    video, offset, fixture_ids, alltracks = st.video, st.offset, st.fixture_ids, st.alltracks
    note, unique, initial, chains, dropped = st.note, st.unique, st.initial, st.chains, st.dropped
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


def _settle(st: _Links) -> tuple:
    """Conflicts (two observed sources disagree on a side of a track: neither used) and
    the bound sides, as ``_link_answers`` returns them."""
    video, cand, chains, initial, dropped = st.video, st.cand, st.chains, st.initial, st.dropped
    per_track: dict = {}
    conflicts: list[dict] = []
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
    _dispute_gaps(st, per_track, conflicts)
    return per_track, initial, dropped, conflicts, {k: (v[4], v[6], v[7]) for k, v in chains.items()}


def _dispute_gaps(st: _Links, per_track: dict, conflicts: list) -> None:
    """A track's destination and its next track's source are one place (the gap between
    them): when rows dispute one side, the other side's row, even agreeing with one of
    them (an itinerary's next move's 'from'), observes a disputed place. It is unbound
    too (the operations fall back to a curated place) and listed in the conflict.

    >>> from types import SimpleNamespace as N
    >>> a = N(assoc_id="a", tracks=[N(track_id="t0"), N(track_id="t1")])
    >>> st = _Links("v", 0.0, frozenset(), [(a, t) for t in a.tracks])
    >>> pt = {("a", "t1"): {"src": ("sink", ("it.json", "it_1", "move 2", {}))}}
    >>> cf = [{"association": "a", "track": "t0", "side": "dst", "answers": []}]
    >>> _dispute_gaps(st, pt, cf); pt, [x["id"] for x in cf[0]["answers"]]
    ({('a', 't1'): {}}, ['it_1'])
    """
    order: dict = {}
    for a, t in st.alltracks:
        order.setdefault(a.assoc_id, []).append(t.track_id)
    for c in conflicts:
        tids = order.get(c["association"], [])
        k = tids.index(c["track"]) if c["track"] in tids else -1
        j = k + 1 if c["side"] == "dst" else k - 1
        if k < 0 or not 0 <= j < len(tids):
            continue
        other = "src" if c["side"] == "dst" else "dst"
        bound = per_track.get((c["association"], tids[j]), {})
        if other in bound:
            fx, ref = bound.pop(other)
            if not any(x["id"] == ref[1] and x["fixture"] == fx for x in c["answers"]):
                c["answers"].append({"file": ref[0], "id": ref[1], "phrase": ref[2], "fixture": fx})


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


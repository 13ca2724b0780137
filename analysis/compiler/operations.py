"""Reference operations (paper section 3: executable operations linked to source
evidence): the grounded source events turned into executor actions, in time
order, each simulated by :class:`Sim` (the executor's rules) as it is emitted.

Events:

* a selected object track gives a pick-up at the track's start and a put-down at its end
  (at the destination a VQA answer observes, else a curated one);
* a grounded add (:mod:`analysis.compiler.grounding`) gives pour / add_ingredient /
  empty_into / insert at the add's time, while its ingredient track is in the hand;
* a grounded step gives the step's key action (stir, chop, press_button, ...) at the time
  the evidence gives.

One hand: tracks that overlap in time cannot all be held. Tracks a grounded event needs in
the hand are selected first, then the others in time order; a track that overlaps an
already selected one is dropped (``dropped.jsonl``: the reason names the other track).
A glove or mitt is worn, not held (:func:`worn`): its tracks are not compiled, so the
things the gloved hands handle are.

Provenance is per argument: every argument of an operation records ``observed`` with its
source reference (file, ID, time) or ``curated`` with the rule. An operation is
``observed`` when all its arguments are; inserted navigation and open/close steps are
curated. Every operation's ``refs.time`` is its time in the episode, and observed
operations are emitted in non-decreasing time.
"""
from __future__ import annotations

from dataclasses import replace

from .compiled_tracks import gap_key, out_after_uncompiled_first_track, realign_chains
from .grounding import TEXT_VESSEL_RULE, Grounding
from .one_hand import OVERLAP_EPS, select_tracks, worn
from .op_builder import OpBuilder
from .provenance import cur
from .sim import Sim
from .worlds import EpisodeWorld, row_rule


def _food_rows(world: EpisodeWorld, grounding: Grounding):
    """``(add, food track, row)`` per food add whose food's track ends with it and whose gap
    after that track an uncontested row decides, naming a fixture of the world."""
    by_id = {t.track_id: t for t in world.tracks}
    for p in grounding.planned:
        tr = by_id.get(p.hold_track) if p.action == "add_ingredient" else None
        d = world.row_places.get(gap_key(tr, after=True)) if tr is not None else None
        if d is not None and d.fixture in world.objects:
            yield p, tr, d


def text_vessel_places(world: EpisodeWorld, grounding: Grounding) -> list[str]:
    """An untracked vessel the step text names (``grounding.TEXT_VESSEL_RULE``: its place
    curated, the work counter) stands where a row puts a food added into it: the food's
    track ends with the add, and the uncontested row deciding the gap after that track
    (VQA 200: the ginger put "on the hob", into the pot) names the vessel's fixture. All
    such rows must agree; the place stays curated (``ROW_RULE``, citing the row). Changes
    ``world.facts``; returns the vessels changed."""
    found: dict = {}
    for p, _, d in _food_rows(world, grounding):
        found.setdefault(p.roles.get("c"), set()).add(d)
    changed = []
    for ent, ds in sorted(found.items(), key=lambda kv: str(kv[0])):
        atom = next((a for a in world.facts if a[0] == "at" and a[1] == ent), None)
        if atom is None or world.facts[atom]["refs"].get("rule") != TEXT_VESSEL_RULE \
                or len({d.fixture for d in ds}) != 1:
            continue
        d = min(ds, key=lambda d: (d.g0, d.qid))
        del world.facts[atom]
        world.facts[("at", ent, d.fixture)] = cur(row_rule(d))
        changed.append(ent)
    return changed


def vessel_row_places(world: EpisodeWorld, grounding: Grounding) -> list[str]:
    """A tracked vessel whose place during an add is a curated default stands where the
    uncontested row deciding the gap after the added food's track puts the food (VQA 200:
    the ginger put "on the hob", into the red saucepan standing there): the row decides the
    gap after the vessel's last track before the add (no observed destination, no next
    track's observed source, no row of its own), so its put-down yields to it (curated
    ``ROW_RULE``, citing the food's row). All such rows must agree. Adds
    ``world.row_places``; returns the vessels placed."""
    found: dict = {}
    for p, tr, d in _food_rows(world, grounding):
        ent = p.roles.get("c")
        trs = [t for t in world.tracks if t.entity == ent and t.assoc.video == tr.assoc.video]
        before = [t for t in trs if t.end <= p.time]
        if not before or any(t.start <= p.time <= t.end for t in trs):
            continue
        last = max(before, key=lambda t: (t.end, t.track_id))
        nxt = [t for t in trs if t.start > last.end]
        if last.dst or (nxt and min(nxt, key=lambda t: t.start).src) or gap_key(last, after=True) in world.row_places:
            continue
        found.setdefault((ent, last.track_id), (last, set()))[1].add(d)
    changed = []
    for (ent, _), (last, ds) in sorted(found.items()):
        if len({d.fixture for d in ds}) != 1:
            continue
        d = min(ds, key=lambda d: (d.g0, d.qid))
        k = gap_key(last, after=True)
        nxt = [t.start for t in world.tracks if t.assoc.assoc_id == last.assoc.assoc_id
               and t.assoc.video == last.assoc.video and t.start > last.end]
        world.row_places[k] = replace(d, video=k[0], assoc=k[1], gap=k[2], entity=ent, g0=last.end,
                                      g1=min(nxt) if nxt else float("inf"))
        changed.append(ent)
    return changed


def _blocked_why(tr, other, placed: set, needed: set) -> str:
    """Why the one-hand model dropped ``tr`` for the held track ``other``."""
    span = f"{other.track_id} ({other.entity}, {other.start:.1f}-{other.end:.1f}s)"
    if (other.start > tr.start + OVERLAP_EPS and tr.end >= other.end - OVERLAP_EPS
            and other.track_id in placed - needed and tr.track_id not in placed):
        return (f"held with track {span}, whose destination a row decides while none decides this one's: "
                "that one keeps the hand (one-hand model)")
    if tr.end <= other.end + OVERLAP_EPS:
        return f"ends while track {span} is held (nested in it: the other hand; one-hand model)"
    return (f"starts while track {span} is held and its grounded event comes before the hand is free "
            f"(track {tr.start:.1f}-{tr.end:.1f}s; one-hand model)")


def build_operations(world: EpisodeWorld, grounding: Grounding, sim: Sim) -> OpBuilder:
    """Emit every selected track and grounded event in time order."""
    text_vessel_places(world, grounding)
    vessel_row_places(world, grounding)
    needed = {p.hold_track for p in grounding.planned if p.hold_track and p.kind != "snippet"}
    # a snippet's track yields to every add's and step's (one_hand.select_tracks)
    weak = {p.hold_track for p in grounding.planned if p.hold_track and p.kind == "snippet"}
    by_ent: dict[str, list] = {}
    for tr in world.tracks:
        by_ent.setdefault(tr.entity, []).append(tr)
    next_src = {}
    for ent, trs in by_ent.items():
        for x, y in zip(trs, trs[1:]):
            if y.src and y.assoc.video == x.assoc.video:
                vqa = (y.src_how or "").startswith("VQA")
                next_src[x.track_id] = (y.src, y.src_ref, y.end if vqa else y.start,
                                        "3d_perception_object_location.json" if vqa else
                                        "object_motion_object_movement_itinerary.json", y.src_how,
                                        y.src_extra, y)
    for tr in world.tracks:
        nxt = next_src.get(tr.track_id)
        if tr.dst and nxt and nxt[0] != tr.dst and not tr.conflict:
            # the put answer (or itinerary) and the next track's source disagree: neither
            world.conflicts.append({"video": tr.assoc.video, "association": tr.assoc.assoc_id,
                                    "track": tr.track_id, "side": "dst", "answers": [
                                        {"file": tr.dst_file, "id": tr.dst_ref, "fixture": tr.dst},
                                        {"file": nxt[3], "id": nxt[1], "fixture": nxt[0]}]})
            tr.conflict = f"{tr.dst_file} {tr.dst_ref}: {tr.dst}; {nxt[3]} {nxt[1]}: {nxt[0]}"
    b = OpBuilder(world, sim)
    for tr in world.tracks:
        if not tr.conflict and worn(tr.assoc.name or ""):
            # one-hand model: a worn glove takes no hand, so it is not compiled as held
            # (the tracks handled inside it, by the gloved hands, are)
            b.drop("track", f"track {tr.track_id} ({tr.entity})",
                   "a glove or mitt is worn on the hand, not held in it: not compiled", tr.start,
                   file="assoc_info.json", association=tr.assoc.assoc_id, track=tr.track_id,
                   video=tr.assoc.video)
        elif tr.conflict:
            b.drop("track", f"track {tr.track_id} ({tr.entity})",
                   f"observed sources disagree ({tr.conflict}): not compiled", tr.start,
                   file="assoc_info.json", association=tr.assoc.assoc_id, track=tr.track_id,
                   video=tr.assoc.video)
    busy_times: dict[str, list] = {}
    for p in grounding.planned:
        if p.hold_track:
            busy_times.setdefault(p.hold_track, []).append(p.time)
    placed = {t.track_id for t in world.tracks if t.dst or t.track_id in next_src}
    chosen, blocked, pick_time, juggled = select_tracks([t for t in world.tracks if not t.conflict
                                                         and not worn(t.assoc.name or "")],
                                                        needed, busy_times, placed, weak)
    realign_chains(chosen, next_src, world.fixture_ids)
    b.compiled = {t.track_id for t in chosen}
    if out_after_uncompiled_first_track(world, chosen):
        b.facts = frozenset(world.facts)
        b.place = {a[1]: p for a, p in world.facts.items() if a[0] in ("at", "in") and a[1] in b.objects}
    for tr, other in blocked:
        if other is None:
            b.drop("track", f"track {tr.track_id} ({tr.entity})", "track shorter than 0.05 s", tr.start,
                   file="assoc_info.json", association=tr.assoc.assoc_id, track=tr.track_id,
                   video=tr.assoc.video)
            continue
        b.drop("track", f"track {tr.track_id} ({tr.entity})", _blocked_why(tr, other, placed, needed), tr.start,
               file="assoc_info.json", association=tr.assoc.assoc_id, track=tr.track_id, video=tr.assoc.video)
    events = []
    for i, tr in enumerate(chosen):
        outer = juggled.get(tr.track_id)
        # a track held inside another is picked up after the outer one and put down
        # before it, also when the two start or end together
        events.append((pick_time[tr.track_id], 1, 1 if outer else 0, i, "pick", tr))
        events.append((round(tr.end, 3), 0, 0 if outer else 1, i, "put", tr))
    for i, p in enumerate(grounding.planned):
        events.append((p.time, 2, 0, i, "plan", p))
    # a track not compiled whose end a row decides: the object is moved there once the
    # hand is free, before the gap the row decides ends (OpBuilder.settle)
    for i, tr in enumerate(world.tracks):
        d = b.places.get(gap_key(tr, after=True))
        if tr.track_id not in b.compiled and d is not None and d.g1 > tr.end:
            events.append((round(tr.end, 3), 3, 0, i, "settle", (tr, d)))
    events.sort(key=lambda e: e[:4])
    picked = set()
    pending: list = []
    for n, (t, _, _, _, kind, x) in enumerate(events):
        b.event = n
        b.now = t
        if kind == "settle":
            pending.append(x)
            pending = [(tr, d) for tr, d in pending if not b.settle(tr, d, t)]
            continue
        if kind == "pick":
            outer = juggled.get(x.track_id)
            if outer is not None and ("holding", outer.entity) in b.facts:
                b.set_down(outer, t)
            if b.pick(x, t):
                picked.add(x.track_id)
            else:
                b.compiled.discard(x.track_id)
                b.drop("track", f"track {x.track_id} ({x.entity})", "pick-up not executable", x.start,
                       file="assoc_info.json", association=x.assoc.assoc_id, track=x.track_id,
                       video=x.assoc.video)
        elif kind == "put":
            if x.track_id in picked:
                b.put_down(x, next_src)
            outer = juggled.get(x.track_id)
            if outer is not None and outer.entity in b.held_aside:
                b.pick_again(outer, t)
        else:
            why = b.emit(x)
            if why:
                b.drop(x.kind if x.kind in ("add", "snippet") else "cue", x.what, why, x.time, **x.refs)
        if pending and ("hand-empty",) in b.facts:
            # the hand is free after this event: settle what waits, while its gap lasts
            pending = [(tr, d) for tr, d in pending if d.g1 > t + OVERLAP_EPS and not b.settle(tr, d, t)]
    return b

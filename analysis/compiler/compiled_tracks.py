"""What follows from which tracks the one-hand model compiles (docs/compiler.md,
"Operations"; paper section 3: initialised world graphs): itinerary chains re-aligned
over the compiled tracks, the gaps between an association's tracks, and objects whose
first track is not compiled starting out on the work counter."""
from __future__ import annotations

from .answer_links import align_chain
from .out_of_storage import UNLOAD_RULE
from .provenance import cur
from .worlds import EpisodeWorld

def realign_chains(chosen, next_src: dict, fixture_ids) -> None:
    """Curated chain defaults over the tracks that are compiled.

    An itinerary whose move count differs from its association's track count observes
    only its two ends; the tracks between get the moves aligned from the first track
    forwards (``worlds.align_chain``). Tracks the one-hand model drops carry no put-down,
    so a move aligned to one of them would vanish from the compiled world (the object
    would skip chain fixtures, and the final observed 'to' could become a no-op). The
    moves are therefore aligned over the association's *compiled* tracks in time order,
    anchored on the destinations observed for them (a VQA put answer, or the take answer
    of the object's next track); when the association's last track (the observed final
    'to') is not compiled, the last compiled track is a middle track too."""
    by_assoc: dict = {}
    for tr in chosen:
        if tr.chain_moves:
            by_assoc.setdefault((tr.assoc.video, tr.assoc.assoc_id), []).append(tr)
    for trs in by_assoc.values():
        trs.sort(key=lambda t: (t.start, t.end, t.track_id))
        obs = [t.dst or (next_src[t.track_id][0] if t.track_id in next_src else None) for t in trs]
        final = trs[-1].track_id == trs[0].assoc.tracks[-1].track_id
        for t, g in zip(trs, align_chain(trs[0].chain_moves, obs, final, fixture_ids)):
            t.chain_dst = g


OUT_RULE = "out_on_the_work_counter_after_a_track_not_compiled"
#: a curated move to the place a row decides after a track not compiled (``OpBuilder.settle``)
SETTLE_RULE = "moved_where_a_row_puts_it_after_a_track_not_compiled"


#: the same catch-up to the fixture of an ambiguous row, which names no one object: only where
#: no other candidate's compiled track answers the row (``<AMB_SETTLE_RULE>:<file> <question>``)
AMB_SETTLE_RULE = "moved_where_an_ambiguous_row_puts_one_of_its_candidates_after_a_track_not_compiled"


class AmbiguousRows:
    """An episode's ambiguous rows (``EpisodeWorld.amb_places``: one decision per candidate
    object and gap) and each association's tracks, to tell which row needs a catch-up."""

    def __init__(self, world: EpisodeWorld):
        self.rows: dict = {}
        for d in world.amb_places.values():
            self.rows.setdefault((d.file, d.qid), []).append(d)
        self.bound = world.amb_bound
        self.assoc_tracks = {(tr.assoc.video, tr.assoc.assoc_id): tr.assoc.tracks for tr in world.tracks}

    def forced(self, d, compiled: set) -> bool:
        """Whether the row of candidate decision ``d`` needs the catch-up of ``d``'s object:
        every other candidate of the row with a gap of its own has a track bounding that gap
        that is not ``compiled`` (track IDs), so no compiled put-down or pick-up answers the
        row (itinerary 78 of P03-20240216-084005: both spoons' tracks dropped, and the row
        says one went to the cupboard). ``False`` when a row gives no other candidate a gap
        of its own (an unambiguous row decides the others' gaps), unless it decides them
        elsewhere: then the row is ``d``'s alone (``EpisodeWorld.amb_bound``)."""
        if bound := self.bound.get((d.file, d.qid)):
            # the others' own uncontested rows put them elsewhere (worlds.eliminate)
            return bound == d.entity
        others = [e for e in self.rows.get((d.file, d.qid), ()) if e.entity != d.entity]
        if not others:
            return False
        for e in others:
            tracks = self.assoc_tracks.get((e.video, e.assoc), ())
            k = e.gap - 1 if e.side == "after" else e.gap
            if 0 <= k < len(tracks) and tracks[k].track_id in compiled:
                return False
        return True


def gap_key(tr, after: bool) -> tuple:
    """``(video, association, gap)`` of the gap before (or after) ``tr`` among its
    association's tracks: the key of ``EpisodeWorld.row_places``."""
    k = next(i for i, t in enumerate(tr.assoc.tracks) if t.track_id == tr.track_id)
    return (tr.assoc.video, tr.assoc.assoc_id, k + 1 if after else k)


def out_after_uncompiled_first_track(world: EpisodeWorld, chosen) -> list[str]:
    """Entities whose first track in the rows is not compiled (the one-hand model dropped
    it) but a later one is, and whose initial place is a curated storage default: they
    start on the work counter instead (curated ``OUT_RULE``), because the rows show the
    object already handled before its first compiled pick-up, so fetching it from its
    default storage then would contradict them (a stirrer taken out in a step's prep,
    held inside another track, is not in its drawer when the step stirs with it).
    Changes ``world.facts``; returns the entities changed."""
    ids = {t.track_id for t in chosen}
    first: dict = {}
    for tr in world.tracks:                     # time order
        first.setdefault(tr.entity, tr)
    compiled = {t.entity for t in chosen}
    changed = []
    for ent, tr0 in sorted(first.items()):
        if tr0.track_id in ids or tr0.conflict or ent not in compiled:
            continue
        atom = next((a for a in world.facts if a[0] == "at" and a[1] == ent), None)
        prov = world.facts.get(atom) if atom else None
        if (prov is None or prov["source"] != "curated" or atom[2] == world.work_counter
                or not prov["refs"].get("rule", "").startswith(("default_locations", UNLOAD_RULE))):
            continue
        del world.facts[atom]
        world.facts[("at", ent, world.work_counter)] = cur(f"{OUT_RULE}:{tr0.track_id}")
        changed.append(ent)
    return changed

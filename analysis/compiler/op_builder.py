"""The operation builder (paper section 3: executable operations simulated as they are
compiled): the state of one episode's reference replay and how each source event (a
track's pick-up and put-down, a grounded add, step or snippet) becomes executor actions,
with the navigation and open/close steps they need; provenance per argument. The event
order and the one-hand selection are :mod:`analysis.compiler.operations`'."""
from __future__ import annotations

from dataclasses import dataclass, field

from .compiled_tracks import AMB_SETTLE_RULE, SETTLE_RULE, AmbiguousRows, gap_key
from .grounding import UNTRACKED_RULE, WHERE_IT_STANDS, Planned
from .one_hand import OVERLAP_EPS
from .provenance import conflict_side, cur, disputed_prov, evidence_prov, obs, track_prov
from .sim import Sim
from .worlds import AMB_RULE, ROW_RULE, EpisodeWorld, row_rule


#: fixture kind -> the action that takes an item from it / puts an item on or in it
TAKE_FROM = {"surface": "pick_up", "storage": "take_from_storage", "enclosed_appliance": "take_from_appliance",
             "surface_appliance": "pick_up_from_appliance", "sink": "take_from_sink"}
PUT_INTO = {"surface": "put_on", "storage": "put_in_storage", "enclosed_appliance": "put_in_appliance",
            "surface_appliance": "place_on_appliance", "sink": "put_in_sink", "bin": "throw_away"}
#: snippet actions on the held item alone (``analysis.compiler.grounding.snippets``)
SNIPPET_ITEM_ACTIONS = ("tap", "shake_item", "tilt", "lift", "rotate", "wipe_item", "open_container",
                        "close_container")


@dataclass
class Op:
    time: float
    action: dict
    provenance: dict
    segment: object = None
    planned: Planned | None = None
    event: int = -1            # index of the source event the operation belongs to


@dataclass
class OpStream:
    ops: list[Op] = field(default_factory=list)
    dropped: list[dict] = field(default_factory=list)


class OpBuilder:
    def __init__(self, world: EpisodeWorld, sim: Sim):
        self.w = world
        self.sim = sim
        self.objects = world.objects
        self.facts = frozenset(world.facts)
        self.out = OpStream()
        # provenance of each entity's current place (its `at` or `in` fact)
        self.place: dict[str, dict] = {}
        for a, p in world.facts.items():
            if a[0] in ("at", "in") and a[1] in self.objects:
                self.place[a[1]] = p
        self.now = 0.0                          # the time of the event being emitted
        self.place_time: dict[str, float] = {}  # entity -> when its current place was set
        self.compiled: set = set()              # track IDs the builder compiles (or will)
        self.tracks_of: dict[str, list] = {}
        for tr in world.tracks:
            self.tracks_of.setdefault(tr.entity, []).append(tr)
        self.event = -1
        self.held_aside: dict[str, str] = {}    # outer object -> where it was set down
        # the places rows decide (an ambiguous row's for each candidate where no other does)
        self.places = {**world.amb_places, **world.row_places}
        self.amb_rows = AmbiguousRows(world)    # which ambiguous rows need a catch-up (:meth:`forced`)
        self.picked_from: dict[str, str] = {}   # entity -> fixture of its last pick-up

    # ----------------------------------------------------------------- helpers
    def _try(self, t: float, typ: str, args: list[str], argprov: list[dict], planned=None,
             extra: dict | None = None) -> bool:
        action = {"type": typ, "args": list(args)}
        ok, failed, facts = self.sim.apply(self.objects, self.facts, action)
        if not ok:
            self._last_failed = failed
            return False
        self.facts = facts
        argprov = [self.identity_prov(p) for p in argprov]
        source = "observed" if all(p["source"] == "observed" for p in argprov) else "curated"
        refs = {"time": round(t, 3), "args": argprov}
        if extra:
            refs.update(extra)
        self.out.ops.append(Op(t, action, {"source": source, "refs": refs}, planned=planned,
                               event=self.event))
        return True

    def identity_prov(self, p: dict) -> dict:
        """An argument whose track belongs to an association identified with one of an
        earlier video (``worlds.IDENTITY_RULE``): the track is observed, the identity is
        not (HD-EPIC gives none across videos), so the argument is curated, with the
        track's refs kept and the rule and the earlier association named. A condition
        never rests on it: a merge by name can join two objects (draw 22: the dates' bowl
        took the mixing bowl's later-video tracks), and a condition would then name the
        wrong one."""
        r = p.get("refs", {})
        if r.get("file") != "assoc_info.json" or not self.w.identities:
            return p
        key = "/".join(str(r.get("id", "")).split("/")[:2])
        ident = self.w.identities.get(key)
        if ident is None:
            return p
        return {"source": "curated", "refs": {**r, "rule": ident["rule"], "same_as": ident["same_as"],
                                              "track_source": p.get("source")}}

    def _curated_op(self, t, typ, args, rule, disputed: str | None = None) -> bool:
        """A curated operation; ``disputed``: rows contesting where it puts the object."""
        before = self.location(args[0]) if args[0] in self.objects else None
        argprov = [cur(rule) for _ in args[:-1]] + [disputed_prov(cur(rule), disputed)]
        ok = self._try(t, typ, args, argprov, extra={"rule": rule})
        if ok and before is not None and self.location(args[0]) not in (before, (None, None)):
            # the object now stands where a curated operation put it: a later pick-up's
            # origin cites this rule, never the row of its last observed place (which
            # would label the curated place observed)
            self.place[args[0]] = disputed_prov(cur(rule), disputed)
        return ok

    def drop(self, kind: str, what: str, reason: str, t: float, **refs) -> None:
        self.out.dropped.append({"kind": kind, "what": what, "reason": reason, "time": t,
                                 "refs": {k: v for k, v in sorted(refs.items()) if v is not None}})

    def agent(self) -> str:
        return next(a[1] for a in self.facts if a[0] == "agent-at")

    def location(self, ent: str) -> tuple[str | None, str | None]:
        """``(fixture, container)``: the fixture an entity is at, following one ``in`` step."""
        for a in self.facts:
            if a[0] == "at" and a[1] == ent:
                return a[2], None
        for a in sorted(self.facts):
            if a[0] == "in" and a[1] == ent and a[2] in self.objects:
                if self.sim.vocab.is_a(self.objects[a[2]], "fixture"):
                    return a[2], a[2]
                for b in self.facts:
                    if b[0] == "at" and b[1] == a[2]:
                        return b[2], a[2]
        return None, None

    def kind(self, fixture: str) -> str:
        t = self.objects[fixture]
        for k in ("storage", "enclosed_appliance", "surface_appliance", "sink", "bin", "surface"):
            if self.sim.vocab.is_a(t, k):
                return k
        return "other"

    def goto(self, t, f) -> bool:
        cur_ = self.agent()
        return cur_ == f or self._curated_op(t, "navigate", [cur_, f], "inserted_navigation")

    def open_(self, t, f):
        k = self.kind(f)
        if k in ("storage", "enclosed_appliance") and ("open", f) not in self.facts:
            self._curated_op(t, "open_storage" if k == "storage" else "open_appliance", [f],
                             "inserted_open_for_access")

    def close_(self, t, f):
        k = self.kind(f)
        if k in ("storage", "enclosed_appliance") and ("open", f) in self.facts:
            self._curated_op(t, "close_storage" if k == "storage" else "close_appliance", [f],
                             "inserted_close_after_access")

    def unseen_moves(self, ent: str) -> list:
        """Tracks of ``ent`` the builder does not compile (the one-hand model dropped them,
        or their sources disagree) that start after its current place was set and before
        now: the rows show the object handled then, so where it is now is not observed."""
        since = self.place_time.get(ent, float("-inf"))
        return [tr for tr in self.tracks_of.get(ent, ()) if tr.track_id not in self.compiled
                and since - OVERLAP_EPS <= tr.start < self.now - OVERLAP_EPS]

    def unseen_move(self, ent: str):
        moves = self.unseen_moves(ent)
        return moves[0] if moves else None

    def observed_place_before(self, tr):
        """``(fixture, provenance)`` where the rows put ``tr``'s object just before ``tr``
        when tracks not compiled handled it since its place was set: ``tr``'s own observed
        source (its VQA take answer, its itinerary move), else the observed destination of
        the last such track, else the row that decides the gap before ``tr`` (the row
        audit's rule, a row the compiler set aside included: curated ``ROW_RULE``), else
        the last such track's curated place in its itinerary chain; ``(None, None)`` when
        the rows do not say."""
        moves = self.unseen_moves(tr.entity)
        got = self._observed_place_before(tr, moves)
        if moves and (got[0] is None or got[1]["source"] == "curated"):
            # a curated fallback yields to the row that decides the place (issue 34)
            d = self.places.get(gap_key(tr, after=False))
            if d is not None and (not d.ambiguous or self.forced(d)):
                # an ambiguous row only where no other candidate's compiled track answers it
                return d.fixture, cur(row_rule(d))
        d = self.w.amb_places.get(gap_key(tr, after=False))
        if not moves and d is not None and (self.place.get(tr.entity) or {}).get("source") == "curated":
            # an ambiguous row names where one of its objects was taken from (a track of
            # an earlier video left this one at a curated place): the curated place yields
            return d.fixture, cur(row_rule(d))
        return got

    def _observed_place_before(self, tr, moves):
        if not moves or any(m.conflict for m in moves):
            # a track dropped because its observed sources disagree: where it left the
            # object is contested, and a conflict compiles neither side (draw 14: bowl2's
            # pick-up "observed" on itinerary 222's side of its conflict with VQA 419)
            return None, None
        last = moves[-1]
        if tr.src:
            vqa = (tr.src_how or "").startswith("VQA")
            return tr.src, obs("3d_perception_object_location.json" if vqa else
                               "object_motion_object_movement_itinerary.json", tr.src_ref,
                               round((tr.end if vqa else tr.start) - tr.offset, 5), track=tr.track_id,
                               how=tr.src_how, **(tr.src_extra or {}))
        if last.dst and last.dst_file:
            return last.dst, obs(last.dst_file, last.dst_ref,
                                 round((last.start if last.dst_file.startswith("3d") else last.end) - last.offset, 5),
                                 track=last.track_id, how=f"{last.dst_how} (a track not compiled put it here)",
                                 **(last.dst_extra or {}))
        if last.chain_dst:
            return last.chain_dst, cur("unobserved_destination_itinerary_move_aligned_from_the_start")
        return None, None

    def catch_up(self, tr, t: float) -> None:
        """Move ``tr``'s object where the rows put it (``observed_place_before``) before its
        pick-up, with curated operations: the tracks that moved it were not compiled (the
        hand was busy), so the world has to follow them before this track can start from
        the right place (draw 12: the green cup taken "from the dishwasher" it had left)."""
        ent = tr.entity
        dst, prov = self.observed_place_before(tr)
        f, cont = self.location(ent)
        if dst is None or f is None or (cont and cont != f) or dst not in self.objects:
            return
        if dst != f:
            moves = self.unseen_moves(ent)
            rule = f"moved_in_a_track_not_compiled:{moves[-1].track_id}" if moves else prov["refs"]["rule"]
            if moves and str(prov["refs"].get("rule", "")).startswith(AMB_RULE):
                # the place is an ambiguous row's (only where no other candidate's compiled
                # track answers it: ``forced``): the operations say so, not only the place
                rule += f";{prov['refs']['rule']}"
            typ, put = TAKE_FROM.get(self.kind(f)), PUT_INTO.get(self.kind(dst))
            if typ is None or put is None or put == "throw_away" or not self.goto(t, f):
                return
            self.open_(t, f)
            ok = self._curated_op(t, typ, [ent, f], rule)
            self.close_(t, f)
            if not ok:
                return
            if not (self.goto(t, dst) and self._put_into(t, ent, dst, put, rule)):
                # never left in the hand: back where it was (the rows' place not reachable)
                self.goto(t, f)
                self._put_into(t, ent, f, PUT_INTO[self.kind(f)], rule)
                return
        self.place[ent] = prov
        self.place_time[ent] = t

    def settle(self, tr, d, t: float) -> bool:
        """A track not compiled (the one-hand model dropped it, a worn glove, an observed
        conflict) whose end a row decides (``EpisodeWorld.row_places``: the uncontested
        put answer or itinerary move, a row set aside included): once the hand is free,
        curated operations move the object from where the compiled world left it to the
        row's fixture (rule ``SETTLE_RULE:<file> <question>``), so the reference state
        follows the row that decides it (issue 34) instead of keeping the place of an
        earlier put-down. ``False`` when the object is held or inside a container, or the
        move is not executable."""
        if d.ambiguous and not self.forced(d):
            # the row does not say which candidate it saw, and another candidate's compiled
            # track answers it: moving this one would place it by curation alone (issue 34:
            # P03-20240216-185832, itinerary 218's knife4 beside knife5)
            return True
        ent = tr.entity
        f, cont = self.location(ent)
        if ("holding", ent) in self.facts or ("hand-empty",) not in self.facts or f is None \
                or (cont and cont != f) or d.fixture not in self.objects:
            return False
        rule = f"{AMB_SETTLE_RULE if d.ambiguous else SETTLE_RULE}:{d.file} {d.qid}"
        # other rows put the track's end elsewhere (worlds.gap_dispute): the move takes one
        # side and says so (P05-20240423-172243's wooden spoon: itinerary 247 vs answer 170)
        disputed = tr.disputed if tr.disputed and any(
            not x.endswith(f": {d.fixture}") for x in tr.disputed.split("; ")) else None
        if f != d.fixture:
            typ, put = TAKE_FROM.get(self.kind(f)), PUT_INTO.get(self.kind(d.fixture))
            if typ is None or put is None or put == "throw_away":
                return False
            saved = (self.facts, len(self.out.ops))
            self.goto(t, f)
            self.open_(t, f)
            ok = self._curated_op(t, typ, [ent, f], rule)
            self.close_(t, f)
            if not (ok and self.goto(t, d.fixture) and self._put_into(t, ent, d.fixture, put, rule, disputed)):
                self.facts = saved[0]           # all or nothing
                del self.out.ops[saved[1]:]
                return False
        # the place is the track's own observed destination when the row is that answer
        # (as a catch-up after a track not compiled says), else curated
        own = tr.dst == d.fixture and tr.dst_file and not tr.conflict and not d.ambiguous
        self.place[ent] = obs(tr.dst_file, tr.dst_ref,
                              round((tr.start if tr.dst_file.startswith("3d") else tr.end) - tr.offset, 5),
                              track=tr.track_id, how=f"{tr.dst_how} (a track not compiled put it here)",
                              **(tr.dst_extra or {})) if own else disputed_prov(cur(rule), disputed)
        self.place_time[ent] = t
        return True

    def forced(self, d) -> bool:
        """Whether the ambiguous row of candidate decision ``d`` needs the catch-up of
        ``d``'s object (:meth:`settle`): :meth:`AmbiguousRows.forced` over the tracks compiled."""
        return self.amb_rows.forced(d, self.compiled)

    def _put_into(self, t, ent, dst, typ, rule, disputed: str | None = None) -> bool:
        self.open_(t, dst)
        ok = self._curated_op(t, typ, [ent, dst], rule, disputed)
        self.close_(t, dst)
        return ok

    def fixture_prov(self, ent: str, f: str) -> dict:
        p = self.place.get(ent)
        if p and p["source"] == "observed":
            moved = self.unseen_move(ent)
            if moved is not None:
                # the observed place is from before that handling (a VQA take answer of
                # the dropped track, an itinerary's first 'from'): a default now, disputed
                # when it is one side of a dropped track's conflict (provenance.conflict_side)
                return disputed_prov({"source": "curated", "refs": {
                    "rule": "place_after_a_track_not_compiled", "track": moved.track_id,
                    "track_span": [round(moved.start - moved.offset, 5), round(moved.end - moved.offset, 5)],
                    "last_observed": p["refs"]}}, conflict_side(self.unseen_moves(ent), f))
            return {"source": "observed", "refs": {**p["refs"], "how": f"{ent} last observed at {f}"}}
        rule = (p or {}).get("refs", {}).get("rule", "unknown_place")
        # a place that rows contest stays contested when the object is taken from it
        return disputed_prov(cur(f"place_of_{ent}:{rule}"), (p or {}).get("refs", {}).get("disputed"))

    # ----------------------------------------------------------------- tracks
    def pick(self, tr, t: float) -> bool:
        """Pick-up at ``t`` (the track's start, or later within the track when the hand
        was busy before)."""
        ent = tr.entity
        if ("hand-empty",) in self.facts:
            self.catch_up(tr, t)
        f, cont = self.location(ent)
        if f is None:
            return False
        if ("hand-empty",) not in self.facts or not self.goto(t, f):
            return False
        op = track_prov(tr)
        if t != tr.start:
            op["refs"]["picked_at"] = round(t - tr.offset, 5)
        if cont and cont != f:
            return self._try(t, "take_out_of_container", [ent, cont, f],
                             [op, self.fixture_prov(cont, f), self.fixture_prov(cont, f)])
        typ = TAKE_FROM.get(self.kind(f))
        if typ is None:
            return False
        self.open_(t, f)
        ok = self._try(t, typ, [ent, f], [op, self.fixture_prov(ent, f)])
        self.close_(t, f)
        if ok:
            self.picked_from[ent] = f
        return ok

    def put(self, tr, dst: str, dprov: dict) -> bool:
        ent = tr.entity
        if not self.goto(tr.end, dst):
            return False
        typ = PUT_INTO.get(self.kind(dst))
        if typ is None:
            return False
        self.open_(tr.end, dst)
        own = track_prov(tr)
        own["refs"]["start"] = own["refs"]["time"]       # the track's span, for the cards
        own["refs"]["time"] = own["refs"]["end"]
        ok = self._try(tr.end, typ, [ent, dst], [own, dprov])
        self.close_(tr.end, dst)
        if ok:
            self.place[ent] = dprov
            self.place_time[ent] = tr.end
        return ok

    def put_down(self, tr, next_src: dict):
        if ("holding", tr.entity) not in self.facts:
            return          # consumed by the event it was held for (added, inserted, cracked)
        nxt = next_src.get(tr.track_id)
        if tr.dst:
            dst, prov = tr.dst, obs(tr.dst_file, tr.dst_ref,
                                    round((tr.start if tr.dst_file.startswith("3d") else tr.end) - tr.offset, 5),
                                    track=tr.track_id, how=tr.dst_how, **(tr.dst_extra or {}))
        elif nxt:
            nsrc, ref, t, file, how, extra, ntr = nxt
            dst, prov = nsrc, obs(file, ref, round(t - tr.offset, 5),
                                  how=(how or "") + " (the object's next track took it from here)",
                                  next_track=f"{ntr.assoc.video}/{ntr.assoc.assoc_id}/{ntr.track_id}",
                                  next_track_span=[round(ntr.start - ntr.offset, 5), round(ntr.end - ntr.offset, 5)],
                                  **(extra or {}))
        elif gap_key(tr, after=True) in self.places:
            # a row the compiler set aside decides where the object stood after this
            # track (the row audit's rule): the curated defaults below yield to it
            d = self.places[gap_key(tr, after=True)]
            dst, prov = d.fixture, cur(row_rule(d))
        elif tr.chain_dst:
            # no observed destination for this track, but the object's itinerary gives
            # its chain of fixtures: the chain's moves aligned from the object's first
            # track forwards, extra tracks handled in place at the last move's 'from'
            # (still a default, labelled curated; never a task condition)
            dst, prov = tr.chain_dst, cur("unobserved_destination_itinerary_move_aligned_from_the_start")
        elif tr.chain and self.w.work_counter not in tr.chain:
            # the default stays inside the chain: where it was taken from, else the
            # chain's final fixture
            came = self.picked_from.get(tr.entity)
            dst = came if came in tr.chain else tr.chain[-1]
            prov = cur("unobserved_destination_in_itinerary_chain")
        else:
            dst, prov = self.w.work_counter, cur("unobserved_destination_work_counter")
        if tr.disputed and prov["source"] == "curated":
            # rows disagree on where the track ended (answer_links._dispute_gaps): say so
            prov["refs"]["disputed"] = tr.disputed
        if not self.put(tr, dst, prov):
            here = self.agent()
            fallback = here if self.kind(here) == "surface" else self.w.work_counter
            if not self.put(tr, fallback, cur("put_down_where_the_agent_stands")):
                self.drop("track", f"track {tr.track_id} ({tr.entity})", f"put-down at {dst} not executable",
                          tr.end, file="assoc_info.json", association=tr.assoc.assoc_id, track=tr.track_id,
                          video=tr.assoc.video)

    def set_down(self, outer, t: float) -> bool:
        """The other hand: put the held outer object down where the agent stands (a
        surface), else on the work counter, so that the nested track can be picked up."""
        here = self.agent()
        spot = here if self.kind(here) == "surface" else self.w.work_counter
        if not self.goto(t, spot):
            return False
        self.held_aside[outer.entity] = spot
        return self._curated_op(t, "put_on", [outer.entity, spot], "set_down_for_the_other_hand")

    def pick_again(self, outer, t: float) -> bool:
        spot = self.held_aside.pop(outer.entity, None)
        if spot is None or ("at", outer.entity, spot) not in self.facts or ("hand-empty",) not in self.facts:
            return False
        if not self.goto(t, spot):
            return False
        return self._curated_op(t, "pick_up", [outer.entity, spot], "picked_up_again_after_the_other_hand")

    # ----------------------------------------------------------------- planned
    def emit(self, p: Planned) -> str | None:
        """Emit the grounded event's operation; returns why not (``None`` when accepted)."""
        t = p.time
        r = p.roles
        prov = {k: evidence_prov(v) for k, v in p.evidence.items() if isinstance(v, dict)}
        extra = {"event": p.what, **{k: v for k, v in p.refs.items() if k in ("recipe", "step", "ingredient")}}
        if p.pickup:
            return self.emit_untracked(p)
        if p.hold and ("holding", p.hold) not in self.facts:
            return f"{p.hold} is not in the hand at {t:.2f}s (its track was not selected or not executable)"
        a = p.action

        def at_target(ent):
            f, c = self.location(ent)
            if f is None or c not in (None,):
                return None, f"{ent} is not standing at a fixture"
            return f, None

        if a in ("pour", "empty_into", "sprinkle", "add_ingredient", "put_in_container", "stir", "whisk",
                 "grate", "break_into"):
            tgt = r.get("dst") or r.get("c")
            f, why = at_target(tgt)
            if f is None:
                return why
            if not self.goto(t, f):
                return "navigation failed"
            fp = self.fixture_prov(tgt, f)
            if a in ("pour", "empty_into", "sprinkle"):
                if ("capped", r["src"]) in self.facts and ("holding", r["src"]) in self.facts:
                    # a snippet observed it closed (or opened later): it is opened to pour
                    self._curated_op(t, "open_container", [r["src"]], "inserted_uncap_before_pour")
                args, ap = [r["s"], r["src"], tgt, f], [prov["s"], prov["src"], prov["dst"], fp]
            elif a in ("stir", "whisk"):
                args, ap = [r["t"], tgt, f], [prov["t"], prov["c"], fp]
            else:
                args, ap = [r["o"], tgt, f], [prov["o"], prov["c"], fp]
        elif a == "insert":
            if not self.goto(t, r["c"]):
                return "navigation failed"
            args, ap = [r["o"], r["c"]], [prov["o"], prov["c"]]
        elif a in ("chop", "peel"):
            f, c = self.location(r["o"])
            if f is None:
                return f"{r['o']} has no place"
            if not self.goto(t, f):
                return "navigation failed"
            fp = self.fixture_prov(c or r["o"], f)
            if c and c != f:
                if a == "peel":
                    return f"{r['o']} is inside {c}"
                args, ap = [r["o"], r["t"], c, f], [prov["o"], prov["t"], self.fixture_prov(c, f), fp]
                a = "chop_in_container"
            else:
                args, ap = [r["o"], r["t"], f], [prov["o"], prov["t"], fp]
        elif a == "peel_by_hand":
            args, ap = [r["o"]], [prov["o"]]
        elif a in ("wash", "fill_from_tap"):
            sinks = sorted(e for e, ty in self.objects.items() if self.sim.vocab.is_a(ty, "sink"))
            if len(sinks) != 1:
                return f"{len(sinks)} sinks in the scene"
            k = sinks[0]
            if not self.goto(t, k):
                return "navigation failed"
            if ("running", k) not in self.facts:
                self._curated_op(t, "turn_on_tap", [k], "inserted_tap_on_for_water")
            kp = cur("the scene's only sink")
            if a == "wash":
                args, ap = [r["o"], k], [prov["o"], kp]
            else:
                args, ap = [r["c"], "water", k], [prov["c"], obs(
                    p.refs["file"], p.refs["row"], p.refs.get("start"),
                    how="the activity label names water (filled at the tap)") if p.refs.get("row") else obs(
                    "complete_recipes.json", f"{p.refs.get('recipe')}/{p.refs.get('step')}", p.refs.get("start"),
                    how="the step text names water (filled at the tap)"), kp]
        elif a in SNIPPET_ITEM_ACTIONS:
            if a == "open_container" and ("capped", r["o"]) not in self.facts:
                # the snippet sees it opened, so it was closed: the closing (after an
                # earlier use) went unobserved
                self._curated_op(t, "close_container", [r["o"]], "inserted_cap_before_observed_open")
            args, ap = [r["o"]], [prov["o"]]
        elif a in ("press_button", "turn_on", "turn_off", "adjust"):
            if not self.goto(t, r["a"]):
                return "navigation failed"
            if a == "turn_on" and ("powered", r["a"]) in self.facts:
                # an observed switch-on finds it off: the switch-off since the last
                # switch-on went unobserved
                self._curated_op(t, "turn_off", [r["a"]], "inserted_switch_off_before_switch_on")
            args, ap = [r["a"]], [prov["a"]]
        elif a in ("turn_on_container", "knead"):
            ent = r.get("c") or r.get("o")
            f, c = self.location(ent)
            if f is None or c is not None:
                return f"{ent} is not standing at a fixture"
            if a == "knead" and ("hand-empty",) not in self.facts:
                return "hand not empty"
            if not self.goto(t, f):
                return "navigation failed"
            args, ap = [ent, f], [prov["c" if a == "turn_on_container" else "o"], self.fixture_prov(ent, f)]
        else:
            return f"no emission rule for {a}"
        ok = self._try(t, a, args, ap, planned=p, extra=extra)
        if a in ("wash", "fill_from_tap"):
            self._curated_op(t, "turn_off_tap", [args[-1]], "inserted_tap_off_after_use")
        if not ok:
            return f"{a}({', '.join(args)}) rejected by the rules: {', '.join(self._last_failed)}"
        return None


    def emit_untracked(self, p: Planned) -> str | None:
        """An add whose food no track names (``grounding.adds.add_untracked``): the
        food is picked up at its curated default place just before the add (rule
        ``ingredient_without_track_at_default_location``); an object in the hand (never a
        food: it may be the ingredient) is set down where the agent stands first and picked
        up again after (curated, one hand).
        All or nothing: when a step is not executable, nothing of it is kept."""
        t, ent, f = p.time, p.hold, p.pickup
        f0 = f
        saved = (self.facts, len(self.out.ops), dict(self.place), dict(self.picked_from))

        def undo(why):
            self.facts, n, self.place, self.picked_from = saved[0], saved[1], saved[2], saved[3]
            del self.out.ops[n:]
            return why

        if f == WHERE_IT_STANDS:
            # a tracked food the add row names, not tracked during the add: from where it stands
            f, inside = self.location(ent)
            if f is None or inside is not None or ("holding", ent) in self.facts:
                return f"{ent} is not standing at a fixture at {t:.2f}s (held, inside a container or nowhere)"
        elif ("at", ent, f) not in self.facts:
            return f"{ent} is not at its curated default place {f} at {t:.2f}s"
        aside = None
        held = sorted(a[1] for a in self.facts if a[0] == "holding")
        if held and self.sim.vocab.is_a(self.objects[held[0]], "food"):
            # a food in the hand may be what is added, under another name: not set down
            return f"{held[0]} (a food) is in the hand at {t:.2f}s: it may be the ingredient"
        if held:
            here = self.agent()
            spot = here if self.kind(here) == "surface" else self.w.work_counter
            if not self.goto(t, spot) or not self._curated_op(t, "put_on", [held[0], spot],
                                                               "set_down_for_the_other_hand"):
                return undo(f"{held[0]} is in the hand and cannot be set down at {t:.2f}s")
            self.place[held[0]] = cur("set_down_for_the_other_hand")
            aside = (held[0], spot)
        typ = TAKE_FROM.get(self.kind(f))
        if typ is None or not self.goto(t, f):
            return undo(f"{ent} cannot be picked up at {f}")
        self.open_(t, f)
        rule = UNTRACKED_RULE if f0 != WHERE_IT_STANDS else "tracked_food_picked_up_where_it_stands"
        if not self._curated_op(t, typ, [ent, f], rule):
            return undo(f"{typ}({ent}, {f}) rejected by the rules: {', '.join(self._last_failed)}")
        self.close_(t, f)
        self.picked_from[ent] = f
        p.pickup = None
        try:
            why = self.emit(p)
        finally:
            p.pickup = f0
        if why:
            return undo(why)
        if aside and not (self.goto(t, aside[1]) and self._curated_op(
                t, "pick_up", [aside[0], aside[1]], "picked_up_again_after_the_other_hand")):
            return undo(f"{aside[0]} cannot be picked up again after the add")
        return None

"""Reference operations: source events turned into executor actions, simulated as we go.

Events, in time order: object tracks (a pick-up at the track start and a put-down at its
observed or curated destination), ingredient add events (pour / add_ingredient / insert
into the container the step text names, else the most recently handled vessel) and
step-text cues (stir, turn on). Each event expands into actions with the navigation and
open/close steps it needs; every action is checked by :class:`Sim` (the executor's rules)
and kept only if accepted, so the reference replay is executable by construction.
Events that cannot be grounded are dropped and listed in ``dropped``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .sim import Sim
from .worlds import EpisodeWorld, curated, observed


@dataclass
class Op:
    time: float
    action: dict
    provenance: dict


@dataclass
class OpStream:
    ops: list[Op] = field(default_factory=list)
    # one dict per source event that produced no accepted operation:
    # {kind: track|add|cue, what, reason, time, refs} (exported as cohort/dropped.jsonl)
    dropped: list[dict] = field(default_factory=list)
    facts: frozenset = frozenset()


_PREP_RE = re.compile(r"\b(?:into|in|to|onto|on)\s+(?:the\s+|your\s+|a\s+|an\s+)?([a-z ]+)")


class OpBuilder:
    def __init__(self, world: EpisodeWorld, sim: Sim):
        self.w = world
        self.sim = sim
        self.objects = world.objects
        self.facts = frozenset(world.facts)
        self.out = OpStream()
        self.recent_vessel: str | None = None

    # ----------------------------------------------------------------- helpers
    def _try(self, t: float, typ: str, args: list[str], prov: dict) -> bool:
        action = {"type": typ, "args": list(args)}
        ok, failed, facts = self.sim.apply(self.objects, self.facts, action)
        if ok:
            self.facts = facts
            self.out.ops.append(Op(t, action, prov))
        return ok

    def _drop(self, kind: str, what: str, reason: str, t: float, **refs) -> None:
        self.out.dropped.append({"kind": kind, "what": what, "reason": reason, "time": t,
                                 "refs": {k: v for k, v in sorted(refs.items()) if v is not None}})

    def _drop_add(self, ev, recipe_id, step_id, reason: str) -> None:
        self._drop("add", f"add {ev.ingredient_id} ({ev.name})", reason, ev.span.start,
                   recipe=recipe_id, step=step_id, ingredient=ev.ingredient_id,
                   video=ev.span.video, start=ev.span.start, end=ev.span.end)

    def _agent(self) -> str:
        return next(a[1] for a in sorted(self.facts) if a[0] == "agent-at")

    def location(self, ent: str) -> tuple[str | None, str | None]:
        """``(fixture, container)``: the fixture an entity is at, following one ``in`` step."""
        for a in sorted(self.facts):
            if a[0] == "at" and a[1] == ent:
                return a[2], None
        for a in sorted(self.facts):
            if a[0] == "in" and a[1] == ent and a[2] in self.objects:
                if self.sim.vocab.is_a(self.objects[a[2]], "fixture"):
                    return a[2], a[2]
                for b in sorted(self.facts):
                    if b[0] == "at" and b[1] == a[2]:
                        return b[2], a[2]
        return None, None

    def _kind(self, fixture: str) -> str:
        t = self.objects[fixture]
        for k in ("storage", "enclosed_appliance", "surface_appliance", "sink", "bin", "surface"):
            if self.sim.vocab.is_a(t, k):
                return k
        return "other"

    def goto(self, t, f) -> bool:
        cur = self._agent()
        return cur == f or self._try(t, "navigate", [cur, f], curated("inserted_navigation"))

    def _open(self, t, f):
        k = self._kind(f)
        if k in ("storage", "enclosed_appliance") and ("open", f) not in self.facts:
            self._try(t, "open_storage" if k == "storage" else "open_appliance", [f],
                      curated("inserted_open_for_access"))

    def _close(self, t, f):
        k = self._kind(f)
        if k in ("storage", "enclosed_appliance") and ("open", f) in self.facts:
            self._try(t, "close_storage" if k == "storage" else "close_appliance", [f],
                      curated("inserted_close_after_access"))

    def take(self, t, ent, prov) -> bool:
        f, cont = self.location(ent)
        if f is None or ("hand-empty",) not in self.facts:
            return False
        if not self.goto(t, f):
            return False
        if cont and cont != f:
            return self._try(t, "take_out_of_container", [ent, cont, f], prov)
        typ = {"surface": "pick_up", "storage": "take_from_storage",
               "enclosed_appliance": "take_from_appliance",
               "surface_appliance": "pick_up_from_appliance", "sink": "take_from_sink"}.get(self._kind(f))
        return self._through(t, typ, ent, f, prov)

    def _through(self, t, typ, ent, f, prov) -> bool:
        """``typ(ent, f)`` with ``f`` opened before and closed after when it opens."""
        if typ is None:
            return False
        self._open(t, f)
        ok = self._try(t, typ, [ent, f], prov)
        self._close(t, f)
        return ok

    def put(self, t, ent, f, prov) -> bool:
        if not self.goto(t, f):
            return False
        typ = {"surface": "put_on", "storage": "put_in_storage",
               "enclosed_appliance": "put_in_appliance",
               "surface_appliance": "place_on_appliance", "sink": "put_in_sink",
               "bin": "throw_away"}.get(self._kind(f))
        return self._through(t, typ, ent, f, prov)

    def put_back_somewhere(self, t, ent):
        """Never leave the hand full between events: put on the agent's surface or the work counter."""
        if ("holding", ent) not in self.facts:
            return
        here = self._agent()
        target = here if self._kind(here) == "surface" else self.w.work_counter
        self.put(t, ent, target, curated("put_down_after_use"))

    # ----------------------------------------------------------------- events
    def track(self, tr, next_src: dict):
        prov_take = observed(association=tr.assoc.assoc_id, track=tr.track_id, video=tr.assoc.video,
                             start=tr.start, end=tr.end, vqa=tr.src_ref)
        if not self.take(tr.start, tr.entity, prov_take):
            self._drop("track", f"track {tr.track_id} ({tr.entity})", "pick-up not executable", tr.start,
                       association=tr.assoc.assoc_id, track=tr.track_id, video=tr.assoc.video)
            return
        if tr.dst:
            dst, prov = tr.dst, observed(association=tr.assoc.assoc_id, track=tr.track_id,
                                         video=tr.assoc.video, start=tr.start, end=tr.end, vqa=tr.dst_ref)
        elif next_src.get(tr.track_id):
            nsrc, ref = next_src[tr.track_id]
            dst, prov = nsrc, observed(association=tr.assoc.assoc_id, track=tr.track_id,
                                       video=tr.assoc.video, start=tr.start, end=tr.end, vqa=ref)
        else:
            dst, prov = self.w.work_counter, curated("unobserved_destination_work_counter")
        if not self.put(tr.end, tr.entity, dst, prov):
            self.put_back_somewhere(tr.end, tr.entity)
            self._drop("track", f"track {tr.track_id} ({tr.entity})", f"put-down at {dst} not executable",
                       tr.end, association=tr.assoc.assoc_id, track=tr.track_id, video=tr.assoc.video)
        if self.sim.vocab.is_a(self.objects[tr.entity], "vessel"):
            self.recent_vessel = tr.entity

    def resolve_container(self, text: str, exclude: str) -> tuple[str | None, str]:
        low = text.lower()
        for phrase, (fid, _) in sorted(self.sim.vocab.step_fixtures.items()):
            if phrase in low and fid in self.objects:
                return fid, "step_text"
        for m in _PREP_RE.finditer(low):
            words = m.group(1).split()
            for n in range(min(3, len(words)), 0, -1):
                cand = "_".join(words[:n])
                for ent in sorted(self.objects):
                    if ent == exclude:
                        continue
                    if (re.sub(r"(_\d+)?$", "", ent) == cand or cand in self.w.names.get(ent, [])) \
                            and self.sim.vocab.is_a(self.objects[ent], "container"):
                        return ent, "step_text"
        if self.recent_vessel and self.recent_vessel != exclude:
            return self.recent_vessel, "recent_vessel"
        return None, "none"

    def add(self, ev, recipe_id: str, step_id: str | None, step_text: str):
        ing = self.w.ingredient_entities.get(ev.ingredient_id)
        if ing is None:
            self._drop_add(ev, recipe_id, step_id, "ingredient has no entity")
            return None
        target, how = self.resolve_container(step_text, ing)
        if target is None:
            self._drop_add(ev, recipe_id, step_id, "no target container")
            return None
        prov = observed(recipe=recipe_id, ingredient=ev.ingredient_id, step=step_id,
                        video=ev.span.video, start=ev.span.start, end=ev.span.end,
                        target=how)
        t = ev.span.start
        ltype = self.objects[ing]
        if self.sim.vocab.is_a(self.objects[target], "fixture"):
            # a fixture target (the coffee machine, named only by the step text) is never
            # `at` anything: it is its own place. Asking location() for it returned None
            # and dropped the Nespresso capsule add ("not placed on a fixture").
            tf, tcont = target, None
        else:
            tf, tcont = self.location(target)
        if tf is None or tcont not in (None, tf):
            self._drop_add(ev, recipe_id, step_id, f"target {target} not placed on a fixture")
            return None
        ok = False
        if self.sim.vocab.is_a(ltype, "substance"):
            src = self.w.substance_sources.get(ing)
            if src and self.take(t, src, curated("take_ingredient_source")):
                if self.goto(t, tf):
                    ok = self._try(t, "pour", [ing, src, target, tf], prov)
                self.put_back_somewhere(t, src)
        else:
            if self.take(t, ing, curated("take_ingredient")):
                if self.goto(t, tf):
                    if self.sim.vocab.is_a(self.objects[target], "fixture"):
                        ok = self._try(t, "insert", [ing, target], prov)
                    elif self.sim.vocab.is_a(ltype, "food"):
                        ok = self._try(t, "add_ingredient", [ing, target, tf], prov)
                    else:
                        ok = self._try(t, "put_in_container", [ing, target, tf], prov)
                self.put_back_somewhere(t, ing)
        if not ok:
            self._drop_add(ev, recipe_id, step_id, f"add into {target} not executable")
            return None
        return (ing, target)

    def cue(self, t, verb: str, text: str, prov_refs: dict):
        """Step-text cues: stir (with a spoon into the recent vessel), turn on (appliance named).
        A cue that yields no accepted step operation is listed in ``dropped`` with the reason."""
        n0 = len(self.out.ops)
        reason = self._cue(t, verb, text, prov_refs)
        if not any(op.provenance["source"] == "observed" for op in self.out.ops[n0:]):
            self._drop("cue", f"cue {verb} {prov_refs.get('step')}", reason or "cue not executable",
                       t, **prov_refs)

    def _cue(self, t, verb: str, text: str, prov_refs: dict) -> str | None:
        """Apply a cue; returns why nothing was grounded (None when it was tried)."""
        prov = observed(**prov_refs)
        if verb in ("stir", "mix"):
            spoon = next((e for e in sorted(self.objects) if self.objects[e] in ("spoon", "whisk_tool")), None)
            target = self.recent_vessel
            if spoon is None or target is None:
                return "no spoon or vessel"
            tf, tc = self.location(target)
            if tf is None or tc not in (None, tf):
                return f"vessel {target} not placed on a fixture"
            if self.take(t, spoon, curated("take_tool_for_step")):
                if self.goto(t, tf):
                    self._try(t, "stir" if self.objects[spoon] != "whisk_tool" else "whisk",
                              [spoon, target, tf], prov)
                self.put_back_somewhere(t, spoon)
        elif verb in ("turn-on", "press", "switch-on"):
            low = text.lower()
            for ent in sorted(self.objects):
                typ = self.objects[ent]
                if not (self.sim.vocab.is_a(typ, "appliance") or self.sim.vocab.is_a(typ, "electric_container")):
                    continue
                name = re.sub(r"(_\d+)?$", "", ent).replace("_", " ")
                if name and re.search(rf"\b{re.escape(name)}\b", low):
                    if self.sim.vocab.is_a(typ, "appliance"):
                        if self.goto(t, ent):
                            self._try(t, "turn_on", [ent], prov)
                    else:
                        f, c = self.location(ent)
                        if f and c is None and self.goto(t, f):
                            self._try(t, "turn_on_container", [ent, f], prov)
                    return f"{verb} {ent} not executable"
            return "no appliance named"
        return None

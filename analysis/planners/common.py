"""Shared planning machinery of the baselines: a believed state and argument binding.

Everything here works from the :class:`~analysis.executor.protocol.PlannerView` only. The
:class:`BelievedState` is three-valued: an atom is known true, known false or unknown
(``None``). It is built from the local observation, query results and the agent's
belief, and advanced by simulating the rules' effects of the actions a planner plans.

>>> from analysis.planners.toy import toy_episode
>>> s = BelievedState(agent="counter", holding=None)
>>> s.truth(("agent-at", "counter")), s.truth(("at", "glass", "cupboard"))
(True, None)
>>> s.loc["glass"] = ("at", "cupboard"); s.truth(("at", "glass", "cupboard"))
True
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Mapping

from analysis.executor.rules import is_subtype  # public type facts, not the world

from .base import PlannerView, parse_hint

__all__ = ["BelievedState", "is_subtype", "state_from_view", "bind_action", "ground",
           "hint_steps", "candidates_for", "TAKE_BY_FIXTURE", "PUT_BY_FIXTURE"]

# Retrieval / placement action by the kind of fixture (rules.yaml vocabulary).
TAKE_BY_FIXTURE = (("storage", "take_from_storage"), ("enclosed_appliance", "take_from_appliance"),
                   ("open_appliance", "pick_up_from_appliance"), ("sink", "take_from_sink"),
                   ("surface", "pick_up"))
PUT_BY_FIXTURE = (("storage", "put_in_storage"), ("enclosed_appliance", "put_in_appliance"),
                  ("open_appliance", "place_on_appliance"), ("sink", "put_in_sink"),
                  ("surface", "put_on"), ("bin", "throw_away"))


@dataclass
class BelievedState:
    """What the planner believes: agent place, held item, item locations, flags."""

    agent: str | None = None
    holding: str | None = None
    loc: dict = field(default_factory=dict)     # item -> ("at", fixture) | ("in", holder)
    flags: dict = field(default_factory=dict)   # atom -> bool (open, capped, in-substance...)

    def copy(self) -> "BelievedState":
        return BelievedState(self.agent, self.holding, dict(self.loc), dict(self.flags))

    def truth(self, atom: tuple):
        p = atom[0]
        if p == "agent-at":
            return None if self.agent is None else self.agent == atom[1]
        if p == "hand-empty":
            return self.holding is None
        if p == "holding":
            return self.holding == atom[1]
        if atom in self.flags:
            return self.flags[atom]
        if p in ("at", "in") and len(atom) == 3:
            if self.holding == atom[1]:
                return False
            if atom[1] in self.loc:
                return self.loc[atom[1]] == (p, atom[2])
        return None

    def fixture_of(self, item: str) -> str | None:
        """The fixture an item is believed at, following ``in`` holders."""
        seen = set()
        x = item
        while x in self.loc and x not in seen:
            seen.add(x)
            rel, place = self.loc[x]
            if rel == "at":
                return place
            x = place
        return None

    def apply(self, rule: Mapping, args: list[str]) -> None:
        """Simulate the rule's STRIPS effects (delete, then add)."""
        b = {p[0]: a for p, a in zip(rule["params"], args)}
        g = [lambda at: tuple([at[0]] + [b[x] for x in at[1:]])][0]
        for at in rule.get("del", []):
            atom = g(at)
            if atom[0] == "agent-at":
                self.agent = None
            elif atom[0] == "holding":
                self.holding = None
            elif atom[0] in ("at", "in") and len(atom) == 3:
                if self.loc.get(atom[1]) == (atom[0], atom[2]):
                    del self.loc[atom[1]]
                self.flags[atom] = False
            elif atom[0] != "hand-empty":
                self.flags[atom] = False
        for at in rule.get("add", []):
            atom = g(at)
            if atom[0] == "agent-at":
                self.agent = atom[1]
            elif atom[0] == "holding":
                self.holding = atom[1]
                self.loc.pop(atom[1], None)
            elif atom[0] == "hand-empty":
                self.holding = None
            elif atom[0] in ("at", "in") and len(atom) == 3:
                self.loc[atom[1]] = (atom[0], atom[2])
                self.flags[atom] = True
            else:
                self.flags[atom] = True


def state_from_view(view: PlannerView, interest=()) -> BelievedState:
    """The believed state: observation + query results + belief for ``interest`` items."""
    s = BelievedState(agent=view.observation.get("region"), holding=view.holding)
    for item in list(view.objects) + list(interest):
        if view.belief is None or item == view.holding:
            continue
        where = view.belief.location(item)
        if where is not None:
            s.loc[item] = ("held",) if where[0] == "held" else (where[0], where[1])
        o = view.belief.is_open(item)
        if o is not None:
            s.flags[("open", item)] = o
    for obs in [view.observation, *view.query_results]:
        region = obs.get("region")
        if region is None or "visible" not in obs:
            continue
        for item in obs.get("removed", []):
            if s.loc.get(item) == ("at", region):
                del s.loc[item]
        for item in obs["visible"]:
            if item != s.holding:
                s.loc[item] = ("at", region)
        for c, inside in obs.get("contents", {}).items():
            for item in inside:
                s.loc.setdefault(item, ("in", c))
                s.flags[("in", item, c)] = True
        for ent, is_open in obs.get("open", {}).items():
            s.flags[("open", ent)] = bool(is_open)
    s.loc = {k: v for k, v in s.loc.items() if v[0] != "held"}
    return s


_PUT_SENTENCE = re.compile(r"\bput the ([a-z0-9 ]+?) (?:on|in) the ([a-z0-9 ]+?)\.", re.IGNORECASE)


def named_put_downs(view: PlannerView) -> list[tuple[str, str]]:
    """``(item, fixture)`` pairs the instruction states ("Put the mug 2 in the
    dishwasher."), each an object of the group and a fixture of the kitchen, in text order.

    >>> from types import SimpleNamespace as NS
    >>> named_put_downs(NS(instruction="Tidy: handle. Put the mug 2 in the dishwasher.",
    ...                    objects=("mug_2",), regions=("dishwasher", "sink")))
    [('mug_2', 'dishwasher')]
    """
    out = []
    for obj, dst in _PUT_SENTENCE.findall(view.instruction):
        o, f = "_".join(obj.lower().split()), "_".join(dst.lower().split())
        if o in view.objects and f in view.regions and (o, f) not in out:
            out.append((o, f))
    return out


def hint_steps(view: PlannerView) -> list[tuple[str, list[str] | None]]:
    """The group's hints as ``(type, args or None)``, unknown types dropped."""
    out = []
    for h in view.action_hints:
        t, args = parse_hint(h)
        if t in view.action_schema:
            out.append((t, args))
    return out


def candidates_for(view: PlannerView, ptype: str, state: BelievedState) -> list[str]:
    """Entities the planner knows of type ``ptype`` (group objects first)."""
    types = view.types
    pool = list(view.objects)
    if state.holding:
        pool.append(state.holding)
    pool += list(view.observation.get("visible", []))
    for q in view.query_results:
        pool += list(q.get("visible", []))
    if is_subtype(types, ptype, "fixture") or ptype in ("entity",):
        pool += [state.agent] if state.agent else []
        pool += list(view.regions)
    seen = []
    for e in pool:
        if e and e not in seen and is_subtype(types, view.object_types.get(e), ptype):
            seen.append(e)
    return seen


def ground(rule: Mapping, args: list[str]) -> list[tuple[str, bool, tuple]]:
    """The rule's preconditions grounded: ``[(name, expected_true, atom)]``."""
    b = {p[0]: a for p, a in zip(rule["params"], args)}
    out = []
    for name, pre in rule["pre"].items():
        neg = pre[0] == "not"
        atom = pre[1] if neg else pre
        out.append((name, not neg, tuple([atom[0]] + [b[x] for x in atom[1:]])))
    return out


def _score(rule, args, state: BelievedState) -> tuple[int, int]:
    bad = unknown = 0
    for _, expected, atom in ground(rule, args):
        t = state.truth(atom)
        if t is None:
            unknown += 1
        elif t != expected:
            bad += 1
    return bad, unknown


def _affinity(combo) -> int:
    words = [set(a.split("_")) for a in combo]
    return sum(1 for i in range(len(words)) for j in range(i + 1, len(words))
               if words[i] & words[j])


def bind_action(view: PlannerView, atype: str, hint_args, state: BelievedState,
                use_belief: bool = True, max_combos: int = 400) -> list[str] | None:
    """Arguments for ``atype``: hinted args kept, free params bound from known entities.

    With ``use_belief`` the binding whose preconditions the believed state violates
    least wins (fixture params prefer where a bound item is believed to be); without,
    the first type-correct candidate of each parameter is taken (greedy).
    """
    rule = view.action_schema[atype]
    params = rule["params"]
    if hint_args is not None and len(hint_args) == len(params):
        return list(hint_args)
    pools = []
    for name, ptype in params:
        cands = candidates_for(view, ptype, state)
        if not cands:
            return None
        pools.append(cands)
    if not use_belief:
        # Greedy: distinct objects where possible, first fit otherwise.
        chosen: list[str] = []
        for pool in pools:
            pick = next((c for c in pool if c not in chosen), pool[0])
            chosen.append(pick)
        return chosen
    best, best_key = None, None
    for i, combo in enumerate(itertools.product(*pools)):
        if i >= max_combos:
            break
        if len(set(combo)) < len(combo):
            continue
        bad, unknown = _score(rule, list(combo), state)
        # Prefer bindings the belief supports; among equals, arguments whose names share
        # a word ("milk" and "milk_source"), as a reader of the instruction would.
        key = (bad, unknown, -_affinity(combo), i)
        if best_key is None or key < best_key:
            best, best_key = list(combo), key
    return best

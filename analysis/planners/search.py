"""``belief_search`` and its noisy variants: plan toward the hinted actions over belief.

For each hinted action type (in order) the planner binds the arguments against its
believed state (:mod:`analysis.planners.common`), and it puts each item where the
instruction says ("Put the mug 2 in the dishwasher.",
:func:`~analysis.planners.common.named_put_downs`); it plans the prerequisites the
rules ask for and the belief says are missing: fetch an item that must be held (put
down what is in hand, go to where the item is believed to be, open the storage, take
it), open a closed or unknown storage, navigate to the action's fixture. Effects are
simulated so that later steps see earlier ones. When an item it needs is neither
visible nor remembered it spends a visual query (at most ``max_queries`` per group) on
a region it has not observed yet (group fixtures first, then storage), and plans after
seeing it. Rejection feedback is remembered as negative facts (e.g. "the glass is not in
that cupboard"), so a replan tries the next candidate. After a failure it retries the
same hinted step once, then moves on.

Failure modes: curated placements that no anchor shows are found only by trying
storage in order (wrong guesses cost attempts); an unknown start location makes it plan
without navigation; it never checks attributes it cannot observe (capped, powered).

``noisy_search_binding`` replaces one argument of a planned action by another known
entity of a compatible type at rate ``p_wrong_binding`` and emits malformed JSON at rate
``p_malformed`` per call; ``noisy_search_skip`` drops each planned action at rate
``p_skip``. Both mimic language-model errors at seeded rates.

>>> from analysis.planners.toy import toy_episode
>>> BeliefSearchPlanner(seed=0).config()["max_queries"]
1
"""
from __future__ import annotations

import json
from typing import Mapping

from .base import PlannerView, plan_json
from .common import (PUT_BY_FIXTURE, TAKE_BY_FIXTURE, BelievedState, bind_action, ground,
                     hint_steps, is_subtype, named_put_downs, state_from_view)

__all__ = ["BeliefSearchPlanner", "NoisyBindingPlanner", "NoisySkipPlanner"]


class _NeedLocation(Exception):
    def __init__(self, item: str):
        self.item = item


class BeliefSearchPlanner:
    """Plans the hinted actions with their believed prerequisites (see module doc)."""

    name = "belief_search"

    def __init__(self, seed: int = 0, max_queries: int = 1, max_depth: int = 2,
                 max_retries: int = 2):
        self.seed = int(seed)
        self.max_queries = int(max_queries)
        self.max_depth = int(max_depth)
        self.max_retries = int(max_retries)
        self._may_query = True
        self._groups: dict[str, dict] = {}

    def config(self) -> dict:
        return {"seed": self.seed, "max_queries": self.max_queries, "max_depth": self.max_depth,
                "max_retries": self.max_retries}

    # ------------------------------------------------------------------ helpers
    def _type(self, view: PlannerView, e: str | None) -> str | None:
        return view.object_types.get(e) if e else None

    def _kind_action(self, view, fixture: str, table) -> str | None:
        ty = self._type(view, fixture)
        for kind, action in table:
            if is_subtype(view.types, ty, kind) and action in view.action_schema:
                return action
        return None

    def _emit(self, view, out, state: BelievedState, atype: str, args: list[str]) -> None:
        out.append({"type": atype, "args": list(args)})
        state.apply(view.action_schema[atype], args)

    def _goto(self, view, out, state, fixture: str) -> None:
        if state.agent is not None and state.agent != fixture and "navigate" in view.action_schema:
            self._emit(view, out, state, "navigate", [state.agent, fixture])

    def _open(self, view, out, state, fixture: str) -> None:
        ty = self._type(view, fixture)
        if state.truth(("open", fixture)) is True:
            return
        if is_subtype(view.types, ty, "storage"):
            self._goto(view, out, state, fixture)
            self._emit(view, out, state, "open_storage", [fixture])
        elif is_subtype(view.types, ty, "enclosed_appliance"):
            self._goto(view, out, state, fixture)
            self._emit(view, out, state, "open_appliance", [fixture])

    def _put_down(self, view, out, state) -> None:
        held, here = state.holding, state.agent
        if held is None or here is None:
            return
        action = self._kind_action(view, here, PUT_BY_FIXTURE)
        if action is None:
            return
        if action in ("put_in_storage", "put_in_appliance"):
            self._open(view, out, state, here)
        self._emit(view, out, state, action, [held, here])

    #: where a kitchen keeps things, by item type (a common-sense prior for guessing)
    PRIOR = (("utensil", ("drawer", "cupboard", "fridge")),
             ("food", ("fridge", "cupboard", "drawer")),
             ("item", ("cupboard", "fridge", "drawer")))

    def _guess(self, view: PlannerView, state: BelievedState, item: str) -> str | None:
        """A storage fixture to try for an item of unknown location (prior order, minus
        fixtures the feedback ruled out)."""
        ty = view.object_types.get(item)
        kinds = next((k for t, k in self.PRIOR if is_subtype(view.types, ty, t)), ())
        storage = [r for r in view.regions
                   if is_subtype(view.types, view.object_types.get(r), "storage")]
        rank = {k: i for i, k in enumerate(kinds)}
        storage.sort(key=lambda r: (rank.get(view.object_types.get(r), len(rank)), r))
        for r in storage:
            if state.flags.get(("at", item, r)) is not False:
                return r
        return None

    def _fetch(self, view, out, state, item: str) -> None:
        rel = state.loc.get(item)
        if rel is None:
            if self.max_queries > 0 and self._may_query:
                raise _NeedLocation(item)
            guess = self._guess(view, state, item)
            if guess is None:
                raise _NeedLocation(item)
            rel = ("at", guess)
        if state.holding is not None:
            self._put_down(view, out, state)
        if rel[0] == "in":
            holder = rel[1]
            f = state.fixture_of(holder)
            if f is None:
                raise _NeedLocation(holder)
            self._goto(view, out, state, f)
            self._emit(view, out, state, "take_out_of_container", [item, holder, f])
            return
        f = rel[1]
        action = self._kind_action(view, f, TAKE_BY_FIXTURE)
        if action is None:
            return
        if action in ("take_from_storage", "take_from_appliance"):
            self._open(view, out, state, f)
        self._goto(view, out, state, f)
        self._emit(view, out, state, action, [item, f])

    def _plan_step(self, view, state, atype: str, hargs, out: list, depth: int = 0) -> None:
        args = bind_action(view, atype, hargs, state)
        if args is None:
            return
        pre = ground(view.action_schema[atype], args)
        fixture_goal = None
        for name, expected, atom in pre:
            p = atom[0]
            if p == "holding" and expected and state.holding != atom[1]:
                self._fetch(view, out, state, atom[1])
            elif p == "hand-empty" and expected and state.holding is not None:
                self._put_down(view, out, state)
            elif p == "agent-at" and expected:
                fixture_goal = atom[1]
        for name, expected, atom in pre:
            p = atom[0]
            if p == "open" and expected and state.truth(atom) is not True:
                self._open(view, out, state, atom[1])
            elif p == "at" and expected and state.truth(atom) is False \
                    and state.holding != atom[1] and depth < self.max_depth \
                    and state.loc.get(atom[1]) is not None:
                # The item is known to be elsewhere but must stand at the fixture: bring
                # it. (Unknown: trust the binding, e.g. a retrieval's source.)
                self._fetch(view, out, state, atom[1])
                self._goto(view, out, state, atom[2])
                put = self._kind_action(view, atom[2], PUT_BY_FIXTURE)
                if put is not None:
                    self._emit(view, out, state, put, [atom[1], atom[2]])
            elif p == "capped" and not expected and state.truth(atom) is True \
                    and state.holding == atom[1] and "open_container" in view.action_schema:
                self._emit(view, out, state, "open_container", [atom[1]])
        if fixture_goal is not None:
            self._goto(view, out, state, fixture_goal)
        self._emit(view, out, state, atype, args)

    def _query_region(self, view: PlannerView, st: dict) -> str | None:
        seen = {q.get("region") for q in view.query_results} | {view.observation.get("region")}
        seen |= set(st["queried"])
        belief = view.belief
        fixtures = [o for o in view.objects if o in view.regions]
        storage = [r for r in view.regions
                   if is_subtype(view.types, view.object_types.get(r), "storage")]
        for r in fixtures + storage + list(view.regions):
            if r in seen or (belief is not None and belief.knows_region(r)):
                continue
            return r
        return None

    def _negative_facts(self, view: PlannerView, state: BelievedState) -> None:
        # Failed preconditions in the feedback are facts about the world ("not there").
        for fb in view.feedback:
            if fb.get("status") != "invalid":
                continue
            a = fb["action"]
            rule = view.action_schema.get(a["type"])
            if rule is None or len(a["args"]) != len(rule["params"]):
                continue
            failed = set(fb["failed_checks"])
            for name, expected, atom in ground(rule, a["args"]):
                if name in failed:
                    state.flags[atom] = not expected
                    if atom[0] in ("at", "in") and state.loc.get(atom[1]) == (atom[0], atom[2]):
                        del state.loc[atom[1]]

    # ------------------------------------------------------------------ planning
    def plan(self, view: PlannerView) -> tuple[list[dict], str | None]:
        gkey = view.key.rsplit("/", 1)[0]
        st = self._groups.setdefault(gkey, {"start": 0, "retried": {}, "queried": [],
                                            "planned": []})
        if view.call_index > 0:
            failed = next((fb for fb in reversed(view.feedback)
                           if fb.get("status") == "invalid" and fb.get("source") == "planner"),
                          None)
            if failed is not None:
                h = next((h for h, a in reversed(st["planned"]) if a == failed["action"]), None)
                if h is not None:
                    # Retry a failed step (feedback rules out the wrong guess) a bounded
                    # number of times, then move on to the next step.
                    n = st["retried"].get(h, 0)
                    st["start"] = h + 1 if n >= self.max_retries else h
                    st["retried"][h] = n + 1
        steps = self._steps(view, st)
        interest = [a for _, args in steps for a in (args or [])]
        state = state_from_view(view, interest)
        self._negative_facts(view, state)
        actions: list[dict] = []
        planned: list[tuple[int, dict]] = []
        # Queries first while the budget lasts; afterwards unknown locations are guessed.
        self._may_query = len(st["queried"]) < self.max_queries
        for h in range(st["start"], len(steps)):
            t, hargs = steps[h]
            trial = state.copy()
            out: list[dict] = []
            try:
                self._plan_step(view, trial, t, hargs, out)
            except _NeedLocation as need:
                if len(st["queried"]) < self.max_queries and not actions:
                    region = self._query_region(view, st)
                    if region is not None:
                        st["queried"].append(region)
                        return [], region
                # No query left: plan again, guessing where unknown items are.
                self._may_query = False
                out = []
                trial = state.copy()
                try:
                    self._plan_step(view, trial, t, hargs, out)
                except _NeedLocation:
                    continue
            state = trial
            actions += out
            planned += [(h, a) for a in out]
        st["planned"] = planned
        return actions, None

    #: action types the planner derives itself as prerequisites (not planned from hints)
    PREREQUISITE_TYPES = ("navigate", "open_storage", "open_appliance", "close_storage",
                          "close_appliance")
    FAMILY_ORDER = ("retrieve", "access", "transition", "split", "merge", "manipulate",
                    "distribute", "clean", "order", "monitor", "sense", "block", "leave")

    def _steps(self, view: PlannerView, st: dict) -> list[tuple[str, list | None]]:
        """Hinted steps in a workable order.

        Hints may be ground (``type(args)``: kept in order) or bare types (an unordered
        set). For bare types: when a retrieval or a put-down is hinted, every item of the
        group is first brought to the work surface (where the agent stood when the group
        began);
        then the other hinted types are planned once each, ordered by family; last, each
        item the instruction says where to put ("Put the mug 2 in the dishwasher.") is
        put there (it is not brought to the work surface first).
        """
        hints = hint_steps(view)
        if any(args is not None for _, args in hints):
            return hints
        if "steps" in st:
            return st["steps"]
        schema = view.action_schema
        main = [t for t, _ in hints if t not in self.PREREQUISITE_TYPES]
        fam = {t: schema[t].get("family", "") for t in main}
        steps: list[tuple[str, list | None]] = []
        home = view.observation.get("region")
        # destinations the instruction states: the item goes there, last
        named = [(o, f) for o, f in named_put_downs(view)
                 if self._kind_action(view, f, PUT_BY_FIXTURE) is not None]
        placed = {o for o, _ in named}
        # a hinted retrieval or put-down handles the group's items: with no stated
        # destination they end on the work surface (a put-down alone is the second half
        # of a handling an earlier group began: the item is in the hand)
        if any(f in ("retrieve", "leave") for f in fam.values()) and home is not None:
            put = self._kind_action(view, home, PUT_BY_FIXTURE)
            if put is not None:
                for o in view.objects:
                    ty = view.object_types.get(o)
                    if o in view.regions or o in placed or not is_subtype(view.types, ty, "item"):
                        continue
                    steps.append((put, [o, home]))
        order = {f: i for i, f in enumerate(self.FAMILY_ORDER)}
        rest = sorted((t for t in main if fam[t] not in ("retrieve", "leave")),
                      key=lambda t: (order.get(fam[t], len(order)), t))
        steps += [(t, None) for t in rest]
        steps += [(self._kind_action(view, f, PUT_BY_FIXTURE), [o, f]) for o, f in named]
        st["steps"] = steps
        return steps

    def _perturb(self, view: PlannerView, actions: list[dict]) -> list[dict]:
        return actions

    def propose(self, view: PlannerView) -> str:
        actions, query = self.plan(view)
        return plan_json(self._perturb(view, actions), query)


class NoisyBindingPlanner(BeliefSearchPlanner):
    """belief_search with wrong bindings and occasional malformed output (seeded)."""

    name = "noisy_search_binding"

    def __init__(self, seed: int = 0, p_wrong_binding: float = 0.25, p_malformed: float = 0.02,
                 **kw):
        super().__init__(seed=seed, **kw)
        self.p_wrong_binding = float(p_wrong_binding)
        self.p_malformed = float(p_malformed)

    def config(self) -> dict:
        return {**super().config(), "p_wrong_binding": self.p_wrong_binding,
                "p_malformed": self.p_malformed}

    def _perturb(self, view, actions):
        rng = view.rng(self.seed)
        out = []
        for a in actions:
            a = {"type": a["type"], "args": list(a["args"])}
            if a["args"] and rng.random() < self.p_wrong_binding:
                i = int(rng.integers(len(a["args"])))
                ty = view.object_types.get(a["args"][i])
                parent = view.types.get(ty) if ty else None
                pool = sorted(e for e, t in view.object_types.items()
                              if e != a["args"][i] and parent is not None
                              and is_subtype(view.types, t, parent))
                if pool:
                    a["args"][i] = pool[int(rng.integers(len(pool)))]
            out.append(a)
        return out

    def propose(self, view):
        text = super().propose(view)
        if view.rng(self.seed + 1).random() < self.p_malformed:
            return text[: len(text) // 2]  # a truncated completion, as models produce
        return text


class NoisySkipPlanner(BeliefSearchPlanner):
    """belief_search that drops planned steps at a seeded rate."""

    name = "noisy_search_skip"

    def __init__(self, seed: int = 0, p_skip: float = 0.25, **kw):
        super().__init__(seed=seed, **kw)
        self.p_skip = float(p_skip)

    def config(self) -> dict:
        return {**super().config(), "p_skip": self.p_skip}

    def _perturb(self, view, actions):
        rng = view.rng(self.seed)
        keep = [a for a in actions if rng.random() >= self.p_skip]
        return keep

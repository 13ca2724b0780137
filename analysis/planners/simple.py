"""Three simple baselines: ``greedy_hints``, ``lexicon`` and ``random_hints``.

* ``greedy_hints`` follows the hints in order, binding each parameter to the first
  known entity of the right type (hinted arguments kept as given). It plans no
  prerequisites and never queries, so it leans on the runtime's navigation/open repair;
  wrong first-fit bindings are its failure mode. On a replan it continues with the
  hints after the failed one.
* ``lexicon`` ignores the hints: it maps the instruction's verbs to action types
  through a small lexicon over HD-EPIC verb classes (``take``, ``put``, ``open``,
  ``pour``, ``mix``...) and binds the nouns it finds among the group's objects,
  without checking preconditions. Instructions with no known verb give an empty plan;
  after a rejection it gives up (an empty replan), so it ends ``completed`` with few
  conditions met.
* ``random_hints`` samples 3-12 actions uniformly: a hinted type (any type when there
  are no hints) and type-correct arguments among the known entities. Every replan
  samples afresh: many invalid attempts, some blocked groups.

>>> from analysis.planners.base import parse_hint
>>> sorted(LexiconPlanner.LEXICON["stir"])
['stir']
"""
from __future__ import annotations

import re

from .base import PlannerView, plan_json
from .common import (BelievedState, bind_action, candidates_for, hint_steps, state_from_view)

__all__ = ["GreedyHintsPlanner", "LexiconPlanner", "RandomHintsPlanner"]


class GreedyHintsPlanner:
    name = "greedy_hints"

    def __init__(self, seed: int = 0):
        self.seed = int(seed)
        self._start: dict[str, int] = {}
        self._planned: dict[str, list] = {}

    def config(self) -> dict:
        return {"seed": self.seed}

    def propose(self, view: PlannerView) -> str:
        gkey = view.key.rsplit("/", 1)[0]
        start = self._start.get(gkey, 0)
        if view.call_index > 0:
            failed = next((fb for fb in reversed(view.feedback)
                           if fb.get("status") == "invalid" and fb.get("source") == "planner"),
                          None)
            if failed is not None:
                h = next((h for h, a in reversed(self._planned.get(gkey, []))
                          if a == failed["action"]), None)
                if h is not None:
                    start = h + 1
        self._start[gkey] = start
        state = BelievedState(agent=view.observation.get("region"), holding=view.holding)
        actions, planned = [], []
        for h, (t, hargs) in enumerate(hint_steps(view)):
            if h < start:
                continue
            args = bind_action(view, t, hargs, state, use_belief=False)
            if args is None:
                continue
            a = {"type": t, "args": args}
            actions.append(a)
            planned.append((h, a))
        self._planned[gkey] = planned
        return plan_json(actions)


class LexiconPlanner:
    name = "lexicon"

    #: verb (HD-EPIC class key or a frequent surface form) -> candidate action types.
    LEXICON = {
        "take": ["take_from_storage", "pick_up"], "get": ["take_from_storage", "pick_up"],
        "grab": ["pick_up"], "pick": ["pick_up"], "remove": ["take_from_storage"],
        "fetch": ["take_from_storage", "pick_up"],
        "put": ["put_on", "put_in_storage"], "place": ["put_on"], "leave": ["put_on"],
        "return": ["put_in_storage"], "store": ["put_in_storage"],
        "open": ["open_storage", "open_appliance", "open_container"],
        "close": ["close_storage", "close_appliance", "close_container"],
        "pour": ["pour"], "add": ["add_ingredient", "pour"], "insert": ["insert"],
        "stir": ["stir"], "mix": ["stir"], "whisk": ["whisk", "stir"],
        "cut": ["cut"], "chop": ["cut"], "slice": ["cut"], "peel": ["peel"],
        "wash": ["wash"], "rinse": ["wash"], "clean": ["wash"], "dry": ["dry"],
        "turn": ["turn_on"], "switch": ["turn_on"], "press": ["turn_on"], "boil": ["turn_on"],
        "fill": ["fill_from_tap"], "throw": ["throw_away"], "scoop": ["scoop"],
        "check": ["check"], "wait": ["wait"], "move": ["navigate"], "go": ["navigate"],
        "crack": ["break_into"], "break": ["break_into"], "grate": ["grate"],
        "spread": ["spread"], "sprinkle": ["sprinkle"], "squeeze": ["squeeze"],
        "measure": ["measure"], "weigh": ["measure"], "taste": ["taste"],
    }

    def __init__(self, seed: int = 0):
        self.seed = int(seed)

    def config(self) -> dict:
        return {"seed": self.seed, "lexicon_size": len(self.LEXICON)}

    def propose(self, view: PlannerView) -> str:
        if view.call_index > 0:
            return plan_json([])  # no recovery: it gives up after feedback
        words = re.findall(r"[a-z]+", view.instruction.lower())
        state = BelievedState(agent=view.observation.get("region"), holding=view.holding)
        actions = []
        for w in words:
            stem = w[:-1] if w.endswith("s") and w[:-1] in self.LEXICON else w
            for t in self.LEXICON.get(stem, []):
                if t not in view.action_schema:
                    continue
                args = bind_action(view, t, None, state, use_belief=False)
                if args is not None:
                    actions.append({"type": t, "args": args})
                    break
        return plan_json(actions)


class RandomHintsPlanner:
    name = "random_hints"

    def __init__(self, seed: int = 0, min_actions: int = 3, max_actions: int = 12):
        if not 1 <= min_actions <= max_actions:
            raise ValueError(f"min_actions={min_actions}, max_actions={max_actions}: "
                             "expected 1 <= min_actions <= max_actions")
        self.seed = int(seed)
        self.min_actions = int(min_actions)
        self.max_actions = int(max_actions)

    def config(self) -> dict:
        return {"seed": self.seed, "min_actions": self.min_actions,
                "max_actions": self.max_actions}

    def propose(self, view: PlannerView) -> str:
        rng = view.rng(self.seed)
        types = [t for t, _ in hint_steps(view)] or sorted(view.action_schema)
        state = state_from_view(view)
        n = int(rng.integers(self.min_actions, self.max_actions + 1))
        actions = []
        for _ in range(n):
            t = types[int(rng.integers(len(types)))]
            args = []
            for _, ptype in view.action_schema[t]["params"]:
                pool = candidates_for(view, ptype, state)
                if not pool:
                    break
                args.append(pool[int(rng.integers(len(pool)))])
            else:
                actions.append({"type": t, "args": args})
        return plan_json(actions)

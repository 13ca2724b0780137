"""Planners: the interface and the six baselines (see docs/planners.md).

>>> sorted(PLANNERS)
['belief_search', 'greedy_hints', 'lexicon', 'noisy_search_binding', 'noisy_search_skip', 'random_hints']
>>> make_planner("belief_search", seed=1).name
'belief_search'
"""
from __future__ import annotations

from .base import (Plan, PlanParseError, Planner, PlannerResponse, PlannerView, count_tokens,
                   parse_plan, render_prompt)
from .search import BeliefSearchPlanner, NoisyBindingPlanner, NoisySkipPlanner
from .simple import GreedyHintsPlanner, LexiconPlanner, RandomHintsPlanner
from .chat import ChatPlanner

__all__ = ["PLANNERS", "ADAPTERS", "make_planner", "Planner", "PlannerView", "PlannerResponse", "Plan",
           "PlanParseError", "parse_plan", "render_prompt", "count_tokens"]

#: name -> planner class; each takes ``seed`` plus its own keyword settings.
PLANNERS = {
    "belief_search": BeliefSearchPlanner,
    "greedy_hints": GreedyHintsPlanner,
    "lexicon": LexiconPlanner,
    "random_hints": RandomHintsPlanner,
    "noisy_search_binding": NoisyBindingPlanner,
    "noisy_search_skip": NoisySkipPlanner,
}

#: planners that need an external service (configured in configs/planner/<name>.yaml)
ADAPTERS = {"chat": ChatPlanner}


def make_planner(name: str, seed: int = 0, **settings) -> Planner:
    """A fresh planner instance (one per episode: planners may keep per-group state)."""
    cls = PLANNERS.get(name) or ADAPTERS.get(name)
    if cls is None:
        raise ValueError(f"planner={name!r}: expected one of {sorted(PLANNERS | ADAPTERS)}")
    return cls(seed=seed, **settings)

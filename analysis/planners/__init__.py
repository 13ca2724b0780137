"""Planners: the interface and the six baselines (see docs/planners.md).

A planner is named by its registry key (``belief_search``) or, for a planner that lives
outside this package, by an import path ``package.module:ClassName``.

>>> sorted(PLANNERS)
['belief_search', 'greedy_hints', 'lexicon', 'noisy_search_binding', 'noisy_search_skip', 'random_hints']
>>> make_planner("belief_search", seed=1).name
'belief_search'
"""
from __future__ import annotations

import importlib

from analysis.records.schemas import PLANNER_NAME

from .base import (Plan, PlanParseError, Planner, PlannerResponse, PlannerView, count_tokens,
                   parse_plan, render_prompt)
from .search import BeliefSearchPlanner, NoisyBindingPlanner, NoisySkipPlanner
from .simple import GreedyHintsPlanner, LexiconPlanner, RandomHintsPlanner
from .chat import ChatPlanner, ChatSchemaPlanner

__all__ = ["PLANNERS", "ADAPTERS", "make_planner", "planner_class", "planner_label", "Planner", "PlannerView", "PlannerResponse", "Plan",
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
ADAPTERS = {"chat": ChatPlanner, "chat_schema": ChatSchemaPlanner}


def planner_class(name: str) -> type:
    """The class behind ``name``: a registry key or an import path ``module:ClassName``.

    >>> planner_class("analysis.planners.simple:GreedyHintsPlanner").name
    'greedy_hints'
    """
    cls = PLANNERS.get(name) or ADAPTERS.get(name)
    if cls is not None:
        return cls
    if ":" in name:
        module, _, attr = name.partition(":")
        try:
            cls = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as exc:
            hint = ""
            missing = getattr(exc, "name", None) if isinstance(exc, ModuleNotFoundError) else None
            if missing and (module == missing or module.startswith(missing + ".")):
                # the planner's own package is not found: where Python looks is the fix
                top = module.split(".")[0]
                hint = (f"; Python does not find module {missing!r}: check the name, and "
                        f"put the folder that holds {top}/ on PYTHONPATH "
                        "(PYTHONPATH=/path/to/that/folder python -m analysis.run ...) or "
                        "install its package (pip install -e ...)")
            raise ValueError(f"planner={name!r}: cannot import {attr!r} from {module!r} "
                             f"({exc}){hint}") from exc
        if not callable(getattr(cls, "propose", None)):
            raise ValueError(f"planner={name!r}: {attr} has no propose(view) method "
                             "(see docs/planners.md)")
        return cls
    raise ValueError(f"planner={name!r}: expected one of {sorted(PLANNERS | ADAPTERS)} "
                     "or an import path 'package.module:ClassName'")


def planner_label(name: str) -> str:
    """The name a run records: the registry key, or the imported class's ``name``."""
    if ":" not in name:
        planner_class(name)
        return name
    label = getattr(planner_class(name), "name", None)
    if not isinstance(label, str) or not PLANNER_NAME.match(label):
        raise ValueError(f"planner={name!r}: its class needs a `name` attribute of lowercase "
                         f"letters, digits and single '-' or '_' (it names the run folder), got {label!r}")
    return label


def check_settings(name: str, settings: dict) -> None:
    """Refuse, before any work, a setting the planner's constructor does not take (a
    typo in ``planner.settings.<key>=``), naming it and the settings it takes; a
    constructor with ``**kwargs`` takes any.

    >>> check_settings("analysis.planners.simple:GreedyHintsPlanner", {"sed": 1})
    Traceback (most recent call last):
    ...
    ValueError: planner.settings.sed: GreedyHintsPlanner takes no such setting (it takes: seed)
    """
    import inspect
    cls = planner_class(name)
    params = inspect.signature(cls.__init__).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    takes = [k for k, p in params.items() if k != "self"
             and p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)]
    for key in settings:
        if key not in takes:
            raise ValueError(f"planner.settings.{key}: {cls.__name__} takes no such setting "
                             f"(it takes: {', '.join(takes) or 'nothing'})")


def make_planner(name: str, seed: int = 0, **settings) -> Planner:
    """A fresh planner instance (one per episode: planners may keep per-group state)."""
    return planner_class(name)(seed=seed, **settings)

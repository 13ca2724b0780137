"""Compatibility alias: the planner protocol lives in :mod:`analysis.executor.protocol`
(the runtime loop and the planners both import it from there).

>>> from analysis.planners.base import PlannerView
>>> PlannerView.__module__
'analysis.executor.protocol'
"""
from analysis.executor.protocol import (Plan, PlanParseError, Planner, PlannerResponse,  # noqa: F401
                                        PlannerView, ProviderError, count_tokens, parse_hint,
                                        parse_plan, plan_json, render_prompt)
from analysis.executor.protocol import __all__  # noqa: F401

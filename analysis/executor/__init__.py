"""Symbolic executor: world, rules, executor, contracts, PDDL export.

>>> from analysis.executor import Executor, Rules, World
>>> Executor(Rules.load()).apply(World({}, []), {"type": "fly", "args": []}).failed_checks
['known_action_type']
"""
from .world import World
from .rules import Rules, RulesError
from .executor import Executor, Outcome
from .contracts import (FALSE, TRUE, UNKNOWN, ContractResult, evaluate_condition,
                        evaluate_contract)
from .pddl import domain_pddl, problem_pddl

__all__ = ["World", "Rules", "RulesError", "Executor", "Outcome", "TRUE", "FALSE",
           "UNKNOWN", "ContractResult", "evaluate_condition", "evaluate_contract",
           "domain_pddl", "problem_pddl"]

# --- observation / belief / runtime / replay: re-exports go below this line ---
from .observation import Observer, RegionObservation, observe_region  # noqa: E402
from .belief import Belief  # noqa: E402
from .runtime import RuntimeConfig, find_repair, run_episode  # noqa: E402
from .replay import Divergence, ReplayReport, replay_run  # noqa: E402
__all__ += ["Observer", "RegionObservation", "observe_region", "Belief", "RuntimeConfig",
            "find_repair", "run_episode", "Divergence", "ReplayReport", "replay_run"]

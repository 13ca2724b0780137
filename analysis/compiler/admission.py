"""Task admission (paper appendix A.3: reference replay, goal validation and a non-trivial
predicate check before contracts are frozen; docs/compiler.md, "Tasks, admission, suites"): reference replay satisfies the contract (every
condition TRUE at the task's end), the initial state fails it, and no condition is already
TRUE when the task starts.

A contract fails a state when not all of its conditions are TRUE there. *Every*
condition must be FALSE in the episode's initial world (what a planner that never acts
sees) and in the reference state at the task's start: a condition
that already holds there is credit a planner gets for doing nothing (GCR would rise
without a single accepted action), so checking the whole contract is not enough
(``tasks.unit_tasks`` already leaves such end states out; this is the gate)."""
from __future__ import annotations

from types import MappingProxyType

from analysis.executor import TRUE, World, evaluate_condition

from .sim import Sim


def replay(sim: Sim, objects: dict, facts: frozenset, group_recs: list[dict]):
    """Replay every group's operations in order. Returns ``(states, events, rejected)``:
    ``states[i]`` = facts after group ``i`` (``states[-1]`` is the initial world via key -1),
    ``events[i]`` = accepted events of group ``i``."""
    states = {-1: facts}
    events, rejected = {}, []
    for i, g in enumerate(group_recs):
        evs = []
        for op in g["operations"]:
            action = {"type": op["type"], "args": op["args"]}
            ok, failed, facts = sim.apply(objects, facts, action)
            if ok:
                evs.append(action)
            else:
                rejected.append((g["group_id"], action, failed))
        states[i] = facts
        events[i] = evs
    return states, events, rejected


def truth(cond: dict, facts: frozenset, events: list[dict], objects: dict) -> bool:
    """Whether ``cond`` is TRUE, by the executor's own contract semantics (UNKNOWN, e.g. an
    entity absent from the world, counts as not met)."""
    world = World._trusted(MappingProxyType(objects), facts)
    return evaluate_condition(cond, world, events, groups_completed=True) is TRUE


def contract_holds(task: dict, states, events, objects) -> bool:
    end = states[task["last"]]
    evs = [e for i in task.get("groups", range(task["first"], task["last"] + 1)) for e in events[i]]
    return all(truth(c, end, evs, objects) for c in task["conditions"])


def state_holds(task: dict, facts: frozenset, objects) -> bool:
    """Every condition TRUE in a state with an empty event log (the initial world, the
    task's start): only terminal contracts can hold there."""
    return all(truth(c, facts, [], objects) for c in task["conditions"])


def admit(task: dict, states, events, objects) -> tuple[bool, str, str]:
    """``(admitted, reason, detail)``."""
    if not contract_holds(task, states, events, objects):
        end = states[task["last"]]
        evs = [e for i in task.get("groups", range(task["first"], task["last"] + 1)) for e in events[i]]
        bad = [c["id"] for c in task["conditions"] if not truth(c, end, evs, objects)]
        return False, "reference_fails", f"reference replay leaves {', '.join(bad)} not TRUE"
    c1 = task["conditions"][0]
    if truth(c1, states[-1], [], objects) or state_holds(task, states[-1], objects):
        return False, "initial_passes", "the recorded initial state already satisfies c1"
    start = states[task["first"] - 1]
    if task["tier"] == "terminal" and (truth(c1, start, [], objects)
                                       or state_holds(task, start, objects)):
        return False, "trivially_true", "c1 already holds when the task starts"
    held = true_at_start(task, states, objects)
    if held:
        return False, "condition_true_at_start", (f"{', '.join(held)} already TRUE in the reference "
                                                  "state at the task's start (free credit)")
    held = [c["id"] for c in task["conditions"] if truth(c, states[-1], [], objects)]
    if held:
        return False, "initial_passes", (f"{', '.join(held)} TRUE in the initial world (free credit "
                                         "for a planner that never changes it)")
    return True, "", ""


def true_at_start(task: dict, states, objects) -> list[str]:
    """IDs of the conditions TRUE in the reference state at the task's start (an empty
    event log there, so an event condition never is)."""
    start = states[task["first"] - 1]
    return [c["id"] for c in task["conditions"] if truth(c, start, [], objects)]

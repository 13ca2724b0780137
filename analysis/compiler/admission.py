"""Task admission (DESIGN.md section 7): reference replay satisfies the contract, the
initial state fails it, and it is not trivially true (already true when the task starts)."""
from __future__ import annotations

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
    if cond["kind"] == "atom":
        atom = tuple(cond["atom"])
        if any(a not in objects for a in atom[1:]):
            return False      # UNKNOWN counts as not met
        return atom in facts
    ev = cond["event"]
    return any(e["type"] == ev["type"] and len(e["args"]) == len(ev["args"]) and
               all(x is None or x == y for x, y in zip(ev["args"], e["args"])) for e in events)


def contract_holds(task: dict, states, events, objects) -> bool:
    end = states[task["last"]]
    evs = [e for i in range(task["first"], task["last"] + 1) for e in events[i]]
    return all(truth(c, end, evs, objects) for c in task["conditions"])


def admit(task: dict, states, events, objects) -> tuple[bool, str, str]:
    """``(admitted, reason, detail)``."""
    if not contract_holds(task, states, events, objects):
        return False, "reference_fails", "reference replay does not satisfy the contract"
    if any(truth(c, states[-1], [], objects) for c in task["conditions"]):
        return False, "initial_passes", "the recorded initial state already satisfies a condition"
    if task["tier"] == "terminal" and all(
            truth(c, states[task["first"] - 1], [], objects) for c in task["conditions"]):
        return False, "trivially_true", "conditions already hold when the task starts"
    return True, "", ""

"""Contract evaluation (ARCHITECTURE.md section 4): from the world or the event log only.

A terminal condition checks an atom in the world at the task's end; an event condition
checks the accepted-event log of the task's groups (``None`` in args is a wildcard).
Truth is TRUE, FALSE or UNKNOWN; UNKNOWN (missing evidence) counts as not met.

>>> from analysis.executor import World
>>> w = World({"squash": "squash", "glass": "glass"}, [("in", "squash", "glass")])
>>> c = {"id": "c1", "kind": "atom", "atom": ["in", "squash", "glass"]}
>>> evaluate_condition(c, w, [], groups_completed=True)
<Truth.TRUE: 'TRUE'>
>>> evaluate_condition(c, w, [], groups_completed=False)
<Truth.UNKNOWN: 'UNKNOWN'>
>>> e = {"id": "c2", "kind": "event", "event": {"type": "stir", "args": [None, "cup", None]}}
>>> evaluate_condition(e, w, [{"type": "stir", "args": ["spoon", "cup", "counter"]}], True)
<Truth.TRUE: 'TRUE'>
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, Iterable, Mapping

from .world import World

__all__ = ["Truth", "TRUE", "FALSE", "UNKNOWN", "ContractResult", "ConditionError",
           "validate_condition", "evaluate_condition", "evaluate_contract"]


class Truth(str, Enum):
    """A condition's truth; a ``str`` so that it serialises as "TRUE"/"FALSE"/"UNKNOWN"."""
    TRUE = "TRUE"
    FALSE = "FALSE"
    UNKNOWN = "UNKNOWN"


TRUE, FALSE, UNKNOWN = Truth.TRUE, Truth.FALSE, Truth.UNKNOWN
KINDS = ("atom", "event")


class ConditionError(ValueError):
    """A malformed condition or contract; the message names the field and allowed values."""


@dataclass(frozen=True)
class ContractResult:
    truths: dict[str, Truth]   # condition id -> truth, in contract order
    all_true: bool             # every condition TRUE (an empty contract is not met)
    n_true: int


def validate_condition(condition: Any) -> None:
    """Raise :class:`ConditionError` unless ``condition`` is well formed.

    >>> validate_condition({"id": "c1", "kind": "state", "atom": []})
    Traceback (most recent call last):
    ...
    analysis.executor.contracts.ConditionError: condition.kind: 'state' is not one of ('atom', 'event')
    """
    if not isinstance(condition, Mapping):
        raise ConditionError(f"condition: expected a mapping, got {type(condition).__name__}")
    if not isinstance(condition.get("id"), str) or not condition["id"]:
        raise ConditionError("condition.id: required non-empty string")
    kind = condition.get("kind")
    if kind not in KINDS:
        raise ConditionError(f"condition.kind: {kind!r} is not one of {KINDS}")
    cid = condition["id"]
    if kind == "atom":
        atom = condition.get("atom")
        if not (isinstance(atom, list) and atom and all(isinstance(x, str) for x in atom)):
            raise ConditionError(f"condition {cid}: 'atom' must be a non-empty list of "
                                 f"strings [predicate, args...], got {atom!r}")
    else:
        ev = condition.get("event")
        if not isinstance(ev, Mapping) or not isinstance(ev.get("type"), str):
            raise ConditionError(f"condition {cid}: 'event' must be a mapping with a string "
                                 f"'type', got {ev!r}")
        args = ev.get("args", [])
        if not isinstance(args, list) or not all(a is None or isinstance(a, str) for a in args):
            raise ConditionError(f"condition {cid}: 'event.args' must be a list of strings or "
                                 f"null wildcards, got {args!r}")


def _event_matches(pattern: Mapping, event: Mapping) -> bool:
    if event.get("type") != pattern["type"]:
        return False
    want = pattern.get("args", [])
    got = event.get("args", [])
    return len(want) == len(got) and all(w is None or w == g for w, g in zip(want, got))


def evaluate_condition(condition: Mapping, world: World, events: Iterable[Mapping],
                       groups_completed: bool) -> Truth:
    """Truth of one condition at the task's end (see the module docstring).

    ``events``: the accepted events (``{"type", "args"}``) of the task's groups.
    ``groups_completed``: every group of the task ended ``completed``.
    """
    validate_condition(condition)
    if condition["kind"] == "atom":
        atom = condition["atom"]
        # An incomplete task gives no evidence of its end state; an atom naming an entity
        # the world does not have cannot be decided either way.
        if not groups_completed or any(x not in world.objects for x in atom[1:]):
            return UNKNOWN
        return TRUE if world.holds(atom) else FALSE
    pattern = condition["event"]
    if any(_event_matches(pattern, e) for e in events):
        return TRUE
    return FALSE if groups_completed else UNKNOWN


def evaluate_contract(contract: Mapping, world: World, events: Iterable[Mapping],
                      groups_completed: bool) -> ContractResult:
    """Evaluate every condition of ``{"tier", "conditions": [...]}``.

    >>> from analysis.executor import World
    >>> w = World({"cup": "cup"}, [("mixed", "cup")])
    >>> r = evaluate_contract({"tier": "terminal", "conditions": [
    ...     {"id": "c1", "kind": "atom", "atom": ["mixed", "cup"]},
    ...     {"id": "c2", "kind": "atom", "atom": ["cut", "cup"]}]}, w, [], True)
    >>> r.n_true, r.all_true, r.truths["c2"].value
    (1, False, 'FALSE')
    """
    if not isinstance(contract, Mapping) or not isinstance(contract.get("conditions"), list):
        raise ConditionError("contract: expected a mapping with a 'conditions' list")
    events = list(events)
    truths: dict[str, Truth] = {}
    for cond in contract["conditions"]:
        validate_condition(cond)
        if cond["id"] in truths:
            raise ConditionError(f"contract: duplicate condition id {cond['id']!r}")
        truths[cond["id"]] = evaluate_condition(cond, world, events, groups_completed)
    n_true = sum(t is TRUE for t in truths.values())
    return ContractResult(truths, bool(truths) and n_true == len(truths), n_true)

"""The executor: checks an action against the world and applies its STRIPS effects.

``Executor(rules).apply(world, action)`` runs, in this order, the built-in checks
``known_action_type``, ``arity``, ``known_object:<param>``, ``type:<param>`` and then
every named precondition of the rule, and reports *every* failed check by name. An
invalid action returns the same ``World`` object; an accepted one returns the successor
``(facts - del) | add`` with the transition and the event.

>>> from analysis.executor import Rules, World
>>> ex = Executor(Rules.load())
>>> w = World({"glass": "glass", "counter": "counter"},
...           [("agent-at", "counter"), ("at", "glass", "counter"), ("hand-empty",)])
>>> out = ex.apply(w, {"type": "pick_up", "args": ["glass", "counter"]})
>>> out.accepted, out.transition["added"], out.event
(True, [['holding', 'glass']], {'type': 'pick_up', 'args': ['glass', 'counter']})
>>> bad = ex.apply(out.world, {"type": "pick_up", "args": ["glass", "counter"]})
>>> bad.accepted, bad.failed_checks, bad.world is out.world
(False, ['object_at_source', 'hand_empty'], True)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .rules import Rules
from .world import World

__all__ = ["Executor", "Outcome"]

# Names of the built-in checks for malformed input (before any rule is looked up).
MALFORMED_ACTION = "malformed_action"      # the action is not a mapping
FIELD_TYPE = "field:type"                  # "type" missing or not a string
FIELD_ARGS = "field:args"                  # "args" missing or not a list of strings
KNOWN_ACTION_TYPE = "known_action_type"
ARITY = "arity"


@dataclass(frozen=True, slots=True)
class Outcome:
    """Result of one attempt. ``world`` is the input object itself when invalid."""
    accepted: bool
    failed_checks: list[str]
    world: World
    transition: dict | None
    event: dict | None


@dataclass(frozen=True, slots=True)
class _Compiled:
    # Everything apply() needs, as tuples of argument indices, so that grounding an atom
    # is one tuple build and no dictionary lookups by parameter name.
    name: str
    arity: int
    param_checks: tuple[tuple[str, str, frozenset], ...]  # (known_object:p, type:p, types)
    pre: tuple[tuple[str, str, tuple[int, ...], bool], ...]  # (name, pred, idx, negated)
    add: tuple[tuple[str, tuple[int, ...]], ...]
    delete: tuple[tuple[str, tuple[int, ...]], ...]


def _compile(rules: Rules) -> dict[str, _Compiled]:
    out = {}
    for name, a in rules.actions.items():
        index = {p.name: i for i, p in enumerate(a.params)}
        out[name] = _Compiled(
            name=name,
            arity=len(a.params),
            param_checks=tuple((f"known_object:{p.name}", f"type:{p.name}",
                                rules.descendants(p.type)) for p in a.params),
            pre=tuple((c.name, c.atom.predicate, tuple(index[x] for x in c.atom.args),
                       c.negated) for c in a.pre),
            add=tuple((t.predicate, tuple(index[x] for x in t.args)) for t in a.add),
            delete=tuple((t.predicate, tuple(index[x] for x in t.args)) for t in a.delete),
        )
    return out


class Executor:
    """Applies actions under a rule set compiled once at construction."""

    def __init__(self, rules: Rules):
        self.rules = rules
        self._compiled = _compile(rules)

    def check(self, world: World, action: Any) -> list[str]:
        """Names of every failed check of ``action`` in ``world`` (empty when valid).

        >>> Executor(Rules.load()).check(World({}, []), {"type": "fly", "args": []})
        ['known_action_type']
        """
        failed, _ = self._check(world, action)
        return failed

    def _check(self, world: World, action: Any) -> tuple[list[str], Any]:
        if not isinstance(action, dict):
            return [MALFORMED_ACTION], None
        t = action.get("type")
        args = action.get("args")
        failed = []
        if not isinstance(t, str):
            failed.append(FIELD_TYPE)
        if not isinstance(args, list) or not all(isinstance(x, str) for x in args):
            failed.append(FIELD_ARGS)
        if failed:
            return failed, None
        c = self._compiled.get(t)
        if c is None:
            return [KNOWN_ACTION_TYPE], None
        if len(args) != c.arity:
            return [ARITY], None
        objects = world._objects
        for arg, (known, typed, allowed) in zip(args, c.param_checks):
            ty = objects.get(arg)
            if ty is None:
                failed.append(known)
            elif ty not in allowed:
                failed.append(typed)
        facts = world._facts
        for name, pred, idx, negated in c.pre:
            if ((pred, *[args[i] for i in idx]) in facts) is negated:
                failed.append(name)
        return failed, c

    def apply(self, world: World, action: Any) -> Outcome:
        """Check ``action`` and, when every check passes, apply its effects.

        Never raises on a malformed action: it is rejected with a named check.
        """
        failed, c = self._check(world, action)
        if failed:
            return Outcome(False, failed, world, None, None)
        args = action["args"]
        facts = world._facts
        dels = {(p, *[args[i] for i in idx]) for p, idx in c.delete}
        adds = {(p, *[args[i] for i in idx]) for p, idx in c.add}
        new_facts = (facts - dels) | adds
        # Report what really changed: an add of a fact already true is no change, and a
        # deleted-then-added atom stays (STRIPS: delete first, then add).
        added = sorted(adds - facts)
        removed = sorted((dels - adds) & facts)
        return Outcome(
            True, [], World._trusted(world._objects, new_facts),
            {"added": [list(a) for a in added], "removed": [list(a) for a in removed]},
            {"type": c.name, "args": list(args)},
        )

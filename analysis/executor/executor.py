"""The executor: checks an action against the world and applies its STRIPS effects.

``Executor(rules).apply(world, action)`` runs, in this order, the built-in checks
``known_action_type``, ``arity``, ``known_object:<param>``, ``type:<param>`` and then
every named precondition of the rule, and reports *every* failed check by name. An
invalid action returns the same ``World`` object; an accepted one returns the successor
``(facts - del) | add`` with the transition and the event. The successor stores only the
change until its facts are read (``World._successor``): copying the fact set was most of
the cost of an accepted attempt.

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


class Outcome:
    """Result of one attempt. ``world`` is the input object itself when invalid.

    ``transition`` (``{"added": [...], "removed": [...]}``, atoms as sorted lists) and
    ``event`` (``{"type", "args"}``) are ``None`` for an invalid attempt. They are built
    on first access: a replay or a planner loop rarely reads them, and building sorted
    lists for every attempt cost more than the check itself.
    """

    __slots__ = ("accepted", "failed_checks", "world", "_before", "_changes", "_event",
                 "_transition", "_event_dict")

    def __init__(self, accepted, failed_checks, world, before=None, changes=None,
                 event=None):
        self.accepted = accepted
        self.failed_checks = failed_checks
        self.world = world
        self._before = before      # the world before the action (accepted only)
        self._changes = changes    # (deleted atoms, added atoms) of the rule
        self._event = event        # (type, args tuple)
        self._transition = self._event_dict = None

    @property
    def transition(self) -> dict | None:
        if self._transition is None and self.accepted:
            dels, adds = self._changes
            held = self._before._holding  # through the world's change: no copy of facts
            # Report what really changed: an add of a fact already true is no change,
            # and a deleted-then-added atom stays (STRIPS: delete first, then add).
            self._transition = {"added": [list(a) for a in sorted(adds - held(adds))],
                                "removed": [list(a) for a in sorted(held(dels - adds))]}
        return self._transition

    @property
    def event(self) -> dict | None:
        if self._event_dict is None and self.accepted:
            self._event_dict = {"type": self._event[0], "args": list(self._event[1])}
        return self._event_dict

    def __repr__(self) -> str:
        return (f"Outcome(accepted={self.accepted}, failed_checks={self.failed_checks}, "
                f"event={self.event})")


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
    check: Any = None     # generated: (args, facts, objects) -> list of failed check names


def _generate(c: _Compiled) -> Any:
    # Straight-line Python per action type (the semantics stay in the tuples above; this
    # only unrolls them): no loops, no index lookups, about 3x faster than interpreting.
    def atom(pred, idx):
        return "(" + "".join([repr(pred) + ", "] + [f"a[{i}], " for i in idx]) + ")"

    lines = ["def check(a, facts, objects, allowed):", "    failed = []"]
    for i, (known, typed, _) in enumerate(c.param_checks):
        lines += [f"    t = objects.get(a[{i}])",
                  f"    if t is None: failed.append({known!r})",
                  f"    elif t not in allowed[{i}]: failed.append({typed!r})"]
    for name, pred, idx, negated in c.pre:
        op = "in" if negated else "not in"
        lines.append(f"    if {atom(pred, idx)} {op} facts: failed.append({name!r})")
    lines.append("    return failed")
    ns: dict = {}
    exec("\n".join(lines), ns)  # noqa: S102 - source built from validated rule names only
    allowed = tuple(t for _, _, t in c.param_checks)
    check = ns["check"]
    return lambda a, facts, objects: check(a, facts, objects, allowed)


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
        object.__setattr__(out[name], "check", _generate(out[name]))
    return out


class Executor:
    """Applies actions under a rule set compiled once at construction."""

    def __init__(self, rules: Rules):
        self.rules = rules
        self._compiled = _compile(rules)
        # Grounded operators by (type, args): planners and replays submit the same few
        # hundred actions again and again, so grounding once makes the common case one
        # subset test, as in pyperplan. Only well-formed, known, right-arity actions enter.
        self._grounded: dict[tuple, _Grounded] = {}

    def check(self, world: World, action: Any) -> list[str]:
        """Names of every failed check of ``action`` in ``world`` (empty when valid).

        >>> Executor(Rules.load()).check(World({}, []), {"type": "fly", "args": []})
        ['known_action_type']
        """
        failed, c = self._resolve(action)
        if c is None:
            return failed
        return c.check(action["args"], world.facts, world._objects)

    def _resolve(self, action: Any) -> tuple[list[str], Any]:
        # The checks of the action's form, which need no world: (failed, None) or ([], c).
        if not isinstance(action, dict):
            return [MALFORMED_ACTION], None
        t = action.get("type")
        args = action.get("args")
        failed = []
        if not isinstance(t, str):
            failed.append(FIELD_TYPE)
        if type(args) is not list or not all(type(x) is str for x in args):
            failed.append(FIELD_ARGS)
        if failed:
            return failed, None
        c = self._compiled.get(t)
        if c is None:
            return [KNOWN_ACTION_TYPE], None
        if len(args) != c.arity:
            return [ARITY], None
        return [], c

    def _ground(self, c: _Compiled, args) -> "_Grounded":
        def atoms(spec):
            return frozenset((p, *(args[i] for i in idx)) for p, idx in spec)
        pos = frozenset((p, *(args[i] for i in idx)) for _, p, idx, neg in c.pre if not neg)
        negs = frozenset((p, *(args[i] for i in idx)) for _, p, idx, neg in c.pre if neg)
        named = tuple((name, (p, *(args[i] for i in idx)), neg) for name, p, idx, neg in c.pre)
        return _Grounded(c, tuple(args), tuple((t[2], a) for t, a in zip(c.param_checks, args)),
                         pos, negs, atoms(c.delete), atoms(c.add), named)

    def apply(self, world: World, action: Any) -> Outcome:
        """Check ``action`` and, when every check passes, apply its effects.

        Never raises on a malformed action: it is rejected with a named check.
        """
        g = None
        args = action.get("args") if type(action) is dict else None
        # Only a list may hit the cache: a tuple or a string of the same items makes the
        # same key, and must still fail field:args as on a first attempt.
        if type(args) is list:
            try:
                g = self._grounded.get((action.get("type"), tuple(args)))
            except TypeError:  # an unhashable type or argument: not grounded
                g = None
        if g is None:
            # Not grounded before: check the action's form, then ground it (and keep it,
            # up to a bound) so that it takes the same path as a repeated attempt.
            failed, c = self._resolve(action)
            if c is None:
                return Outcome(False, failed, world)
            g = self._ground(c, action["args"])
            if len(self._grounded) < 200_000:
                self._grounded[(c.name, g.args)] = g
        # Types are checked against this world's objects.
        objects = world._objects
        for allowed, arg in g.typed:
            if objects.get(arg) not in allowed:
                return Outcome(False, g.compiled.check(g.args, world.facts, objects), world)
        # The preconditions are tested through the world's change against its base (World:
        # facts == (base - minus) | plus, plus outside base, minus inside it), so that no
        # fact set is built: a few operations on sets the size of the preconditions (for a
        # materialised world, plus and minus are empty). The named failed checks are
        # computed only when this test fails.
        base, plus, minus = world._delta
        pos, neg = g.pos, g.neg
        if not (pos.isdisjoint(minus) and (pos <= base or pos - plus <= base)
                and neg.isdisjoint(plus)
                and (neg.isdisjoint(base) or (neg - minus).isdisjoint(base))):
            return Outcome(False, [n for n, atom, negated in g.named if world._has(atom) is negated],
                           world)
        return Outcome(True, [], world._successor(g.delete, g.add), world,
                       (g.delete, g.add), (g.compiled.name, g.args))


@dataclass(frozen=True, slots=True)
class _Grounded:
    compiled: _Compiled
    args: tuple
    typed: tuple            # ((allowed types, arg), ...)
    pos: frozenset          # positive preconditions
    neg: frozenset          # atoms that must be false
    delete: frozenset
    add: frozenset
    named: tuple            # ((check name, atom, negated), ...) in rule order

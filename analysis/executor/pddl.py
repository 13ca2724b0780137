"""PDDL export of the rules (domain) and of a world (problem).

Two modes: the default uses ``:negative-preconditions`` (read by unified-planning);
``positive_only=True`` compiles every negatively-tested predicate ``p`` into a
complementary ``not-p`` kept in step by the add/delete lists and initialised for every
well-typed ground atom that is false, for planners with positive STRIPS only
(pyperplan).

Object IDs are encoded reversibly as PDDL names (``encode_name``/``decode_name``):
PDDL is case-insensitive and names must start with a letter, so every ID gets the prefix
``o-`` and any character outside ``[a-z0-9_]`` becomes ``-<hex>-``.

>>> from analysis.executor import Rules, World
>>> encode_name("2nd_Glass"), decode_name(encode_name("2nd_Glass"))
('o-2nd_-47-lass', '2nd_Glass')
>>> "(:requirements :strips :typing :negative-preconditions)" in domain_pddl(Rules.load())
True
>>> w = World({"glass": "glass"}, [("dirty", "glass")])
>>> "(dirty o-glass)" in problem_pddl(Rules.load(), w, "p1")
True
"""
from __future__ import annotations

import itertools
import re
from typing import Iterable

from .rules import ROOT_TYPE, AtomTemplate, Rules
from .world import World

__all__ = ["domain_pddl", "problem_pddl", "encode_name", "decode_name",
           "negated_predicates", "DOMAIN_NAME"]

DOMAIN_NAME = "ego2world"
COMPLEMENT_PREFIX = "not-"
_SAFE = set("abcdefghijklmnopqrstuvwxyz0123456789_")


def encode_name(entity_id: str) -> str:
    """A PDDL name for an entity ID (see the module docstring)."""
    return "o-" + "".join(c if c in _SAFE else f"-{ord(c):x}-" for c in entity_id)


def decode_name(name: str) -> str:
    """Inverse of :func:`encode_name` (case-insensitive, as PDDL readers may lowercase)."""
    name = name.lower()
    if not name.startswith("o-"):
        raise ValueError(f"name: {name!r} was not produced by encode_name (no 'o-' prefix)")
    return re.sub(r"-([0-9a-f]+)-", lambda m: chr(int(m.group(1), 16)), name[2:])


def negated_predicates(rules: Rules) -> list[str]:
    """Predicates that some precondition tests negatively (sorted)."""
    return sorted({c.atom.predicate for a in rules.actions.values() for c in a.pre
                   if c.negated})


def _atom(pred: str, args: Iterable[str]) -> str:
    args = list(args)
    return f"({pred}{''.join(' ' + a for a in args)})"


def _tpl(t: AtomTemplate, pred: str | None = None) -> str:
    return _atom(pred or t.predicate, [f"?{a}" for a in t.args])


def _conj(parts: list[str], indent: str) -> str:
    if not parts:
        return "(and)"
    return "(and\n" + "".join(f"{indent}  {p}\n" for p in parts) + f"{indent})"


def _topological(rules: Rules) -> list[str]:
    depth = {}
    for t in rules.types:
        d, x = 0, t
        while x != ROOT_TYPE:
            x, d = rules.types[x], d + 1
        depth[t] = d
    return sorted(rules.types, key=lambda t: (depth[t], list(rules.types).index(t)))


def domain_pddl(rules: Rules, positive_only: bool = False) -> str:
    """The PDDL domain of ``rules``.

    ``positive_only``: compile negative preconditions into ``not-p`` predicates.
    """
    neg = set(negated_predicates(rules)) if positive_only else set()
    req = ":strips :typing" + ("" if positive_only else " :negative-preconditions")
    lines = [f"(define (domain {DOMAIN_NAME})", f"  (:requirements {req})", "  (:types"]
    # Parents before children, from an explicit root: pyperplan needs both.
    lines.append(f"    {ROOT_TYPE} - object")
    lines += [f"    {child} - {rules.types[child]}" for child in _topological(rules)]
    lines[-1] += ")"
    lines.append("  (:predicates")
    for pred, ptypes in rules.predicates.items():
        params = [f"?a{i} - {t}" for i, t in enumerate(ptypes)]
        lines.append(f"    ({pred}{''.join(' ' + p for p in params)})")
        if pred in neg:
            lines.append(f"    ({COMPLEMENT_PREFIX}{pred}{''.join(' ' + p for p in params)})")
    lines[-1] += ")"
    for name, a in rules.actions.items():
        pre = []
        for c in a.pre:
            if not c.negated:
                pre.append(_tpl(c.atom))
            elif positive_only:
                pre.append(_tpl(c.atom, COMPLEMENT_PREFIX + c.atom.predicate))
            else:
                pre.append(f"(not {_tpl(c.atom)})")
        eff = [f"(not {_tpl(t)})" for t in a.delete] + [_tpl(t) for t in a.add]
        if neg:
            eff += [_tpl(t, COMPLEMENT_PREFIX + t.predicate) for t in a.delete
                    if t.predicate in neg]
            eff += [f"(not {_tpl(t, COMPLEMENT_PREFIX + t.predicate)})" for t in a.add
                    if t.predicate in neg]
        params = " ".join(f"?{p.name} - {p.type}" for p in a.params)
        lines += [f"  (:action {name}",
                  f"    :parameters ({params})",
                  f"    :precondition {_conj(pre, '    ')}",
                  f"    :effect {_conj(eff, '    ')})"]
    lines.append(")")
    return "\n".join(lines) + "\n"


def _complement_atoms(rules: Rules, world: World, pred: str) -> list[tuple[str, ...]]:
    # Every well-typed ground atom of `pred` that is false in the world.
    pools = []
    for t in rules.predicates[pred]:
        ok = rules.descendants(t)
        pools.append(sorted(o for o, ty in world.objects.items() if ty in ok))
    return [(COMPLEMENT_PREFIX + pred, *args) for args in itertools.product(*pools)
            if (pred, *args) not in world.facts]


def problem_pddl(rules: Rules, world: World, name: str, goal_atoms: Iterable = (),
                 positive_only: bool = False) -> str:
    """A PDDL problem whose objects and init are ``world``'s; goal = ``goal_atoms``.

    >>> p = problem_pddl(Rules.load(), World({"cup": "cup"}, []), "demo", [("mixed", "cup")])
    >>> "(:goal (and\\n    (mixed o-cup)\\n  ))" in p
    True
    """
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]*", name):
        raise ValueError(f"name: {name!r} must be a PDDL name (a letter, then letters, "
                         "digits, '_' or '-')")
    unknown = sorted({t for t in world.objects.values() if t not in rules.types})
    if unknown:
        raise ValueError(f"world.objects: types {unknown} are not in the rules' types")
    init = sorted(world.facts)
    if positive_only:
        for pred in negated_predicates(rules):
            init += _complement_atoms(rules, world, pred)
    enc = [(a[0], [encode_name(x) for x in a[1:]]) for a in init]
    goal = [_atom(a[0], [encode_name(x) for x in a[1:]]) for a in goal_atoms]
    objs = [f"    {encode_name(o)} - {t}" for o, t in sorted(world.objects.items())]
    lines = [f"(define (problem {name})", f"  (:domain {DOMAIN_NAME})", "  (:objects"]
    lines += objs
    lines[-1] += ")"
    lines.append("  (:init")
    lines += [f"    {_atom(p, args)}" for p, args in enc]
    lines[-1] += ")"
    lines.append(f"  (:goal {_conj(goal, '  ')})")
    lines.append(")")
    return "\n".join(lines) + "\n"

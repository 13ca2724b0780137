"""Declarative STRIPS rules: types, predicates and action types (ARCHITECTURE.md section 2).

The rules are data (``rules.yaml`` next to this file). ``Rules.load()`` parses and
validates them; the executor compiles them once into check lists.

>>> rules = Rules.load()
>>> rules.actions["pick_up"].family
'retrieve'
>>> [p.name for p in rules.actions["pick_up"].params]
['o', 'f']
>>> rules.is_subtype("glass", "container")
True
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import yaml

__all__ = ["Param", "AtomTemplate", "Precondition", "ActionRule", "Rules", "RulesError",
           "DEFAULT_RULES_PATH", "is_subtype"]

DEFAULT_RULES_PATH = Path(__file__).with_name("rules.yaml")
ROOT_TYPE = "entity"



def is_subtype(types: Mapping[str, str], t: str | None, ancestor: str) -> bool:
    """Whether type ``t`` is ``ancestor`` or below it in a ``child -> parent`` map (the
    one walk of the hierarchy: rules, observation, planners and compiler all use it).

    >>> is_subtype({"glass": "container", "container": "item"}, "glass", "item")
    True
    """
    seen = set()
    while t is not None and t not in seen:
        if t == ancestor:
            return True
        seen.add(t)
        t = types.get(t)
    return False


class RulesError(ValueError):
    """A rule set that is not well formed; the message names the offending entry."""


@dataclass(frozen=True)
class Param:
    name: str
    type: str


@dataclass(frozen=True)
class AtomTemplate:
    """An atom over parameter names, e.g. ``("at", ("o", "f"))``."""
    predicate: str
    args: tuple[str, ...]

    def ground(self, binding: Mapping[str, str]) -> tuple[str, ...]:
        return (self.predicate, *(binding[a] for a in self.args))

    def to_list(self) -> list[str]:
        return [self.predicate, *self.args]


@dataclass(frozen=True)
class Precondition:
    name: str
    atom: AtomTemplate
    negated: bool

    def to_json(self) -> list:
        return ["not", self.atom.to_list()] if self.negated else self.atom.to_list()


@dataclass(frozen=True)
class ActionRule:
    name: str
    family: str
    params: tuple[Param, ...]
    pre: tuple[Precondition, ...]
    add: tuple[AtomTemplate, ...]
    delete: tuple[AtomTemplate, ...]

    def to_json(self) -> dict:
        return {
            "family": self.family,
            "params": [[p.name, p.type] for p in self.params],
            "pre": {c.name: c.to_json() for c in self.pre},
            "add": [a.to_list() for a in self.add],
            "del": [a.to_list() for a in self.delete],
        }


@dataclass(frozen=True)
class Rules:
    """A validated rule set. ``types`` maps child -> parent (root ``entity``)."""
    version: str
    types: Mapping[str, str]
    predicates: Mapping[str, tuple[str, ...]]
    actions: Mapping[str, ActionRule]

    # ------------------------------------------------------------------ loading
    @classmethod
    def load(cls, path: str | Path | None = None) -> "Rules":
        """Load rules from a YAML/JSON file; ``None`` means the packaged ``rules.yaml``.

        >>> len(Rules.load().actions) >= 60
        True
        """
        p = Path(path) if path is not None else DEFAULT_RULES_PATH
        with open(p, encoding="utf-8") as fh:
            data = yaml.safe_load(fh)
        return cls.from_dict(data)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Rules":
        """Build and validate rules from their JSON form (the cohort's ``rules.json``).

        >>> r = Rules.from_dict({"types": {"item": "entity"}, "predicates": {"held": ["item"]},
        ...     "actions": {"grab": {"family": "retrieve", "params": [["o", "item"]],
        ...                 "pre": {"free": ["not", ["held", "o"]]}, "add": [["held", "o"]]}}})
        >>> r.actions["grab"].pre[0].negated
        True
        """
        if not isinstance(data, Mapping):
            raise RulesError(f"rules: expected a mapping, got {type(data).__name__}")
        for key in ("types", "predicates", "actions"):
            if not isinstance(data.get(key), Mapping):
                raise RulesError(f"rules: field {key!r} must be a mapping")
        types = {str(k): str(v) for k, v in data["types"].items()}
        for child, parent in types.items():
            if child == ROOT_TYPE:
                raise RulesError(f"types: {ROOT_TYPE!r} is the root and has no parent")
            if parent != ROOT_TYPE and parent not in types:
                raise RulesError(f"types: parent {parent!r} of {child!r} is not a type")
            seen = {child}
            t = parent
            while t != ROOT_TYPE:  # cycle check: every chain must reach the root
                if t in seen:
                    raise RulesError(f"types: cycle through {child!r}")
                seen.add(t)
                t = types[t]
        known_types = set(types) | {ROOT_TYPE}
        predicates: dict[str, tuple[str, ...]] = {}
        for name, ptypes in data["predicates"].items():
            if not isinstance(ptypes, list) or any(t not in known_types for t in ptypes):
                raise RulesError(f"predicates: {name!r} parameter types must be a list of "
                                 f"known types, got {ptypes!r}")
            predicates[str(name)] = tuple(ptypes)
        rules = cls(version=str(data.get("rules_version", "unversioned")), types=types,
                    predicates=predicates, actions={})
        actions = {str(n): rules._parse_action(str(n), a) for n, a in data["actions"].items()}
        object.__setattr__(rules, "actions", actions)
        return rules

    def _parse_action(self, name: str, spec: Any) -> ActionRule:
        where = f"actions.{name}"
        if not isinstance(spec, Mapping):
            raise RulesError(f"{where}: expected a mapping")
        unknown = set(spec) - {"family", "params", "pre", "add", "del"}
        if unknown:
            raise RulesError(f"{where}: unknown fields {sorted(unknown)}; allowed: "
                             "family, params, pre, add, del")
        if not isinstance(spec.get("family"), str):
            raise RulesError(f"{where}.family: required string")
        params = []
        for p in spec.get("params") or []:
            if not (isinstance(p, list) and len(p) == 2
                    and (p[1] in self.types or p[1] == ROOT_TYPE)):
                raise RulesError(f"{where}.params: each entry is [name, type] with a known "
                                 f"type, got {p!r}")
            params.append(Param(str(p[0]), str(p[1])))
        ptype = {p.name: p.type for p in params}
        if len(ptype) != len(params):
            raise RulesError(f"{where}.params: duplicate parameter names")

        def atom(x: Any, field: str) -> AtomTemplate:
            if not (isinstance(x, list) and x and x[0] in self.predicates):
                raise RulesError(f"{where}.{field}: {x!r} is not [predicate, args...] with a "
                                 f"known predicate")
            pred, args = x[0], tuple(str(a) for a in x[1:])
            want = self.predicates[pred]
            if len(args) != len(want):
                raise RulesError(f"{where}.{field}: {pred} takes {len(want)} args, got {x!r}")
            for a, t in zip(args, want):
                if a not in ptype:
                    raise RulesError(f"{where}.{field}: {a!r} is not a parameter of {name}")
                if not self.is_subtype(ptype[a], t):
                    raise RulesError(f"{where}.{field}: parameter {a!r} of type "
                                     f"{ptype[a]!r} does not fit {pred}'s {t!r}")
            return AtomTemplate(pred, args)

        pre = []
        for cname, c in (spec.get("pre") or {}).items():
            negated = isinstance(c, list) and len(c) == 2 and c[0] == "not" \
                and isinstance(c[1], list)
            pre.append(Precondition(str(cname), atom(c[1] if negated else c, f"pre.{cname}"),
                                    negated))
        add = tuple(atom(x, "add") for x in spec.get("add") or [])
        delete = tuple(atom(x, "del") for x in spec.get("del") or [])
        return ActionRule(name, spec["family"], tuple(params), tuple(pre), add, delete)

    # ------------------------------------------------------------------- types
    def is_subtype(self, t: str, ancestor: str) -> bool:
        """True when ``t`` is ``ancestor`` or below it in the hierarchy.

        >>> Rules.load().is_subtype("fridge", "fixture"), Rules.load().is_subtype("fridge", "item")
        (True, False)
        """
        return is_subtype(self.types, t, ancestor)

    def leaf_types(self) -> list[str]:
        """Types with no children, sorted: the types world objects carry."""
        parents = set(self.types.values())
        return sorted(t for t in self.types if t not in parents)

    def descendants(self, t: str) -> frozenset[str]:
        """``t`` and every type below it (cached: the rules never change)."""
        cache = self.__dict__.setdefault("_descendants", {})
        if t not in cache:
            cache[t] = frozenset(c for c in (*self.types, ROOT_TYPE) if self.is_subtype(c, t))
        return cache[t]

    # --------------------------------------------------------------- exporting
    def to_json(self) -> dict:
        """The JSON form stored as the cohort's ``rules.json`` (FORMAT.md)."""
        return {
            "rules_version": self.version,
            "types": dict(self.types),
            "predicates": {k: list(v) for k, v in self.predicates.items()},
            "actions": {n: a.to_json() for n, a in self.actions.items()},
        }

    def markdown_table(self) -> str:
        """One Markdown row per action type: family, signature, preconditions, effects.

        >>> Rules.load().markdown_table().splitlines()[0]
        '| action | family | parameters | preconditions | adds | deletes |'
        """
        def fmt(a: AtomTemplate) -> str:
            return f"{a.predicate}({', '.join(a.args)})"

        rows = ["| action | family | parameters | preconditions | adds | deletes |",
                "|---|---|---|---|---|---|"]
        for name, a in self.actions.items():
            params = ", ".join(f"{p.name}: {p.type}" for p in a.params)
            pre = "<br>".join(f"`{c.name}`: {'not ' if c.negated else ''}{fmt(c.atom)}"
                              for c in a.pre) or "-"
            add = ", ".join(fmt(x) for x in a.add) or "-"
            dele = ", ".join(fmt(x) for x in a.delete) or "-"
            rows.append(f"| `{name}` | {a.family} | {params} | {pre} | {add} | {dele} |")
        return "\n".join(rows) + "\n"

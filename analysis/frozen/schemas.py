"""Schemas of every frozen record type, enforced on load (documented in docs/FORMAT.md).

A schema is plain data: ``{field: spec}`` where a spec is a type name (``"str"``,
``"int"``, ``"float"``, ``"bool"``, ``"dict"``, ``"any"``), ``"list[<spec>]"``,
``"<spec>|null"``, a set of allowed strings (an enum) or a nested schema dict. Fields
whose name ends in ``?`` are optional. Unknown fields are rejected so that a typo in a
writer cannot pass silently.

>>> validate("suite", {"suite": "planner", "task_ids": ["t1"], "episode_ids": ["e1"],
...                    "definition": "first episodes"})
>>> validate("suite", {"suite": "planner"})  # doctest: +IGNORE_EXCEPTION_DETAIL
Traceback (most recent call last):
...
analysis.frozen.schemas.SchemaError: field 'task_ids': missing
"""
from __future__ import annotations

import math
import re
from typing import Any

__all__ = ["SchemaError", "SCHEMAS", "ID_FIELDS", "PLANNER_NAME", "validate"]

#: A planner name: it names the run folder ``<planner>__<suite>__<memory>``, so it has no
#: double underscore (lowercase letters, digits, single ``-`` or ``_`` between them).
PLANNER_NAME = re.compile(r"^[a-z0-9]+(?:[-_][a-z0-9]+)*$")


class SchemaError(ValueError):
    """A record that does not match its schema; ``field`` is a dotted path."""

    def __init__(self, field: str, message: str):
        super().__init__(f"field {field!r}: {message}")
        self.field = field


ATOM = "list[str]"
ACTION = {"type": "str", "args": "list[str]"}
PROVENANCE = {"source": {"observed", "curated"}, "refs": "dict"}
TRUTH = {"TRUE", "FALSE", "UNKNOWN"}
GROUP_STATUS = {"completed", "execution_blocked", "parse_failure", "empty_plan"}

CONDITION = {"id": "str", "kind": {"atom", "event"}, "atom?": ATOM, "event?": "dict"}

GROUP = {
    "group_id": "str",
    "index": "int",
    "instruction": "str",
    "objects": "list[str]",
    "action_hints": "list[str]",
    "source": "dict",
    "operations": "list[op]",
}
OPERATION = {"type": "str", "args": "list[str]", "provenance": PROVENANCE}

ATTEMPT = {
    "index": "int",
    "source": {"planner", "repair"},
    "raw": "str|null",
    "action": "action|null",
    "status": {"accepted", "invalid"},
    "failed_checks": "list[str]",
}

SCHEMAS: dict[str, dict[str, Any]] = {
    "rules": {
        "rules_version": "str",
        "types": "dict",
        "predicates": "dict",
        "actions": "dict",
    },
    "scene": {
        "scene_id": "str",
        "fixtures": "list[dict]",
    },
    "episode": {
        "episode_id": "str",
        "scene_id": "str",
        "videos": "list[str]",
        "initial_world": {"objects": "dict", "facts": f"list[{ATOM}]"},
        "fact_provenance": "list[dict]",
        "anchors": "dict",
        "groups": "list[group]",
    },
    "task": {
        "task_id": "str",
        "episode_id": "str",
        "group_ids": "list[str]",
        "tier": {"terminal", "event"},
        "title": "str",
        "contract": {"tier": {"terminal", "event"}, "conditions": "list[condition]"},
        "reference_action_types": "list[str]",
        "provenance": "dict",
    },
    "suite": {
        "suite": "str",
        "task_ids": "list[str]",
        "episode_ids": "list[str]",
        "definition": "str",
    },
    "audit": {
        "check": "str",
        "task_id": "str|null",
        "condition_id": "str|null",
        "passed": "bool",
        "detail": "str",
    },
    "rejected_task": {
        "task_id": "str",
        "episode_id": "str",
        "reason": "str",
        "detail": "str",
    },
    "dropped_event": {
        "event_id": "str",
        "episode_id": "str|null",
        "kind": {"source", "track", "add", "cue"},
        "what": "str",
        "reason": "str",
        "time": "float|null",
        "refs": "dict",
    },
    "run": {
        "run_id": "str",
        "planner": "str",
        "memory": {"persistent", "reset"},
        "suite": "str",
        "seed": "int",
        "attempt_limit": "int",
        "cohort_sha256": "str",
        "planner_config": "dict",
    },
    "group_record": {
        "run_id": "str",
        "episode_id": "str",
        "group_id": "str",
        "status": GROUP_STATUS,
        "attempts": "list[attempt]",
        "queries": "list[query]",
        "planner_calls": "list[call]",
        "prompt_tokens": "int",
        "completion_tokens": "int",
        "belief": {
            "cross_group_hits": "int",
            "repeated_region_queries": "int",
            "anchor_delta_conflicts": "int",
        },
        "world_sha256_after": "str",
    },
    "task_record": {
        "run_id": "str",
        "task_id": "str",
        "episode_id": "str",
        "completed": "bool",
        "conditions": "list[truthrec]",
    },
}

# Named sub-schemas referenced by name inside type strings.
_NAMED: dict[str, Any] = {
    "group": GROUP,
    "op": OPERATION,
    "condition": CONDITION,
    "action": ACTION,
    "attempt": ATTEMPT,
    # what the observation reported about items (empty lists when it did not respond)
    # and how many of the group's attempts preceded it (orders it among state changes)
    "query": {"region": "str", "responded": "bool", "after_attempts": "int",
              "anchor": "list[str]", "visible": "list[str]", "added": "list[str]",
              "removed": "list[str]"},
    "call": {"raw": "str", "prompt_tokens": "int", "completion_tokens": "int"},
    "truthrec": {"id": "str", "truth": TRUTH},
}

#: Field(s) that identify a record, unique within a file (run-scoped files: within the run).
ID_FIELDS: dict[str, tuple[str, ...]] = {
    "scene": ("scene_id",),
    "episode": ("episode_id",),
    "task": ("task_id",),
    "suite": ("suite",),
    "rejected_task": ("task_id",),
    "dropped_event": ("event_id",),
    "run": ("run_id",),
    "group_record": ("group_id",),
    "task_record": ("task_id",),
    "audit": ("check", "task_id", "condition_id"),
}


class _Fail(Exception):
    """A mismatch deep in a record; each enclosing check adds its field or index on the
    way out, so the success path builds no path strings at all."""

    def __init__(self, message: str):
        self.message, self.parts = message, []

    def at(self, part) -> "_Fail":
        self.parts.append(part)
        return self

    def path(self) -> str:
        out = ""
        for part in reversed(self.parts):
            out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
        return out


def _is_finite_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


_PRIMITIVES = {
    "str": lambda v: type(v) is str,
    "int": lambda v: type(v) is int,
    "float": _is_finite_number,
    "bool": lambda v: type(v) is bool,
    "dict": lambda v: type(v) is dict,
    "any": lambda v: True,
}


def _compile(spec: Any):
    """A checker ``fn(value)`` for ``spec`` that raises :class:`_Fail` on a mismatch.

    Schemas are compiled once (validation of a large export runs the checkers millions of
    times; interpreting the spec strings on every value cost most of the load time).
    """
    if isinstance(spec, dict):
        fields = []
        for key, sub in spec.items():
            optional = key.endswith("?")
            fields.append((key[:-1] if optional else key, optional, _compile(sub)))
        known = frozenset(name for name, _, _ in fields)
        allowed = sorted(known)

        def check_object(v):
            if type(v) is not dict:
                raise _Fail(f"expected an object, got {type(v).__name__}")
            for name, optional, fn in fields:
                if name in v:
                    try:
                        fn(v[name])
                    except _Fail as f:
                        raise f.at(name)
                elif not optional:
                    raise _Fail("missing").at(name)
            if len(v) > len(fields) or not known.issuperset(v):
                extra = sorted(set(v) - known)[0]
                raise _Fail(f"unknown field (allowed: {allowed})").at(extra)
        return check_object
    if isinstance(spec, (set, frozenset)):
        choices = frozenset(spec)

        def check_enum(v):
            if type(v) is not str or v not in choices:
                raise _Fail(f"expected one of {sorted(choices)}, got {v!r}")
        return check_enum
    if spec.endswith("|null"):
        inner = _compile(spec[: -len("|null")])

        def check_nullable(v):
            if v is not None:
                inner(v)
        return check_nullable
    if spec.startswith("list[") and spec.endswith("]"):
        item = _compile(spec[5:-1])

        def check_list(v):
            if type(v) is not list:
                raise _Fail(f"expected a list, got {type(v).__name__}")
            for i, x in enumerate(v):
                try:
                    item(x)
                except _Fail as f:
                    raise f.at(i)
        return check_list
    if spec in _NAMED:
        return _compile(_NAMED[spec])
    ok = _PRIMITIVES.get(spec)
    if ok is None:
        raise KeyError(f"unknown schema spec {spec!r}")

    def check_primitive(v):
        if not ok(v):
            raise _Fail(f"expected {spec}, got {type(v).__name__} {v!r:.60}")
    return check_primitive


_CHECKERS: dict[str, Any] = {}


def validate(record_type: str, record: Any) -> None:
    """Raise :class:`SchemaError` unless ``record`` matches the schema of ``record_type``."""
    if record_type not in SCHEMAS:
        raise KeyError(f"record_type {record_type!r}: expected one of {sorted(SCHEMAS)}")
    check = _CHECKERS.get(record_type)
    if check is None:
        check = _CHECKERS[record_type] = _compile(SCHEMAS[record_type])
    try:
        check(record)
    except _Fail as f:
        raise SchemaError(f.path(), f.message) from None

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
from typing import Any

__all__ = ["SchemaError", "SCHEMAS", "ID_FIELDS", "validate"]


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


def _check(spec: Any, value: Any, path: str) -> None:
    if isinstance(spec, dict):
        if not isinstance(value, dict):
            raise SchemaError(path, f"expected an object, got {type(value).__name__}")
        _check_object(spec, value, path)
        return
    if isinstance(spec, (set, frozenset)):
        if not isinstance(value, str) or value not in spec:
            raise SchemaError(path, f"expected one of {sorted(spec)}, got {value!r}")
        return
    if spec.endswith("|null"):
        if value is None:
            return
        spec = spec[: -len("|null")]
    if spec.startswith("list[") and spec.endswith("]"):
        if not isinstance(value, list):
            raise SchemaError(path, f"expected a list, got {type(value).__name__}")
        inner = spec[5:-1]
        for i, item in enumerate(value):
            _check(inner, item, f"{path}[{i}]")
        return
    if spec in _NAMED:
        _check(_NAMED[spec], value, path)
        return
    ok = {
        "str": lambda v: isinstance(v, str),
        "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)
        and math.isfinite(v),
        "bool": lambda v: isinstance(v, bool),
        "dict": lambda v: isinstance(v, dict),
        "any": lambda v: True,
    }.get(spec)
    if ok is None:
        raise KeyError(f"unknown schema spec {spec!r} at {path}")
    if not ok(value):
        raise SchemaError(path, f"expected {spec}, got {type(value).__name__} {value!r:.60}")


def _check_object(schema: dict, record: dict, prefix: str) -> None:
    known = set()
    for key, spec in schema.items():
        optional = key.endswith("?")
        name = key[:-1] if optional else key
        known.add(name)
        path = f"{prefix}.{name}" if prefix else name
        if name not in record:
            if optional:
                continue
            raise SchemaError(path, "missing")
        _check(spec, record[name], path)
    extra = sorted(set(record) - known)
    if extra:
        path = f"{prefix}.{extra[0]}" if prefix else extra[0]
        raise SchemaError(path, f"unknown field (allowed: {sorted(known)})")


def validate(record_type: str, record: Any) -> None:
    """Raise :class:`SchemaError` unless ``record`` matches the schema of ``record_type``."""
    if record_type not in SCHEMAS:
        raise KeyError(f"record_type {record_type!r}: expected one of {sorted(SCHEMAS)}")
    if not isinstance(record, dict):
        raise SchemaError("", f"expected an object, got {type(record).__name__}")
    _check_object(SCHEMAS[record_type], record, "")

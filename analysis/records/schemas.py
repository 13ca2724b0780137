"""Schemas of every frozen record type, enforced on load (documented in docs/FORMAT.md).

The single source is the JSON Schema documents in ``analysis/frozen/json_schemas/``
(``records.schema.json``: one ``$defs`` entry per record type; ``manifest.schema.json``),
published for readers in other languages. They use a small subset of JSON Schema
(``type``, ``properties``/``required``/``additionalProperties``, ``items``, ``enum``,
``anyOf`` with ``null``, ``$ref``, ``minimum``, ``maximum``, ``pattern``) that this module compiles
into ``msgspec`` typed decoders: parsing and validation happen in one C pass, so a large
export verifies in a fraction of the time a Python checker took. A keyword outside the
subset is refused when the module loads, so the documents cannot state a rule that is
not enforced. Unknown fields are rejected (a typo in a writer cannot pass silently).

>>> validate("suite", {"suite": "planner", "task_ids": ["t1"], "episode_ids": ["e1"],
...                    "definition": "first episodes"})
>>> validate("suite", {"suite": "planner"})  # doctest: +IGNORE_EXCEPTION_DETAIL
Traceback (most recent call last):
...
analysis.records.schemas.SchemaError: field 'task_ids': missing
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Annotated, Any, Literal, NotRequired, Optional, Required, TypedDict

import msgspec

__all__ = ["SchemaError", "SCHEMAS", "ID_FIELDS", "PLANNER_NAME", "RECORD_TYPES", "validate",
           "decoder", "manifest_decoder", "schema_document", "SCHEMA_DIR", "error_path",
           "first_extra_field"]

#: A planner name: it names the run folder ``<planner>__<suite>__<memory>``, so it has no
#: double underscore (lowercase letters, digits, single ``-`` or ``_`` between them).
PLANNER_NAME = re.compile(r"^[a-z0-9]+(?:[-_][a-z0-9]+)*$")

SCHEMA_DIR = Path(__file__).resolve().parent / "json_schemas"


class SchemaError(ValueError):
    """A record that does not match its schema; ``field`` is a dotted path."""

    def __init__(self, field: str, message: str):
        super().__init__(f"field {field!r}: {message}")
        self.field = field


def schema_document(name: str) -> dict:
    """The published JSON Schema ``name`` (``"records"`` or ``"manifest"``)."""
    return json.loads((SCHEMA_DIR / f"{name}.schema.json").read_text(encoding="utf-8"))


_IGNORED = {"description", "title", "$schema", "$id", "$comment"}


class _Translator:
    """Compiles the JSON Schema subset into msgspec types (TypedDicts, so decoded records
    stay plain dicts for the rest of the package)."""

    def __init__(self, doc: dict, prefix: str):
        self.doc, self.prefix, self.done = doc, prefix, {}
        # paths (tuples of keys) of JSON "number" fields per definition: decoded as Any so
        # that every float passes the canonical-float hook, then type-checked after
        self.number_paths: dict[str, list[tuple]] = {}

    def ref(self, name: str):
        if name not in self.done:
            self.done[name] = None  # recursion guard (the subset has no recursive refs)
            self.done[name] = self.tp(self.doc["$defs"][name], name, (), name)
        return self.done[name]

    def tp(self, s: dict, name: str, path: tuple, root: str):
        unknown = set(s) - _IGNORED - {"type", "properties", "required", "additionalProperties",
                                       "items", "enum", "anyOf", "$ref", "minimum", "maximum",
                                       "pattern"}
        if unknown:
            raise ValueError(f"{self.prefix} schema {name}: unsupported keyword(s) "
                             f"{sorted(unknown)}")
        if "$ref" in s:
            return self.ref(s["$ref"].rsplit("/", 1)[-1])
        if "anyOf" in s:
            alts = [a for a in s["anyOf"] if a != {"type": "null"}]
            if len(alts) != 1 or len(s["anyOf"]) != 2:
                raise ValueError(f"{self.prefix} schema {name}: anyOf must be [T, null]")
            return Optional[self.tp(alts[0], name, path, root)]
        if "enum" in s:
            return Literal[tuple(s["enum"])]
        t = s.get("type")
        meta = {}
        if "minimum" in s:
            meta["ge"] = s["minimum"]
        if "maximum" in s:
            meta["le"] = s["maximum"]
        if "pattern" in s:
            meta["pattern"] = s["pattern"]
        if t == "object":
            props = s.get("properties")
            if props is None:
                extra = s.get("additionalProperties", True)
                value = Any if extra is True else self.tp(extra, name, path + ("*",), root)
                return dict[str, value]
            req = set(s.get("required", []))
            if s.get("additionalProperties", True) is not False:
                raise ValueError(f"{self.prefix} schema {name}: objects with properties must "
                                 "set additionalProperties: false")
            fields = {k: (Required if k in req else NotRequired)[
                self.tp(v, f"{name}.{k}", path + (k,), root)] for k, v in props.items()}
            return TypedDict(f"{name.replace('.', '_')}", fields)
        if t == "array":
            return list[self.tp(s.get("items", {}), name, path + ("[]",), root)]
        base = {"string": str, "integer": int, "boolean": bool, "null": type(None)}.get(t)
        if t == "number":
            if "[]" in path or "*" in path:
                raise ValueError(f"{self.prefix} schema {name}: numbers inside lists or maps "
                                 "are not supported")
            self.number_paths.setdefault(root, []).append(path)
            return Any
        if base is None:
            raise ValueError(f"{self.prefix} schema {name}: unsupported type {t!r}")
        return Annotated[base, msgspec.Meta(**meta)] if meta else base


def _float_hook(text: str) -> float:
    """Every float of a record passes here with its literal text: it must be finite and
    written as Python's shortest round-trip repr (the canonical form)."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:40]} is out of range (NaN and infinities are not "
                         "allowed)")
    if repr(value) != text:
        raise ValueError(f"number {text[:40]} is not in canonical form (expected "
                         f"{repr(value)})")
    return value


_RECORDS = _Translator(schema_document("records"), "records")
#: The record types (``$defs`` entries named by a manifest ``record_type``).
RECORD_TYPES: tuple[str, ...] = tuple(
    schema_document("manifest")["$defs"]["file"]["properties"]["record_type"]["enum"])
SCHEMAS: dict[str, Any] = {rt: _RECORDS.ref(rt) for rt in RECORD_TYPES}
_DECODERS = {rt: msgspec.json.Decoder(tp, float_hook=_float_hook) for rt, tp in SCHEMAS.items()}


def _manifest_type():
    doc = schema_document("manifest")
    tr = _Translator(doc, "manifest")
    return tr.tp({k: v for k, v in doc.items() if k != "$defs"}, "manifest", (), "manifest")


_MANIFEST_DECODER = msgspec.json.Decoder(_manifest_type())


def _manifest_def_type(name: str):
    """The type of one ``files`` (``"file"``) or ``runs`` (``"run_meta"``) entry, to name
    the entry in an error."""
    return _Translator(schema_document("manifest"), "manifest").ref(name)


def decoder(record_type: str) -> msgspec.json.Decoder:
    """The typed decoder of ``record_type``: ``decoder("suite").decode(line)`` parses and
    validates one line (raises ``msgspec.DecodeError``/``ValidationError``)."""
    return _DECODERS[record_type]


def manifest_decoder() -> msgspec.json.Decoder:
    return _MANIFEST_DECODER


def check_numbers(record_type: str, record: dict) -> str | None:
    """The path of a ``number`` field that holds no number (decoded as Any), else None."""
    for path in _RECORDS.number_paths.get(record_type, ()):
        v = record
        for k in path:
            if not isinstance(v, dict) or k not in v:
                v = None
                break
            v = v[k]
        if v is not None and (type(v) is bool or not isinstance(v, (int, float))):
            return ".".join(path)
    return None


_AT = re.compile(r" - at `\$(.*)`$")


def error_path(exc: Exception) -> tuple[str, str]:
    """``(field path, message)`` of a msgspec error, e.g. ``("attempts[0].raw", "Expected
    `str | null`, got `int`")``."""
    text = str(exc)
    m = _AT.search(text)
    if not m:
        if text.startswith("Object missing required field"):
            return text.split("`")[1], "missing"
        return "", text
    path = m.group(1)
    path, msg = (path[1:] if path.startswith(".") else path), text[: m.start()]
    if msg.startswith("Object missing required field"):
        missing = msg.split("`")[1]
        path, msg = (f"{path}.{missing}" if path else missing), "missing"
    return path, msg


def first_extra_field(full: Any, decoded: Any, path: str = "") -> str | None:
    """The path of the first key present in ``full`` but dropped by a typed decode (an
    unknown field), or None."""
    if isinstance(full, dict) and isinstance(decoded, dict):
        for k, v in full.items():
            sub = f"{path}.{k}" if path else k
            if k not in decoded:
                return sub
            hit = first_extra_field(v, decoded[k], sub)
            if hit:
                return hit
    elif isinstance(full, list) and isinstance(decoded, list):
        for i, (a, b) in enumerate(zip(full, decoded)):
            hit = first_extra_field(a, b, f"{path}[{i}]")
            if hit:
                return hit
    return None


def validate(record_type: str, record: Any) -> None:
    """Raise :class:`SchemaError` unless ``record`` matches the schema of ``record_type``."""
    if record_type not in SCHEMAS:
        raise KeyError(f"record_type {record_type!r}: expected one of {sorted(SCHEMAS)}")
    if type(record) is not dict:
        raise SchemaError("", f"expected an object, got {type(record).__name__}")
    try:
        got = msgspec.convert(record, SCHEMAS[record_type], strict=True)
    except msgspec.ValidationError as exc:
        where, msg = error_path(exc)
        raise SchemaError(where, msg.replace("`", "")[:1].lower() + msg.replace("`", "")[1:]) \
            from None
    extra = first_extra_field(record, got)
    if extra:
        raise SchemaError(extra, "unknown field")
    bad = check_numbers(record_type, record)
    if bad:
        raise SchemaError(bad, "expected a number")
    _check_floats(record, "")


def _check_floats(v, path):
    if type(v) is float:
        if not math.isfinite(v):
            raise SchemaError(path, f"{v!r} is not allowed (NaN and infinities are rejected)")
    elif type(v) is dict:
        for k, x in v.items():
            _check_floats(x, f"{path}.{k}" if path else k)
    elif type(v) is list:
        for i, x in enumerate(v):
            _check_floats(x, f"{path}[{i}]")


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

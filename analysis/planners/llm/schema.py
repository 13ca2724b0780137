"""The typed JSON schema of a plan for one view (constrained decoding).

Each action type becomes one alternative with its exact argument count, and each argument
may only be an entity ID that the view shows (``view.object_types``) whose type is the
parameter's type or a subtype of it (``view.types``). An action type with a parameter no
shown entity can fill is left out. ``query`` is a shown region or null. The schema
encodes the public action schema and the view's IDs, which is a methodological choice:
a run that uses it is a different planner setting (``response_format`` in
``planner_config``).

>>> from analysis.executor.protocol import PlannerView
>>> v = PlannerView("wash the cup", ("cup",), ("wash",), {"region": "sink"}, None, (), None,
...     ("sink",), {"cup": "item", "sink": "sink"},
...     {"wash": {"params": [["x", "item"], ["at", "sink"]]}, "fly": {"params": [["x", "bird"]]}},
...     {"item": "entity", "sink": "fixture", "fixture": "entity"}, "e/g/0")
>>> s = plan_schema(v)
>>> [a["properties"]["type"]["enum"] for a in s["properties"]["actions"]["items"]["anyOf"]]
[['wash']]
>>> s["properties"]["actions"]["items"]["anyOf"][0]["properties"]["args"]["prefixItems"]
[{'enum': ['cup']}, {'enum': ['sink']}]
"""
from __future__ import annotations

from ...executor.rules import is_subtype

__all__ = ["plan_schema", "response_format_payload", "RESPONSE_FORMATS"]

#: ``none``: plain text; ``json_schema``: OpenAI / llama.cpp server / vLLM
#: (``{"type": "json_schema", "json_schema": {...}}``); ``json_object_schema``:
#: llama-cpp-python's server (``{"type": "json_object", "schema": {...}}``).
RESPONSE_FORMATS = ("none", "json_schema", "json_object_schema")


def plan_schema(view) -> dict:
    """The JSON schema of a plan whose actions are type-correct over ``view``'s entities."""
    entities = sorted(view.object_types.items())
    shown_types = {ty for _, ty in entities}
    fitting: dict = {}  # parameter type -> the shown IDs of that type or below, in order

    def ids_for(pty) -> list:
        if pty not in fitting:  # one hierarchy walk per (shown type, parameter type)
            below = {ty for ty in shown_types if is_subtype(view.types, ty, pty)}
            fitting[pty] = [e for e, ty in entities if ty in below]
        return list(fitting[pty])

    alternatives = []
    for name in sorted(view.action_schema):
        params = view.action_schema[name].get("params", [])
        slots = []
        for _pname, pty in params:
            ids = ids_for(pty)
            if not ids:
                break
            slots.append({"enum": ids})
        else:
            n = len(slots)
            args = {"type": "array", "prefixItems": slots, "minItems": n, "maxItems": n}
            if n == 0:
                args = {"type": "array", "maxItems": 0}
            alternatives.append({
                "type": "object",
                "properties": {"type": {"enum": [name]}, "args": args},
                "required": ["type", "args"], "additionalProperties": False})
    regions = sorted(view.regions)
    query = {"anyOf": [{"enum": regions}, {"type": "null"}]} if regions else {"type": "null"}
    return {"type": "object",
            "properties": {"actions": {"type": "array", "items": {"anyOf": alternatives}},
                           "query": query},
            "required": ["actions", "query"], "additionalProperties": False}


def response_format_payload(kind: str, view) -> dict | None:
    """The ``response_format`` request field for ``kind`` (``None`` for ``none``)."""
    if kind == "none":
        return None
    schema = plan_schema(view)
    if kind == "json_schema":
        return {"type": "json_schema",
                "json_schema": {"name": "plan", "schema": schema, "strict": True}}
    if kind == "json_object_schema":
        return {"type": "json_object", "schema": schema}
    raise ValueError(f"response_format={kind!r}: expected one of {list(RESPONSE_FORMATS)}")

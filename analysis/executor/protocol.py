"""The planner protocol: what a planner sees, what it returns, how it is counted.

It lives with the executor because the runtime loop builds the view, parses the reply and
counts tokens with it; planners import it from here (``analysis.planners.base`` re-exports
it), so the dependency runs one way: executor <- planners.

A planner receives a :class:`PlannerView` (only what the runtime gives it: the group's
instruction, objects and action hints, the local observation, recent feedback, its own
belief) and returns text that should parse as the action JSON schema::

    {"actions": [{"type": "pick_up", "args": ["glass", "counter"]}, ...],
     "query": "<region>" | null}

It never sees the hidden world. Randomness comes only from :meth:`PlannerView.rng`,
a ``numpy.random.Generator`` seeded from the planner's seed and the view's stable key
(episode, group, call number), so a planner's output does not depend on the order in
which episodes are run (parallel runs equal serial runs).

Token accounting: a planner may return a :class:`PlannerResponse` with its own token
counts; when it returns a plain string the runtime uses :func:`count_tokens` on the
rendered prompt (:func:`render_prompt`) and on the returned text: the number of word
pieces (runs of letters, digits and underscores, plus every other non-space character),
a documented, deterministic stand-in for a tokenizer.

>>> count_tokens("open the fridge")
3
>>> parse_plan('{"actions": [{"type": "open_storage", "args": ["fridge"]}]}').actions
[{'type': 'open_storage', 'args': ['fridge']}]
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol, runtime_checkable

import numpy as np

__all__ = [
    "PlannerView", "PlannerResponse", "Planner", "Plan", "PlanParseError",
    "parse_plan", "render_prompt", "count_tokens", "parse_hint", "plan_json", "ProviderError",
]


@dataclass(frozen=True)
class PlannerView:
    """Everything a planner may know for one call.

    ``observation``: the latest local observation (``RegionObservation.as_dict()``; its
    ``region`` is where the agent stands); ``holding``: what the agent holds (``None``
    for an empty hand); ``feedback``: the most recent attempts (dicts with ``action``,
    ``status``, ``failed_checks``, ``source``), oldest first; ``belief``: the agent's
    :class:`~analysis.executor.belief.Belief` (under ``reset`` it holds only facts of
    the current group); ``regions``: the kitchen's fixtures (scene knowledge);
    ``object_types``: types of the group's objects and the visible items;
    ``action_schema``: action type -> its rule in JSON form (``family``, ``params``,
    ``pre``, ``add``, ``del``: the public domain definition, as a PDDL domain would
    give it); ``types``: the type hierarchy (child -> parent); ``key``: a stable
    ``episode/group/call`` identifier used for seeding.
    """

    instruction: str
    objects: tuple[str, ...]
    action_hints: tuple[str, ...]
    observation: Mapping[str, Any]
    holding: str | None
    feedback: tuple[Mapping[str, Any], ...]
    belief: Any
    regions: tuple[str, ...]
    object_types: Mapping[str, str]
    action_schema: Mapping[str, Mapping]
    types: Mapping[str, str]
    key: str
    call_index: int = 0
    query_results: tuple[Mapping[str, Any], ...] = ()

    def rng(self, seed: int) -> np.random.Generator:
        """A generator seeded by ``seed`` and this view's stable key."""
        digest = hashlib.sha256(self.key.encode("utf-8")).digest()
        return np.random.default_rng([int(seed), int.from_bytes(digest[:8], "big")])


@dataclass(frozen=True)
class PlannerResponse:
    """Text plus the planner's own token counts (``None``: let the runtime count)."""

    text: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


@runtime_checkable
class Planner(Protocol):
    """``name``, ``config()`` (JSON-ready settings) and ``propose(view)``."""

    name: str

    def config(self) -> dict: ...

    def propose(self, view: PlannerView) -> "str | PlannerResponse": ...


class ProviderError(RuntimeError):
    """The planner's endpoint failed after every retry (HTTP 429/5xx, timeout, reset,
    malformed response body): not the model's fault. The runtime records the group as
    ``provider_error`` (never ``parse_failure``) and stops the episode, so the run is
    incomplete and can be resumed. The message never contains credentials.

    >>> str(ProviderError("HTTP 503 after 4 attempts"))
    'HTTP 503 after 4 attempts'
    """


class PlanParseError(ValueError):
    """Planner output that is not the action JSON schema (says what is wrong)."""


@dataclass(frozen=True)
class Plan:
    actions: list[dict] = field(default_factory=list)
    query: str | None = None
    raw_actions: list[str] = field(default_factory=list)


_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.S)


def parse_plan(text: Any, keep_raw: bool = True) -> Plan:
    """Parse planner output structurally; raise :class:`PlanParseError` otherwise.

    Structural only: a markdown code fence around the JSON is stripped, nothing else
    is repaired (no renaming of action types, no guessing of arguments).
    ``raw_actions`` holds each action element as canonical JSON (the raw proposal);
    ``keep_raw=False`` leaves it empty (the same checks; re-deriving failure labels needs
    only the plan's shape, and serialising every action was half its cost).
    """
    if not isinstance(text, str):
        raise PlanParseError(f"expected text, got {type(text).__name__}")
    m = _FENCE.match(text)
    body = m.group(1) if m else text
    try:
        obj = json.loads(body)
    except ValueError as exc:
        raise PlanParseError(f"not valid JSON ({exc})") from None
    if not isinstance(obj, dict):
        raise PlanParseError(f"expected a JSON object, got {type(obj).__name__}")
    unknown = sorted(set(obj) - {"actions", "query"})
    if unknown:
        raise PlanParseError(f"unknown key {unknown[0]!r} (allowed: ['actions', 'query'])")
    query = obj.get("query")
    if query is not None and not isinstance(query, str):
        raise PlanParseError("'query' must be a region name or null")
    actions = obj.get("actions", [] if query is not None else None)
    if not isinstance(actions, list):
        raise PlanParseError("'actions' must be a list")
    out, raws = [], []
    for i, a in enumerate(actions):
        if not isinstance(a, dict) or set(a) != {"type", "args"}:
            raise PlanParseError(f"actions[{i}] must be an object with keys 'type' and 'args'")
        if not isinstance(a["type"], str) or not isinstance(a["args"], list) or not all(
                isinstance(x, str) for x in a["args"]):
            raise PlanParseError(f"actions[{i}]: 'type' must be a string, 'args' a list of strings")
        out.append({"type": a["type"], "args": list(a["args"])})
        if keep_raw:
            raws.append(json.dumps(a, sort_keys=True, separators=(",", ":"), ensure_ascii=False))
    return Plan(actions=out, query=query, raw_actions=raws)


def plan_json(actions: list[dict], query: str | None = None) -> str:
    """The JSON text of a plan (what baseline planners return)."""
    return json.dumps({"actions": [{"type": a["type"], "args": list(a["args"])} for a in actions],
                       "query": query}, sort_keys=True, separators=(",", ":"))


_PIECE = re.compile(r"\w+|[^\w\s]")


def count_tokens(text: str) -> int:
    """Deterministic token estimate: word pieces = runs of letters/digits/underscores plus
    every other non-space character (so compact JSON is not one "word").

    >>> count_tokens('{"actions": []}')
    8
    """
    return len(_PIECE.findall(text))


def render_prompt(view: PlannerView, include_schema: bool = True) -> str:
    """The deterministic text prompt for ``view`` (used by chat adapters and for counting).

    Rendering the belief counts cross-group memory hits (the prompt shows those facts).
    """
    lines = [
        "You are a kitchen agent. Reply with JSON only: "
        '{"actions": [{"type": ..., "args": [...]}], "query": <region or null>}.',
        f"Instruction: {view.instruction}",
        f"Objects: {', '.join(view.objects)}",
        f"Action hints: {'; '.join(view.action_hints)}",
        f"You are at: {view.observation.get('region')}; holding: {view.holding or 'nothing'}",
        "Observation: " + json.dumps(view.observation, sort_keys=True),
    ]
    for q in view.query_results:
        lines.append("Query result: " + json.dumps(q, sort_keys=True))
    if view.belief is not None:
        lines.append("Belief: " + json.dumps(view.belief.as_dict(), sort_keys=True))
    for fb in view.feedback:
        lines.append("Feedback: " + json.dumps(fb, sort_keys=True))
    lines.append("Regions: " + ", ".join(view.regions))
    if include_schema:
        # Only the hinted types' signatures: the full schema would dominate every prompt.
        hinted = sorted({parse_hint(h)[0] for h in view.action_hints})
        for t in hinted:
            if t in view.action_schema:
                sig = ", ".join(f"{p}:{ty}" for p, ty in view.action_schema[t]["params"])
                lines.append(f"Action {t}({sig})")
    return "\n".join(lines)


_HINT = re.compile(r"^\s*([A-Za-z_][\w-]*)\s*(?:\((.*)\))?\s*$")


def parse_hint(hint: str) -> tuple[str, list[str] | None]:
    """``"pour(squash, bottle, glass)"`` -> ``("pour", ["squash", "bottle", "glass"])``;
    a bare ``"pour"`` -> ``("pour", None)``.

    >>> parse_hint("pick_up(glass, counter)")
    ('pick_up', ['glass', 'counter'])
    """
    m = _HINT.match(hint)
    if not m:
        return hint.strip(), None
    name, inner = m.group(1), m.group(2)
    if inner is None:
        return name, None
    args = [a.strip() for a in inner.split(",") if a.strip()]
    return name, args

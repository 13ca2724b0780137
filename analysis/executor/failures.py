"""Failure labels and the per-condition progress ledger, derived by re-executing a run.

Nothing here is read from a record's verdicts: each episode is replayed from its initial
world with the recorded *inputs* (the planner's actions and replies); every attempt's
failed checks are recomputed by the executor on the replayed world, and a replayed
status that differs from the recorded one is an error (:class:`DerivationError`).

**Attempt labels** (docs/executor.md, "Failure labels"): every rejected attempt gets
exactly one label of :data:`ATTEMPT_LABELS`, the first that applies in this order:

1. ``repeated``: the same action (type and arguments) was rejected earlier in the
   episode and the world has not changed since (feedback was ignored). It comes first
   because a repeat also fails one of the checks below: otherwise it could never apply.
2. ``unknown_entity``: an argument names nothing in the world (``known_object:*``).
3. ``malformed_action``: the action type is not in the rules, or the arity is wrong.
4. ``unobserved_entity``: every argument exists, but one the agent has neither seen
   (an observation or query result it was given), been told of (the group's objects and
   action hints, the kitchen's fixtures) nor confirmed by an accepted action of its own,
   all earlier in the episode. Specific to partial observation.
5. ``wrong_type``: an argument does not fit its parameter (``type:*``).
6. ``unmet_precondition:<family>``: types fit but a precondition fails; the family comes
   from the failed check's atom (:data:`FAMILIES`, in precedence order: what the runtime
   cannot repair first, the agent's own position last).
7. ``other``: none of the above (never reached by the committed runs).

**Group outcomes**: every group that did not end ``completed`` gets one of
:data:`GROUP_LABELS` (``execution_blocked`` is ``budget_exhausted``: the attempt limit).

**Ledger**: for every condition of every task, its truth at the end of each of the
task's groups (the contract evaluated on the world and the accepted events up to then):
the first group at whose end it was TRUE, its truth at the task's end (the task record's
truth), and ``undone`` (TRUE at some group's end, FALSE at the task's end).

>>> from analysis.executor import Rules, World
>>> r = Rules.load()
>>> w = World({"milk": "bottle", "fridge": "fridge", "counter": "counter"},
...           [("agent-at", "counter"), ("at", "milk", "fridge"), ("hand-empty",)])
>>> label_attempt(r, w, {"type": "take_from_storage", "args": ["milk", "fridge"]},
...               ["agent_at_source", "storage_open"], known={"milk", "fridge"})
('unmet_precondition:container_closed', 'storage_open')
>>> label_attempt(r, w, {"type": "pick_up", "args": ["milk", "counter"]},
...               ["object_at_source"], known={"counter"})
('unobserved_entity', 'milk')
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from .contracts import TRUE, FALSE, evaluate_condition
from .executor import ARITY, FIELD_ARGS, FIELD_TYPE, KNOWN_ACTION_TYPE, MALFORMED_ACTION, Executor
from .observation import Observer
from .protocol import parse_hint, parse_plan
from .rules import Rules
from .world import World

__all__ = ["ATTEMPT_LABELS", "GROUP_LABELS", "FAMILIES", "LABELS", "DerivationError",
           "AttemptLabel", "GroupLabel", "LedgerEntry", "RunDerivation", "label_attempt",
           "precondition_family", "condition_kind", "derive_episode", "derive_run",
           "derive_run_by_episode",
           "CONDITION_KINDS"]

#: Precondition families, in precedence order, with the (predicate, negated) atoms of
#: the failed check that belong to them (any other predicate is ``item_state``).
FAMILIES: tuple[tuple[str, tuple[tuple[str, bool], ...]], ...] = (
    ("not_in_place", (("at", False), ("in", False))),   # the item is not where it says
    ("not_held", (("holding", False),)),
    ("hand_full", (("hand-empty", False),)),
    ("container_closed", (("open", False),)),
    ("container_open", (("open", True),)),
    ("capped_state", (("capped", False), ("capped", True))),
    ("power_state", (("powered", False), ("powered", True), ("running", False),
                     ("running", True))),
    ("item_state", ()),
    ("not_reachable", (("enclosing", True),)),
    ("not_at_location", (("agent-at", False),)),
)
_FAMILY_OF = {key: name for name, keys in FAMILIES for key in keys}
_FAMILY_RANK = {name: i for i, (name, _) in enumerate(FAMILIES)}

ATTEMPT_LABELS = ("repeated", "unknown_entity", "malformed_action", "unobserved_entity",
                  "wrong_type", *(f"unmet_precondition:{f}" for f, _ in FAMILIES), "other")
#: A non-completed group's status -> its outcome label.
GROUP_LABELS = {"parse_failure": "parse_failure", "empty_plan": "empty_plan",
                "execution_blocked": "budget_exhausted", "provider_error": "provider_error"}
LABELS = ATTEMPT_LABELS + tuple(GROUP_LABELS.values())
#: A condition's kind in the ledger: its atom's predicate ``in``/``at``, any other
#: predicate (open, powered, mixed, ...) ``state``, or ``event``.
CONDITION_KINDS = ("in", "at", "state", "event")

_MALFORMED = {MALFORMED_ACTION, FIELD_TYPE, FIELD_ARGS, KNOWN_ACTION_TYPE, ARITY}


class DerivationError(ValueError):
    """The records disagree with their re-execution (names the run, group and field)."""


def precondition_family(predicate: str, negated: bool) -> str:
    """The family of a failed precondition on ``predicate`` (``negated``: a ``not`` check).

    >>> precondition_family("open", False), precondition_family("agent-at", False)
    ('container_closed', 'not_at_location')
    >>> precondition_family("cut", False)
    'item_state'
    """
    return _FAMILY_OF.get((predicate, bool(negated)), "item_state")


def condition_kind(condition: Mapping) -> str:
    """``in``, ``at``, ``state`` or ``event`` (:data:`CONDITION_KINDS`).

    >>> condition_kind({"id": "c1", "kind": "atom", "atom": ["open", "fridge"]})
    'state'
    """
    if condition["kind"] == "event":
        return "event"
    pred = condition["atom"][0]
    return pred if pred in ("in", "at") else "state"


def label_attempt(rules: Rules, world: World, action, failed_checks: Sequence[str],
                  known: Iterable[str] = (), repeated: bool = False) -> tuple[str, str]:
    """``(label, deciding check or entity)`` of a rejected attempt (module docstring).

    ``failed_checks``: the executor's failed checks of ``action`` on ``world``;
    ``known``: the entities the agent has seen, been told of or confirmed;
    ``repeated``: the same action was rejected before on an unchanged world.

    >>> r = Rules.load(); w = World({"glass": "glass", "counter": "counter"}, [])
    >>> label_attempt(r, w, {"type": "pick_up", "args": ["cup", "counter"]},
    ...               ["known_object:o"], known={"counter"})
    ('unknown_entity', 'known_object:o')
    >>> label_attempt(r, w, {"type": "pick_up", "args": ["counter", "glass"]},
    ...               ["type:o", "type:f"], known={"counter", "glass"})
    ('wrong_type', 'type:o')
    """
    failed = list(failed_checks)
    if not failed:
        raise ValueError("failed_checks: empty (an accepted attempt has no label)")
    if repeated:
        return "repeated", failed[0]
    unknown = [c for c in failed if c.startswith("known_object:")]
    if unknown:
        return "unknown_entity", unknown[0]
    malformed = [c for c in failed if c in _MALFORMED]
    if malformed:
        return "malformed_action", malformed[0]
    known = known if isinstance(known, (set, frozenset, _Known)) else set(known)
    unseen = [a for a in action["args"] if a not in known]
    if unseen:
        return "unobserved_entity", unseen[0]
    typed = [c for c in failed if c.startswith("type:")]
    if typed:
        return "wrong_type", typed[0]
    rule = rules.actions.get(action["type"])
    pre = {c.name: c for c in rule.pre} if rule is not None else {}
    best = None
    for name in failed:
        c = pre.get(name)
        if c is None:
            continue
        fam = precondition_family(c.atom.predicate, c.negated)
        if best is None or _FAMILY_RANK[fam] < _FAMILY_RANK[best[0]]:
            best = (fam, name)
    if best is not None:
        return f"unmet_precondition:{best[0]}", best[1]
    return "other", failed[0]


@dataclass(frozen=True)
class AttemptLabel:
    """The label of one rejected attempt: ``check`` is the failed check (or, for
    ``unobserved_entity``, the entity) that decided it; ``failed_checks`` all of them."""

    episode_id: str
    group_id: str
    index: int
    label: str
    check: str
    failed_checks: tuple[str, ...]


@dataclass(frozen=True)
class GroupLabel:
    episode_id: str
    group_id: str
    status: str
    label: str


@dataclass(frozen=True)
class LedgerEntry:
    """One condition of one task: ``first_group`` the group at whose end it was first
    TRUE (``first_position`` its 0-based place among the task's groups; None: never),
    ``end_truth`` the task's end truth, ``undone`` TRUE at some group's end and FALSE at
    the task's end."""

    task_id: str
    condition_id: str
    kind: str
    n_groups: int
    first_group: str | None
    first_position: int | None
    end_truth: str
    undone: bool


@dataclass
class RunDerivation:
    """Labels and ledger of one run, in episode and attempt order."""

    run_id: str
    attempts: list[AttemptLabel] = field(default_factory=list)
    groups: list[GroupLabel] = field(default_factory=list)
    ledger: list[LedgerEntry] = field(default_factory=list)
    n_attempts: int = 0


class _Known:
    """The entities the agent has seen, been told of or confirmed so far in an episode.

    What a view names without the world (objects, hints, fixtures) is added at once; the
    world it was built on is kept and read (what is held, the observations) only when an
    entity is not otherwise known: observing is most of the cost, and rarely needed.
    """

    def __init__(self, observer: Observer, regions: frozenset):
        self.observer = observer
        self.regions = regions
        self.names: set[str] = set(regions)
        self.pending: list[tuple[World, str | None]] = []

    def add_view(self, group: Mapping, world: World, query_region: str | None) -> None:
        """Every entity a planner view names (runtime ``_view``): the group's objects and
        action hints, the kitchen's fixtures, what is held, the observation of the agent's
        region and of the region the previous call queried (the last three read from the
        world only when needed)."""
        out = self.names
        out.update(group["objects"])
        for h in group.get("action_hints", ()):
            args = parse_hint(h)[1]
            if args:
                out.update(args)
        self.pending.append((world, query_region))

    def _flush(self) -> None:
        observer, out = self.observer, self.names
        for world, query_region in self.pending:
            here = []
            for a in world.facts:
                if a[0] == "holding":
                    out.add(a[1])
                elif a[0] == "agent-at" and len(a) == 2:
                    here.append(a[1])
            for region in sorted(here)[:1] + ([query_region] if query_region else []):
                if not observer.is_region(region):
                    continue
                out.add(region)
                obs = observer.observe(region, world)
                out.update(obs.visible, obs.anchor, obs.added, obs.removed, obs.open)
                for k, v in obs.contents.items():
                    out.add(k)
                    out.update(v)
        self.pending.clear()

    def __contains__(self, name: str) -> bool:
        if name not in self.names and self.pending:
            self._flush()
        return name in self.names


def _key(action):
    # the action as submitted (any JSON value: a malformed one is an action too)
    try:
        return (action["type"], tuple(action["args"]))
    except (TypeError, KeyError):
        import json
        return json.dumps(action, sort_keys=True, default=repr)


def derive_episode(episode: Mapping, group_records: Sequence[Mapping],
                   tasks: Sequence[Mapping], rules: Rules, executor: Executor,
                   attempt_limit: int, out: RunDerivation) -> None:
    """Replay one episode's group records (in group order) and append their labels and
    the ledger of ``tasks`` (the run's tasks in this episode) to ``out``."""
    eid = episode["episode_id"]
    by_id = {g["group_id"]: g for g in episode["groups"]}
    observer = Observer(episode, rules)
    world = World.from_json(episode["initial_world"])
    regions = frozenset(o for o, t in world.objects.items() if rules.is_subtype(t, "fixture"))
    known = _Known(observer, regions)
    rejected_at: dict[tuple, World] = {}   # action -> world when it was last rejected
    end_world: dict[str, World] = {}
    events_of: dict[str, list] = {}
    status_of: dict[str, str] = {}

    def fail(gid, what):
        raise DerivationError(f"run {out.run_id}, group {gid}: {what}")

    for rec in group_records:
        gid = rec["group_id"]
        group = by_id.get(gid)
        if group is None:
            fail(gid, "not a group of episode " + eid)
        attempts = rec["attempts"]
        events: list = []
        rejected: list[bool] = []
        state = {"world": world, "i": 0}

        def advance(upto: int):
            # apply / label attempts [i, upto) with the current known set
            while state["i"] < upto:
                i = state["i"]
                a = attempts[i]
                action, w = a["action"], state["world"]
                outcome = executor.apply(w, action)
                status = "accepted" if outcome.accepted else "invalid"
                if status != a["status"]:
                    fail(gid, f"attempts[{i}].status: recorded {a['status']!r}, "
                              f"re-executed {status!r}")
                rejected.append(not outcome.accepted)
                if outcome.accepted:
                    state["world"] = outcome.world
                    events.append(outcome.event)
                    known.names.update(action["args"])
                else:
                    key = _key(action)
                    prev = rejected_at.get(key)
                    same = prev is not None and (prev is w or prev.facts == w.facts)
                    label, check = label_attempt(rules, w, action, outcome.failed_checks,
                                                 known, same)
                    rejected_at[key] = w
                    out.attempts.append(AttemptLabel(eid, gid, a["index"], label, check,
                                                     tuple(outcome.failed_checks)))
                state["i"] = i + 1

        # Calls: the first at the group's start, each later one at a replan point; a
        # plan with only a query is followed by a call at the same point.
        pos, n_queries, last_query = 0, 0, None
        queries = rec["queries"]
        for k, call in enumerate(rec["planner_calls"]):
            advance(pos)
            known.add_view(group, state["world"], last_query)
            last_query = None
            try:
                plan = parse_plan(call["raw"], keep_raw=False)
            except ValueError:
                break
            if plan.query is not None and pos + n_queries < attempt_limit:
                if n_queries >= len(queries) or queries[n_queries]["region"] != plan.query:
                    fail(gid, f"queries[{n_queries}]: the reply of call {k} asks for "
                              f"{plan.query!r}")
                if queries[n_queries]["responded"]:
                    last_query = plan.query
                n_queries += 1
            if plan.actions:
                # run this plan's attempts up to the next replan point
                nxt = None
                n = len(attempts)
                while nxt is None and state["i"] < n:
                    i = state["i"]
                    advance(i + 1)
                    if rejected[i] and attempts[i]["source"] == "planner" and not (
                            i + 1 < n and attempts[i + 1]["source"] == "repair"):
                        nxt = i + 1
                if nxt is None:
                    break
                pos = nxt
        advance(len(attempts))
        world = state["world"]
        end_world[gid] = world
        events_of[gid] = events
        status_of[gid] = rec["status"]
        out.n_attempts += len(attempts)
        if rec["status"] != "completed":
            label = GROUP_LABELS.get(rec["status"])
            if label is None:
                fail(gid, f"status {rec['status']!r} is not a group status")
            out.groups.append(GroupLabel(eid, gid, rec["status"], label))

    for t in tasks:
        gids = list(t["group_ids"])
        if not all(g in end_world for g in gids):
            continue  # a provider error stopped the episode: no task record
        truths = {c["id"]: [] for c in t["contract"]["conditions"]}
        evs: list = []
        completed = True
        for gid in gids:
            evs = evs + events_of[gid]
            completed = completed and status_of[gid] == "completed"
            for c in t["contract"]["conditions"]:
                truths[c["id"]].append(evaluate_condition(c, end_world[gid], evs, completed))
        for c in t["contract"]["conditions"]:
            seq = truths[c["id"]]
            first = next((j for j, v in enumerate(seq) if v == TRUE), None)
            out.ledger.append(LedgerEntry(
                t["task_id"], c["id"], condition_kind(c), len(gids),
                None if first is None else gids[first], first, seq[-1].value,
                first is not None and seq[-1] == FALSE))


def derive_run(run_id: str, group_records: Iterable[Mapping], episodes: Mapping[str, Mapping],
               tasks: Iterable[Mapping], rules: Rules, attempt_limit: int = 80,
               executor: Executor | None = None) -> RunDerivation:
    """Labels and ledger of one run from its group records (any order), the cohort's
    episodes and the run's tasks.

    Raises :class:`DerivationError` when a recorded attempt status differs from its
    re-execution.
    """
    by_episode: dict[str, list] = {}
    for g in group_records:
        by_episode.setdefault(g["episode_id"], []).append(g)
    chunks = ((eid, by_episode.pop(eid)) for eid in sorted(by_episode))
    return derive_run_by_episode(run_id, chunks, episodes, tasks, rules, attempt_limit,
                                 executor)


def derive_run_by_episode(run_id: str, chunks: Iterable[tuple[str, Sequence[Mapping]]],
                          episodes: Mapping[str, Mapping], tasks: Iterable[Mapping],
                          rules: Rules, attempt_limit: int = 80,
                          executor: Executor | None = None) -> RunDerivation:
    """:func:`derive_run` from the run's group records already grouped by episode:
    ``chunks`` yields ``(episode_id, its group records in any order)``, each episode once,
    in the order the labels are wanted (:func:`derive_run`: sorted episode IDs). Only one
    chunk needs to be alive at a time: a generator that decodes each episode's records
    when reached keeps a run's memory to one episode's."""
    executor = executor or Executor(rules)
    tasks_of: dict[str, list] = {}
    for t in tasks:
        tasks_of.setdefault(t["episode_id"], []).append(t)
    out = RunDerivation(run_id)
    for eid, records in chunks:
        ep = episodes[eid]
        index = {g["group_id"]: g["index"] for g in ep["groups"]}
        recs = sorted(records, key=lambda g: index.get(g["group_id"], -1))
        derive_episode(ep, recs, tasks_of.get(eid, []), rules, executor, attempt_limit, out)
    return out

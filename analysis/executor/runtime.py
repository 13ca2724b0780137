"""The runtime loop: a planner acts in the hidden world group by group.

For each group of an episode (the world is reset once per episode and carries over):

1. The belief enters the group (``reset`` clears it). The planner is called with a
   :class:`~analysis.executor.protocol.PlannerView` (instruction, the group's objects and
   action hints, the local observation of the agent's region, recent feedback, its
   belief) and returns JSON text. Parsing is structural only
   (:func:`~analysis.executor.protocol.parse_plan`); a planner that raises or returns text
   that does not parse ends the group as ``parse_failure`` and the run goes on, except
   for a local fault (an ``OSError`` or any :class:`analysis._fs.errors.LocalFault`: our
   side of the boundary, such as a planted state file), which stops the run. A
   :class:`~analysis.executor.protocol.ProviderError` (the model's endpoint failed after
   its retries) ends the group as ``provider_error`` and stops the episode: the groups
   after it would run on a world the missing reply should have changed.
2. A plan's ``query`` (a region) is a visual query: it counts as an attempt against the
   limit and, when the region exists, returns its observation (anchor + delta); the
   planner is called again if it queued no action.
3. Queued actions execute in order. On a rejection the runtime first looks for a
   validated *repair* (navigation to the action's fixture, opening the storage or
   appliance involved, or both; simulated on the current world and kept only if the
   original action then passes), executes it (source ``repair``) and retries the
   original action once. Without a repair the action is dropped and the planner
   replans with the feedback (its new plan replaces the queue) while calls remain.
4. One shared limit (``attempt_limit``, default 80) bounds action attempts and visual
   queries of a group; planner calls are bounded by ``max_planner_calls``.

Group status: ``completed`` (the queue emptied, even after rejected attempts),
``execution_blocked`` (the limit was reached with actions still queued),
``parse_failure``, ``empty_plan`` (the first usable plan had no action and no query, or
only queries), ``provider_error`` (model planners only; the run is incomplete). None of
these proves the goal: task contracts are evaluated after the task's last group from the
world and the task's accepted events.

>>> from analysis.executor import Rules
>>> cfg = RuntimeConfig(attempt_limit=10)
>>> cfg.attempt_limit, cfg.max_planner_calls
(10, 8)
"""
from __future__ import annotations

import itertools
from collections import deque
from dataclasses import dataclass, field, asdict
from typing import Any, Callable, Iterable, Mapping, Sequence

from .belief import Belief
from .executor import Executor
from .observation import Observer
from .protocol import (PlannerResponse, PlannerView, ProviderError, count_tokens, parse_plan,
                       render_prompt)
from .rules import Rules
from .world import World
from . import contracts as _contracts

__all__ = ["RuntimeConfig", "GroupResult", "EpisodeResult", "run_episode", "find_repair",
           "failed_atoms", "BeliefReader", "GROUP_STATUSES", "PROVIDER_ERROR", "query_record"]

GROUP_STATUSES = ("completed", "execution_blocked", "parse_failure", "empty_plan")
#: a group whose planner endpoint failed after every retry: never scored, the run is
#: incomplete (kept out of GROUP_STATUSES, the statuses a finished run may hold)
PROVIDER_ERROR = "provider_error"


@dataclass(frozen=True)
class RuntimeConfig:
    """Loop settings. ``feedback_window``: how many recent attempts the planner sees."""

    attempt_limit: int = 80
    max_planner_calls: int = 8
    feedback_window: int = 5
    repair: bool = True

    def __post_init__(self):
        for name in ("attempt_limit", "max_planner_calls", "feedback_window"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"{name}={v!r}: expected a positive integer")

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class GroupResult:
    """One group's record (``record`` follows docs/FORMAT.md ``group_record``) plus the
    accepted events of the group (for event contracts)."""

    record: dict
    events: list[dict]
    world: World


@dataclass
class EpisodeResult:
    """``provider_error``: the message of the endpoint failure that stopped the episode
    (its last group record has status ``provider_error``; later groups were not run)."""

    group_records: list[dict]
    task_records: list[dict]
    final_world: World
    provider_error: str | None = None


class _GroupProviderError(Exception):
    """Internal: carries a ProviderError out of a group's call loop."""


class BeliefReader:
    """Read-only access to a :class:`Belief` for planners (lookups count hits)."""

    __slots__ = ("_b",)

    def __init__(self, belief: Belief):
        self._b = belief

    def location(self, item: str):
        return self._b.location(item)

    def is_open(self, entity: str):
        return self._b.is_open(entity)

    def knows_region(self, region: str) -> bool:
        return self._b.knows_region(region)

    def as_dict(self) -> dict:
        return self._b.as_dict()

    @property
    def memory(self) -> str:
        return self._b.memory


# ----------------------------------------------------------------- feedback / repair
def failed_atoms(rules: Rules, action: Mapping, failed_checks: Iterable[str]):
    """Ground the failed rule preconditions of ``action``: ``[(expected_true, atom)]``.

    Built-in checks (unknown type, arity, typing) carry no world information and are
    skipped.

    >>> r = Rules.load()
    >>> failed_atoms(r, {"type": "take_from_storage", "args": ["milk", "fridge"]},
    ...              ["storage_open"])
    [(True, ('open', 'fridge'))]
    """
    rule = rules.actions.get(action.get("type")) if isinstance(action, Mapping) else None
    if rule is None or len(action.get("args", ())) != len(rule.params):
        return []
    binding = {p.name: a for p, a in zip(rule.params, action["args"])}
    names = set(failed_checks)
    return [(not c.negated, c.atom.ground(binding)) for c in rule.pre if c.name in names]


def _agent_region(world: World) -> str | None:
    at = sorted(a[1] for a in world.facts if a[0] == "agent-at" and len(a) == 2)
    return at[0] if at else None


def _holding(world: World) -> str | None:
    h = sorted(a[1] for a in world.facts if a[0] == "holding" and len(a) == 2)
    return h[0] if h else None


def _repair_candidates(rules: Rules, world: World, action: Mapping) -> list[list[dict]]:
    """Candidate repair plans for ``action``, most specific first (deterministic order)."""
    rule = rules.actions.get(action.get("type"))
    if rule is None or len(action.get("args", ())) != len(rule.params):
        return []
    objects = world.objects
    here = _agent_region(world)
    fixtures: list[str] = []
    for p, a in zip(rule.params, action["args"]):
        ty = objects.get(a)
        if ty is None:
            continue
        if rules.is_subtype(ty, "fixture"):
            fixtures.append(a)
        else:
            loc = world.location_of(a)
            if loc is not None:
                fixtures.append(loc)
    fixtures = list(dict.fromkeys(fixtures))
    navs = []
    if here is not None and "navigate" in rules.actions:
        navs = [{"type": "navigate", "args": [here, f]} for f in fixtures if f != here]
    opens = []
    for f in fixtures:
        ty = objects.get(f)
        if ty is None:
            continue
        if rules.is_subtype(ty, "storage") and "open_storage" in rules.actions:
            opens.append({"type": "open_storage", "args": [f]})
        elif rules.is_subtype(ty, "enclosed_appliance") and "open_appliance" in rules.actions:
            opens.append({"type": "open_appliance", "args": [f]})
    plans = [[n] for n in navs] + [[o] for o in opens]
    plans += [[n, o] for n in navs for o in opens if n["args"][1] == o["args"][0]]
    return plans


def find_repair(executor: Executor, world: World, action: Mapping) -> list[dict] | None:
    """A validated repair plan for a rejected ``action``, or ``None``.

    Candidates: navigate to a fixture the action names (or where an item it names is),
    open that storage/appliance, or both. A candidate is kept only if every step is
    accepted in simulation and the original action is accepted afterwards.

    >>> from analysis.executor import Rules
    >>> r = Rules.load(); ex = Executor(r)
    >>> w = World({"milk": "bottle", "fridge": "fridge", "counter": "counter"},
    ...           [("agent-at", "counter"), ("at", "milk", "fridge"), ("hand-empty",)])
    >>> find_repair(ex, w, {"type": "take_from_storage", "args": ["milk", "fridge"]})
    [{'type': 'navigate', 'args': ['counter', 'fridge']}, {'type': 'open_storage', 'args': ['fridge']}]
    """
    for plan in _repair_candidates(executor.rules, world, action):
        w = world
        ok = True
        for step in plan:
            out = executor.apply(w, step)
            if not out.accepted:
                ok = False
                break
            w = out.world
        if ok and executor.apply(w, action).accepted:
            return plan
    return None


def query_record(region: str, responded: bool, obs, after_attempts: int) -> dict:
    """The record of one visual query (docs/FORMAT.md ``query``).

    It keeps what the observation reported about items (``anchor``, ``visible``,
    ``added``, ``removed``; sorted, empty when the region did not respond) so that a
    re-observation after a state change can be read from the records and re-checked by
    replay. ``after_attempts`` is the number of the group's attempts made before the
    query: queries and attempts are separate lists, and without it the order of a query
    relative to the group's state changes would be lost. Open states and contents are
    left out to keep records compact (replay recomputes them from the same world).

    >>> query_record("shelf", False, None, 2)["visible"]
    []
    """
    rec = {"region": region, "responded": responded, "after_attempts": after_attempts,
           "anchor": [], "visible": [], "added": [], "removed": []}
    if obs is not None:
        rec.update(anchor=list(obs.anchor), visible=list(obs.visible),
                   added=list(obs.added), removed=list(obs.removed))
    return rec


# ----------------------------------------------------------------------- the loop
class _EpisodeRun:
    def __init__(self, episode: Mapping, planner, rules: Rules, executor: Executor,
                 memory: str, config: RuntimeConfig, run_id: str):
        self.episode = episode
        self.planner = planner
        self.rules = rules
        self.executor = executor
        self.config = config
        self.run_id = run_id
        self.provider_error: str | None = None
        self.world = World.from_json(episode["initial_world"])
        self.observer = Observer(episode, rules)
        self.belief = Belief(memory)
        self.reader = BeliefReader(self.belief)
        objs = self.world.objects
        self.regions = tuple(sorted(o for o, t in objs.items() if rules.is_subtype(t, "fixture")))
        self.schema = {n: a.to_json() for n, a in rules.actions.items()}
        self.types = dict(rules.types)

    def _execute(self, action: dict, source: str, raw, attempts: list, events: list,
                 feedback: deque) -> bool:
        out = self.executor.apply(self.world, action)
        attempts.append({
            "index": len(attempts), "source": source, "raw": raw,
            "action": {"type": action["type"], "args": list(action["args"])},
            "status": "accepted" if out.accepted else "invalid",
            "failed_checks": list(out.failed_checks),
        })
        feedback.append({"action": {"type": action["type"], "args": list(action["args"])},
                         "status": "accepted" if out.accepted else "invalid",
                         "failed_checks": list(out.failed_checks), "source": source})
        if out.accepted:
            self.world = out.world
            events.append(out.event)
            self.belief.apply_transition(out.transition["added"], out.transition["removed"])
        else:
            self.belief.apply_feedback(failed_atoms(self.rules, action, out.failed_checks))
        return out.accepted

    def _view(self, group: Mapping, feedback: deque, call_index: int, query_results: list):
        region = _agent_region(self.world)
        if region is not None:
            obs = self.observer.observe(region, self.world)
            self.belief.observe(obs)
            obs_d = obs.as_dict()
        else:
            obs_d = {"region": None, "visible": [], "anchor": [], "added": [], "removed": [],
                     "open": {}, "contents": {}}
        # Types are public (scene fixtures, named objects); locations are not.
        held = _holding(self.world)
        named = list(group["objects"]) + obs_d["visible"] + list(self.regions) + (
            [held] if held else []) + [x for v in obs_d["contents"].values() for x in v]
        types = {o: self.world.objects[o] for o in named if o in self.world.objects}
        for q in query_results:
            for o in q.get("visible", []):
                if o in self.world.objects:
                    types[o] = self.world.objects[o]
        return PlannerView(
            instruction=group["instruction"], objects=tuple(group["objects"]),
            action_hints=tuple(group["action_hints"]), observation=obs_d,
            holding=_holding(self.world), feedback=tuple(feedback), belief=self.reader,
            regions=self.regions, object_types=dict(sorted(types.items())),
            action_schema=self.schema, types=self.types,
            key=f"{self.episode['episode_id']}/{group['group_id']}/{call_index}",
            call_index=call_index, query_results=tuple(query_results))

    def _call(self, view, calls: list):
        try:
            resp = self.planner.propose(view)
        except ProviderError as exc:
            calls.append({"raw": "", "prompt_tokens": 0, "completion_tokens": 0})
            raise _GroupProviderError(str(exc)) from None
        except OSError as exc:
            # a local fault (cache, call log, disk, permissions) is never a score: it
            # stops the run, naming the file (analysis._fs.errors.DiskError)
            from analysis._fs.confine import LocalFault, disk_error
            if isinstance(exc, LocalFault):
                raise
            raise disk_error(exc.filename or "a local file of the planner", exc,
                             "the run stops (a local fault, not a planner failure)") from None
        except Exception as exc:  # noqa: BLE001 -- a crashing planner is a parse failure
            from analysis._fs.confine import LocalFault
            if isinstance(exc, LocalFault):
                # our side of the boundary (confinement, limiter, cache, journal): whatever
                # the class of its cause, it stops the run and is never scored
                raise
            resp = None
        if isinstance(resp, PlannerResponse):
            text, pt, ct = resp.text, resp.prompt_tokens, resp.completion_tokens
        else:
            text, pt, ct = resp, None, None
        raw = text if isinstance(text, str) else ""
        if pt is None:
            pt = count_tokens(render_prompt(view))
        if ct is None:
            ct = count_tokens(raw)
        calls.append({"raw": raw, "prompt_tokens": int(pt), "completion_tokens": int(ct)})
        return text

    def run_group(self, group: Mapping, index: int) -> GroupResult:
        cfg = self.config
        self.belief.begin_group(index)
        attempts: list[dict] = []
        queries: list[dict] = []
        calls: list[dict] = []
        events: list[dict] = []
        feedback: deque = deque(maxlen=cfg.feedback_window)
        queue: list[tuple[dict, str | None, int]] = []
        ids = itertools.count()
        repaired: set[int] = set()
        query_results: list[dict] = []
        used = 0  # action attempts + visual queries against the shared limit
        n_calls = 0
        queued_any = False
        need_call = True
        status = None
        while status is None:
            if need_call:
                if n_calls >= cfg.max_planner_calls:
                    status = "completed" if queued_any else "empty_plan"
                    break
                view = self._view(group, feedback, n_calls, query_results)
                try:
                    text = self._call(view, calls)
                except _GroupProviderError as exc:
                    status = PROVIDER_ERROR
                    self.provider_error = str(exc)
                    break
                n_calls += 1
                try:
                    plan = parse_plan(text)
                except ValueError:
                    status = "parse_failure"
                    break
                query_results = []
                if plan.query is not None and used < cfg.attempt_limit:
                    used += 1
                    responded = self.observer.is_region(plan.query) or plan.query in self.regions
                    self.belief.note_query(plan.query)
                    if responded:
                        obs = self.observer.observe(plan.query, self.world)
                        self.belief.observe(obs)
                        query_results.append(obs.as_dict())
                    else:
                        obs = None
                        query_results.append({"region": plan.query, "error": "unknown region"})
                    queries.append(query_record(plan.query, responded, obs, len(attempts)))
                queue = [(a, r, next(ids)) for a, r in zip(plan.actions, plan.raw_actions)]
                need_call = False
                if not queue:
                    if plan.query is not None and n_calls < cfg.max_planner_calls:
                        need_call = True  # it looked first; ask it again with what it saw
                        continue
                    status = "completed" if queued_any else "empty_plan"
                    break
                queued_any = True
            if not queue:
                status = "completed"
                break
            if used >= cfg.attempt_limit:
                status = "execution_blocked"
                break
            action, raw, qid = queue[0]
            used += 1
            if self._execute(action, "planner", raw, attempts, events, feedback):
                queue.pop(0)
                continue
            if cfg.repair and qid not in repaired:
                fix = find_repair(self.executor, self.world, action)
                if fix is not None:
                    repaired.add(qid)
                    for step in fix:
                        if used >= cfg.attempt_limit:
                            break
                        used += 1
                        self._execute(step, "repair", None, attempts, events, feedback)
                    continue  # retry the original action (still at the queue head)
            queue.pop(0)
            if n_calls < cfg.max_planner_calls:
                need_call = True  # replan with the feedback; the new plan replaces the queue
        record = {
            "run_id": self.run_id,
            "episode_id": self.episode["episode_id"],
            "group_id": group["group_id"],
            "status": status,
            "attempts": attempts,
            "queries": queries,
            "planner_calls": calls,
            "prompt_tokens": sum(c["prompt_tokens"] for c in calls),
            "completion_tokens": sum(c["completion_tokens"] for c in calls),
            "belief": self.belief.take_counters(),
            "world_sha256_after": self.world.sha256(),
        }
        return GroupResult(record, events, self.world)


def evaluate_task(task: Mapping, world: World, events: Sequence[Mapping],
                  statuses: Sequence[str], run_id: str) -> dict:
    """The ``task_record`` of ``task`` from the world at its end, its accepted events and
    the statuses of its groups (contracts evaluated by :mod:`analysis.executor.contracts`)."""
    completed = all(s == "completed" for s in statuses)
    result = _contracts.evaluate_contract(task["contract"], world, list(events), completed)
    return {
        "run_id": run_id, "task_id": task["task_id"], "episode_id": task["episode_id"],
        "completed": completed,
        "conditions": [{"id": c["id"], "truth": result.truths[c["id"]].value}
                       for c in task["contract"]["conditions"]],
    }


def run_episode(episode: Mapping, tasks: Sequence[Mapping], planner, rules: Rules,
                memory: str, config: RuntimeConfig | None = None, run_id: str = "run",
                executor: Executor | None = None) -> EpisodeResult:
    """Run ``planner`` over every group of ``episode`` in order; evaluate ``tasks``.

    Every group of the episode is run (the world must pass through all of them); task
    records are produced for ``tasks`` (those of the suite in this episode).
    """
    config = config or RuntimeConfig()
    executor = executor or Executor(rules)
    er = _EpisodeRun(episode, planner, rules, executor, memory, config, run_id)
    groups = sorted(episode["groups"], key=lambda g: g["index"])
    last_of: dict[str, list[Mapping]] = {}
    for t in tasks:
        if t["episode_id"] != episode["episode_id"]:
            raise ValueError(f"task {t['task_id']!r} belongs to episode {t['episode_id']!r}, "
                             f"not {episode['episode_id']!r}")
        last_of.setdefault(t["group_ids"][-1], []).append(t)
    group_records: list[dict] = []
    events_by_group: dict[str, list[dict]] = {}
    status_by_group: dict[str, str] = {}
    task_records: list[dict] = []
    for g in groups:
        res = er.run_group(g, g["index"])
        group_records.append(res.record)
        events_by_group[g["group_id"]] = res.events
        status_by_group[g["group_id"]] = res.record["status"]
        if res.record["status"] == PROVIDER_ERROR:
            break  # later groups would run on a world the missing reply should have changed
        for t in last_of.get(g["group_id"], []):
            evs = [e for gid in t["group_ids"] for e in events_by_group.get(gid, [])]
            sts = [status_by_group.get(gid, "empty_plan") for gid in t["group_ids"]]
            task_records.append(evaluate_task(t, er.world, evs, sts, run_id))
    return EpisodeResult(group_records, task_records, er.world, er.provider_error)

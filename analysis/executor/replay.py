"""Re-execution: derive every outcome of a run from its recorded planner replies and the
frozen cohort, and compare it with what the run recorded.

The runtime loop (:mod:`analysis.executor.runtime`) is deterministic once the planner's
replies are fixed: parsing, the queue, repairs, visual queries, the attempt limit and
the contracts depend only on the world, the rules and the replies. Re-execution therefore
runs the very same loop (:func:`~analysis.executor.runtime.run_episode`) with a planner
that answers each call with the reply the record holds (``planner_calls[k].raw``) and
derives, from each episode's initial world:

* per group: every attempt (source, raw, action, status, failed checks; repairs
  included), every visual query (its position and what it reported), the number of
  planner calls, the group **status**, the world hash and token sums, and the belief
  counters that do not depend on the planner's own lookups (``repeated_region_queries``,
  ``anchor_delta_conflicts``; ``cross_group_hits`` counts the planner's lookups and is
  not derivable);
* per task of the suite: ``completed``, the **condition list** (exactly the contract's
  IDs, once each, in order) and each condition's **truth**.

Nothing recorded is trusted: every recorded value must equal the derived one, and the
first difference is reported with the file, the record (line and ID) and the field.

>>> Divergence("runs/x/groups.jsonl.gz", 3, "g1", "attempts[0].status", "accepted",
...            "invalid").message()
"runs/x/groups.jsonl.gz line 3 (g1): attempts[0].status: recorded 'accepted', replayed 'invalid'"
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Mapping, Sequence

from .executor import Executor
from .rules import Rules
from .runtime import RuntimeConfig, run_episode
from .protocol import PlannerResponse

__all__ = ["Divergence", "ReplayReport", "replay_run", "runtime_config", "QUERY_FIELDS",
           "ATTEMPT_FIELDS"]

ATTEMPT_FIELDS = ("index", "source", "raw", "action", "status", "failed_checks")
#: Recorded query fields recomputed by replay, in the order they are compared.
QUERY_FIELDS = ("region", "after_attempts", "responded", "anchor", "visible", "added",
                "removed")
#: Belief counters the loop derives without the planner (see the module docstring).
DERIVED_COUNTERS = ("repeated_region_queries", "anchor_delta_conflicts")


@dataclass(frozen=True)
class Divergence:
    file: str
    line: int        # 1-based line of the record in its file (0: no such record)
    record_id: str
    field: str
    recorded: object
    replayed: object

    def message(self) -> str:
        return (f"{self.file} line {self.line} ({self.record_id}): {self.field}: "
                f"recorded {self.recorded!r}, replayed {self.replayed!r}")


@dataclass
class ReplayReport:
    run_id: str
    n_groups: int = 0
    n_attempts: int = 0
    n_tasks: int = 0
    divergences: list[Divergence] = field(default_factory=list)
    #: failure labels and condition ledger derived from the re-executed records
    #: (:mod:`analysis.executor.failures`; never read from a record)
    failures: object = None

    @property
    def ok(self) -> bool:
        return not self.divergences

    def summary(self) -> str:
        head = (f"{self.run_id}: {self.n_groups} groups, {self.n_attempts} attempts, "
                f"{self.n_tasks} tasks replayed")
        if self.ok:
            return head + ", 0 divergences"
        return head + f"; first divergence: {self.divergences[0].message()}"


class _RecordedPlanner:
    """Answers the runtime's k-th call in a group with the recorded k-th reply (and the
    recorded token counts); a call beyond the record gets an empty reply and is noted."""

    name = "recorded"

    def __init__(self, episode_id: str, records: Mapping[str, Mapping]):
        self.prefix = len(episode_id) + 1
        self.records = records
        self.overrun: dict[str, int] = {}

    def config(self) -> dict:
        return {}

    def propose(self, view):
        gid = view.key[self.prefix:view.key.rindex("/")]
        calls = self.records[gid]["planner_calls"]
        k = view.call_index
        if k >= len(calls):
            self.overrun.setdefault(gid, k + 1)
            return PlannerResponse("", 0, 0)
        return PlannerResponse(calls[k]["raw"], calls[k]["prompt_tokens"],
                               calls[k]["completion_tokens"])


def runtime_config(run: Mapping) -> RuntimeConfig:
    """The loop settings a run was recorded with (``planner_config.runtime``, as
    ``analysis.run`` writes it; defaults otherwise). Raises ``ValueError`` naming the key.

    >>> runtime_config({"attempt_limit": 80, "planner_config": {}}).max_planner_calls
    8
    """
    settings = dict((run.get("planner_config") or {}).get("runtime") or {})
    known = {f.name for f in fields(RuntimeConfig)}
    unknown = sorted(set(settings) - known)
    if unknown:
        raise ValueError(f"planner_config.runtime.{unknown[0]}: unknown setting (known: "
                         f"{sorted(known)})")
    settings.setdefault("attempt_limit", run.get("attempt_limit", 80))
    if settings["attempt_limit"] != run.get("attempt_limit", settings["attempt_limit"]):
        raise ValueError(f"attempt_limit {run.get('attempt_limit')!r} differs from "
                         f"planner_config.runtime.attempt_limit {settings['attempt_limit']!r}")
    return RuntimeConfig(**settings)


def replay_run(run_id: str, group_records: Sequence[Mapping], task_records: Sequence[Mapping],
               episodes: Mapping[str, Mapping], tasks: Mapping[str, Mapping], rules: Rules,
               groups_file: str = "groups.jsonl.gz", tasks_file: str = "tasks.jsonl",
               stop_at_first: bool = True, *, run: Mapping | None = None,
               suite: Mapping | None = None, run_file: str = "run.json") -> ReplayReport:
    """Derive one run (records as read from its files) from the cohort and compare.

    ``run`` (the ``run.json`` record) gives the loop settings and the memory condition
    (without it: default settings, and the belief counters are not compared); ``suite``
    gives the episodes and tasks the run must cover (without it: those the records name).
    """
    rep = ReplayReport(run_id)

    def diverge(d: Divergence) -> bool:
        rep.divergences.append(d)
        return stop_at_first

    try:
        config = runtime_config(run or {})
    except ValueError as exc:
        diverge(Divergence(run_file, 1, run_id, "planner_config.runtime", str(exc), "-"))
        return rep
    memory = run["memory"] if run is not None else None

    # a group is identified within its episode (toy cohorts reuse g0, g1, ...)
    line_of: dict[tuple, int] = {}
    by_key: dict[tuple, Mapping] = {}
    for i, g in enumerate(group_records, 1):
        key = (g["episode_id"], g["group_id"])
        if key in by_key:
            if diverge(Divergence(groups_file, i, g["group_id"], "group_id", g["group_id"],
                                  f"one record per group (first at line {line_of[key]})")):
                return rep
            continue
        line_of[key], by_key[key] = i, g
    if suite is not None:
        from ..records.limited import run_suite_of   # a limited run covers its first N episodes
        suite = run_suite_of(run, suite, tasks)
        episode_ids = list(suite["episode_ids"])
        task_ids = list(suite["task_ids"])
    else:
        episode_ids = list(dict.fromkeys(g["episode_id"] for g in group_records))
        task_ids = list(dict.fromkeys(t["task_id"] for t in task_records))
    wanted = {(e, g["group_id"]) for e in episode_ids if e in episodes
              for g in episodes[e]["groups"]}
    for key in by_key:
        if key not in wanted:
            if diverge(Divergence(groups_file, line_of[key], key[1], "episode_id", key[0],
                                  "a group of an episode of the suite in the cohort")):
                return rep

    ex = Executor(rules)
    from .failures import RunDerivation, derive_episode
    rep.failures = RunDerivation(run_id)
    derived_tasks: dict[str, dict] = {}
    for eid in episode_ids:
        if eid not in episodes:
            continue
        ep = episodes[eid]
        groups = sorted(ep["groups"], key=lambda g: g["index"])
        absent = [g["group_id"] for g in groups if (eid, g["group_id"]) not in by_key]
        if absent:
            if diverge(Divergence(groups_file, 0, absent[0], "group_id", "missing",
                                  f"a record for every group of episode {eid}")):
                return rep
            continue
        ep_tasks = [tasks[t] for t in task_ids if t in tasks and tasks[t]["episode_id"] == eid]
        planner = _RecordedPlanner(eid, {g["group_id"]: by_key[(eid, g["group_id"])]
                                         for g in groups})
        res = run_episode(ep, ep_tasks, planner, rules, memory or "persistent", config,
                          run_id=run_id, executor=ex)
        for derived in res.group_records:
            gid = derived["group_id"]
            rec = by_key[(eid, gid)]
            rep.n_groups += 1
            rep.n_attempts += len(derived["attempts"])
            for name, got, want in _group_differences(rec, derived, memory is not None,
                                                      planner.overrun.get(gid)):
                if diverge(Divergence(groups_file, line_of[(eid, gid)], gid, name, got, want)):
                    return rep
        for tr in res.task_records:
            derived_tasks[tr["task_id"]] = tr
        # labels and ledger from the replayed records, not the recorded ones
        derive_episode(ep, res.group_records, ep_tasks, rules, ex, config.attempt_limit,
                       rep.failures)

    seen: dict[str, int] = {}
    for line, tr in enumerate(task_records, 1):
        tid = tr["task_id"]
        rep.n_tasks += 1
        if tid in seen:
            if diverge(Divergence(tasks_file, line, tid, "task_id", tid,
                                  f"one record per task (first at line {seen[tid]})")):
                return rep
            continue
        seen[tid] = line
        want = derived_tasks.get(tid)
        if want is None:
            if diverge(Divergence(tasks_file, line, tid, "task_id", tid,
                                  "no replayed groups for this task (not a task of the suite)")):
                return rep
            continue
        for name, got, exp in _task_differences(tr, want):
            if diverge(Divergence(tasks_file, line, tid, name, got, exp)):
                return rep
    for tid in task_ids:
        if tid not in seen and tid in derived_tasks:
            if diverge(Divergence(tasks_file, 0, tid, "task_id", "missing",
                                  "a record for every task of the suite")):
                return rep
    return rep


def _group_differences(rec: Mapping, derived: Mapping, with_counters: bool, overrun):
    """``(field, recorded, replayed)`` for each difference, in a fixed order."""
    for name, fields in (("attempts", ATTEMPT_FIELDS), ("queries", QUERY_FIELDS)):
        r, d = rec[name], derived[name]
        for i, (a, b) in enumerate(zip(r, d)):
            for f in fields:
                if a.get(f) != b[f]:
                    yield f"{name}[{i}].{f}", a.get(f), b[f]
        if len(r) != len(d):
            yield name, f"{len(r)} {name}", f"{len(d)} {name}"
    if overrun is not None:
        yield ("planner_calls", f"{len(rec['planner_calls'])} calls",
               f"the loop asks for call {overrun}")
    elif len(rec["planner_calls"]) != len(derived["planner_calls"]):
        yield ("planner_calls", f"{len(rec['planner_calls'])} calls",
               f"{len(derived['planner_calls'])} calls")
    for f in ("status", "world_sha256_after", "prompt_tokens", "completion_tokens", "run_id",
              "episode_id"):
        if rec[f] != derived[f]:
            yield f, rec[f], derived[f]
    if with_counters:
        for f in DERIVED_COUNTERS:
            if rec["belief"][f] != derived["belief"][f]:
                yield f"belief.{f}", rec["belief"][f], derived["belief"][f]


def _task_differences(rec: Mapping, derived: Mapping):
    for f in ("run_id", "episode_id", "completed"):
        if rec[f] != derived[f]:
            yield f, rec[f], derived[f]
    got = [c["id"] for c in rec["conditions"]]
    want = [c["id"] for c in derived["conditions"]]
    if got != want:
        yield "conditions", got, want
        return
    for a, b in zip(rec["conditions"], derived["conditions"]):
        if a["truth"] != b["truth"]:
            yield f"conditions[{a['id']}].truth", a["truth"], b["truth"]

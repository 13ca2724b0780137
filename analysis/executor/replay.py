"""Replay a run's recorded attempts through the executor and compare with the record.

For every episode of the run, the world starts from the episode's initial world; the
group records are taken in group order and each recorded attempt's action is applied
again. Compared with the record: each attempt's status and failed checks, what each
visual query reported (``responded`` and the observation's ``anchor``, ``visible``,
``added``, ``removed``, recomputed on the replayed world after the recorded number of
attempts), the world hash after each group, and for each task its ``completed`` flag and
every condition's
truth (re-evaluated from the replayed world and accepted events). The first divergence
is reported with the file, the record (line and ID) and the field.

>>> Divergence("runs/x/groups.jsonl.gz", 3, "g1", "attempts[0].status", "accepted",
...            "invalid").message()
"runs/x/groups.jsonl.gz line 3 (g1): attempts[0].status: recorded 'accepted', replayed 'invalid'"
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

from .contracts import evaluate_contract
from .executor import Executor
from .observation import Observer
from .rules import Rules
from .world import World

__all__ = ["Divergence", "ReplayReport", "replay_run", "QUERY_FIELDS"]

#: Recorded query fields recomputed by replay (``region`` identifies the query;
#: ``after_attempts`` places it).
QUERY_FIELDS = ("responded", "anchor", "visible", "added", "removed")


def _replayed_query(observer: Observer, fixtures, region: str, world: World) -> dict:
    """What the runtime records for a query of ``region`` in ``world``
    (``analysis.executor.runtime.query_record``, without the position)."""
    responded = observer.is_region(region) or region in fixtures
    if not responded:
        return {"responded": False, "anchor": [], "visible": [], "added": [], "removed": []}
    obs = observer.observe(region, world)
    return {"responded": True, "anchor": list(obs.anchor), "visible": list(obs.visible),
            "added": list(obs.added), "removed": list(obs.removed)}


@dataclass(frozen=True)
class Divergence:
    file: str
    line: int        # 1-based line of the record in its file
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

    @property
    def ok(self) -> bool:
        return not self.divergences

    def summary(self) -> str:
        head = (f"{self.run_id}: {self.n_groups} groups, {self.n_attempts} attempts, "
                f"{self.n_tasks} tasks replayed")
        if self.ok:
            return head + ", 0 divergences"
        return head + f"; first divergence: {self.divergences[0].message()}"


def replay_run(run_id: str, group_records: Sequence[Mapping], task_records: Sequence[Mapping],
               episodes: Mapping[str, Mapping], tasks: Mapping[str, Mapping], rules: Rules,
               groups_file: str = "groups.jsonl.gz", tasks_file: str = "tasks.jsonl",
               stop_at_first: bool = True) -> ReplayReport:
    """Replay one run (records as read from its files) against the cohort."""
    ex = Executor(rules)
    rep = ReplayReport(run_id)
    line_of = {(g["episode_id"], g["group_id"]): i for i, g in enumerate(group_records, 1)}
    by_ep: dict[str, dict[str, Mapping]] = {}
    for g in group_records:
        by_ep.setdefault(g["episode_id"], {})[g["group_id"]] = g
    end_state: dict[str, tuple[World, list, dict]] = {}

    def diverge(d: Divergence) -> bool:
        rep.divergences.append(d)
        return stop_at_first

    for eid, recs in by_ep.items():
        if eid not in episodes:
            if diverge(Divergence(groups_file, line_of[(eid, next(iter(recs)))], eid,
                                  "episode_id", eid, "not in the cohort")):
                return rep
            continue
        ep = episodes[eid]
        world = World.from_json(ep["initial_world"])
        observer = Observer(ep, rules)
        fixtures = {o for o, t in world.objects.items() if rules.is_subtype(t, "fixture")}
        events: dict[str, list] = {}
        statuses: dict[str, str] = {}
        for g in sorted(ep["groups"], key=lambda g: g["index"]):
            gid = g["group_id"]
            rec = recs.get(gid)
            if rec is None:
                if diverge(Divergence(groups_file, 0, gid, "group_id", "missing", "expected")):
                    return rep
                break
            line = line_of[(eid, gid)]
            rep.n_groups += 1
            evs = []
            # queries by position: a query made after k attempts sees the world before
            # attempt k (k == len(attempts): the world at the group's end)
            n_att = len(rec["attempts"])
            at_pos: dict[int, list] = {}
            for j, q in enumerate(rec["queries"]):
                at_pos.setdefault(q["after_attempts"], []).append((j, q))
            bad = [k for k in at_pos if k > n_att]
            if bad:
                j = at_pos[min(bad)][0][0]
                if diverge(Divergence(groups_file, line, gid, f"queries[{j}].after_attempts",
                                      min(bad), f"at most {n_att} (the group's attempts)")):
                    return rep

            def check_queries(k) -> bool:
                for j, q in at_pos.get(k, ()):
                    got = _replayed_query(observer, fixtures, q["region"], world)
                    for f in QUERY_FIELDS:
                        if q[f] != got[f]:
                            if diverge(Divergence(groups_file, line, gid, f"queries[{j}].{f}",
                                                  q[f], got[f])):
                                return True
                return False

            for i, att in enumerate(rec["attempts"]):
                if check_queries(i):
                    return rep
                rep.n_attempts += 1
                out = ex.apply(world, att["action"])
                status = "accepted" if out.accepted else "invalid"
                if status != att["status"]:
                    if diverge(Divergence(groups_file, line, gid, f"attempts[{i}].status",
                                          att["status"], status)):
                        return rep
                if list(out.failed_checks) != list(att["failed_checks"]):
                    if diverge(Divergence(groups_file, line, gid,
                                          f"attempts[{i}].failed_checks",
                                          att["failed_checks"], list(out.failed_checks))):
                        return rep
                if out.accepted:
                    world = out.world
                    evs.append(out.event)
            if check_queries(n_att):
                return rep
            if world.sha256() != rec["world_sha256_after"]:
                if diverge(Divergence(groups_file, line, gid, "world_sha256_after",
                                      rec["world_sha256_after"], world.sha256())):
                    return rep
            events[gid] = evs
            statuses[gid] = rec["status"]
            end_state[(eid, gid)] = (world, events, statuses)
    for line, tr in enumerate(task_records, 1):
        rep.n_tasks += 1
        task = tasks.get(tr["task_id"])
        last = (task["episode_id"], task["group_ids"][-1]) if task else None
        if task is None or last not in end_state:
            if diverge(Divergence(tasks_file, line, tr["task_id"], "task_id", tr["task_id"],
                                  "no replayed groups for this task")):
                return rep
            continue
        world, events, statuses = end_state[last]
        sts = [statuses.get(gid, "missing") for gid in task["group_ids"]]
        completed = all(s == "completed" for s in sts)
        if completed != tr["completed"]:
            if diverge(Divergence(tasks_file, line, tr["task_id"], "completed",
                                  tr["completed"], completed)):
                return rep
        evs = [e for gid in task["group_ids"] for e in events.get(gid, [])]
        result = evaluate_contract(task["contract"], world, evs, completed)
        for c in tr["conditions"]:
            got = result.truths.get(c["id"])
            got = got.value if got is not None else "missing"
            if got != c["truth"]:
                if diverge(Divergence(tasks_file, line, tr["task_id"],
                                      f"conditions[{c['id']}].truth", c["truth"], got)):
                    return rep
    return rep

"""The planner and memory suites (paper section 3, "the suites are separately defined
cohorts"; section 6.1 the planner protocol, section 6.4 the memory study): which compiled
episodes and admitted tasks each suite holds, under :class:`~analysis.compiler.policy.SuitePolicy`.

>>> from analysis.compiler.policy import SuitePolicy
>>> p = SuitePolicy.load()
>>> memory_episodes(["P03-a", "P03-b", "P04-c"], {"P03-a": 2, "P03-b": 3, "P04-c": 0}, p)[2:]
['P03-b', 'P03-a']
"""
from __future__ import annotations

from dataclasses import dataclass

from .policy import SuitePolicy


@dataclass(frozen=True)
class Suites:
    """The tasks (candidate dicts of :func:`analysis.compiler.tasks.unit_tasks`) each suite
    holds, in selection order."""
    planner: list
    memory: list

    @property
    def chosen_ids(self) -> set:
        return {c["task_id"] for c in self.planner + self.memory}


def memory_candidates(recipes, answers, policy: SuitePolicy) -> list[str]:
    """Videos of the memory kitchens with any grounding evidence (an ingredient add event
    or a VQA object-location answer); every one is compiled, and
    :func:`memory_episodes` keeps those with the most admitted terminal tasks."""
    vids = {a.video for a in answers}
    for r in recipes.values():
        for cap in r.captures:
            for e in cap.events:
                if e.kind == "add":
                    vids.add(e.span.video)
    return sorted(v for v in vids if v[:3] in policy.memory_kitchens)


def memory_episodes(candidates: list[str], n_terminal: dict, policy: SuitePolicy) -> list[str]:
    """The Nespresso and Squash episodes, then per memory kitchen the
    ``memory_per_kitchen`` candidate videos with the most admitted terminal tasks (ties by
    video ID); videos without any admitted terminal task are never chosen."""
    out = list(policy.memory_fixed)
    for k in policy.memory_kitchens:
        vids = sorted((v for v in candidates if v.startswith(k + "-") and n_terminal.get(v, 0) > 0),
                      key=lambda v: (-n_terminal[v], v))
        out.extend(vids[:policy.memory_per_kitchen])
    return out


def _pick(admitted: list, limits) -> list:
    chosen = []
    for tier, k in sorted(limits.items()):
        pool = [c for c in admitted if c["tier"] == tier]
        # ingredient adds first (they carry the recipe's goal), then observed puts
        pool.sort(key=lambda c: (c["key"][0] != "add", c["first"], c["task_id"]))
        chosen += pool[:k]
    return chosen


def select_suites(admitted_of: dict, memory_cands: list[str], policy: SuitePolicy) -> Suites:
    """Each suite's tasks from ``admitted_of`` (episode ID -> its admitted tasks): the
    planner episodes' tasks per tier, the memory episodes' terminal tasks, the worked
    example (``policy.example_task``) first in its episode."""
    mem_eps = memory_episodes(memory_cands, {e: sum(c["tier"] == "terminal" for c in admitted_of[e])
                                             for e in memory_cands}, policy)
    planner = []
    for eid in policy.planner_episodes:
        planner += _pick(admitted_of[eid], policy.planner_per_episode)
    memory = []
    quota = policy.memory_per_episode
    example = policy.example_task
    for eid in mem_eps:
        chosen = _pick(admitted_of[eid], {"terminal": quota})
        if eid == example.episode_id:
            sq = [c for c in admitted_of[eid] if c["conditions"][0].get("atom") == list(example.atom)]
            room = None if quota is None else quota - len(sq[:1])
            chosen = sq[:1] + [c for c in chosen if c not in sq][:room]
        memory += chosen
    return Suites(planner, memory)


def suite_records(suites: Suites, policy: SuitePolicy) -> list[dict]:
    """``cohort/suites.jsonl``: per suite its sorted task and episode IDs and definition."""
    return [{"suite": name, "task_ids": sorted(c["task_id"] for c in tasks),
             "episode_ids": sorted({c["episode_id"] for c in tasks}),
             "definition": policy.definitions[name]}
            for name, tasks in (("memory", suites.memory), ("planner", suites.planner))]

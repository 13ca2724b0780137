"""Limited runs: ``python -m analysis.run limit=N`` runs only the first N episodes of a
suite (a cheap trial of a model; issue 37).

Such a run records ``episode_limit: N`` in its ``run.json`` (docs/FORMAT.md), so
verification, re-execution and ``add_planner`` expect exactly the groups and tasks of
those N episodes, and ``python -m analysis.tables`` refuses an export holding one unless
``allow_limited=true``: the tables compare planners on whole suites.

>>> suite = {"suite": "planner", "episode_ids": ["e1", "e2", "e3"], "task_ids": ["t1", "t2", "t3"]}
>>> tasks = {"t1": {"episode_id": "e1"}, "t2": {"episode_id": "e2"}, "t3": {"episode_id": "e3"}}
>>> limited_suite(suite, 2, tasks)["task_ids"]
['t1', 't2']
>>> run_suite_of({"suite": "planner"}, suite, tasks) is suite  # no limit: the whole suite
True
"""
from __future__ import annotations

from typing import Iterable, Mapping

__all__ = ["limited_suite", "run_suite_of", "limited_runs", "check_limited",
           "LimitedRunsError", "LIMIT_KEY"]

#: The run record's field naming the number of episodes a limited run covers.
LIMIT_KEY = "episode_limit"


class LimitedRunsError(ValueError):
    """The export holds limited runs and the command was not told to accept them."""


def limited_suite(suite: Mapping, limit: int, tasks: Mapping[str, Mapping]) -> dict:
    """``suite`` cut to its first ``limit`` episodes (in suite order) and their tasks."""
    kept = list(suite["episode_ids"])[:int(limit)]
    keep = set(kept)
    return {**dict(suite), "episode_ids": kept,
            "task_ids": [t for t in suite["task_ids"] if tasks[t]["episode_id"] in keep]}


def run_suite_of(run: Mapping | None, suite: Mapping, tasks: Mapping[str, Mapping]) -> Mapping:
    """The part of ``suite`` that ``run`` (a ``run.json`` record) covers."""
    limit = (run or {}).get(LIMIT_KEY)
    return suite if limit is None else limited_suite(suite, limit, tasks)


def limited_runs(runs: Iterable[Mapping]) -> list[tuple[str, int]]:
    """``(run_id, N)`` of every limited run among ``runs`` (``run.json`` records)."""
    return [(r["run_id"], int(r[LIMIT_KEY])) for r in runs if r.get(LIMIT_KEY) is not None]


def check_limited(runs: Iterable[Mapping], allow: bool, where: str = "") -> list[tuple[str, int]]:
    """Refuse (:class:`LimitedRunsError`, one line naming the runs and what to do) when
    ``runs`` include a limited run and ``allow`` is false; return the limited runs.

    >>> check_limited([{"run_id": "chat__planner__persistent", "episode_limit": 3}], False)
    Traceback (most recent call last):
    ...
    analysis.records.limited.LimitedRunsError: the export holds 1 limited run (chat__planner__persistent: first 3 episodes only, from run limit=N): the tables compare planners on whole suites; rerun it without limit= (overwrite=true), or pass allow_limited=true to tabulate it anyway
    """
    found = limited_runs(runs)
    if found and not allow:
        named = ", ".join(f"{rid}: first {n} episodes only" for rid, n in found[:3])
        more = f" and {len(found) - 3} more" if len(found) > 3 else ""
        it = "it" if len(found) == 1 else "them"
        raise LimitedRunsError(
            f"the export{where} holds {len(found)} limited run{'s' if len(found) > 1 else ''} "
            f"({named}{more}, from run limit=N): the tables compare planners on whole suites; "
            f"rerun {it} without limit= (overwrite=true), or pass allow_limited=true to "
            f"tabulate {it} anyway")
    return found

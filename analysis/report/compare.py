"""Two runs, task by task (the data behind ``python -m analysis.compare a=RUN b=RUN``).

Lists the tasks of a suite that one run solved and the other did not, with the
conditions each run met there and the first attempt at which the two runs did different
things, and gives the rliable-style probability of improvement P(A > B) with an
episode-cluster interval. From Python: :meth:`analysis.Results.compare` (or
:func:`compare_runs` on an :class:`analysis.Export`).

P(A > B) (Agarwal et al. 2021, "Deep RL at the edge of the statistical precipice") is
the task-macro mean of ``1`` where A scores higher than B on a task, ``1/2`` on a tie and
``0`` where B scores higher, on ``metric`` (default ``success``); 0.5 means neither run
is better. Its interval resamples episodes (the tasks of an episode share a kitchen
and a belief, so they are not independent): :func:`analysis.stats.cluster_bootstrap`
of the per-task values, by default with the percentile method rliable uses.

>>> import analysis
>>> res = analysis.load().results(n_resamples=2000)
>>> cmp = res.compare("belief_search__planner__persistent", "lexicon__planner__persistent")
>>> cmp.n_a_only > cmp.n_b_only, 0.5 < cmp.prob_improvement <= 1
(True, True)
>>> cmp.tasks.columns[:4].tolist()
['task_id', 'episode_id', 'solved_by', 'met_a']
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

__all__ = ["ComparisonResult", "compare_runs", "COMPARE_METRICS"]

#: Per-task metrics P(A > B) can be computed on (columns of ``task_metrics`` defined for
#: every task of a suite).
COMPARE_METRICS = ("success", "gcr", "action_validity", "completed")

TASK_COLUMNS = ("task_id", "episode_id", "solved_by", "met_a", "met_b", "n_conditions",
                "divergence_group", "divergence_attempt", "attempt_a", "attempt_b", "title")


@dataclass(frozen=True)
class ComparisonResult:
    """Result of :func:`compare_runs` (and :meth:`analysis.Results.compare`).

    ``run_a``, ``run_b``: the run IDs; ``label_a``, ``label_b``: their names in the tables.
    ``suite``; ``n_tasks``: the suite's tasks; ``n_a_only``, ``n_b_only``, ``n_both``,
    ``n_neither``: tasks solved by A only, B only, both, neither. ``tasks``: one row per
    task solved by exactly one run (columns :data:`TASK_COLUMNS`: ``solved_by`` is
    ``"A"`` or ``"B"``; ``met_a``/``met_b`` the condition IDs TRUE in each run; the first
    divergence as the group, the attempt's position in it (1-based; ``None`` when the
    attempts agree and only the group status differs) and each run's attempt there as
    text, ``"(none)"`` where a run made no such attempt). ``metric``,
    ``prob_improvement`` (P(A > B)), ``low``, ``high``, ``confidence_level``,
    ``n_clusters`` (episodes), ``method``, ``n_resamples``, ``seed``; ``warnings``: the
    few-episode warnings of the interval.
    """

    run_a: str
    run_b: str
    label_a: str
    label_b: str
    suite: str
    n_tasks: int
    n_a_only: int
    n_b_only: int
    n_both: int
    n_neither: int
    tasks: pd.DataFrame = field(repr=False)
    metric: str = "success"
    prob_improvement: float = float("nan")
    low: float = float("nan")
    high: float = float("nan")
    confidence_level: float = 0.95
    n_clusters: int = 0
    method: str = "percentile"
    n_resamples: int = 10_000
    seed: int = 0
    warnings: tuple = ()

    def summary(self) -> str:
        """The comparison in a few lines (what the command prints above the task list)."""
        lvl = f"{100 * self.confidence_level:g}%"
        return "\n".join([
            f"A = {self.label_a} ({self.run_a}), B = {self.label_b} ({self.run_b}); "
            f"suite {self.suite}, {self.n_tasks} tasks",
            f"solved by A only: {self.n_a_only}; by B only: {self.n_b_only}; by both: "
            f"{self.n_both}; by neither: {self.n_neither}",
            f"P(A > B) on {self.metric}: {self.prob_improvement:.3f} [{lvl} interval "
            f"{_num(self.low)}, {_num(self.high)}] (episode-cluster {self.method} "
            f"bootstrap, {self.n_clusters} episodes, {self.n_resamples} resamples, "
            f"seed {self.seed}; 0.5: neither is better)",
            *[f"WARNING: {w}" for w in self.warnings]])


def _num(x) -> str:
    return "n/a" if x is None or not np.isfinite(x) else f"{x:.3f}"


def _attempt_key(a: dict) -> tuple:
    act = a["action"]
    return (a["source"], None if act is None else (act["type"], tuple(act["args"])),
            a["raw"] if act is None else None, a["status"], tuple(a["failed_checks"]))


def _attempt_text(a: dict | None) -> str:
    if a is None:
        return "(none)"
    act = a["action"]
    what = f"{act['type']}({', '.join(act['args'])})" if act is not None else \
        f"unparsed {a['raw']!r}"
    checks = f", failed {', '.join(a['failed_checks'])}" if a["failed_checks"] else ""
    return f"{what} [{a['source']}, {a['status']}{checks}]"


def first_divergence(groups_a: list, groups_b: list):
    """``(group_id, attempt position or None, attempt text A, attempt text B)`` of the first
    difference between two runs' group records of one task (in task order), or None.

    >>> g = {"group_id": "g1", "status": "completed", "attempts": [
    ...     {"source": "planner", "action": {"type": "open", "args": ["fridge"]}, "raw": None,
    ...      "status": "accepted", "failed_checks": []}]}
    >>> first_divergence([g], [{**g, "attempts": []}])
    ('g1', 1, 'open(fridge) [planner, accepted]', '(none)')
    >>> first_divergence([g], [{**g, "status": "execution_blocked"}])
    ('g1', None, 'group status completed', 'group status execution_blocked')
    """
    for ga, gb in zip(groups_a, groups_b):
        aa, ab = ga["attempts"], gb["attempts"]
        for j in range(max(len(aa), len(ab))):
            x = aa[j] if j < len(aa) else None
            y = ab[j] if j < len(ab) else None
            if x is None or y is None or _attempt_key(x) != _attempt_key(y):
                return ga["group_id"], j + 1, _attempt_text(x), _attempt_text(y)
        if ga["status"] != gb["status"]:
            return (ga["group_id"], None, f"group status {ga['status']}",
                    f"group status {gb['status']}")
    return None


def compare_runs(export, run_a: str, run_b: str, metric: str = "success",
                 n_resamples: int = 10_000, confidence_level: float = 0.95,
                 seed: int | np.random.Generator = 0, method: str = "percentile",
                 labels: dict | None = None) -> ComparisonResult:
    """Compare two runs of one suite of ``export`` (an :class:`analysis.Export`).

    ``run_a``/``run_b``: a run ID, or a run name (a planner's name) with one run.
    ``metric``: one of :data:`COMPARE_METRICS`, the per-task score of P(A > B);
    ``method``: a :func:`analysis.stats.cluster_bootstrap` method. ``labels``: run ID ->
    the name the tables give it (default: the run's name). Raises ``ValueError`` naming
    the parameter for an unknown run or metric, two runs of different suites, or one run
    twice.
    """
    from ..stats import BOOTSTRAP_METHODS, cluster_bootstrap
    if metric not in COMPARE_METRICS:
        raise ValueError(f"metric={metric!r}: expected one of {list(COMPARE_METRICS)}")
    if method not in BOOTSTRAP_METHODS:
        raise ValueError(f"method={method!r}: expected one of {list(BOOTSTRAP_METHODS)}")
    ids = {}
    for key, name in (("run_a", run_a), ("run_b", run_b)):
        if not isinstance(name, str):
            raise ValueError(f"{key}={name!r}: expected a run ID or a run name (a string)")
        try:
            found = export.run_ids(name)
        except ValueError as exc:
            raise ValueError(str(exc).replace("run=", f"{key}=", 1)) from None
        if len(found) != 1:
            raise ValueError(f"{key}={name!r}: names {len(found)} runs ({', '.join(found)}); "
                             "give one run ID")
        ids[key] = found[0]
    ra, rb = ids["run_a"], ids["run_b"]
    if ra == rb:
        raise ValueError(f"run_a and run_b are the same run ({ra}); compare two runs")
    runs = export.runs.set_index("run_id")
    if runs.loc[ra, "suite"] != runs.loc[rb, "suite"]:
        raise ValueError(f"run_a={ra} is on the {runs.loc[ra, 'suite']} suite and run_b={rb} "
                         f"on the {runs.loc[rb, 'suite']} suite; compare two runs of one suite")
    suite = str(runs.loc[ra, "suite"])
    names = dict(zip(export.runs.run_id, export.runs.get("run_name", export.runs.planner)))
    labels = {**names, **(labels or {})}

    tm = export.task_metrics
    a = tm[tm.run_id == ra].set_index("task_id")
    b = tm[tm.run_id == rb].set_index("task_id").reindex(a.index)
    sa, sb = a.success.astype(bool), b.success.astype(bool)
    va, vb = a[metric].astype(float), b[metric].astype(float)
    pi = pd.DataFrame({"episode_id": a.episode_id.to_numpy(), "pair": "A vs B",
                       "p": np.where(va > vb, 1.0, np.where(va == vb, 0.5, 0.0))})
    boot = cluster_bootstrap(pi, ["p"], cluster_col="episode_id", by=["pair"],
                             n_resamples=n_resamples, method=method,
                             confidence_level=confidence_level, seed=seed,
                             bounds=(0.0, 1.0), too_few="not_estimable")
    row = boot.table.iloc[0]

    only = a.index[sa.to_numpy() != sb.to_numpy()]
    truths = {}
    cr = export.condition_records
    for rid in (ra, rb):   # the conditions each run met, in contract order
        truths[rid] = {t: [] for t in only}
        met = cr[(cr.run_id == rid) & cr.task_id.isin(only) & (cr.truth == "TRUE")]
        for tid, cid in zip(met.task_id, met.condition_id):
            truths[rid][tid].append(cid)
    groups = {rid: {g["group_id"]: g for g in export.group_records_of(rid)} for rid in (ra, rb)} \
        if len(only) else {ra: {}, rb: {}}
    tasks = export.tasks.set_index("task_id")
    rows = []
    for tid in only:
        gids = tasks.loc[tid, "group_ids"]
        div = first_divergence([groups[ra][g] for g in gids if g in groups[ra]],
                               [groups[rb][g] for g in gids if g in groups[rb]])
        rows.append({"task_id": tid, "episode_id": a.loc[tid, "episode_id"],
                     "solved_by": "A" if sa[tid] else "B",
                     "met_a": truths[ra][tid], "met_b": truths[rb][tid],
                     "n_conditions": int(a.loc[tid, "n_conditions"]),
                     "divergence_group": div[0] if div else None,
                     "divergence_attempt": div[1] if div else None,
                     "attempt_a": div[2] if div else None, "attempt_b": div[3] if div else None,
                     "title": tasks.loc[tid, "title"]})
    frame = pd.DataFrame(rows, columns=list(TASK_COLUMNS))
    frame = frame.sort_values(["solved_by", "task_id"], kind="stable").reset_index(drop=True)
    if len(frame):
        frame["divergence_attempt"] = frame.divergence_attempt.astype("Int64")
    return ComparisonResult(
        run_a=ra, run_b=rb, label_a=str(labels.get(ra, ra)), label_b=str(labels.get(rb, rb)),
        suite=suite, n_tasks=int(len(a)),
        n_a_only=int((sa & ~sb).sum()), n_b_only=int((~sa & sb).sum()),
        n_both=int((sa & sb).sum()), n_neither=int((~sa & ~sb).sum()), tasks=frame,
        metric=metric, prob_improvement=float(row.estimate), low=float(row.low),
        high=float(row.high), confidence_level=float(confidence_level),
        n_clusters=int(row.n_clusters), method=str(row.method), n_resamples=int(n_resamples),
        seed=int(seed) if isinstance(seed, (int, np.integer)) else 0,
        warnings=tuple(boot.warnings))

"""The export as one object (paper appendix A.3, the frozen records; docs/api.md
``Export``; docs/ARCHITECTURE.md section 7): loading a verified export into pandas
DataFrames, and its raw records by run and task.

Nothing is returned before verification passes: :func:`load` verifies first and builds
the tables from the very bytes it verified. :class:`Export` is the one export class: the
tables read it, and :func:`analysis.load` returns it with the per-run tables joined
(:meth:`Export.joined`) and the metrics and statistics added by :mod:`analysis.api`.
"""
from __future__ import annotations

import difflib
import gc
import os
from dataclasses import dataclass, field
from sys import intern

import pandas as pd

from .integrity import VerificationReport, verify_records

__all__ = ["Export", "FrozenExport", "UnknownName", "UnknownRun", "load"]


class UnknownName(KeyError):
    """A run, task, table or figure name the export does not have. A ``KeyError`` (so
    ``except KeyError`` still catches it) whose message prints as written, not quoted.

    >>> str(UnknownName("table 'x': not an artefact"))
    "table 'x': not an artefact"
    """

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class UnknownRun(UnknownName, ValueError):
    """A run name that denotes no run of the export: a ``KeyError`` (an unknown key of
    the export) and a ``ValueError`` (a wrong argument, as :func:`.run_names.resolve_run`
    raises it)."""


def _did_you_mean(word, choices) -> str:
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.6)
    return f"; did you mean {close[0]}?" if close else ""


#: The run's columns :meth:`Export.joined` puts after ``run_id`` in every per-run table.
_RUN_COLS = ("planner", "suite", "memory")


@dataclass(frozen=True, eq=False)
class Export:
    """A verified export: the cohort's and the runs' records as DataFrames (one row per
    ..., columns: docs/api.md, ``Export``; ARCHITECTURE.md section 7), and the raw
    records themselves.

    :func:`load` builds it from the very bytes it verified, each per-run table as the
    records give it. :meth:`joined` gives the same export with each run's ``planner,
    suite, memory`` right after ``run_id`` in every per-run table and each task's
    ``suites``: what :func:`analysis.load` returns (an :class:`analysis.Export`, which
    also computes the metrics and statistics). ``frozen`` is the loader's form (itself,
    for an export from :func:`load`): what :func:`analysis.metrics.task_metrics` and
    the table builders read.

    >>> export = load("frozen_exports")  # doctest: +SKIP
    >>> export.run_ids("lexicon"), export.frozen is export  # doctest: +SKIP
    (['lexicon__planner__persistent'], True)
    """

    root: str
    manifest: dict = field(repr=False)
    report: VerificationReport = field(repr=False)
    episodes: pd.DataFrame = field(repr=False)
    groups: pd.DataFrame = field(repr=False)
    tasks: pd.DataFrame = field(repr=False)
    suites: pd.DataFrame = field(repr=False)
    conditions: pd.DataFrame = field(repr=False)
    runs: pd.DataFrame = field(repr=False)
    group_records: pd.DataFrame = field(repr=False)
    attempts: pd.DataFrame = field(repr=False)
    task_records: pd.DataFrame = field(repr=False)
    condition_records: pd.DataFrame = field(repr=False)
    task_groups: pd.DataFrame = field(repr=False, default=None)
    _records: dict = field(repr=False, default_factory=dict)
    #: the loader's form of a joined export (None: this is it)
    _loaded: "Export | None" = field(repr=False, default=None)
    #: what was computed from this export, once (analysis.api: metrics, results, labels)
    _computed: dict = field(repr=False, default_factory=dict)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(root={self.root!r}, runs={len(self.runs)}, "
                f"tasks={len(self.tasks)}, group_records={len(self.group_records)})")

    @property
    def frozen(self) -> "Export":
        """The export as :func:`load` built it (per-run tables without the run's columns):
        itself, or the form a joined export was made from."""
        return self if self._loaded is None else self._loaded

    def joined(self, cls: type | None = None) -> "Export":
        """This export with each run's ``planner, suite, memory`` inserted after
        ``run_id`` in ``group_records``, ``attempts``, ``task_records`` and
        ``condition_records``, and each task's ``suites`` (the suites holding it); an
        instance of ``cls`` (default: this class). The raw records are shared."""
        fx = self.frozen
        runs = fx.runs
        suites_of = fx.suites.groupby("task_id", sort=False)["suite"].agg(list)
        tasks = fx.tasks.copy()
        tasks["suites"] = tasks.task_id.map(suites_of).map(
            lambda v: v if isinstance(v, list) else [])
        return (cls or type(self))(
            root=fx.root, manifest=fx.manifest, report=fx.report, episodes=fx.episodes,
            groups=fx.groups, tasks=tasks, suites=fx.suites, conditions=fx.conditions,
            runs=runs, group_records=_with_runs(fx.group_records, runs),
            attempts=_with_runs(fx.attempts, runs),
            task_records=_with_runs(fx.task_records, runs),
            condition_records=_with_runs(fx.condition_records, runs),
            task_groups=fx.task_groups, _records=fx._records, _loaded=fx)

    # -- raw records ----------------------------------------------------------------------

    def raw(self, relpath: str):
        """The parsed records of one file, e.g. ``export.raw("cohort/tasks.jsonl")``: a
        list, or for group records a sequence that decodes them on demand."""
        try:
            return self._records[relpath]
        except KeyError:
            raise KeyError(f"relpath {relpath!r}: not in the export; files: "
                           f"{sorted(self._records)}") from None

    def files_of(self, record_type: str) -> list[str]:
        return sorted(rel for rel, e in self.manifest["files"].items()
                      if e["record_type"] == record_type)

    def records_of(self, record_type: str) -> list[dict]:
        """Every record of ``record_type``, in file order. For ``group_record`` this
        decodes all of them again: prefer :meth:`group_records_of` one run at a time."""
        return [r for rel in self.files_of(record_type) for r in self._records[rel]]

    # -- runs and tasks by name -----------------------------------------------------------

    def run_ids(self, name: str | None = None) -> list[str]:
        """Every run ID, or those ``name`` denotes (a run ID or a planner name); an unknown
        name raises :class:`UnknownRun` (a ``ValueError`` and a ``KeyError``) with the
        closest run ID or planner.

        >>> from analysis import load
        >>> load().run_ids("belief_search")
        ['belief_search__memory__persistent', 'belief_search__memory__reset', 'belief_search__planner__persistent']
        """
        from .run_names import resolve_run
        ids = sorted(self.runs.run_id)
        if name is None:
            return ids
        try:
            return resolve_run(name, ids, key="run")
        except ValueError as exc:
            raise UnknownRun(str(exc)) from None

    def _one_run(self, run: str) -> str:
        ids = self.run_ids(run)
        if len(ids) != 1:
            raise ValueError(f"run={run!r}: names {len(ids)} runs ({', '.join(ids)}); give "
                             "one run ID")
        return ids[0]

    def run(self, run: str) -> dict:
        """The ``run.json`` record of one run (a run ID, or a planner with one run)."""
        rid = self._one_run(run)
        return next(r for r in self.records_of("run") if r["run_id"] == rid)

    def group_records_of(self, run: str):
        """The raw group records (docs/FORMAT.md) of one run, in file order: a sequence
        that decodes them from the verified bytes on demand (``.decode(fields=...)``
        keeps only some fields). ``run`` is a run ID, or a planner name with one run.

        >>> recs = load("frozen_exports").group_records_of("lexicon")  # doctest: +SKIP
        >>> len(recs), sorted(recs.decode(fields=("status",))[0])  # doctest: +SKIP
        (2135, ['status'])
        """
        files = self.manifest["files"]
        rel = f"runs/{run}/groups.jsonl.gz"
        if files.get(rel, {}).get("record_type") != "group_record":
            rid = self._one_run(run)
            rel = f"runs/{rid}/groups.jsonl.gz"
            if files.get(rel, {}).get("record_type") != "group_record":
                raise UnknownName(f"run_id {rid!r}: no group records in the export; runs: "
                                  f"{sorted(self.runs.run_id)}")
        return self._records[rel]

    def task(self, task_id: str) -> dict:
        """The cohort's task record (contract, groups, tier, title)."""
        for t in self.records_of("task"):
            if t["task_id"] == task_id:
                return t
        raise UnknownName(f"task_id {task_id!r}: not in the cohort"
                          f"{_did_you_mean(task_id, self.tasks.task_id)}")

    def task_trace(self, run: str, task_id: str) -> dict:
        """Everything recorded for one task in one run: ``{"task": <cohort task>,
        "task_record": <the run's task record>, "group_records": [<raw group record>,
        ...]}`` with the groups in the task's order.

        >>> from analysis import load
        >>> export = load()
        >>> tid = export.tasks.task_id.iloc[0]
        >>> trace = export.task_trace("belief_search__planner__persistent", tid)
        >>> [g["group_id"] for g in trace["group_records"]] == trace["task"]["group_ids"]
        True
        """
        rid = self._one_run(run)
        task = self.task(task_id)
        rec = next((t for t in self.records_of("task_record")
                    if t["run_id"] == rid and t["task_id"] == task_id), None)
        if rec is None:
            raise UnknownName(f"task_id {task_id!r}: not in run {rid}'s suite")
        wanted = task["group_ids"]
        by_id = {g["group_id"]: g for g in self.group_records_of(rid)
                 if g["group_id"] in set(wanted)}
        return {"task": task, "task_record": rec,
                "group_records": [by_id[g] for g in wanted if g in by_id]}


#: The name docs/api.md gives the loader's form (``analysis.records.FrozenExport``, and
#: its former path ``analysis.frozen.FrozenExport``): the same class.
FrozenExport = Export


def _with_runs(df: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """``df`` with the run's planner, suite and memory inserted after ``run_id``."""
    out = df.copy()
    for i, col in enumerate(_RUN_COLS):
        out.insert(1 + i, col, out["run_id"].map(dict(zip(runs.run_id, runs[col]))))
    return out


def _task_groups(tasks: pd.DataFrame, groups: pd.DataFrame) -> pd.DataFrame:
    """One row per (task, group): ``task_id, group_id, position`` (the group's place in
    the task), the task's and the group's columns."""
    tg = tasks[["task_id", "episode_id", "scene_id", "tier", "title", "group_ids"]].copy()
    tg["position"] = tg.group_ids.map(lambda g: list(range(len(g))))
    tg = tg.explode(["group_ids", "position"], ignore_index=True)
    tg = tg.dropna(subset=["group_ids"]).rename(columns={"group_ids": "group_id"})
    tg["position"] = tg.position.astype(int)
    tg = tg.merge(groups.drop(columns=["episode_id"]), on="group_id", how="left")
    return tg[["task_id", "group_id", "position", "episode_id", "scene_id", "tier",
               "title", "group_index", "n_groups_in_episode", "instruction",
               "n_operations", "reference_action_types"]]


def _frame(cols: dict[str, list], columns: list[str]) -> pd.DataFrame:
    """A DataFrame from column lists (no per-row dicts: a tenth of the time and memory of
    building one dict per row for the 100k+ attempts)."""
    if not cols[columns[0]]:
        return pd.DataFrame([], columns=columns)  # object columns, as from no rows
    # one column at a time, each list dropped once converted: the lists and the arrays
    # of a 500k-row table are never all alive together
    df = pd.DataFrame({columns[0]: pd.Series(cols.pop(columns[0]))})
    for c in columns[1:]:
        df[c] = pd.Series(cols.pop(c))
    return df


def _columns(names: str) -> dict[str, list]:
    return {n: [] for n in names.split()}


def load(root: str | os.PathLike = "frozen_exports") -> Export:
    """Verify the export at ``root`` and return its tables.

    >>> export = load("frozen_exports")  # doctest: +SKIP
    >>> export.task_records.groupby("run_id").completed.mean()  # doctest: +SKIP
    """
    groups = _GroupColumns()
    # The group records (nine tenths of the export) go into the columns as each is
    # verified and are not kept: ``raw``/``records_of`` decode them again on demand.
    report, manifest, records = verify_records(root, stream={"group_record": groups.add})
    # The tables are built from the decoded records without the cyclic collector: it
    # would scan the verified objects again at every generation-2 collection, and
    # nothing built here forms a cycle.
    was = gc.isenabled()
    gc.disable()
    try:
        frames = _build(manifest, records, groups)
    finally:
        # promote what was built to the oldest generation without scanning it (as
        # verification does): re-enabling would otherwise start a full collection
        gc.freeze()
        gc.unfreeze()
        if was:
            gc.enable()
    frames["task_groups"] = _task_groups(frames["tasks"], frames["groups"])
    return Export(root=str(root), manifest=manifest, report=report, _records=records,
                  **frames)


class _GroupColumns:
    """The ``group_records`` and ``attempts`` columns, filled one verified group record at
    a time. Repeated strings (IDs, statuses, action types) are stored once: the decoder
    makes a new string for every occurrence, and the attempts table holds a hundred
    thousand rows of them."""

    GROUP = ("run_id episode_id group_id status n_attempts n_accepted n_repair_attempts "
             "attempted_types prompt_tokens completion_tokens query_attempts query_responses "
             "cross_group_hits repeated_region_queries anchor_delta_conflicts").split()
    ATTEMPT = "run_id episode_id group_id index source action_type status n_failed_checks".split()

    def __init__(self):
        self.g = {k: [] for k in self.GROUP}
        self.a = {k: [] for k in self.ATTEMPT}

    def add(self, g: dict) -> None:
        g_cols, a_cols = self.g, self.a
        (a_run, a_ep, a_group, a_index, a_source, a_type, a_status,
         a_failed) = a_cols.values()
        run_id, eid, gid = intern(g["run_id"]), intern(g["episode_id"]), intern(g["group_id"])
        atts = g["attempts"]
        n_acc = n_rep = 0
        types = set()
        for a in atts:
            status, source, action = intern(a["status"]), intern(a["source"]), a["action"]
            n_acc += status == "accepted"
            n_rep += source == "repair"
            a_run.append(run_id)
            a_ep.append(eid)
            a_group.append(gid)
            a_index.append(a["index"])
            a_source.append(source)
            a_status.append(status)
            a_failed.append(len(a["failed_checks"]))
            if action is not None:
                t = intern(action["type"])
                types.add(t)
                a_type.append(t)
            else:
                a_type.append(None)
        g_cols["run_id"].append(run_id)
        g_cols["episode_id"].append(eid)
        g_cols["group_id"].append(gid)
        g_cols["status"].append(intern(g["status"]))
        g_cols["n_attempts"].append(len(atts))
        g_cols["n_accepted"].append(n_acc)
        g_cols["n_repair_attempts"].append(n_rep)
        g_cols["attempted_types"].append(sorted(types))
        g_cols["prompt_tokens"].append(g["prompt_tokens"])
        g_cols["completion_tokens"].append(g["completion_tokens"])
        g_cols["query_attempts"].append(len(g["queries"]))
        g_cols["query_responses"].append(sum(q["responded"] for q in g["queries"]))
        belief = g["belief"]
        for k in ("cross_group_hits", "repeated_region_queries", "anchor_delta_conflicts"):
            g_cols[k].append(belief[k])


def _build(manifest: dict, records: dict, groups: _GroupColumns) -> dict[str, pd.DataFrame]:
    def of(rtype):
        return [r for rel, e in sorted(manifest["files"].items())
                if e["record_type"] == rtype for r in records[rel]]

    ep_cols = _columns("episode_id scene_id videos n_groups")
    g_cols = _columns("episode_id group_id group_index n_groups_in_episode instruction "
                      "n_operations reference_action_types")
    group_pos = {}
    scene_of = {}
    for ep in of("episode"):
        n = len(ep["groups"])
        eid = ep["episode_id"]
        scene_of[eid] = ep["scene_id"]
        ep_cols["episode_id"].append(eid)
        ep_cols["scene_id"].append(ep["scene_id"])
        ep_cols["videos"].append(list(ep["videos"]))
        ep_cols["n_groups"].append(n)
        for g in ep["groups"]:
            group_pos[g["group_id"]] = (g["index"], n)
            g_cols["episode_id"].append(eid)
            g_cols["group_id"].append(g["group_id"])
            g_cols["group_index"].append(g["index"])
            g_cols["n_groups_in_episode"].append(n)
            g_cols["instruction"].append(g["instruction"])
            g_cols["n_operations"].append(len(g["operations"]))
            g_cols["reference_action_types"].append(sorted({op["type"]
                                                            for op in g["operations"]}))

    t_cols = _columns("task_id episode_id scene_id tier title group_ids n_conditions "
                      "reference_action_types")
    c_cols = _columns("task_id condition_id kind")
    task_episode = {}
    for t in of("task"):
        tid, conds = t["task_id"], t["contract"]["conditions"]
        task_episode[tid] = t["episode_id"]
        t_cols["task_id"].append(tid)
        t_cols["episode_id"].append(t["episode_id"])
        t_cols["scene_id"].append(scene_of.get(t["episode_id"]))
        t_cols["tier"].append(t["tier"])
        t_cols["title"].append(t["title"])
        t_cols["group_ids"].append(list(t["group_ids"]))
        t_cols["n_conditions"].append(len(conds))
        t_cols["reference_action_types"].append(sorted(set(t["reference_action_types"])))
        for c in conds:
            c_cols["task_id"].append(tid)
            c_cols["condition_id"].append(c["id"])
            c_cols["kind"].append(c["kind"])
    s_cols = _columns("suite task_id episode_id")
    for s in of("suite"):
        for tid in s["task_ids"]:
            s_cols["suite"].append(s["suite"])
            s_cols["task_id"].append(tid)
            s_cols["episode_id"].append(task_episode[tid])

    run_keys = ("run_id", "planner", "memory", "suite", "seed", "attempt_limit")
    r_cols = {k: [] for k in (*run_keys, "run_name")}
    for r in of("run"):
        for k in run_keys:
            r_cols[k].append(r[k])
        # the run's name (docs/FORMAT.md): run_name where recorded, else the planner's
        r_cols["run_name"].append(r.get("run_name", r["planner"]))

    # position of each group in its episode (the verified records name only the group)
    gr_cols = dict(groups.g)
    pos = [group_pos[gid] for gid in gr_cols["group_id"]]
    gr_cols["group_index"] = [p[0] for p in pos]
    gr_cols["n_groups_in_episode"] = [p[1] for p in pos]
    a_cols = groups.a

    tr_cols = _columns("run_id task_id episode_id completed n_conditions n_true")
    cr_cols = _columns("run_id task_id condition_id truth")
    for t in of("task_record"):
        conds = t["conditions"]
        tr_cols["run_id"].append(t["run_id"])
        tr_cols["task_id"].append(t["task_id"])
        tr_cols["episode_id"].append(t["episode_id"])
        tr_cols["completed"].append(t["completed"])
        tr_cols["n_conditions"].append(len(conds))
        tr_cols["n_true"].append(sum(c["truth"] == "TRUE" for c in conds))
        for c in conds:
            cr_cols["run_id"].append(t["run_id"])
            cr_cols["task_id"].append(t["task_id"])
            cr_cols["condition_id"].append(c["id"])
            cr_cols["truth"].append(c["truth"])

    return dict(
        episodes=_frame(ep_cols, ["episode_id", "scene_id", "videos", "n_groups"]),
        groups=_frame(g_cols, ["episode_id", "group_id", "group_index", "n_groups_in_episode",
                               "instruction", "n_operations", "reference_action_types"]),
        tasks=_frame(t_cols, ["task_id", "episode_id", "scene_id", "tier", "title", "group_ids",
                              "n_conditions", "reference_action_types"]),
        suites=_frame(s_cols, ["suite", "task_id", "episode_id"]),
        conditions=_frame(c_cols, ["task_id", "condition_id", "kind"]),
        runs=_frame(r_cols, ["run_id", "planner", "memory", "suite", "seed", "attempt_limit",
                             "run_name"]),
        group_records=_frame(gr_cols, [
            "run_id", "episode_id", "group_id", "group_index", "n_groups_in_episode", "status",
            "n_attempts", "n_accepted", "n_repair_attempts", "attempted_types",
            "prompt_tokens", "completion_tokens", "query_attempts", "query_responses",
            "cross_group_hits", "repeated_region_queries", "anchor_delta_conflicts"]),
        attempts=_frame(a_cols, ["run_id", "episode_id", "group_id", "index", "source",
                                 "action_type", "status", "n_failed_checks"]),
        task_records=_frame(tr_cols, ["run_id", "task_id", "episode_id", "completed",
                                      "n_conditions", "n_true"]),
        condition_records=_frame(cr_cols, ["run_id", "task_id", "condition_id", "truth"]),
    )

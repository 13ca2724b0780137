"""Task-level metrics and task-macro summaries (docs/statistics.md, "Metrics").

``task_metrics(export)`` turns the loader DataFrames (docs/ARCHITECTURE.md section 7)
into one row per (run, task); ``macro(task_df)`` gives the task-macro means. Every
task of a run's suite stays in the denominator: a run that did not complete a task
scores GCR 0 and success 0 there (the failure policy).

Conventions chosen where the spec is silent:

* ``n_attempts`` in ``group_records`` counts planner *and* repair attempts (a group
  record's ``attempts`` list holds both); ``n_repair_attempts`` is the repair subset.
* Group order inside a task is ``group_index`` (else the order of ``group_ids``).
* A task with no reference action types has ``reference_coverage`` NaN (left out of
  that macro mean, counted in ``n_no_reference``).
* Tier-specific columns ``success_terminal``, ``gcr_terminal``, ``gcr_event`` are the
  value for tasks of that tier and NaN otherwise, so that the statistics (which count
  only non-missing values) give Strict-TSR and GCR by tier directly.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

ENDPOINTS = (
    "parse_failure",
    "empty_plan",
    "execution_blocked",
    "completed_none",
    "completed_partial",
    "completed_all",
)
RESOURCE_COLS = (
    "n_attempts",
    "n_accepted",
    "n_repair_attempts",
    "prompt_tokens",
    "completion_tokens",
    "query_attempts",
    "query_responses",
    "cross_group_hits",
    "repeated_region_queries",
    "anchor_delta_conflicts",
)
TASK_COLUMNS = (
    "run_id", "planner", "memory", "suite", "task_id", "episode_id", "scene_id", "tier",
    "completed", "success", "gcr", "action_validity", "reference_coverage", "endpoint",
    *RESOURCE_COLS, "no_attempts", "n_conditions", "n_true",
    "success_terminal", "gcr_terminal", "gcr_event",
)
MACRO_COLUMNS = (
    "n_tasks", "operational_tsr", "strict_tsr", "n_terminal", "gcr", "gcr_terminal",
    "gcr_event", "action_validity", "completed_rate", "reference_coverage",
    "n_no_attempts", "n_no_reference",
)


def _need(df, name, cols, owner="export."):
    """``owner``: how the message names the frame (an export's table, or an argument)."""
    if df is None:
        raise ValueError(f"{owner}{name} is missing")
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"{owner}{name}: expected a pandas DataFrame, got {type(df).__name__}")
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ValueError(f"{owner}{name} lacks column(s) {missing}")


def _as_list(x):
    if x is None or (isinstance(x, float) and np.isnan(x)):
        return []
    return list(x)


def _match_contract(cr: pd.DataFrame, contract: pd.DataFrame, run_tasks: pd.DataFrame) -> pd.DataFrame:
    """Condition records of the suite tasks, matched to the frozen contract by ID.

    Every contract condition of every (run, task) must have exactly one truth and no
    truth may name a condition outside the contract: a duplicated TRUE or a foreign
    TRUE would otherwise count towards success and GCR.
    """
    key = ["run_id", "task_id", "condition_id"]
    cr = cr.merge(run_tasks, on=["run_id", "task_id"], how="inner")
    dup = cr[cr.duplicated(key, keep=False)]
    if len(dup):
        r = dup.iloc[0]
        k = int(((cr.run_id == r.run_id) & (cr.task_id == r.task_id)
                 & (cr.condition_id == r.condition_id)).sum())
        raise ValueError(f"condition_records: run {r.run_id!r} task {r.task_id!r} has condition "
                         f"{r.condition_id!r} {k} times; each contract condition needs exactly one truth")
    pairs = contract[["task_id", "condition_id"]].drop_duplicates()
    m = cr.merge(pairs, on=["task_id", "condition_id"], how="left", indicator=True)
    extra = m[m["_merge"] == "left_only"]
    if len(extra):
        r = extra.iloc[0]
        valid = sorted(map(str, pairs.loc[pairs.task_id == r.task_id, "condition_id"]))
        raise ValueError(f"condition_records: run {r.run_id!r} task {r.task_id!r} has condition "
                         f"{r.condition_id!r}, which is not in the frozen contract (valid: {valid})")
    want = run_tasks.merge(pairs, on="task_id", how="inner")
    m = want.merge(cr[key], on=key, how="left", indicator=True)
    miss = m[m["_merge"] == "left_only"]
    if len(miss):
        r = miss.iloc[0]
        raise ValueError(f"condition_records: run {r.run_id!r} task {r.task_id!r} has no truth for "
                         f"contract condition {r.condition_id!r} ({len(miss)} missing in all)")
    return cr


def _limited_tasks(export) -> dict:
    """``{run_id: task IDs it covers}`` for the limited runs (``episode_limit``,
    :mod:`analysis.records.limited`) of an export that keeps its records; ``{}`` otherwise."""
    records_of = getattr(export, "records_of", None)
    if records_of is None:
        return {}
    runs = [r for r in records_of("run") if r.get("episode_limit") is not None]
    if not runs:
        return {}
    from .records.limited import limited_suite
    suites = {s["suite"]: s for s in records_of("suite")}
    tasks = {t["task_id"]: t for t in records_of("task")}
    return {r["run_id"]: set(limited_suite(suites[r["suite"]], r["episode_limit"], tasks)["task_ids"])
            for r in runs}


def task_metrics(export) -> pd.DataFrame:
    """One row per (run, task) with the metrics of docs/statistics.md ("Metrics").

    ``export`` is any object with the DataFrame attributes ``runs``, ``tasks``,
    ``suites``, ``group_records`` and ``condition_records`` (``task_records`` is
    used as a fallback for truth counts). With ``export.conditions`` (the frozen
    contracts, as the loader gives them) every truth is matched to its contract
    condition by ID: each exactly once and none extra, else a ``ValueError`` naming the
    run, task and condition. Columns: see ``TASK_COLUMNS``. A task with no attempt
    has ``action_validity`` 0 and ``no_attempts`` True (counted in
    :func:`macro`'s ``n_no_attempts``, which the tables show).

    Example
    -------
    >>> import pandas as pd, types
    >>> ex = types.SimpleNamespace(
    ...   runs=pd.DataFrame({"run_id": ["r"], "planner": ["p"], "memory": ["persistent"], "suite": ["s"]}),
    ...   suites=pd.DataFrame({"suite": ["s"], "task_id": ["t"], "episode_id": ["e"]}),
    ...   tasks=pd.DataFrame({"task_id": ["t"], "episode_id": ["e"], "scene_id": ["P01"], "tier": ["terminal"],
    ...                       "group_ids": [["g1"]], "n_conditions": [2], "reference_action_types": [["pour"]]}),
    ...   group_records=pd.DataFrame({"run_id": ["r"], "episode_id": ["e"], "group_id": ["g1"], "group_index": [0],
    ...       "status": ["completed"], "n_attempts": [4], "n_accepted": [3], "n_repair_attempts": [1],
    ...       "attempted_types": [["pour", "stir"]], "prompt_tokens": [10], "completion_tokens": [5],
    ...       "query_attempts": [1], "query_responses": [1], "cross_group_hits": [0],
    ...       "repeated_region_queries": [0], "anchor_delta_conflicts": [0]}),
    ...   condition_records=pd.DataFrame({"run_id": ["r", "r"], "task_id": ["t", "t"],
    ...       "condition_id": ["c1", "c2"], "truth": ["TRUE", "UNKNOWN"]}))
    >>> row = task_metrics(ex).iloc[0]
    >>> float(row.gcr), bool(row.success), float(row.action_validity), row.endpoint
    (0.5, False, 0.75, 'completed_partial')
    """
    runs, tasks, suites, gr = _checked_frames(export)
    rt = _run_tasks(export, runs, suites, tasks)
    out = rt.merge(_group_outcomes(rt, gr).reset_index(), on=["run_id", "task_id"], how="left",
                   validate="one_to_one")
    out = _with_truth_counts(export, out, rt)
    return _scored(out)


def _checked_frames(export):
    """Stage 1: the export's four frames, refused (one line naming the frame, column or
    value) when a frame, a column or an allowed value is missing."""
    missing = [a for a in ("runs", "tasks", "suites", "group_records") if not hasattr(export, a)]
    if missing:
        raise TypeError(f"export={type(export).__name__}: expected an export (analysis.load()) "
                        f"or an object with the DataFrames runs, tasks, suites, group_records "
                        f"and condition_records; it has no {missing[0]}")
    runs, tasks, suites = export.runs, export.tasks, export.suites
    gr = export.group_records
    _need(runs, "runs", ["run_id", "planner", "memory", "suite"])
    _need(tasks, "tasks", ["task_id", "episode_id", "tier", "group_ids", "n_conditions",
                           "reference_action_types"])
    _need(suites, "suites", ["suite", "task_id"])
    _need(gr, "group_records", ["run_id", "group_id", "status", "attempted_types", *RESOURCE_COLS])
    bad = set(tasks["tier"]) - {"terminal", "event"}
    if bad:
        raise ValueError(f"tasks.tier has {sorted(bad)}; allowed: ['event', 'terminal']")
    bad = set(gr["status"]) - {"completed", "execution_blocked", "parse_failure", "empty_plan"}
    if bad:
        raise ValueError(f"group_records.status has {sorted(bad)}; allowed: "
                         "['completed', 'empty_plan', 'execution_blocked', 'parse_failure']")
    if (tasks["n_conditions"] <= 0).any():
        raise ValueError("tasks.n_conditions must be >= 1 for every task (a contract has conditions)")
    return runs, tasks, suites, gr


def _run_tasks(export, runs, suites, tasks) -> pd.DataFrame:
    """Stage 2: the (run, task) pairs, every task of the run's suite (only the tasks of
    its first N episodes for a limited run), with the task's episode, tier, groups,
    condition count and reference types."""
    rt = runs[["run_id", "planner", "memory", "suite"]].merge(
        suites[["suite", "task_id"]], on="suite", how="left", validate="many_to_many")
    if rt["task_id"].isna().any():
        missing = sorted(rt.loc[rt.task_id.isna(), "suite"].unique())
        raise ValueError(f"runs.suite {missing} not found in export.suites")
    limited = _limited_tasks(export)
    if limited:  # a run of run limit=N covers only the tasks of its first N episodes
        rt = rt[[tid in limited[rid] if rid in limited else True
                 for rid, tid in zip(rt["run_id"], rt["task_id"])]].reset_index(drop=True)
    tcols = ["task_id", "episode_id", "tier", "group_ids", "n_conditions", "reference_action_types"]
    if "scene_id" in tasks.columns:
        tcols.append("scene_id")
    rt = rt.merge(tasks[tcols], on="task_id", how="left", validate="many_to_one")
    if rt["tier"].isna().any():
        raise ValueError(f"suites name task(s) missing from export.tasks: "
                         f"{sorted(rt.loc[rt.tier.isna(), 'task_id'].unique())[:5]}")
    if "scene_id" not in rt.columns:
        rt["scene_id"] = None
    return rt


def _group_outcomes(rt: pd.DataFrame, gr: pd.DataFrame) -> pd.DataFrame:
    """Stage 3: per (run, task), its groups' resource sums, whether every group
    completed, the first non-completed status (in group order) and the set of action
    types attempted; indexed by (run_id, task_id)."""
    # explode to (run, task, group) and join the group records
    tg = rt[["run_id", "task_id", "group_ids"]].copy()
    tg["group_ids"] = tg["group_ids"].map(_as_list)
    tg["pos"] = tg["group_ids"].map(lambda g: list(range(len(g))))
    tg = tg.explode(["group_ids", "pos"]).rename(columns={"group_ids": "group_id"})
    gcols = ["run_id", "group_id", "status", "attempted_types", *RESOURCE_COLS]
    if "group_index" in gr.columns:
        gcols.append("group_index")
    tg = tg.merge(gr[gcols], on=["run_id", "group_id"], how="left", validate="many_to_one")
    if tg["status"].isna().any():
        miss = tg.loc[tg.status.isna(), ["run_id", "group_id"]].head(3).to_dict("records")
        raise ValueError(f"group_records lack groups of suite tasks, e.g. {miss}")
    order = "group_index" if "group_index" in tg.columns else "pos"
    tg = tg.sort_values(["run_id", "task_id", order], kind="stable")

    key = ["run_id", "task_id"]
    g = tg.groupby(key, sort=False)
    res = g[list(RESOURCE_COLS)].sum()
    tg["_nc"] = tg["status"] != "completed"
    res["completed"] = ~g["_nc"].any()
    first_bad = tg[tg["_nc"]].groupby(key, sort=False)["status"].first()
    res["first_bad"] = first_bad.reindex(res.index)
    res["types_attempted"] = g["attempted_types"].agg(
        lambda s: set().union(*[set(_as_list(x)) for x in s]))
    return res


def _with_truth_counts(export, out: pd.DataFrame, rt: pd.DataFrame) -> pd.DataFrame:
    """Stage 4: ``n_true`` per (run, task) from the condition records (matched to the
    frozen contract when the export has it), else from ``task_records``."""
    key = ["run_id", "task_id"]
    cr = getattr(export, "condition_records", None)
    if cr is not None and len(cr):
        _need(cr, "condition_records", ["run_id", "task_id", "truth"])
        bad = set(cr["truth"]) - {"TRUE", "FALSE", "UNKNOWN"}
        if bad:
            raise ValueError(f"condition_records.truth has {sorted(bad)}; allowed: ['FALSE', 'TRUE', 'UNKNOWN']")
        _need(cr, "condition_records", ["run_id", "task_id", "condition_id", "truth"])
        contract = getattr(export, "conditions", None)
        if contract is not None:
            _need(contract, "conditions", ["task_id", "condition_id"])
            cr = _match_contract(cr, contract, rt[key])
        n_true = (cr["truth"] == "TRUE").groupby([cr["run_id"], cr["task_id"]]).sum().rename("n_true")
        out = out.merge(n_true.reset_index(), on=key, how="left")
    else:
        trc = getattr(export, "task_records", None)
        _need(trc, "task_records", ["run_id", "task_id", "n_true"])
        out = out.merge(trc[["run_id", "task_id", "n_true"]], on=key, how="left")
    out["n_true"] = out["n_true"].fillna(0).astype(int)
    if (out["n_true"] > out["n_conditions"]).any():
        raise ValueError("condition_records have more TRUE conditions than tasks.n_conditions")
    return out


def _scored(out: pd.DataFrame) -> pd.DataFrame:
    """Stage 5: the metrics of docs/statistics.md from the per-task counts (failure
    policy: GCR 0 unless completed), the endpoint and the tier columns; ``TASK_COLUMNS``
    in order."""
    completed = out["completed"].astype(bool)
    allmet = out["n_true"] == out["n_conditions"]
    out["completed"] = completed
    out["success"] = completed & allmet
    out["gcr"] = np.where(completed, out["n_true"] / out["n_conditions"], 0.0)
    n_att = out["n_attempts"].astype(int)
    out["no_attempts"] = n_att == 0
    out["action_validity"] = np.where(n_att > 0, out["n_accepted"] / n_att.where(n_att > 0, 1), 0.0)

    def cov(row):
        ref = set(_as_list(row.reference_action_types))
        if not ref:
            return np.nan
        return len(ref & row.types_attempted) / len(ref)

    out["reference_coverage"] = [cov(r) for r in out.itertuples()]
    out["endpoint"] = np.select(
        [~completed, out["n_true"] == 0, ~allmet],
        [out["first_bad"].astype(object), "completed_none", "completed_partial"],
        "completed_all",
    )
    term = out["tier"] == "terminal"
    out["success_terminal"] = np.where(term, out["success"].astype(float), np.nan)
    out["gcr_terminal"] = np.where(term, out["gcr"], np.nan)
    out["gcr_event"] = np.where(~term, out["gcr"], np.nan)
    for c in RESOURCE_COLS:
        out[c] = out[c].astype(np.int64)
    return out[list(TASK_COLUMNS)].reset_index(drop=True)


def macro(task_df: pd.DataFrame, by=("planner", "memory", "suite")) -> pd.DataFrame:
    """Task-macro summaries per group of ``by`` (point estimates; intervals come
    from :func:`analysis.stats.cluster_bootstrap` on the same columns).

    Operational-TSR = mean success over all tasks; Strict-TSR = mean success over
    terminal tasks; GCR overall and by tier; action validity, completed-run rate,
    reference coverage as means over all tasks (fixed denominators).

    Example
    -------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"planner": ["p"] * 4, "tier": ["terminal"] * 3 + ["event"],
    ...     "success": [True, False, False, False], "gcr": [1, .5, 0, .25],
    ...     "action_validity": [.5, .5, 1, 0], "completed": [True, True, False, True],
    ...     "reference_coverage": [1, 1, .5, .5], "no_attempts": [False] * 4})
    >>> m = macro(df, by=("planner",)).iloc[0]
    >>> float(m.operational_tsr), round(float(m.strict_tsr), 4), float(m.gcr_event), float(m.completed_rate)
    (0.25, 0.3333, 0.25, 0.75)
    """
    by = [by] if isinstance(by, str) else list(by)
    need = ["tier", "success", "gcr", "action_validity", "completed", "reference_coverage", *by]
    _need(task_df, "task_df", need, owner="argument ")

    def f(d):
        term = d["tier"] == "terminal"
        return pd.Series({
            "n_tasks": len(d),
            "operational_tsr": d["success"].astype(float).mean(),
            "strict_tsr": d.loc[term, "success"].astype(float).mean() if term.any() else np.nan,
            "n_terminal": int(term.sum()),
            "gcr": d["gcr"].mean(),
            "gcr_terminal": d.loc[term, "gcr"].mean() if term.any() else np.nan,
            "gcr_event": d.loc[~term, "gcr"].mean() if (~term).any() else np.nan,
            "action_validity": d["action_validity"].mean(),
            "completed_rate": d["completed"].astype(float).mean(),
            "reference_coverage": d["reference_coverage"].mean(),
            "n_no_attempts": int(d["no_attempts"].sum()) if "no_attempts" in d else 0,
            "n_no_reference": int(d["reference_coverage"].isna().sum()),
        })

    if by:
        out = task_df.groupby(by, sort=True, dropna=False)[task_df.columns.tolist()].apply(f)
        out = out.reset_index()
    else:
        out = f(task_df).to_frame().T
    for c in ("n_tasks", "n_terminal", "n_no_attempts", "n_no_reference"):
        out[c] = out[c].astype(int)
    return out

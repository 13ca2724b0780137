"""Memory-study statistics (persistent vs reset belief on the memory suite).

Reads one planner's two memory-suite runs and returns everything Tables 8-11 and
Figure 10 show, from :mod:`analysis.stats`: ``cluster_bootstrap`` (per-condition means),
``paired_conditions`` (paired differences, relative changes, 2x2 table, exact McNemar and
cluster sign-flip tests) and ``quarter_profiles`` (per-quarter rates).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from ..stats import cluster_bootstrap, paired_conditions, quarter_profiles

__all__ = ["MemoryStudy", "memory_study"]

CONDITIONS = ("persistent", "reset")
STUDY_METRICS = (("action_validity", "Action validity"), ("success", "Operational-TSR"),
                 ("completed", "Completed-run rate"), ("gcr", "GCR"),
                 ("query_attempts", "Query attempts per task"),
                 ("query_responses", "Query responses per task"),
                 ("tokens", "Tokens per task"))
PROFILE_METRICS = (("query_attempts", "Query attempts per group"),
                   ("tokens", "Tokens per group"),
                   ("n_accepted", "Accepted attempts per group"),
                   ("n_attempts", "Attempts per group"))
COUNTERS = ("cross_group_hits", "repeated_region_queries", "anchor_delta_conflicts")


@dataclass
class MemoryStudy:
    planner: str
    run_ids: dict            # condition -> run_id
    n_tasks: int
    successes: dict          # condition -> successful tasks
    by_condition: object     # ClusterBootstrapResult by memory (STUDY_METRICS)
    paired: object           # PairedConditionsResult (a = persistent, b = reset)
    profiles: object         # QuarterProfileResult (PROFILE_METRICS)
    counters: pd.DataFrame   # totals per condition
    counter_rates: object    # ClusterBootstrapResult by memory (per group)
    notes: list = field(default_factory=list)


def _boot(cfg, df, cols, by):
    return cluster_bootstrap(df, cols, cluster_col="episode_id", by=by,
                             n_resamples=cfg.n_resamples, method=cfg.method,
                             confidence_level=cfg.confidence_level, seed=cfg.seed,
                             too_few="not_estimable")


def memory_study(export, tm: pd.DataFrame, planner: str, cfg) -> MemoryStudy:
    # ``planner``: the runs' name (a planner's name unless the runs were named apart)
    names = tm.run_name if "run_name" in tm.columns else tm.planner
    rows = tm[(tm.suite == "memory") & (names == planner)].copy()
    rows["tokens"] = rows.prompt_tokens + rows.completion_tokens
    run_ids = {c: rows.loc[rows.memory == c, "run_id"].iloc[0] for c in CONDITIONS}
    cols = [c for c, _ in STUDY_METRICS]
    for c in cols:
        rows[c] = rows[c].astype(float)
    by_condition = _boot(cfg, rows, cols, ["memory"])

    paired = paired_conditions(rows, "memory", "persistent", "reset", outcome_col="success",
                               value_cols=[c for c in cols if c != "success"],
                               n_resamples=cfg.n_resamples,
                               confidence_level=cfg.confidence_level, seed=cfg.seed)
    successes = rows.groupby("memory").success.sum().astype(int).to_dict()

    gr = export.group_records
    gr = gr[gr.run_id.isin(run_ids.values())].copy()
    gr["memory"] = gr.run_id.map({v: k for k, v in run_ids.items()})
    gr["tokens"] = gr.prompt_tokens + gr.completion_tokens
    pcols = [c for c, _ in PROFILE_METRICS]
    for c in pcols + list(COUNTERS):
        gr[c] = gr[c].astype(float)
    profiles = quarter_profiles(gr, pcols, "memory", n_resamples=cfg.n_resamples,
                                method=cfg.method, confidence_level=cfg.confidence_level,
                                seed=cfg.seed, too_few="not_estimable")
    counters = gr.groupby("memory")[list(COUNTERS)].sum().astype(int).reset_index()
    counters["groups"] = gr.groupby("memory").size().to_numpy()
    counter_rates = _boot(cfg, gr, list(COUNTERS), ["memory"])
    return MemoryStudy(planner=planner, run_ids=run_ids, n_tasks=int(len(rows) // 2),
                       successes=successes, by_condition=by_condition, paired=paired,
                       profiles=profiles, counters=counters, counter_rates=counter_rates)

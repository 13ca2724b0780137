"""Memory-study statistics (persistent vs reset belief on the memory suite).

Reads one planner's two memory-suite runs and returns everything Tables 8-11 and
Figure 10 show. Intervals come from :mod:`analysis.stats`; the paired tests use
``analysis.stats.paired_conditions`` / ``quarter_profiles`` when they are available and
otherwise the equivalent computations below (exact McNemar through
``scipy.stats.binomtest``, the exact cluster sign-flip by enumerating the 2^G sign
patterns of the episodes with discordant tasks).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats as sps

from ..stats import cluster_bootstrap

__all__ = ["MemoryStudy", "memory_study", "sign_flip_exact", "quarter_of"]

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
    run_ids: dict                      # condition -> run_id
    paired: pd.DataFrame               # one row per task, *_persistent / *_reset columns
    by_condition: object               # ClusterBootstrapResult by memory
    differences: object                # ClusterBootstrapResult of persistent - reset
    relative: pd.DataFrame             # relative change of query attempts and tokens
    two_by_two: dict                   # both / only_persistent / only_reset / neither
    discordance: pd.DataFrame          # per episode
    mcnemar_p: float
    sign_flip_p: float
    sign_flip_patterns: int
    profiles: object                   # ClusterBootstrapResult by (memory, quarter)
    profile_groups: pd.DataFrame       # groups per (memory, quarter)
    counters: pd.DataFrame             # totals per condition
    counter_rates: object              # ClusterBootstrapResult by memory (per group)
    notes: list = field(default_factory=list)


def quarter_of(index, n) -> np.ndarray:
    """Episode quarter (1-4) of group ``index`` among ``n``: floor(4 * index / n) + 1."""
    index, n = np.asarray(index), np.asarray(n)
    return np.minimum(4 * index // np.maximum(n, 1), 3) + 1


def sign_flip_exact(d) -> tuple[float, int]:
    """Two-sided exact cluster sign-flip p-value of ``sum(d)`` and the number of patterns.

    ``d`` holds one paired difference per episode (here: tasks successful only under
    persistent minus only under reset). Under H0 each episode's sign is exchangeable;
    episodes with ``d == 0`` do not change the statistic, so the 2^G' patterns of the
    G' non-zero episodes are enumerated.
    """
    d = np.asarray([x for x in d if x != 0], dtype=float)
    if d.size == 0:
        return 1.0, 1
    obs = abs(d.sum())
    signs = np.array(list(itertools.product((1.0, -1.0), repeat=d.size)))
    tot = np.abs(signs @ d)
    return float(np.mean(tot >= obs - 1e-9)), int(signs.shape[0])


def _boot(cfg, df, cols, by):
    return cluster_bootstrap(df, cols, cluster_col="episode_id", by=by,
                             n_resamples=cfg.n_resamples, method=cfg.method,
                             confidence_level=cfg.confidence_level, seed=cfg.seed)


def memory_study(export, tm: pd.DataFrame, planner: str, cfg) -> MemoryStudy:
    rows = tm[(tm.suite == "memory") & (tm.planner == planner)].copy()
    rows["tokens"] = rows.prompt_tokens + rows.completion_tokens
    run_ids = {c: rows.loc[rows.memory == c, "run_id"].iloc[0] for c in CONDITIONS}
    cols = [c for c, _ in STUDY_METRICS]
    for c in cols:
        rows[c] = rows[c].astype(float)
    by_condition = _boot(cfg, rows, cols, ["memory"])

    wide = rows.pivot(index="task_id", columns="memory", values=cols)
    paired = pd.DataFrame({"task_id": wide.index})
    ep = rows.drop_duplicates("task_id").set_index("task_id").episode_id
    paired["episode_id"] = ep.loc[wide.index].to_numpy()
    for c in cols:
        for m in CONDITIONS:
            paired[f"{c}_{m}"] = wide[(c, m)].to_numpy()
        paired[c] = paired[f"{c}_persistent"] - paired[f"{c}_reset"]
    differences = _boot(cfg, paired, cols, [])

    rel = []
    for c in ("query_attempts", "tokens"):
        p, r = paired[f"{c}_persistent"].sum(), paired[f"{c}_reset"].sum()
        rel.append({"metric": c, "total_persistent": p, "total_reset": r,
                    "relative_change": (p - r) / r if r else np.nan})
    relative = pd.DataFrame(rel)

    sp, sr = paired.success_persistent == 1, paired.success_reset == 1
    two = {"both": int((sp & sr).sum()), "only_persistent": int((sp & ~sr).sum()),
           "only_reset": int((~sp & sr).sum()), "neither": int((~sp & ~sr).sum())}
    paired["_op"], paired["_or"] = (sp & ~sr).astype(int), (~sp & sr).astype(int)
    disc = paired.groupby("episode_id", sort=True).agg(
        tasks=("task_id", "size"), only_persistent=("_op", "sum"),
        only_reset=("_or", "sum")).reset_index()
    paired = paired.drop(columns=["_op", "_or"])
    b, c = two["only_persistent"], two["only_reset"]
    mcnemar = float(sps.binomtest(b, b + c, 0.5).pvalue) if b + c else 1.0
    sf, patterns = sign_flip_exact((disc.only_persistent - disc.only_reset).tolist())

    gr = export.group_records
    gr = gr[gr.run_id.isin(run_ids.values())].copy()
    gr["memory"] = gr.run_id.map({v: k for k, v in run_ids.items()})
    gr["quarter"] = quarter_of(gr.group_index, gr.n_groups_in_episode)
    gr["tokens"] = gr.prompt_tokens + gr.completion_tokens
    pcols = [c for c, _ in PROFILE_METRICS]
    for c in pcols + list(COUNTERS):
        gr[c] = gr[c].astype(float)
    profiles = _boot(cfg, gr, pcols, ["memory", "quarter"])
    profile_groups = gr.groupby(["memory", "quarter"]).size().rename("groups").reset_index()
    counters = gr.groupby("memory")[list(COUNTERS)].sum().astype(int).reset_index()
    counters["groups"] = gr.groupby("memory").size().to_numpy()
    counter_rates = _boot(cfg, gr, list(COUNTERS), ["memory"])
    return MemoryStudy(planner=planner, run_ids=run_ids, paired=paired,
                       by_condition=by_condition, differences=differences, relative=relative,
                       two_by_two=two, discordance=disc, mcnemar_p=mcnemar,
                       sign_flip_p=sf, sign_flip_patterns=patterns, profiles=profiles,
                       profile_groups=profile_groups, counters=counters,
                       counter_rates=counter_rates)

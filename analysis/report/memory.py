"""Tables 8-11 and Figure 10: the memory study (paper 6.4, Table 18, Figure 3, C.6, E.6).

Each builder covers every planner of the export that has both a persistent and a reset
run on the memory suite (usually one).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .common import LINESTYLES, MARKERS, Skip, ci, estimand_note, new_figure, pct_ci
from .memory_stats import COUNTERS, PROFILE_METRICS, STUDY_METRICS
from .output import FigureOutput, Table

__all__ = ["memory_study_table", "paired_outcomes", "quarter_profiles_table",
           "quarter_profiles_figure", "memory_counters"]

_PCT = {"action_validity", "success", "completed", "gcr"}


def _studies(results):
    if results is None or not results.memory:
        raise Skip(results.skipped.get("memory", "no memory-suite runs") if results
                   else "no statistics results")
    return [results.memory[p] for p in sorted(results.memory)]


def _fmt(metric, est, low, high):
    if metric in _PCT:
        return pct_ci(est, low, high)
    return ci(est, low, high, 1)


def memory_study_table(export, results) -> Table:
    """Per condition: validity, success, completion, GCR, queries and tokens with
    intervals; paired differences (persistent - reset) with intervals; relative change."""
    cfg = results.config
    data, disp = [], []
    for s in _studies(results):
        bc = s.by_condition.table.set_index(["memory", "metric"])
        df = s.differences.table.set_index("metric")
        rel = s.relative.set_index("metric")
        n_tasks = len(s.paired)
        for m, label in STUDY_METRICS:
            p, r, d = bc.loc[("persistent", m)], bc.loc[("reset", m)], df.loc[m]
            unit = " (%)" if m in _PCT else ""
            row = {"planner": s.planner, "metric": label + unit,
                   "persistent": _fmt(m, p.estimate, p.low, p.high),
                   "reset": _fmt(m, r.estimate, r.low, r.high),
                   "paired difference": (pct_ci(d.estimate, d.low, d.high).replace("[", "pp [", 1)
                                         if m in _PCT else ci(d.estimate, d.low, d.high, 1)),
                   "relative change": (f"{100 * rel.loc[m, 'relative_change']:+.2f}%"
                                       if m in rel.index else "")}
            disp.append(row)
            for cond, b in (("persistent", p), ("reset", r), ("difference", d)):
                data.append({"planner": s.planner, "metric": m, "condition": cond,
                             "estimate": b.estimate, "low": b.low, "high": b.high,
                             "n_records": int(b.n_records), "n_clusters": int(b.n_clusters)})
        succ = s.paired[["success_persistent", "success_reset"]].sum()
        disp.append({"planner": s.planner, "metric": "Successes (tasks)",
                     "persistent": f"{int(succ.success_persistent)}/{n_tasks}",
                     "reset": f"{int(succ.success_reset)}/{n_tasks}",
                     "paired difference": f"{int(succ.success_persistent - succ.success_reset):+d}",
                     "relative change": ""})
        for m in ("query_attempts", "tokens"):
            data.append({"planner": s.planner, "metric": m, "condition": "relative_change",
                         "estimate": rel.loc[m, "relative_change"], "low": np.nan,
                         "high": np.nan, "n_records": n_tasks, "n_clusters": np.nan})
    return Table(
        name="table08_memory_study", title="Memory study: persistent vs reset belief",
        paper_ref="paper 6.4", data=pd.DataFrame(data), display=pd.DataFrame(disp),
        notes=("Memory suite, the same tasks under both conditions; world state carries over "
               "in both, belief is cleared at every group boundary under reset. Paired "
               "differences are task-macro means of per-task differences (persistent minus "
               "reset) with their interval. Relative change is the ratio of totals over all "
               "tasks, a descriptive point value (no interval). " + cfg.describe() + " "
               + estimand_note()))


def paired_outcomes(export, results) -> Table:
    """2x2 table of task successes, per-episode discordance and the two exact tests."""
    data, disp = [], []
    for s in _studies(results):
        two = s.two_by_two
        for k, v in two.items():
            data.append({"planner": s.planner, "section": "2x2", "key": k, "tasks": v,
                         "only_persistent": pd.NA, "only_reset": pd.NA, "p_value": np.nan})
        disp += [{"planner": s.planner, "row": "success in both", "value": str(two["both"])},
                 {"planner": s.planner, "row": "success only with persistent belief",
                  "value": str(two["only_persistent"])},
                 {"planner": s.planner, "row": "success only with reset belief",
                  "value": str(two["only_reset"])},
                 {"planner": s.planner, "row": "success in neither", "value": str(two["neither"])}]
        for r in s.discordance.itertuples():
            data.append({"planner": s.planner, "section": "episode", "key": r.episode_id,
                         "tasks": int(r.tasks), "only_persistent": int(r.only_persistent),
                         "only_reset": int(r.only_reset), "p_value": np.nan})
            if r.only_persistent or r.only_reset:
                disp.append({"planner": s.planner, "row": f"episode {r.episode_id}",
                             "value": f"{int(r.tasks)} tasks; only persistent "
                                      f"{int(r.only_persistent)}, only reset {int(r.only_reset)}"})
        n_quiet = int(((s.discordance.only_persistent == 0) & (s.discordance.only_reset == 0)).sum())
        disp.append({"planner": s.planner, "row": "episodes without discordant tasks",
                     "value": str(n_quiet)})
        data.append({"planner": s.planner, "section": "test", "key": "mcnemar_exact",
                     "tasks": two["only_persistent"] + two["only_reset"],
                     "only_persistent": two["only_persistent"], "only_reset": two["only_reset"],
                     "p_value": s.mcnemar_p})
        data.append({"planner": s.planner, "section": "test", "key": "cluster_sign_flip_exact",
                     "tasks": s.sign_flip_patterns, "only_persistent": two["only_persistent"],
                     "only_reset": two["only_reset"], "p_value": s.sign_flip_p})
        disp.append({"planner": s.planner,
                     "row": "exact McNemar (assumes independent tasks)",
                     "value": f"p = {s.mcnemar_p:.3f}"})
        disp.append({"planner": s.planner,
                     "row": "exact cluster sign-flip (episodes exchangeable)",
                     "value": f"p = {s.sign_flip_p:.3f} ({s.sign_flip_patterns} sign patterns)"})
    return Table(
        name="table09_paired_outcomes", title="Paired task outcomes (memory study)",
        paper_ref="paper Table 18 and E.2", data=pd.DataFrame(data), display=pd.DataFrame(disp),
        notes=("Counts of task successes under both belief conditions on the same tasks. The "
               "exact McNemar test (two-sided binomial test on the discordant tasks) treats "
               "tasks as independent, which tasks nested in episodes are not; the exact "
               "cluster sign-flip test enumerates every sign pattern of the per-episode "
               "discordance differences (only persistent minus only reset), so it respects "
               "the episode clustering. Neither resamples; no seed is involved."))


def _profile_rows(results):
    rows = []
    for s in _studies(results):
        t = s.profiles.table
        g = s.profile_groups.set_index(["memory", "quarter"]).groups
        for r in t.itertuples():
            rows.append({"planner": s.planner, "memory": r.memory, "quarter": int(r.quarter),
                         "metric": r.metric, "estimate": r.estimate, "low": r.low,
                         "high": r.high, "groups": int(g.loc[(r.memory, r.quarter)]),
                         "n_clusters": int(r.n_clusters)})
    return pd.DataFrame(rows)


def quarter_profiles_table(export, results) -> Table:
    """Per episode quarter and condition: per-group resource rates with pointwise
    episode-cluster intervals."""
    cfg = results.config
    data = _profile_rows(results)
    labels = dict(PROFILE_METRICS)
    disp = []
    for (p, mem, q), part in data.groupby(["planner", "memory", "quarter"], sort=True):
        part = part.set_index("metric")
        row = {"planner": p, "belief": mem, "quarter": f"Q{q}",
               "groups": int(part.groups.iloc[0])}
        for m, lab in PROFILE_METRICS:
            r = part.loc[m]
            row[lab] = ci(r.estimate, r.low, r.high, 1)
        disp.append(row)
    return Table(
        name="table10_quarter_profiles", title="Resource profiles by episode quarter",
        paper_ref="paper Figure 3 and C.6", data=data, display=pd.DataFrame(disp),
        notes=("A group's quarter is floor(4 x index / groups in its episode) + 1. Means per "
               "group; intervals are pointwise (not simultaneous across quarters). Profiles "
               "are descriptive: relative progress does not hold task difficulty fixed. "
               + cfg.describe()))


def quarter_profiles_figure(export, results) -> FigureOutput:
    """Per-group query attempts and tokens by quarter, one line per condition, with
    pointwise intervals (markers and line styles distinguish conditions)."""
    data = _profile_rows(results)
    show = [("query_attempts", "query attempts per group (count)"),
            ("tokens", "tokens per group (prompt + completion)"),
            ("n_accepted", "accepted attempts per group (count)")]
    fig = new_figure(3.0 * len(show), 3.2)
    axes = fig.subplots(1, len(show), squeeze=False)[0]
    plotted = []
    series = list(data.groupby(["planner", "memory"], sort=True).groups)
    for ax, (m, ylabel) in zip(axes, show):
        for k, (p, mem) in enumerate(series):
            d = data[(data.planner == p) & (data.memory == mem) & (data.metric == m)]
            d = d.sort_values("quarter")
            x = d.quarter.to_numpy() + (k - (len(series) - 1) / 2) * 0.08
            lab = f"{p}, {mem}" if len(set(s[0] for s in series)) > 1 else mem
            ax.errorbar(x, d.estimate, yerr=[d.estimate - d.low, d.high - d.estimate],
                        marker=MARKERS[k % len(MARKERS)], ls=LINESTYLES[k % len(LINESTYLES)],
                        color="black", mfc="white" if k % 2 else "black", capsize=3,
                        lw=1, label=lab)
            plotted.append(d.assign(x=x)[["planner", "memory", "metric", "quarter", "x",
                                          "estimate", "low", "high"]])
        ax.set_xticks([1, 2, 3, 4], ["Q1", "Q2", "Q3", "Q4"])
        ax.set_xlabel("episode quarter (relative position)")
        ax.set_ylabel(ylabel, fontsize=8)
        ax.grid(axis="y", color="0.85", lw=0.5)
    axes[0].legend(title="belief", fontsize=8, title_fontsize=8, frameon=False)
    lvl = f"{100 * results.config.confidence_level:g}%"
    fig.suptitle(f"Resource profiles by episode quarter (pointwise {lvl} intervals)",
                 fontsize=10)
    return FigureOutput(name="fig10_quarter_profiles", title="Resource profiles by episode "
                        "quarter", paper_ref="paper Figure 3 and C.6", figure=fig,
                        data=pd.concat(plotted, ignore_index=True),
                        notes="Data: plotted x position (quarter with a small offset per "
                              "condition), estimate and pointwise interval. "
                              + results.config.describe())


def memory_counters(export, results) -> Table:
    """Totals of the belief counters per condition, and per-group rates with intervals."""
    cfg = results.config
    data, disp = [], []
    names = {"cross_group_hits": "cross-group memory hits",
             "repeated_region_queries": "repeated region queries",
             "anchor_delta_conflicts": "anchor-delta conflicts"}
    for s in _studies(results):
        tot = s.counters.set_index("memory")
        rates = s.counter_rates.table.set_index(["memory", "metric"])
        for c in COUNTERS:
            row = {"planner": s.planner, "counter": names[c]}
            for mem in ("persistent", "reset"):
                r = rates.loc[(mem, c)]
                row[f"{mem}: total"] = int(tot.loc[mem, c])
                row[f"{mem}: per group"] = ci(r.estimate, r.low, r.high, 3)
                data.append({"planner": s.planner, "counter": c, "memory": mem,
                             "total": int(tot.loc[mem, c]), "groups": int(tot.loc[mem, "groups"]),
                             "per_group": r.estimate, "low": r.low, "high": r.high})
            disp.append(row)
    return Table(
        name="table11_memory_counters", title="Memory counters", paper_ref="paper E.6",
        data=pd.DataFrame(data), display=pd.DataFrame(disp),
        notes=("Totals are counts over every group of the memory suite (observed, not "
               "estimated); per-group means carry intervals. Neither counter measures every "
               "stale belief or failed action. " + cfg.describe()))

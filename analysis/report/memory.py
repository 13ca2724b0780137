"""Tables 8-11 and Figure 10: the memory study (paper 6.4, Table 18, Figure 3, C.6, E.6).

Each builder covers every planner of the export that has both a persistent and a reset
run on the memory suite (usually one).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .common import (DOUBLE_COLUMN, LINESTYLES, MARKERS, METHODS_POINTER, Skip, ci, new_figure,
                     pct_ci, plural)
from .memory_stats import COUNTERS, PROFILE_METRICS, STUDY_METRICS
from .context import few_clusters_note
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
    intervals; paired differences (persistent - reset) and relative changes with
    intervals; successes as counts."""
    cfg = results.config
    data, disp = [], []
    for s in _studies(results):
        bc = s.by_condition.table.set_index(["memory", "metric"])
        pt = s.paired.table.set_index("column")
        for m, label in STUDY_METRICS:
            p, r, d = bc.loc[("persistent", m)], bc.loc[("reset", m)], pt.loc[m]
            unit = " (%)" if m in _PCT else ""
            rel = ("" if m in _PCT else
                   ci(d.relative_change, d.rel_low, d.rel_high, 2, 100) + " %")
            disp.append({
                "planner": s.planner, "metric": label + unit,
                "persistent": _fmt(m, p.estimate, p.low, p.high),
                "reset": _fmt(m, r.estimate, r.low, r.high),
                "paired difference": (pct_ci(d.difference, d.low, d.high, 2, (-1.0, 1.0))
                                      .replace(" [", " pp [", 1) if m in _PCT
                                      else ci(d.difference, d.low, d.high, 1)),
                "relative change (sums)": rel})
            for cond, est, lo, hi in (("persistent", p.estimate, p.low, p.high),
                                      ("reset", r.estimate, r.low, r.high),
                                      ("difference", d.difference, d.low, d.high),
                                      ("relative_change", d.relative_change, d.rel_low,
                                       d.rel_high)):
                data.append({"planner": s.planner, "metric": m, "condition": cond,
                             "estimate": est, "low": lo, "high": hi})
        n = s.n_tasks
        sp, sr = s.successes.get("persistent", 0), s.successes.get("reset", 0)
        disp.append({"planner": s.planner, "metric": "Successes (tasks)",
                     "persistent": f"{sp}/{n}", "reset": f"{sr}/{n}",
                     "paired difference": f"{sp - sr:+d} tasks (see Table 9)",
                     "relative change (sums)": ""})
        for cond, v in (("persistent", sp), ("reset", sr)):
            data.append({"planner": s.planner, "metric": "successes", "condition": cond,
                         "estimate": float(v), "low": float("nan"), "high": float("nan")})
    p0 = _studies(results)[0].paired
    return Table(
        name="table08_memory_study", title="Memory study: persistent vs reset belief",
        paper_ref="paper 6.4", data=pd.DataFrame(data), display=pd.DataFrame(disp),
        notes=("Memory suite, the same tasks under both conditions; world state carries over "
               "in both, belief is cleared at every group boundary under reset. Paired "
               "differences are task-macro means of per-task differences (persistent minus "
               "reset); relative change is (sum persistent - sum reset) / sum reset over all "
               "tasks. For rates and fractions in [0, 1] both intervals are MOVER "
               "combinations of the two conditions' Korn-Graubard Clopper-Pearson intervals "
               "(the relative change on the log scale), which hold for rare outcomes; for "
               "other columns the difference has an episode-cluster bootstrap-t interval "
               f"({p0.n_resamples} resamples, seed {cfg.seed}) and the relative change a "
               "log-scale MOVER of CR1 t intervals. "
               "Per-condition columns: " + cfg.brief() + " " + METHODS_POINTER
               + few_clusters_note(*[x for s in _studies(results)
                                     for x in (s.by_condition, s.paired)])))


def paired_outcomes(export, results) -> Table:
    """2x2 table of task successes, per-episode discordance and the two exact tests."""
    data, disp = [], []
    for s in _studies(results):
        pr = s.paired
        two = pr.contingency
        for k, v in two.items():
            data.append({"planner": s.planner, "section": "2x2", "key": k, "tasks": v,
                         "only_persistent": pd.NA, "only_reset": pd.NA,
                         "sign_patterns": pd.NA, "p_value": np.nan})
        disp += [{"planner": s.planner, "row": "success in both", "value": str(two["both"])},
                 {"planner": s.planner, "row": "success only with persistent belief",
                  "value": str(two["only_a"])},
                 {"planner": s.planner, "row": "success only with reset belief",
                  "value": str(two["only_b"])},
                 {"planner": s.planner, "row": "success in neither", "value": str(two["neither"])}]
        disc = pr.discordant
        for r in disc.itertuples():
            data.append({"planner": s.planner, "section": "episode", "key": r.episode_id,
                         "tasks": int(r.n_tasks), "only_persistent": int(r.only_a),
                         "only_reset": int(r.only_b), "sign_patterns": pd.NA,
                         "p_value": np.nan})
            if r.only_a or r.only_b:
                disp.append({"planner": s.planner, "row": f"episode {r.episode_id}",
                             "value": f"{plural(int(r.n_tasks), 'task')}; only persistent "
                                      f"{int(r.only_a)}, only reset {int(r.only_b)}"})
        n_quiet = int(((disc.only_a == 0) & (disc.only_b == 0)).sum())
        disp.append({"planner": s.planner, "row": "episodes without discordant tasks",
                     "value": f"{n_quiet} of {len(disc)}"})
        # ``tasks`` of a test row: the discordant tasks it rests on (the sign patterns
        # the exact sign-flip test enumerates have a column of their own)
        data.append({"planner": s.planner, "section": "test", "key": "mcnemar_exact",
                     "tasks": two["only_a"] + two["only_b"], "only_persistent": two["only_a"],
                     "only_reset": two["only_b"], "sign_patterns": pd.NA,
                     "p_value": pr.mcnemar_p})
        data.append({"planner": s.planner, "section": "test", "key": "cluster_sign_flip_exact",
                     "tasks": two["only_a"] + two["only_b"], "only_persistent": two["only_a"],
                     "only_reset": two["only_b"], "sign_patterns": pr.n_sign_patterns,
                     "p_value": pr.sign_flip_p})
        disp.append({"planner": s.planner,
                     "row": "exact McNemar (assumes independent tasks)",
                     "value": f"p = {pr.mcnemar_p:.3f}"})
        disp.append({"planner": s.planner,
                     "row": "exact cluster sign-flip (episodes exchangeable)",
                     "value": f"p = {pr.sign_flip_p:.3f} "
                              f"({plural(int(pr.n_sign_patterns), 'sign pattern')})"})
    return Table(
        name="table09_paired_outcomes", title="Paired task outcomes (memory study)",
        paper_ref="paper Table 18 and E.2", data=pd.DataFrame(data), display=pd.DataFrame(disp),
        notes=("Counts of task successes under both belief conditions on the same tasks. The "
               "exact McNemar test (two-sided binomial test on the discordant tasks) treats "
               "tasks as independent, which tasks nested in episodes are not; the exact "
               "cluster sign-flip test uses every sign pattern of the per-episode "
               "discordance differences (only persistent minus only reset), so it respects "
               "the episode clustering. Neither resamples; no seed is involved. "
               + METHODS_POINTER))


def _profile_rows(results):
    rows = []
    for s in _studies(results):
        for r in s.profiles.table.itertuples():
            rows.append({"planner": s.planner, "memory": r.memory, "quarter": int(r.quarter) + 1,
                         "metric": r.metric, "estimate": r.estimate, "low": r.low,
                         "high": r.high, "groups": int(r.n_groups),
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
            row[lab] = ci(r.estimate, max(r.low, 0.0), r.high, 1)
        disp.append(row)
    return Table(
        name="table10_quarter_profiles", title="Resource profiles by episode quarter",
        paper_ref="paper Figure 3 and C.6", data=data, display=pd.DataFrame(disp),
        notes=("A group's quarter is floor(4 x index / groups in its episode) + 1. Means per "
               "group; intervals are pointwise (not simultaneous across quarters). Profiles "
               "are descriptive: relative progress does not hold task difficulty fixed. "
               "Displayed lower bounds are truncated at 0 (counts); the CSV keeps them. "
               + cfg.brief() + " " + METHODS_POINTER
               + few_clusters_note(*[s.profiles for s in _studies(results)])))


#: fig10 panels: (metric, panel title, y label, scale). Tokens are shown in thousands.
FIG10_PANELS = (("query_attempts", "Query attempts", "per group (count)", 1.0),
                ("tokens", "Tokens", "per group (thousands)", 1e-3),
                ("n_accepted", "Accepted attempts", "per group (count)", 1.0),
                ("n_attempts", "All attempts", "per group (count)", 1.0))


def quarter_profiles_figure(export, results, width: float = DOUBLE_COLUMN) -> FigureOutput:
    """Per-group query attempts, tokens, accepted and all attempts by episode quarter,
    one line per (planner, belief condition) with pointwise intervals. Conditions differ
    by marker, fill and line style and are dodged sideways so that their intervals never
    overlap. ``width`` is the print width in inches (four panels in a row at
    double-column width, two by two below it)."""
    data = _profile_rows(results)
    planners = sorted(data.planner.unique())
    series = list(data.groupby(["planner", "memory"], sort=True).groups)
    ncols = 4 if width >= 5 else 2
    nrows = -(-len(FIG10_PANELS) // ncols)
    fig = new_figure(width, 1.75 * nrows + 0.75)
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    # dodge: the conditions of one quarter spread over +-0.15, never touching
    step = 0.3 / max(len(series) - 1, 1) if len(series) > 1 else 0.0
    plotted = []
    for ax, (m, title, ylabel, scale) in zip(axes, FIG10_PANELS):
        tops = []
        for k, (p, mem) in enumerate(series):
            d = data[(data.planner == p) & (data.memory == mem) & (data.metric == m)]
            d = d.sort_values("quarter")
            x = d.quarter.to_numpy() + (k - (len(series) - 1) / 2) * step
            lab = f"{p}, {mem}" if len(planners) > 1 else mem
            lo, hi = d.low.clip(lower=0.0), d.high  # counts are non-negative
            est = d.estimate * scale
            ax.errorbar(x, est, yerr=[est - lo * scale, hi * scale - est],
                        marker=MARKERS[k % len(MARKERS)], ls=LINESTYLES[k % len(LINESTYLES)],
                        color="black", mfc="white" if k % 2 else "black", capsize=2,
                        lw=0.9, elinewidth=0.7, label=lab)
            plotted.append(d.assign(x=x, low=lo)[["planner", "memory", "metric", "quarter",
                                                  "x", "estimate", "low", "high"]])
            tops.append(d.estimate.max())
        top = max(tops) if tops else 1.0
        finite = [v for p_ in plotted if (p_.metric == m).any()
                  for v in p_.loc[p_.metric == m, "high"] if np.isfinite(v) and v <= 3 * top]
        ax.set_ylim(0, 1.08 * scale * max([top, *finite]) if top > 0 else 1.0)
        ax.set_xlim(0.5, 4.5)
        ax.set_xticks([1, 2, 3, 4], ["Q1", "Q2", "Q3", "Q4"])
        ax.set_title(title)
        ax.set_ylabel(ylabel)
        ax.grid(axis="y", color="0.85", lw=0.4)
    for ax in axes[len(FIG10_PANELS):]:
        ax.set_visible(False)
    for ax in axes[(nrows - 1) * ncols:]:
        ax.set_xlabel("episode quarter")
    handles, labs = axes[0].get_legend_handles_labels()
    fig.legend(handles, labs, title="belief", loc="outside lower center",
               ncol=min(len(labs), 4), frameon=False)
    lvl = f"{100 * results.config.confidence_level:g}%"
    sep = "\n" if ncols < 4 else " "
    fig.suptitle(f"{', '.join(planners)}, memory suite:{sep}resources per group by episode "
                 f"quarter{sep}(pointwise {lvl} intervals)")
    return FigureOutput(name="fig10_quarter_profiles", title="Resource profiles by episode "
                        "quarter", paper_ref="paper Figure 3 and C.6", figure=fig,
                        data=pd.concat(plotted, ignore_index=True),
                        notes="Data: plotted x position (quarter with a sideways offset per "
                              "condition), estimate and pointwise interval (lower bound "
                              "truncated at 0; tokens plotted in thousands, the data in "
                              "tokens). An upper bound beyond three times the panel's "
                              "largest estimate runs off the axis; its value is in the data "
                              "CSV. " + results.config.brief() + " " + METHODS_POINTER)


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
                row[f"{mem}: per group"] = ci(r.estimate, max(r.low, 0.0), r.high, 3)
                data.append({"planner": s.planner, "counter": c, "memory": mem,
                             "total": int(tot.loc[mem, c]), "groups": int(tot.loc[mem, "groups"]),
                             "per_group": r.estimate, "low": r.low, "high": r.high})
            disp.append(row)
    return Table(
        name="table11_memory_counters", title="Memory counters", paper_ref="paper E.6",
        data=pd.DataFrame(data), display=pd.DataFrame(disp),
        notes=("Totals are counts over every group of the memory suite (observed, not "
               "estimated); per-group means carry intervals. Neither counter measures every "
               "stale belief or failed action. Displayed lower bounds are truncated at 0 (counts). "
               + cfg.brief() + " " + METHODS_POINTER
               + few_clusters_note(*[s.counter_rates for s in _studies(results)])))

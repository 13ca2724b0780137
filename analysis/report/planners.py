"""Table 4 (planner results, paper 6.3), Table 5 and Figure 5 (task endpoints, paper
Figure 2), Table 7 (by contract tier, paper 6.3)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..metrics import ENDPOINTS
from .common import METHODS_POINTER, SINGLE_COLUMN, Skip, new_figure, pct_ci
from .context import PLANNER_METRICS, few_clusters_note, run_names_note
from .output import FigureOutput, Table

__all__ = ["planner_results", "endpoints_table", "endpoints_figure", "tier_results"]

ENDPOINT_LABELS = {"parse_failure": "parse failure", "empty_plan": "empty plan",
                   "execution_blocked": "execution blocked",
                   "completed_none": "completed, no condition met",
                   "completed_partial": "completed, some conditions met",
                   "completed_all": "success (all conditions met)"}


def _need_planner(results):
    if results is None or results.planner_bootstrap is None:
        raise Skip(results.skipped.get("planner", "no planner-suite runs") if results
                   else "no statistics results")


def _long(boot, label_map=None) -> pd.DataFrame:
    t = boot.table.copy()
    cols = [c for c in t.columns if c not in ("se", "degenerate")]
    t = t[cols + ["se", "degenerate"]]
    if label_map:
        t["metric"] = t["metric"].map(lambda m: label_map.get(m, m))
    return t


def planner_results(export, results) -> Table:
    """Per planner: every task-macro metric with its episode-cluster interval."""
    _need_planner(results)
    cfg = results.config
    t = results.planner_bootstrap.table
    label = dict(PLANNER_METRICS)
    data = t.rename(columns={"label": "planner"}).copy()
    data.insert(2, "metric_label", data.metric.map(label))
    data = data[["planner", "metric", "metric_label", "estimate", "low", "high", "se",
                 "n_records", "n_clusters", "degenerate"]]
    disp = []
    for planner in results.labels:
        part = t[t.label == planner].set_index("metric")
        row = {"planner": planner, "tasks": int(part.loc["success", "n_records"]),
               "tasks without attempts": int(results.planner_tasks.loc[
                   results.planner_tasks.label == planner, "no_attempts"].sum())}
        for m, lab in PLANNER_METRICS:
            r = part.loc[m]
            row[lab + " (%)"] = pct_ci(r.estimate, r.low, r.high)
        disp.append(row)
    n_terminal = int((results.planner_tasks.drop_duplicates("task_id").tier == "terminal").sum())
    return Table(
        name="table04_planner_results", title="Planner results on the planner suite",
        paper_ref="paper 6.3 and C.1-C.3", data=data, display=pd.DataFrame(disp),
        notes=(f"Task-macro means in percent with {cfg.level_pct} intervals in brackets. "
               f"Operational-TSR counts every task of the suite (failures stay in the "
               f"denominator); Strict-TSR and GCR (terminal) use the {n_terminal} "
               "terminal-tier tasks, GCR (event) the event-tier tasks. A task in which the "
               "planner made no attempt counts as 0 action validity; 'tasks without "
               "attempts' gives how many. "
               + cfg.brief() + " " + METHODS_POINTER + few_clusters_note(results.planner_bootstrap)
               + run_names_note(results.planner_tasks)))


def endpoints_table(export, results) -> Table:
    """Mutually exclusive task endpoints per planner: counts and shares with intervals."""
    _need_planner(results)
    cfg = results.config
    pt = results.planner_tasks
    counts = pd.crosstab(pt.label, pt.endpoint).reindex(index=results.labels,
                                                        columns=list(ENDPOINTS), fill_value=0)
    bt = results.endpoint_bootstrap.table.set_index(["label", "metric"])
    data, disp = [], []
    for p in results.labels:
        drow = {"planner": p, "tasks": int(counts.loc[p].sum())}
        for e in ENDPOINTS:
            b = bt.loc[(p, e)]
            data.append({"planner": p, "endpoint": e, "tasks": int(counts.loc[p, e]),
                         "share": b.estimate, "low": b.low, "high": b.high})
            drow[ENDPOINT_LABELS[e]] = f"{int(counts.loc[p, e])} ({pct_ci(b.estimate, b.low, b.high)})"
        disp.append(drow)
    return Table(
        name="table05_endpoints", title="Task endpoints per planner",
        paper_ref="paper Figure 2 and 6.3", data=pd.DataFrame(data), display=pd.DataFrame(disp),
        notes=("Each task of each run has exactly one endpoint: the first non-completed group "
               "status, else how many conditions were met. Cells: task count (share in "
               f"percent with its {cfg.level_pct} interval). Counts describe outcomes, not "
               "causes. " + cfg.brief() + " " + METHODS_POINTER
               + few_clusters_note(results.endpoint_bootstrap)))


#: Endpoint encodings for greyscale print: every endpoint has its own hatch on a white
#: face, so pattern alone tells them apart (no two share a pattern family).
ENDPOINT_HATCH = {"parse_failure": "xxxx", "empty_plan": "----",
                  "execution_blocked": "\\\\\\\\", "completed_none": "",
                  "completed_partial": "////", "completed_all": "ooo"}
ENDPOINT_FACE = {"parse_failure": "white", "empty_plan": "white",
                 "execution_blocked": "white", "completed_none": "white",
                 "completed_partial": "white", "completed_all": "0.75"}


def endpoints_figure(export, results, width: float = SINGLE_COLUMN) -> FigureOutput:
    """Left: stacked horizontal bars of endpoint counts per planner, each endpoint with
    its own hatch pattern (reads in greyscale). Right: each endpoint's share with its
    interval, one marker shape per endpoint, dodged within the planner's row. One compact
    legend names both encodings. ``width`` is the print width in inches."""
    from matplotlib.legend_handler import HandlerTuple
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    from .common import MARKERS

    _need_planner(results)
    pt = results.planner_tasks
    counts = pd.crosstab(pt.label, pt.endpoint).reindex(index=results.labels,
                                                        columns=list(ENDPOINTS), fill_value=0)
    bt = results.endpoint_bootstrap.table.set_index(["label", "metric"])
    ncol = 2 if width < 5 else 3
    n_leg_rows = -(-len(ENDPOINTS) // ncol)
    fig = new_figure(width, 0.3 * len(results.labels) + 0.6 + 0.15 * n_leg_rows)
    ax, ax2 = fig.subplots(1, 2, sharey=True, gridspec_kw={"width_ratios": [3, 2]})
    y = np.arange(len(results.labels))
    left = np.zeros(len(y))
    rows = []
    offsets = np.linspace(-0.3, 0.3, len(ENDPOINTS))
    for k, e in enumerate(ENDPOINTS):
        v = counts[e].to_numpy()
        ax.barh(y, v, left=left, height=0.7, color=ENDPOINT_FACE[e], hatch=ENDPOINT_HATCH[e],
                edgecolor="black", linewidth=0.5)
        share = np.array([bt.loc[(p, e), "estimate"] for p in results.labels], float)
        low = np.array([bt.loc[(p, e), "low"] for p in results.labels], float)
        high = np.array([bt.loc[(p, e), "high"] for p in results.labels], float)
        lo_c, hi_c = np.clip(low, 0, 1), np.clip(high, 0, 1)
        ok = ~np.isnan(lo_c) & ~np.isnan(hi_c)
        ax2.errorbar(100 * share[ok], (y + offsets[k])[ok],
                     xerr=[100 * (share - lo_c)[ok], 100 * (hi_c - share)[ok]], fmt=MARKERS[k],
                     color="black", mfc="white" if k % 2 else "black", ms=3, lw=0.6,
                     capsize=1.2, elinewidth=0.6)
        for i, (p, c, l0) in enumerate(zip(results.labels, v, left)):
            rows.append({"planner": p, "endpoint": e, "tasks": int(c), "left": int(l0),
                         "share": share[i], "low": lo_c[i], "high": hi_c[i],
                         "y": float(y[i] + offsets[k])})
        left += v
    ax.set_yticks(y, results.labels)
    ax.set_ylim(len(y) - 0.5 + 0.15, -0.5 - 0.15)  # top-down, with air above and below
    ax.set_xlim(0, 1.04 * max(float(left.max()), 1.0))  # longest bar stops short of the edge
    ax2.set_xlim(-2, 102)
    for a in (ax, ax2):
        for side in ("top", "right"):
            a.spines[side].set_visible(False)
    ax.set_xlabel("tasks (count)" if width >= 5 else "tasks")
    ax.set_ylabel("planner")
    ax2.set_xlabel(f"share (%, {results.config.level_pct} CI)")
    ax2.tick_params(axis="y", left=False)
    handles = [(Patch(facecolor=ENDPOINT_FACE[e], hatch=ENDPOINT_HATCH[e], edgecolor="black",
                      linewidth=0.5),
                Line2D([], [], marker=MARKERS[k], color="black", ls="", ms=3,
                       mfc="white" if k % 2 else "black"))
               for k, e in enumerate(ENDPOINTS)]
    fig.legend(handles, [ENDPOINT_LABELS[e] for e in ENDPOINTS], loc="outside lower center",
               ncol=ncol, frameon=False, handlelength=2.6, handleheight=0.9,
               columnspacing=0.8, handletextpad=0.4, labelspacing=0.25,
               handler_map={tuple: HandlerTuple(ndivide=None, pad=0.3)})
    return FigureOutput(name="fig05_endpoints", title="Task endpoints per planner",
                        paper_ref="paper Figure 2", figure=fig, data=pd.DataFrame(rows),
                        notes="Left: stacked counts of mutually exclusive endpoints on the "
                              "planner suite (one hatch pattern per endpoint); right: each "
                              "endpoint's share with its interval (one marker per endpoint; "
                              "bounds truncated to [0, 100]%). Data: count, bar start, "
                              "share, interval and marker row per planner and endpoint. "
                              + results.config.brief() + " " + METHODS_POINTER)


def tier_results(export, results) -> Table:
    """Per planner and contract tier: success, GCR, validity, completed-run rate."""
    _need_planner(results)
    cfg = results.config
    t = results.tier_bootstrap.table
    labels = {"success": "Success", "gcr": "GCR", "action_validity": "Action validity",
              "completed": "Completed-run rate"}
    data = t.rename(columns={"label": "planner"})[
        ["planner", "tier", "metric", "estimate", "low", "high", "se", "n_records",
         "n_clusters", "degenerate"]]
    disp = []
    for (p, tier), part in t.groupby(["label", "tier"], sort=True):
        part = part.set_index("metric")
        row = {"planner": p, "tier": tier, "tasks": int(part.loc["success", "n_records"])}
        for m, lab in labels.items():
            r = part.loc[m]
            row[lab + " (%)"] = pct_ci(r.estimate, r.low, r.high)
        disp.append(row)
    return Table(
        name="table07_contract_tiers", title="Results by contract tier",
        paper_ref="paper 6.3 (contract-type analysis) and C.1", data=data,
        display=pd.DataFrame(disp),
        notes=("Terminal tasks are scored on the world state at the task's end, event tasks "
               "on accepted events within the task; the tiers are different contract "
               "interpretations, not a difficulty scale. Success on terminal tasks is "
               "Strict-TSR. " + cfg.brief() + " " + METHODS_POINTER
               + few_clusters_note(results.tier_bootstrap)))

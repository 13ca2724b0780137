"""Table 15 and figure 15 (failure labels) and table 16 (the condition ledger): paper 6.3
and E.1.

The labels and the ledger are derived by re-executing every planner-suite run from the
hash-verified records (:mod:`.failure_labels`), once, in :func:`analysis.report.compute`
(``Results.failures``); no recorded label is read. This module formats them and their
episode-cluster intervals; it does not derive.
"""
from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd

from .common import METHODS_POINTER, SINGLE_COLUMN, Skip, new_figure, pct_ci, runs_note
from .failure_labels import FailureResults, derive_failures

__all__ = ["FailureResults", "derive_failures", "failure_labels_table",
           "failure_labels_figure", "condition_ledger_table"]


def _need(results):
    if results is None or results.planner_tasks.empty:
        raise Skip(results.skipped.get("planner", "no planner-suite runs") if results
                   else "no statistics results")
    if getattr(results, "failures", None) is None:
        raise Skip(results.skipped.get("failures", "no failure labels were derived"))
    return results.failures


def _boot(results, df, cols, by=("label",)):
    from .context import _boot as boot
    return boot(results.config, df, cols, list(by)).table.set_index([*by, "metric"])


def _interval_cells(bt, key, stem: str, estimate: str) -> dict:
    """Row cells ``{stem}_{estimate}``, ``{stem}_low``, ``{stem}_high`` of ``key`` in the
    bootstrap table ``bt`` (from :func:`_boot`; NaN where it has no row with records)."""
    ok = bt is not None and key in bt.index and bt.loc[key, "n_records"] > 0
    return {f"{stem}_{estimate}": float(bt.loc[key, "estimate"]) if ok else np.nan,
            f"{stem}_low": float(bt.loc[key, "low"]) if ok else np.nan,
            f"{stem}_high": float(bt.loc[key, "high"]) if ok else np.nan}


def _ci_column(data, stem: str, estimate: str, blank_missing: bool = False) -> list[str]:
    """Display cells ``estimate [low, high]`` (%) of the columns :func:`_interval_cells`
    wrote; ``blank_missing``: an empty cell where the estimate is missing."""
    return [("" if blank_missing and e != e else pct_ci(e, lo, hi)) for e, lo, hi in
            zip(data[f"{stem}_{estimate}"], data[f"{stem}_low"], data[f"{stem}_high"])]


def _table(results, name, title, paper_ref, data, display, notes):
    """A table of this module: 4 decimals, the notes followed by the statistics settings,
    the runs covered and the methods pointer."""
    from .output import Table
    return Table(name=name, title=title, paper_ref=paper_ref, data=data, display=display,
                 decimals=4, notes=" ".join([notes, results.config.brief(),
                                             runs_note(results), METHODS_POINTER]))


def _label_order(present) -> list[str]:
    from ..executor.failures import LABELS
    present = set(present)  # once, not once per label (a column of every rejected attempt)
    return [x for x in LABELS if x in present]


def _task_of_group(export) -> dict:
    """group_id -> the task IDs whose groups include it (a group may serve several)."""
    out: dict = {}
    for t in export.records_of("task"):
        for g in t["group_ids"]:
            out.setdefault(g, []).append(t["task_id"])
    return out


def _shares(results, export):
    """(per-planner counts, pooled bootstrap table, task-macro bootstrap table, labels)
    of the attempt labels (as shares of rejected attempts) and the group labels (as
    shares of groups)."""
    f = _need(results)
    att = f.attempts
    a_labels = _label_order(att.failure)
    g_labels = _label_order(f.groups.failure)
    # pooled: one row per rejected attempt (group labels: per group), one 0/1 column per label
    pooled = att[["label", "episode_id"]].copy()
    for x in a_labels:
        pooled[x] = (att.failure == x).astype(float)
    # a dict, not a MultiIndex lookup per group (one row per non-completed group of a run)
    gkey = dict(zip(zip(f.groups.run_id, f.groups.group_id), f.groups.failure))
    gc = f.group_counts[["label", "run_id", "episode_id", "group_id"]].copy()
    gfail = pd.Series([gkey.get((r, g)) for r, g in zip(gc.run_id, gc.group_id)],
                      index=gc.index, dtype=object)
    for x in g_labels:
        gc[x] = (gfail == x).astype(float)
    # task-macro: per (run, task), the label's share of the task's rejected attempts
    tog = _task_of_group(export)
    # the attempts grouped by (label, run, group) in order of first appearance, as
    # groupby(sort=False) would, over plain columns (a DataFrame per group cost seconds)
    by_group: dict = {}
    for label, run_id, gid, eid, fail in zip(att.label, att.run_id, att.group_id,
                                             att.episode_id, att.failure):
        by_group.setdefault((label, run_id, gid), (eid, []))[1].append(fail)
    per_task: dict = {}
    for (label, run_id, gid), (eid, fails) in by_group.items():
        for tid in tog.get(gid, []):
            per_task.setdefault((label, run_id, tid, eid), []).extend(fails)
    counts = {k: Counter(fails) for k, fails in per_task.items()}
    macro = pd.DataFrame([{"label": k[0], "episode_id": k[3],
                           **{x: counts[k][x] / len(fails) for x in a_labels}}
                          for k, fails in per_task.items()])
    return f, pooled, gc, macro, a_labels, g_labels, gfail


def failure_labels_table(export, results):
    """Per planner and label: counts, pooled share of rejected attempts (group labels:
    of groups) and task-macro share, each with its episode-cluster interval."""
    f, pooled, gc, macro, a_labels, g_labels, gfail = _shares(results, export)
    if not a_labels and not g_labels:
        raise Skip("no rejected attempt and no non-completed group on the planner suite")
    bp = _boot(results, pooled, a_labels) if a_labels else None
    bm = _boot(results, macro, a_labels) if a_labels and not macro.empty else None
    bg = _boot(results, gc, g_labels) if g_labels else None
    n_att = f.attempts.groupby("label").size()
    n_grp = gc.groupby("label").size()
    rows = []
    for p in results.labels:
        for x in a_labels + g_labels:
            attempt = x in a_labels
            sub = f.attempts[f.attempts.label == p] if attempt else gc[gc.label == p]
            n = int((sub.failure == x).sum()) if attempt else int(sub[x].sum())
            b = (bp if attempt else bg)
            row = {"planner": p, "label": x, "unit": "rejected attempt" if attempt else "group",
                   "count": n, "of": int(n_att.get(p, 0) if attempt else n_grp.get(p, 0))}
            for pre, bt in (("pooled", b), ("task_macro", bm if attempt else None)):
                row.update(_interval_cells(bt, (p, x), pre, "share"))
            rows.append(row)
    data = pd.DataFrame(rows)
    disp = pd.DataFrame({
        "planner": data.planner, "label": data.label, "unit": data.unit,
        "count": data["count"].astype(str) + " / " + data["of"].astype(str),
        "pooled share (%)": _ci_column(data, "pooled", "share"),
        "task-macro share (%)": _ci_column(data, "task_macro", "share", blank_missing=True)})
    return _table(
        results, "table15_failure_labels", "Why attempts and groups fail: failure labels",
        "paper 6.3 and E.1", data, disp,
        "Every rejected attempt has exactly one label, derived by re-executing the run "
        "from the verified records (labels, their precedence and the precondition "
        "families: docs/executor.md, Failure labels); every group that did not "
        "complete has one outcome label (budget_exhausted: the attempt limit). "
        "Pooled share: of the planner's rejected attempts (of its groups for group "
        "labels); task-macro share: the mean over tasks with a rejected attempt of the "
        "label's share of that task's rejected attempts. Labels that occur for no "
        "planner are left out.")


def failure_labels_figure(export, results, width: float = SINGLE_COLUMN):
    """Stacked horizontal bars of each planner's attempt-label shares (pooled), one hatch
    and fill per label (reads in greyscale)."""
    from .common import HATCHES
    from .output import FigureOutput
    f = _need(results)
    att = f.attempts
    labels = _label_order(att.failure)
    if not labels:
        raise Skip("no rejected attempt on the planner suite")
    counts = pd.crosstab(att.label, att.failure).reindex(index=results.labels, columns=labels,
                                                         fill_value=0)
    totals = counts.sum(axis=1).replace(0, np.nan)
    shares = counts.div(totals, axis=0).fillna(0.0)
    ncol = 2
    fig = new_figure(width, 0.3 * len(results.labels) + 0.7 + 0.14 * -(-len(labels) // ncol))
    ax = fig.subplots()
    y = np.arange(len(results.labels))
    left = np.zeros(len(y))
    rows = []
    for k, x in enumerate(labels):
        v = shares[x].to_numpy() * 100
        face = "white" if k < len(HATCHES) else "0.75"
        ax.barh(y, v, left=left, height=0.7, color=face, hatch=HATCHES[k % len(HATCHES)],
                edgecolor="black", linewidth=0.5, label=x.replace("unmet_precondition:", "unmet: "))
        for i, p in enumerate(results.labels):
            rows.append({"planner": p, "label": x, "count": int(counts.loc[p, x]),
                         "share": float(v[i]) / 100, "left": float(left[i]) / 100})
        left += v
    ax.set_yticks(y, results.labels)
    ax.set_ylim(len(y) - 0.5 + 0.15, -0.5 - 0.15)
    ax.set_xlim(0, 100)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.set_xlabel("share of rejected attempts (%)")
    ax.set_ylabel("planner")
    fig.legend(loc="outside lower center", ncol=ncol, frameon=False, handlelength=2.2,
               handleheight=0.9, columnspacing=0.8, handletextpad=0.4, labelspacing=0.25)
    return FigureOutput(name="fig15_failure_labels", title="Failure labels per planner",
                        paper_ref="paper 6.3 and E.1", figure=fig, data=pd.DataFrame(rows),
                        notes="Stacked pooled shares of each planner's rejected attempts by "
                              "failure label (one hatch pattern per label; Table 15 gives "
                              "the intervals). Data: count, share and bar start per planner "
                              "and label. " + METHODS_POINTER)


def condition_ledger_table(export, results):
    """Per planner and condition kind: attainment rate, share first met in the task's
    first group, undone rate, each with its episode-cluster interval."""
    f = _need(results)
    led = f.ledger
    if led.empty:
        raise Skip("no task conditions on the planner suite")
    from ..executor.failures import CONDITION_KINDS
    df = pd.DataFrame({"label": led.label, "kind": led.kind, "episode_id": led.episode_id})
    met = led.first_position.notna()
    df["attained"] = (led.end_truth == "TRUE").astype(float)
    df["first_group"] = np.where(met, (led.first_position == 0).astype(float), np.nan)
    df["undone"] = np.where(met, led.undone.astype(float), np.nan)
    cols = ["attained", "first_group", "undone"]
    bt = _boot(results, df, cols, ("label", "kind"))
    rows = []
    for p in results.labels:
        for k in CONDITION_KINDS:
            sub = led[(led.label == p) & (led.kind == k)]
            if sub.empty:
                continue
            row = {"planner": p, "kind": k, "conditions": len(sub),
                   "tasks": sub[["run_id", "task_id"]].drop_duplicates().shape[0],
                   "met_at_some_group_end": int(sub.first_position.notna().sum()),
                   "attained_at_end": int((sub.end_truth == "TRUE").sum()),
                   "undone": int(sub.undone.sum())}
            for c in cols:
                row.update(_interval_cells(bt, (p, k, c), c, "rate"))
            rows.append(row)
    data = pd.DataFrame(rows)
    disp = pd.DataFrame({
        "planner": data.planner, "kind": data.kind, "conditions": data.conditions,
        "attained at the task's end (%)": _ci_column(data, "attained", "rate"),
        "first met in the first group (% of met)": _ci_column(data, "first_group", "rate"),
        "undone (% of met)": _ci_column(data, "undone", "rate")})
    return _table(
        results, "table16_condition_ledger", "Condition progress ledger", "paper 6.3", data,
        disp,
        "Every condition of every task, evaluated at the end of each of the task's "
        "groups on the re-executed world and accepted events (the contract rules of "
        "the task's end). Kind: the atom's predicate in or at, any other predicate "
        "(container or appliance state, item state) state, or an event condition. "
        "Attained: TRUE at the task's end (the GCR numerator). First met in the first "
        "group and undone (TRUE at some group's end, FALSE at the task's end) are "
        "shares of the conditions met at some group's end.")

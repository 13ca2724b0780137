"""Table 6 and Figure 6: simultaneous pairwise planner contrasts (paper C.5)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..stats.pairwise import MOVER_METHODS
from .common import DOUBLE_COLUMN, MARKERS, METHODS_POINTER, Skip, new_figure, pct_ci
from .context import METRIC_LABELS, few_clusters_note, run_names_note
from .output import FigureOutput, Table

__all__ = ["pairwise_table", "pairwise_figure"]

VERDICT_TEXT = {"a>b": "A > B", "b>a": "B > A", "tie": "tie (interval contains 0)"}


def _need(results):
    if results is None or results.pairwise is None:
        reason = (results.skipped.get("pairwise") or results.skipped.get("planner")
                  if results else None) or "no pairwise results"
        raise Skip(reason)
    return results.pairwise


METHOD_TEXT = {
    "mover_kg_maxz": "each contrast the MOVER combination of its two means' Korn-Graubard "
                     "Clopper-Pearson intervals at the per-contrast level that a Gaussian "
                     "max-|z| over the family's episode scores gives (asymmetric near 0 and "
                     "1; a contrast with zero standard error keeps the honest interval from "
                     "its two means' exact bounds; every other half-width at least t(G-1) "
                     "times the contrast's CR1 standard error; with fewer than 8 episodes "
                     "the family level is at least Sidak's)",
    "mover_wilson_maxz": "as mover_kg_maxz with each mean's Korn-Graubard Wilson score "
                         "interval in place of Clopper-Pearson",
    "cr2bm_mover_maxz": "as mover_kg_maxz, except that a contrast whose two means each have "
                        "at least 10 effective successes and failures gets the symmetric "
                        "interval with the CR2 standard error and Bell-McCaffrey degrees of "
                        "freedom",
    "satt_maxt_tcal": "max-|t| with CR1 standard errors, the Gaussian max-|z| quantile "
                      "carried to a t quantile with Satterthwaite degrees of freedom",
    "pairs_maxt_studentized": "episode pairs bootstrap of max-|t|, re-studentised with CR1 "
                              "standard errors in every replicate",
    "gauss_maxt_tcal": "Gaussian max-|z| with CR1 standard errors, t(G-1)-calibrated",
    "cr3_maxt_tcal": "max-|t| with CR3 (jackknife) standard errors, t(G-1)-calibrated",
    "geff_maxt_tcal": "max-|t| with CR1 standard errors, t calibrated on the effective "
                      "number of episodes",
    "bonferroni_t": "Bonferroni over the family with CR1 standard errors and t(G-1)",
    "wild_maxt": "wild (Rademacher, per episode) bootstrap of max-|t|",
}


def _n_pairs(r) -> int:
    return len(r.table[["planner_a", "planner_b"]].drop_duplicates())


def _method_note(results, r) -> str:
    cfg = results.config
    if r.method in MOVER_METHODS:
        fam = (f"{r.family_size} contrasts ({_n_pairs(r)} pairs \u00d7 "
               f"{r.table.metric.nunique()} metrics = {len(r.table)}; "
               f"{int(r.table.zero_se.sum())} with zero standard "
               f"error, kept with honest intervals), method {r.method} "
               f"({METHOD_TEXT[r.method]}), family max-|z| = {r.critical_value:.3f}, i.e. "
               f"each interval at {100 * r.per_contrast_level:.2f}%")
    else:
        fam = (f"{r.family_size} contrasts ({_n_pairs(r)} pairs \u00d7 "
               f"{r.table.metric.nunique()} metrics = {len(r.table)}; "
               f"{len(r.set_aside)} with zero standard error set aside and flagged), method "
               f"{r.method} ({METHOD_TEXT.get(r.method, r.method)}), critical "
               f"|t| = {r.critical_value:.3f}")
    return (f"Simultaneous {100 * r.confidence_level:g}% intervals over the family of "
            f"{fam}; clustering unit: episode ({r.n_clusters} episodes); "
            f"{draws_text(r.method, r.n_resamples, cfg.seed)}. p-values are "
            "family-wise (single-step and Romano-Wolf stepdown). An interval containing 0 "
            "is a tie, not a ranking. " + getattr(r, "note", "") + few_clusters_note(r))


#: Methods whose critical value comes from Gaussian multiplier draws on the episode
#: scores (not from resampling episodes).
_MULTIPLIER = {*MOVER_METHODS, "satt_maxt_tcal", "gauss_maxt_tcal", "cr3_maxt_tcal", "geff_maxt_tcal"}


def draws_text(method: str, n: int, seed) -> str:
    """What the random draws of a pairwise method are, or that there are none.

    >>> draws_text("bonferroni_t", 0, 0)
    'no resampling and no seed (closed form)'
    """
    if method == "bonferroni_t" or n == 0:
        return "no resampling and no seed (closed form)"
    if method in _MULTIPLIER:
        return f"Gaussian multiplier draws over episodes: {n}; seed: {seed}"
    if method == "wild_maxt":
        return f"wild (Rademacher) draws over episodes: {n}; seed: {seed}"
    return f"episode resamples: {n}; seed: {seed}"


def pairwise_table(export, results) -> Table:
    """Every planner pair x contrast metric: difference A - B, simultaneous interval,
    stepdown p-value and verdict (A > B, B > A or tie)."""
    r = _need(results)
    t = r.table.copy()
    data = t[["planner_a", "planner_b", "metric", "estimate", "se", "t", "low", "high",
              "p_single_step", "p_stepdown", "verdict", "zero_se", "set_aside"]]
    disp = pd.DataFrame({
        "A": t.planner_a, "B": t.planner_b,
        "metric": t.metric.map(lambda m: METRIC_LABELS.get(m, m)),
        "A - B (pp) [simultaneous interval]": [
            pct_ci(e, lo, hi, 1, (-1.0, 1.0)) for e, lo, hi in zip(t.estimate, t.low, t.high)],
        "stepdown p": [("set aside" if s else f"{p:.3f}")
                       for p, s in zip(t.p_stepdown, t.set_aside)],
        "verdict": [("set aside (zero SE)" if s else VERDICT_TEXT[v])
                    for v, s in zip(t.verdict, t.set_aside)],
    })
    n_ties = int(((t.verdict == "tie") & ~t.set_aside).sum())
    check_note = ""
    c = results.pairwise_check
    if c is not None and r.method != c.method:
        key = ["planner_a", "planner_b", "metric"]
        ct = t[key].merge(c.table[key + ["low", "high", "verdict", "set_aside"]], on=key,
                          how="left")
        data = data.assign(bonferroni_low=ct.low.to_numpy(), bonferroni_high=ct.high.to_numpy(),
                           bonferroni_verdict=ct.verdict.to_numpy())
        disp["Bonferroni-t cross-check"] = [
            "set aside (zero SE)" if s else
            f"{pct_ci(e, lo, hi, 1, (-1.0, 1.0))} {VERDICT_TEXT[v].split(' (')[0]}"
            for e, lo, hi, v, s in zip(t.estimate, ct.low, ct.high, ct.verdict,
                                       ct.set_aside.to_numpy(bool))]
        differ = int(((ct.verdict.to_numpy() != t.verdict.to_numpy()) & ~t.set_aside
                      & ~ct.set_aside.to_numpy(bool)).sum())
        check_note = (f" The verdict is the {r.method} interval's (the default). Bonferroni-t "
                      f"(CR1 standard errors, t with G-1 degrees of freedom, critical |t| = "
                      f"{c.critical_value:.3f}, no resampling) is shown as a cross-check "
                      "only: with these episode counts it under-covers under true "
                      "differences (docs/statistics.md, coverage study), so where it "
                      f"differs ({differ} of {r.family_size} contrasts) the default's "
                      "verdict stands.")
    return Table(
        name="table06_pairwise_contrasts", title="Pairwise simultaneous planner contrasts",
        paper_ref="paper C.5", data=data, display=disp,
        notes=(f"{n_ties} of {r.family_size} contrasts are ties. Differences are task-macro "
               "means of A minus B on the same tasks, in percentage points. "
               + _method_note(results, r) + check_note + " " + METHODS_POINTER
               + run_names_note(results.planner_tasks)))


#: More pairs than this (8 planners) do not fit a printed page as forest-plot rows: the
#: figure then shows the verdicts as a planner x planner grid (estimates: Table 6).
MAX_FOREST_PAIRS = 28

_SHAPE = {"a>b": MARKERS[1], "b>a": MARKERS[2], "tie": MARKERS[0], "set_aside": "x"}
_FILL = {"a>b": "black", "b>a": "black", "tie": "white", "set_aside": "black"}
_LEGEND = {**VERDICT_TEXT, "set_aside": "set aside (zero SE, not estimable)"}


def _rows(t, pairs) -> list[dict]:
    """The plotted numbers (bounds truncated to [-100, 100] pp, flagged)."""
    rows = []
    for row, pair in zip(t.itertuples(), [f"{a} \u2212 {b}" for a, b in
                                         zip(t.planner_a, t.planner_b)]):
        lo, hi = max(100 * row.low, -100.0), min(100 * row.high, 100.0)
        rows.append({"metric": row.metric, "pair": pair, "planner_a": row.planner_a,
                     "planner_b": row.planner_b, "estimate_pp": 100 * row.estimate,
                     "low_pp": lo, "high_pp": hi,
                     "truncated": bool(lo != 100 * row.low or hi != 100 * row.high),
                     "verdict": "set_aside" if row.set_aside else row.verdict})
    return rows


def _legend(fig, t, ncol):
    from matplotlib.lines import Line2D
    keys = ["a>b", "b>a", "tie"] + (["set_aside"] if t.set_aside.any() else [])
    handles = [Line2D([], [], marker=_SHAPE[k], color="black", mfc=_FILL[k], ls="", ms=4,
                      label=_LEGEND[k]) for k in keys]
    fig.legend(handles=handles, loc="outside lower center", ncol=min(ncol, len(keys)),
               frameon=False, columnspacing=1.2, handletextpad=0.3)


def _verdict_grid(results, r, width) -> FigureOutput:
    """Many planners: per metric, a grid with planner A as row and B as column and the
    verdict's marker in the cell (drawn with one scatter per verdict: cost grows with
    the pairs, not with text and error-bar artists)."""
    t = r.table
    metrics = list(pd.unique(t.metric))
    labels = list(results.labels)
    pos = {p: i for i, p in enumerate(labels)}
    P = len(labels)
    cell = 0.1
    ncols = max(1, min(len(metrics), int((width - 1.6) // (P * cell + 0.2))))
    nrows = -(-len(metrics) // ncols)
    fig = new_figure(width, nrows * (P * cell + 1.3) + 0.7)
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    rows = _rows(t, list(pd.unique(t.planner_a + " \u2212 " + t.planner_b)))
    d = pd.DataFrame(rows)
    for i, (ax, m) in enumerate(zip(axes, metrics)):
        part = d[d.metric == m]
        for v, g in part.groupby("verdict", sort=True):
            edge = {} if v == "set_aside" else {"edgecolors": "black"}  # "x" is unfilled
            ax.scatter(g.planner_b.map(pos), g.planner_a.map(pos), marker=_SHAPE[v],
                       c=_FILL[v], s=9, linewidths=0.6, **edge)
        ax.set_xlim(-0.6, P - 0.4)
        ax.set_ylim(P - 0.4, -0.6)
        ax.set_aspect("equal")
        ax.set_xticks(range(P), labels, rotation=90)
        ax.set_yticks(range(P), labels if i % ncols == 0 else [""] * P)
        ax.set_title(METRIC_LABELS.get(m, m))
        ax.grid(color="0.9", lw=0.3)
    for ax in axes[len(metrics):]:
        ax.set_visible(False)
    _legend(fig, t, 2 if width < 5 else 4)
    fig.suptitle(f"Pairwise verdicts, row A vs column B (simultaneous "
                 f"{100 * r.confidence_level:g}% intervals; estimates in Table 6)")
    return FigureOutput(name="fig06_pairwise_forest", title="Pairwise contrasts (verdict grid)",
                        paper_ref="paper C.5", figure=fig, data=d,
                        notes="Table 6 as a verdict grid: A > B, B > A or tie for every "
                              "pair and metric. " + _method_note(results, r)
                              + f" With more than {MAX_FOREST_PAIRS} "
                              "pairs the figure shows each pair's verdict in a planner grid "
                              "(row A, column B) instead of forest-plot rows; the data CSV "
                              "keeps every estimate and truncated bound. " + METHODS_POINTER)


def pairwise_figure(export, results, width: float = DOUBLE_COLUMN) -> FigureOutput:
    """Forest plot: one panel per metric, one row per pair, marker shape and fill by
    verdict (a cross for a contrast set aside). ``width`` is the print width in inches:
    panels sit side by side at double-column width and are stacked below it. Beyond
    :data:`MAX_FOREST_PAIRS` pairs the verdicts are shown as a planner grid."""
    r = _need(results)
    t = r.table
    metrics = list(pd.unique(t.metric))
    pairs = list(pd.unique(t.planner_a + " \u2212 " + t.planner_b))
    if len(pairs) > MAX_FOREST_PAIRS:
        return _verdict_grid(results, r, width)
    stacked = width < 5
    panel_h = (0.135 if stacked else 0.17) * len(pairs) + 0.45
    if stacked:
        fig = new_figure(width, panel_h * len(metrics) + 0.55)
        axes = fig.subplots(len(metrics), 1, sharex=True, squeeze=False)[:, 0]
    else:
        fig = new_figure(width, panel_h + 0.75)
        axes = fig.subplots(1, len(metrics), sharey=True, squeeze=False)[0]
    shape = {"a>b": MARKERS[1], "b>a": MARKERS[2], "tie": MARKERS[0], "set_aside": "x"}
    fill = {"a>b": "black", "b>a": "black", "tie": "white", "set_aside": "black"}
    rows = []
    y = np.arange(len(pairs))
    for i, (ax, m) in enumerate(zip(axes, metrics)):
        part = t[t.metric == m]
        kinds = []
        for yi, row in zip(y, part.itertuples()):
            v = "set_aside" if row.set_aside else row.verdict
            # bounds truncated to the parameter space [-100, 100] pp (flagged in the data)
            lo, hi = max(100 * row.low, -100.0), min(100 * row.high, 100.0)
            est = 100 * row.estimate
            kinds.append(v)
            rows.append({"metric": m, "pair": pairs[yi], "planner_a": row.planner_a,
                         "planner_b": row.planner_b, "estimate_pp": est, "low_pp": lo,
                         "high_pp": hi, "truncated": bool(lo != 100 * row.low
                                                          or hi != 100 * row.high),
                         "verdict": v})
        # one errorbar artist per verdict and panel (not per pair): far fewer artists
        # to lay out and draw, the same picture
        d = pd.DataFrame(rows[len(rows) - len(kinds):]).assign(y=y[:len(kinds)])
        for v, g in d.groupby("verdict", sort=True):
            ax.errorbar(g.estimate_pp, g.y, xerr=[g.estimate_pp - g.low_pp,
                                                   g.high_pp - g.estimate_pp],
                        fmt=shape[v], color="black", mfc=fill[v], ms=4, capsize=1.5, lw=0.8,
                        mew=0.8)
        ax.set_xlim(-105, 105)
        # no labels at +-100: side by side they would run into the next panel's
        ax.set_xticks([-50, 0, 50])
        ax.set_xticks([-100, 100], minor=True)
        ax.set_ylim(len(pairs) - 0.5, -0.5)
        ax.axvline(0, color="0.4", ls="--", lw=0.6)
        ax.set_title(METRIC_LABELS.get(m, m))
        ax.grid(axis="x", color="0.85", lw=0.4)
        if stacked or i == 0:
            ax.set_yticks(y, pairs)
    axes[-1 if stacked else len(axes) // 2].set_xlabel(
        "A \u2212 B (pp)" if stacked
        else "difference A \u2212 B (percentage points)")
    from matplotlib.lines import Line2D
    labels = {**VERDICT_TEXT, "set_aside": "set aside (zero SE, not estimable)"}
    keys = ["a>b", "b>a", "tie"] + (["set_aside"] if t.set_aside.any() else [])
    handles = [Line2D([], [], marker=shape[k], color="black", mfc=fill[k], ls="", ms=4,
                      label=labels[k]) for k in keys]
    fig.legend(handles=handles, loc="outside lower center", ncol=2 if stacked else len(keys),
               frameon=False, columnspacing=1.2, handletextpad=0.3)
    fig.suptitle(f"Pairwise contrasts A \u2212 B with{chr(10) if stacked else ' '}"
                 f"simultaneous {100 * r.confidence_level:g}% intervals")
    return FigureOutput(name="fig06_pairwise_forest", title="Pairwise contrasts (forest plot)",
                        paper_ref="paper C.5", figure=fig, data=pd.DataFrame(rows),
                        notes="Table 6 as a forest plot: A \u2212 B for every pair and "
                              "metric with its simultaneous interval. "
                              + _method_note(results, r) + " Plotted bounds are truncated to "
                              "[-100, 100] pp (column truncated); a cross marks a contrast "
                              "set aside for zero SE. " + METHODS_POINTER)

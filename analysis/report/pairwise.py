"""Table 6 and Figure 6: simultaneous pairwise planner contrasts (paper C.5)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from .common import CLIP_NOTE, MARKERS, Skip, new_figure, pct_ci
from .context import METRIC_LABELS, few_clusters_note
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
                     "its two means' exact bounds)",
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


def _method_note(results, r) -> str:
    cfg = results.config
    if r.method == "mover_kg_maxz":
        fam = (f"{r.family_size} contrasts ({int(r.table.zero_se.sum())} with zero standard "
               f"error, kept with honest intervals), method {r.method} "
               f"({METHOD_TEXT[r.method]}), family max-|z| = {r.critical_value:.3f}, i.e. "
               f"each interval at {100 * r.per_contrast_level:.2f}%")
    else:
        fam = (f"{r.family_size} contrasts ({len(r.table)} pairs x metrics; "
               f"{len(r.set_aside)} with zero standard error set aside and flagged), method "
               f"{r.method} ({METHOD_TEXT.get(r.method, r.method)}), critical "
               f"|t| = {r.critical_value:.3f}")
    return (f"Simultaneous {100 * r.confidence_level:g}% intervals over the family of "
            f"{fam}; resampling unit: episode ({r.n_clusters} "
            f"episodes); resamples: {r.n_resamples}; seed: {cfg.seed}. p-values are "
            "family-wise (single-step and Romano-Wolf stepdown). An interval containing 0 "
            "is a tie, not a ranking. " + getattr(r, "note", "") + few_clusters_note(r))


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
        check_note = (f" Cross-check: Bonferroni-t intervals (CR1 standard errors, t with G-1 "
                      f"degrees of freedom, critical |t| = {c.critical_value:.3f}, no "
                      f"resampling) give a different verdict for {differ} of "
                      f"{r.family_size} contrasts.")
    return Table(
        name="table06_pairwise_contrasts", title="Pairwise simultaneous planner contrasts",
        paper_ref="paper C.5", data=data, display=disp,
        notes=(f"{n_ties} of {r.family_size} contrasts are ties. Differences are task-macro "
               "means of A minus B on the same tasks, in percentage points. "
               + _method_note(results, r) + check_note + " " + CLIP_NOTE))


def pairwise_figure(export, results) -> FigureOutput:
    """Forest plot: one panel per metric, one row per pair, marker shape by verdict."""
    r = _need(results)
    t = r.table
    metrics = list(pd.unique(t.metric))
    pairs = list(pd.unique(t.planner_a + " - " + t.planner_b))
    fig = new_figure(3.0 * len(metrics) + 1.5, 0.28 * len(pairs) + 1.6)
    axes = fig.subplots(1, len(metrics), sharey=True, squeeze=False)[0]
    shape = {"a>b": MARKERS[1], "b>a": MARKERS[2], "tie": MARKERS[0]}
    fill = {"a>b": "black", "b>a": "black", "tie": "white"}
    rows = []
    y = np.arange(len(pairs))
    for ax, m in zip(axes, metrics):
        part = t[t.metric == m]
        for yi, row in zip(y, part.itertuples()):
            v = "set_aside" if row.set_aside else row.verdict
            # bounds truncated to the parameter space [-100, 100] pp (flagged in the data)
            lo, hi = max(100 * row.low, -100.0), min(100 * row.high, 100.0)
            est = 100 * row.estimate
            ax.errorbar(est, yi, xerr=[[est - lo], [hi - est]],
                        fmt=shape.get(row.verdict, "x") if not row.set_aside else "x",
                        color="black", mfc=fill.get(row.verdict, "black"), ms=5, capsize=2,
                        lw=1)
            rows.append({"metric": m, "pair": pairs[yi], "planner_a": row.planner_a,
                         "planner_b": row.planner_b, "estimate_pp": est, "low_pp": lo,
                         "high_pp": hi, "truncated": bool(lo != 100 * row.low
                                                          or hi != 100 * row.high),
                         "verdict": v})
        ax.set_xlim(-105, 105)
        ax.axvline(0, color="0.4", ls="--", lw=0.8)
        ax.set_title(METRIC_LABELS.get(m, m), fontsize=9)
        ax.set_xlabel("difference A - B (percentage points)", fontsize=8)
        ax.grid(axis="x", color="0.85", lw=0.5)
    axes[0].set_yticks(y, pairs, fontsize=7)
    axes[0].invert_yaxis()
    axes[0].set_ylabel("pair A - B")
    from matplotlib.lines import Line2D
    handles = [Line2D([], [], marker=shape[k], color="black", mfc=fill[k], ls="",
                      label=VERDICT_TEXT[k]) for k in ("a>b", "b>a", "tie")]
    fig.legend(handles=handles, loc="outside lower center", ncol=3, fontsize=8, frameon=False)
    fig.suptitle(f"Pairwise contrasts with simultaneous {100 * r.confidence_level:g}% intervals",
                 fontsize=10)
    return FigureOutput(name="fig06_pairwise_forest", title="Pairwise contrasts (forest plot)",
                        paper_ref="paper C.5", figure=fig, data=pd.DataFrame(rows),
                        notes=_method_note(results, r) + " Plotted bounds are truncated to "
                              "[-100, 100] pp (column truncated); a cross marks a contrast "
                              "set aside for zero SE.")

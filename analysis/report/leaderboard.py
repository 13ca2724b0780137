"""Table 17: leaderboard tiers per contrast metric, from Table 6's simultaneous family."""
from __future__ import annotations

import pandas as pd

from ..stats.tiers import leaderboard_tiers
from .common import METHODS_POINTER
from .context import METRIC_LABELS
from .output import Table
from .context import few_clusters_note
from .pairwise import _need, draws_text

__all__ = ["leaderboard_tiers_table", "MDD_POWER", "MDD_SIMS"]

#: Power at which the minimum detectable difference is stated (issue 35).
MDD_POWER = 0.8
#: Simulated datasets behind each metric's MDD (Monte Carlo SE of the power at the
#: printed MDD: sqrt(0.8 * 0.2 / 400) = 0.02).
MDD_SIMS = 400


def _join(values) -> str:
    return ";".join(str(v) for v in values)


def _family_note(results, fam) -> str:
    """The family the tiers read (Table 6's), in one sentence."""
    level = (f", i.e. each interval at {100 * fam.per_contrast_level:.2f}%"
             if fam.per_contrast_level == fam.per_contrast_level else "")
    return (f"Family: Table 6's simultaneous {100 * fam.confidence_level:g}% intervals, "
            f"method {fam.method}, {fam.family_size} contrasts, critical value "
            f"{fam.critical_value:.3f}{level}; clustering unit: episode "
            f"({fam.n_clusters} episodes); "
            f"{draws_text(fam.method, fam.n_resamples, results.config.seed)}."
            + few_clusters_note(fam))


def leaderboard_tiers_table(export, results) -> Table:
    """Per contrast metric: each planner's rank, mean, tier(s) and the planners the
    family separates it from; the metric's minimum detectable difference at 80% power."""
    fam = _need(results)
    pt = results.planner_tasks
    metrics = list(pd.unique(fam.table.metric))
    means = pd.DataFrame([{"planner": p, "metric": m, "estimate": float(v)}
                          for m in metrics
                          for p, v in pt.groupby("label")[m].mean().items()])
    paired = set(pd.unique(fam.table[["planner_a", "planner_b"]].to_numpy().ravel()))
    r = leaderboard_tiers(fam, means=means, power=MDD_POWER,
                          data=pt[pt.label.isin(paired)], planner_col="label",
                          n_sims=MDD_SIMS, seed=results.config.seed)
    t = r.table.merge(r.mdd, on="metric", how="left")
    data = pd.DataFrame({
        "metric": t.metric, "rank": t["rank"], "planner": t.planner,
        "estimate": t.estimate, "vs_average": t.vs_average,
        "tiers": t.tiers.map(_join), "top_tier": t.top_tier,
        "separated_from": t.separated_from.map(_join),
        "mdd_power": r.power, "mdd_median": t.mdd_median, "mdd_min": t.mdd_min,
        "mdd_max": t.mdd_max, "mdd_pairs": t.n_pairs, "mdd_power_mcse": t.power_mcse,
    })
    first = ~t.metric.duplicated()
    pct = f"{100 * r.power:g}%"
    disp = pd.DataFrame({
        "metric": [METRIC_LABELS.get(m, m) if f else "" for m, f in zip(t.metric, first)],
        "rank": t["rank"], "planner": t.planner,
        "mean (%)": [f"{100 * e:.1f}" for e in t.estimate],
        "tier(s)": t.tiers.map(lambda v: ", ".join(map(str, v))),
        "separated from": t.separated_from.map(lambda v: ", ".join(v) if v else "none"),
        f"MDD at {pct} power (pp)": [
            (f"{100 * a:.1f} (pooled over {n} pairs)"
             if f and n else ("no pair with nonzero SE" if f else ""))
            for a, n, f in zip(t.mdd_median, t.n_pairs, first)],
    })
    mcse = float(r.mdd.power_mcse.max()) if len(r.mdd) else float("nan")
    n_top = r.table.groupby("metric", sort=False).top_tier.sum()
    tops = "; ".join(f"{METRIC_LABELS.get(m, m)}: {int(n_top[m])} of "
                     f"{int((r.table.metric == m).sum())} planners in tier 1"
                     for m in metrics)
    notes = (
        "Two planners share a tier unless the simultaneous family of Table 6 separates "
        "them (their interval excludes 0), so a planner can sit in two tiers. "
        f"{tops}. Tiers are the maximal groups of planners no two of which are separated "
        "(compact letter display, Piepho 2004), numbered from the best by their members' "
        "ranks; rank orders the planners by their task-macro mean (equal means share a "
        "rank). Separated from: the planners whose contrast with this one excludes 0. "
        f"MDD: the smallest true difference d that the family separates with {pct} "
        "probability, calibrated by simulation (analysis.stats.tiers.calibrated_difference): "
        f"{MDD_SIMS} datasets with the committed episodes (their task counts), two planners "
        "at q and q + d, q the planners' mean rate (mirrored to at most 50%), with the "
        "metric's pooled design (harmonic mean of the pairs' effective numbers of tasks, "
        "their mean correlation, the tasks' variance), on each of which the family's own "
        "decision is taken (Korn-Graubard intervals with each dataset's df, MOVER, the "
        "t(G-1) floor); d by bisection on the same draws, seed "
        f"{results.config.seed}; one value per metric (the pooled pair), {pct} power "
        f"+/- {100 * mcse:.0f} points (Monte Carlo SE of the simulated power); inf: no "
        "difference the rates leave room for reaches that power; the CSV keeps the "
        "fractions. Calibration under the "
        "committed episode structure (identical planners in different tiers; power, also "
        "at the printed MDD): docs/statistics.md, Leaderboard tiers. " + _family_note(results, fam) + " "
        + METHODS_POINTER)
    return Table(name="table17_leaderboard_tiers", title="Leaderboard tiers per contrast metric",
                 paper_ref="paper C.5", data=data, display=disp, notes=notes)

"""One function per table and figure (README.md, "Tables and figures"; tables/README.md).

Each builder takes the loaded export and the statistics results
(:class:`analysis.report.Results`) and returns a :class:`Table` or
:class:`FigureOutput`, or raises :class:`Skip` with the reason the export cannot support
it. :func:`build_all` computes the statistics once and runs every builder in paper order;
skipped artefacts come back as :class:`Skipped` entries (listed in ``tables/README.md``).
"""
from .audit import validation_audit
from .cohort import cohort_scope
from .common import Skip
from .context import StatsConfig, compute
from .example import example_task
from .grounding import grounding_table
from .ledger import ledger_table
from .failures import condition_ledger_table, failure_labels_figure, failure_labels_table
from .execution import (reobservation_excerpt, repair_excerpt, step_level_execution,
                        trace_excerpt)
from .memory import (memory_counters, memory_study_table, paired_outcomes,
                     quarter_profiles_figure, quarter_profiles_table)
from .output import FigureOutput, Skipped, Table
from .render import figure_style, render_figure, render_table
from .results import Results
from .pairwise import draws_text, pairwise_figure, pairwise_table
from .leaderboard import leaderboard_tiers_table
from .planners import endpoints_figure, endpoints_table, planner_results, tier_results

__all__ = ["FigureOutput", "Results", "Skip", "Skipped", "StatsConfig", "Table", "BUILDERS",
           "METHOD_KIND", "method_text",
           "build_all", "compute", "render_figure", "render_table"]

#: (artefact name, title, paper section, builder) in paper order (README.md, "Tables and figures").
BUILDERS = [
    ("table01_example_task", "Example task", "paper Table 1 and A.4", example_task),
    ("table02_cohort_scope", "Cohort and artifact scope", "paper sections 3 and F, Table 20",
     lambda export, results: cohort_scope(export)),
    ("table03_validation_audit", "Validation audit", "paper 6.2 and C.4", validation_audit),
    ("table04_planner_results", "Planner results", "paper 6.3", planner_results),
    ("table05_endpoints", "Task endpoints per planner", "paper Figure 2", endpoints_table),
    ("fig05_endpoints", "Task endpoints per planner", "paper Figure 2", endpoints_figure),
    ("table06_pairwise_contrasts", "Pairwise simultaneous contrasts", "paper C.5",
     pairwise_table),
    ("fig06_pairwise_forest", "Pairwise contrasts (forest plot)", "paper C.5",
     pairwise_figure),
    ("table07_contract_tiers", "Results by contract tier", "paper 6.3", tier_results),
    ("table08_memory_study", "Memory study", "paper 6.4", memory_study_table),
    ("table09_paired_outcomes", "Paired task outcomes", "paper Table 18", paired_outcomes),
    ("table10_quarter_profiles", "Resource profiles by episode quarter",
     "paper Figure 3 and C.6", quarter_profiles_table),
    ("fig10_quarter_profiles", "Resource profiles by episode quarter",
     "paper Figure 3 and C.6", quarter_profiles_figure),
    ("table11_memory_counters", "Memory counters", "paper E.6", memory_counters),
    ("table12_step_level_execution", "Step-level execution", "paper Table 17",
     step_level_execution),
    ("table13_trace_excerpt", "Trace excerpt", "paper Table 19", trace_excerpt),
    ("table13_repair_excerpt", "Executor repair versus planner actions", "paper E.4",
     repair_excerpt),
    ("table13_reobservation_excerpt", "Re-observing an anchor after a state change",
     "paper E.5", reobservation_excerpt),
    ("table14_grounding", "Grounding: observed shares per suite",
     "paper 3 and 7",
     lambda export, results: grounding_table(export)),
    ("table14_ledger", "Completeness ledger: each unit's end-state rows by reason",
     "paper 3 and 7", lambda export, results: ledger_table(export)),
    ("table15_failure_labels", "Failure labels per planner", "paper 6.3 and E.1",
     failure_labels_table),
    ("fig15_failure_labels", "Failure labels per planner", "paper 6.3 and E.1",
     failure_labels_figure),
    ("table16_condition_ledger", "Condition progress ledger", "paper 6.3",
     condition_ledger_table),
    ("table17_leaderboard_tiers", "Leaderboard tiers per contrast metric", "paper C.5",
     leaderboard_tiers_table),
]


#: How each artefact's numbers are obtained (rendered into tables/README.md).
METHOD_KIND = {
    "table04_planner_results": "bootstrap", "table05_endpoints": "bootstrap",
    "fig05_endpoints": "bootstrap",
    "table06_pairwise_contrasts": "pairwise", "fig06_pairwise_forest": "pairwise",
    "table17_leaderboard_tiers": "pairwise",
    "table07_contract_tiers": "bootstrap", "table08_memory_study": "bootstrap",
    "table09_paired_outcomes": "exact", "table10_quarter_profiles": "bootstrap",
    "fig10_quarter_profiles": "bootstrap", "table11_memory_counters": "bootstrap",
    "table15_failure_labels": "bootstrap", "table16_condition_ledger": "bootstrap",
}


def method_text(name: str, results) -> str:
    """Method, resampling unit, resamples, level and seed of one artefact."""
    kind = METHOD_KIND.get(name)
    cfg = results.config
    if kind == "bootstrap":
        return cfg.describe()
    if kind == "pairwise":
        r = results.pairwise
        n = r.n_resamples if r is not None else cfg.n_resamples
        return (f"Simultaneous {cfg.level_pct} intervals, method {cfg.pairwise}; "
                f"clustering unit: episode; {draws_text(cfg.pairwise, n, cfg.seed)}; "
                f"contrast metrics: {', '.join(cfg.contrast_metrics)}.")
    if kind == "exact":
        return ("Exact McNemar (binomial, assumes independent tasks) and exact cluster "
                "sign-flip (all 2^G episode sign patterns); no resampling, no seed.")
    return "Counts and records read from the export; nothing estimated."


def build_all(export, cfg=None, progress=None, results=None) -> list:
    """Every table and figure, in paper order (README.md, "Tables and figures").

    Statistics are computed once (``results`` may be passed in); an artefact the export
    cannot support is returned as :class:`Skipped` with its reason.
    """
    if results is None:
        results = compute(export, cfg, progress=progress)
    out = []
    for name, title, ref, build in BUILDERS:
        if progress:
            progress(name)
        try:
            if name.startswith("fig"):
                with figure_style():  # print-size fonts; matplotlib imported only here
                    out.append(build(export, results))
            else:
                out.append(build(export, results))
        except Skip as exc:
            out.append(Skipped(name=name, title=title, paper_ref=ref, reason=str(exc)))
    return out

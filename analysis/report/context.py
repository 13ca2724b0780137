"""Metrics and statistics computed once for every table and figure (paper 6.3 and 6.4,
appendix C.5 and C.6: task metrics, episode-cluster intervals, simultaneous contrasts,
the paired memory study).

:func:`compute` runs ``task_metrics`` and every statistics call (cluster bootstrap,
simultaneous pairwise contrasts, paired memory conditions, quarter profiles) with the
settings of ``configs/tables.yaml`` (``stats.*``), and returns a :class:`Results` that
the builders read. Nothing here formats; nothing in the builders resamples.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..metrics import task_metrics
from ..stats import (MIN_CLUSTERS, PAIRWISE_DEFAULT_METHOD, cluster_bootstrap,
                     pairwise_simultaneous)
from .results import Results

__all__ = ["StatsConfig", "Results", "compute", "PLANNER_METRICS", "METRIC_LABELS",
           "memory_pairs", "few_clusters_note", "run_names_note"]

#: Table 4 metrics: (task_metrics column, display label). NaN entries (other tier) are
#: left out of their mean, so ``success_terminal`` gives Strict-TSR directly.
PLANNER_METRICS = (
    ("success", "Operational-TSR"),
    ("success_terminal", "Strict-TSR"),
    ("gcr", "GCR"),
    ("gcr_terminal", "GCR (terminal)"),
    ("gcr_event", "GCR (event)"),
    ("action_validity", "Action validity"),
    ("completed", "Completed-run rate"),
    ("reference_coverage", "Reference coverage"),
)
METRIC_LABELS = dict(PLANNER_METRICS) | {"completed_rate": "Completed-run rate"}

_METHOD_TEXT = {
    "auto": ("Korn-Graubard cluster-adjusted Clopper-Pearson intervals for rates and "
             "fractions in [0, 1] (effective number of tasks from the CR1 variance, design "
             "effect at least 1, Satterthwaite degrees of freedom; exact bounds at 0 or n/n), "
             "episode-cluster bootstrap-t for unbounded metrics"),
    "kg_cp": "Korn-Graubard cluster-adjusted Clopper-Pearson intervals (no resampling)",
    "bootstrap_t": "episode-cluster bootstrap-t (CR1 SE re-estimated in every replicate)",
    "cr1_t": "CR1 cluster-robust SE with t(G-1) quantiles",
    "percentile": "episode-cluster percentile bootstrap",
    "basic": "episode-cluster basic bootstrap",
    "bca": "episode-cluster BCa bootstrap",
}


@dataclass(frozen=True)
class StatsConfig:
    """The ``stats`` block of ``configs/tables.yaml``."""

    n_resamples: int = 10_000
    confidence_level: float = 0.95
    seed: int = 0
    method: str = "auto"
    pairwise_method: str = "default"
    contrast_metrics: tuple = ("action_validity", "completed", "gcr")

    @classmethod
    def from_cfg(cls, cfg) -> "StatsConfig":
        s = dict((cfg or {}).get("stats", {}) or {})
        base = cls()
        return cls(
            n_resamples=int(s.get("n_resamples", base.n_resamples)),
            confidence_level=float(s.get("confidence_level", base.confidence_level)),
            seed=int(s.get("seed", base.seed)),
            method=str(s.get("method", base.method)),
            pairwise_method=str(s.get("pairwise_method", base.pairwise_method)),
            contrast_metrics=tuple(s.get("contrast_metrics", base.contrast_metrics)),
        )

    @property
    def pairwise(self) -> str:
        return PAIRWISE_DEFAULT_METHOD if self.pairwise_method == "default" else \
            self.pairwise_method

    @property
    def level_pct(self) -> str:
        return f"{100 * self.confidence_level:g}%"

    def describe(self, method: str | None = None, n_resamples: int | None = None) -> str:
        """One sentence: method, clustering unit, resamples (or that there are none),
        level and seed; with ``bca``, also what an ``n/a`` bound means.

        >>> StatsConfig(method="cr1_t").describe()  # doctest: +ELLIPSIS
        'Intervals: 95% CR1 cluster-robust SE ...; no resampling and no seed.'
        """
        method = method or self.method
        n = self.n_resamples if n_resamples is None else n_resamples
        text = _METHOD_TEXT.get(method, method)
        if method == "cr1_t":
            return (f"Intervals: {self.level_pct} {text}; clustering unit: episode; "
                    "no resampling and no seed.")
        out = (f"Intervals: {self.level_pct} {text}; resampling unit: episode; "
               f"resamples: {n}; seed: {self.seed}.")
        if method == "bca":
            out += " " + BCA_NA_NOTE
        return out

    def brief(self) -> str:
        """The one-line method statement of a table note (the full text is written once,
        in tables/README.md).

        >>> StatsConfig().brief()
        'Intervals: 95% Korn-Graubard cluster-adjusted Clopper-Pearson for rates and fractions, episode-cluster bootstrap-t otherwise; resampling unit: episode; resamples: 10000; seed: 0.'
        """
        text = _METHOD_SHORT.get(self.method, self.method)
        if self.method == "cr1_t":
            return (f"Intervals: {self.level_pct} {text}; clustering unit: episode; "
                    "no resampling and no seed.")
        out = (f"Intervals: {self.level_pct} {text}; resampling unit: episode; "
               f"resamples: {self.n_resamples}; seed: {self.seed}.")
        if self.method == "bca":
            out += " " + BCA_NA_NOTE
        return out


#: The single-mean methods in a few words (the one-line note of each table).
_METHOD_SHORT = {
    "auto": "Korn-Graubard cluster-adjusted Clopper-Pearson for rates and fractions, "
            "episode-cluster bootstrap-t otherwise",
    "kg_cp": "Korn-Graubard cluster-adjusted Clopper-Pearson",
    "bootstrap_t": "episode-cluster bootstrap-t", "cr1_t": "CR1 cluster-robust t",
    "percentile": "episode-cluster percentile bootstrap",
    "basic": "episode-cluster basic bootstrap", "bca": "episode-cluster BCa bootstrap",
}

#: Why a BCa bound can be missing (``analysis.stats.bootstrap._bca_bounds``).
BCA_NA_NOTE = ("A bound shown as n/a (an interval shown as not estimable when both are) is "
               "undefined under BCa: the bias correction is "
               "infinite when no resample falls on one side of the estimate (typically a "
               "rate of 0% or 100% in every episode), or the acceleration is 0/0 when "
               "leaving out any one episode does not change the estimate.")


def few_clusters_note(*stats_results) -> str:
    """The few-episode warnings of statistics results, as a sentence for a table note
    ("" when every interval rests on at least 8 episodes)."""
    texts = [w for r in stats_results if r is not None for w in getattr(r, "warnings", ())]
    return (" WARNING: " + " ".join(dict.fromkeys(texts))) if texts else ""


def memory_pairs(tasks: pd.DataFrame) -> list[str]:
    """Run names (a planner's name unless the run was named apart from it) with both a
    persistent and a reset run on the memory suite."""
    m = tasks[tasks.suite == "memory"]
    col = "run_name" if "run_name" in m.columns else "planner"
    both = m.groupby(col)["memory"].agg(lambda s: {"persistent", "reset"} <= set(s))
    return sorted(both[both].index)


def _labels(tasks: pd.DataFrame) -> pd.Series:
    """The run's name (the planner's unless ``run_name`` was given), or ``name (memory)``
    where a name has several memory runs on a suite."""
    if "run_name" not in tasks.columns:
        tasks = tasks.assign(run_name=tasks.planner)
    runs = tasks.drop_duplicates("run_id")[["run_id", "run_name", "memory", "suite"]]
    multi = runs.groupby(["suite", "run_name"])["memory"].transform("nunique") > 1
    lab = np.where(multi, runs.run_name + " (" + runs.memory + ")", runs.run_name)
    return tasks.run_id.map(dict(zip(runs.run_id, lab)))


def run_names_note(tasks: pd.DataFrame, suite: str | None = "planner") -> str:
    """A sentence naming the planner of every run whose name differs from it ("" when
    every run is named as its planner), so a table row labelled with a run's name still
    says which planner made it.

    >>> tm = pd.DataFrame({"run_id": ["a", "b"], "planner": ["chat", "lexicon"],
    ...                    "run_name": ["chat-small", "lexicon"], "suite": ["planner"] * 2})
    >>> run_names_note(tm)
    ' Runs named apart from their planner: chat-small (planner chat).'
    """
    if "run_name" not in tasks.columns:
        return ""
    t = tasks if suite is None else tasks[tasks.suite == suite]
    runs = t.drop_duplicates("run_name")
    diff = runs[runs.run_name != runs.planner].sort_values("run_name")
    if diff.empty:
        return ""
    return (" Runs named apart from their planner: "
            + "; ".join(f"{r.run_name} (planner {r.planner})" for r in diff.itertuples()) + ".")


def _boot(cfg: StatsConfig, df, cols, by):
    return cluster_bootstrap(df, cols, cluster_col="episode_id", by=by,
                             n_resamples=cfg.n_resamples, method=cfg.method,
                             confidence_level=cfg.confidence_level, seed=cfg.seed,
                             too_few="not_estimable")


def _float_cols(df: pd.DataFrame, cols) -> pd.DataFrame:
    out = df.copy()
    for c in cols:
        out[c] = out[c].astype(float)
    return out


def compute(export, cfg=None, progress=None, workers: int = 1) -> Results:
    """Task metrics and every statistic the tables and figures use. ``workers=2``
    re-executes about half of the planner suite's attempts in a forked process
    (:func:`.failure_labels.derive_failures`; the same results)."""
    say = progress or (lambda msg: None)
    scfg = StatsConfig.from_cfg(cfg)
    say("metrics: task_metrics")
    tm = task_metrics(export)
    names = getattr(export, "runs", None)
    if names is not None and "run_name" in names.columns:
        tm["run_name"] = tm.run_id.map(dict(zip(names.run_id, names.run_name)))
    else:   # a hand-made export frame without run names: each run named as its planner
        tm["run_name"] = tm.planner
    tm["label"] = _labels(tm) if len(tm) else pd.Series(dtype=object)
    tm = _float_cols(tm, ["success", "completed"])
    pt = tm[tm.suite == "planner"].reset_index(drop=True)
    labels = sorted(pt.label.unique())
    skipped, memory = {}, {}
    res = Results(scfg, tm, pt, labels, export=export, memory=memory, skipped=skipped)
    if pt.empty:
        skipped["planner"] = "the export holds no run on the planner suite"
    else:
        say(f"statistics: cluster bootstrap of {len(PLANNER_METRICS)} metrics x "
            f"{len(labels)} planners ({scfg.n_resamples} resamples)")
        res.planner_bootstrap = _boot(scfg, pt, [c for c, _ in PLANNER_METRICS], ["label"])
        from ..metrics import ENDPOINTS
        ep = pt[["label", "episode_id"]].copy()
        for e in ENDPOINTS:
            ep[e] = (pt.endpoint == e).astype(float)
        say("statistics: endpoint shares")
        res.endpoint_bootstrap = _boot(scfg, ep, list(ENDPOINTS), ["label"])
        say("statistics: results by contract tier")
        res.tier_bootstrap = _boot(scfg, pt, ["success", "gcr", "action_validity", "completed"],
                              ["label", "tier"])
        n_eps = pt.episode_id.nunique()
        # contrasts pair every task: a limited run (run limit=N, tabulated only with
        # allow_limited=true) covers fewer tasks and stays out of them
        whole = set(pt.task_id)
        paired = [lab for lab in labels if set(pt.task_id[pt.label == lab]) == whole]
        if len(paired) < len(labels):
            skipped["pairwise_limited"] = (
                "left out of the contrasts (limited runs, fewer tasks): "
                + ", ".join(lab for lab in labels if lab not in paired))
            pt_pairs = pt[pt.label.isin(paired)].reset_index(drop=True)
        else:
            pt_pairs = pt
        if len(paired) < 2:
            skipped["pairwise"] = (f"only {len(paired)} planner on the planner suite; "
                                       "contrasts need at least two")
        elif n_eps < MIN_CLUSTERS:  # e.g. a subset export cut to one or two episodes
            skipped["pairwise"] = (f"the planner suite has {n_eps} episode(s); "
                                       f"episode-cluster contrasts need at least "
                                       f"{MIN_CLUSTERS}")
        else:
            metrics = list(scfg.contrast_metrics)
            say(f"statistics: {len(paired) * (len(paired) - 1) // 2} pairs x {len(metrics)} "
                f"metrics, simultaneous ({scfg.pairwise})")
            res.pairwise = pairwise_simultaneous(
                pt_pairs, metrics, planner_col="label", method=scfg.pairwise,
                n_resamples=scfg.n_resamples, confidence_level=scfg.confidence_level,
                seed=scfg.seed, planners=paired)
            # Closed-form, resampling-free family-wise intervals: a verdict that differs
            # between the two is worth a reader's second look.
            res.pairwise_check = pairwise_simultaneous(
                pt_pairs, metrics, planner_col="label", method="bonferroni_t",
                n_resamples=scfg.n_resamples, confidence_level=scfg.confidence_level,
                seed=scfg.seed, planners=paired)
    if not pt.empty:
        say("re-execution: failure labels and condition ledger of the planner suite")
        from ..executor.failures import DerivationError
        from .failure_labels import derive_failures
        runs = pt.drop_duplicates("run_id").set_index("run_id").label
        try:
            res.failures = derive_failures(export, {r: runs[r] for r in sorted(runs.index)},
                                           workers=workers)
        except DerivationError as exc:  # records that do not re-execute have no labels
            skipped["failures"] = (f"the records do not re-execute ({exc}); python -m "
                                       "analysis.reexecute names the first divergence")
    pairs = memory_pairs(tm)
    mem = tm[tm.suite == "memory"]
    whole_mem = set(mem.task_id)
    partial = [p for p in pairs if any(set(mem.task_id[mem.run_id == r]) != whole_mem
                                       for r in mem.run_id[mem.planner == p].unique())]
    if partial:  # the paired memory study pairs every task: limited runs stay out
        skipped["memory_limited"] = ("left out of the memory study (limited runs, fewer "
                                         "tasks): " + ", ".join(partial))
        pairs = [p for p in pairs if p not in partial]
    if not pairs:
        skipped["memory"] = ("the export holds no planner with both a persistent and a "
                                 "reset run on the memory suite")
    n_mem = tm[tm.suite == "memory"].episode_id.nunique()
    if pairs and n_mem < MIN_CLUSTERS:
        skipped["memory"] = (f"the memory suite has {n_mem} episode(s); the paired "
                                 f"episode-cluster statistics need at least {MIN_CLUSTERS}")
        pairs = []
    for planner in pairs:
        say(f"statistics: memory study of {planner}")
        from .memory_stats import memory_study
        memory[planner] = memory_study(export, tm, planner, scfg)
    return res

"""ego2world-analysis: frozen Ego2World records, their metrics and statistics, from Python.

The public API is this short list (``docs/api.md``); everything else is internal.

>>> import analysis
>>> export = analysis.load()                          # hash-verified once
>>> t4 = export.results().table("planner_results")    # = tables/table04_planner_results.csv
>>> sorted(t4.planner.unique())[:2]
['belief_search', 'greedy_hints']

* :func:`load` -> :class:`Export` (DataFrames with planner, suite and memory joined in;
  raw records of a run or a task), :meth:`Export.results` -> :class:`Results` (every
  table's data and the statistics objects behind it).
* metrics: :func:`task_metrics`, :func:`macro` (:mod:`analysis.metrics`).
* statistics: :func:`cluster_bootstrap`, :func:`pairwise_simultaneous`,
  :func:`paired_conditions`, :func:`quarter_profiles`, :func:`mcnemar_exact`,
  :func:`sign_flip_p` (:mod:`analysis.stats`).
* :func:`verify` (hashes and schemas only) and the errors :class:`IntegrityError`,
  :class:`ConfigError`.
"""
from __future__ import annotations

__version__ = "0.1.0"

# Loaded on first use: the commands (python -m analysis.tables, ...) import this package
# first and must not pay for pandas and scipy before they need them.
_EXPORTS = {
    "load": "api", "Export": "api", "Results": "api",
    "task_metrics": "metrics", "macro": "metrics",
    "cluster_bootstrap": "stats", "pairwise_simultaneous": "stats",
    "paired_conditions": "stats", "quarter_profiles": "stats", "mcnemar_exact": "stats",
    "sign_flip_p": "stats",
    "verify": "records", "IntegrityError": "records",
    "ConfigError": "settings",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'analysis' has no attribute {name!r}")
    import importlib
    value = getattr(importlib.import_module(f"analysis.{module}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))

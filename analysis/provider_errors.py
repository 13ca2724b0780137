"""Runs with ``provider_error`` groups are incomplete: report them, never score them.

A group ends ``provider_error`` when a model planner's endpoint failed after every retry
(:mod:`analysis.planners.llm.client`). ``analysis.run`` does not write such a run into
an export (it keeps the finished episodes for a resume), but records from elsewhere
(``add_planner``) may carry the status. The metrics and report layers call
:func:`split_scorable` first: the runs it returns as incomplete are listed in their own
table and left out of every score.

>>> import pandas as pd
>>> gr = pd.DataFrame({"run_id": ["a", "a", "b"], "status": ["completed", "provider_error", "completed"]})
>>> ok, bad = split_scorable(gr)
>>> sorted(ok.run_id), bad.to_dict("records")
(['b'], [{'run_id': 'a', 'provider_errors': 1, 'groups': 2}])
"""
from __future__ import annotations

__all__ = ["PROVIDER_ERROR", "split_scorable", "require_scorable"]

PROVIDER_ERROR = "provider_error"


def split_scorable(group_records):
    """``(group records of runs without provider errors, one row per incomplete run:
    run_id, provider_errors, groups)``; ``group_records`` is a DataFrame with ``run_id``
    and ``status``."""
    import pandas as pd
    bad = group_records["status"] == PROVIDER_ERROR
    bad_runs = sorted(set(group_records.loc[bad, "run_id"]))
    rows = [{"run_id": r, "provider_errors": int((bad & (group_records["run_id"] == r)).sum()),
             "groups": int((group_records["run_id"] == r).sum())} for r in bad_runs]
    table = pd.DataFrame(rows, columns=["run_id", "provider_errors", "groups"])
    return group_records[~group_records["run_id"].isin(bad_runs)], table


def require_scorable(group_records) -> None:
    """Raise ``ValueError`` naming the first run that has provider errors."""
    _, table = split_scorable(group_records)
    if len(table):
        r = table.iloc[0]
        raise ValueError(f"run {r.run_id}: {r.provider_errors} of {r.groups} groups ended "
                         "provider_error; the run is incomplete and is not scored (rerun its "
                         "analysis.run command to resume)")

"""Table 3: the validation audit (paper 6.2 and C.4)."""
from __future__ import annotations

import pandas as pd

from .common import Skip
from .output import Table

__all__ = ["validation_audit", "AUDIT_ORDER"]

AUDIT_ORDER = ("reference_pass", "initial_fail", "nontrivial", "negative_suite",
               "stress_replay", "stress_witness", "stress_repeat", "stress_immutability",
               "stress_initial_fails", "stress_partial_fails", "stress_wrong_binding_fails",
               "stress_missing_state_fails", "stress_commute", "row_operation", "row_initial_fact",
               "row_condition", "row_state", "row_rows", "row_audit")
_WHAT = {
    "reference_pass": "reference replay satisfies the contract",
    "initial_fail": "recorded initial state fails the contract",
    "nontrivial": "contract is not trivially true",
    "negative_suite": "states differing in one predicate are rejected",
    "stress_replay": "stress: replay reaches the contract",
    "stress_witness": "stress: transition witnesses recorded",
    "stress_repeat": "stress: repeated replay gives identical records",
    "stress_immutability": "stress: invalid actions leave the world unchanged",
    "stress_initial_fails": "stress: initial state fails",
    "stress_partial_fails": "stress: partial execution fails",
    "stress_wrong_binding_fails": "stress: wrong binding fails",
    "stress_missing_state_fails": "stress: missing state fails",
    "stress_commute": "stress: independent updates commute",
    "stress_commute_no_pair": "stress: no independent update pair found (not counted)",
    "executor_replay": "every reference operation of every episode accepted by the executor",
    "row_operation": "row audit: a reference take/put-down's fixture agrees with every deciding raw row",
    "row_initial_fact": "row audit: an initial place agrees with every deciding raw row",
    "row_condition": "row audit: a placement condition agrees with every deciding raw row",
    "row_state": "row audit: the replayed reference state puts each row's object where the row does",
    "row_rows": "row audit: location rows read per episode (informational)",
    "row_audit": "row audit: no compiled fact contradicted by an unambiguous raw row",
    "ledger_expressed": "ledger: a condition expresses end-state rows of its unit",
    "ledger_no_row": "ledger: a condition expresses no row of its unit, with the closed reason why",
}


def validation_audit(export, results=None) -> Table:
    """Pass counts per audit check, plus the tasks left out at admission (by reason)."""
    recs = export.records_of("audit")
    if not recs:
        raise Skip("the export holds no cohort/audit.jsonl records")
    df = pd.DataFrame(recs)
    rank = {c: i for i, c in enumerate(AUDIT_ORDER)}
    rows = []
    for check, part in sorted(df.groupby("check"), key=lambda kv: (rank.get(kv[0], 99), kv[0])):
        n, passed = len(part), int(part.passed.sum())
        rows.append({"check": check, "what": _WHAT.get(check, ""), "records": n,
                     "passed": passed, "failed": n - passed,
                     "result": f"{passed}/{n}"})
    rejected = export.records_of("rejected_task")
    by_reason = pd.Series([r["reason"] for r in rejected]).value_counts().sort_index()
    for reason, n in by_reason.items():
        rows.append({"check": f"rejected: {reason}", "what": "task left out at admission",
                     "records": int(n), "passed": pd.NA, "failed": pd.NA,
                     "result": f"{int(n)} left out"})
    data = pd.DataFrame(rows)
    return Table(
        name="table03_validation_audit", title="Validation audit", paper_ref="paper 6.2 "
        "and C.4", data=data,
        notes="Counts of audit records (cohort/audit.jsonl) and admission rejections "
              "(cohort/rejected.jsonl); no statistic is estimated. Negative suites are one "
              "record per contract predicate and are not independent trajectories; the "
              "stress checks run on a separate small task set.")

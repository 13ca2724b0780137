"""Table 14 (ledger): every end-state row of each suite's units, expressed or dropped, by reason.

The compiler's completeness ledger (:mod:`analysis.compiler.ledger`, docs/compiler.md)
accounts for every add row, unambiguous answered put-down and close or off snippet of
every unit of an exported episode: *expressed* (audit check ``ledger_expressed``, one
record per condition, its detail ``"<n> rows of unit <key>: <row> | <row> ..."``) or
listed in ``dropped.jsonl`` (kind ``ledger``, ``refs.code`` one of
:data:`analysis.compiler.ledger.REASONS`). Per suite, a row counts once: expressed when
the condition citing it belongs to a task of that suite, ``not_in_suite`` when it belongs
to a task of the other suite only.

>>> _kinds("2 rows of unit R/S1: add R/I1 (salt) | placement put-down of 'mug' by q1")
['add', 'placement']
"""
from __future__ import annotations

import pandas as pd

from analysis.compiler.ledger import REASONS

from .common import Skip
from .output import Table

__all__ = ["ledger_table"]

KINDS = ("add", "placement", "snippet")


def _kinds(detail: str) -> list[str]:
    """The row kinds an expressed record's detail lists (``<kind> <what>``, ``|``-separated)."""
    return [r.strip().split(" ", 1)[0] for r in detail.split(": ", 1)[1].split(" | ")]


def ledger_table(export) -> Table:
    """Rows of each suite's units by status: expressed, then each ledger reason."""
    drops = [d for d in export.records_of("dropped_event") if d["kind"] == "ledger"]
    expressed = [a for a in export.records_of("audit") if a["check"] == "ledger_expressed"]
    if not drops and not expressed:
        raise Skip("the export has no completeness ledger (compiled before it): recompile "
                   "with python -m analysis.compile")
    order = ["expressed", *REASONS]
    rows = []
    for suite in sorted(export.records_of("suite"), key=lambda s: s["suite"]):
        eps, tids = set(suite["episode_ids"]), set(suite["task_ids"])
        count: dict = {}
        for a in expressed:
            tid = a["task_id"].rsplit("/", 1)[0]
            if tid.split("/", 1)[0] not in eps:
                continue
            status = "expressed" if tid in tids else "not_in_suite"
            for k in _kinds(a["detail"]):
                count[(status, k)] = count.get((status, k), 0) + 1
        for d in drops:
            if d["episode_id"] in eps:
                k = (d["refs"]["code"], d["refs"]["row"])
                count[k] = count.get(k, 0) + 1
        total = sum(count.values())
        for status in order:
            n = {k: count.get((status, k), 0) for k in KINDS}
            if sum(n.values()):
                rows.append({"suite": suite["suite"], "status": status, **n, "rows": sum(n.values()),
                             "share": sum(n.values()) / total})
    data = pd.DataFrame(rows, columns=["suite", "status", *KINDS, "rows", "share"])
    disp = data.assign(share=data.share.map(lambda v: f"{100 * v:.1f}")).rename(
        columns={"add": "add rows", "placement": "placements", "snippet": "close/off snippets",
                 "share": "share (%)"})
    return Table(
        name="table14_ledger", title="Completeness ledger: each unit's end-state rows by reason",
        paper_ref="paper 3 and 7", data=data, display=disp,
        notes="Every add row, unambiguous answered put-down lasting to its unit's end and last close "
              "or off snippet of an object, in every unit (recipe step, activity row) of the suite's "
              "episodes, counted once: expressed by a condition of the suite's task for that unit, or "
              "the reason it is not (dropped.jsonl kind ledger; the reasons: docs/compiler.md, "
              "The completeness ledger). Share in percent of the suite's rows; the CSV keeps fractions.")

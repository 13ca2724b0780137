"""Shared by the viewer tests: one site of the committed export per test process, and the
expectations computed independently from the API (never from the site's data files).

The example task is found as the tables find it (the task titled "Add Squash" in the
memory suite, else any), and its runs are those whose suite holds it; nothing here names
an ID or a count of the committed export.
"""
from __future__ import annotations

import atexit
import re
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXPORT = REPO / "frozen_exports"


@lru_cache(maxsize=None)
def committed_site() -> Path:
    """The site of the committed export, built once per process (default statistics)."""
    from analysis.view import build
    out = Path(tempfile.mkdtemp(prefix="e2w_view_test_")) / "site"
    atexit.register(shutil.rmtree, out.parent, True)
    build(EXPORT, out)
    return out


@lru_cache(maxsize=None)
def api_export():
    import analysis
    return analysis.load(EXPORT)


def squash_task(export) -> dict:
    """The "Add Squash" task the tables use, preferring one in the memory suite."""
    memory = set(export.suites.task_id[export.suites.suite == "memory"])
    titled = [t for t in export.frozen.records_of("task")
              if re.match(r"add squash\b", t["title"].strip().lower())]   # "Add Squash- Add the amount..."
    assert titled, "the committed export has no task titled Add Squash"
    return next((t for t in titled if t["task_id"] in memory), titled[0])


def runs_of_task(export, task_id: str) -> list[str]:
    suites = set(export.suites.suite[export.suites.task_id == task_id])
    return sorted(export.runs.run_id[export.runs.suite.isin(suites)])


def timeline(g: dict) -> list[tuple]:
    """A group's queries and attempts in the order they happened (FORMAT.md: a query with
    ``after_attempts = k`` came after the group's first k attempts)."""
    out, qs = [], sorted(enumerate(g["queries"]), key=lambda jq: (jq[1]["after_attempts"], jq[0]))
    k = 0
    for a in g["attempts"]:
        while k < len(qs) and qs[k][1]["after_attempts"] <= a["index"]:
            out.append(("query", qs[k][1]))
            k += 1
        out.append(("attempt", a))
    out += [("query", q) for _, q in qs[k:]]
    return out


def _key(step) -> tuple:
    kind, x = step
    if kind == "attempt":
        return (kind, x["source"], None if x["action"] is None else
                (x["action"]["type"], tuple(x["action"]["args"])),
                x["raw"] if x["action"] is None else None, x["status"], tuple(x["failed_checks"]))
    return (kind, x["region"], x["responded"], tuple(x["visible"]), tuple(x["added"]),
            tuple(x["removed"]))


def first_divergence(trace_a: dict, trace_b: dict):
    """(group position, step position, status_only) of the first difference between two
    runs' traces of one task, or None."""
    ga, gb = trace_a["group_records"], trace_b["group_records"]
    for i in range(max(len(ga), len(gb))):
        if i >= len(ga) or i >= len(gb):
            return (i, 0, False)
        sa, sb = timeline(ga[i]), timeline(gb[i])
        for j in range(max(len(sa), len(sb))):
            if j >= len(sa) or j >= len(sb) or _key(sa[j]) != _key(sb[j]):
                return (i, j, False)
        if ga[i]["status"] != gb[i]["status"]:
            return (i, len(sa), True)
    return None


def action_text(a: dict) -> str:
    return f"{a['action']['type']}({', '.join(a['action']['args'])})"

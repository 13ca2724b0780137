"""Numbers measured on the committed export that the docs quote are recomputed here.

Each quoted count is rebuilt from the hash-verified export (``analysis.records.load``) and
the sentence it belongs to must appear in the doc verbatim, so a regenerated cohort that
changes a count fails this test until the doc follows. Results of planners (rates,
intervals) are not quoted in the docs at all: they live in the generated ``tables/``.
"""
from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from analysis.records import IntegrityError, load

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def export():
    try:
        return load(REPO / "frozen_exports")
    except IntegrityError as exc:  # pragma: no cover - a broken checkout
        pytest.fail(f"the committed export does not verify: {exc}")


def _flat(path: str) -> str:
    return re.sub(r"\s+", " ", (REPO / path).read_text())


def _n(v: int) -> str:
    return f"{v:,}"


def test_compiler_doc_counts_are_the_exports(export):
    eps = export.records_of("episode")
    suites = export.suites
    tasks = export.tasks
    planner = tasks[tasks.task_id.isin(suites[suites.suite == "planner"].task_id)]
    memory = tasks[tasks.task_id.isin(suites[suites.suite == "memory"].task_id)]
    assert (memory.tier == "terminal").all()
    facts = Counter(p["source"] for e in eps for p in e["fact_provenance"])
    ops = Counter(op["provenance"]["source"] for e in eps for g in e["groups"]
                  for op in g["operations"])
    rej = Counter(r["reason"] for r in export.records_of("rejected_task"))
    rej_text = ", ".join(f"{n} {reason}" for reason, n in rej.most_common())
    sentence = (
        f"{len(eps)} episodes, {len({e['scene_id'] for e in eps})} scenes, "
        f"{_n(sum(len(e['groups']) for e in eps))} groups; planner suite {len(planner)} "
        f"tasks ({(planner.tier == 'terminal').sum()} terminal, "
        f"{(planner.tier == 'event').sum()} event) on "
        f"{suites[suites.suite == 'planner'].episode_id.nunique()} episodes; memory suite "
        f"{len(memory)} terminal tasks; {len(tasks)} distinct tasks; world facts "
        f"{_n(facts['observed'])} observed / {_n(facts['curated'])} curated; operations "
        f"{_n(ops['observed'])} observed / {_n(ops['curated'])} curated; "
        f"{sum(rej.values())} rejections ({rej_text})")
    doc = _flat("docs/compiler.md")
    assert sentence in doc, sentence
    mean = tasks.n_conditions.mean()
    assert (f"Conditions per task ({len(tasks)} distinct tasks, {tasks.n_conditions.sum()} "
            f"conditions, mean {mean:.2f})") in doc
    for label, part in (("terminal", tasks[tasks.tier == "terminal"]),
                        ("event", tasks[tasks.tier == "event"]),
                        ("planner suite", planner), ("memory suite", memory)):
        by = part.n_conditions.value_counts()
        cells = " | ".join([str(int(by.get(k, 0))) for k in (1, 2, 3)]
                           + [str(int(by[by.index >= 4].sum()))])
        total = int(part.n_conditions.sum())
        tail = (f"{total} (mean {part.n_conditions.mean():.2f})" if "suite" in label
                else str(total))
        row = f"| {label} | {cells} | {len(part)} | {tail} |"
        assert row in doc, row


def test_planner_doc_quotes_no_measured_results():
    """Rates would go stale: docs/planners.md points at the generated tables instead."""
    text = (REPO / "docs" / "planners.md").read_text()
    code_free = re.sub(r"```.*?```", "", text, flags=re.S)
    # settings such as `p_skip` (0.25) are fine; three-decimal rates and counts with
    # thousands separators are what the removed results tables held
    assert not re.findall(r"\b[01]\.\d{3}\b", code_free), "a measured rate in planners.md"
    assert not re.findall(r"\b\d{1,3}(?:,\d{3})+\b", code_free), "a measured count"
    assert "GCR equals Operational-TSR" not in text
    assert "tables/table04_planner_results.md" in text


@pytest.mark.e2e
def test_audit_draw_is_reproducible_and_the_doc_quotes_the_final_draw():
    """`python bench/audit_draw.py` (docs/compiler.md) draws from the committed cohort's
    seed; the doc's final draw names that seed and exactly the drawn tasks."""
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "bench/audit_draw.py"], cwd=REPO, capture_output=True,
                         text=True, check=True).stdout.splitlines()
    seed = out[0].split()[1]
    drawn = [line.split()[1] for line in out[1:]]
    assert len(drawn) == 12 and len(set(drawn)) == 12
    assert [line.split()[0] for line in out[1:]] == (["planner/terminal"] * 4 + ["planner/event"] * 4
                                                    + ["memory/any"] * 4)
    doc = (REPO / "docs" / "compiler.md").read_text()
    final = doc[doc.index(f"(seed `{seed}`, the committed cohort)"):]
    final = final[:final.index("\n\n", final.index("| task |"))]
    assert sorted(re.findall(r"^\| `([^`]+)`", final, flags=re.M)) == sorted(drawn)


def test_design_docs_are_short_and_hold_no_dated_history():
    """Issue 36: docs/compiler.md (at most 500 lines) and docs/performance.md (at most 250)
    state rules, methods and the committed figures; the dated rounds and audit draws of
    earlier cohorts are in git, not in the docs."""
    compiler = (REPO / "docs" / "compiler.md").read_text()
    performance = (REPO / "docs" / "performance.md").read_text()
    assert len(compiler.splitlines()) <= 500
    assert len(performance.splitlines()) <= 250
    for text in (compiler, performance):
        assert not re.findall(r"^#+ .*\b(?:[Ss]ession \d+|[Dd]raw \d+|[Rr]ound)\b", text, flags=re.M)
    # one audit draw: the committed cohort's (test above), no superseded draws
    assert len(re.findall(r"\(seed `[0-9a-f]{8}`", compiler)) == 1

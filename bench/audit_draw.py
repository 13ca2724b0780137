"""The 12-task audit draw of docs/compiler.md, reproducible by anyone with the export.

    python bench/audit_draw.py [EXPORT_ROOT]

Seed: the first 8 hex digits of the SHA-256 of the cohort's ``cohort/tasks.jsonl``, read
as an integer (``int(hex8, 16)``), fixed before looking at any task. One
``numpy.random.default_rng(seed)`` draws, in this order and without replacement,
4 planner-suite terminal tasks, 4 planner-suite event tasks and 4 memory-suite tasks (a
memory task already drawn for the planner strata is not drawn again), each from the
sorted task IDs of its stratum. Prints the seed and the drawn IDs with their conditions
and card paths; a reviewer then traces every condition and reference binding to the
HD-EPIC rows (``tables/cards/<task>.md`` lists them).
"""
from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np

STRATA = (("planner", "terminal", 4), ("planner", "event", 4), ("memory", None, 4))


def seed_of(tasks_file: Path) -> tuple[str, int]:
    hex8 = hashlib.sha256(Path(tasks_file).read_bytes()).hexdigest()[:8]
    return hex8, int(hex8, 16)


def draw(export_root: Path) -> tuple[str, list[tuple[str, dict]]]:
    """``(hex seed, [(stratum, task record), ...])`` in draw order."""
    cohort = Path(export_root) / "cohort"
    hex8, seed = seed_of(cohort / "tasks.jsonl")
    tasks = {t["task_id"]: t for t in map(json.loads, (cohort / "tasks.jsonl").read_text().splitlines())}
    suites = {s["suite"]: set(s["task_ids"])
              for s in map(json.loads, (cohort / "suites.jsonl").read_text().splitlines())}
    rng = np.random.default_rng(seed)
    out, taken = [], set()
    for suite, tier, k in STRATA:
        pool = sorted(t for t in suites[suite] if (tier is None or tasks[t]["tier"] == tier)
                      and t not in taken)
        picked = rng.choice(len(pool), size=min(k, len(pool)), replace=False)
        for i in picked:
            taken.add(pool[i])
            out.append((f"{suite}/{tier or 'any'}", tasks[pool[i]]))
    return hex8, out


def main(argv=None) -> None:
    args = sys.argv[1:] if argv is None else argv
    root = Path(args[0]) if args else Path(__file__).resolve().parents[1] / "frozen_exports"
    hex8, drawn = draw(root)
    print(f"seed {hex8} = {int(hex8, 16)} (SHA-256 of {root / 'cohort' / 'tasks.jsonl'})")
    for stratum, t in drawn:
        conds = "; ".join(
            f"{c['id']} " + ("(" + ", ".join(c["atom"]) + ")" if c["kind"] == "atom" else
                             c["event"]["type"] + "(" + ", ".join(x or "*" for x in c["event"]["args"]) + ")")
            for c in t["contract"]["conditions"])
        print(f"{stratum:17s} {t['task_id']}  [{t['tier']}] {t['title']!r}: {conds}  "
              f"-> tables/cards/{t['task_id'].replace('/', '_')}.md")


if __name__ == "__main__":
    main()

"""A scratch export holding the first N episodes of one suite (for trying a model).

``python -m analysis.planners.llm.subset SRC DST [suite=planner] [episodes=2]`` copies
SRC's cohort to DST (never into SRC) with the suite cut down to its first N episodes and
their tasks, and a fresh manifest. The full cohort's episodes stay (a run executes only
the suite's), so the subset's cohort fingerprint differs from SRC's: runs made on it are
for measurement only and cannot be added to SRC.

>>> import tempfile, pathlib
>>> dst = pathlib.Path(tempfile.mkdtemp()) / "x"
>>> make_subset("frozen_exports", dst, "planner", 2)["episode_ids"][:1]
['P01-20240202-110250']
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

from analysis.frozen.io import read_records, write_records
from analysis.frozen.manifest import update_manifest

__all__ = ["make_subset"]


def make_subset(src, dst, suite: str = "planner", episodes: int = 2) -> dict:
    src, dst = Path(src).resolve(), Path(dst).resolve()
    if dst == src or src in dst.parents:
        raise ValueError(f"{dst}: the subset must live outside {src}")
    if dst.exists():
        raise ValueError(f"{dst}: exists; choose a new folder")
    suites = read_records(src / "cohort/suites.jsonl")
    chosen = next((s for s in suites if s["suite"] == suite), None)
    if chosen is None:
        raise ValueError(f"suite={suite!r}: not in {src / 'cohort/suites.jsonl'}")
    eps = chosen["episode_ids"][:episodes]
    tasks = {t["task_id"]: t for t in read_records(src / "cohort/tasks.jsonl")}
    cut = dict(chosen, episode_ids=eps,
               task_ids=[t for t in chosen["task_ids"] if tasks[t]["episode_id"] in eps],
               definition=chosen.get("definition", "") + f" (first {episodes} episodes only)")
    (dst / "cohort").mkdir(parents=True)
    for name in ("rules.json", "episodes.jsonl.gz", "tasks.jsonl"):
        shutil.copyfile(src / "cohort" / name, dst / "cohort" / name)
    write_records(dst / "cohort/suites.jsonl", [cut])
    update_manifest(dst, {"cohort/rules.json": "rules", "cohort/episodes.jsonl.gz": "episode",
                          "cohort/tasks.jsonl": "task", "cohort/suites.jsonl": "suite"})
    return cut


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    pos = [a for a in argv if "=" not in a]
    kw = dict(a.split("=", 1) for a in argv if "=" in a)
    if len(pos) != 2 or set(kw) - {"suite", "episodes"}:
        print("usage: python -m analysis.planners.llm.subset SRC DST [suite=planner] "
              "[episodes=2]", file=sys.stderr)
        return 2
    try:
        cut = make_subset(pos[0], pos[1], kw.get("suite", "planner"), int(kw.get("episodes", 2)))
    except (ValueError, FileNotFoundError) as exc:
        print(f"subset FAILED: {exc}", file=sys.stderr)
        return 2
    print(f"{pos[1]}: suite {cut['suite']} with {len(cut['episode_ids'])} episodes, "
          f"{len(cut['task_ids'])} tasks")
    return 0


if __name__ == "__main__":
    sys.exit(main())

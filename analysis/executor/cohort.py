"""The compiled cohort as the executor runs it (paper section 3: episodes, tasks, suites
and the rules of one export), read from a frozen export's ``cohort/`` after each file's
SHA-256 is checked against the manifest.

>>> from analysis.executor.cohort import load_cohort
>>> cohort = load_cohort("frozen_exports")
>>> sorted(cohort.suites)
['memory', 'planner']
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..records.hashing import sha256_file
from ..records.io import read_records
from ..records.manifest import cohort_fingerprint, read_manifest
from .rules import Rules

__all__ = ["Cohort", "load_cohort", "COHORT_FILES"]

COHORT_FILES = ("rules.json", "episodes.jsonl.gz", "tasks.jsonl", "suites.jsonl")


@dataclass(frozen=True)
class Cohort:
    rules: Rules
    rules_json: dict
    episodes: dict          # episode_id -> episode record
    tasks: dict             # task_id -> task record
    suites: dict            # suite name -> suite record
    fingerprint: str


def load_cohort(export_root: str | os.PathLike) -> Cohort:
    """Read the cohort, checking each file's SHA-256 against the manifest first."""
    root = Path(export_root)
    manifest = read_manifest(root)
    files = manifest.get("files", {})
    for name in COHORT_FILES:
        rel = f"cohort/{name}"
        if rel not in files:
            raise FileNotFoundError(f"{root / rel}: not in the manifest (compile the cohort "
                                    "first: python -m analysis.compile)")
        if sha256_file(root / rel) != files[rel]["sha256"]:
            raise ValueError(f"{root / rel}: SHA-256 differs from the manifest; "
                             "run python -m analysis.verify")
    rules_json = read_records(root / "cohort/rules.json")[0]
    return Cohort(
        rules=Rules.from_dict(rules_json), rules_json=rules_json,
        episodes={e["episode_id"]: e for e in read_records(root / "cohort/episodes.jsonl.gz")},
        tasks={t["task_id"]: t for t in read_records(root / "cohort/tasks.jsonl")},
        suites={s["suite"]: s for s in read_records(root / "cohort/suites.jsonl")},
        fingerprint=cohort_fingerprint(manifest),
    )

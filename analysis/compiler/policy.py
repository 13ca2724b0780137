"""The suites' policy as data (paper section 3: the planner and memory suites are separately
defined cohorts, not random samples of HD-EPIC).

``suite_policy.yaml`` beside this module names the planner suite's episodes, the memory
suite's fixed episodes and kitchens, the per-episode quotas, the stress test's size, the
worked example (Add Squash) and each suite's definition text. :meth:`SuitePolicy.load` is
the one place it is read; :func:`analysis.compiler.cohort.compile_cohort` takes the result.

>>> p = SuitePolicy.load()
>>> len(p.planner_episodes), p.memory_per_kitchen, p.stress_tasks
(18, 5, 12)
>>> p.example_task.episode_id in p.memory_fixed, p.example_task.atom
(True, ('in', 'squash', 'glass_2'))
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

import yaml

POLICY_PATH = Path(__file__).with_name("suite_policy.yaml")


@dataclass(frozen=True)
class ExampleTask:
    """The worked example the memory suite always holds: the task of ``episode_id`` whose
    first condition is the atom ``atom``."""
    episode_id: str
    atom: tuple[str, ...]


def _cap(value) -> int | None:
    # null in the policy file: every admitted task enters (no quota)
    return None if value is None else int(value)


@dataclass(frozen=True)
class SuitePolicy:
    planner_episodes: tuple[str, ...]
    memory_fixed: tuple[str, ...]
    memory_kitchens: tuple[str, ...]
    memory_per_kitchen: int
    planner_per_episode: Mapping[str, int | None]  # tier -> tasks per episode (None: no cap)
    memory_per_episode: int | None                 # terminal tasks per episode (None: no cap)
    stress_tasks: int
    example_task: ExampleTask
    definitions: Mapping[str, str]              # suite -> suites.jsonl's "definition"

    @classmethod
    def load(cls, path: Path = POLICY_PATH) -> "SuitePolicy":
        """Read the policy file; a missing or unknown key names the file and the key."""
        with open(path, encoding="utf-8") as fh:
            data = yaml.safe_load(fh)
        keys = set(cls.__dataclass_fields__)
        if not isinstance(data, dict) or set(data) != keys:
            got = set(data) if isinstance(data, dict) else set()
            raise ValueError(f"{path}: suite policy keys must be exactly {sorted(keys)}; "
                             f"missing {sorted(keys - got)}, unknown {sorted(got - keys)}")
        ex = data["example_task"]
        return cls(
            planner_episodes=tuple(data["planner_episodes"]),
            memory_fixed=tuple(data["memory_fixed"]),
            memory_kitchens=tuple(data["memory_kitchens"]),
            memory_per_kitchen=int(data["memory_per_kitchen"]),
            planner_per_episode=MappingProxyType({tier: _cap(k) for tier, k
                                                  in data["planner_per_episode"].items()}),
            memory_per_episode=_cap(data["memory_per_episode"]),
            stress_tasks=int(data["stress_tasks"]),
            example_task=ExampleTask(ex["episode_id"], tuple(ex["atom"])),
            definitions=MappingProxyType(dict(data["definitions"])))

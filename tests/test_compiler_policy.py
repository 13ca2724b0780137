"""The suites' policy is data (analysis/compiler/suite_policy.yaml, read by
analysis.compiler.policy) and the suite selection (analysis.compiler.suites) follows it."""
from __future__ import annotations

from dataclasses import replace

import pytest
import yaml

from analysis.compiler.policy import POLICY_PATH, ExampleTask, SuitePolicy
from analysis.compiler.suites import select_suites, suite_records


def test_the_committed_policy_names_the_papers_suites():
    p = SuitePolicy.load()
    assert len(p.planner_episodes) == 18 and len(set(p.planner_episodes)) == 18
    assert {e[:3] for e in p.planner_episodes} == {"P01", "P02", "P03", "P05"}
    assert p.memory_fixed == ("P01-20240202-110250", "P02-20240209-194141")
    assert p.memory_kitchens == ("P03", "P04", "P05", "P06", "P07", "P08", "P09")
    # null in the file: no cap, every admitted task enters
    assert dict(p.planner_per_episode) == {"terminal": None, "event": None}
    assert p.memory_per_episode is None and p.memory_per_kitchen == 5 and p.stress_tasks == 12
    assert p.example_task == ExampleTask("P02-20240209-194141", ("in", "squash", "glass_2"))
    assert set(p.definitions) == {"memory", "planner"}


def test_a_policy_file_with_a_missing_or_unknown_key_is_named(tmp_path):
    data = yaml.safe_load(POLICY_PATH.read_text(encoding="utf-8"))
    del data["stress_tasks"]
    data["quota"] = 3
    bad = tmp_path / "policy.yaml"
    bad.write_text(yaml.safe_dump(data), encoding="utf-8")
    with pytest.raises(ValueError) as e:
        SuitePolicy.load(bad)
    assert str(bad) in str(e.value)
    assert "missing ['stress_tasks'], unknown ['quota']" in str(e.value)


def _task(tid, eid, tier, atom, key="put", first=0):
    return {"task_id": tid, "episode_id": eid, "tier": tier, "key": (key,), "first": first,
            "conditions": [{"id": "c1", "kind": "atom", "atom": list(atom)}]}


def test_quotas_the_example_task_and_the_memory_kitchens_come_from_the_policy():
    p = replace(SuitePolicy.load(), planner_episodes=("P01-a",), memory_fixed=("P02-x",),
                memory_kitchens=("P03",), memory_per_kitchen=1, memory_per_episode=2,
                planner_per_episode={"terminal": 1, "event": 1},
                example_task=ExampleTask("P02-x", ("in", "squash", "glass")))
    admitted = {
        # planner: one per tier; the add comes first among terminal tasks
        "P01-a": [_task("P01-a/t1", "P01-a", "terminal", ("at", "a", "b"), first=0),
                  _task("P01-a/t2", "P01-a", "terminal", ("in", "c", "d"), key="add", first=5),
                  _task("P01-a/t3", "P01-a", "event", ("at", "e", "f"))],
        # the example task is kept first even though two others sort before it
        "P02-x": [_task("P02-x/t1", "P02-x", "terminal", ("at", "a", "b"), key="add", first=0),
                  _task("P02-x/t2", "P02-x", "terminal", ("at", "c", "b"), key="add", first=1),
                  _task("P02-x/t3", "P02-x", "terminal", ("in", "squash", "glass"), first=9)],
        # one memory episode per kitchen: the one with more terminal tasks
        "P03-m": [_task("P03-m/t1", "P03-m", "terminal", ("at", "a", "b"))],
        "P03-n": [_task("P03-n/t1", "P03-n", "terminal", ("at", "a", "b")),
                  _task("P03-n/t2", "P03-n", "terminal", ("at", "c", "b"))],
    }
    s = select_suites(admitted, ["P03-m", "P03-n"], p)
    assert [c["task_id"] for c in s.planner] == ["P01-a/t3", "P01-a/t2"]
    assert [c["task_id"] for c in s.memory] == ["P02-x/t3", "P02-x/t1", "P03-n/t1", "P03-n/t2"]
    recs = suite_records(s, p)
    assert [r["suite"] for r in recs] == ["memory", "planner"]
    assert recs[0]["episode_ids"] == ["P02-x", "P03-n"]
    assert recs[1]["definition"] == p.definitions["planner"]

"""Builds a small, valid frozen export for tests (never committed: made fresh per test).

Two scenes, three episodes of three groups, four tasks (both tiers), two suites and two
runs. The records are synthetic but follow docs/FORMAT.md exactly, so every tampering
test starts from an export that verifies.
"""
from __future__ import annotations

from pathlib import Path

from analysis.frozen import cohort_fingerprint, update_manifest, write_record, write_records
from analysis.frozen.manifest import read_manifest

EPISODES = {"P01-ep1": "P01", "P01-ep2": "P01", "P02-ep1": "P02"}


def _episode(episode_id: str, scene_id: str) -> dict:
    groups = []
    for i in range(3):
        groups.append({
            "group_id": f"{episode_id}/g{i:03d}", "index": i,
            "instruction": f"step {i} of {episode_id}", "objects": ["glass", "squash"],
            "action_hints": ["pick_up", "pour"],
            "source": {"recipe": "R01", "steps": [f"S0{i}"], "video": episode_id,
                       "start": float(i), "end": i + 0.5, "refs": {}},
            "operations": [{"type": "pour", "args": ["squash", "bottle", "glass", "counter"],
                            "provenance": {"source": "observed", "refs": {"step": f"S0{i}"}}}],
        })
    return {
        "episode_id": episode_id, "scene_id": scene_id, "videos": [episode_id],
        "initial_world": {"objects": {"glass": "glass", "counter": "counter"},
                          "facts": [["at", "glass", "counter"]]},
        "fact_provenance": [{"source": "curated", "refs": {"rule": "default"}}],
        "anchors": {"counter": ["glass"]}, "groups": groups,
    }


def _task(task_id, episode_id, groups, tier):
    if tier == "terminal":
        conds = [{"id": "c1", "kind": "atom", "atom": ["in", "squash", "glass"]},
                 {"id": "c2", "kind": "atom", "atom": ["at", "glass", "counter"]}]
    else:
        conds = [{"id": "c1", "kind": "event", "event": {"type": "stir", "args": ["cup"]}}]
    return {"task_id": task_id, "episode_id": episode_id,
            "group_ids": [f"{episode_id}/g{i:03d}" for i in groups], "tier": tier,
            "title": f"task {task_id}", "contract": {"tier": tier, "conditions": conds},
            "reference_action_types": ["pour"],
            "provenance": {"source": "observed", "refs": {}}}


TASKS = [("t1", "P01-ep1", [0, 1], "terminal"), ("t2", "P01-ep1", [2], "event"),
         ("t3", "P01-ep2", [0, 1, 2], "terminal"), ("t4", "P02-ep1", [1], "event")]


def _run(root: Path, manifest: dict, planner: str, seed: int) -> dict:
    run_id = f"{planner}__planner__persistent"
    folder = root / "runs" / run_id
    run = {"run_id": run_id, "planner": planner, "memory": "persistent", "suite": "planner",
           "seed": seed, "attempt_limit": 80, "cohort_sha256": cohort_fingerprint(manifest),
           "planner_config": {}}
    groups = []
    for ep in EPISODES:
        for i in range(3):
            ok = (i + seed) % 2 == 0
            groups.append({
                "run_id": run_id, "episode_id": ep, "group_id": f"{ep}/g{i:03d}",
                "status": "completed",
                "attempts": [{"index": 0, "source": "planner", "raw": '{"actions": []}',
                              "action": {"type": "pour", "args": ["squash", "bottle", "glass",
                                                                  "counter"]},
                              "status": "accepted" if ok else "invalid",
                              "failed_checks": [] if ok else ["holding_source"]}],
                "queries": [{"region": "counter", "responded": True}],
                "planner_calls": [{"raw": "{}", "prompt_tokens": 10, "completion_tokens": 2}],
                "prompt_tokens": 10, "completion_tokens": 2,
                "belief": {"cross_group_hits": i, "repeated_region_queries": 0,
                           "anchor_delta_conflicts": 0},
                "world_sha256_after": "0" * 64,
            })
    tasks = [{"run_id": run_id, "task_id": tid, "episode_id": ep, "completed": True,
              "conditions": [{"id": "c1", "truth": "TRUE" if seed % 2 else "FALSE"}]
              + ([{"id": "c2", "truth": "TRUE"}] if tier == "terminal" else [])}
             for tid, ep, _g, tier in TASKS]
    write_record(folder / "run.json", run)
    write_records(folder / "groups.jsonl.gz", groups)
    write_records(folder / "tasks.jsonl", tasks)
    return {f"runs/{run_id}/run.json": "run", f"runs/{run_id}/groups.jsonl.gz": "group_record",
            f"runs/{run_id}/tasks.jsonl": "task_record"}


def build_export(root: str | Path, planners=("alpha", "beta")) -> Path:
    """Write a small valid export into ``root`` and return its path."""
    root = Path(root)
    cohort = root / "cohort"
    write_records(cohort / "episodes.jsonl.gz", [_episode(e, s) for e, s in EPISODES.items()])
    write_records(cohort / "tasks.jsonl", [_task(*t) for t in TASKS])
    write_records(cohort / "suites.jsonl", [{
        "suite": "planner", "task_ids": [t[0] for t in TASKS],
        "episode_ids": sorted(EPISODES), "definition": "all synthetic episodes"}])
    write_records(cohort / "scenes.jsonl", [
        {"scene_id": s, "fixtures": [{"id": "counter", "type": "counter", "phrases": ["counter"],
                                      "provenance": {"source": "curated", "refs": {}}}]}
        for s in sorted(set(EPISODES.values()))])
    update_manifest(root, {"cohort/episodes.jsonl.gz": "episode", "cohort/tasks.jsonl": "task",
                           "cohort/suites.jsonl": "suite", "cohort/scenes.jsonl": "scene"})
    manifest = read_manifest(root)
    files = {}
    for seed, planner in enumerate(planners):
        files.update(_run(root, manifest, planner, seed))
    update_manifest(root, files)
    return root

"""Builds a small, valid frozen export for tests (never committed: made fresh per test).

Two scenes, three episodes of three groups, four tasks (both tiers), two suites and two
runs. The records are synthetic but follow docs/FORMAT.md exactly, so every tampering
test starts from an export that verifies.
"""
from __future__ import annotations

from pathlib import Path

from analysis.records import cohort_fingerprint, update_manifest, write_record, write_records
from analysis.records.manifest import read_manifest

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
        glass_taken = False  # group 1's attempt picks the glass up off the counter
        for i in range(3):
            ok = (i + seed) % 2 == 0
            action = ({"type": "pick_up", "args": ["glass", "counter"]} if i == 1 else
                      {"type": "pour", "args": ["squash", "bottle", "glass", "counter"]})
            # each group queries the counter before its attempt; the anchor is the glass,
            # which an accepted pick-up in group 1 (beta only) removes explicitly
            query = {"region": "counter", "responded": True, "after_attempts": 0,
                     "anchor": ["glass"], "visible": [] if glass_taken else ["glass"],
                     "added": [], "removed": ["glass"] if glass_taken else []}
            glass_taken = glass_taken or (i == 1 and ok)
            groups.append({
                "run_id": run_id, "episode_id": ep, "group_id": f"{ep}/g{i:03d}",
                "status": "completed",
                "attempts": [{"index": 0, "source": "planner", "raw": '{"actions": []}',
                              "action": action,
                              "status": "accepted" if ok else "invalid",
                              "failed_checks": [] if ok else ["holding_source"]}],
                "queries": [query],
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


# --- a richer export: six planners, audit, memory suite, varied outcomes --------------
#
# Everything below is generated by seeded code (numpy Generator, fixed seeds); no result
# is typed in. Shape: 3 scenes, 6 episodes of 5-8 groups, 3 tasks per episode (the first
# of episode 0 is "Add Squash" with the atom ["in", "squash", "glass"]), a planner suite
# (all tasks) and a memory suite (terminal tasks), one run per planner on the planner
# suite and a persistent and a reset run of one planner on the memory suite.

import numpy as np  # noqa: E402

RICH_PLANNERS = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta")
_TYPES = ("pick_up", "put_down", "pour", "open", "close", "stir", "cut", "navigate")
_REGIONS = ("counter", "fridge", "cupboard", "sink")
_AUDIT_STRESS = ("stress_replay", "stress_witness", "stress_repeat", "stress_immutability",
                 "stress_initial_fails", "stress_partial_fails",
                 "stress_wrong_binding_fails", "stress_missing_state_fails", "stress_commute")


def _rich_cohort(rng, n_episodes):
    scenes = ["P01", "P02", "P03"]
    episodes, tasks = [], []
    for e in range(n_episodes):
        scene = scenes[e % 3]
        eid = f"{scene}-ep{e:02d}"
        n_groups = int(rng.integers(5, 9))
        groups = []
        for i in range(n_groups):
            t = [str(x) for x in rng.choice(_TYPES, size=int(rng.integers(1, 4)), replace=False)]
            groups.append({
                "group_id": f"{eid}/g{i:03d}", "index": i,
                "instruction": f"step {i} of {eid}", "objects": ["glass", "squash"],
                "action_hints": t,
                "source": {"recipe": f"R{e:02d}", "steps": [f"S{e:02d}{i:02d}"],
                           "video": f"{eid}-v", "start": float(10 * i), "end": 10.0 * i + 8,
                           "refs": {}},
                "operations": [{"type": ty, "args": ["glass", "counter"],
                                "provenance": {"source": "observed" if k % 2 == 0 else
                                               "curated", "refs": {"step": f"S{i:02d}"}}}
                               for k, ty in enumerate(t)],
            })
        if e == 0:
            groups[0]["instruction"] = "Take the squash bottle and the glass"
            groups[1]["instruction"] = "Pour squash into the glass"
            groups[1]["operations"] = [{"type": "pour",
                                        "args": ["squash", "squash_bottle", "glass"],
                                        "provenance": {"source": "observed",
                                                       "refs": {"step": "S0001"}}}]
        episodes.append({
            "episode_id": eid, "scene_id": scene, "videos": [f"{eid}-v"],
            "initial_world": {"objects": {"glass": "glass", "counter": "counter"},
                              "facts": [["at", "glass", "counter"]]},
            "fact_provenance": [{"source": "observed", "refs": {"video": f"{eid}-v"}}],
            "anchors": {r: ["glass"] for r in _REGIONS}, "groups": groups,
        })
        # three tasks per episode: consecutive spans
        cuts = sorted(rng.choice(np.arange(1, n_groups), size=2, replace=False).tolist())
        spans = [range(0, cuts[0]), range(cuts[0], cuts[1]), range(cuts[1], n_groups)]
        for k, span in enumerate(spans):
            tier = "terminal" if (e + k) % 3 != 2 else "event"
            n_c = int(rng.integers(1, 4))
            if tier == "terminal":
                conds = [{"id": f"c{j + 1}", "kind": "atom",
                          "atom": ["at", f"item{j}", "counter"]} for j in range(n_c)]
            else:
                conds = [{"id": f"c{j + 1}", "kind": "event",
                          "event": {"type": "stir", "args": [f"cup{j}"]}} for j in range(n_c)]
            title = f"task {k} of {eid}"
            if e == 0 and k == 0:
                tier, title = "terminal", "Add Squash"
                conds = [{"id": "c1", "kind": "atom", "atom": ["in", "squash", "glass"]}]
            ref = sorted({op["type"] for i in span for op in groups[i]["operations"]})
            tasks.append({
                "task_id": f"{eid}/t{k}", "episode_id": eid,
                "group_ids": [groups[i]["group_id"] for i in span], "tier": tier,
                "title": title, "contract": {"tier": tier, "conditions": conds},
                "reference_action_types": ref,
                "provenance": {"source": "observed", "refs": {}}})
    return episodes, tasks


def _rich_audit(rng, tasks):
    recs = []
    for t in tasks:
        recs.append({"check": "reference_pass", "task_id": t["task_id"], "condition_id": None,
                     "passed": True,
                     "detail": "reference replay satisfies the contract"})
        recs.append({"check": "initial_fail", "task_id": t["task_id"], "condition_id": None,
                     "passed": True,
                     "detail": "initial state fails the contract"})
        recs.append({"check": "nontrivial", "task_id": t["task_id"], "condition_id": None,
                     "passed": True,
                     "detail": "not trivially true"})
    for t in tasks:
        for c in t["contract"]["conditions"]:
            recs.append({"check": "negative_suite", "task_id": t["task_id"],
                         "condition_id": c["id"], "passed": True,
                         "detail": "negative states rejected"})
    # the completeness ledger: each terminal task's c1 expresses one placement of its unit
    # (so that table14_ledger has rows; the compiler writes these records)
    for t in tasks:
        if t["tier"] == "terminal":
            recs.append({"check": "ledger_expressed", "task_id": f"{t['task_id']}/c1", "condition_id": "c1",
                         "passed": True, "detail": f"1 rows of unit {t['task_id']}: placement put-down by q1"})
    for t in tasks[:4]:
        for check in _AUDIT_STRESS:
            passed = bool(check != "stress_commute" or rng.random() < 0.75)
            recs.append({"check": check, "task_id": t["task_id"], "condition_id": None,
                         "passed": passed,
                         "detail": "ok" if passed else "no independent update pair"})
    return recs


def _rich_groups(rng, run_id, episodes, quality, memory):
    """Group records of one run; ``quality`` in (0, 1) shifts acceptance and completion."""
    out, status_of = [], {}
    for ep in episodes:
        glass_at = "counter"  # the initial world: the glass at the counter
        for g in ep["groups"]:
            u = rng.random()
            status = ("completed" if u < 0.55 + 0.4 * quality else
                      "execution_blocked" if u < 0.9 + 0.05 * quality else
                      "parse_failure" if u < 0.97 else "empty_plan")
            n_att = 0 if status in ("parse_failure", "empty_plan") else int(rng.integers(1, 7))
            attempts = []
            for k in range(n_att):
                source = "repair" if rng.random() < 0.2 else "planner"
                ok = bool(rng.random() < 0.3 + 0.5 * quality)
                ty = str(rng.choice(g["action_hints"]))
                arg = str(rng.choice(_REGIONS))
                attempts.append({
                    "index": k, "source": source,
                    "raw": None if source == "repair" else f'{{"type": "{ty}"}}',
                    "action": {"type": ty, "args": ["glass", arg]},
                    "status": "accepted" if ok else "invalid",
                    "failed_checks": [] if ok else [str(rng.choice(
                        ["hand_empty", "object_at_source", "agent_at_source"]))]})
            n_q = int(rng.integers(0, 4 if memory == "reset" else 2))
            queries = [{"region": str(rng.choice(_REGIONS)), "responded": bool(rng.random() < .9)}
                       for _ in range(n_q)]
            # Query contents follow the observation rule without further draws (so the
            # rest of the export is unchanged): query k comes after min(2k, n) attempts;
            # an accepted pick_up takes the glass away, an accepted put_down puts it at
            # its region; every region's anchor is the glass (see _rich_cohort).
            where = [glass_at]
            for a in attempts:
                if a["status"] == "accepted" and a["action"]["type"] == "pick_up":
                    glass_at = None
                elif a["status"] == "accepted" and a["action"]["type"] == "put_down":
                    glass_at = a["action"]["args"][1]
                where.append(glass_at)
            for k, q in enumerate(queries):
                pos = min(2 * k, n_att)
                now = where[pos]
                before = {"glass"} if q["region"] == "counter" else set()
                here = {"glass"} if now == q["region"] else set()
                added, removed = sorted(here - before), sorted(before - here)
                visible = sorted(({"glass"} - set(removed)) | set(added))
                q.update(after_attempts=pos, anchor=["glass"] if q["responded"] else [],
                         visible=visible if q["responded"] else [],
                         added=added if q["responded"] else [],
                         removed=removed if q["responded"] else [])
            pt, ct = int(rng.integers(200, 900)), int(rng.integers(20, 120))
            if memory == "persistent":
                pt += 150 * g["index"]
            out.append({
                "run_id": run_id, "episode_id": ep["episode_id"], "group_id": g["group_id"],
                "status": status, "attempts": attempts, "queries": queries,
                "planner_calls": [{"raw": "{}", "prompt_tokens": pt, "completion_tokens": ct}],
                "prompt_tokens": pt, "completion_tokens": ct,
                "belief": {"cross_group_hits": int(rng.integers(0, 6) * g["index"])
                           if memory == "persistent" else 0,
                           "repeated_region_queries": int(rng.integers(0, 3))
                           if memory == "reset" else int(rng.random() < 0.05),
                           "anchor_delta_conflicts": int(rng.integers(0, 3))
                           if memory == "reset" else int(rng.random() < 0.1)},
                "world_sha256_after": "0" * 64,
            })
            status_of[g["group_id"]] = status
    return out, status_of


def _rich_tasks(rng, run_id, tasks, status_of, quality):
    out = []
    for t in tasks:
        completed = all(status_of[g] == "completed" for g in t["group_ids"])
        conds = []
        for c in t["contract"]["conditions"]:
            if not completed:
                truth = "UNKNOWN"
            else:
                truth = "TRUE" if rng.random() < 0.25 + 0.5 * quality else "FALSE"
            conds.append({"id": c["id"], "truth": truth})
        out.append({"run_id": run_id, "task_id": t["task_id"], "episode_id": t["episode_id"],
                    "completed": completed, "conditions": conds})
    return out


def write_run(root: Path, run: dict, groups: list, tasks: list) -> dict:
    """Write one run's three files under ``root/runs/<run_id>``; return manifest entries."""
    run_id = run["run_id"]
    folder = Path(root) / "runs" / run_id
    write_record(folder / "run.json", run)
    write_records(folder / "groups.jsonl.gz", groups)
    write_records(folder / "tasks.jsonl", tasks)
    return {f"runs/{run_id}/run.json": "run", f"runs/{run_id}/groups.jsonl.gz": "group_record",
            f"runs/{run_id}/tasks.jsonl": "task_record"}


def rich_run_records(root, planner, suite, memory, seed, quality):
    """``(run, groups, tasks)`` records of one synthetic run against the export at ``root``."""
    root = Path(root)
    from analysis.records import read_records
    episodes = {e["episode_id"]: e for e in read_records(root / "cohort/episodes.jsonl.gz")}
    tasks = {t["task_id"]: t for t in read_records(root / "cohort/tasks.jsonl")}
    s = {x["suite"]: x for x in read_records(root / "cohort/suites.jsonl")}[suite]
    rng = np.random.default_rng(seed)
    run_id = f"{planner}__{suite}__{memory}"
    run = {"run_id": run_id, "planner": planner, "memory": memory, "suite": suite,
           "seed": seed, "attempt_limit": 80,
           "cohort_sha256": cohort_fingerprint(read_manifest(root)),
           "planner_config": {"quality": quality}}
    groups, status_of = _rich_groups(rng, run_id, [episodes[e] for e in s["episode_ids"]],
                                     quality, memory)
    trecs = _rich_tasks(rng, run_id, [tasks[t] for t in s["task_ids"]], status_of, quality)
    return run, groups, trecs


def build_rich_export(root: str | Path, planners=RICH_PLANNERS, n_episodes: int = 6,
                      memory_planner: str | None = "alpha", audit: bool = True,
                      seed: int = 0) -> Path:
    """Write a richer valid export (see the comment above) into ``root``; return it."""
    root = Path(root)
    rng = np.random.default_rng(seed)
    episodes, tasks = _rich_cohort(rng, n_episodes)
    cohort = root / "cohort"
    files = {"cohort/episodes.jsonl.gz": "episode", "cohort/tasks.jsonl": "task",
             "cohort/suites.jsonl": "suite", "cohort/scenes.jsonl": "scene"}
    write_records(cohort / "episodes.jsonl.gz", episodes)
    write_records(cohort / "tasks.jsonl", tasks)
    terminal = [t for t in tasks if t["tier"] == "terminal"]
    write_records(cohort / "suites.jsonl", [
        {"suite": "memory", "task_ids": [t["task_id"] for t in terminal],
         "episode_ids": sorted({t["episode_id"] for t in terminal}),
         "definition": "terminal tasks of the synthetic episodes"},
        {"suite": "planner", "task_ids": [t["task_id"] for t in tasks],
         "episode_ids": [e["episode_id"] for e in episodes],
         "definition": "all synthetic episodes"}])
    write_records(cohort / "scenes.jsonl", [
        {"scene_id": s, "fixtures": [{"id": r, "type": r, "phrases": [r],
                                      "provenance": {"source": "curated", "refs": {}}}
                                     for r in _REGIONS]}
        for s in sorted({e["scene_id"] for e in episodes})])
    if audit:
        write_records(cohort / "audit.jsonl", _rich_audit(rng, tasks))
        write_records(cohort / "rejected.jsonl", [
            {"task_id": f"{episodes[0]['episode_id']}/rejected0",
             "episode_id": episodes[0]["episode_id"], "reason": "initial_state_passes",
             "detail": "the contract holds in the initial world"}])
        files.update({"cohort/audit.jsonl": "audit", "cohort/rejected.jsonl": "rejected_task"})
    update_manifest(root, files)
    files = {}
    for k, planner in enumerate(planners):
        quality = 0.15 + 0.7 * k / max(1, len(planners) - 1)
        files.update(write_run(root, *rich_run_records(root, planner, "planner", "persistent",
                                                       100 + k, quality)))
    if memory_planner:
        for k, memory in enumerate(("persistent", "reset")):
            files.update(write_run(root, *rich_run_records(
                root, memory_planner, "memory", memory, 200 + k,
                0.55 if memory == "persistent" else 0.45)))
    update_manifest(root, files)
    return root


# --- a replayable export: the toy episode, real runtime records -----------------------
#
# One toy episode (analysis.planners.toy) with its two tasks, the packaged rules, and
# runs produced by the runtime loop itself, so that re-execution can derive them. The
# planner "flaky" is belief_search except that its first reply in group g1 is not JSON,
# so its records hold a parse_failure group and an incomplete task (forgery a05).

TOY_RUNS = ("steady", "flaky")


class _Flaky:
    """belief_search, except for an unparseable first reply in group g1."""

    def __init__(self, inner, broken_group):
        self.inner, self.broken, self.name = inner, broken_group, "flaky"

    def config(self):
        return {"broken_group": self.broken}

    def propose(self, view):
        if view.key.endswith(f"/{self.broken}/0"):
            return "{not json"
        return self.inner.propose(view)


def toy_run_records(root, planner: str, memory: str = "persistent"):
    """``(run, groups, tasks)`` of ``planner`` ("steady" or "flaky") on the toy export."""
    from analysis.executor import Rules
    from analysis.executor.runtime import RuntimeConfig, run_episode
    from analysis.planners import make_planner
    from analysis.planners.toy import toy_episode, toy_tasks

    root = Path(root)
    inner = make_planner("belief_search", seed=2)
    agent = _Flaky(inner, "g1") if planner == "flaky" else inner
    run_id = f"{planner}__planner__{memory}"
    cfg = RuntimeConfig()
    res = run_episode(toy_episode(), toy_tasks(), agent, Rules.load(), memory, cfg,
                      run_id=run_id)
    run = {"run_id": run_id, "planner": planner, "memory": memory, "suite": "planner",
           "seed": 2, "attempt_limit": cfg.attempt_limit,
           "cohort_sha256": cohort_fingerprint(read_manifest(root)),
           "planner_config": {"runtime": cfg.as_dict()}}
    return run, res.group_records, res.task_records


def build_replayable_export(root: str | Path, planners=TOY_RUNS) -> Path:
    """Write the toy export (cohort and the runs of ``planners``) into ``root``."""
    from analysis.executor import Rules
    from analysis.planners.toy import toy_episode, toy_tasks

    root = Path(root)
    cohort = root / "cohort"
    ep = toy_episode()
    write_record(cohort / "rules.json", Rules.load().to_json())
    write_records(cohort / "episodes.jsonl.gz", [ep])
    write_records(cohort / "tasks.jsonl", toy_tasks())
    write_records(cohort / "suites.jsonl", [{
        "suite": "planner", "task_ids": [t["task_id"] for t in toy_tasks()],
        "episode_ids": [ep["episode_id"]], "definition": "the toy episode"}])
    update_manifest(root, {"cohort/rules.json": "rules", "cohort/episodes.jsonl.gz": "episode",
                           "cohort/tasks.jsonl": "task", "cohort/suites.jsonl": "suite"})
    files = {}
    for planner in planners:
        files.update(write_run(root, *toy_run_records(root, planner)))
    update_manifest(root, files)
    return root

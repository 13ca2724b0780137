"""Trust layer 5 of verification: consistency across files (suites name known tasks,
runs belong to this cohort and cover every task and group of their suite exactly, each
run record matches the cohort); docs/FORMAT.md.
"""
from __future__ import annotations

import re

from .integrity_error import IntegrityError
from .manifest import MANIFEST_NAME, cohort_fingerprint
from .schemas import PLANNER_NAME


# --- across files ------------------------------------------------------------------------

def _check_cross_file(manifest: dict, records: dict, group_keys: dict) -> tuple[dict, dict]:
    """Runs cover every task and group of their suite, and belong to this cohort."""
    by_type: dict[str, list[str]] = {}
    for rel, entry in manifest["files"].items():
        by_type.setdefault(entry["record_type"], []).append(rel)
    for rtype, rels in by_type.items():
        if rtype not in ("run", "group_record", "task_record"):
            outside = [r for r in rels if not r.startswith("cohort/")]
            if outside:
                raise IntegrityError(outside[0], f"a {rtype} file belongs under cohort/")
        else:
            outside = [r for r in rels if not re.match(r"^runs/[^/]+/[^/]+$", r)]
            if outside:
                raise IntegrityError(outside[0], f"a {rtype} file belongs under runs/<run_id>/")
    for rtype in ("suite", "task", "episode"):
        if len(by_type.get(rtype, [])) > 1:
            raise IntegrityError(sorted(by_type[rtype])[1], f"a second {rtype} file (the "
                                 f"cohort has one: {sorted(by_type[rtype])[0]})")
    suites = {}
    for rel in by_type.get("suite", []):
        for rec in records[rel]:
            suites[rec["suite"]] = rec
    tasks = {rec["task_id"]: rec for rel in by_type.get("task", []) for rec in records[rel]}
    episodes = {rec["episode_id"]: rec for rel in by_type.get("episode", [])
                for rec in records[rel]}
    episode_groups = {e["episode_id"]: {g["group_id"] for g in e["groups"]}
                      for e in episodes.values()}
    for rel in by_type.get("task", []):
        for line, t in enumerate(records[rel], start=1):
            for gid in t["group_ids"]:
                if gid not in episode_groups.get(t["episode_id"], ()):
                    raise IntegrityError(rel, f"group {gid!r} is not a group of episode "
                                         f"{t['episode_id']!r}", line=line,
                                         record_id=t["task_id"])
            ids = [c["id"] for c in t["contract"]["conditions"]]
            if len(set(ids)) != len(ids):
                raise IntegrityError(rel, f"contract condition IDs repeat: {ids}", line=line,
                                     record_id=t["task_id"])
    for name, suite in suites.items():
        rel = _first(by_type, "suite")
        for tid in suite["task_ids"]:
            if tid not in tasks:
                raise IntegrityError(rel, f"suite {name!r} names unknown task {tid!r}",
                                     record_id=name)
            if tasks[tid]["episode_id"] not in suite["episode_ids"]:
                raise IntegrityError(rel, f"suite {name!r}: task {tid!r} is of episode "
                                     f"{tasks[tid]['episode_id']!r}, not in its episode_ids",
                                     record_id=name)
        for eid in suite["episode_ids"]:
            if eid not in episodes:
                raise IntegrityError(rel, f"suite {name!r} names unknown episode {eid!r}",
                                     record_id=name)
        for what in ("task_ids", "episode_ids"):
            if len(set(suite[what])) != len(suite[what]):
                raise IntegrityError(rel, f"suite {name!r}: {what} repeat an ID",
                                     record_id=name)
    fingerprint = cohort_fingerprint(manifest)
    runs = {}
    run_folders = {r.rsplit("/", 1)[0] for t in ("run", "group_record", "task_record")
                   for r in by_type.get(t, [])}
    for folder in sorted(run_folders):
        if f"{folder}/run.json" not in records:
            raise IntegrityError(f"{folder}/run.json", "missing: the run folder holds records "
                                 "but no run.json in the manifest")
    for rel in sorted(by_type.get("run", [])):
        if rel.rsplit("/", 1)[1] != "run.json":
            raise IntegrityError(rel, "a run record file is named run.json")
        run = records[rel][0] if records[rel] else None
        if run is None:
            raise IntegrityError(rel, "run file holds no record")
        run_id, folder = run["run_id"], rel.rsplit("/", 1)[0]
        # a run named apart from its planner (run_name) takes the name's place in its ID
        name = run.get("run_name", run["planner"])
        expected_id = f"{name}__{run['suite']}__{run['memory']}"
        if "run_name" in run and run["run_name"] == run["planner"]:
            raise IntegrityError(rel, f"run_name {name!r} equals the planner's name: a run "
                                 "named as its planner has no run_name", line=1,
                                 record_id=run_id)
        if not PLANNER_NAME.match(name) or run_id != expected_id:
            raise IntegrityError(rel, f"run_id {run_id!r} must be <run name>__<suite>__<memory> "
                                 f"= {expected_id!r} (the run name: run_name, else the "
                                 "planner's), with a name of lowercase letters, "
                                 "digits and single '-' or '_'", line=1, record_id=run_id)
        if folder != f"runs/{run_id}":
            raise IntegrityError(rel, f"run_id {run_id!r} does not match its folder {folder!r}",
                                 line=1, record_id=run_id)
        if run["suite"] not in suites:
            raise IntegrityError(rel, f"unknown suite {run['suite']!r} (suites: "
                                 f"{sorted(suites)})", line=1, record_id=run_id)
        if run["cohort_sha256"] != fingerprint:
            raise IntegrityError(rel, "run was produced on another cohort (cohort_sha256 "
                                 f"{run['cohort_sha256'][:12]}... != {fingerprint[:12]}...)",
                                 line=1, record_id=run_id)
        from .limited import run_suite_of   # a limited run covers its first N episodes
        suite = run_suite_of(run, suites[run["suite"]], tasks)
        _check_run_files(folder, run, suite, tasks, episodes, records, group_keys, manifest)
        runs[run_id] = run
    for run_id in manifest.get("runs", {}):
        if run_id not in runs:
            raise IntegrityError(MANIFEST_NAME, f"runs entry {run_id!r} names no run of the "
                                 "export")
    return suites, runs


def _first(by_type, rtype):
    return sorted(by_type.get(rtype, ["?"]))[0]


def _check_run_files(folder, run, suite, tasks, episodes, records, group_keys, manifest):
    run_id = run["run_id"]
    names = {"tasks.jsonl": "task_record", "groups.jsonl.gz": "group_record"}
    task_rel, group_rel = f"{folder}/tasks.jsonl", f"{folder}/groups.jsonl.gz"
    for needed, rtype in ((task_rel, "task_record"), (group_rel, "group_record")):
        if needed not in records:
            raise IntegrityError(needed, f"missing for run {run_id!r}")
        if manifest["files"][needed]["record_type"] != rtype:
            raise IntegrityError(needed, f"record_type must be {rtype!r}")
    others = sorted(r for r in records if r.startswith(folder + "/")
                    and r.rsplit("/", 1)[1] not in (*names, "run.json"))
    if others:
        raise IntegrityError(others[0], f"unexpected file in run {run_id!r} (a run holds "
                             "run.json, groups.jsonl.gz and tasks.jsonl)")
    # group records: exactly the suite's groups, each of its own episode
    expected = [(e, g["group_id"]) for e in suite["episode_ids"] for g in episodes[e]["groups"]]
    episodes_of: dict[str, list[str]] = {}
    for e, g in expected:
        episodes_of.setdefault(g, []).append(e)
    wanted = set(expected)
    status = {}
    for line, (rec_run, rec_episode, gid, rec_status) in enumerate(group_keys[group_rel],
                                                                    start=1):
        if rec_run != run_id:
            raise IntegrityError(group_rel, f"run_id {rec_run!r} != {run_id!r}",
                                 line=line, record_id=gid)
        if (rec_episode, gid) not in wanted:
            if gid in episodes_of:
                raise IntegrityError(group_rel, f"episode_id {rec_episode!r}: the group "
                                     f"belongs to {episodes_of[gid][0]!r}", line=line,
                                     record_id=gid)
            raise IntegrityError(group_rel, f"group not of suite {run['suite']!r} of this "
                                 "cohort", line=line, record_id=gid)
        status[(rec_episode, gid)] = rec_status
    missing = [g for e, g in expected if (e, g) not in status]
    if missing:
        raise IntegrityError(group_rel, f"run {run_id!r} lacks {len(missing)} group record(s), "
                             f"first {missing[0]!r}", record_id=missing[0])
    # task records: exactly the suite's tasks, matching their contracts
    suite_tasks = set(suite["task_ids"])
    have = set()
    for line, rec in enumerate(records[task_rel], start=1):
        tid = rec["task_id"]
        if rec["run_id"] != run_id:
            raise IntegrityError(task_rel, f"run_id {rec['run_id']!r} != {run_id!r}", line=line,
                                 record_id=tid)
        if tid not in suite_tasks:
            raise IntegrityError(task_rel, f"task not in suite {run['suite']!r}", line=line,
                                 record_id=tid)
        task = tasks[tid]
        if rec["episode_id"] != task["episode_id"]:
            raise IntegrityError(task_rel, f"episode_id {rec['episode_id']!r}: the task "
                                 f"belongs to {task['episode_id']!r}", line=line, record_id=tid)
        contract = task["contract"]["conditions"]
        got = [c["id"] for c in rec["conditions"]]
        want = [c["id"] for c in contract]
        if got != want:
            raise IntegrityError(task_rel, f"conditions {got} must be the contract's "
                                 f"condition IDs {want}, once each and in order", line=line,
                                 record_id=tid)
        statuses = [status[(task["episode_id"], g)] for g in task["group_ids"]]
        completed = all(s == "completed" for s in statuses)
        if rec["completed"] != completed:
            raise IntegrityError(task_rel, f"completed is {rec['completed']} but the task's "
                                 f"groups recorded {statuses}",
                                 line=line, record_id=tid)
        for c, r in zip(contract, rec["conditions"]):
            # a condition's truth is UNKNOWN exactly when its evidence is missing
            # (docs/FORMAT.md): an incomplete task decides no atom and no unseen event
            if not completed and (r["truth"] == "FALSE" or
                                  (c["kind"] == "atom" and r["truth"] != "UNKNOWN")):
                raise IntegrityError(task_rel, f"conditions[{c['id']}].truth {r['truth']!r} "
                                     "is impossible for a task that did not complete",
                                     line=line, record_id=tid)
            if completed and c["kind"] == "event" and r["truth"] == "UNKNOWN":
                raise IntegrityError(task_rel, f"conditions[{c['id']}].truth 'UNKNOWN' is "
                                     "impossible for an event of a completed task", line=line,
                                     record_id=tid)
        have.add(tid)
    missing = [t for t in suite["task_ids"] if t not in have]
    if missing:
        raise IntegrityError(task_rel, f"run {run_id!r} does not cover {len(missing)} task(s) "
                             f"of suite {run['suite']!r}, first {missing[0]!r}",
                             record_id=missing[0])

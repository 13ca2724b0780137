"""Replay: recorded attempts re-executed from the initial world match the record."""
import copy
import json

from analysis.executor import Rules
from analysis.executor.replay import replay_run
from analysis.executor.runtime import run_episode
from analysis.planners import make_planner
from analysis.planners.toy import toy_episode, toy_tasks

RULES = Rules.load()


def _run(name="random_hints"):
    ep = toy_episode()
    res = run_episode(ep, toy_tasks(), make_planner(name, seed=2), RULES, "reset", run_id="r")
    return ep, res


def _replay(ep, groups, tasks):
    return replay_run("r", groups, tasks, {ep["episode_id"]: ep},
                      {t["task_id"]: t for t in toy_tasks()}, RULES)


def test_replay_matches_a_fresh_run():
    for name in ("random_hints", "belief_search"):
        ep, res = _run(name)
        rep = _replay(ep, res.group_records, res.task_records)
        assert rep.ok, rep.summary()
        assert rep.n_groups == 3 and rep.n_tasks == 2
        assert rep.n_attempts == sum(len(g["attempts"]) for g in res.group_records)


def test_replay_reports_first_divergence_with_file_record_field():
    ep, res = _run()
    groups = copy.deepcopy(res.group_records)
    a = groups[1]["attempts"][0]
    a["status"] = "invalid" if a["status"] == "accepted" else "accepted"
    rep = _replay(ep, groups, res.task_records)
    d = rep.divergences[0]
    assert (d.file, d.line, d.record_id, d.field) == ("groups.jsonl.gz", 2, "g1",
                                                      "attempts[0].status")
    assert len(rep.divergences) == 1


def test_replay_catches_changed_truth_and_world_hash():
    ep, res = _run("belief_search")
    tasks = copy.deepcopy(res.task_records)
    tasks[0]["conditions"][0]["truth"] = "FALSE" if tasks[0]["conditions"][0]["truth"] != "FALSE" else "TRUE"
    d = _replay(ep, res.group_records, tasks).divergences[0]
    assert d.file == "tasks.jsonl" and d.field == "conditions[c1].truth"
    groups = copy.deepcopy(res.group_records)
    groups[0]["world_sha256_after"] = "0" * 64
    d = _replay(ep, groups, res.task_records).divergences[0]
    assert d.field == "world_sha256_after" and d.record_id == "g0"


def test_replay_catches_a_dropped_attempt():
    ep, res = _run("belief_search")
    groups = copy.deepcopy(res.group_records)
    accepted = [i for i, a in enumerate(groups[0]["attempts"]) if a["status"] == "accepted"]
    del groups[0]["attempts"][accepted[0]]
    assert not _replay(ep, groups, res.task_records).ok


class _Scripted:
    """Replies in order, then an empty plan (as in test_runtime)."""
    name = "scripted"

    def __init__(self, replies):
        self.replies = list(replies)

    def config(self):
        return {}

    def propose(self, view):
        return json.dumps(self.replies.pop(0) if self.replies else {"actions": []})


def _queried_run():
    """Toy group 0: query the fridge, take the milk out (3 accepted attempts, then a
    rejected second take that makes the planner replan), query the fridge again."""
    ep = toy_episode()
    take = {"type": "take_from_storage", "args": ["milk", "fridge"]}
    planner = _Scripted([
        {"actions": [{"type": "navigate", "args": ["counter", "fridge"]},
                     {"type": "open_storage", "args": ["fridge"]}, take, take],
         "query": "fridge"},
        {"actions": [], "query": "fridge"}])
    res = run_episode(ep, toy_tasks(), planner, RULES, "persistent", run_id="r")
    return ep, res


def test_replay_recomputes_query_contents():
    ep, res = _queried_run()
    q = res.group_records[0]["queries"]
    assert [(x["after_attempts"], x["removed"]) for x in q] == [(0, []), (4, ["milk"])]
    assert _replay(ep, res.group_records, res.task_records).ok


def test_replay_names_a_changed_query_field():
    ep, res = _queried_run()
    groups = copy.deepcopy(res.group_records)
    groups[0]["queries"][1]["removed"] = []
    d = _replay(ep, groups, res.task_records).divergences[0]
    assert (d.file, d.line, d.record_id, d.field) == ("groups.jsonl.gz", 1, "g0",
                                                      "queries[1].removed")
    assert (d.recorded, d.replayed) == ([], ["milk"])


def test_replay_derives_a_query_position_from_the_loop():
    ep, res = _queried_run()
    # the position is derived, not trusted: the second query came after the 4 attempts
    groups = copy.deepcopy(res.group_records)
    groups[0]["queries"][1]["after_attempts"] = 0
    d = _replay(ep, groups, res.task_records).divergences[0]
    assert (d.field, d.recorded, d.replayed) == ("queries[1].after_attempts", 0, 4)
    # ... and moving it with contents that match the earlier world is caught too: before
    # any attempt the milk was still in the fridge
    groups[0]["queries"][1].update(visible=["milk", "squash_bottle"], removed=[])
    d = _replay(ep, groups, res.task_records).divergences[0]
    assert d.field == "queries[1].after_attempts"
    groups[0]["queries"][1]["after_attempts"] = 9
    d = _replay(ep, groups, res.task_records).divergences[0]
    assert (d.field, d.recorded) == ("queries[1].after_attempts", 9)

"""The runtime loop on the hand-made toy episode (analysis/planners/toy.py)."""
import json

import pytest

from analysis.executor import Executor, Rules, World
from analysis.executor.runtime import RuntimeConfig, find_repair, run_episode
from analysis.planners import make_planner
from analysis.planners.base import PlannerResponse, count_tokens
from analysis.planners.toy import toy_episode, toy_tasks

RULES = Rules.load()


class Scripted:
    """Returns the scripted replies in order (then an empty plan)."""
    name = "scripted"

    def __init__(self, replies):
        self.replies = list(replies)
        self.views = []

    def config(self):
        return {}

    def propose(self, view):
        self.views.append(view)
        if not self.replies:
            return json.dumps({"actions": []})
        r = self.replies.pop(0)
        if isinstance(r, Exception):
            raise r
        return r if isinstance(r, (str, PlannerResponse)) else json.dumps(r)


def one_group_episode(**kw):
    ep = toy_episode(**kw)
    ep["groups"] = ep["groups"][:1]
    return ep


def run(planner, ep=None, tasks=(), **cfg):
    return run_episode(ep or one_group_episode(), list(tasks), planner, RULES, "persistent",
                       RuntimeConfig(**cfg), run_id="r")


def act(t, *args):
    return {"type": t, "args": list(args)}


def test_reference_plan_completes_and_meets_contract():
    ep = toy_episode()
    replies = [{"actions": [{"type": o["type"], "args": o["args"]} for o in g["operations"]]}
               for g in ep["groups"]]
    # one reply per group: interleave empty replies are not needed (no rejection)
    res = run_episode(ep, toy_tasks(), Scripted(replies), RULES, "persistent", run_id="r")
    assert [g["status"] for g in res.group_records] == ["completed"] * 3
    assert all(a["status"] == "accepted" for g in res.group_records for a in g["attempts"])
    assert [[c["truth"] for c in t["conditions"]] for t in res.task_records] == [["TRUE"], ["TRUE"]]


def test_garbage_and_raising_planner_give_parse_failure_and_the_run_goes_on():
    ep = toy_episode()
    res = run_episode(ep, toy_tasks(), Scripted(["not json", RuntimeError("boom"), {"actions": []}]),
                      RULES, "persistent", run_id="r")
    assert [g["status"] for g in res.group_records] == ["parse_failure", "parse_failure",
                                                        "empty_plan"]
    assert res.group_records[1]["planner_calls"][0]["raw"] == ""
    # a failed group leaves the terminal condition UNKNOWN, never TRUE
    assert res.task_records[0]["conditions"][0]["truth"] == "UNKNOWN"
    assert res.task_records[0]["completed"] is False


def test_structural_parse_only_no_semantic_repair():
    res = run(Scripted(['{"actions": [{"type": "teleport", "args": ["glass"]}]}']))
    g = res.group_records[0]
    assert g["status"] == "completed"           # parsed fine; the executor rejects it
    assert g["attempts"][0]["failed_checks"] == ["known_action_type"]
    res = run(Scripted(['{"actions": [{"type": "pick_up", "args": "glass"}]}']))
    assert res.group_records[0]["status"] == "parse_failure"


def test_completed_even_after_rejections_and_world_unchanged_by_invalid():
    ep = one_group_episode()
    w0 = World.from_json(ep["initial_world"]).sha256()
    res = run(Scripted([{"actions": [act("put_on", "glass", "counter")]}]), ep)
    g = res.group_records[0]
    assert g["status"] == "completed"
    assert [a["status"] for a in g["attempts"]] == ["invalid"]
    assert g["world_sha256_after"] == w0


def test_attempt_limit_blocks_with_actions_queued():
    bad = {"actions": [act("put_on", "glass", "counter")] * 30}
    res = run(Scripted([bad] * 10), attempt_limit=7)
    g = res.group_records[0]
    assert g["status"] == "execution_blocked" and len(g["attempts"]) == 7


def test_empty_plan():
    assert run(Scripted([{"actions": []}])).group_records[0]["status"] == "empty_plan"


def test_navigation_and_open_repair_then_retry():
    res = run(Scripted([{"actions": [act("take_from_storage", "glass", "cupboard")]}]))
    g = res.group_records[0]
    assert [(a["source"], a["action"]["type"], a["status"]) for a in g["attempts"]] == [
        ("planner", "take_from_storage", "invalid"),
        ("repair", "navigate", "accepted"),
        ("repair", "open_storage", "accepted"),
        ("planner", "take_from_storage", "accepted")]
    assert g["attempts"][1]["raw"] is None and g["attempts"][0]["raw"] is not None
    assert g["status"] == "completed"


def test_no_repair_when_it_would_not_validate():
    ex = Executor(RULES)
    w = World.from_json(toy_episode()["initial_world"])
    # the spoon is in the drawer, not the cupboard: no repair makes this pass
    assert find_repair(ex, w, act("take_from_storage", "spoon", "cupboard")) is None


def test_replan_gets_feedback_and_is_bounded():
    p = Scripted([{"actions": [act("put_on", "glass", "counter")]}] * 20)
    res = run(p, max_planner_calls=3)
    g = res.group_records[0]
    assert len(g["planner_calls"]) == 3 and len(g["attempts"]) == 3
    assert p.views[1].feedback[-1]["failed_checks"] == ["holding_object"]
    assert g["status"] == "completed"


def test_queries_count_and_respond():
    p = Scripted([{"actions": [], "query": "fridge"}, {"actions": [], "query": "moon"},
                  {"actions": [act("navigate", "counter", "sink")]}])
    g = run(p).group_records[0]
    # the fridge's toy anchor is milk and the bottle; nothing has moved yet (no delta)
    assert g["queries"] == [
        {"region": "fridge", "responded": True, "after_attempts": 0,
         "anchor": ["milk", "squash_bottle"], "visible": ["milk", "squash_bottle"],
         "added": [], "removed": []},
        {"region": "moon", "responded": False, "after_attempts": 0,
         "anchor": [], "visible": [], "added": [], "removed": []}]
    assert p.views[1].query_results[0]["visible"] == ["milk", "squash_bottle"]
    assert g["status"] == "completed"


def test_reobserving_after_a_change_records_the_delta():
    # look at the fridge, take the milk out, fail a second take (so the planner replans),
    # then look again: same anchor, the milk is now an explicit removal
    take = act("take_from_storage", "milk", "fridge")
    p = Scripted([{"actions": [act("navigate", "counter", "fridge"),
                               act("open_storage", "fridge"), take, take], "query": "fridge"},
                  {"actions": [], "query": "fridge"}])
    g = run(p).group_records[0]
    assert [a["status"] for a in g["attempts"]] == ["accepted"] * 3 + ["invalid"]
    assert g["queries"] == [
        {"region": "fridge", "responded": True, "after_attempts": 0,
         "anchor": ["milk", "squash_bottle"], "visible": ["milk", "squash_bottle"],
         "added": [], "removed": []},
        {"region": "fridge", "responded": True, "after_attempts": 4,
         "anchor": ["milk", "squash_bottle"], "visible": ["squash_bottle"],
         "added": [], "removed": ["milk"]}]
    assert g["status"] == "completed"


def test_item_put_at_a_region_is_added_to_its_observation():
    p = Scripted([{"actions": [act("navigate", "counter", "fridge"), act("open_storage", "fridge"),
                               act("take_from_storage", "milk", "fridge"),
                               act("navigate", "fridge", "counter"),
                               act("put_on", "milk", "counter"), act("put_on", "milk", "counter")]},
                  {"actions": [], "query": "counter"}])
    g = run(p).group_records[0]
    assert [a["status"] for a in g["attempts"]][-1] == "invalid"
    assert g["queries"] == [{"region": "counter", "responded": True, "after_attempts": 6,
                             "anchor": ["mug"], "visible": ["milk", "mug"],
                             "added": ["milk"], "removed": []}]


def test_tokens_counted_when_planner_reports_none():
    p = Scripted([PlannerResponse('{"actions": []}', prompt_tokens=11, completion_tokens=2)])
    g = run(p).group_records[0]
    assert (g["prompt_tokens"], g["completion_tokens"]) == (11, 2)
    g = run(Scripted([{"actions": []}])).group_records[0]
    assert g["completion_tokens"] == count_tokens('{"actions": []}') == 8
    assert g["prompt_tokens"] > 20


def test_reset_vs_persistent_belief_counters():
    ep = toy_episode(hints_with_args=True)
    out = {}
    for memory in ("persistent", "reset"):
        res = run_episode(ep, toy_tasks(), make_planner("belief_search"), RULES, memory,
                          run_id="r")
        out[memory] = sum(g["belief"]["cross_group_hits"] for g in res.group_records)
    assert out["reset"] == 0 and out["persistent"] > 0


def test_deterministic_records():
    ep = toy_episode()
    a = run_episode(ep, toy_tasks(), make_planner("random_hints", seed=3), RULES, "reset")
    b = run_episode(ep, toy_tasks(), make_planner("random_hints", seed=3), RULES, "reset")
    assert a.group_records == b.group_records and a.task_records == b.task_records


def test_config_validation_names_parameter():
    with pytest.raises(ValueError, match="attempt_limit"):
        RuntimeConfig(attempt_limit=0)

"""Failure labels and the condition ledger (analysis/executor/failures.py; issue 35).

The oracle: a toy episode played by a scripted planner whose every rejected attempt was
labelled by hand (the comment beside each says why), plus rejected attempts of a
committed run read back by hand. Then the ledger against every committed run's records.
"""
from __future__ import annotations

import copy
import json
from collections import Counter

import pytest

from analysis.executor import Rules
from analysis.executor.failures import (ATTEMPT_LABELS, GROUP_LABELS, RunDerivation,
                                        derive_episode, derive_run, label_attempt)
from analysis.executor.protocol import ProviderError
from analysis.executor.runtime import RuntimeConfig, run_episode
from analysis.planners.toy import toy_episode, toy_tasks

RULES = Rules.load()


def A(t, *args):
    return {"type": t, "args": list(args)}


# Each plan ends with the attempt that is rejected (the ones before it are accepted), so
# every rejection makes the runtime call the planner again for the next plan.
# (plan, hand label of its last attempt)
ORACLE = [
    # agent at counter, hand empty; known: the fixtures, the group's objects (glass,
    # cupboard, mug) and what the counter shows (mug)
    ([A("pick_up", "ghost", "counter")], "unknown_entity"),           # no 'ghost'
    ([A("pick_up", "mug", "attic")], "unknown_entity"),               # no 'attic'
    ([A("navigate", "counter", "nowhere")], "unknown_entity"),
    ([A("fly", "mug")], "malformed_action"),                          # no such action
    ([A("pick_up", "mug")], "malformed_action"),                      # arity
    ([A("put_on", "mug", "counter", "counter")], "malformed_action"),  # arity
    ([A("pick_up", "milk", "counter")], "unobserved_entity"),         # milk: in the closed fridge
    ([A("take_from_storage", "spoon", "drawer")], "unobserved_entity"),
    ([A("pick_up", "squash_bottle", "counter")], "unobserved_entity"),
    ([A("pick_up", "counter", "counter")], "wrong_type"),             # a fixture is no item
    ([A("pick_up", "mug", "fridge")], "wrong_type"),                  # fridge is no surface
    ([A("take_from_storage", "mug", "counter")], "wrong_type"),       # counter is no storage
    ([A("put_on", "mug", "counter")], "unmet_precondition:not_held"),
    ([A("put_on", "glass", "counter")], "unmet_precondition:not_held"),
    # not at the cupboard, cupboard closed, not holding: not_held comes first
    ([A("put_in_storage", "mug", "cupboard")], "unmet_precondition:not_held"),
    ([A("pick_up", "glass", "counter")], "unmet_precondition:not_in_place"),  # in the cupboard
    ([A("navigate", "fridge", "counter")], "unmet_precondition:not_at_location"),
    ([A("navigate", "cupboard", "sink")], "unmet_precondition:not_at_location"),
    # not there and closed: closed comes first
    ([A("take_from_storage", "glass", "cupboard")], "unmet_precondition:container_closed"),
    ([A("navigate", "counter", "cupboard"), A("take_from_storage", "glass", "cupboard")],
     "unmet_precondition:container_closed"),
    ([A("close_storage", "cupboard")], "unmet_precondition:container_closed"),
    ([A("open_storage", "cupboard"), A("open_storage", "cupboard")],
     "unmet_precondition:container_open"),
    ([A("open_storage", "cupboard")], "repeated"),    # same action, world unchanged
    ([A("open_storage", "cupboard")], "repeated"),
    # takes the glass; the mug is not in the cupboard and the hand is full: not_in_place
    ([A("take_from_storage", "glass", "cupboard"), A("take_from_storage", "mug", "cupboard")],
     "unmet_precondition:not_in_place"),
    ([A("open_storage", "cupboard")], "unmet_precondition:container_open"),  # world changed
    ([A("navigate", "cupboard", "counter"), A("pick_up", "mug", "counter")],
     "unmet_precondition:hand_full"),
    ([A("uncover", "mug", "counter"), A("pick_up", "mug", "counter")],
     "unmet_precondition:hand_full"),                  # uncovering changed the world
    ([A("cover", "mug", "counter"), A("pick_up", "mug", "counter")],
     "unmet_precondition:hand_full"),
    ([A("uncover", "mug", "counter"), A("uncover", "mug", "counter")],
     "unmet_precondition:item_state"),
    ([A("cover", "mug", "counter"), A("cover", "mug", "counter")],
     "unmet_precondition:item_state"),
    ([A("put_on", "glass", "counter"), A("uncover", "mug", "counter"),
      A("uncover", "mug", "counter")], "unmet_precondition:item_state"),
    # to the fridge (its anchor shows the bottle, the milk, the jug and the bowl)
    ([A("navigate", "counter", "fridge"), A("open_storage", "fridge"),
      A("navigate", "counter", "sink")], "unmet_precondition:not_at_location"),
    ([A("take_from_storage", "glass", "fridge")], "unmet_precondition:not_in_place"),
    ([A("open_storage", "fridge")], "unmet_precondition:container_open"),
    ([A("take_from_storage", "squash_bottle", "fridge"), A("open_container", "squash_bottle"),
      A("open_container", "squash_bottle")], "unmet_precondition:capped_state"),
    ([A("close_container", "squash_bottle"), A("close_container", "squash_bottle")],
     "unmet_precondition:capped_state"),
    # inside the fridge and the bottle capped: capped comes before not reachable
    ([A("pour", "squash", "squash_bottle", "jug", "fridge")], "unmet_precondition:capped_state"),
    ([A("open_container", "squash_bottle"), A("pour", "squash", "squash_bottle", "milk", "fridge")],
     "unmet_precondition:not_reachable"),
    ([A("pour", "squash", "squash_bottle", "milk", "fridge")], "repeated"),
    ([A("pour", "squash", "squash_bottle", "jug", "fridge")], "unmet_precondition:not_reachable"),
    ([A("pour", "squash", "squash_bottle", "bowl", "fridge")], "unmet_precondition:not_reachable"),
    ([A("navigate", "fridge", "sink"), A("turn_off_tap", "sink")],
     "unmet_precondition:power_state"),
    ([A("turn_on_tap", "sink"), A("turn_on_tap", "sink")], "unmet_precondition:power_state"),
    ([A("turn_off_tap", "sink"), A("wash", "squash_bottle", "sink")],
     "unmet_precondition:power_state"),
]

#: Rejected attempts of the committed greedy_hints run, labelled by hand from the
#: recorded action and the executor's failed checks: (group, attempt index, label).
_G = "P01-20240202-110250/"
COHORT = [
    # close_storage(cupboard) away from it and the cupboard closed: closed first
    (_G + "g0000", 0, "unmet_precondition:container_closed"),
    # navigate(counter, ...) while not at the counter
    (_G + "g0000", 4, "unmet_precondition:not_at_location"),
    # put_on(capsule, counter) away from the counter and not holding it: not held first
    (_G + "g0000", 10, "unmet_precondition:not_held"),
    # press_button(coffee_machine) away from it
    (_G + "g0001", 1, "unmet_precondition:not_at_location"),
    # close_storage(cupboard) again, but the world changed since g0000: not repeated
    (_G + "g0003", 0, "unmet_precondition:not_at_location"),
    # pour into a milk frother that is not at the cupboard (which also encloses it)
    (_G + "g0004", 1, "unmet_precondition:not_in_place"),
    # take_from_storage(scissor, cupboard): the scissors are elsewhere
    (_G + "g0007", 9, "unmet_precondition:not_in_place"),
]


def _episode():
    ep = toy_episode("oracle")
    w = ep["initial_world"]
    w["objects"].update({"jug": "jug", "bowl": "bowl"})
    w["facts"] += [["at", "jug", "fridge"], ["at", "bowl", "fridge"], ["covered", "mug"],
                   ["enclosing", "fridge"], ["enclosing", "cupboard"], ["enclosing", "drawer"]]
    ep["fact_provenance"] = [{"source": "curated", "refs": {"rule": "toy"}}] * len(w["facts"])
    ep["anchors"]["fridge"] += ["jug", "bowl"]
    ep["groups"][0]["objects"] = ["glass", "cupboard", "mug"]
    return ep


class Scripted:
    """Returns the k-th reply of each group (a plan, text, or an exception to raise)."""

    name = "scripted"

    def __init__(self, replies: dict):
        self.replies = replies

    def config(self):
        return {}

    def propose(self, view):
        gid = view.key.split("/")[1]
        replies = self.replies.get(gid, [])
        r = replies[view.call_index] if view.call_index < len(replies) else {"actions": []}
        if isinstance(r, Exception):
            raise r
        return r if isinstance(r, str) else json.dumps(r)


def _derive(ep, res, tasks=(), limit=80):
    out = RunDerivation("oracle")
    derive_episode(ep, res.group_records, list(tasks), RULES,
                   __import__("analysis.executor", fromlist=["Executor"]).Executor(RULES),
                   limit, out)
    return out


def test_oracle_labels_every_rejected_attempt_as_labelled_by_hand():
    ep = _episode()
    replies = {"g0": [{"actions": plan, "query": None} for plan, _ in ORACLE]}
    cfg = RuntimeConfig(attempt_limit=500, max_planner_calls=len(ORACLE) + 1, repair=False)
    res = run_episode(ep, [], Scripted(replies), RULES, "persistent", cfg)
    g0 = res.group_records[0]
    # the scripted plans ran as written: only each plan's last attempt is rejected
    rejected = [a for a in g0["attempts"] if a["status"] == "invalid"]
    assert len(rejected) == len(ORACLE)
    d = _derive(ep, res)
    got = [a.label for a in d.attempts if a.group_id == "g0"]
    assert got == [label for _, label in ORACLE]
    assert [a.index for a in d.attempts if a.group_id == "g0"] == [a["index"] for a in rejected]
    # g0 completed; g1 and g2 got no plan
    assert [(g.group_id, g.label) for g in d.groups] == [("g1", "empty_plan"),
                                                        ("g2", "empty_plan")]


def test_oracle_has_every_attempt_label_three_times_and_fifty_attempts():
    counts = Counter(label for _, label in ORACLE) + Counter(x[2] for x in COHORT)
    assert sum(counts.values()) >= 50
    assert {k for k, v in counts.items() if v >= 3} == set(ATTEMPT_LABELS) - {"other"}


@pytest.mark.parametrize("k", range(3))   # each group label three times
def test_group_outcome_labels(k):
    ep = toy_episode(f"groups{k}")
    cfg = RuntimeConfig(attempt_limit=3 + k, max_planner_calls=3)
    nav = [A("navigate", "counter", "sink"), A("navigate", "sink", "counter")] * 4
    bad = ["not json", '{"actions": "pick_up"}', "```\n[1]\n```"][k]
    replies = {"g0": [bad], "g1": [{"actions": []}], "g2": [{"actions": nav}]}
    res = run_episode(ep, [], Scripted(replies), RULES, "persistent", cfg)
    d = _derive(ep, res, limit=3 + k)
    assert [(g.group_id, g.status, g.label) for g in d.groups] == [
        ("g0", "parse_failure", "parse_failure"), ("g1", "empty_plan", "empty_plan"),
        ("g2", "execution_blocked", "budget_exhausted")]
    res = run_episode(ep, [], Scripted({"g0": [{"actions": nav[:1]}],
                                        "g1": [ProviderError("HTTP 503")]}), RULES,
                      "persistent", cfg)
    d = _derive(ep, res, limit=3 + k)
    assert [(g.group_id, g.label) for g in d.groups] == [("g1", "provider_error")]
    assert set(GROUP_LABELS.values()) == {"parse_failure", "empty_plan", "budget_exhausted",
                                          "provider_error"}


def test_recorded_status_that_re_execution_contradicts_is_refused():
    from analysis.executor.failures import DerivationError
    ep = _episode()
    replies = {"g0": [{"actions": ORACLE[0][0]}]}
    res = run_episode(ep, [], Scripted(replies), RULES, "persistent",
                      RuntimeConfig(repair=False))
    records = copy.deepcopy(res.group_records)
    records[0]["attempts"][0]["status"] = "accepted"
    with pytest.raises(DerivationError, match=r"group g0: attempts\[0\].status"):
        derive_run("r", records, {"oracle": ep}, [], RULES)


def test_label_precedence_is_fixed():
    from analysis.executor import World
    w = World({"glass": "glass", "counter": "counter"}, [("agent-at", "counter")])
    act = A("pick_up", "glass", "counter")
    # repeated first, then unobserved before the failed preconditions
    assert label_attempt(RULES, w, act, ["object_at_source"], {"glass", "counter"},
                         repeated=True)[0] == "repeated"
    assert label_attempt(RULES, w, act, ["object_at_source"], {"counter"}) == (
        "unobserved_entity", "glass")
    assert label_attempt(RULES, w, act, ["agent_at_source", "object_at_source", "hand_empty"],
                         {"glass", "counter"}) == ("unmet_precondition:not_in_place",
                                                   "object_at_source")
    with pytest.raises(ValueError, match="failed_checks"):
        label_attempt(RULES, w, act, [], {"glass"})


# ------------------------------------------------------------------ committed runs
# session: built once per worker, however work stealing splits this file
@pytest.fixture(scope="session")
def committed():
    from analysis.records import load
    export = load("frozen_exports")
    rules = Rules.from_dict(export.records_of("rules")[0])
    episodes = {e["episode_id"]: e for e in export.records_of("episode")}
    tasks = {t["task_id"]: t for t in export.records_of("task")}
    suites = {s["suite"]: s for s in export.records_of("suite")}
    out = {}
    for run in export.records_of("run"):
        rid = run["run_id"]
        recs = export.group_records_of(rid).decode(
            fields=("episode_id", "group_id", "status", "attempts", "queries", "planner_calls"))
        out[rid] = (derive_run(rid, recs, episodes,
                               [tasks[t] for t in suites[run["suite"]]["task_ids"]], rules,
                               run["attempt_limit"]), recs)
    return export, out


def test_tables_derivation_one_episode_at_a_time_equals_derive_run(committed):
    """The tables derive each run one episode's records at a time
    (``derive_run_by_episode`` over ``decode_by``): the same labels, group outcomes and
    ledger, in the same order, as ``derive_run`` over the run's whole records."""
    from analysis.report.failure_labels import derive_failures
    export, runs = committed
    planner = sorted(r for r in runs if "__planner__" in r)
    got = derive_failures(export, {r: r for r in planner})
    want = [(r, a.episode_id, a.group_id, a.index, a.label, a.check, " ".join(a.failed_checks))
            for r in planner for a in runs[r][0].attempts]
    assert list(got.attempts.drop(columns="label").itertuples(index=False, name=None)) == want
    assert list(got.groups.drop(columns="label").itertuples(index=False, name=None)) == [
        (r, g.episode_id, g.group_id, g.status, g.label) for r in planner
        for g in runs[r][0].groups]
    assert list(zip(got.ledger.run_id, got.ledger.task_id, got.ledger.condition_id,
                    [None if v != v else v for v in got.ledger.first_group],  # NaN: never
                    got.ledger.end_truth)) == [
        (r, e.task_id, e.condition_id, e.first_group, e.end_truth) for r in planner
        for e in runs[r][0].ledger]


def test_two_processes_derive_like_one(committed, monkeypatch):
    """``workers=2`` (what ``python -m analysis.tables`` uses) gives the same frames, row
    for row, and the error of the first failing run in the labels' order, whichever
    process met it."""
    import pandas as pd
    import analysis.executor.failures as F
    from analysis.report.failure_labels import _split, derive_failures
    export, runs = committed
    labels = {r: r.split("__")[0] for r in sorted(runs) if "__planner__" in r}
    one, two = derive_failures(export, labels), derive_failures(export, labels, workers=2)
    for f in ("attempts", "groups", "ledger", "group_counts"):
        pd.testing.assert_frame_equal(getattr(one, f), getattr(two, f))
    theirs = _split(export, list(labels))
    mine = [r for r in labels if r not in theirs]
    assert theirs and mine  # both processes derive some runs
    real = F.derive_run_by_episode

    def failing(run_id, *args, **kw):
        if run_id in bad:
            raise F.DerivationError(f"run {run_id}: forged divergence")
        return real(run_id, *args, **kw)

    monkeypatch.setattr(F, "derive_run_by_episode", failing)
    for first, second in ((theirs[-1], mine[0]), (mine[0], theirs[-1])):
        order = {first: labels[first], second: labels[second]} | labels
        bad = {first, second}
        with pytest.raises(F.DerivationError, match=f"run {first}: forged"):
            derive_failures(export, order, workers=2)


def test_cohort_oracle_and_every_rejection_labelled_once(committed):
    export, runs = committed
    d, recs = runs["greedy_hints__planner__persistent"]
    by = {(a.group_id, a.index): a.label for a in d.attempts}
    for gid, i, label in COHORT:
        assert by[(gid, i)] == label
    for rid, (d, recs) in runs.items():
        n_rej = sum(a["status"] != "accepted" for g in recs for a in g["attempts"])
        keys = {(a.episode_id, a.group_id, a.index) for a in d.attempts}
        assert len(keys) == len(d.attempts) == n_rej, rid
        other = sum(a.label == "other" for a in d.attempts)
        assert other <= 0.01 * max(n_rej, 1), rid
        assert len(d.groups) == sum(g["status"] != "completed" for g in recs), rid


def test_ledger_end_truths_reproduce_gcr_and_success(committed):
    from analysis.metrics import task_metrics
    export, runs = committed
    tm = task_metrics(export).set_index(["run_id", "task_id"])
    for rid, (d, _) in runs.items():
        n_true = Counter()
        n_all = Counter()
        for e in d.ledger:
            n_all[e.task_id] += 1
            n_true[e.task_id] += e.end_truth == "TRUE"
            assert not (e.undone and e.end_truth != "FALSE")
        sub = tm.loc[rid]
        assert set(n_all) == set(sub.index), rid
        for tid, row in sub.iterrows():
            gcr = n_true[tid] / n_all[tid] if row.completed else 0.0
            assert gcr == pytest.approx(row.gcr, abs=0), (rid, tid)
            if row.completed:
                assert (gcr == 1.0) == bool(row.success), (rid, tid)


def test_ledger_ignores_the_order_of_a_contracts_conditions():
    ep = toy_episode("order")
    tasks = toy_tasks("order")
    t0 = tasks[0]
    t0["contract"]["conditions"] = [
        {"id": "c1", "kind": "atom", "atom": ["in", "squash", "glass"]},
        {"id": "c2", "kind": "atom", "atom": ["at", "glass", "counter"]},
        {"id": "c3", "kind": "atom", "atom": ["open", "fridge"]}]
    ops = {g["group_id"]: [{"actions": [A(o["type"], *o["args"]) for o in g["operations"]]}]
           for g in ep["groups"]}
    res = run_episode(ep, tasks, Scripted(ops), RULES, "persistent")
    led = {(e.task_id, e.condition_id): e for e in _derive(ep, res, tasks).ledger}
    rev = copy.deepcopy(tasks)
    rev[0]["contract"]["conditions"].reverse()
    led_rev = {(e.task_id, e.condition_id): e for e in _derive(ep, res, rev).ledger}
    assert led == led_rev
    # the glass is on the counter after g0 (first group), the squash in it after g1;
    # the fridge, opened in g1, stays open: nothing undone
    assert led[("order-t0", "c2")].first_position == 0
    assert led[("order-t0", "c1")].first_group == "g1"
    assert led[("order-t0", "c3")].first_group == "g1"
    assert not any(e.undone for e in led.values())
    assert led[("order-t1", "c1")].end_truth == "TRUE"


def test_ledger_marks_a_condition_undone():
    ep = toy_episode("undo")
    tasks = toy_tasks("undo")
    tasks[0]["contract"]["conditions"] = [
        {"id": "c1", "kind": "atom", "atom": ["at", "glass", "counter"]}]
    ops = {g["group_id"]: [{"actions": [A(o["type"], *o["args"]) for o in g["operations"]]}]
           for g in ep["groups"]}
    # g1 ends by taking the glass back off the counter
    ops["g1"][0]["actions"] += [A("pick_up", "glass", "counter")]
    ops["g1"][0]["actions"] = [A("navigate", "counter", "fridge")] + ops["g1"][0]["actions"][1:]
    res = run_episode(ep, tasks, Scripted(ops), RULES, "persistent",
                      RuntimeConfig(repair=False))
    (e,) = [e for e in _derive(ep, res, tasks).ledger if e.task_id == "undo-t0"]
    assert (e.first_group, e.end_truth, e.undone) == ("g0", "FALSE", True)


def test_docs_quote_the_committed_runs_label_counts(committed):
    # docs/executor.md quotes each run's rejected attempts and other = 0: recomputed here
    import re
    from pathlib import Path
    export, runs = committed
    n = {rid: len(d.attempts) for rid, (d, _) in runs.items()}
    assert all(sum(a.label == "other" for a in d.attempts) == 0 for d, _ in runs.values())
    text = re.sub(r"\s+", " ", (Path(__file__).parent.parent / "docs" / "executor.md").read_text())
    b = "belief_search__"
    want = (f"belief_search memory persistent {n[b + 'memory__persistent']:,}, memory reset "
            f"{n[b + 'memory__reset']:,}, planner {n[b + 'planner__persistent']:,}; greedy_hints "
            f"{n['greedy_hints__planner__persistent']:,}; lexicon "
            f"{n['lexicon__planner__persistent']:,}; noisy_search_binding "
            f"{n['noisy_search_binding__planner__persistent']:,}; noisy_search_skip "
            f"{n['noisy_search_skip__planner__persistent']:,}; random_hints "
            f"{n['random_hints__planner__persistent']:,}.")
    assert want in text
    unseen = {"unknown_entity", "unobserved_entity", "wrong_type", "malformed_action"}
    assert not any(a.label in unseen for d, _ in runs.values() for a in d.attempts)


def test_tables_and_reexecute_derive_the_same_labels_on_a_replayable_export(tmp_path):
    # the toy export (tests/export_factory.py): runs written by the runtime itself; the
    # planner "flaky" answers its first call of group g1 with text that is not JSON
    import analysis
    from analysis._cli.reexecute import reexecute
    from export_factory import build_replayable_export
    root = build_replayable_export(tmp_path / "export")
    export = analysis.load(root)
    t15 = export.results(n_resamples=200).table("failure_labels").set_index(["planner", "label"])
    row = t15.loc[("flaky", "parse_failure")]
    assert (row.unit, row["count"], row["of"]) == ("group", 1, 3)
    assert row.pooled_share == pytest.approx(1 / 3)
    assert ("steady", "parse_failure") not in t15.index or t15.loc[("steady", "parse_failure"),
                                                                    "count"] == 0
    t16 = export.results(n_resamples=200).table("condition_ledger")
    assert set(t16.kind) == {"in", "event"} and set(t16.planner) == {"flaky", "steady"}
    for rep in reexecute(root):
        assert rep.ok
        mine = export.failures(rep.run_id)
        assert [(a.group_id, a.index, a.label) for a in rep.failures.attempts] == list(zip(
            mine.attempts.group_id, mine.attempts["index"], mine.attempts.failure))
        assert [(g.group_id, g.label) for g in rep.failures.groups] == list(zip(
            mine.groups.group_id, mine.groups.failure))
        # the ledger's end truths are the task records'
        led = {(e.task_id, e.condition_id): e.end_truth for e in rep.failures.ledger}
        cr = export.condition_records[export.condition_records.run_id == rep.run_id]
        assert led == dict(zip(zip(cr.task_id, cr.condition_id), cr.truth))

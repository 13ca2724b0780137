"""Hand-computed checks of analysis.metrics on a tiny synthetic export."""

import types

import numpy as np
import pandas as pd
import pytest

from analysis.metrics import ENDPOINTS, macro, task_metrics

Z = dict(prompt_tokens=0, completion_tokens=0, query_attempts=0, query_responses=0,
         cross_group_hits=0, repeated_region_queries=0, anchor_delta_conflicts=0)


def grec(run, ep, gid, idx, status, n_att, n_acc, n_rep, types_, **kw):
    d = dict(run_id=run, episode_id=ep, group_id=gid, group_index=idx, n_groups_in_episode=3,
             status=status, n_attempts=n_att, n_accepted=n_acc, n_repair_attempts=n_rep,
             attempted_types=types_)
    d.update(Z)
    d.update(kw)
    return d


def make_export():
    runs = pd.DataFrame({
        "run_id": ["r1", "r2", "r3"], "planner": ["A", "B", "A"],
        "memory": ["persistent", "persistent", "reset"], "suite": ["planner", "planner", "memory"],
        "seed": 0, "attempt_limit": 80})
    suites = pd.DataFrame({"suite": ["planner"] * 3 + ["memory"],
                           "task_id": ["t1", "t2", "t3", "t1"],
                           "episode_id": ["e1", "e1", "e2", "e1"]})
    tasks = pd.DataFrame({
        "task_id": ["t1", "t2", "t3"], "episode_id": ["e1", "e1", "e2"], "scene_id": ["P01", "P01", "P02"],
        "tier": ["terminal", "event", "terminal"],
        "group_ids": [["g1", "g2"], ["g3"], ["g4", "g5"]], "n_conditions": [2, 3, 1],
        "reference_action_types": [["pour", "stir", "open"], ["stir"], ["wash", "cut"]]})
    g = [
        # run r1: everything completes
        grec("r1", "e1", "g1", 0, "completed", 4, 3, 1, ["pour"], prompt_tokens=100, query_attempts=2),
        grec("r1", "e1", "g2", 1, "completed", 6, 3, 0, ["open", "wash"], prompt_tokens=50,
             query_responses=1, cross_group_hits=2),
        grec("r1", "e1", "g3", 2, "completed", 5, 5, 2, ["stir"]),
        grec("r1", "e2", "g4", 0, "completed", 2, 1, 0, []),
        grec("r1", "e2", "g5", 1, "completed", 2, 2, 0, ["cut"]),
        # run r2: failures (rows deliberately out of group order)
        grec("r2", "e1", "g2", 1, "execution_blocked", 80, 20, 5, ["pour"]),
        grec("r2", "e1", "g1", 0, "completed", 10, 10, 0, ["open"]),
        grec("r2", "e1", "g3", 2, "parse_failure", 0, 0, 0, []),
        grec("r2", "e2", "g5", 1, "execution_blocked", 80, 1, 0, ["wash"]),
        grec("r2", "e2", "g4", 0, "empty_plan", 0, 0, 0, []),
        # run r3 (memory suite: only t1)
        grec("r3", "e1", "g1", 0, "completed", 1, 1, 0, ["pour", "stir", "open"]),
        grec("r3", "e1", "g2", 1, "completed", 1, 0, 0, []),
        grec("r3", "e1", "g3", 2, "completed", 1, 0, 0, []),
    ]
    cond = []
    truths = {("r1", "t1"): ["TRUE", "TRUE"], ("r1", "t2"): ["TRUE", "FALSE", "UNKNOWN"],
              ("r1", "t3"): ["FALSE"],
              # r2 t1 has a TRUE condition but the task did not complete -> GCR 0
              ("r2", "t1"): ["TRUE", "UNKNOWN"], ("r2", "t2"): ["UNKNOWN"] * 3, ("r2", "t3"): ["UNKNOWN"],
              ("r3", "t1"): ["TRUE", "FALSE"]}
    for (r, t), tr in truths.items():
        for k, v in enumerate(tr):
            cond.append(dict(run_id=r, task_id=t, condition_id=f"c{k}", truth=v))
    contract = pd.DataFrame([dict(task_id=t, condition_id=f"c{k}", kind="atom")
                             for t, n in zip(tasks.task_id, tasks.n_conditions) for k in range(n)])
    return types.SimpleNamespace(runs=runs, suites=suites, tasks=tasks, conditions=contract,
                                 group_records=pd.DataFrame(g), condition_records=pd.DataFrame(cond),
                                 attempts=None, task_records=None)


@pytest.fixture(scope="module")
def tm():
    return task_metrics(make_export()).set_index(["run_id", "task_id"])


def test_rows_cover_only_suite_tasks(tm):
    assert sorted(tm.index) == [("r1", "t1"), ("r1", "t2"), ("r1", "t3"),
                                ("r2", "t1"), ("r2", "t2"), ("r2", "t3"), ("r3", "t1")]
    assert tm.loc[("r3", "t1"), "suite"] == "memory"
    assert tm.loc[("r1", "t3"), "scene_id"] == "P02"


def test_completed_success_gcr(tm):
    r = tm.loc[("r1", "t1")]
    assert r.completed and r.success and r.gcr == 1.0
    r = tm.loc[("r1", "t2")]
    assert r.completed and not r.success and r.gcr == pytest.approx(1 / 3)
    r = tm.loc[("r1", "t3")]
    assert r.completed and not r.success and r.gcr == 0.0
    # failure policy: a TRUE condition in a non-completed task still gives GCR 0
    r = tm.loc[("r2", "t1")]
    assert not r.completed and not r.success and r.gcr == 0.0 and r.n_true == 1


def test_action_validity_counts_all_attempts_and_flags_none(tm):
    assert tm.loc[("r1", "t1"), "action_validity"] == pytest.approx(6 / 10)
    assert tm.loc[("r1", "t1"), "n_attempts"] == 10
    assert tm.loc[("r1", "t1"), "n_repair_attempts"] == 1
    assert tm.loc[("r2", "t1"), "action_validity"] == pytest.approx(30 / 90)
    r = tm.loc[("r2", "t2")]
    assert r.action_validity == 0.0 and r.no_attempts
    assert not tm.loc[("r1", "t2"), "no_attempts"]


def test_reference_coverage_types_only(tm):
    assert tm.loc[("r1", "t1"), "reference_coverage"] == pytest.approx(2 / 3)  # pour, open
    assert tm.loc[("r1", "t3"), "reference_coverage"] == pytest.approx(1 / 2)  # cut
    assert tm.loc[("r2", "t3"), "reference_coverage"] == pytest.approx(1 / 2)  # wash
    assert tm.loc[("r3", "t1"), "reference_coverage"] == 1.0


def test_endpoints(tm):
    assert tm.loc[("r1", "t1"), "endpoint"] == "completed_all"
    assert tm.loc[("r1", "t2"), "endpoint"] == "completed_partial"
    assert tm.loc[("r1", "t3"), "endpoint"] == "completed_none"
    assert tm.loc[("r2", "t1"), "endpoint"] == "execution_blocked"
    assert tm.loc[("r2", "t2"), "endpoint"] == "parse_failure"
    # first non-completed status in group order (empty_plan in g4 before g5's block)
    assert tm.loc[("r2", "t3"), "endpoint"] == "empty_plan"
    assert set(tm["endpoint"]) <= set(ENDPOINTS)
    assert ((tm["endpoint"] == "completed_all") == tm["success"]).all()


def test_resources_summed_over_groups(tm):
    r = tm.loc[("r1", "t1")]
    assert (r.prompt_tokens, r.query_attempts, r.query_responses, r.cross_group_hits) == (150, 2, 1, 2)
    assert tm.loc[("r1", "t2"), "prompt_tokens"] == 0


def test_macro_hand_computed(tm):
    m = macro(tm.reset_index(), by=("run_id",)).set_index("run_id")
    a = m.loc["r1"]
    assert a.n_tasks == 3 and a.operational_tsr == pytest.approx(1 / 3)
    assert a.strict_tsr == pytest.approx(1 / 2) and a.n_terminal == 2
    assert a.gcr == pytest.approx((1 + 1 / 3 + 0) / 3)
    assert a.gcr_terminal == pytest.approx(0.5) and a.gcr_event == pytest.approx(1 / 3)
    assert a.action_validity == pytest.approx((0.6 + 1.0 + 0.75) / 3)
    assert a.completed_rate == 1.0
    assert a.reference_coverage == pytest.approx((2 / 3 + 1 + 1 / 2) / 3)
    b = m.loc["r2"]  # all tasks stay in the denominator
    assert b.n_tasks == 3 and b.completed_rate == 0 and b.gcr == 0 and b.operational_tsr == 0
    assert b.n_no_attempts == 1
    assert b.action_validity == pytest.approx((30 / 90 + 0 + 1 / 80) / 3)


def test_tier_columns_for_statistics(tm):
    r = tm.loc[("r1", "t2")]
    assert np.isnan(r.success_terminal) and np.isnan(r.gcr_terminal) and r.gcr_event == pytest.approx(1 / 3)
    assert tm.loc[("r1", "t1"), "success_terminal"] == 1.0


def test_paper_strict_tsr_figures():
    for k, expect in ((3, 8.82), (6, 17.65)):
        df = pd.DataFrame({"planner": "p", "tier": ["terminal"] * 34 + ["event"] * 71,
                           "success": [True] * k + [False] * (105 - k), "gcr": 0.0,
                           "action_validity": 0.0, "completed": True, "reference_coverage": 1.0})
        m = macro(df, by=("planner",)).iloc[0]
        assert round(100 * m.strict_tsr, 2) == expect
        assert m.operational_tsr == pytest.approx(k / 105)


def test_errors_name_the_field():
    ex = make_export()
    ex.group_records.loc[0, "status"] = "done"
    with pytest.raises(ValueError, match="group_records.status.*allowed"):
        task_metrics(ex)
    ex = make_export()
    ex.group_records = ex.group_records[ex.group_records.group_id != "g3"]
    with pytest.raises(ValueError, match="group_records lack groups"):
        task_metrics(ex)


# issue 11, bug 4: metrics trusted the record's condition list
def test_duplicated_true_condition_is_an_error_not_success():
    ex = make_export()
    cr = ex.condition_records
    # r1 t2 has TRUE, FALSE, UNKNOWN; a duplicated TRUE row would have made 2 of 3
    dup = cr[(cr.run_id == "r1") & (cr.task_id == "t2") & (cr.condition_id == "c0")]
    ex.condition_records = pd.concat([cr, dup], ignore_index=True)
    with pytest.raises(ValueError, match="run 'r1' task 't2' has condition 'c0' 2 times"):
        task_metrics(ex)


def test_true_for_condition_outside_contract_is_an_error():
    ex = make_export()
    cr = ex.condition_records
    # r1 t3 (contract: c0 only) with c0 FALSE plus a foreign TRUE: success 1.0 before the fix
    ex.condition_records = pd.concat([cr, pd.DataFrame([dict(run_id="r1", task_id="t3",
                                      condition_id="c9", truth="TRUE")])], ignore_index=True)
    with pytest.raises(ValueError, match=r"run 'r1' task 't3' has condition 'c9'.*not in the "
                                         r"frozen contract \(valid: \['c0'\]\)"):
        task_metrics(ex)


def test_missing_truth_for_contract_condition_is_an_error():
    ex = make_export()
    cr = ex.condition_records
    ex.condition_records = cr[~((cr.run_id == "r2") & (cr.task_id == "t2") & (cr.condition_id == "c2"))]
    with pytest.raises(ValueError, match="run 'r2' task 't2' has no truth for contract condition 'c2'"):
        task_metrics(ex)


def test_no_attempt_tasks_are_counted():
    m = macro(task_metrics(make_export()), by=("run_id",)).set_index("run_id")
    assert m.n_no_attempts.to_dict() == {"r1": 0, "r2": 1, "r3": 0}


def test_macro_names_its_argument_when_it_is_not_a_task_frame():
    import pandas as pd
    import pytest as _pytest
    from analysis import macro
    with _pytest.raises(TypeError, match=r"^argument task_df: expected a pandas DataFrame, got list$"):
        macro([1, 2])
    with _pytest.raises(ValueError, match=r"^argument task_df lacks column\(s\) \['tier'"):
        macro(pd.DataFrame({"planner": ["p"]}), by=("planner",))

"""Per-task comparison of two runs: ``Results.compare`` and ``python -m analysis.compare``.

Against hand-built exports (tests/export_factory.py): the two-run export, whose outcomes
are known by construction (alpha meets no contract's c1, beta meets every condition;
alpha's attempt is accepted in groups 0 and 2 of each episode, beta's in group 1), and
the richer seeded export, checked against the raw task records read independently.
"""
from __future__ import annotations

import numpy as np
import pytest

import analysis
from analysis._cli.compare import main
from analysis.report.compare import compare_runs, first_divergence
from analysis.records import read_records

from export_factory import build_export, build_rich_export

A, B = "alpha__planner__persistent", "beta__planner__persistent"


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    return build_export(tmp_path_factory.mktemp("cmp") / "export")


@pytest.fixture(scope="module")
def rich(tmp_path_factory):
    return build_rich_export(tmp_path_factory.mktemp("rich") / "export")


def test_two_run_export_by_hand(two_runs):
    res = analysis.load(two_runs).results(n_resamples=200)
    cmp = res.compare("alpha", "beta")   # run names with one run each
    assert (cmp.run_a, cmp.run_b, cmp.label_a, cmp.label_b) == (A, B, "alpha", "beta")
    assert (cmp.n_tasks, cmp.n_a_only, cmp.n_b_only, cmp.n_both, cmp.n_neither) == (4, 0, 4, 0, 0)
    t = cmp.tasks.set_index("task_id")
    assert list(t.index) == ["t1", "t2", "t3", "t4"] and set(t.solved_by) == {"B"}
    # the conditions each met: alpha only c2 of the terminal tasks, beta everything
    assert t.met_a.to_dict() == {"t1": ["c2"], "t2": [], "t3": ["c2"], "t4": []}
    assert t.met_b.to_dict() == {"t1": ["c1", "c2"], "t2": ["c1"], "t3": ["c1", "c2"],
                                 "t4": ["c1"]}
    # the first divergence: the first attempt of each task's first group
    assert t.divergence_group.to_dict() == {"t1": "P01-ep1/g000", "t2": "P01-ep1/g002",
                                            "t3": "P01-ep2/g000", "t4": "P02-ep1/g001"}
    assert set(t.divergence_attempt) == {1}
    assert t.loc["t1", "attempt_a"] == "pour(squash, bottle, glass, counter) [planner, accepted]"
    assert t.loc["t1", "attempt_b"] == ("pour(squash, bottle, glass, counter) [planner, "
                                        "invalid, failed holding_source]")
    assert t.loc["t4", "attempt_b"] == "pick_up(glass, counter) [planner, accepted]"
    # B wins every task: P(A > B) = 0, and P(B > A) = 1, each with a degenerate interval
    assert (cmp.prob_improvement, cmp.low, cmp.high, cmp.n_clusters) == (0.0, 0.0, 0.0, 3)
    back = res.compare(B, A)
    assert (back.prob_improvement, back.n_a_only, back.n_b_only) == (1.0, 4, 0)
    assert set(back.tasks.solved_by) == {"A"}


def test_rich_export_against_the_raw_records(rich):
    export = analysis.load(rich)
    runs = sorted(export.runs.run_id[export.runs.suite == "planner"])

    def outcome(rid):
        recs = read_records(rich / "runs" / rid / "tasks.jsonl")
        return {t["task_id"]: (t["completed"] and all(c["truth"] == "TRUE" for c in t["conditions"]),
                               [c["id"] for c in t["conditions"] if c["truth"] == "TRUE"],
                               t["episode_id"]) for t in recs}

    def kinds(ra, rb):
        oa, ob = outcome(ra), outcome(rb)
        return (oa, ob, sorted(t for t in oa if oa[t][0] and not ob[t][0]),
                sorted(t for t in oa if ob[t][0] and not oa[t][0]))
    # the first pair of runs with tasks of both kinds (the seeded export has some)
    ra, rb = next((x, y) for x in runs for y in runs if x < y and all(kinds(x, y)[2:]))
    oa, ob, want_a, want_b = kinds(ra, rb)
    cmp = compare_runs(export, ra, rb, n_resamples=500, seed=3)
    assert sorted(cmp.tasks.task_id[cmp.tasks.solved_by == "A"]) == want_a
    assert sorted(cmp.tasks.task_id[cmp.tasks.solved_by == "B"]) == want_b
    for r in cmp.tasks.itertuples():
        assert r.met_a == oa[r.task_id][1] and r.met_b == ob[r.task_id][1]
    # P(A > B): 1 per task A wins, 1/2 per tie, as a task-macro mean
    wins = np.array([1.0 if oa[t][0] > ob[t][0] else 0.5 if oa[t][0] == ob[t][0] else 0.0
                     for t in oa])
    assert cmp.prob_improvement == pytest.approx(wins.mean())
    assert cmp.prob_improvement == pytest.approx(0.5 + (len(want_a) - len(want_b)) / (2 * len(oa)))
    assert 0 <= cmp.low <= cmp.prob_improvement <= cmp.high <= 1
    assert cmp.n_clusters == len({v[2] for v in oa.values()})
    # the same seed gives the same interval, another seed another one
    again = compare_runs(export, ra, rb, n_resamples=500, seed=3)
    other = compare_runs(export, ra, rb, n_resamples=500, seed=4)
    assert (again.low, again.high) == (cmp.low, cmp.high)
    assert (other.low, other.high) != (cmp.low, cmp.high)
    # gcr as the score: ties only where both GCRs are equal
    tm = export.task_metrics.set_index(["run_id", "task_id"]).gcr
    g = np.array([1.0 if tm[(ra, t)] > tm[(rb, t)] else 0.5 if tm[(ra, t)] == tm[(rb, t)]
                  else 0.0 for t in oa])
    assert compare_runs(export, ra, rb, metric="gcr", n_resamples=200).prob_improvement == \
        pytest.approx(g.mean())


def test_first_divergence_status_only_and_none():
    att = {"source": "planner", "action": None, "raw": "oops", "status": "invalid",
           "failed_checks": []}
    g = {"group_id": "g", "status": "parse_failure", "attempts": [att]}
    assert first_divergence([g], [g]) is None
    assert first_divergence([g], [{**g, "status": "completed"}]) == \
        ("g", None, "group status parse_failure", "group status completed")
    assert first_divergence([g], [{**g, "attempts": [{**att, "raw": "other"}]}])[2:] == \
        ("unparsed 'oops' [planner, invalid]", "unparsed 'other' [planner, invalid]")


def test_refusals_name_the_parameter(two_runs, rich):
    export = analysis.load(two_runs)
    with pytest.raises(ValueError, match=r"^run_a='alpah': no such run ID or planner; did you "
                                         r"mean alpha\?"):
        compare_runs(export, "alpah", "beta")
    with pytest.raises(ValueError, match="^run_a and run_b are the same run"):
        compare_runs(export, "alpha", A)
    with pytest.raises(ValueError, match=r"^metric='tsr': expected one of \['success', 'gcr'"):
        compare_runs(export, "alpha", "beta", metric="tsr")
    r = analysis.load(rich)
    mem = sorted(r.runs.run_id[r.runs.suite == "memory"])
    with pytest.raises(ValueError, match=r"^run_a=.alpha.: names 3 runs \(alpha__memory__persistent, "):
        compare_runs(r, "alpha", "beta")
    with pytest.raises(ValueError, match="on the memory suite and run_b=.* on the planner suite"):
        compare_runs(r, mem[0], "beta__planner__persistent")


def test_command(two_runs, rich, capsys):
    def cli(*args):
        with pytest.raises(SystemExit) as exc:
            main([*args])
        out = capsys.readouterr()
        return exc.value.code, out.out, out.err

    code, out, _ = cli("a=beta", "b=alpha", f"export_root={two_runs}", "stats.n_resamples=200")
    assert code == 0
    assert out.splitlines()[:3] == [
        f"A = beta ({B}), B = alpha ({A}); suite planner, 4 tasks",
        "solved by A only: 4; by B only: 0; by both: 0; by neither: 0",
        "P(A > B) on success: 1.000 [95% interval 1.000, 1.000] (episode-cluster percentile "
        "bootstrap, 3 episodes, 200 resamples, seed 0; 0.5: neither is better)"]
    assert "t1 (task t1): solved by A only" in out
    assert "  conditions met: A 2/2 [c1, c2]; B 1/2 [c2]" in out
    assert ("  first divergence: group P01-ep1/g000, attempt 1: A pour(squash, bottle, glass, "
            "counter) [planner, invalid, failed holding_source]; B pour(squash, bottle, glass, "
            "counter) [planner, accepted]") in out
    # configuration mistakes: one line naming the key, exit 2, before any verification
    code, _, err = cli("a=alpah", "b=beta", f"export_root={two_runs}")
    assert code == 2 and err.count("\n") == 1 and "a='alpah'" in err and "did you mean alpha" in err
    code, _, err = cli("a=alpha", f"export_root={two_runs}")
    assert code == 2 and "b is required" in err
    code, _, err = cli("a=alpha", "b=beta", "metric=tsr", f"export_root={two_runs}")
    assert code == 2 and "metric='tsr'" in err
    code, _, err = cli("run_a=alpha", "b=beta", f"export_root={two_runs}")
    assert code == 2 and "did you mean a" in err
    # a refusal of the work: exit 1, one line
    code, _, err = cli("a=alpha__memory__persistent", "b=beta__planner__persistent",
                       f"export_root={rich}", "stats.n_resamples=200")
    assert code == 1 and err.count("\n") == 1 and "compare two runs of one suite" in err
    code, out, _ = cli("--help")
    assert code == 0 and "a=" in out and "P(A > B)" in out

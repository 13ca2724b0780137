"""Run names: several configurations of one planner side by side in one export.

The done-when test of issue 37 item 1: two chat configurations (two model names behind
the loopback test server) run into one scratch export under two run names; both appear
in tables 4 and 6 and in the viewer, and re-execution passes. Around it: the records keep
the planner, its settings and the name apart; verification ties the run ID to the name;
a bad name is refused with one line; add_planner's ``name=`` is the same run name.
"""
from __future__ import annotations

import json
import re
import shutil

import pytest

pytest.importorskip("openai")

from analysis._cli import run as run_mod
from analysis.records import IntegrityError, read_records, update_manifest, write_record
from analysis.records.integrity import verify_records
from analysis.records.schemas import SchemaError, validate
from analysis.planners.llm.testserver import LoopbackServer

from export_factory import build_export
from analysis.executor import Rules
from analysis.records.io import write_records
from analysis.planners.toy import toy_episode, toy_suite, toy_tasks
from test_llm import FAST, settings

MODELS = {"chat-small": "toy-small", "chat-large": "toy-large"}
EPS = ("toy-a", "toy-b", "toy-c")


def make_export(root):
    """The toy cohort of three episodes, its group IDs made unique across episodes (the
    tables join group records by run and group)."""
    def own(ids, eid):
        return [f"{eid}/{g}" for g in ids]
    episodes, tasks = [], []
    for eid in EPS:
        ep = toy_episode(eid)
        for g in ep["groups"]:
            g["group_id"] = f"{eid}/{g['group_id']}"
            g["instruction"] += f" [{eid}]"
        episodes.append(ep)
        tasks += [{**t, "group_ids": own(t["group_ids"], eid)} for t in toy_tasks(eid)]
    c = root / "cohort"
    write_record(c / "rules.json", Rules.load().to_json())
    write_records(c / "episodes.jsonl.gz", episodes)
    write_records(c / "tasks.jsonl", tasks)
    write_records(c / "suites.jsonl", [toy_suite(EPS), dict(toy_suite(EPS[:2]), suite="memory")])
    update_manifest(root, {"cohort/rules.json": "rules", "cohort/episodes.jsonl.gz": "episode",
                           "cohort/tasks.jsonl": "task", "cohort/suites.jsonl": "suite"})
    return root


@pytest.fixture(scope="module")
def two_chats(tmp_path_factory):
    """A toy export with two chat runs of the planner suite, one model each."""
    base = tmp_path_factory.mktemp("names")
    export = make_export(base / "fe")
    seen = set()
    srv = LoopbackServer(fault=lambda body, n: seen.add(body["model"])).start()
    try:
        for name, model in MODELS.items():
            summary, _ = run_mod.run_suite(
                "chat", "planner", "persistent", export, progress=False,
                state_dir=str(base / "state"), runtime=FAST, run_name=name,
                planner_settings=settings(srv.url, base / name, model=model))
            assert summary.run_id == f"{name}__planner__persistent"
    finally:
        srv.stop()
    return export, base, seen


def test_two_chat_models_live_in_one_export_under_their_names(two_chats):
    export, _, seen = two_chats
    assert seen == set(MODELS.values())   # each configuration asked the server its model
    runs = {p.name for p in (export / "runs").iterdir()}
    assert runs == {"chat-small__planner__persistent", "chat-large__planner__persistent"}
    for name, model in MODELS.items():
        (run,) = read_records(export / "runs" / f"{name}__planner__persistent" / "run.json")
        # the planner, its settings and the name, each in its own field
        assert run["planner"] == "chat" and run["run_name"] == name
        assert run["planner_config"]["model"] == model
    verify_records(export)   # the run IDs follow the names


def test_both_runs_appear_in_tables_4_and_6_and_the_note_names_the_planner(two_chats):
    import analysis
    export, _, _ = two_chats
    res = analysis.load(export).results(n_resamples=200)
    t4 = res.artefact("planner_results")
    assert list(t4.display.planner) == ["chat-large", "chat-small"]
    assert sorted(set(t4.data.planner)) == ["chat-large", "chat-small"]
    assert ("Runs named apart from their planner: chat-large (planner chat); chat-small "
            "(planner chat).") in t4.notes
    t6 = res.artefact("pairwise_contrasts")
    assert set(zip(t6.data.planner_a, t6.data.planner_b)) == {("chat-large", "chat-small")}
    assert "chat-small (planner chat)" in t6.notes
    # the export's run table keeps both the planner and the name
    runs = analysis.load(export).runs.set_index("run_id")
    assert runs.loc["chat-small__planner__persistent", ["planner", "run_name"]].tolist() == \
        ["chat", "chat-small"]


def test_both_runs_appear_in_the_viewer(two_chats, tmp_path):
    from analysis.view import build
    export, _, _ = two_chats
    build(export, tmp_path / "site", stats={"n_resamples": 200})
    text = (tmp_path / "site" / "data" / "overview.js").read_text(encoding="utf-8")
    data = json.loads(text[text.index("{"):text.rindex("}") + 1])
    shown = {r["run_id"]: (r["label"], r["planner"]) for r in data["runs"]}
    assert shown == {"chat-small__planner__persistent": ("chat-small", "chat"),
                     "chat-large__planner__persistent": ("chat-large", "chat")}
    # every task page carries both runs' traces
    page = next((tmp_path / "site" / "data" / "task").iterdir()).read_text(encoding="utf-8")
    assert "chat-small__planner__persistent" in page and "chat-large__planner__persistent" in page


def test_reexecute_passes_on_both_named_runs(two_chats, capsys):
    from analysis._cli.reexecute import run_reexecute
    export, _, _ = two_chats
    assert run_reexecute(export) == 0
    out = capsys.readouterr().out
    assert "2 runs re-executed, 0 divergences" in out
    assert run_reexecute(export, run="chat-small") == 0   # a run name selects its runs


def test_the_same_name_twice_is_refused_and_nothing_written(two_chats, tmp_path):
    export, base, _ = two_chats
    before = sorted(p.name for p in (export / "runs").iterdir())
    with pytest.raises(run_mod.RunExists, match="chat-small__planner__persistent already exists"):
        run_mod.run_suite("chat", "planner", "persistent", export, progress=False,
                          state_dir=str(tmp_path / "state"), runtime=FAST, run_name="chat-small",
                          planner_settings=settings("http://127.0.0.1:9/v1", tmp_path))
    assert sorted(p.name for p in (export / "runs").iterdir()) == before


@pytest.mark.parametrize("bad", ["Chat", "a__b", "-a", "a" * 65, ""])
def test_a_bad_run_name_is_refused_before_any_work(tmp_path, bad):
    export = make_export(tmp_path / "fe")
    with pytest.raises(ValueError, match=r"^run_name=.*lowercase letters"):
        run_mod.run_suite("lexicon", "planner", "persistent", export, progress=False,
                          run_name=bad, state_dir=str(tmp_path / "state"))
    assert not (export / "runs").exists()


def test_run_name_on_the_command_line(tmp_path, capsys):
    """run_name=NAME names the run; a bad one is one line naming the key (exit 2)."""
    export = make_export(tmp_path / "fe")
    with pytest.raises(SystemExit) as exc:
        run_mod.main(["planner=lexicon", "run_name=Lex__x", f"export_root={export}",
                      f"state_dir={tmp_path / 'state'}"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "run_name='Lex__x'" in err, err
    with pytest.raises(SystemExit) as exc:
        run_mod.main(["planner=lexicon", "run_name=lex-seed1", "seed=1", "progress=false",
                      f"export_root={export}", f"state_dir={tmp_path / 'state'}"])
    assert exc.value.code == 0
    (run,) = read_records(export / "runs" / "lex-seed1__planner__persistent" / "run.json")
    assert (run["planner"], run["run_name"], run["seed"]) == ("lexicon", "lex-seed1", 1)
    # the planner's own name as the run name: no run_name field (as before run names)
    with pytest.raises(SystemExit) as exc:
        run_mod.main(["planner=lexicon", "run_name=lexicon", "progress=false",
                      f"export_root={export}", f"state_dir={tmp_path / 'state'}"])
    assert exc.value.code == 0
    (run,) = read_records(export / "runs" / "lexicon__planner__persistent" / "run.json")
    assert "run_name" not in run


def test_verification_ties_the_run_id_to_the_name(tmp_path):
    root = build_export(tmp_path / "e")
    rel = "runs/alpha__planner__persistent/run.json"
    (run,) = read_records(root / rel)

    def tamper(rec, match):
        dst = tmp_path / f"t{len(list(tmp_path.iterdir()))}"
        shutil.copytree(root, dst)
        write_record(dst / rel, rec)
        update_manifest(dst, {rel: "run"})
        with pytest.raises(IntegrityError, match=match):
            verify_records(dst)

    # a name the ID does not carry
    tamper({**run, "run_name": "other"},
           re.escape("must be <run name>__<suite>__<memory> = 'other__planner__persistent'"))
    # a name equal to the planner's is not written (one spelling per run)
    tamper({**run, "run_name": "alpha"}, "equals the planner's name")
    with pytest.raises(SchemaError, match="run_name"):
        validate("run", {**run, "run_name": "Bad Name"})


def test_labels_and_memory_pairs_follow_run_names():
    """Two configurations of one planner on the memory suite: each name is its own row
    (and its own memory study), labelled by name and memory condition."""
    import pandas as pd
    from analysis.report.context import _labels, memory_pairs
    rows = [(f"{n}__memory__{m}", "chat", n, m, "memory")
            for n in ("chat-a", "chat-b") for m in ("persistent", "reset")]
    rows.append(("chat__planner__persistent", "chat", "chat", "persistent", "planner"))
    tm = pd.DataFrame(rows, columns=["run_id", "planner", "run_name", "memory", "suite"])
    assert memory_pairs(tm) == ["chat-a", "chat-b"]
    assert _labels(tm).tolist() == ["chat-a (persistent)", "chat-a (reset)",
                                    "chat-b (persistent)", "chat-b (reset)", "chat"]
    # without run names (a frame made by hand), the planner names the rows as before
    assert memory_pairs(tm.drop(columns="run_name")) == ["chat"]

"""analysis.run: records, parallel == serial, atomic writes, name errors, re-execution."""
import pytest

from analysis._cli import run as run_mod
from analysis.executor import Rules
from analysis.records.io import write_record, write_records
from analysis.records.manifest import read_manifest, update_manifest
from analysis.records.schemas import validate
from analysis.planners.toy import toy_episode, toy_suite, toy_tasks
from analysis._cli.reexecute import reexecute, run_reexecute

EPS = ("toy-a", "toy-b", "toy-c")


@pytest.fixture()
def export(tmp_path):
    root = tmp_path / "fe"
    c = root / "cohort"
    write_record(c / "rules.json", Rules.load().to_json())
    write_records(c / "episodes.jsonl.gz", [toy_episode(e) for e in EPS])
    write_records(c / "tasks.jsonl", [t for e in EPS for t in toy_tasks(e)])
    mem = dict(toy_suite(EPS[:2]), suite="memory")
    write_records(c / "suites.jsonl", [toy_suite(EPS), mem])
    update_manifest(root, {"cohort/rules.json": "rules", "cohort/episodes.jsonl.gz": "episode",
                           "cohort/tasks.jsonl": "task", "cohort/suites.jsonl": "suite"})
    return root


def test_run_writes_valid_records_and_manifest(export):
    summary, rec = run_mod.run_suite("belief_search", "planner", "persistent", export,
                                     progress=False)
    d = export / "runs" / "belief_search__planner__persistent"
    assert sorted(p.name for p in d.iterdir()) == ["groups.jsonl.gz", "run.json", "tasks.jsonl"]
    assert summary.n_groups == 9 and summary.n_tasks == 6
    validate("run", rec["run"])
    for g in rec["groups"]:
        validate("group_record", g)
    for t in rec["tasks"]:
        validate("task_record", t)
    files = read_manifest(export)["files"]
    assert files["runs/belief_search__planner__persistent/groups.jsonl.gz"]["records"] == 9
    assert not [p for p in (export / "runs").iterdir() if p.name.startswith(".")]


def test_parallel_equals_serial(export):
    _, serial = run_mod.run_suite("random_hints", "planner", "reset", export, progress=False,
                                  write=False)
    _, par = run_mod.run_suite("random_hints", "planner", "reset", export, jobs=2,
                               progress=False, write=False)
    assert serial == par


def test_rerun_is_refused_without_overwrite_and_gives_identical_bytes_with_it(export):
    run_mod.run_suite("lexicon", "memory", "reset", export, progress=False)
    p = export / "runs" / "lexicon__memory__reset" / "groups.jsonl.gz"
    first = p.read_bytes()
    manifest = (export / "MANIFEST.json").read_bytes()
    with pytest.raises(run_mod.RunExists, match="overwrite=true"):
        run_mod.run_suite("lexicon", "memory", "reset", export, progress=False)
    assert p.read_bytes() == first and (export / "MANIFEST.json").read_bytes() == manifest
    run_mod.run_suite("lexicon", "memory", "reset", export, progress=False, overwrite=True)
    assert p.read_bytes() == first
    assert (export / "MANIFEST.json").read_bytes() == manifest


def test_unknown_names_list_valid_ones(export):
    with pytest.raises(ValueError, match=r"suite='x'.*\['memory', 'planner'\]"):
        run_mod.run_suite("lexicon", "x", "reset", export, progress=False)
    with pytest.raises(ValueError, match="greedy_hints"):
        run_mod.run_suite("nope", "planner", "reset", export, progress=False)
    with pytest.raises(ValueError, match="persistent"):
        run_mod.run_suite("lexicon", "planner", "sometimes", export, progress=False)


def test_interrupted_run_leaves_no_partial_records(export, monkeypatch):
    # interrupted after the switch, before the commit point: everything is rolled back
    calls = []
    manifest = (export / "MANIFEST.json").read_bytes()

    def failing(*args, **kwargs):
        calls.append(args)
        raise KeyboardInterrupt

    real = run_mod.write_run
    monkeypatch.setattr(run_mod, "write_run",
                        lambda *a, **k: real(*a, **{**k, "check": failing}))
    with pytest.raises(KeyboardInterrupt):
        run_mod.run_suite("lexicon", "planner", "persistent", export, progress=False)
    assert calls
    assert not (export / "runs").exists() or list((export / "runs").iterdir()) == []
    assert not any(k.startswith("runs/") for k in read_manifest(export)["files"])
    assert (export / "MANIFEST.json").read_bytes() == manifest
    # no transaction left, and nothing beside the export (the episode journal that lets a
    # rerun resume lives under the user cache directory)
    assert [p.name for p in export.parent.iterdir()] == ["fe"]


def test_changed_cohort_is_refused(export):
    (export / "cohort" / "tasks.jsonl").write_text("{}\n")
    with pytest.raises(ValueError, match="SHA-256"):
        run_mod.run_suite("lexicon", "planner", "persistent", export, progress=False)


def test_reexecute_all_runs_and_detect_tampering(export, capsys):
    run_mod.run_suite("noisy_search_binding", "planner", "persistent", export, progress=False)
    run_mod.run_suite("belief_search", "memory", "reset", export, progress=False)
    reports = reexecute(export)
    assert len(reports) == 2 and all(r.ok for r in reports)
    assert run_reexecute(export, "belief_search") == 0
    assert run_reexecute(export, "nobody") == 2  # refused from the manifest, before any work
    # run= takes a run ID or a planner name of the export
    assert run_reexecute(export, run="belief_search__memory__reset") == 0
    assert "1 run re-executed" in capsys.readouterr().out
    assert run_reexecute(export, run="noisy_search_binding") == 0
    assert run_reexecute(export, run="belief_search__planner__reset") == 2
    assert "belief_search__memory__reset" in capsys.readouterr().err
    # flip one recorded attempt status, recomputing every hash: only re-execution sees it
    from analysis.records.io import read_records
    rel = "runs/belief_search__memory__reset/groups.jsonl.gz"
    recs = read_records(export / rel)
    a = recs[0]["attempts"][0]
    a["status"] = "invalid" if a["status"] == "accepted" else "accepted"
    write_records(export / rel, recs)
    update_manifest(export, {rel: "group_record"})
    capsys.readouterr()
    assert run_reexecute(export) == 1
    assert "groups.jsonl.gz line 1" in capsys.readouterr().err
    # a changed byte without new hashes is refused by the verification that comes first
    p = export / rel
    p.write_bytes(p.read_bytes()[:-1] + bytes([p.read_bytes()[-1] ^ 1]))
    assert run_reexecute(export) == 1
    assert rel in capsys.readouterr().err


def test_planner_from_an_import_path_runs_under_its_own_name(export):
    summary, rec = run_mod.run_suite("external_planner:FirstHintPlanner", "planner",
                                     "persistent", export, progress=False)
    assert summary.run_id == "first_hint__planner__persistent"
    assert rec["run"]["planner"] == "first_hint"
    assert rec["run"]["planner_config"]["import_path"] == "external_planner:FirstHintPlanner"
    assert (export / "runs" / "first_hint__planner__persistent" / "run.json").exists()
    (report,) = reexecute(export, planner="first_hint")
    assert report.ok and report.n_groups == 9


@pytest.mark.parametrize("name, message", [
    ("external_planner:Missing", "cannot import 'Missing'"),
    ("no_such_module:X", "cannot import 'X'"),
    ("external_planner:Unnamed", "needs a `name` attribute"),
    ("nonsense", "or an import path"),
])
def test_bad_planner_paths_are_refused_before_any_work(export, name, message):
    with pytest.raises(ValueError, match=message):
        run_mod.run_suite(name, "planner", "persistent", export, progress=False)
    assert not (export / "runs").exists()


def test_an_import_path_planners_unknown_setting_is_refused_before_any_work(export, monkeypatch):
    # a typo in planner.settings.<key> was found only after verifying the export, as a
    # TypeError from the constructor
    import analysis.records as frozen
    monkeypatch.setattr(frozen, "verify", lambda root: pytest.fail("verified before the settings were checked"))
    with pytest.raises(ValueError, match=r"^planner.settings.sed: FirstHintPlanner takes no such setting "
                                         r"\(it takes: seed\)$"):
        run_mod.run_suite("external_planner:FirstHintPlanner", "planner", "persistent", export,
                          progress=False, planner_settings={"sed": 3}, verify_export=True)
    assert not (export / "runs").exists()


@pytest.mark.e2e
@pytest.mark.parametrize("planner", ["greedy_hints", "lexicon"])
def test_committed_runs_are_what_the_code_produces(planner):
    # The committed records must be regenerable: rerunning a planner on the committed
    # cohort gives the committed records exactly (two fast planners stand for all; every
    # committed run is re-executed in the next test).
    from pathlib import Path
    from analysis.records import read_records
    root = Path(__file__).resolve().parents[1] / "frozen_exports"
    folder = root / "runs" / f"{planner}__planner__persistent"
    _, rec = run_mod.run_suite(planner, "planner", "persistent", root, progress=False,
                               write=False)
    assert rec["run"] == read_records(folder / "run.json")[0]
    assert rec["groups"] == read_records(folder / "groups.jsonl.gz")
    assert rec["tasks"] == read_records(folder / "tasks.jsonl")


@pytest.mark.e2e
@pytest.mark.slow(seconds=75)
def test_every_committed_run_reexecutes_without_divergence():
    from pathlib import Path
    root = Path(__file__).resolve().parents[1] / "frozen_exports"
    reports = reexecute(root)
    assert len(reports) == 8
    assert [r.run_id for r in reports if not r.ok] == []

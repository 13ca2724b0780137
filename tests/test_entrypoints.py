"""The seven commands' configuration checks, help and directory rules.

Every bad value or key is refused before the command loads anything: exit code 2, one
line on stderr naming the key (and what is allowed), no traceback, nothing written. Most
cases call the entry point's ``main(argv)`` in this process (the same code path as
``python -m``, milliseconds each); a few run as real processes.
"""
from __future__ import annotations

import importlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from analysis._cli.config_check import COMMANDS, MAX_NAME_LENGTH

from checkout_copy import checkout_copy
from export_factory import build_export

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def places(tmp_path_factory):
    base = tmp_path_factory.mktemp("ep")
    export = build_export(base / "export")
    a_file = base / "a_file"
    a_file.write_text("not a folder\n")
    records = base / "records"
    records.mkdir()
    return {"E": str(export), "F": str(a_file), "R": str(records), "T": str(base)}


def _snapshot(folder: Path) -> dict:
    return {p: p.read_bytes() for p in sorted(Path(folder).rglob("*")) if p.is_file()}


LONG = "a" * 300
#: (command, overrides, text the one-line message must contain: the key, and what is wrong)
CASES = [
    ("tables", ["stats.n_resamples=0"], ["stats.n_resamples=0", "from 20 to 200000"]),
    ("tables", ["stats.n_resamples=-5"], ["stats.n_resamples=-5", "integer"]),
    ("tables", ["stats.n_resamples=abc"], ["stats.n_resamples='abc'", "integer"]),
    ("tables", ["stats.n_resamples=2.5"], ["stats.n_resamples=2.5", "integer"]),
    ("tables", ["stats.n_resamples=1"], ["stats.n_resamples=1", "from 20"]),
    ("tables", ["stats.n_resamples=3"], ["stats.n_resamples=3", "from 20"]),
    ("tables", ["stats.n_resamples=1000000"], ["stats.n_resamples", "200000"]),
    ("tables", ["stats.n_resamples=true"], ["stats.n_resamples=True", "integer"]),
    ("tables", ["stats.n_resamples=30", "stats.confidence_level=0.99"],
     ["stats.n_resamples=30", "stats.confidence_level=0.99", "at least 200"]),
    ("tables", ["stats.confidence_level=1.5"], ["stats.confidence_level=1.5", "between 0 and 1"]),
    ("tables", ["stats.confidence_level=0"], ["stats.confidence_level=0", "between 0 and 1"]),
    ("tables", ["stats.confidence_level=high"], ["stats.confidence_level='high'"]),
    ("tables", ["stats.method=bogus"], ["stats.method='bogus'", "bootstrap_t", "cr1_t"]),
    ("tables", ["stats.method=bootsrap_t"], ["stats.method", "did you mean bootstrap_t"]),
    ("tables", ["stats.pairwise_method=bogus"], ["stats.pairwise_method='bogus'", "default"]),
    ("tables", ["stats.contrast_metrics=[bogus]"], ["stats.contrast_metrics", "'bogus'", "gcr"]),
    ("tables", ["stats.contrast_metrics=gcr"], ["stats.contrast_metrics='gcr'", "list"]),
    ("tables", ["stats.contrast_metrics=[]"], ["stats.contrast_metrics=[]", "non-empty"]),
    ("tables", ["stats.contrast_metrics=[gcr,gcr]"], ["stats.contrast_metrics", "twice"]),
    ("tables", ["stats.seed=-1"], ["stats.seed=-1", "from 0"]),
    ("tables", ["stats.seed=abc"], ["stats.seed='abc'"]),
    ("tables", ["stats.n_resample=5"], ["'stats.n_resample'", "did you mean stats.n_resamples"]),
    ("tables", ["+stats.n_resample=5"], ["'stats.n_resample'", "did you mean stats.n_resamples"]),
    ("tables", ["outdir=/tmp/x"], ["'outdir'", "did you mean out_dir"]),
    ("tables", ["stats=3"], ["stats=3", "section"]),
    ("tables", ["~stats.seed"], ["~stats.seed", "cannot be deleted"]),
    ("tables", ["stats.n_resamples=[1"], ["cannot parse"]),
    ("tables", ["out_dir={F}"], ["out_dir=", "is not a folder"]),
    ("tables", ["export_root={T}/missing"], ["export_root=", "no such folder"]),
    ("tables", ["planner=lexicon"], ["'planner'", "unknown key"]),
    ("verify", ["export_root={T}/missing"], ["export_root=", "no such folder"]),
    ("verify", ["export_roots={E}"], ["'export_roots'", "did you mean export_root"]),
    ("verify", ["copy_to={F}"], ["copy_to=", "is not a folder"]),
    ("compile", ["source={T}/missing"], ["source=", "no such folder"]),
    ("compile", ["source={T}", "out_dir={F}"], ["out_dir=", "is not a folder"]),
    ("run", ["planner=bogus"], ["planner='bogus'", "belief_search", "planner=custom"]),
    ("run", ["planner=lexicn"], ["planner='lexicn'", "did you mean lexicon"]),
    ("run", ["planner=custom"], ["planner.name is required"]),
    ("run", ["planner=custom", "planner.name=no_such_module:X"],
     ["planner.name", "cannot import 'X'"]),
    ("run", ["planner=custom", f"planner.name=external_planner:Unnamed"],
     ["planner.name", "`name` attribute"]),
    ("run", ["memory=sometimes"], ["memory='sometimes'", "persistent", "reset"]),
    ("run", ["suite=bogus"], ["suite='bogus'", "memory", "planner"]),
    ("run", ["seed=-1"], ["seed=-1", "from 0"]),
    ("run", ["jobs=0"], ["jobs=0", "from 1 to 64"]),
    ("run", ["jobs=2.5"], ["jobs=2.5", "integer"]),
    ("run", ["attempt_limit=0"], ["attempt_limit=0", "from 1"]),
    ("run", ["runtime.repair=maybe"], ["runtime.repair='maybe'", "true or false"]),
    ("run", ["runtime.feedback_window=-1"], ["runtime.feedback_window=-1"]),
    ("run", ["overwrite=yes"], ["overwrite='yes'", "true or false"]),
    ("run", ["progress=2"], ["progress=2", "true or false"]),
    ("run", ["sed=1"], ["'sed'", "did you mean seed"]),
    ("run", ["planner=noisy_search_skip", "planner.settings.p_skip=2"],
     ["planner.settings.p_skip=2", "0 to 1"]),
    ("run", ["planner=noisy_search_skip", "planner.settings.p_skp=0.1"],
     ["planner.settings.p_skp", "did you mean p_skip"]),
    ("run", ["planner=noisy_search_skip", "planner.settings.p_skip=abc"],
     ["planner.settings.p_skip='abc'", "expected a number like 0.25"]),
    ("run", ["export_root={F}"], ["export_root=", "is not a folder"]),
    ("reexecute", ["planner=belief_search"], ["'planner'", "did you mean run"]),
    ("reexecute", ["run=[a,b]"], ["run=['a', 'b']", "run ID or a planner name"]),
    ("add_planner", [], ["records is required"]),
    ("add_planner", ["records={R}"], ["name is required"]),
    ("add_planner", ["records={R}", f"name={LONG}"], ["name='aaaa", f"at most {MAX_NAME_LENGTH}"]),
    ("add_planner", ["records={R}", "name=Bad__Name"], ["name='Bad__Name'", "lowercase"]),
    ("add_planner", ["records={R}", "name=x", "reexecute=maybe"], ["reexecute='maybe'"]),
    ("add_planner", ["records={T}/missing", "name=x"], ["records=", "no such folder"]),
    ("add_planner", ["records={R}", "name=x", "--force"], ["unknown option '--force'"]),
    ("run", ["run_name=Bad__Name"], ["run_name='Bad__Name'", "lowercase"]),
    ("compare", ["b=beta"], ["a is required"]),
    ("compare", ["a=alpha", "b=beta", "metric=tsr"], ["metric='tsr'", "'success'"]),
    ("compare", ["a=alpha", "b=beta", "stats.method=bogus"], ["stats.method='bogus'"]),
    ("compare", ["a=alpha", "b=beta", "stats.pairwise_method=default"],
     ["'stats.pairwise_method'", "unknown"]),
    ("view", ["port=-1"], ["port=-1", "from 0 to 65535"]),
    ("view", ["out_dir={F}"], ["out_dir=", "is not a folder"]),
    ("view", ["out_dir={E}/site"], ["out_dir=", "inside the export"]),
    ("view", ["serve=yes please"], ["serve='yes please'", "true or false"]),
]


def _call(command: str, argv: list[str], capsys) -> tuple[int, str, str]:
    module = importlib.import_module(f"analysis._cli.{command}")
    with pytest.raises(SystemExit) as exc:
        module.main(argv)
    out, err = capsys.readouterr()
    return exc.value.code, out, err


@pytest.mark.parametrize("command, overrides, needles", CASES,
                         ids=[f"{c}:{' '.join(o)[:40]}" for c, o, _ in CASES])
def test_bad_configuration_is_one_line_exit_2_nothing_written(command, overrides, needles,
                                                             places, capsys, tmp_path,
                                                             monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    argv = [o.format(**places) for o in overrides]
    # keep every command away from the committed export and outputs, should a check fail
    if command in ("run", "add_planner", "verify", "reexecute", "compare") and \
            not any(a.startswith("export_root") for a in argv):
        argv.append(f"export_root={places['E']}")
    if command in ("tables", "view"):
        argv += [a for a in (f"export_root={places['E']}", f"out_dir={tmp_path}/out")
                 if not any(x.startswith(a.split("=")[0] + "=") for x in argv)]
    before = _snapshot(places["E"])
    code, out, err = _call(command, argv, capsys)
    assert code == 2, (code, out, err)
    assert err.count("\n") == 1, err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err, (needle, err)
    assert err.startswith(f"analysis.{command}: ")
    assert list(tmp_path.iterdir()) == []  # nothing written, not even out_dir
    assert _snapshot(places["E"]) == before
    assert "+key" not in err and "append to your config" not in err


def test_there_are_at_least_thirty_cases_and_every_command_is_covered():
    assert len(CASES) >= 30
    assert {c for c, _, _ in CASES} == set(COMMANDS)


def test_debug_switch_shows_the_traceback(capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("E2W_DEBUG", "1")
    # an out_dir of this test: checking the default one would probe the checkout
    code, _, err = _call("tables", ["stats.n_resamples=0", f"out_dir={tmp_path}/out"], capsys)
    assert code == 2 and "Traceback" in err and "stats.n_resamples=0" in err


def _run(*args, cwd, env=None):
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", *args], cwd=cwd, capture_output=True,
                       text=True, timeout=120, env={**os.environ, **(env or {})})
    return r, time.perf_counter() - t0


@pytest.mark.e2e
@pytest.mark.parametrize("args, key", [
    (["analysis.tables", "stats.n_resamples=0"], "stats.n_resamples"),
    (["analysis.add_planner", "records=.", f"name={LONG}"], "name="),
    (["analysis.run", "seed=-1"], "seed=-1"),
    (["analysis.reexecute", "planner=x"], "did you mean run"),
])
def test_real_processes_refuse_before_any_verification(args, key, tmp_path, tmp_path_factory):
    if args[0] == "analysis.tables":  # checking the default out_dir would probe the checkout
        args = [*args, f"out_dir={tmp_path_factory.mktemp('out')}"]
    r, seconds = _run(*args, cwd=tmp_path)
    assert r.returncode == 2 and key in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert "verif" not in r.stderr.split(":", 1)[1]  # refused before verifying anything
    assert list(tmp_path.iterdir()) == []
    assert seconds < 30


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_each_command_prints_its_own_help(command, capsys):
    code, out, err = _call(command, ["--help"], capsys)
    assert code == 0 and err == ""
    assert out.startswith(f"python -m analysis.{command} ")
    for key in COMMANDS[command].keys:
        assert f"  {key.name}  (" in out, key.name
        assert "default" in out.split(f"  {key.name}  (", 1)[1].split("\n", 1)[0]
    examples = out.split("Examples:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert len(examples) == 2 and all(e.strip().startswith(f"python -m analysis.{command}")
                                      for e in examples)
    if command in ("tables", "reexecute", "verify", "add_planner", "compile"):
        assert "planner choices" not in out and "suite choices" not in out
        assert "$APP_CONFIG_GROUPS" not in out and "Hydra" not in out
    if command == "tables":
        import analysis.stats
        assert all(m in out for m in analysis.stats.BOOTSTRAP_METHODS)


@pytest.fixture(scope="module")
def copy_root(tmp_path_factory):
    """A copy of this checkout (tests/checkout_copy.py): the configuration check of a
    default ``out_dir`` (tables/, figures/, build/) creates and removes a probe file in it,
    so the checks of the defaults run there, never in the checkout other tests read."""
    return checkout_copy(tmp_path_factory.mktemp("checkout"))


COMPOSE = """import json, os, sys
from analysis._cli.hydra_glue import compose_config
out = []
for cwd, name, argv in json.loads(sys.argv[1]):
    os.chdir(cwd)
    cfg = compose_config(name, argv)
    out.append({k: cfg.get(k) for k in ("export_root", "out_dir")})
print(json.dumps(out))
"""


def _compose_in(root: Path, calls: list) -> list:
    """``compose_config(name, argv)`` from ``cwd`` for each ``(cwd, name, argv)``, in a
    process running the package of the checkout copy ``root``; its export_root and out_dir."""
    import json
    r = subprocess.run([sys.executable, "-c", COMPOSE, json.dumps(calls)], cwd="/",
                       capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(root)})
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.e2e
def test_help_examples_pass_the_configuration_check(places, copy_root):
    # every example in every --help is a valid command line (checked, not run; in a
    # process of the checkout copy, so a default out_dir is the copy's)
    calls = []
    for name, spec in COMMANDS.items():
        for example in spec.examples:
            argv = example.split()[3:]
            # copy_to names a new folder (an existing non-empty one is refused)
            argv = [f"copy_to={places['T']}/new_copy" if a.startswith("copy_to=") else a
                    for a in argv]
            argv = [a.replace("/tmp/scratch_out", places["T"] + "/o")
                     .replace("/tmp/scratch", places["E"]).replace("/tmp/my_run", places["R"])
                     .replace("/data/hd-epic", places["T"]) for a in argv]
            if name == "compile" and not any(a.startswith("source=") for a in argv):
                argv.append(f"source={places['T']}")
            if "mypkg.mod:MyPlanner" in " ".join(argv):
                argv = [a.replace("mypkg.mod:MyPlanner", "analysis.planners.simple:LexiconPlanner")
                        for a in argv]
            calls.append((places["T"], name, argv))
    assert len(_compose_in(copy_root, calls)) == len(calls) >= 2 * len(COMMANDS)


@pytest.mark.e2e
def test_compile_from_another_directory_writes_nothing_there(tmp_path):
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    src = tmp_path / "empty_source"
    src.mkdir()
    r, _ = _run("analysis.compile", "--cfg", cwd=cwd, env={"E2W_HDEPIC": str(src)})
    assert r.returncode == 0, r.stderr
    assert f"out_dir: {REPO}/frozen_exports" in r.stdout
    r, _ = _run("analysis.compile", f"source={src}", f"out_dir={tmp_path / 'out'}", cwd=cwd)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert list(cwd.iterdir()) == []  # no ./frozen_exports, no ./.hydra_runs


@pytest.mark.e2e
def test_every_command_resolves_the_same_default_paths_from_anywhere(tmp_path, places,
                                                                   copy_root):
    # composed by the package of a checkout copy: the defaults are that repository's
    a, b, c, d = _compose_in(copy_root, [(str(tmp_path), "tables", []),
                                         (str(tmp_path), "verify", []),
                                         (str(tmp_path), "reexecute", []),
                                         ("/", "tables", [])])
    assert a["export_root"] == b["export_root"] == c["export_root"] == d["export_root"] == \
        str(copy_root / "frozen_exports")
    assert a["out_dir"] == str(copy_root)


@pytest.mark.e2e
def test_verify_copy_to_makes_a_verified_scratch_copy_and_refuses_a_used_folder(places,
                                                                               tmp_path):
    dest = tmp_path / "scratch"
    r, _ = _run("analysis.verify", f"export_root={places['E']}", f"copy_to={dest}",
                cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    src = Path(places["E"])
    assert {p.relative_to(dest): b for p, b in _snapshot(dest).items()} == \
        {p.relative_to(src): b for p, b in _snapshot(src).items()}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scratch"]  # no temp folder left
    before = _snapshot(dest)
    r, _ = _run("analysis.verify", f"export_root={places['E']}", f"copy_to={dest}",
                cwd=tmp_path)
    # refused by the configuration check, before any verification (exit 2)
    assert r.returncode == 2 and "not an empty folder" in r.stderr, r.stderr
    assert "verified" not in r.stdout + r.stderr
    assert _snapshot(dest) == before and "Traceback" not in r.stderr


def test_verify_copy_to_removes_the_staging_a_killed_copy_left(places, tmp_path):
    """Regression: a kill -9 during copy_to left a hidden .<dest>.copy.* folder that
    nothing removed. The next copy_to of that destination removes it and says so; a
    staging folder whose owner is still alive is left alone."""
    from analysis._cli.verify import copy_export
    dead = tmp_path / ".scratch.copy.dead"
    (dead / "export").mkdir(parents=True)
    (dead / "owner.pid").write_text("999999999")  # no such process
    alive = tmp_path / ".scratch.copy.alive"
    alive.mkdir()
    (alive / "owner.pid").write_text(str(os.getpid()))
    said = []
    copy_export(places["E"], tmp_path / "scratch", say=said.append)
    assert not dead.exists() and alive.exists()
    assert len(said) == 1 and ".scratch.copy.dead" in said[0] and "interrupted" in said[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == [".scratch.copy.alive", "scratch"]

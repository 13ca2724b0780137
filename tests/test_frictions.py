"""Issue 37 item 5: the frictions a newcomer hit, each fixed and checked here (the wheel
test's venv: tests/test_wheel.py; the preflight and the refused connection:
tests/test_preflight.py; run limit=N: tests/test_limited.py)."""
import inspect
import json
import os
import re
import stat
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

REPO = Path(__file__).resolve().parent.parent


def _py(*args, cwd=REPO, env=None):
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})})


# ---------------------------------------------------------------- 2: .ci/run
def test_ci_creates_a_fresh_venv_and_runs_the_readme_commands_inside_it():
    script = (REPO / ".ci" / "run").read_text()
    readme = (REPO / "README.md").read_text()
    test_line = next(l for l in readme.splitlines() if "python -m pytest" in l)
    install, test = [c.strip() for c in test_line.split("&&")]
    lines = [l.strip() for l in script.splitlines() if l.strip() and not l.strip().startswith("#")]
    venv = next(i for i, l in enumerate(lines) if re.match(r"python3 -m venv \S+", l))
    activate = next(i for i, l in enumerate(lines) if l.startswith("source ") and
                    l.endswith("/bin/activate\""))
    assert venv < activate < lines.index(install) < lines.index(test)
    # the browser install and the "no tests collected" (exit 5) failure are kept
    assert "chromium chromium-driver" in script and '"$rc" -eq 5' in script


# ---------------------------------------------------------------- 4: README sweeps
def test_the_readme_chat_sweep_runs_what_the_tables_need():
    readme = (REPO / "README.md").read_text()
    section = readme.split("## Your own model (chat planners) on both suites", 1)[1]
    section = section.split("\n## ", 1)[0]
    runs = [l for l in section.splitlines() if l.startswith("python -m analysis.run")]
    memory = [l for l in runs if "suite=memory" in l or re.search(r"suite=\S*memory", l)]
    assert memory and all("memory=persistent,reset" in l for l in memory)
    planner = [l for l in runs if re.search(r"suite=(\S*,)?planner", l)]
    assert planner
    # the trial's wording states what 3 episodes give, and how to get more
    assert "episodes=3" in section and "rests on 3 episodes" in section
    assert "episodes=8" in section


# ---------------------------------------------------------------- 5: cluster_bootstrap
def _two_runs():
    rows = []
    for run, val in (("a__planner__persistent", 1.0), ("b__planner__persistent", 0.0)):
        for e in range(8):
            for t in range(2):
                rows.append({"run_id": run, "planner": "p", "episode_id": f"e{e}",
                             "success": val})
    return pd.DataFrame(rows)


def test_cluster_bootstrap_refuses_a_frame_that_pools_several_runs():
    from analysis.stats import cluster_bootstrap
    df = _two_runs()
    with pytest.raises(ValueError) as exc:
        cluster_bootstrap(df, ["success"], by=["planner"], n_resamples=200)
    assert str(exc.value) == (
        "df holds 2 runs in group {'planner': 'p'} (a__planner__persistent, "
        "b__planner__persistent): each task would count once per run; pass by=[..., "
        "'run_id'] to get one interval per run, select one run (df[df.run_id == ...]), or "
        "pool_runs=True to pool them on purpose")
    per_run = cluster_bootstrap(df, ["success"], by=["planner", "run_id"], n_resamples=200)
    assert per_run.table.estimate.tolist() == [1.0, 0.0]
    assert per_run.table.n_records.tolist() == [16, 16]
    pooled = cluster_bootstrap(df, ["success"], by=["planner"], n_resamples=200,
                               pool_runs=True)
    assert pooled.table.estimate.tolist() == [0.5] and pooled.table.n_records.tolist() == [32]
    one = cluster_bootstrap(df[df.run_id == "a__planner__persistent"], ["success"],
                            n_resamples=200)
    assert one.table.n_records.tolist() == [16]


# ---------------------------------------------------------------- 7: messages
def test_a_planner_module_python_cannot_find_hints_at_pythonpath():
    from analysis.planners import planner_class
    with pytest.raises(ValueError) as exc:
        planner_class("e2w_nowhere_pkg.planners:MyPlanner")
    assert str(exc.value) == (
        "planner='e2w_nowhere_pkg.planners:MyPlanner': cannot import 'MyPlanner' from "
        "'e2w_nowhere_pkg.planners' (No module named 'e2w_nowhere_pkg'); Python does not find "
        "module 'e2w_nowhere_pkg': check the name, and put the folder that holds "
        "e2w_nowhere_pkg/ on PYTHONPATH (PYTHONPATH=/path/to/that/folder python -m "
        "analysis.run ...) or install its package (pip install -e ...)")
    # a class missing from a module that imports is a different mistake: no such hint
    with pytest.raises(ValueError) as exc:
        planner_class("analysis.planners.simple:NoSuchPlanner")
    assert "PYTHONPATH" not in str(exc.value)


def test_subset_of_a_folder_that_is_no_export_points_to_verify_copy_to(tmp_path):
    from analysis.planners.llm.subset import SubsetError, make_subset
    from analysis._fs.resources import default_export_root
    with pytest.raises(SubsetError) as exc:
        make_subset(tmp_path / "frozen_exports", tmp_path / "dst", episodes=1)
    assert str(exc.value) == (
        f"SRC={tmp_path / 'frozen_exports'}: not an export (no MANIFEST.json); the export "
        f"this package reads is {default_export_root()}: give that as SRC, or a copy made "
        "with python -m analysis.verify copy_to=DIR (SRC=DIR)")


def test_add_planner_closing_line_gives_the_tables_command_with_its_export():
    from analysis._cli.add_planner import tables_command
    from analysis._fs.resources import default_export_root
    assert tables_command(default_export_root()) == "python -m analysis.tables"
    assert tables_command("/data/my exports/x") == (
        "python -m analysis.tables export_root='/data/my exports/x' "
        "out_dir='/data/my exports/x_tables'")
    src = inspect.getsource(__import__("analysis._cli.add_planner", fromlist=["_body"])._body)
    assert "tables_command(resolve_path(cfg.export_root))" in src


@pytest.mark.e2e
def test_run_help_mentions_exit_code_3_and_the_launchers():
    r = _py("-m", "analysis.run", "--help")
    assert r.returncode == 0, r.stderr
    text = " ".join(r.stdout.split())
    assert "Exit code 3: the run is incomplete" in text
    assert "-m hydra/launcher=joblib_local" in text
    assert "  limit  (int|null, default null)" in r.stdout


# ---------------------------------------------------------------- 8: small bugs
@pytest.mark.e2e
def test_accounting_help_prints_help_and_a_missing_log_is_refused(tmp_path):
    r = _py("-m", "analysis.planners.llm.accounting", "--help")
    assert r.returncode == 0 and r.stdout.startswith(
        "usage: python -m analysis.planners.llm.accounting [-h] CALL_LOG [PRICES.yaml]")
    r = _py("-m", "analysis.planners.llm.accounting", str(tmp_path / "nope.jsonl"))
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip() == (f"analysis.planners.llm.accounting: CALL_LOG "
                                f"{tmp_path / 'nope.jsonl'}: no such file (give the run's "
                                "planner.settings.call_log)")
    log = tmp_path / "calls.jsonl"
    log.write_text(json.dumps({"model": "m", "cached": True, "retries": 0, "latency_s": 0.0,
                               "prompt_tokens": 3, "completion_tokens": 2, "error": None}) + "\n")
    r = _py("-m", "analysis.planners.llm.accounting", str(log))
    assert r.returncode == 0 and json.loads(r.stdout)["calls"] == 1


def test_task_metrics_is_documented_as_the_property_it_is():
    from analysis.api import Export
    assert isinstance(inspect.getattr_static(Export, "task_metrics"), property)
    api = (REPO / "docs" / "api.md").read_text()
    row = next(l for l in api.splitlines() if l.startswith("| `task_metrics`"))
    assert "a property" in row and "no call" in row


def test_few_episode_warnings_are_said_once_per_process():
    from analysis import api
    from analysis.stats import FewClustersWarning, cluster_bootstrap
    df = pd.DataFrame({"planner": ["p"] * 8, "episode_id": [1, 2, 3, 4] * 2,
                       "success": [0, 1] * 4})
    text = "1 of 1 intervals rest on fewer than 8 episodes, coverage not assured: " \
           "planner=p, metric=success (4)"
    api._SAID.discard(text)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        for _ in range(3):   # three calls, as three notebook cells would make
            with api._warnings_once():
                r = cluster_bootstrap(df, ["success"], n_resamples=200)
    assert r.warnings == (text,)   # the result still carries its warning ...
    assert [str(w.message) for w in seen if w.category is FewClustersWarning] == [text]
    with warnings.catch_warnings(record=True) as seen:  # ... and other warnings pass
        warnings.simplefilter("always")
        with api._warnings_once():
            warnings.warn("something else", UserWarning)
    assert [str(w.message) for w in seen] == ["something else"]
    src = inspect.getsource(api.Export.results) + inspect.getsource(api.Results.artefact)
    assert src.count("with _warnings_once():") == 2


@pytest.mark.e2e
def test_python_m_analysis_lists_the_commands():
    from analysis._cli.config_check import COMMANDS
    r = _py("-m", "analysis")
    assert r.returncode == 0, r.stderr
    for name in COMMANDS:
        assert re.search(rf"^  python -m analysis\.{name} +\S", r.stdout, re.M), name
    for tool in ("subset", "accounting", "testserver"):
        assert f"python -m analysis.planners.llm.{tool}" in r.stdout
    bad = _py("-m", "analysis", "tabels")
    assert bad.returncode == 2 and "did you mean tables?" in bad.stderr


def test_ray_local_keeps_its_token_under_the_user_cache_directory(tmp_path):
    from analysis._runs.shards import prepare_launcher, ray_token_path
    env = {"E2W_CACHE_DIR": str(tmp_path / "cache"), "HOME": str(tmp_path / "home")}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        environ = {}
        prepare_launcher("ray_local", environ)
        token = tmp_path / "cache" / "ray" / "auth_token"
        assert environ["RAY_AUTH_TOKEN_PATH"] == str(token) == str(ray_token_path())
        assert re.fullmatch(r"[0-9a-f]{64}", token.read_text())
        assert stat.S_IMODE(token.stat().st_mode) == 0o600
        first = token.read_text()
        prepare_launcher("ray_local", {})
        assert token.read_text() == first   # kept for the next sweep
        own = {"RAY_AUTH_TOKEN_PATH": str(tmp_path / "mine")}
        prepare_launcher("ray_local", own)  # the user's own token path: left alone
        assert not (tmp_path / "mine").exists()
        prepare_launcher("submitit_local", {})
        assert not (tmp_path / "home").exists()
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.mark.e2e
@pytest.mark.slow(seconds=30)
def test_a_ray_started_with_that_token_writes_nothing_into_home(tmp_path):
    """Ray reads the token from RAY_AUTH_TOKEN_PATH: started as ray_local starts it (token
    authentication on, Ray's default), it leaves the home folder untouched."""
    pytest.importorskip("ray")
    import tempfile
    home = tmp_path / "home"
    home.mkdir()
    short = tempfile.mkdtemp(prefix="e2wray", dir="/tmp")   # Ray's socket paths stay short
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env.update({"HOME": str(home), "E2W_CACHE_DIR": str(tmp_path / "cache"),
                "PYTHONPATH": str(REPO), "RAY_USAGE_STATS_ENABLED": "0",
                "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"})
    code = ("import os, ray\n"
            "from analysis._runs.shards import prepare_launcher\n"
            "prepare_launcher('ray_local')\n"
            f"ray.init(num_cpus=1, include_dashboard=False, _temp_dir={short!r}, "
            "object_store_memory=78643200)\n"
            "print(ray.get(ray.remote(lambda: 2 + 2).remote()))\n"
            "ray.shutdown()\n")
    try:
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                           text=True, timeout=240, cwd=tmp_path)
    finally:
        import shutil
        shutil.rmtree(short, ignore_errors=True)
    assert r.returncode == 0 and r.stdout.strip().endswith("4"), r.stderr[-2000:]
    assert (tmp_path / "cache" / "ray" / "auth_token").is_file()
    assert sorted(p.name for p in home.iterdir()) == []

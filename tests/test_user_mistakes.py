"""User mistakes an outside audit (session 10) found reaching a traceback or doing the work
before failing: each is now refused before anything is done, with one line naming the
file or key."""
from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

import pytest

from analysis._cli import hydra_glue as _hydra
from analysis._cli.config_check import ConfigError, compile_out_dir, cross_checks, movable_into

REPO = Path(__file__).resolve().parents[1]


def test_a_yaml_syntax_error_in_a_config_file_names_the_file_and_line(tmp_path, monkeypatch):
    # the README tells users to edit configs/tables.yaml; a stray indent gave 21 frames
    configs = tmp_path / "configs"
    shutil.copytree(REPO / "configs", configs)
    text = (configs / "tables.yaml").read_text().splitlines()
    n = next(i for i, line in enumerate(text) if line.strip().startswith("seed:"))
    text[n] = " " + text[n]          # one space more than its siblings: a YAML error
    (configs / "tables.yaml").write_text("\n".join(text) + "\n")
    monkeypatch.setattr(_hydra, "CONFIG_PATH", str(configs))
    with pytest.raises(ConfigError) as exc:
        _hydra.compose_config("tables", [])
    msg = str(exc.value)
    assert f"{configs / 'tables.yaml'}, line {n + 1}" in msg and "YAML syntax error" in msg


def test_a_misspelt_key_in_a_config_file_is_named_not_its_none(tmp_path, monkeypatch):
    # "n_resampels: 10000" in configs/tables.yaml gave "stats.n_resamples=None: expected an
    # integer", a value the user never wrote, naming neither the file nor the typo
    configs = tmp_path / "configs"
    shutil.copytree(REPO / "configs", configs)
    text = (configs / "tables.yaml").read_text()
    assert "  n_resamples:" in text
    (configs / "tables.yaml").write_text(text.replace("  n_resamples:", "  n_resampels:", 1))
    monkeypatch.setattr(_hydra, "CONFIG_PATH", str(configs))
    with pytest.raises(ConfigError) as exc:
        _hydra.compose_config("tables", [])
    assert str(exc.value) == (f"unknown key 'stats.n_resampels' in {configs / 'tables.yaml'} (or a file it "
                              "composes); did you mean stats.n_resamples?")
    # the shipped files compose with no unknown key
    monkeypatch.setattr(_hydra, "CONFIG_PATH", str(REPO / "configs"))
    _hydra.compose_config("tables", [])


def test_a_missing_hdepic_folder_says_how_to_give_it(tmp_path):
    from analysis._cli.config_check import hdepic_dir
    with pytest.raises(ConfigError) as exc:
        hdepic_dir("source", str(tmp_path / "none"))
    assert str(exc.value) == (f"source={tmp_path / 'none'}: no such folder (give source=PATH to the "
                              "HD-EPIC annotations, or set E2W_HDEPIC)")
    hdepic_dir("source", str(tmp_path))


def test_a_scratch_copy_inside_an_export_is_refused(tmp_path):
    export = tmp_path / "export"
    (export / "runs").mkdir(parents=True)
    (export / "MANIFEST.json").write_text("{}")
    # inside the export it copies: it would copy itself, recursively
    with pytest.raises(ConfigError, match="is inside the export it copies"):
        cross_checks("verify", {"copy_to": str(export / "sub"), "export_root": str(export)})
    # inside another export: that export would hold a file not in its manifest
    other = tmp_path / "source"
    other.mkdir()
    with pytest.raises(ConfigError, match=f"is inside the export {export}"):
        cross_checks("verify", {"copy_to": str(export / "runs" / "x"), "export_root": str(other)})
    cross_checks("verify", {"copy_to": str(tmp_path / "scratch"), "export_root": str(export)})


def test_the_launcher_hint_holds_when_no_hydra_plugin_is_installed(tmp_path, monkeypatch, capsys):
    # find_spec("hydra_plugins.x") raises when the package hydra_plugins does not exist
    real = importlib.util.find_spec

    def no_plugins(name, *a, **k):
        if name.startswith("hydra_plugins"):
            raise ModuleNotFoundError("No module named 'hydra_plugins'")
        return real(name, *a, **k)

    monkeypatch.setattr(importlib.util, "find_spec", no_plugins)
    from analysis._cli.run import _multirun
    code = _multirun(["-m", "hydra/launcher=joblib_local", "planner=greedy_hints", "suite=planner",
                      f"export_root={tmp_path}", "overwrite=true"])
    assert code == 2
    err = capsys.readouterr().err
    assert "hydra/launcher=joblib_local needs pip install hydra-joblib-launcher" in err
    assert not list(tmp_path.iterdir())


def test_hydras_cfg_job_form_prints_the_job_config(capsys):
    # "--cfg job" (Hydra's form) was refused: "cannot parse the overrides ['job']"
    for argv in (["--cfg", "job", "stats.seed=3"], ["stats.seed=3", "--cfg"]):
        with pytest.raises(SystemExit) as exc:
            _hydra.command_main("tables", lambda cfg: pytest.fail("ran the command"), argv)
        assert exc.value.code == 0
        out = capsys.readouterr().out
        assert "stats:" in out and "seed: 3" in out
    with pytest.raises(SystemExit) as exc:
        _hydra.command_main("tables", lambda cfg: pytest.fail("ran the command"), ["--cfg", "hydra"])
    assert exc.value.code == 2
    assert "--cfg hydra: only the job's configuration is printed" in capsys.readouterr().err


def test_compile_refuses_the_installed_packages_shipped_export(tmp_path, monkeypatch):
    import analysis._fs.resources as resources
    monkeypatch.setattr(resources, "is_shipped_export", lambda p: Path(p) == tmp_path)
    with pytest.raises(ConfigError, match="shipped with the installed package is read-only"):
        compile_out_dir("out_dir", str(tmp_path))
    compile_out_dir("out_dir", str(tmp_path / "elsewhere"))


@pytest.mark.e2e
def test_compile_into_a_folder_of_another_export_is_refused_before_work(tmp_path):
    """A cohort compiled into ``<export>/runs`` or ``<export>/cohort`` would leave files
    that export's manifest does not list (every command then refuses it); the export
    itself, or a folder outside every export, is fine."""
    import subprocess
    import sys
    export = tmp_path / "export"
    (export / "runs").mkdir(parents=True)
    (export / "MANIFEST.json").write_text("{}")
    for inner in (export / "runs", export / "cohort", export / "runs" / "x"):
        with pytest.raises(ConfigError, match=f"is inside the export {export}; compile into the export itself"):
            compile_out_dir("out_dir", str(inner))
    compile_out_dir("out_dir", str(export))
    compile_out_dir("out_dir", str(tmp_path / "elsewhere"))
    # a folder holding another export, or anything else, is not one to compile into
    holder = tmp_path / "holder"
    (holder / "inner").mkdir(parents=True)
    (holder / "inner" / "MANIFEST.json").write_text("{}")
    misc = tmp_path / "misc"
    misc.mkdir()
    (misc / "notes.txt").write_text("x")
    for folder in (holder, misc):
        with pytest.raises(ConfigError, match="is a folder that holds files and is not an export"):
            compile_out_dir("out_dir", str(folder))
    (tmp_path / "empty").mkdir()
    compile_out_dir("out_dir", str(tmp_path / "empty"))
    repo = Path(__file__).resolve().parents[1]
    r = subprocess.run([sys.executable, "-m", "analysis.compile", f"out_dir={export / 'runs'}",
                        f"source={tmp_path}"], capture_output=True, text=True, cwd=repo)
    assert r.returncode == 2 and "is inside the export" in r.stderr and "Traceback" not in r.stderr
    assert sorted(p.name for p in export.iterdir()) == ["MANIFEST.json", "runs"]
    assert list((export / "runs").iterdir()) == []


def test_an_export_on_another_file_system_than_its_parent_is_refused_before_work(tmp_path, monkeypatch):
    # a bind mount: the run is staged beside the export and moved in, which fails at the
    # very end with "Invalid cross-device link" unless refused first
    export = tmp_path / "export"
    export.mkdir()
    real = os.stat

    class Other:
        def __init__(self, st):
            self.st_dev, self.st_mode = st.st_dev + 1, st.st_mode

    monkeypatch.setattr(os, "stat", lambda p, *a, **k: Other(real(p)) if Path(p) == export else real(p, *a, **k))
    with pytest.raises(ConfigError, match="is a mount point, on another file system"):
        movable_into("export_root", str(export), "the run")


def test_a_viewer_out_dir_that_is_a_mount_point_is_refused(tmp_path, monkeypatch):
    from analysis.view import output
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.setattr(output.os.path, "ismount", lambda p: Path(p) == site)
    with pytest.raises(output.SiteDirError, match="is a mount point"):
        output.check_site_dir(site, None)
    output.check_site_dir(tmp_path / "other", None)


def test_a_planners_documented_settings_are_set_per_run_and_unknown_ones_named(tmp_path):
    # docs/planners.md names belief_search's max_queries and max_retries; its config file
    # listed no settings, so they were refused with "(settings: [])"
    cfg = _hydra.compose_config("run", ["planner=belief_search", "planner.settings.max_queries=2",
                                        f"export_root={tmp_path}"])
    assert dict(cfg.planner.settings) == {"max_queries": 2, "max_depth": 2, "max_retries": 2}
    with pytest.raises(ConfigError, match="did you mean max_queries"):
        _hydra.compose_config("run", ["planner=belief_search", "planner.settings.max_querys=2",
                                      f"export_root={tmp_path}"])
    with pytest.raises(ConfigError, match="it takes no settings: configs/planner/greedy_hints.yaml"):
        _hydra.compose_config("run", ["planner=greedy_hints", "planner.settings.depth=2",
                                      f"export_root={tmp_path}"])


def _children(pid: int) -> list[str]:
    try:
        return [c for t in Path(f"/proc/{pid}/task").iterdir()
                for c in (t / "children").read_text().split()]
    except OSError:
        return []


def _as_in_a_terminal():
    """SIGINT's default disposition in the command, as in a terminal's foreground: a suite
    started in the background (``cmd &``, nohup) passes SIGINT ignored to what it starts,
    and Python then installs no Ctrl-C handler, so the signal would do nothing."""
    import signal
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.e2e
@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs /proc")
def test_ctrl_c_during_verify_says_interrupted_not_failed():
    # Ctrl-C reaches the whole process group, the forked verifiers too; one cut mid-answer
    # made the parent report "failed: RuntimeError ... KeyboardInterrupt" (exit 1).
    # Verification takes about a second and its forked verifier a fraction of it: on a
    # loaded machine the signal can land after the verifier has answered, and a verify
    # that finished says so with exit 0. Such a late attempt is retried; every attempt
    # must end as "interrupted" (130) or verified (0), never "failed", and one must
    # land mid-work.
    import signal
    import subprocess
    import sys
    import time
    outcomes = []
    for _ in range(8):
        proc = subprocess.Popen([sys.executable, "-m", "analysis.verify"], cwd=REPO, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True, preexec_fn=_as_in_a_terminal)
        deadline = time.monotonic() + 60
        while not _children(proc.pid) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.002)
        assert proc.poll() is None, "verify ended before its verifying processes were seen"
        os.killpg(proc.pid, signal.SIGINT)       # what a terminal's Ctrl-C does
        out, err = proc.communicate(timeout=60)
        assert "failed" not in err, err
        if proc.returncode == 0:
            assert out.startswith("verified "), (out, err)   # the signal came after the work
            outcomes.append("finished first")
            continue
        assert proc.returncode == 130 and "analysis.verify: interrupted" in err, err
        outcomes.append("interrupted")
        break
    assert outcomes[-1] == "interrupted", outcomes


def test_the_run_progress_bar_writes_whole_lines_into_a_log(capsys):
    # stderr captured (no terminal): no carriage returns, a line about every tenth, the last
    from analysis._cli.run import _progress
    for done in range(0, 21):
        _progress(done, 20, "lexicon__memory__reset", True)
    err = capsys.readouterr().err
    assert "\r" not in err
    lines = err.splitlines()
    assert len(lines) == 11 and lines[0].endswith("0/20 episodes done")
    assert lines[-1] == "lexicon__memory__reset [" + "#" * 30 + "] 20/20 episodes done"


@pytest.mark.e2e
def test_a_commands_warning_is_one_line_naming_the_command():
    # FewClustersWarning printed our source path and line into the tables' output
    import subprocess
    import sys
    code = ("import warnings; from analysis._cli.hydra_glue import command_main\n"
            "def body(cfg):\n"
            "    warnings.warn('6 of 48 intervals rest on fewer than 8 episodes', UserWarning)\n"
            "command_main('verify', body, [])\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stderr == "analysis.verify: UserWarning: 6 of 48 intervals rest on fewer than 8 episodes\n"


@pytest.mark.parametrize("overrides, message", [
    (["planner=belief_search", "planner.settings.max_queries=-3"],
     "planner.settings.max_queries=-3: expected a number of 0 or more like 1"),
    (["planner=belief_search", "planner.settings.max_queries=1.5"],
     "planner.settings.max_queries=1.5: expected a whole number like 1"),
    (["planner=belief_search", "planner.settings.max_depth=x"],
     "planner.settings.max_depth='x': expected an integer like 2"),
    (["planner=chat", "planner.settings.base_url=not-a-url"],
     "planner.settings.base_url='not-a-url': expected an http:// or https:// URL"),
    (["planner=chat", "planner.settings.api_key_env=E2W_SURELY_UNSET_VARIABLE"],
     "the environment variable E2W_SURELY_UNSET_VARIABLE is not set"),
    (["planner=chat", "planner.settings.timeout=-1"],
     "planner.settings.timeout=-1: expected a number of 0 or more like 180.0"),
    (["planner=chat", "planner.settings.timeout=inf"],
     "planner.settings.timeout=inf: expected a finite number like 180.0"),
    (["planner=chat", "planner.settings.temperature=nan"],
     "planner.settings.temperature=nan: expected a finite number like 0.0"),
    (["planner=chat_schema", "planner.settings.base_url='http://[::1'"],
     "expected an http:// or https:// URL"),
    (["planner=chat", "planner.settings.base_url=http://host:port/v1"],
     "expected an http:// or https:// URL"),
    (["planner=chat", "planner.settings.api_key_env=123"],
     "planner.settings.api_key_env=123: expected the NAME of an environment variable"),
])
def test_a_planner_setting_out_of_its_range_is_refused_before_any_work(overrides, message, monkeypatch):
    """Outside audit, session 13: max_queries=-3 ran and replaced the baseline; a base_url
    that is no URL was retried as a provider failure; an unset key variable went unnoticed
    until a hosted API answered 401."""
    monkeypatch.delenv("E2W_SURELY_UNSET_VARIABLE", raising=False)
    with pytest.raises(ConfigError) as exc:
        _hydra.compose_config("run", [*overrides, "suite=planner", "export_root=frozen_exports"])
    assert message in str(exc.value)


def test_an_api_key_variable_that_is_set_is_accepted(monkeypatch):
    monkeypatch.setenv("E2W_TEST_KEY", "sk-test")
    cfg = _hydra.compose_config("run", ["planner=chat", "planner.settings.api_key_env=E2W_TEST_KEY",
                                        "suite=planner", "export_root=frozen_exports"])
    assert cfg.planner.settings.api_key_env == "E2W_TEST_KEY"


def test_an_installed_package_asks_for_the_hdepic_source_by_name(monkeypatch):
    """From a wheel there is no ../shared/hd-epic beside a repository: compile says to give
    source= (or E2W_HDEPIC), instead of naming a folder inside site-packages."""
    import analysis._fs.resources as resources
    monkeypatch.delenv("E2W_HDEPIC", raising=False)
    monkeypatch.setattr(resources, "in_repository", lambda: False)
    monkeypatch.setattr(_hydra, "in_repository", lambda: False, raising=False)
    with pytest.raises(ConfigError) as exc:
        _hydra.compose_config("compile", ["out_dir=/tmp/e2w_never_written"])
    assert str(exc.value).startswith("source is required here (the package is installed")
    assert "site-packages" not in str(exc.value)

"""``python -m analysis.run -m ...``: Hydra's multirun of the run command (sweeps over
planners, suites, memories, shards; launchers such as joblib, submitit, Ray), every job
checked like a single run before any starts (docs/llm.md).
"""
from __future__ import annotations

import itertools
import os
import shutil
import sys
import tempfile
from typing import Callable

from ..planners import planner_label
from ..records.run_names import RunExists, check_run_absent, run_id
from .._runs.shards import prepare_launcher, registered_runs, unregistered_runs
from .config_check import ConfigError, suggest
from .hydra_glue import CONFIG_PATH, UserError, _group_options, check_composed, compose_config, \
    resolve_path

__all__ = ["multirun"]


def _sweep_combinations(argv: list[str]) -> list[list[str]]:
    """Every job's overrides of a multirun: the cartesian product of the comma-separated
    sweeps (``planner=chat,chat_schema``), in Hydra's order. Raises ConfigError for what
    cannot be parsed or swept here (ranges, globs)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    try:
        parsed = OverridesParser.create().parse_overrides(argv)
    except HydraException as exc:
        first = str(exc).strip().splitlines()[0]
        raise ConfigError("", f"cannot parse the overrides {argv}: {first}") from None
    axes = []
    for ov, text in zip(parsed, argv):
        key = text.split("=", 1)[0]
        if ov.is_sweep_override():
            if not ov.is_choice_sweep():
                raise ConfigError(key.lstrip("+~"), f"{text}: only comma-separated sweeps "
                                                    "(a,b,c) are supported")
            axes.append([f"{key}={v}" for v in ov.sweep_string_iterator()])
        else:
            axes.append([text])
    return [list(c) for c in itertools.product(*axes)]


def multirun(argv: list[str], body: Callable) -> int:
    """``-m``: Hydra's multirun (sweeps, launchers such as joblib). Every job's
    configuration is checked like a single run's before any job starts (one line naming
    the key, exit 2); the planner's own settings may be given without Hydra's ``++``
    (they belong to the swept planner, not to the default one). Hydra's multirun folder
    is a temporary folder removed afterwards unless ``hydra.sweep.dir`` is given."""
    import hydra   # a second of imports only a multirun pays
    from omegaconf import OmegaConf


    ray_tmp = None
    hydra_args = [a for a in argv if a.split("=", 1)[0].lstrip("+").startswith("hydra")]
    own = [a for a in argv if a not in hydra_args and a not in ("-m", "--multirun")]
    try:
        combos = _sweep_combinations(own)
        cfgs = [compose_config("run", combo) for combo in combos]
    except ConfigError as exc:
        print(f"analysis.run: {exc} (nothing was done)", file=sys.stderr)
        return 2
    for cfg in cfgs:  # a run the export already holds is refused before any job starts
        if not cfg.overwrite:
            rid = run_id(cfg.get("run_name") or planner_label(cfg.planner.name),
                         cfg.suite.name, cfg.memory)
            try:
                check_run_absent(resolve_path(cfg.export_root), rid)
            except RunExists as exc:
                print(f"analysis.run: refused, nothing was done: {exc}", file=sys.stderr)
                return 1
    for a in hydra_args:
        key = a.split("=", 1)[0].lstrip("+")
        if key.startswith("hydra/launcher"):
            val = a.split("=", 1)[1] if "=" in a else ""
            submitit = ("hydra_plugins.hydra_submitit_launcher",
                        "'.[slurm]' (hydra-submitit-launcher)")
            ray = ("hydra_plugins.hydra_ray_launcher", "'.[ray]' (hydra-ray-launcher)")
            plugin = {"joblib_local": ("hydra_plugins.hydra_joblib_launcher",
                                       "hydra-joblib-launcher (the [llm] extra)"),
                      "slurm": submitit, "submitit_local": submitit,
                      "ray_local": ray, "ray_cluster": ray}
            # submitit_local is the plugin's own config (the local executor of Slurm's path)
            options = sorted({"basic", "submitit_local", *_group_options("hydra/launcher")})
            if val in plugin:
                import importlib.util
                try:
                    found = importlib.util.find_spec(plugin[val][0]) is not None
                except ModuleNotFoundError:   # no Hydra plugin at all: no hydra_plugins package
                    found = False
                if not found:
                    print(f"analysis.run: hydra/launcher={val} needs pip install "
                          f"{plugin[val][1]} (nothing was done)", file=sys.stderr)
                    return 2
            if val not in options:
                print(f"analysis.run: hydra/launcher={val!r}: expected one of {options}"
                      f"{suggest(val, options)} (nothing was done)", file=sys.stderr)
                return 2
            prepare_launcher(val)   # Ray's settings and its token under the user cache dir
            if val == "ray_local" and "RAY_TMPDIR" not in os.environ:
                # the Ray started for this command keeps its files in a temporary folder
                # removed after the sweep (Ray's default, /tmp/ray, would stay behind)
                ray_tmp = tempfile.mkdtemp(prefix="e2wray")
                os.environ["RAY_TMPDIR"] = ray_tmp
    # a planner's settings exist only once the swept planner is chosen: '++' lets Hydra
    # compose the sweep's base config (the default planner) without refusing them
    own = [("++" + a.lstrip("+")) if a.lstrip("+").startswith("planner.settings.") else a
           for a in own]
    keep = any(a.split("=", 1)[0].lstrip("+") == "hydra.sweep.dir" for a in hydra_args)
    sweep_dir = None if keep else tempfile.mkdtemp(prefix="e2w_multirun_")
    extra = [] if keep else [f"hydra.sweep.dir={sweep_dir}"]
    codes: list[int] = []

    @hydra.main(config_path=CONFIG_PATH, config_name="run", version_base="1.3")
    def job(cfg) -> None:
        _quiet_http_logs()
        data = OmegaConf.to_container(cfg, resolve=True)
        data.pop("hydra", None)
        try:
            check_composed("run", data)
            code = body(OmegaConf.create(data))
        except (ConfigError, UserError) as exc:
            print(f"analysis.run: {exc}", file=sys.stderr)
            raise SystemExit(2 if isinstance(exc, ConfigError) else 1) from None
        codes.append(code or 0)
        if code:
            raise SystemExit(code)

    saved = sys.argv
    sys.argv = [saved[0], "-m", *hydra_args, *extra, *own]
    try:
        job()
    except SystemExit as exc:  # a job's refusal (serial launcher) ends the sweep
        code = int(exc.code or 0) if isinstance(exc.code, int) else 1
        return max(code, _report_shards(cfgs))
    finally:
        sys.argv = saved
        if sweep_dir is not None:
            shutil.rmtree(sweep_dir, ignore_errors=True)
        if ray_tmp is not None:
            ray = sys.modules.get("ray")
            if ray is not None and ray.is_initialized():
                ray.shutdown()  # stops the Ray this command started before its folder goes
            os.environ.pop("RAY_TMPDIR", None)
            shutil.rmtree(ray_tmp, ignore_errors=True)
    return max(max(codes, default=0), _report_shards(cfgs))


def _report_shards(cfgs) -> int:
    """After a multirun with shards: one line per sharded run, registered or not (then
    naming the shards to rerun; under a process launcher a job's own messages are in its
    log, or above in the launcher's report); 3 if any is not registered, else 0."""
    runs = {}
    for cfg in cfgs:
        if cfg.get("shard") is not None:
            rid = run_id(cfg.get("run_name") or planner_label(cfg.planner.name),
                         cfg.suite.name, cfg.memory)
            runs[(str(resolve_path(cfg.export_root)), rid)] = cfg.get("state_dir")
    for line in registered_runs(runs):
        print(f"analysis.run: {line}", file=sys.stderr)
    lines = unregistered_runs(runs)
    for line in lines:
        print(f"analysis.run: {line}", file=sys.stderr)
    return 3 if lines else 0


def _quiet_http_logs() -> None:
    """Hydra's job logging sets the root logger to INFO after the client was imported;
    the per-request lines stay off (analysis/planners/llm/client.py)."""
    from ..planners.llm.client import quiet_http_logs
    quiet_http_logs()

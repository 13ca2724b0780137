"""Every key of every command: its type, meaning, allowed values, and the check that
runs before the command loads anything.

One :class:`Key` per configuration key; :data:`COMMANDS` gives each command's keys,
description and examples. :mod:`analysis._cli.hydra_glue` composes the Hydra config, checks every
value here, and renders ``--help`` from the same table, so the help cannot drift from
what is enforced. A failed check raises :class:`ConfigError` whose message names the key
and what is allowed.

>>> check_value("tables", "stats.n_resamples", 0)
Traceback (most recent call last):
...
analysis.settings.ConfigError: stats.n_resamples=0: expected an integer from 20 to 200000
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# the statistics' keys and the key vocabulary are the public API's too (analysis.settings)
from ..settings import (MAX_RESAMPLES, MAX_SEED, MIN_RESAMPLES, STATS, ConfigError, Key,
                        boolean, check_resamples_for_level, int_range, one_of, suggest)

__all__ = ["ConfigError", "Key", "Command", "COMMANDS", "check_value", "suggest",
           "MIN_RESAMPLES", "MAX_RESAMPLES", "MAX_NAME_LENGTH", "MAX_SEED"]

#: A planner name becomes a folder name ``<name>__<suite>__<memory>``; file systems
#: allow 255 bytes, and no sane table column wants more than this.
MAX_NAME_LENGTH = 64
MAX_JOBS = 64

def hdepic_dir(key, v):
    """The HD-EPIC folder: an existing folder; when it is missing, say how to give it."""
    if v is None:
        raise ConfigError(key, f"{key} is required here (the package is installed, not a clone "
                               "with ../shared/hd-epic beside it): give source=PATH to the "
                               "HD-EPIC annotations, or set E2W_HDEPIC")
    try:
        existing_dir(key, v)
    except ConfigError as exc:
        raise ConfigError(key, f"{exc} (give source=PATH to the HD-EPIC annotations, "
                               "or set E2W_HDEPIC)") from None


def existing_dir(key, v):
    if not isinstance(v, str) or not v:
        raise ConfigError(key, f"{key}={v!r}: expected a folder path")
    p = Path(v).expanduser()
    if not p.exists():
        raise ConfigError(key, f"{key}={v}: no such folder")
    if not p.is_dir():
        raise ConfigError(key, f"{key}={v}: is not a folder")
    if not os.access(p, os.R_OK | os.X_OK):
        raise ConfigError(key, f"{key}={v}: is not readable")


def writable_out_dir(key, v):
    if v is None:
        raise ConfigError(key, f"{key} is required here (the package is installed, not a "
                               f"clone, so there is no repository to write into): {key}=FOLDER")
    if not isinstance(v, str) or not v:
        raise ConfigError(key, f"{key}={v!r}: expected a folder path")
    from .out_dir import OutputDirError, check_out_dir
    try:
        check_out_dir(Path(v).expanduser())
    except OutputDirError as exc:
        raise ConfigError(key, str(exc)) from None


def site_out_dir(key, v):
    if v is None:
        raise ConfigError(key, f"{key} is required here (the package is installed, not a "
                               f"clone, so there is no build/ folder to write into): "
                               f"{key}=FOLDER")
    if not isinstance(v, str) or not v:
        raise ConfigError(key, f"{key}={v!r}: expected a folder path")
    from ..view.output import SiteDirError, check_site_dir
    try:
        check_site_dir(v, None)  # against export_root: in cross_checks
    except SiteDirError as exc:
        raise ConfigError(key, str(exc)) from None


def movable_into(key, v, what: str) -> None:
    """A folder a command stages beside (in its parent) and moves into: both writable and
    on one file system, checked before any work (else the move fails at the end with
    "Invalid cross-device link")."""
    p = Path(v).expanduser().resolve()
    # the folder itself by access(2) only (EROFS on a read-only mount): a probe file left
    # there by a kill would make the export fail verification; the parent by a probe
    if not os.access(p, os.W_OK | os.X_OK):
        raise ConfigError(key, f"{key}={v}: is not writable")
    from .out_dir import why_not_writable
    why = why_not_writable(p.parent)
    if why:
        raise ConfigError(key, f"{key}={v}: {p.parent} {why} (what is added is staged there)")
    if os.stat(p).st_dev != os.stat(p.parent).st_dev:
        raise ConfigError(key, f"{key}={v}: is a mount point, on another file system than "
                               f"{p.parent}; {what} is staged beside it and moved in, so "
                               "copy the export into a folder of one file system "
                               "(python -m analysis.verify copy_to=DIR)")


def compile_out_dir(key, v):
    """The export ``compile`` writes: never the installed package's shipped copy."""
    writable_dir_or_creatable(key, v)
    from .._fs.resources import is_shipped_export
    if is_shipped_export(v):
        raise ConfigError(key, f"{key}={v}: the export shipped with the installed package is "
                               "read-only; compile into another folder: out_dir=DIR")
    p = Path(v).expanduser()
    # a cohort written into a folder of another export would be files its manifest does
    # not list: that export would then fail verification
    from .._fs.confine import export_holding
    holder = export_holding(p.resolve().parent)
    if holder is not None:
        raise ConfigError(key, f"{key}={v}: is inside the export {holder}; compile into the "
                               f"export itself (out_dir={holder}) or a folder outside every "
                               "export")
    if p.is_dir() and not (p / "MANIFEST.json").is_file() and any(p.iterdir()):
        # the cohort and a manifest listing only it would sit beside files it does not
        # list (another export inside, or anything else): verification would refuse it
        raise ConfigError(key, f"{key}={v}: is a folder that holds files and is not an export; "
                               "compile into a new or empty folder, or into an export")
    if p.is_dir():
        movable_into(key, v, "the cohort")


def writable_dir_or_creatable(key, v):
    if v is None:
        raise ConfigError(key, f"{key} is required here (the package is installed, not a "
                               f"clone): {key}=FOLDER")
    if not isinstance(v, str) or not v:
        raise ConfigError(key, f"{key}={v!r}: expected a folder path")
    p = Path(v).expanduser()
    if p.exists() and not p.is_dir():
        raise ConfigError(key, f"{key}={v}: is not a folder")
    probe = p
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not os.access(probe, os.W_OK | os.X_OK):
        raise ConfigError(key, f"{key}={v}: {probe} is not writable")


def new_or_empty_dir(key, v):
    """A folder to create, or an empty one (checked before anything is verified)."""
    writable_dir_or_creatable(key, v)
    p = Path(v).expanduser()
    if p.is_dir() and any(p.iterdir()):
        raise ConfigError(key, f"{key}={v}: exists and is not an empty folder; choose a new "
                               "folder")


def planner_name(key, v):
    from ..records.schemas import PLANNER_NAME
    if not isinstance(v, str) or not PLANNER_NAME.match(v) or len(v) > MAX_NAME_LENGTH:
        shown = v if not isinstance(v, str) or len(v) <= 40 else v[:37] + "..."
        raise ConfigError(key, f"{key}={shown!r}: expected at most {MAX_NAME_LENGTH} lowercase "
                               "letters and digits with single '-' or '_' between them "
                               "(it names the run folder <name>__<suite>__<memory>)")


def run_planner(key, v):
    """A registry name, or ``package.module:Class`` whose ``name`` is a valid name."""
    if v == "???" or v is None:
        raise ConfigError(key, f"{key} is required: planner=custom planner.name="
                               "package.module:ClassName")
    if not isinstance(v, str):
        raise ConfigError(key, f"{key}={v!r}: expected a planner name or an import path "
                               "package.module:ClassName")
    from ..planners import ADAPTERS, PLANNERS, planner_label
    try:
        label = planner_label(v)
    except ValueError as exc:
        raise ConfigError(key, f"{key}: {exc}"
                               f"{suggest(v, sorted(PLANNERS | ADAPTERS)) if ':' not in v else ''}") from None
    if len(label) > MAX_NAME_LENGTH:
        raise ConfigError(key, f"{key}={v!r}: its name is longer than {MAX_NAME_LENGTH} "
                               "characters")


def _shard(key, v):
    from .._runs.shards import parse_shard
    try:
        parse_shard(v)
    except ValueError as exc:
        raise ConfigError(key, str(exc)) from None


def optional_str(key, v):
    if v is not None and (not isinstance(v, str) or not v):
        raise ConfigError(key, f"{key}={v!r}: expected a run ID or a planner name")


def _run_key(key, v):
    if v is None:
        raise ConfigError(key, f"{key} is required: {key}=RUN (a run ID or a run name)")
    if isinstance(v, bool) or not isinstance(v, (str, int)) or not str(v):
        raise ConfigError(key, f"{key}={v!r}: expected a run ID or a run name")


def _compare_metrics():
    from ..report.compare import COMPARE_METRICS
    return list(COMPARE_METRICS)


def required_dir(key, v):
    if v is None:
        raise ConfigError(key, f"{key} is required: {key}=PATH")
    existing_dir(key, v)


def required_name(key, v):
    if v is None:
        raise ConfigError(key, f"{key} is required: {key}=NAME")
    planner_name(key, v)


def _memory_modes():
    from ..executor.belief import MEMORY_MODES
    return list(MEMORY_MODES)


@dataclass(frozen=True)
class Command:
    name: str
    does: str
    keys: tuple[Key, ...]
    examples: tuple[str, ...]
    groups: tuple[str, ...] = ()          # Hydra config groups (configs/<group>/*.yaml)
    free_prefixes: tuple[str, ...] = ()  # keys below these are the planner's own settings
    hints: dict = field(default_factory=dict)  # a wrong key -> the right one


EXPORT_ROOT = Key("export_root", "path", "the frozen export (a folder with MANIFEST.json)",
                  existing_dir)


def writable_export(key, v):
    """The export a command writes into: named explicitly, never the read-only copy an
    installed package ships."""
    if v is None:
        raise ConfigError(key, f"{key} is required: this command writes into the export it "
                               "is given. Make a scratch copy (python -m analysis.verify "
                               f"copy_to=/tmp/scratch, then {key}=/tmp/scratch), or give "
                               f"{key}=frozen_exports in a clone to change the committed "
                               "export on purpose")
    existing_dir(key, v)
    from .._fs.resources import is_shipped_export
    if is_shipped_export(v):
        raise ConfigError(key, f"{key}={v}: the export shipped with the installed package is "
                               "read-only; make a scratch copy with python -m analysis.verify "
                               f"copy_to=DIR and give {key}=DIR")
    movable_into(key, v, "what the command adds")


WRITTEN_EXPORT = Key("export_root", "path", "the export written into (required: a scratch "
                     "copy, or frozen_exports to change the committed export)", writable_export)
COMMANDS: dict[str, Command] = {c.name: c for c in (
    Command(
        "tables",
        "Verify the frozen export, recompute every metric and statistic, and write every "
        "table to <out_dir>/tables and every figure to <out_dir>/figures as one generation: "
        "staged first, then switched in by a journaled transaction, so a kill leaves the old "
        "or the new generation. Only files listed in tables/GENERATION.json are ever deleted.",
        (EXPORT_ROOT,
         Key("out_dir", "path", "folder receiving tables/ and figures/ (refused when it is a "
             "file or not writable)", writable_out_dir),
         Key("allow_limited", "bool", "tabulate runs made with run limit=N (the first N "
             "episodes of a suite; refused by default: the tables compare whole suites)",
             boolean),
         *STATS),
        ("python -m analysis.tables",
         "python -m analysis.tables export_root=/tmp/scratch out_dir=/tmp/scratch_out "
         "stats.n_resamples=2000")),
    Command(
        "verify",
        "Verify the frozen export only: exit 0 with a one-line summary, or exit 1 naming "
        "the file and record that differ. With copy_to=DEST, copy the verified export to a "
        "new scratch folder DEST (refused if DEST exists and is not empty).",
        (EXPORT_ROOT,
         Key("copy_to", "path|null", "create a scratch copy of the verified export here "
             "(a new or empty folder, outside every export)", lambda k, v: v is None or new_or_empty_dir(k, v))),
        ("python -m analysis.verify",
         "python -m analysis.verify copy_to=/tmp/scratch")),
    Command(
        "compile",
        "Compile the HD-EPIC annotations under source into the frozen cohort "
        "<out_dir>/cohort and its manifest.",
        (Key("source", "path", "HD-EPIC annotations (default: $E2W_HDEPIC, else "
             "../shared/hd-epic beside the repository)", hdepic_dir),
         Key("out_dir", "path", "the export to write the cohort into (not the installed "
             "package's shipped copy)", compile_out_dir),
         Key("stale_runs", "str", "when the recompiled cohort differs and the export holds "
             "runs (which would no longer verify): refuse (write nothing) or drop them in "
             "the same step", one_of(("refuse", "drop")), lambda: ["refuse", "drop"])),
        ("python -m analysis.compile",
         "python -m analysis.compile source=/data/hd-epic out_dir=/tmp/scratch")),
    Command(
        "run",
        "Run a planner over every episode of a suite and add its records to the export as "
        "runs/<planner>__<suite>__<memory>, or runs/<run_name>__<suite>__<memory> with "
        "run_name= (the manifest is updated in the same journaled "
        "step; no add_planner needed). An existing run is replaced only with overwrite=true. "
        "A chat planner's model server is checked first (it answers, it serves the model). "
        "Exit code 3: the run is incomplete (a model endpoint failed, provider_error) or "
        "shards are missing; nothing is registered, and the same command resumes it. -m runs "
        "one job per combination of comma-separated values (planner=a,b memory=persistent,"
        "reset); add -m hydra/launcher=joblib_local (or submitit_local, slurm, ray_local, "
        "ray_cluster: docs/llm.md) to run the jobs in parallel.",
        (Key("planner", "group", "a configs/planner/<name>.yaml, or custom with planner.name",
             lambda k, v: None),
         Key("planner.name", "str", "the planner: its registry name, or package.module:Class "
             "for planner=custom", run_planner),
         Key("planner.settings", "map", "the planner's own settings (see its configs/planner/ "
             "file)", lambda k, v: None),
         Key("suite", "group", "the suite: planner or memory", lambda k, v: None),
         Key("suite.name", "str", "set by suite=", lambda k, v: None),
         Key("memory", "str", "belief across groups: persistent or reset",
             one_of(_memory_modes), _memory_modes),
         Key("seed", "int", f"planner seed (0-{MAX_SEED})", int_range(0, MAX_SEED)),
         Key("jobs", "int", f"episodes run in parallel processes (1-{MAX_JOBS}); records "
             "identical to jobs=1", int_range(1, MAX_JOBS)),
         Key("attempt_limit", "int", "attempts per group (actions and queries, 1-10000)",
             int_range(1, 10_000)),
         Key("runtime.max_planner_calls", "int", "planner calls per group (1-1000)",
             int_range(1, 1000)),
         Key("runtime.feedback_window", "int", "recent attempts the planner sees (1-1000)",
             int_range(1, 1000)),
         Key("runtime.repair", "bool", "let the runtime insert repair actions", boolean),
         Key("progress", "bool", "progress bar on stderr", boolean),
         Key("overwrite", "bool", "replace an existing run of the same ID", boolean),
         Key("run_name", "str|null", "the run's name, apart from its planner: the run "
             "becomes runs/<run_name>__<suite>__<memory>, so several configurations of one "
             "planner share an export (null: the planner's name)",
             lambda k, v: v is None or planner_name(k, v)),
         Key("resume", "bool", "journal finished episodes so that rerunning an interrupted "
             "run continues (analysis/episodes.py)", boolean),
         Key("state_dir", "path|null", "where the episode journal lives (null: a folder "
             "for this export under the user cache directory, $E2W_CACHE_DIR or "
             "~/.cache/ego2world-analysis)", lambda k, v: v is None or writable_dir_or_creatable(k, v)),
         Key("shard", "str|null", "i/n: run only shard i of n of the suite's episodes "
             "(separate jobs, e.g. shard=1/4,2/4,3/4,4/4 with -m); the run is registered "
             "once, when every shard is done (analysis/shards.py); null: the whole run",
             _shard),
         Key("limit", "int|null", "N: run only the first N episodes of the suite, a cheap "
             "trial recorded as such in run.json (python -m analysis.tables refuses it unless "
             "allow_limited=true); null: the whole suite",
             lambda k, v: v is None or int_range(1, 10**6)(k, v)),
         WRITTEN_EXPORT),
        ("python -m analysis.run planner=lexicon suite=memory memory=reset "
         "export_root=/tmp/scratch",
         "python -m analysis.run planner=custom planner.name=mypkg.mod:MyPlanner "
         "suite=planner memory=persistent export_root=/tmp/scratch"),
        groups=("planner", "suite"), free_prefixes=("planner.settings.",)),
    Command(
        "reexecute",
        "Replay recorded runs through the executor from each episode's initial world; exit "
        "0 when every status, failed check, world hash and condition truth matches, else "
        "exit 1 naming the first divergence.",
        (EXPORT_ROOT,
         Key("run", "str|null", "only this run ID or planner name of the export (default: "
             "every run)", optional_str)),
        ("python -m analysis.reexecute",
         "python -m analysis.reexecute run=my_planner export_root=/tmp/scratch"),
        hints={"planner": "run", "name": "run"}),
    Command(
        "add_planner",
        "Validate, re-execute and add a run's records (run.json, groups.jsonl.gz, "
        "tasks.jsonl) to the export under planner name NAME, in one journaled step.",
        (Key("records", "path", "folder holding run.json, groups.jsonl.gz and tasks.jsonl "
             "(required)", required_dir),
         Key("name", "str", f"planner name (required; lowercase letters, digits, single '-' "
             f"or '_', at most {MAX_NAME_LENGTH})", required_name),
         Key("reexecute", "bool", "replay the records before adding them", boolean),
         WRITTEN_EXPORT),
        ("python -m analysis.add_planner records=/tmp/my_run name=my_planner "
         "export_root=/tmp/scratch",
         "python -m analysis.add_planner records=/tmp/my_run name=my_planner reexecute=false "
         "export_root=/tmp/scratch")),
    Command(
        "compare",
        "Compare two runs of one suite task by task: the tasks one run solved and the other "
        "did not, the conditions each met there and the first attempt at which they did "
        "different things, and P(A > B), the probability of improvement, with an "
        "episode-cluster interval.",
        (EXPORT_ROOT,
         Key("a", "str", "run A: a run ID or a run name with one run (required)",
             lambda k, v: _run_key(k, v)),
         Key("b", "str", "run B: a run ID or a run name with one run (required)",
             lambda k, v: _run_key(k, v)),
         Key("metric", "str", "the per-task score of P(A > B)", one_of(_compare_metrics),
             _compare_metrics),
         *(k for k in STATS if k.name in ("stats.n_resamples", "stats.confidence_level",
                                          "stats.seed", "stats.method"))),
        ("python -m analysis.compare a=belief_search__planner__persistent "
         "b=lexicon__planner__persistent",
         "python -m analysis.compare a=chat-small b=chat-large metric=gcr "
         "export_root=/tmp/scratch"),
        hints={"run_a": "a", "run_b": "b", "A": "a", "B": "b"}),
    Command(
        "view",
        "Write the trace viewer for the frozen export: a static site (overview of every run "
        "against every task, one page per task with every run's attempts, queries and "
        "truths, a compare page per task) that opens from file:// with no server and no "
        "network. serve=true then serves it on 127.0.0.1 until Ctrl-C.",
        (EXPORT_ROOT,
         Key("out_dir", "path", "the site folder: new, empty, or a site an earlier build "
             "wrote (never inside the export)", site_out_dir),
         Key("serve", "bool", "after building, serve the site on 127.0.0.1", boolean),
         Key("port", "int", "port for serve=true (0: any free port)", int_range(0, 65535)),
         *STATS),
        ("python -m analysis.view",
         "python -m analysis.view export_root=/tmp/scratch out_dir=/tmp/scratch_site")),
)}


def check_value(command: str, key: str, value: Any) -> None:
    """Check one value of ``command``'s ``key``; raises :class:`ConfigError`."""
    for k in COMMANDS[command].keys:
        if k.name == key:
            k.check(key, value)
            return
    raise ConfigError(key, f"unknown key {key!r}")


def _state_paths(command: str, cfg: dict) -> None:
    """Folders and files a command writes must not be inside an export (nor of the wrong
    kind): refused before any work (analysis._fs.confine.state_path_problem)."""
    from .._fs.confine import state_path_problem
    settings = (cfg.get("planner") or {}).get("settings") or {}
    paths = {"tables": [("out_dir", cfg.get("out_dir"), "dir")],
             "run": [("state_dir", cfg.get("state_dir"), "dir"),
                     ("planner.settings.cache_dir", settings.get("cache_dir"), "dir"),
                     ("planner.settings.call_log", settings.get("call_log"), "file"),
                     ("planner.settings.rate_state", settings.get("rate_state"), "dir")]}
    for key, value, kind in paths.get(command, []):
        if isinstance(value, str) and value:
            root = cfg.get("export_root") or "frozen_exports"
            why = state_path_problem(os.path.abspath(os.path.expanduser(value)), kind,
                                     os.path.abspath(os.path.expanduser(root)))
            if why:
                raise ConfigError(key, f"{key}={value}: {why}")


def _copy_outside_exports(copy_to, export_root) -> None:
    """A scratch copy goes outside every export: inside the export it copies, it would copy
    itself; inside another, that export would no longer verify (a file not in its
    manifest)."""
    dest = Path(copy_to).expanduser().resolve()
    src = Path(export_root).expanduser().resolve()
    if dest == src or src in dest.parents:
        raise ConfigError("copy_to", f"copy_to={copy_to}: is inside the export it copies "
                                     f"({src}); copy it elsewhere")
    for folder in dest.parents:
        if (folder / "MANIFEST.json").is_file():
            raise ConfigError("copy_to", f"copy_to={copy_to}: is inside the export {folder}, "
                                         "which would then hold a file not in its manifest; "
                                         "copy it elsewhere")


def cross_checks(command: str, cfg: dict) -> None:
    """Rules that tie two keys together."""
    if command == "run" and cfg.get("shard") is not None and cfg.get("resume") is False:
        raise ConfigError("shard", f"shard={cfg['shard']}: a sharded run needs resume=true "
                                   "(its shards meet in the resume journal)")
    _state_paths(command, cfg)
    if command == "verify" and cfg.get("copy_to") is not None:
        _copy_outside_exports(cfg["copy_to"], cfg["export_root"])
    if command == "view" and cfg.get("out_dir") is not None:
        from ..view.output import SiteDirError, check_site_dir
        try:
            check_site_dir(cfg["out_dir"], cfg["export_root"])
        except SiteDirError as exc:
            raise ConfigError("out_dir", str(exc)) from None
    if command in ("tables", "view", "compare"):
        check_resamples_for_level(cfg.get("stats", {}))

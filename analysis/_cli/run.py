"""``python -m analysis.run planner=NAME suite=planner|memory memory=persistent|reset``.

Runs a planner over every episode of a suite with the runtime loop
(:mod:`analysis.executor.runtime`) and writes its records to
``frozen_exports/runs/<planner>__<suite>__<memory>/`` (``run.json``,
``groups.jsonl.gz``, ``tasks.jsonl``; docs/FORMAT.md), then updates the manifest.
``run_name=NAME`` names the run apart from its planner (``runs/<NAME>__<suite>__<memory>``,
with ``run_name`` in ``run.json``), so that several configurations of one planner, or
several models behind ``chat``, sit side by side in one export.
Episodes run in parallel with ``jobs=N`` (processes, or threads for planners with
``io_bound = True``); results are identical to a serial
run because every episode starts from its own initial world with a fresh planner and
belief, and planners seed from (seed, episode, group, call). The run folder and the
manifest change in one journaled transaction (:mod:`analysis.records.store`): a kill at any
instant leaves the export as it was or with the whole new run, and the next command
rolls back or completes what it finds, and says which. An existing run is replaced only
with ``overwrite=true``. Finished episodes are journaled so that rerunning an
interrupted command continues (:mod:`analysis._runs.journal`). A run whose model endpoint
failed (``provider_error``) is not written: the command exits 3 and can be rerun to
resume. ``-m`` (Hydra multirun) runs one job per combination of the swept values, each
checked like a single run; writers of one export take a lock.

The run's ID: :func:`analysis.records.run_names.run_id`; its cohort:
:func:`analysis.executor.cohort.load_cohort`.
"""
from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

from .._fs.confine import state_path_problem
from .multirun import multirun
from .._runs.journal import RunIncomplete, RunJournal, default_state_dir, run_episodes
from .._runs.shards import (ShardJournal, already_registered, finish_shard, parse_shard,
                            shard_call_log)
from ..executor.belief import MEMORY_MODES
from ..executor.cohort import Cohort, load_cohort
from ..executor.rules import Rules
from ..executor.runtime import RuntimeConfig, run_episode
from ..records.io import encode_records
from ..records.manifest import RUN_FILES
from ..records.store import ExportStore
from ..records import verify
from ..records.limited import LIMIT_KEY, limited_suite
from ..records.run_names import RunExists, check_run_absent, run_id
from ..planners import check_settings, make_planner, planner_class, planner_label

__all__ = ["run_suite", "run", "RunSpec", "RunOptions", "run_id", "RunSummary",
           "load_cohort", "Cohort", "main"]

def _say(msg: str) -> None:
    print(f"[analysis.run] {msg}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class RunSummary:
    run_id: str
    path: str
    n_episodes: int
    n_groups: int
    n_tasks: int
    seconds: float
    bytes_written: int
    note: str | None = None  # a shard's outcome (analysis._runs.shards), else None


def _episode_job(args):
    (episode, tasks, rules_json, planner, seed, settings, memory, cfg, rid) = args
    rules = Rules.from_dict(rules_json)
    res = run_episode(episode, tasks, make_planner(planner, seed=seed, **settings), rules,
                      memory, RuntimeConfig(**cfg), run_id=rid)
    return res.group_records, res.task_records, res.provider_error


def _derive_job(args, groups):
    """Re-execute a journaled episode with its journaled planner replies (no planner or
    provider call): every outcome is derived from the cohort, never read back."""
    from ..executor.replay import _RecordedPlanner
    (episode, tasks, rules_json, _planner, _seed, _settings, memory, cfg, rid) = args
    recorded = _RecordedPlanner(episode["episode_id"], {g["group_id"]: g for g in groups})
    res = run_episode(episode, tasks, recorded, Rules.from_dict(rules_json), memory,
                      RuntimeConfig(**cfg), run_id=rid)
    # belief.cross_group_hits counts the planner's own belief lookups (not derivable from
    # its replies, like the replies themselves): the journaled count, if a count
    by_id = {g["group_id"]: g for g in groups}
    for g in res.group_records:
        hits = by_id[g["group_id"]].get("belief", {}).get("cross_group_hits")
        if type(hits) is int and 0 <= hits < 10 ** 9:
            g["belief"]["cross_group_hits"] = hits
    return res.group_records, res.task_records, res.provider_error


def _progress(done: int, total: int, rid: str, enabled: bool, failed: int = 0) -> None:
    """One bar per run on stderr: episodes that finished, and how many of them failed
    (an episode stopped by a provider error is finished but not done)."""
    if enabled:
        width = 30
        filled = width * done // max(total, 1)
        tail = f", {failed} failed (provider error)" if failed else ""
        line = f"{rid} [{'#' * filled}{'.' * (width - filled)}] {done - failed}/{total} episodes done{tail}"
        if sys.stderr.isatty():   # one line redrawn in place
            print("\r" + line, end="\n" if done == total else "", file=sys.stderr, flush=True)
        elif done in (0, total) or 10 * done // max(total, 1) != 10 * (done - 1) // max(total, 1):
            # a log file or a pipe: whole lines, about every tenth of the run
            print(line, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class RunSpec:
    """What is run: the settings that determine the records (``run.json`` keeps them).

    ``run_name`` names the run apart from its planner (default: the planner's name): the
    run ID is ``<run_name>__<suite>__<memory>`` and ``run.json`` keeps ``planner``,
    ``planner_config`` and ``run_name`` apart. ``limit=N`` runs only the first N episodes
    of the suite, a trial recorded as ``episode_limit`` in ``run.json``
    (:mod:`analysis.records.limited`: the tables refuse it unless told otherwise); a
    limit of at least the suite's size is a whole run.
    """

    planner: str
    suite: str
    memory: str
    export_root: str | os.PathLike
    seed: int = 0
    attempt_limit: int = 80
    planner_settings: Mapping | None = None
    runtime: Mapping | None = None
    run_name: str | None = None
    limit: int | None = None


@dataclass(frozen=True)
class RunOptions:
    """How a run is carried out: never changes its records.

    With ``write``, an interrupted earlier change of the export is rolled back or
    completed first, an existing run is refused unless ``overwrite``, and with
    ``verify_export`` (the command's default) the export is verified before the planner
    runs and again with the new run before the commit point. With ``resume`` finished
    episodes are journaled under ``state_dir`` (default
    :func:`analysis._runs.journal.default_state_dir`: a folder for the export under the
    user cache directory) and a rerun continues from them (:mod:`analysis._runs.journal`);
    a planner with ``io_bound = True`` runs its ``jobs`` episodes in threads.
    ``shard="i/n"`` runs only shard ``i`` of ``n`` (by episode) and registers the run
    when every shard is done (:mod:`analysis._runs.shards`).
    """

    jobs: int = 1
    progress: bool = True
    write: bool = True
    overwrite: bool = False
    verify_export: bool = False
    resume: bool = True
    state_dir: str | os.PathLike | None = None
    say: Callable[[str], None] = _say
    shard: str | None = None


def run_suite(planner: str, suite: str, memory: str, export_root: str | os.PathLike,
              seed: int = 0, jobs: int = 1, attempt_limit: int = 80,
              planner_settings: Mapping | None = None, runtime: Mapping | None = None,
              progress: bool = True, write: bool = True, overwrite: bool = False,
              verify_export: bool = False, resume: bool = True,
              state_dir: str | os.PathLike | None = None,
              say=_say, shard: str | None = None,
              run_name: str | None = None,
              limit: int | None = None) -> tuple[RunSummary, dict]:
    """Run ``planner`` over ``suite`` under ``memory``; write and register its records:
    :func:`run` with the keywords sorted into a :class:`RunSpec` (what is run) and
    :class:`RunOptions` (how). Returns the summary and the records ``{"run": ...,
    "groups": [...], "tasks": [...]}``; for a shard, until every shard is done, the
    records are ``None`` and ``RunSummary.note`` says which shards are missing.
    """
    spec = RunSpec(planner, suite, memory, export_root, seed=seed,
                   attempt_limit=attempt_limit, planner_settings=planner_settings,
                   runtime=runtime, run_name=run_name, limit=limit)
    options = RunOptions(jobs=jobs, progress=progress, write=write, overwrite=overwrite,
                         verify_export=verify_export, resume=resume, state_dir=state_dir,
                         say=say, shard=shard)
    return run(spec, options)


def _refuse_early(spec: RunSpec, opt: RunOptions):
    """The refusals that need nothing read: ``(label, name, shard part, root)``."""
    label = planner_label(spec.planner)  # validates the name or the import path
    name = check_run_name(spec.run_name, label)
    if ":" in spec.planner:   # a built-in's settings are checked against its configs/planner file
        check_settings(spec.planner, dict(spec.planner_settings or {}))
    if spec.memory not in MEMORY_MODES:
        raise ValueError(f"memory={spec.memory!r}: expected one of {list(MEMORY_MODES)}")
    if not isinstance(opt.jobs, int) or opt.jobs < 1:
        raise ValueError(f"jobs={opt.jobs!r}: expected a positive integer")
    limit = spec.limit
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool)
                              or limit < 1):
        raise ValueError(f"limit={limit!r}: expected a positive number of episodes (or null "
                         "for the whole suite)")
    root = Path(spec.export_root)
    part = parse_shard(opt.shard)
    if part is not None and not (opt.write and opt.resume):
        raise ValueError(f"shard={part}: a sharded run needs write=true and resume=true "
                         "(its shards meet in the resume journal)")
    if opt.state_dir is not None and opt.resume and opt.write:
        why = state_path_problem(opt.state_dir, "dir", root)
        if why:
            raise ValueError(f"state_dir={opt.state_dir}: {why}")
    return label, name, part, root


def _check_export(spec: RunSpec, opt: RunOptions, root: Path, rid: str, part):
    """Before the planner runs: the run is absent (unless ``overwrite``), the planner's
    preflight, then the export verified. Returns ``(check, registered)``: the check to
    repeat before the commit point, and the refusal a shard meets when its siblings
    already registered the run."""
    check = None
    registered = None
    if opt.write and not opt.overwrite:
        try:
            check_run_absent(root, rid)
        except RunExists as exc:
            registered = exc  # a sharded run registered by its siblings is not an error
            if part is None:
                raise
    check_first = getattr(planner_class(spec.planner), "preflight", None)
    if check_first is not None:
        # e.g. the chat planner: its model server answers and serves the model, checked
        # before anything is written (a ValueError naming the URL refuses the run), after
        # the cheap refusals (a run that already exists needs no server to be refused)
        note = check_first(seed=spec.seed, **dict(spec.planner_settings or {}))
        if note:
            opt.say(note)
    if opt.write and opt.verify_export:
        opt.say(f"verifying {root}")
        with ExportStore(root).lock():
            verify(root)
        check = lambda: verify(root)  # noqa: E731
    return check, registered


def _run_record(spec: RunSpec, label: str, name: str, rid: str, cohort: Cohort, settings: dict,
                cfg: dict, limit: int | None) -> dict:
    """``run.json``: what was run, with the planner's own configuration."""
    planner_config = make_planner(spec.planner, seed=spec.seed, **settings).config()
    if spec.planner != label:
        planner_config = {**planner_config, "import_path": spec.planner}
    run_rec = {"run_id": rid, "planner": label,
               # absent when the run is named as its planner: an unlabelled run's records
               # stay byte for byte what they were before run names existed
               **({"run_name": name} if name != label else {}),
               "memory": spec.memory, "suite": spec.suite,
               "seed": int(spec.seed), "attempt_limit": int(spec.attempt_limit),
               "cohort_sha256": cohort.fingerprint,
               "planner_config": {**planner_config, "runtime": cfg}}
    if limit is not None:
        run_rec[LIMIT_KEY] = int(limit)
    return run_rec


def _execute(spec: RunSpec, opt: RunOptions, jobs_args, positions, episode_ids, journal,
             episodes_journal, rid: str, part, settings: dict) -> tuple[list, float]:
    """Run the episodes at ``positions`` (the planner's before/after hooks around them),
    journaled in ``episodes_journal`` (the run's ``journal``, or its shard's); returns
    their results and the seconds taken."""
    cls = planner_class(spec.planner)
    before = getattr(cls, "before_run", None)
    if before is not None:
        # a fresh start (nothing journaled to resume) begins the planner's own logs anew
        before(fresh=journal is None or not journal.dir.exists(), seed=spec.seed, **settings)
    t0 = time.perf_counter()
    try:
        results = run_episodes(_episode_job, [jobs_args[p] for p in positions],
                               [episode_ids[p] for p in positions], jobs=opt.jobs,
                               threads=bool(getattr(cls, "io_bound", False)),
                               journal=episodes_journal,
                               on_done=lambda n, bad: _progress(
                                   n, len(positions), rid if part is None else
                                   f"{rid} shard {part}", opt.progress, bad))
    finally:
        after = getattr(cls, "after_run", None)
        if after is not None:
            after(seed=spec.seed, **settings)  # e.g. the chat planner's accounting summary
    return results, time.perf_counter() - t0


def run(spec: RunSpec, options: RunOptions = RunOptions()) -> tuple[RunSummary, dict]:
    """Run ``spec`` as ``options`` say (see :func:`run_suite` for what is returned)."""
    opt = options
    label, name, part, root = _refuse_early(spec, opt)
    if opt.write:
        # parallel multirun jobs write one export: recovery and the first verification
        # must not see another job's transaction in flight
        store = ExportStore(root)
        with store.lock():
            store.recover(opt.say)
    cohort = load_cohort(root)
    if spec.suite not in cohort.suites:
        raise ValueError(f"suite={spec.suite!r}: expected one of {sorted(cohort.suites)}")
    settings = dict(spec.planner_settings or {})
    if part is not None and settings.get("call_log"):
        settings["call_log"] = shard_call_log(settings["call_log"], part)
    cfg = {**RuntimeConfig().as_dict(), **dict(spec.runtime or {}),
           "attempt_limit": int(spec.attempt_limit)}
    RuntimeConfig(**cfg)  # validate before any work
    rid = run_id(name, spec.suite, spec.memory)
    check, registered = _check_export(spec, opt, root, rid, part)
    s, limit = cohort.suites[spec.suite], spec.limit
    if limit is not None and limit >= len(s["episode_ids"]):
        opt.say(f"limit={limit}: the suite {spec.suite!r} has {len(s['episode_ids'])} "
                "episodes; running all of them (a whole run, not a limited one)")
        limit = None
    if limit is not None:
        s = limited_suite(s, limit, cohort.tasks)
    suite_tasks = set(s["task_ids"])
    jobs_args = [(cohort.episodes[eid], [t for t in cohort.tasks.values()
                                         if t["task_id"] in suite_tasks
                                         and t["episode_id"] == eid],
                  cohort.rules_json, spec.planner, spec.seed, settings, spec.memory, cfg, rid)
                 for eid in s["episode_ids"]]
    run_rec = _run_record(spec, label, name, rid, cohort, settings, cfg, limit)
    journal = None
    if opt.resume and opt.write:
        journal = RunJournal(opt.state_dir or default_state_dir(root), rid,
                             {**run_rec, "planner_path": spec.planner},
                             derive=lambda i, groups: _derive_job(jobs_args[i], groups))
    episode_ids = list(s["episode_ids"])
    if part is not None:
        if registered is not None:
            if not already_registered(root, rid, journal.dir):
                raise registered
            return RunSummary(rid, str(root / "runs" / rid), 0, 0, 0, 0.0, 0,
                              note=f"shard {part}: {rid} is already registered (every "
                                   "shard was complete); nothing to do"), None
        positions = part.positions(len(jobs_args))
        shard_journal = ShardJournal(journal, part, positions)
        results, seconds = _execute(spec, opt, jobs_args, positions, episode_ids, journal,
                                    shard_journal, rid, part, settings)

        def register(all_results):
            records = _assemble(all_results, s, run_rec, rid)
            return records, write_run(root, rid, records, overwrite=opt.overwrite,
                                      check=check)
        out = finish_shard(shard_journal, root, rid, episode_ids, dict(zip(positions, results)),
                           register, opt.say)
        recs = out.records
        return RunSummary(rid, str(root / "runs" / rid), len(positions),
                          sum(len(r[0]) for r in results), len(recs["tasks"]) if recs else 0,
                          seconds, out.size, note=out.message(rid)), recs
    results, seconds = _execute(spec, opt, jobs_args, list(range(len(jobs_args))),
                                episode_ids, journal, journal, rid, part, settings)
    records = _assemble(results, s, run_rec, rid)
    size = 0
    if opt.write:
        with ExportStore(root).lock():
            size = write_run(root, rid, records, overwrite=opt.overwrite, check=check)
        if journal is not None:
            journal.finish()
    return RunSummary(rid, str(root / "runs" / rid), len(jobs_args), len(records["groups"]),
                      len(records["tasks"]), seconds, size), records


def check_run_name(run_name, planner: str) -> str:
    """The run's name: ``run_name``, or the planner's name when it is None. Raises
    ``ValueError`` naming ``run_name`` for a name that cannot name a run folder.

    >>> check_run_name(None, "chat"), check_run_name("chat-small", "chat")
    ('chat', 'chat-small')
    >>> check_run_name("Chat__a", "chat")
    Traceback (most recent call last):
    ...
    ValueError: run_name='Chat__a': expected at most 64 lowercase letters and digits with single '-' or '_' between them (it names the run folder <run_name>__<suite>__<memory>)
    """
    if run_name is None:
        return planner
    from .config_check import MAX_NAME_LENGTH
    from ..records.schemas import PLANNER_NAME
    if (not isinstance(run_name, str) or not PLANNER_NAME.match(run_name)
            or len(run_name) > MAX_NAME_LENGTH):
        shown = run_name if not isinstance(run_name, str) or len(run_name) <= 40 \
            else run_name[:37] + "..."
        raise ValueError(f"run_name={shown!r}: expected at most {MAX_NAME_LENGTH} lowercase "
                         "letters and digits with single '-' or '_' between them (it names "
                         "the run folder <run_name>__<suite>__<memory>)")
    return run_name


def _assemble(results, suite_rec, run_rec, rid) -> dict:
    """The run's records from its per-episode results (in suite order)."""
    groups = [g for gr, _, _ in results for g in gr]
    task_recs = [t for _, tr, _ in results for t in tr]
    order = {tid: i for i, tid in enumerate(suite_rec["task_ids"])}
    task_recs.sort(key=lambda t: order[t["task_id"]])
    missing = set(suite_rec["task_ids"]) - {t["task_id"] for t in task_recs}
    if missing:
        raise RuntimeError(f"run {rid}: no record for tasks {sorted(missing)[:5]}")
    return {"run": run_rec, "groups": groups, "tasks": task_recs}


def write_run(root: Path, rid: str, records: Mapping, overwrite: bool = False,
              command: str = "analysis.run", check=None, meta: Mapping | None = None) -> int:
    """Add (or with ``overwrite`` replace) ``runs/<rid>`` and its manifest entries in one
    journaled transaction (:meth:`analysis.records.store.ExportStore.put_run`); ``check``
    runs on the switched export before the commit point and rolls everything back if it
    raises."""
    files = {name: encode_records(name, [records[key]] if key == "run" else records[key])
             for name, key in (("run.json", "run"), ("groups.jsonl.gz", "groups"),
                               ("tasks.jsonl", "tasks"))}
    return ExportStore(root).put_run(rid, files, overwrite=overwrite, meta=meta,
                                     command=command, check=check)


def main_from_cfg(cfg) -> RunSummary:
    from .hydra_glue import resolve_path
    summary, recs = run_suite(
        planner=cfg.planner.name, suite=cfg.suite.name, memory=cfg.memory,
        export_root=resolve_path(cfg.export_root), seed=int(cfg.seed), jobs=int(cfg.jobs),
        attempt_limit=int(cfg.attempt_limit),
        planner_settings=dict(cfg.planner.get("settings") or {}),
        runtime=dict(cfg.get("runtime") or {}), progress=bool(cfg.progress),
        overwrite=bool(cfg.overwrite), verify_export=True,
        resume=bool(cfg.get("resume", True)), state_dir=cfg.get("state_dir"),
        shard=cfg.get("shard"), run_name=cfg.get("run_name"), limit=cfg.get("limit"))
    if summary.note is not None and summary.bytes_written == 0:
        print(summary.note)  # a shard that did not register the run
        return summary
    print(f"{summary.run_id}: {summary.n_episodes} episodes, {summary.n_groups} groups, "
          f"{summary.n_tasks} tasks in {summary.seconds:.1f} s -> {summary.path} "
          f"({summary.bytes_written} bytes); registered in the export's MANIFEST.json "
          "(no add_planner needed)")
    if recs is not None and recs["run"].get("episode_limit") is not None:
        print(f"{summary.run_id} is a limited run (first {cfg.limit} episodes): "
              "python -m analysis.tables refuses it unless allow_limited=true; rerun without "
              "limit= (overwrite=true) for the tables")
    return summary


def _body(cfg) -> int:
    from .hydra_glue import UserError
    from ..records import IntegrityError
    try:
        main_from_cfg(cfg)
    except RunIncomplete as exc:
        print(f"analysis.run: INCOMPLETE: {exc}", file=sys.stderr)
        return 3
    except IntegrityError as exc:
        raise UserError(f"verification FAILED, nothing written: {exc}") from None
    except (ValueError, FileNotFoundError, RuntimeError) as exc:
        raise UserError(f"refused, nothing written: {exc}") from None
    return 0


def _multirun(argv: list[str]) -> int:
    """``-m``: Hydra's multirun of this command (:func:`analysis._cli.multirun.multirun`)."""
    return multirun(argv, _body)


def main(argv=None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "-m" in argv or "--multirun" in argv:
        if "--help" in argv or "-h" in argv:
            from .hydra_glue import command_main
            command_main("run", _body, ["--help"])
        sys.exit(_multirun(argv))
    from .hydra_glue import command_main
    command_main("run", _body, argv)

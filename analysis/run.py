"""``python -m analysis.run planner=NAME suite=planner|memory memory=persistent|reset``.

Runs a planner over every episode of a suite with the runtime loop
(:mod:`analysis.executor.runtime`) and writes its records to
``frozen_exports/runs/<planner>__<suite>__<memory>/`` (``run.json``,
``groups.jsonl.gz``, ``tasks.jsonl``; docs/FORMAT.md), then updates the manifest.
Episodes run in parallel with ``jobs=N`` (processes, or threads for planners with
``io_bound = True``); results are identical to a serial
run because every episode starts from its own initial world with a fresh planner and
belief, and planners seed from (seed, episode, group, call). The run folder and the
manifest change in one journaled transaction (:mod:`analysis.transaction`): a kill at any
instant leaves the export as it was or with the whole new run, and the next command
rolls back or completes what it finds, and says which. An existing run is replaced only
with ``overwrite=true``. Finished episodes are journaled so that rerunning an
interrupted command continues (:mod:`analysis.episodes`). A run whose model endpoint
failed (``provider_error``) is not written: the command exits 3 and can be rerun to
resume. ``-m`` (Hydra multirun) runs one job per combination of the swept values, each
checked like a single run; writers of one export take a lock.

>>> run_id("belief_search", "memory", "reset")
'belief_search__memory__reset'
"""
from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from .episodes import RunIncomplete, RunJournal, default_state_dir, export_lock, run_episodes
from .executor.belief import MEMORY_MODES
from .executor.rules import Rules
from .executor.runtime import RuntimeConfig, run_episode
from .frozen.hashing import sha256_file
from .frozen.io import encode_records, read_records
from .frozen.manifest import (FORMAT_VERSION, MANIFEST_NAME, cohort_fingerprint, file_entry,
                              read_manifest, write_manifest)
from .transaction import Transaction, export_txn_dir, recover_export
from .planners import make_planner, planner_class, planner_label

__all__ = ["run_suite", "run_id", "RunSummary", "load_cohort", "Cohort", "main"]

COHORT_FILES = ("rules.json", "episodes.jsonl.gz", "tasks.jsonl", "suites.jsonl")
RUN_FILES = {"run.json": "run", "groups.jsonl.gz": "group_record", "tasks.jsonl": "task_record"}


def _say(msg: str) -> None:
    print(f"[analysis.run] {msg}", file=sys.stderr, flush=True)


def run_id(planner: str, suite: str, memory: str) -> str:
    return f"{planner}__{suite}__{memory}"


@dataclass(frozen=True)
class Cohort:
    rules: Rules
    rules_json: dict
    episodes: dict          # episode_id -> episode record
    tasks: dict             # task_id -> task record
    suites: dict            # suite name -> suite record
    fingerprint: str


def load_cohort(export_root: str | os.PathLike) -> Cohort:
    """Read the cohort, checking each file's SHA-256 against the manifest first."""
    root = Path(export_root)
    manifest = read_manifest(root)
    files = manifest.get("files", {})
    for name in COHORT_FILES:
        rel = f"cohort/{name}"
        if rel not in files:
            raise FileNotFoundError(f"{root / rel}: not in the manifest (compile the cohort "
                                    "first: python -m analysis.compile)")
        if sha256_file(root / rel) != files[rel]["sha256"]:
            raise ValueError(f"{root / rel}: SHA-256 differs from the manifest; "
                             "run python -m analysis.verify")
    rules_json = read_records(root / "cohort/rules.json")[0]
    return Cohort(
        rules=Rules.from_dict(rules_json), rules_json=rules_json,
        episodes={e["episode_id"]: e for e in read_records(root / "cohort/episodes.jsonl.gz")},
        tasks={t["task_id"]: t for t in read_records(root / "cohort/tasks.jsonl")},
        suites={s["suite"]: s for s in read_records(root / "cohort/suites.jsonl")},
        fingerprint=cohort_fingerprint(manifest),
    )


@dataclass(frozen=True)
class RunSummary:
    run_id: str
    path: str
    n_episodes: int
    n_groups: int
    n_tasks: int
    seconds: float
    bytes_written: int


def _episode_job(args):
    (episode, tasks, rules_json, planner, seed, settings, memory, cfg, rid) = args
    rules = Rules.from_dict(rules_json)
    res = run_episode(episode, tasks, make_planner(planner, seed=seed, **settings), rules,
                      memory, RuntimeConfig(**cfg), run_id=rid)
    return res.group_records, res.task_records, res.provider_error


def _derive_job(args, groups):
    """Re-execute a journaled episode with its journaled planner replies (no planner or
    provider call): every outcome is derived from the cohort, never read back."""
    from .executor.replay import _RecordedPlanner
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


def _progress(done: int, total: int, rid: str, enabled: bool) -> None:
    if enabled:
        width = 30
        filled = width * done // max(total, 1)
        print(f"\r{rid} [{'#' * filled}{'.' * (width - filled)}] {done}/{total} episodes",
              end="\n" if done == total else "", file=sys.stderr, flush=True)


def run_suite(planner: str, suite: str, memory: str, export_root: str | os.PathLike,
              seed: int = 0, jobs: int = 1, attempt_limit: int = 80,
              planner_settings: Mapping | None = None, runtime: Mapping | None = None,
              progress: bool = True, write: bool = True, overwrite: bool = False,
              verify_export: bool = False, resume: bool = True,
              state_dir: str | os.PathLike | None = None,
              say=_say) -> tuple[RunSummary, dict]:
    """Run ``planner`` over ``suite`` under ``memory``; write and register its records.

    With ``write``, an interrupted earlier change of the export is rolled back or completed
    first, an existing run is refused unless ``overwrite``, and with ``verify_export`` (the
    command's default) the export is verified before the planner runs and again with the
    new run before the commit point. With ``resume`` finished episodes are journaled under
    ``state_dir`` (default ``.run_state`` beside the export) and a rerun continues from
    them (:mod:`analysis.episodes`); a planner with ``io_bound = True`` runs its ``jobs``
    episodes in threads. Returns the summary and the records ``{"run": ..., "groups":
    [...], "tasks": [...]}``.
    """
    label = planner_label(planner)  # validates the name or the import path
    if memory not in MEMORY_MODES:
        raise ValueError(f"memory={memory!r}: expected one of {list(MEMORY_MODES)}")
    if not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs={jobs!r}: expected a positive integer")
    root = Path(export_root)
    if state_dir is not None and resume and write:
        from .confine import state_path_problem
        why = state_path_problem(state_dir, "dir", root)
        if why:
            raise ValueError(f"state_dir={state_dir}: {why}")
    if write:
        # parallel multirun jobs write one export: recovery and the first verification
        # must not see another job's transaction in flight
        with export_lock(root):
            recover_export(root, say)
    cohort = load_cohort(root)
    if suite not in cohort.suites:
        raise ValueError(f"suite={suite!r}: expected one of {sorted(cohort.suites)}")
    settings = dict(planner_settings or {})
    cfg = {**RuntimeConfig().as_dict(), **dict(runtime or {}), "attempt_limit": int(attempt_limit)}
    RuntimeConfig(**cfg)  # validate before any work
    rid = run_id(label, suite, memory)
    check = None
    if write:
        if not overwrite:
            check_run_absent(root, rid)
        if verify_export:
            from .frozen import verify
            say(f"verifying {root}")
            with export_lock(root):
                verify(root)
            check = lambda: verify(root)  # noqa: E731
    s = cohort.suites[suite]
    suite_tasks = set(s["task_ids"])
    jobs_args = []
    for eid in s["episode_ids"]:
        ep = cohort.episodes[eid]
        tasks = [t for t in cohort.tasks.values() if t["task_id"] in suite_tasks
                 and t["episode_id"] == eid]
        jobs_args.append((ep, tasks, cohort.rules_json, planner, seed, settings, memory, cfg, rid))
    planner_config = make_planner(planner, seed=seed, **settings).config()
    if planner != label:
        planner_config = {**planner_config, "import_path": planner}
    run_rec = {"run_id": rid, "planner": label, "memory": memory, "suite": suite,
               "seed": int(seed), "attempt_limit": int(attempt_limit),
               "cohort_sha256": cohort.fingerprint,
               "planner_config": {**planner_config, "runtime": cfg}}
    journal = None
    if resume and write:
        journal = RunJournal(state_dir or default_state_dir(root), rid,
                             {**run_rec, "planner_path": planner},
                             derive=lambda i, groups: _derive_job(jobs_args[i], groups))
    t0 = time.perf_counter()
    try:
        results = run_episodes(_episode_job, jobs_args, list(s["episode_ids"]), jobs=jobs,
                               threads=bool(getattr(planner_class(planner), "io_bound", False)),
                               journal=journal,
                               on_done=lambda n: _progress(n, len(jobs_args), rid, progress))
    finally:
        after = getattr(planner_class(planner), "after_run", None)
        if after is not None:
            after(seed=seed, **settings)  # e.g. the chat planner's accounting summary
    seconds = time.perf_counter() - t0
    groups = [g for gr, _, _ in results for g in gr]
    task_recs = [t for _, tr, _ in results for t in tr]
    order = {tid: i for i, tid in enumerate(s["task_ids"])}
    task_recs.sort(key=lambda t: order[t["task_id"]])
    missing = suite_tasks - {t["task_id"] for t in task_recs}
    if missing:
        raise RuntimeError(f"run {rid}: no record for tasks {sorted(missing)[:5]}")
    records = {"run": run_rec, "groups": groups, "tasks": task_recs}
    size = 0
    if write:
        with export_lock(root):
            size = write_run(root, rid, records, overwrite=overwrite, check=check)
        if journal is not None:
            journal.finish()
    return RunSummary(rid, str(root / "runs" / rid), len(jobs_args), len(groups),
                      len(task_recs), seconds, size), records


class RunExists(ValueError):
    """The export already holds the run (replace it with ``overwrite=True``)."""


def check_run_absent(root: Path, rid: str) -> None:
    """Refuse to replace an existing run (raises :class:`RunExists`)."""
    prefix = f"runs/{rid}/"
    listed = any(k.startswith(prefix) for k in read_manifest(root).get("files", {}))
    if listed or (root / "runs" / rid).exists():
        raise RunExists(f"{root / 'runs' / rid} already exists; pass overwrite=true to "
                        "replace it")


def write_run(root: Path, rid: str, records: Mapping, overwrite: bool = False,
              command: str = "analysis.run", check=None, meta: Mapping | None = None) -> int:
    """Add (or with ``overwrite`` replace) ``runs/<rid>`` and its manifest entries in one
    journaled transaction (:mod:`analysis.transaction`); ``check`` runs on the switched
    export before the commit point and rolls everything back if it raises."""
    root = Path(root)
    if not overwrite:
        check_run_absent(root, rid)
    files = {name: encode_records(name, [records[key]] if key == "run" else records[key])
             for name, key in (("run.json", "run"), ("groups.jsonl.gz", "groups"),
                               ("tasks.jsonl", "tasks"))}
    manifest = read_manifest(root)
    prefix = f"runs/{rid}/"
    new = {**manifest, "format_version": manifest.get("format_version", FORMAT_VERSION),
           "files": {k: v for k, v in manifest.get("files", {}).items()
                     if not k.startswith(prefix)},
           "runs": {k: v for k, v in manifest.get("runs", {}).items() if k != rid}}
    if meta:
        new["runs"][rid] = dict(meta)
    txn = Transaction(root, export_txn_dir(root), command)
    try:
        txn.stage_tree(f"runs/{rid}", files)
        for name, rtype in RUN_FILES.items():
            new["files"][prefix + name] = file_entry(txn.stage / "runs" / rid / name, rtype)
        txn.stage_with(MANIFEST_NAME, lambda path: write_manifest(path.parent, new))
    except BaseException:
        txn.abort()
        raise
    txn.commit(check)
    return sum(len(b) for b in files.values())


def main_from_cfg(cfg) -> RunSummary:
    from ._hydra import resolve_path
    summary, _ = run_suite(
        planner=cfg.planner.name, suite=cfg.suite.name, memory=cfg.memory,
        export_root=resolve_path(cfg.export_root), seed=int(cfg.seed), jobs=int(cfg.jobs),
        attempt_limit=int(cfg.attempt_limit),
        planner_settings=dict(cfg.planner.get("settings") or {}),
        runtime=dict(cfg.get("runtime") or {}), progress=bool(cfg.progress),
        overwrite=bool(cfg.overwrite), verify_export=True,
        resume=bool(cfg.get("resume", True)), state_dir=cfg.get("state_dir"))
    print(f"{summary.run_id}: {summary.n_episodes} episodes, {summary.n_groups} groups, "
          f"{summary.n_tasks} tasks in {summary.seconds:.1f} s -> {summary.path} "
          f"({summary.bytes_written} bytes); registered in the export's MANIFEST.json "
          "(no add_planner needed)")
    return summary


def _body(cfg) -> int:
    from ._hydra import UserError
    from .frozen import IntegrityError
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


def _multirun(argv: list[str]) -> None:
    """``-m``: Hydra's multirun (sweeps, launchers such as joblib); each job's composed
    configuration passes the same checks as a single run before it starts."""
    import hydra
    from omegaconf import OmegaConf

    from ._hydra import CONFIG_PATH, UserError, check_composed
    from .config_check import ConfigError

    @hydra.main(config_path=CONFIG_PATH, config_name="run", version_base="1.3")
    def job(cfg) -> None:
        data = OmegaConf.to_container(cfg, resolve=True)
        data.pop("hydra", None)
        try:
            check_composed("run", data)
            code = _body(OmegaConf.create(data))
        except (ConfigError, UserError) as exc:
            print(f"analysis.run: {exc}", file=sys.stderr)
            raise SystemExit(2 if isinstance(exc, ConfigError) else 1) from None
        if code:
            raise SystemExit(code)

    sys.argv = [sys.argv[0]] + argv
    job()


def main(argv=None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "-m" in argv or "--multirun" in argv:
        _multirun(argv)
        return
    from ._hydra import command_main
    command_main("run", _body, argv)


if __name__ == "__main__":
    main()

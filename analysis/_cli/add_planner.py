"""``python -m analysis.add_planner records=PATH name=NAME``: add a planner's records.

``records`` is a folder holding ``run.json``, ``groups.jsonl.gz`` and ``tasks.jsonl`` as
in docs/FORMAT.md (as written by ``analysis.run``, or by your own runner). The command

1. reads and schema-checks every record (errors name the file, line and field);
2. names the run ``<name>__<suite>__<memory>``: ``name`` is the run's name, as
   ``run_name=`` of ``analysis.run``. The ``run_id`` of every record is rewritten when it
   differs (reported, and the original ID kept in the manifest as ``renamed_from``);
   ``planner`` and ``planner_config`` stay as recorded, and ``run.json`` holds
   ``run_name`` where ``name`` differs from the planner's name;
3. checks the records against the export: the cohort fingerprint (``cohort_sha256``)
   must be this export's, the suite must exist, every task and group of the suite must be
   present once and no unknown ID may appear, and ``name`` must not be a run name the
   export already holds;
4. re-executes the records through the executor (``analysis.executor.replay``; on by
   default, ``reexecute=false`` skips it and the manifest records ``reexecuted: false``);
5. adds the run in one journaled transaction (:func:`analysis.run.write_run`): the run
   folder and the new manifest are staged beside the export, switched in, the whole
   export is verified *with* the new run, and only then is the change committed. Any
   failure, or a kill at any instant, leaves the export as it was (the next command rolls
   an interrupted change back, or completes it once committed, and says which).

The next ``python -m analysis.tables`` includes the planner in the per-planner tables
and figures (README, "Adding your planner").
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from ..records import IntegrityError, read_records, validate
from ..executor.runtime import PROVIDER_ERROR
from .._fs.confine import ConfinementError
from ..records.io import MAX_RECORD_FILE_BYTES, RecordParseError, read_user_records
from ..records.integrity import verify_records
from .config_check import MAX_NAME_LENGTH
from ..records.manifest import cohort_fingerprint, read_manifest
from ..records.schemas import PLANNER_NAME, SchemaError
from .run import write_run
from ..records.store import ExportStore

__all__ = ["AddPlannerError", "AddResult", "add_planner", "main"]

FILES = {"run.json": "run", "groups.jsonl.gz": "group_record", "tasks.jsonl": "task_record"}


class AddPlannerError(ValueError):
    """The records cannot be added; the message says why. Nothing was written."""


@dataclass(frozen=True)
class AddResult:
    run_id: str
    path: str
    n_groups: int
    n_tasks: int
    reexecuted: bool
    renamed_from: str | None
    messages: tuple


def _refuse_incomplete(path: Path, groups: list) -> None:
    """A run with ``provider_error`` groups is incomplete (its endpoint failed after every
    retry): it is resumed by rerunning its ``analysis.run`` command, never added or scored."""
    failed = [i for i, g in enumerate(groups, 1)
              if isinstance(g, dict) and g.get("status") == PROVIDER_ERROR]
    if failed:
        raise AddPlannerError(f"{path} line {failed[0]}: the run is incomplete: "
                              f"{len(failed)} of {len(groups)} groups ended provider_error "
                              "(the model endpoint failed after every retry); rerun its "
                              "python -m analysis.run command to resume it; incomplete runs "
                              "are never added to an export or scored")


def _read(folder: Path):
    if not folder.is_dir():
        raise AddPlannerError(f"records={folder}: not a folder (expected run.json, "
                              "groups.jsonl.gz and tasks.jsonl)")
    extra = sorted(p.name for p in folder.iterdir() if p.name not in FILES)
    if extra:
        # docs/FORMAT.md: a run folder holds exactly these files; anything else would be
        # silently left behind, and may be what the user meant to add
        raise AddPlannerError(f"records={folder}: unexpected {extra[0]!r}"
                              f"{f' (and {len(extra) - 1} more)' if len(extra) > 1 else ''}: a run "
                              f"folder holds exactly {', '.join(FILES)}; move the rest out")
    out = {}
    for fname, rtype in FILES.items():
        path = folder / fname
        if not os.path.lexists(path):
            raise AddPlannerError(f"records={folder}: {fname} is missing (expected "
                                  f"{', '.join(FILES)})")
        try:
            # bounded: a regular file, at most MAX_RECORD_FILE_BYTES decompressed (a gzip
            # bomb stops there), lines of at most MAX_RECORD_LINE_BYTES
            recs = read_user_records(path)
        except ConfinementError as exc:
            raise AddPlannerError(f"{exc}; a record file is a regular file of at most "
                                  f"{MAX_RECORD_FILE_BYTES >> 20} MiB: put the file itself "
                                  "there") from None
        except (RecordParseError, OSError, EOFError) as exc:
            raise AddPlannerError(f"{path}: unreadable ({exc})") from None
        if fname == "groups.jsonl.gz":
            _refuse_incomplete(path, recs)
        for i, rec in enumerate(recs, 1):
            try:
                validate(rtype, rec)
            except SchemaError as exc:
                raise AddPlannerError(f"{path} line {i}: schema violation for {rtype}: "
                                      f"{exc}") from exc
        out[fname] = recs
    if len(out["run.json"]) != 1:
        raise AddPlannerError(f"{folder / 'run.json'}: expected exactly one run record, got "
                              f"{len(out['run.json'])}")
    return out["run.json"][0], out["groups.jsonl.gz"], out["tasks.jsonl"]


def _check_ids(run, groups, tasks, cohort, folder: Path):
    """Same run ID throughout; every task and group of the suite exactly once."""
    rid = run["run_id"]
    for fname, recs, key in (("groups.jsonl.gz", groups, "group_id"),
                             ("tasks.jsonl", tasks, "task_id")):
        for i, r in enumerate(recs, 1):
            if r["run_id"] != rid:
                raise AddPlannerError(f"{folder / fname} line {i} ({r[key]}): run_id "
                                      f"{r['run_id']!r} differs from run.json's {rid!r}")
    suite = cohort["suites"][run["suite"]]
    want_tasks = list(suite["task_ids"])
    want_groups = {g["group_id"]: e for e in suite["episode_ids"]
                   for g in cohort["episodes"][e]["groups"]}
    for fname, recs, key, want in (("tasks.jsonl", tasks, "task_id", set(want_tasks)),
                                   ("groups.jsonl.gz", groups, "group_id", set(want_groups))):
        seen = {}
        for i, r in enumerate(recs, 1):
            if r[key] not in want:
                raise AddPlannerError(f"{folder / fname} line {i}: unknown {key} {r[key]!r} "
                                      f"(not in suite {run['suite']!r} of this cohort)")
            if r[key] in seen:
                raise AddPlannerError(f"{folder / fname} line {i}: duplicate {key} "
                                      f"{r[key]!r} (first at line {seen[r[key]]})")
            seen[r[key]] = i
        missing = sorted(want - set(seen))
        if missing:
            raise AddPlannerError(f"{folder / fname}: {len(missing)} {key}(s) of suite "
                                  f"{run['suite']!r} missing, first {missing[0]!r}; every "
                                  "task stays in the denominator, so a run must cover all")
    for i, r in enumerate(groups, 1):
        if want_groups[r["group_id"]] != r["episode_id"]:
            raise AddPlannerError(f"{folder / 'groups.jsonl.gz'} line {i} ({r['group_id']}): "
                                  f"episode_id {r['episode_id']!r} is not the group's episode")


def _cohort(root: Path, manifest: dict) -> dict:
    def of(rtype):
        return [r for rel, e in sorted(manifest["files"].items())
                if e["record_type"] == rtype and rel.startswith("cohort/")
                for r in read_records(root / rel)]
    return {"suites": {s["suite"]: s for s in of("suite")},
            "episodes": {e["episode_id"]: e for e in of("episode")},
            "tasks": {t["task_id"]: t for t in of("task")}}


def _replay(root: Path, run, groups, tasks):
    try:
        from ..executor.replay import replay_run
        from ..executor.cohort import load_cohort
    except ImportError as exc:  # pragma: no cover - the executor ships with the package
        raise AddPlannerError(f"re-execution is unavailable ({exc}); pass reexecute=false "
                              "to add the records without it") from exc
    cohort = load_cohort(root)
    # derives statuses, completion, condition lists and truths (never trusts them)
    return replay_run(run["run_id"], groups, tasks, cohort.episodes, cohort.tasks,
                      cohort.rules, groups_file="groups.jsonl.gz", tasks_file="tasks.jsonl",
                      run=run, suite=cohort.suites[run["suite"]])


def add_planner(export_root, records, name: str, reexecute: bool = True,
                progress=None) -> AddResult:
    """Validate, re-execute and add the run in ``records`` under planner ``name``.

    Raises :class:`AddPlannerError` (nothing written) when the name exists or is not a
    valid identifier, the records fail the schema or the suite checks, belong to another
    cohort, or fail re-execution.
    """
    say = progress or (lambda msg: None)
    root, folder = Path(export_root), Path(records)
    if not isinstance(name, str) or not PLANNER_NAME.match(name) or len(name) > MAX_NAME_LENGTH:
        shown = name if not isinstance(name, str) or len(name) <= 40 else name[:37] + "..."
        raise AddPlannerError(f"name={shown!r}: use at most {MAX_NAME_LENGTH} lowercase "
                              "letters, digits, '_' and '-' (no '__', which separates the "
                              "parts of a run ID)")
    with ExportStore(root).lock(say=say):  # the lock of every writer of the export
        return _add_locked(root, folder, name, reexecute, say)


def _add_locked(root: Path, folder: Path, name: str, reexecute: bool, say) -> AddResult:
    ExportStore(root).recover(say)
    try:
        verify_records(root)
    except IntegrityError as exc:
        raise AddPlannerError(f"export_root={root} does not verify, fix it first: {exc}") \
            from exc
    manifest = read_manifest(root)
    say(f"reading {folder}")
    run, groups, tasks = _read(folder)
    cohort = _cohort(root, manifest)
    existing = {r.get("run_name", r["planner"]) for rel, e in manifest["files"].items()
                if e["record_type"] == "run" for r in read_records(root / rel)}
    if name in existing:
        raise AddPlannerError(f"name={name!r}: the export already holds planner {name!r} "
                              f"(run names: {sorted(existing)}); choose another name")
    fingerprint = cohort_fingerprint(manifest)
    if run["cohort_sha256"] != fingerprint:
        raise AddPlannerError(f"{folder / 'run.json'}: records are for another cohort "
                              f"(cohort_sha256 {run['cohort_sha256'][:12]}... != this "
                              f"export's {fingerprint[:12]}...); rerun the planner on this "
                              "cohort with python -m analysis.run")
    if run["suite"] not in cohort["suites"]:
        raise AddPlannerError(f"{folder / 'run.json'}: unknown suite {run['suite']!r} "
                              f"(suites: {sorted(cohort['suites'])})")
    _check_ids(run, groups, tasks, cohort, folder)
    messages = []
    old_id = run["run_id"]
    rid = f"{name}__{run['suite']}__{run['memory']}"
    renamed = None
    # the planner and its settings stay as recorded; the name is the run's (run_name)
    named = {k: v for k, v in run.items() if k != "run_name"}
    if name != run["planner"]:
        named["run_name"] = name
    if old_id != rid or named != run:
        renamed = old_id
        messages.append(f"renamed run {old_id!r} to {rid!r} in every record (planner "
                        f"{run['planner']!r}, run name {name!r})")
        run = {**named, "run_id": rid}
        groups = [{**g, "run_id": rid} for g in groups]
        tasks = [{**t, "run_id": rid} for t in tasks]
    if (root / "runs" / rid).exists():
        raise AddPlannerError(f"runs/{rid} already exists in {root}")
    if reexecute:
        say(f"re-executing {len(groups)} group records through the executor")
        rep = _replay(root, run, groups, tasks)
        if not rep.ok:
            raise AddPlannerError(f"re-execution failed, records not added: "
                                  f"{rep.divergences[0].message()}")
        messages.append(rep.summary())
    else:
        messages.append("re-execution skipped (reexecute=false); recorded in the manifest")
    meta = {"reexecuted": bool(reexecute), "added_by": "analysis.add_planner"}
    if renamed:
        meta["renamed_from"] = renamed

    def check():
        say("verifying the export with the new run")
        try:
            verify_records(root)
        except IntegrityError as exc:
            raise AddPlannerError(f"the export would not verify with the new run: {exc}") \
                from exc

    write_run(root, rid, {"run": run, "groups": groups, "tasks": tasks},
              command="analysis.add_planner", check=check, meta=meta)
    return AddResult(run_id=rid, path=str(root / "runs" / rid), n_groups=len(groups),
                     n_tasks=len(tasks), reexecuted=bool(reexecute), renamed_from=renamed,
                     messages=tuple(messages))


def _body(cfg) -> int:
    from .hydra_glue import UserError, resolve_path
    from .._fs.transaction import TransactionBusy
    try:
        res = add_planner(resolve_path(cfg.export_root), resolve_path(cfg.records),
                          str(cfg.name), reexecute=bool(cfg.reexecute),
                          progress=lambda m: print(f"[analysis.add_planner] {m}",
                                                   file=sys.stderr, flush=True))
    except (AddPlannerError, TransactionBusy) as exc:
        raise UserError(f"refused, nothing written: {exc}") from None
    for m in res.messages:
        print(m)
    print(f"added {res.run_id}: {res.n_groups} groups, {res.n_tasks} tasks -> {res.path}; "
          f"run {tables_command(resolve_path(cfg.export_root))} to include it in the tables "
          "and figures")
    return 0


def tables_command(export_root) -> str:
    """The ``python -m analysis.tables`` command that tabulates ``export_root``: bare for
    the export it reads by default (a clone's frozen_exports), else with that
    ``export_root=`` and an ``out_dir=`` beside it (never the clone's own tables/).

    >>> tables_command("/tmp/scratch")
    'python -m analysis.tables export_root=/tmp/scratch out_dir=/tmp/scratch_tables'
    """
    import shlex
    from pathlib import Path

    from .._fs.resources import default_export_root
    root = Path(export_root)
    if root.resolve() == default_export_root().resolve():
        return "python -m analysis.tables"
    out = root.parent / f"{root.name}_tables"
    return (f"python -m analysis.tables export_root={shlex.quote(str(root))} "
            f"out_dir={shlex.quote(str(out))}")


def main(argv=None) -> None:
    from .hydra_glue import command_main
    command_main("add_planner", _body, argv)

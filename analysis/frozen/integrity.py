"""Verification of a frozen export against its manifest (DESIGN.md section 5).

Every failure raises :class:`IntegrityError` whose message names the file, the record
(line and ID) where one is involved, and what differs.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from .hashing import sha256_bytes, sha256_record
from .io import RecordParseError, decode_file_bytes, parse_lines
from .manifest import MANIFEST_NAME, UNLISTED_FILES, cohort_fingerprint
from .schemas import ID_FIELDS, PLANNER_NAME, SCHEMAS, SchemaError, validate

__all__ = ["IntegrityError", "VerificationReport", "verify", "verify_records"]


class IntegrityError(Exception):
    """The export differs from its manifest or breaks a format rule.

    Attributes ``file``, ``line`` (1-based, or ``None``) and ``record_id`` locate it.
    """

    def __init__(self, file: str, message: str, line: int | None = None,
                 record_id: str | None = None):
        where = file
        if line is not None:
            where += f", line {line}"
        if record_id is not None:
            where += f" (record {record_id})"
        super().__init__(f"{where}: {message}")
        self.file, self.line, self.record_id = file, line, record_id


@dataclass(frozen=True)
class VerificationReport:
    """What a successful verification covered."""

    root: str
    n_files: int
    n_records: int
    suites: tuple[str, ...]
    runs: tuple[str, ...]
    records: dict = field(repr=False, compare=False, default_factory=dict)

    def summary(self) -> str:
        return (f"verified {self.n_files} files, {self.n_records} records, "
                f"{len(self.suites)} suites ({', '.join(self.suites) or 'none'}), "
                f"{len(self.runs)} runs in {self.root}")


def _record_id(record_type: str, record: dict) -> str | None:
    keys = ID_FIELDS.get(record_type)
    if not keys or not isinstance(record, dict):
        return None
    return "/".join(str(record.get(k)) for k in keys)


def _files_on_disk(root: Path) -> set[str]:
    found = set()
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            rel = (Path(dirpath) / name).relative_to(root).as_posix()
            if rel not in UNLISTED_FILES:
                found.add(rel)
    return found


def _locate_difference(rel: str, entry: dict, records: list[dict]) -> IntegrityError:
    """Name the first record whose hash is not the one in the manifest."""
    expected = entry.get("record_hashes", [])
    rtype = entry.get("record_type", "")
    for i, rec in enumerate(records):
        if i >= len(expected):
            return IntegrityError(rel, f"extra record (manifest lists {len(expected)})",
                                  line=i + 1, record_id=_record_id(rtype, rec))
        got = sha256_record(rec)
        if got != expected[i]:
            moved = expected.index(got) + 1 if got in expected else None
            what = (f"record is the one the manifest lists at line {moved} (records reordered)"
                    if moved else "record hash differs from the manifest "
                    f"(expected {expected[i][:12]}..., got {got[:12]}...)")
            return IntegrityError(rel, what, line=i + 1, record_id=_record_id(rtype, rec))
    if len(records) < len(expected):
        return IntegrityError(rel, f"{len(expected) - len(records)} record(s) missing: file has "
                              f"{len(records)}, manifest lists {len(expected)}",
                              line=len(records) + 1)
    return IntegrityError(rel, "bytes differ from the manifest although every record matches "
                          "(formatting changed)")


def _read_manifest(root: Path) -> dict:
    path = root / MANIFEST_NAME
    if not path.exists():
        raise IntegrityError(MANIFEST_NAME, f"missing in {root}")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise IntegrityError(MANIFEST_NAME, f"not valid JSON ({exc})") from exc
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
        raise IntegrityError(MANIFEST_NAME, "expected an object with a 'files' object")
    for rel, entry in manifest["files"].items():
        if not isinstance(entry, dict) or not {"record_type", "size", "sha256", "records",
                                                "record_hashes"} <= set(entry):
            raise IntegrityError(MANIFEST_NAME, f"entry for {rel!r} lacks record_type, size, "
                                 "sha256, records or record_hashes")
        if entry["record_type"] not in SCHEMAS:
            raise IntegrityError(MANIFEST_NAME, f"entry for {rel!r}: record_type "
                                 f"{entry['record_type']!r} not one of {sorted(SCHEMAS)}")
    return manifest


def _verify_file(root: Path, rel: str, entry: dict) -> list[dict]:
    path = root / rel
    if not path.is_file():
        raise IntegrityError(rel, "missing: listed in the manifest but not on disk")
    raw = path.read_bytes()
    try:
        records = parse_lines(decode_file_bytes(rel, raw))
    except RecordParseError as exc:
        line = exc.line or None
        raise IntegrityError(rel, f"unreadable ({exc})", line=line) from exc
    if sha256_bytes(raw) != entry["sha256"] or len(raw) != entry["size"]:
        raise _locate_difference(rel, entry, records)
    if len(records) != entry["records"] or [sha256_record(r) for r in records] != list(
            entry["record_hashes"]):
        raise _locate_difference(rel, entry, records)
    rtype = entry["record_type"]
    seen: dict[str, int] = {}
    for i, rec in enumerate(records, start=1):
        try:
            validate(rtype, rec)
        except SchemaError as exc:
            raise IntegrityError(rel, f"schema violation for {rtype}: {exc}", line=i,
                                 record_id=_record_id(rtype, rec)) from exc
        rid = _record_id(rtype, rec)
        if rid is not None:
            if rid in seen:
                raise IntegrityError(rel, f"duplicate ID (first at line {seen[rid]})", line=i,
                                     record_id=rid)
            seen[rid] = i
    return records


def verify_records(root: str | os.PathLike) -> tuple[VerificationReport, dict, dict]:
    """Verify and return ``(report, manifest, {relpath: records})``."""
    root = Path(root)
    if not root.is_dir():
        raise IntegrityError(str(root), "export folder does not exist")
    manifest = _read_manifest(root)
    listed = set(manifest["files"])
    extra = sorted(_files_on_disk(root) - listed)
    if extra:
        raise IntegrityError(extra[0], "file on disk is not in the manifest")
    records = {rel: _verify_file(root, rel, manifest["files"][rel]) for rel in sorted(listed)}
    suites, runs = _check_cross_file(manifest, records)
    report = VerificationReport(
        root=str(root), n_files=len(records), n_records=sum(map(len, records.values())),
        suites=tuple(sorted(suites)), runs=tuple(sorted(runs)), records=records)
    return report, manifest, records


def _check_cross_file(manifest: dict, records: dict) -> tuple[dict, dict]:
    """Runs cover every task and group of their suite, and belong to this cohort."""
    by_type: dict[str, list[str]] = {}
    for rel, entry in manifest["files"].items():
        by_type.setdefault(entry["record_type"], []).append(rel)
    suites = {}
    for rel in by_type.get("suite", []):
        for rec in records[rel]:
            suites[rec["suite"]] = rec
    tasks = {rec["task_id"]: rec for rel in by_type.get("task", []) for rec in records[rel]}
    episodes = {rec["episode_id"]: rec for rel in by_type.get("episode", [])
                for rec in records[rel]}
    for name, suite in suites.items():
        for tid in suite["task_ids"]:
            if tid not in tasks:
                raise IntegrityError(_first(by_type, "suite"), f"suite {name!r} names unknown "
                                     f"task {tid!r}", record_id=name)
    fingerprint = cohort_fingerprint(manifest)
    runs = {}
    for rel in sorted(by_type.get("run", [])):
        run = records[rel][0] if records[rel] else None
        if run is None:
            raise IntegrityError(rel, "run file holds no record")
        run_id, folder = run["run_id"], rel.rsplit("/", 1)[0]
        expected_id = f"{run['planner']}__{run['suite']}__{run['memory']}"
        if not PLANNER_NAME.match(run["planner"]) or run_id != expected_id:
            raise IntegrityError(rel, f"run_id {run_id!r} must be <planner>__<suite>__<memory> "
                                 f"= {expected_id!r}, with a planner name of lowercase letters, "
                                 "digits and single '-' or '_'", line=1, record_id=run_id)
        if folder != f"runs/{run_id}":
            raise IntegrityError(rel, f"run_id {run_id!r} does not match its folder {folder!r}",
                                 line=1, record_id=run_id)
        if run["suite"] not in suites:
            raise IntegrityError(rel, f"unknown suite {run['suite']!r} (suites: "
                                 f"{sorted(suites)})", line=1, record_id=run_id)
        if run["cohort_sha256"] != fingerprint:
            raise IntegrityError(rel, "run was produced on another cohort (cohort_sha256 "
                                 f"{run['cohort_sha256'][:12]}... != {fingerprint[:12]}...)",
                                 line=1, record_id=run_id)
        suite = suites[run["suite"]]
        _check_run_files(rel, folder, run, suite, tasks, episodes, records)
        runs[run_id] = run
    return suites, runs


def _first(by_type, rtype):
    return sorted(by_type.get(rtype, ["?"]))[0]


def _check_run_files(rel, folder, run, suite, tasks, episodes, records):
    run_id = run["run_id"]
    task_rel, group_rel = f"{folder}/tasks.jsonl", f"{folder}/groups.jsonl.gz"
    for needed in (task_rel, group_rel):
        if needed not in records:
            raise IntegrityError(needed, f"missing for run {run_id!r}")
    for line, rec in enumerate(records[task_rel], start=1):
        if rec["run_id"] != run_id:
            raise IntegrityError(task_rel, f"run_id {rec['run_id']!r} != {run_id!r}", line=line,
                                 record_id=rec["task_id"])
        if rec["task_id"] not in suite["task_ids"]:
            raise IntegrityError(task_rel, f"task not in suite {run['suite']!r}", line=line,
                                 record_id=rec["task_id"])
    have = {r["task_id"] for r in records[task_rel]}
    missing = [t for t in suite["task_ids"] if t not in have]
    if missing:
        raise IntegrityError(task_rel, f"run {run_id!r} does not cover {len(missing)} task(s) "
                             f"of suite {run['suite']!r}, first {missing[0]!r}",
                             record_id=missing[0])
    expected_groups = {g["group_id"] for e in suite["episode_ids"]
                       for g in episodes.get(e, {}).get("groups", [])}
    have_groups = set()
    for line, rec in enumerate(records[group_rel], start=1):
        if rec["run_id"] != run_id or rec["group_id"] not in expected_groups:
            raise IntegrityError(group_rel, f"group record not of run {run_id!r} and suite "
                                 f"{run['suite']!r}", line=line, record_id=rec["group_id"])
        have_groups.add(rec["group_id"])
    missing = sorted(expected_groups - have_groups)
    if missing:
        raise IntegrityError(group_rel, f"run {run_id!r} lacks {len(missing)} group record(s), "
                             f"first {missing[0]!r}", record_id=missing[0])


def verify(root: str | os.PathLike = "frozen_exports") -> VerificationReport:
    """Verify the export at ``root``; raise :class:`IntegrityError` on the first problem.

    >>> verify("frozen_exports").summary()  # doctest: +SKIP
    'verified 12 files, 20345 records, 2 suites (memory, planner), 8 runs in frozen_exports'
    """
    return verify_records(root)[0]

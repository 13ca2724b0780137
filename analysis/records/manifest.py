"""``MANIFEST.json``: every frozen file with its size, SHA-256, record count and the
hash of each record, so that verification can name the record that changed."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Mapping

from .hashing import canonical_json, sha256_bytes, sha256_record
from .io import atomic_write_bytes, decode_file_bytes, parse_lines

__all__ = ["MANIFEST_NAME", "UNLISTED_FILES", "FORMAT_VERSION", "KNOWN_FORMAT_VERSIONS",
           "file_entry", "read_manifest", "write_manifest", "update_manifest",
           "cohort_fingerprint", "manifest_bytes", "RUN_FILES", "empty_manifest",
           "with_files", "with_cohort", "with_run", "without_runs"]

MANIFEST_NAME = "MANIFEST.json"
#: Files that live in the export but are not records (the manifest itself, the credit).
UNLISTED_FILES = frozenset({MANIFEST_NAME, "ATTRIBUTION.md"})
#: 2: entries of ``.gz`` files carry ``decompressed_size`` (a cap enforced while
#: decompressing). Version 1 manifests lack it and are refused by verification.
FORMAT_VERSION = 2
KNOWN_FORMAT_VERSIONS = (2,)
#: The files of a run folder ``runs/<run_id>/`` and their record types (docs/FORMAT.md).
RUN_FILES = {"run.json": "run", "groups.jsonl.gz": "group_record", "tasks.jsonl": "task_record"}


def file_entry(path: str | os.PathLike, record_type: str) -> dict:
    """The manifest entry of one record file as it is on disk now."""
    raw = Path(path).read_bytes()
    content = decode_file_bytes(path, raw)
    records = parse_lines(content)
    entry = {
        "record_type": record_type,
        "size": len(raw),
        "sha256": sha256_bytes(raw),
        "records": len(records),
        "record_hashes": [sha256_record(r) for r in records],
    }
    if str(path).endswith(".gz"):
        entry["decompressed_size"] = len(content)
    return entry


def empty_manifest() -> dict:
    """The manifest of an export that holds nothing yet.

    >>> empty_manifest()
    {'format_version': 2, 'files': {}, 'runs': {}}
    """
    return {"format_version": FORMAT_VERSION, "files": {}, "runs": {}}


def read_manifest(root: str | os.PathLike) -> dict:
    """The parsed manifest, or an empty one when the export has none yet."""
    path = Path(root) / MANIFEST_NAME
    if not path.exists():
        return empty_manifest()
    return json.loads(path.read_text(encoding="utf-8"))


def manifest_bytes(manifest: Mapping) -> bytes:
    """The canonical bytes of a manifest (what :func:`write_manifest` writes)."""
    # Indented (still key-sorted) so that a reviewer can read a diff of the manifest.
    text = json.dumps(manifest, sort_keys=True, indent=1, ensure_ascii=False, allow_nan=False)
    return (text + "\n").encode("utf-8")


def write_manifest(root: str | os.PathLike, manifest: dict) -> None:
    atomic_write_bytes(Path(root) / MANIFEST_NAME, manifest_bytes(manifest))


def update_manifest(
    root: str | os.PathLike,
    files: Mapping[str, str],
    replace_prefix: str | None = None,
    runs: Mapping[str, dict] | None = None,
) -> dict:
    """Recompute the entries of ``files`` (``{relpath: record_type}``) in the manifest.

    With ``replace_prefix`` every existing entry under that prefix is dropped first, so a
    recompiled cohort or a rewritten run leaves no stale entry. ``runs`` adds per-run
    metadata (e.g. ``{"reexecuted": True}``).
    """
    root = Path(root)
    entries = {rel: file_entry(root / rel, record_type)
               for rel, record_type in sorted(files.items())}
    manifest = with_files(read_manifest(root), entries, replace_prefix, runs)
    write_manifest(root, manifest)
    return manifest


# The pure manifest changes: a manifest in, a new manifest out (the input is left as it
# was, nothing is read or written), so that every writer of the export
# (analysis.records.store) stages exactly the manifest these functions give.

def with_files(manifest: Mapping, entries: Mapping[str, dict],
               replace_prefix: str | None = None,
               runs: Mapping[str, dict] | None = None) -> dict:
    """``manifest`` with ``entries`` (``{relpath: entry}``) set, every older entry under
    ``replace_prefix`` dropped first, and ``runs`` (``{run_id: metadata}``) set; the
    current format version.

    >>> old = {"format_version": 2, "files": {"cohort/a.jsonl": {"sha256": "1"},
    ...                                       "cohort/b.jsonl": {"sha256": "2"}}}
    >>> with_files(old, {"cohort/a.jsonl": {"sha256": "3"}}, replace_prefix="cohort/")
    {'format_version': 2, 'files': {'cohort/a.jsonl': {'sha256': '3'}}, 'runs': {}}
    """
    files = {rel: e for rel, e in manifest.get("files", {}).items()
             if not (replace_prefix and rel.startswith(replace_prefix))}
    files.update(entries)
    new_runs = dict(manifest.get("runs", {}))
    new_runs.update({rid: dict(meta) for rid, meta in (runs or {}).items()})
    return {**manifest, "format_version": FORMAT_VERSION, "files": files, "runs": new_runs}


def without_runs(manifest: Mapping, run_ids) -> dict:
    """``manifest`` without the runs ``run_ids``: their files (``runs/<id>/...``) and
    their metadata. The format version is kept as it was.

    >>> old = {"format_version": 2, "files": {"runs/a/run.json": {}, "runs/ab/run.json": {}},
    ...        "runs": {"a": {"reexecuted": True}}}
    >>> without_runs(old, ["a"])
    {'format_version': 2, 'files': {'runs/ab/run.json': {}}, 'runs': {}}
    """
    run_ids = set(run_ids)
    return {**manifest,
            "files": {rel: e for rel, e in manifest.get("files", {}).items()
                      if not any(rel.startswith(f"runs/{rid}/") for rid in run_ids)},
            "runs": {rid: m for rid, m in manifest.get("runs", {}).items()
                     if rid not in run_ids}}


def with_cohort(manifest: Mapping, entries: Mapping[str, dict], drop_runs=()) -> dict:
    """``manifest`` with its cohort replaced: every ``cohort/`` entry dropped, then
    ``entries`` set (``{"cohort/<name>": entry}``), the runs ``drop_runs`` removed; the
    current format version.

    >>> old = {"format_version": 2, "files": {"cohort/old.jsonl": {}, "runs/r/run.json": {}},
    ...        "runs": {"r": {}}}
    >>> with_cohort(old, {"cohort/new.jsonl": {}}, drop_runs=["r"])
    {'format_version': 2, 'files': {'cohort/new.jsonl': {}}, 'runs': {}}
    """
    return with_files(without_runs(manifest, drop_runs), entries, replace_prefix="cohort/")


def with_run(manifest: Mapping, run_id: str, entries: Mapping[str, dict],
             meta: Mapping | None = None) -> dict:
    """``manifest`` with the run ``run_id`` replaced: its older files and metadata
    dropped, ``entries`` (``{file name: entry}``, under ``runs/<run_id>/``) set, and
    ``meta`` as its metadata when given. The format version is kept as it was (the
    current one for a manifest without any).

    >>> old = {"format_version": 2, "files": {"runs/r/old.json": {}}, "runs": {"r": {"x": 1}}}
    >>> with_run(old, "r", {"run.json": {"sha256": "9"}})
    {'format_version': 2, 'files': {'runs/r/run.json': {'sha256': '9'}}, 'runs': {}}
    """
    new = without_runs(manifest, [run_id])
    new["format_version"] = manifest.get("format_version", FORMAT_VERSION)
    new["files"].update({f"runs/{run_id}/{name}": e for name, e in entries.items()})
    if meta:
        new["runs"][run_id] = dict(meta)
    return new


def cohort_fingerprint(manifest: Mapping) -> str:
    """SHA-256 over the cohort files' hashes: the identity a run is tied to."""
    cohort = {rel: e["sha256"] for rel, e in manifest.get("files", {}).items()
              if rel.startswith("cohort/")}
    return sha256_bytes(canonical_json(cohort))

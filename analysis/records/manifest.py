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
           "cohort_fingerprint", "manifest_bytes"]

MANIFEST_NAME = "MANIFEST.json"
#: Files that live in the export but are not records (the manifest itself, the credit).
UNLISTED_FILES = frozenset({MANIFEST_NAME, "ATTRIBUTION.md"})
#: 2: entries of ``.gz`` files carry ``decompressed_size`` (a cap enforced while
#: decompressing). Version 1 manifests lack it and are refused by verification.
FORMAT_VERSION = 2
KNOWN_FORMAT_VERSIONS = (2,)


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


def read_manifest(root: str | os.PathLike) -> dict:
    """The parsed manifest, or an empty one when the export has none yet."""
    path = Path(root) / MANIFEST_NAME
    if not path.exists():
        return {"format_version": FORMAT_VERSION, "files": {}, "runs": {}}
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
    manifest = read_manifest(root)
    manifest.setdefault("files", {})
    manifest.setdefault("runs", {})
    manifest["format_version"] = FORMAT_VERSION
    if replace_prefix:
        for rel in [r for r in manifest["files"] if r.startswith(replace_prefix)]:
            del manifest["files"][rel]
    for rel, record_type in sorted(files.items()):
        manifest["files"][rel] = file_entry(root / rel, record_type)
    for run_id, meta in (runs or {}).items():
        manifest["runs"][run_id] = dict(meta)
    write_manifest(root, manifest)
    return manifest


def cohort_fingerprint(manifest: Mapping) -> str:
    """SHA-256 over the cohort files' hashes: the identity a run is tied to."""
    cohort = {rel: e["sha256"] for rel, e in manifest.get("files", {}).items()
              if rel.startswith("cohort/")}
    return sha256_bytes(canonical_json(cohort))

"""Trust layer 1 of verification: the manifest (canonical bytes, its schema, a known
``format_version``) and the paths it lists (normalised relative POSIX paths inside the
export); docs/FORMAT.md, "MANIFEST.json".
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import msgspec

from .check_tree import _read_regular
from .integrity_error import IntegrityError, _msg, _short
from .io import DuplicateKey as _DuplicateKey
from .io import no_duplicates as _no_duplicates
from .manifest import KNOWN_FORMAT_VERSIONS, MANIFEST_NAME, UNLISTED_FILES, manifest_bytes
from .schemas import error_path, first_extra_field, manifest_decoder


# --- paths -------------------------------------------------------------------------------

_SEGMENT = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
_SUFFIXES = (".json", ".jsonl", ".jsonl.gz")


def check_relpath(rel: str) -> str | None:
    """Why ``rel`` is not a normalised relative POSIX path of a record file, or None.

    >>> check_relpath("cohort/tasks.jsonl") is None
    True
    >>> check_relpath("./cohort/tasks.jsonl")
    "segment '.' (paths are normalised: no '.', '..' or empty segments)"
    """
    if not isinstance(rel, str) or not rel:
        return "empty path"
    if rel.startswith("/") or re.match(r"^[A-Za-z]:", rel):
        return "absolute path (paths are relative to the export)"
    if "\\" in rel:
        return "backslash in path (paths are POSIX, '/'-separated)"
    for part in rel.split("/"):
        if part in ("", ".", ".."):
            return f"segment {part!r} (paths are normalised: no '.', '..' or empty segments)"
        if not _SEGMENT.match(part):
            return (f"segment {part[:60]!r} has characters outside [A-Za-z0-9_.-] or starts "
                    "with '.'")
    if rel in UNLISTED_FILES:
        return f"{rel} is not a record file"
    if not rel.endswith(_SUFFIXES):
        return f"not a record file name (expected one of {list(_SUFFIXES)})"
    return None


# --- the manifest ------------------------------------------------------------------------

def _reject_constant(name):
    raise ValueError(f"{name} is not allowed")


def _diagnose_json(raw: bytes) -> str:
    """Why bytes that failed the fast path are not canonical JSON (slow, failure only)."""
    if raw.startswith(b"\xef\xbb\xbf"):
        return "starts with a byte-order mark (files are UTF-8 without BOM)"
    if b"\r" in raw:
        return "contains a carriage return (CRLF line ending); lines end with \\n only"
    try:
        json.loads(raw, object_pairs_hook=_no_duplicates, parse_constant=_reject_constant)
    except _DuplicateKey as exc:
        return f"duplicate key {exc.args[0]!r} (every key appears once)"
    except RecursionError:
        return "nested too deeply"
    except (ValueError, UnicodeDecodeError) as exc:
        return f"not valid JSON ({_short(exc)})"
    return ""


def _read_manifest(root: Path, follow: bool = False) -> dict:
    path = root / MANIFEST_NAME
    try:
        raw = _read_regular(path, MANIFEST_NAME, follow=follow)
    except FileNotFoundError:
        raise IntegrityError(MANIFEST_NAME, f"missing in {root}") from None
    try:
        manifest = manifest_decoder().decode(raw)
    except RecursionError:
        raise IntegrityError(MANIFEST_NAME, "nested too deeply") from None
    except msgspec.ValidationError as exc:  # (a subclass of DecodeError)
        raise _manifest_type_error(raw, exc) from None
    except msgspec.DecodeError as exc:
        why = _diagnose_json(raw) or f"not valid JSON ({_short(exc)})"
        raise IntegrityError(MANIFEST_NAME, why) from None
    if raw != manifest_bytes(manifest):
        why = _diagnose_json(raw)
        if not why:
            full = json.loads(raw)
            extra = first_extra_field(full, manifest)
            why = (f"unknown field {extra!r}" if extra else "not in canonical form (as "
                   "written by analysis.records.manifest.write_manifest: keys sorted, indent 1)")
        raise IntegrityError(MANIFEST_NAME, why)
    seen = {}
    for rel, entry in manifest["files"].items():
        why = check_relpath(rel)
        if why:
            raise IntegrityError(MANIFEST_NAME, f"files entry {rel[:200]!r}: {why}")
        folded = rel.casefold()
        if folded in seen:
            raise IntegrityError(MANIFEST_NAME, f"files entries {seen[folded]!r} and {rel!r} "
                                 "differ only in case (one file on many file systems)")
        seen[folded] = rel
        if rel.endswith(".gz") != ("decompressed_size" in entry):
            raise IntegrityError(MANIFEST_NAME, f"files entry {rel!r}: decompressed_size is "
                                 "required for .gz files and only for them")
        if entry["records"] != len(entry["record_hashes"]):
            raise IntegrityError(MANIFEST_NAME, f"files entry {rel!r}: records "
                                 f"{entry['records']} != {len(entry['record_hashes'])} "
                                 "record_hashes")
    return manifest


def _manifest_type_error(raw: bytes, exc: msgspec.ValidationError) -> IntegrityError:
    """Name the key of a manifest that has the wrong type or value."""
    try:
        full = json.loads(raw)
    except (ValueError, RecursionError):
        full = None
    if isinstance(full, dict):
        v = full.get("format_version")
        if "format_version" in full and (type(v) is not int or v not in KNOWN_FORMAT_VERSIONS):
            return IntegrityError(MANIFEST_NAME, f"format_version {full['format_version']!r} "
                                  f"is not supported (known: {list(KNOWN_FORMAT_VERSIONS)}); "
                                  "regenerate the manifest with this version of the package")
        from .schemas import _manifest_def_type  # noqa: PLC0415 - failure path only
        for key, definition in (("files", "file"), ("runs", "run_meta")):
            entries = full.get(key)
            if not isinstance(entries, dict):
                continue
            tp = _manifest_def_type(definition)
            for name, entry in entries.items():
                try:
                    msgspec.convert(entry, tp, strict=True)
                except msgspec.ValidationError as sub:
                    where, msg = error_path(sub)
                    return IntegrityError(MANIFEST_NAME, f"{key} entry {name[:200]!r}"
                                          f"{'.' + where if where else ''}: {_msg(msg)}")
    where, msg = error_path(exc)
    return IntegrityError(MANIFEST_NAME, f"{where or 'top level'}: {_msg(msg)}")

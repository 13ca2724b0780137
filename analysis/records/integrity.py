"""Verification of a frozen export against its manifest (docs/FORMAT.md, "MANIFEST.json").

Every failure raises :class:`IntegrityError` whose message names the file, the record
(line and ID) where one is involved, and what differs. The order of the checks is the
order of trust:

1. the manifest: canonical bytes, its schema, a known ``format_version``, and paths that
   are normalised relative POSIX paths inside the export;
2. the folder: every file on disk is a regular file (no symbolic link, no unreadable
   folder) listed exactly once, and every listed file exists;
3. each file is hashed (SHA-256, size) *before* anything is decompressed or parsed;
   ``.gz`` files decompress to at most the manifest's ``decompressed_size``;
4. each line is decoded by the typed decoder of its record type (the JSON Schema
   documents, :mod:`analysis.records.schemas`), must equal its canonical serialization
   (which also rules out duplicate keys, a BOM, CRLF, other whitespace or key order)
   and the record hash the manifest lists; IDs are unique;
5. cross-file checks: suites name known tasks, runs belong to this cohort and cover
   every task and group of their suite exactly, and each run record matches the cohort
   (episode IDs, a task's condition IDs equal its contract's, ``completed`` equals "every
   group of the task recorded ``completed``").

Outcomes themselves (group status, truths) are derived by re-execution
(:mod:`analysis.executor.replay`), not here.
"""
from __future__ import annotations

import functools
import gc
import hashlib
import json
import os
import re
import stat
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from sys import intern
from typing import Any, NotRequired, TypedDict

import msgspec

from .._fs.fork import ForkWorker
from .hashing import canonical_json, sha256_bytes
from .io import DuplicateKey as _DuplicateKey
from .io import gunzip_capped
from .io import no_duplicates as _no_duplicates
from .manifest import (KNOWN_FORMAT_VERSIONS, MANIFEST_NAME, UNLISTED_FILES, cohort_fingerprint,
                       manifest_bytes)
from .schemas import (ID_FIELDS, PLANNER_NAME, check_numbers, decoder, error_path,
                      first_extra_field, manifest_decoder)

__all__ = ["IntegrityError", "VerificationReport", "StreamedRecords", "verify", "verify_records",
           "check_relpath"]


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
        # one line, whatever a message quotes
        super().__init__(f"{where}: {message}".replace("\n", "\\n").replace("\r", "\\r"))
        self.file, self.line, self.record_id = file, line, record_id
        self.message = message

    def __reduce__(self):  # sent whole from a verifying child process
        return type(self), (self.file, self.message, self.line, self.record_id)


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


@functools.lru_cache(maxsize=None)
def _projection(fields: tuple[str, ...]) -> msgspec.json.Decoder:
    """A decoder that keeps only ``fields`` of already verified records."""
    return msgspec.json.Decoder(TypedDict("projection", {f: NotRequired[Any] for f in fields}))


class StreamedRecords(Sequence):
    """The records of a verified file that were handed to a callback instead of kept
    (``verify_records(stream=...)``): iterating decodes them again, one at a time, from
    the very bytes that were verified (held compressed in memory), never from disk.
    Decoding the group records of a run takes a fraction of a second; keeping them all
    decoded would take several times the memory of the export's text."""

    def __init__(self, rel: str, entry: dict, raw: bytes, n: int):
        self.rel, self._entry, self._raw, self._n = rel, entry, raw, n

    def __len__(self) -> int:
        return self._n

    def __iter__(self):
        return iter(self.decode())

    def decode(self, fields: tuple[str, ...] | None = None) -> list[dict]:
        """All records of the file, decoded again (without the cyclic collector, which
        would otherwise rescan everything in memory several times per file). ``fields``:
        keep only these top-level fields (the others are skipped while parsing, which
        saves their memory)."""
        content = _content(self.rel, self._raw, self._entry)
        decode = (decoder(self._entry["record_type"]) if fields is None else
                  _projection(tuple(fields))).decode
        out, view, start, end = [], memoryview(content), 0, len(content)
        with _no_gc():
            while start < end:  # line by line: no second copy of the content
                stop = content.index(b"\n", start)
                out.append(decode(view[start:stop]))
                start = stop + 1
        return out

    def __getitem__(self, i):
        if isinstance(i, slice):
            return list(self)[i]
        n = self._n
        if not -n <= i < n:
            raise IndexError(f"{self.rel}: record index {i} out of range ({n} records)")
        return self.decode()[i]

    def __repr__(self) -> str:
        return f"<StreamedRecords {self.rel}: {self._n} records>"


def _record_id(record_type: str, record) -> str | None:
    keys = ID_FIELDS.get(record_type)
    if not keys or not isinstance(record, dict):
        return None
    return "/".join(str(record.get(k)) for k in keys)


def _short(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 200 else text[:200] + "..."


def _msg(text: str) -> str:
    """msgspec's "Expected `bool`, got `str`" as "expected bool, got str"."""
    text = text.replace("`", "")
    return text[:1].lower() + text[1:]


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


# --- the folder --------------------------------------------------------------------------

#: Folders an export may hold empty.
EMPTY_FOLDERS_ALLOWED = frozenset({"runs"})


def _files_on_disk(root: Path, follow: bool, with_folders: bool = False):
    found: set[str] = set()
    folders: set[str] = set()

    def rel_of(p) -> str:
        return Path(p).relative_to(root).as_posix()

    def onerror(exc: OSError):
        raise IntegrityError(rel_of(exc.filename) if exc.filename else str(root),
                             f"unreadable folder ({exc.strerror or exc})")

    for dirpath, dirs, names in os.walk(root, onerror=onerror, followlinks=follow):
        for name in dirs + names:
            full = os.path.join(dirpath, name)
            try:
                st = os.lstat(full)
            except OSError as exc:
                raise IntegrityError(rel_of(full), f"cannot be read ({exc.strerror})") from None
            if stat.S_ISLNK(st.st_mode):
                if follow:
                    if name in dirs:
                        continue
                    st = os.stat(full)
                else:
                    raise IntegrityError(rel_of(full), "is a symbolic link; an export holds "
                                         "regular files and folders only")
            if name in names:
                rel = rel_of(full)
                if not stat.S_ISREG(st.st_mode):
                    raise IntegrityError(rel, "not a regular file")
                if rel not in UNLISTED_FILES:
                    found.add(rel)
            elif not stat.S_ISLNK(st.st_mode):
                folders.add(rel_of(full))
    return (found, folders) if with_folders else found


def _empty_folders(found: set[str], folders: set[str], listed: set[str]) -> list[str]:
    """Folders holding no file (an empty ``runs/x``, a planted folder): as unknown as a
    stray file. Only the top-level ``runs/`` may be empty (every run dropped); a folder
    in place of a listed file is reported as that file missing."""
    holding = {"/".join(f.split("/")[:i]) for f in found for i in range(1, f.count("/") + 1)}
    return sorted(folders - holding - EMPTY_FOLDERS_ALLOWED - listed)


def _read_regular(path: Path, rel: str, follow: bool = False, limit: int | None = None) -> bytes:
    """The bytes of a regular file (at most ``limit + 1``), without following a symlink."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
    if not follow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if not follow and os.path.islink(path):
            raise IntegrityError(rel, "is a symbolic link; an export holds regular files "
                                 "only") from None
        raise IntegrityError(rel, f"cannot be read ({exc.strerror or exc})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise IntegrityError(rel, "not a regular file")
        chunks, total = [], 0
        want = (limit + 1) if limit is not None else None
        while want is None or total < want:
            try:
                chunk = os.read(fd, 1 << 22 if want is None else min(1 << 22, want - total))
            except OSError as exc:
                raise IntegrityError(rel, f"cannot be read ({exc.strerror or exc})") from None
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


# --- one file ----------------------------------------------------------------------------

@contextmanager
def _no_gc():
    """Decoding builds hundreds of thousands of small objects in one go; the cyclic
    collector would scan them again and again (most of the parse time) although JSON
    data has no cycles."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        # Promote what was built to the oldest generation without scanning it: the
        # collection that re-enabling would trigger costs as much as the parse itself.
        gc.freeze()
        gc.unfreeze()
        if was:
            gc.enable()


def _content(rel: str, raw: bytes, entry: dict) -> bytes:
    if not rel.endswith(".gz"):
        return raw
    try:
        return gunzip_capped(raw, entry["decompressed_size"])
    except ValueError as exc:
        raise IntegrityError(rel, str(exc)) from None


def _line_count(rel: str, content: bytes) -> int:
    """The number of record lines of canonical content: each ends with exactly one
    ``\\n``, none is blank."""
    if not content:
        return 0
    if not content.endswith(b"\n"):
        n = content.count(b"\n") + 1
        raise IntegrityError(rel, "last line does not end with \\n (not canonical)", line=n)
    if content.startswith(b"\n"):
        blank = 0  # where the first blank line starts
    else:
        pos = content.find(b"\n\n")
        blank = pos + 1 if pos >= 0 else -1
    if blank >= 0:
        raise IntegrityError(rel, "blank line (not canonical: one record a line)",
                             line=content.count(b"\n", 0, blank) + 1)
    n = content.count(b"\n")
    if rel.endswith(".json") and n != 1:
        raise IntegrityError(rel, f"a .json file holds exactly one record line, found {n}",
                             line=2)
    return n


def _lines(content: bytes):
    """The record lines of checked content (:func:`_line_count`), one at a time (never
    a second copy of the whole file; bytes, not memoryviews, which compare slowly)."""
    start, end, find = 0, len(content), content.find
    while start < end:
        stop = find(b"\n", start)
        yield content[start:stop]
        start = stop + 1


def _decode_line(rel: str, rtype: str, i: int, line: bytes, dec) -> dict:
    """Decode one line with the typed decoder; it must be canonical."""
    try:
        rec = dec.decode(line)
    except RecursionError:
        raise IntegrityError(rel, "nested too deeply", line=i) from None
    except msgspec.ValidationError as exc:
        why = _diagnose_json(line)
        if why:
            raise IntegrityError(rel, why, line=i, record_id=_guess_id(rtype, line)) from None
        where, msg = error_path(exc)
        raise IntegrityError(rel, f"schema violation for {rtype}: field {where!r}: "
                             f"{_msg(msg)}", line=i, record_id=_guess_id(rtype, line)) from None
    except msgspec.DecodeError as exc:
        why = _diagnose_json(line) or f"not valid JSON ({_short(exc)})"
        raise IntegrityError(rel, why, line=i) from None
    if _ENCODE(rec) != line:
        _slow_canonical(rel, rtype, i, line, rec)
    bad = check_numbers(rtype, rec)
    if bad:
        raise IntegrityError(rel, f"schema violation for {rtype}: field {bad!r}: expected a "
                             "number", line=i, record_id=_record_id(rtype, rec))
    return rec


_ENCODE = msgspec.json.Encoder(order="sorted").encode


def _slow_canonical(rel, rtype, i, line, rec) -> None:
    """The line differs from msgspec's re-encoding: decide with the canonical form itself
    (floats are written differently by msgspec, e.g. ``1e+16``), and name the cause."""
    try:
        if canonical_json(rec) == line:
            return
    except ValueError as exc:
        raise IntegrityError(rel, _short(exc), line=i, record_id=_record_id(rtype, rec)) from None
    why = _diagnose_json(line)
    if not why:
        extra = first_extra_field(json.loads(line), rec)
        why = (f"schema violation for {rtype}: field {extra!r}: unknown field" if extra else
               "not in canonical form (keys sorted, no whitespace, shortest escapes; the "
               "file must equal its canonical serialization)")
    raise IntegrityError(rel, why, line=i, record_id=_record_id(rtype, rec))


def _guess_id(rtype, line):
    try:
        return _record_id(rtype, json.loads(line))
    except (ValueError, RecursionError):
        return None


def _locate_difference(rel: str, entry: dict, content: bytes) -> IntegrityError:
    """The file's hash differs: name the first record whose hash is not the manifest's."""
    expected = entry["record_hashes"]
    rtype = entry["record_type"]
    records = []
    for i, line in enumerate(content.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line, parse_constant=_reject_constant, object_pairs_hook=_no_duplicates)
        except _DuplicateKey as exc:
            # json keeps the last value, so the record may still hash as listed
            return IntegrityError(rel, f"file hash differs from the manifest; duplicate key "
                                  f"{exc.args[0]!r} (every key appears once)", line=i)
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            return IntegrityError(rel, f"file hash differs from the manifest; the line is not "
                                  f"valid JSON ({_short(exc)})", line=i)
        records.append((i, rec))
    for k, (i, rec) in enumerate(records):
        if k >= len(expected):
            return IntegrityError(rel, f"extra record (manifest lists {len(expected)})",
                                  line=i, record_id=_record_id(rtype, rec))
        try:
            got = sha256_bytes(canonical_json(rec))
        except ValueError as exc:
            return IntegrityError(rel, _short(exc), line=i, record_id=_record_id(rtype, rec))
        if got != expected[k]:
            moved = expected.index(got) + 1 if got in expected else None
            what = (f"record is the one the manifest lists at line {moved} (records reordered)"
                    if moved else "record hash differs from the manifest "
                    f"(expected {_shown(expected[k], got)}, got {_shown(got, expected[k])})")
            return IntegrityError(rel, what, line=i, record_id=_record_id(rtype, rec))
    if len(records) < len(expected):
        return IntegrityError(rel, f"{len(expected) - len(records)} record(s) missing: file has "
                              f"{len(records)}, manifest lists {len(expected)}",
                              line=len(records) + 1)
    return IntegrityError(rel, "bytes differ from the manifest's sha256 although every record "
                          "matches its record hash (the file's formatting changed, or the "
                          "manifest's sha256 of it was edited)")


def _shown(h: str, other: str) -> str:
    """A hash cut after its first 12 characters, unless that hides where it differs from
    ``other`` (then in full).

    >>> _shown("ab" * 32, "ab" * 31 + "ac")[-4:], _shown("ab" * 32, "cd" * 32)
    ('abab', 'abababababab...')
    """
    return h if h[:12] == other[:12] else h[:12] + "..."


_SLACK = 1 << 16


def _verify_file(root: Path, rel: str, entry: dict, follow: bool, stream: bool = False,
                 sink: Callable | None = None, keys: list | None = None):
    """Verify one file; return its records, or (``stream``) a :class:`StreamedRecords`
    after handing each record to ``sink`` (if any). ``keys`` (group records) receives
    ``(run_id, episode_id, group_id, status)`` per record for the cross-file checks."""
    try:
        # a little past the listed size, to name the record of a small edit
        raw = _read_regular(root / rel, rel, follow=follow, limit=entry["size"] + _SLACK)
    except FileNotFoundError:
        raise IntegrityError(rel, "missing: listed in the manifest but not on disk") from None
    # hashed before anything is decompressed or parsed
    if len(raw) != entry["size"] or hashlib.sha256(raw).hexdigest() != entry["sha256"]:
        if len(raw) > entry["size"] + _SLACK:
            raise IntegrityError(rel, f"file is larger than the manifest's size "
                                 f"{entry['size']}; not read further")
        raise _locate_difference(rel, entry, _content(rel, raw, entry))
    content = _content(rel, raw, entry)
    if rel.endswith(".gz") and len(content) != entry["decompressed_size"]:
        raise IntegrityError(rel, f"decompresses to {len(content)} bytes, the manifest says "
                             f"{entry['decompressed_size']}")
    rtype = entry["record_type"]
    n_lines = _line_count(rel, content)
    if n_lines != entry["records"]:
        raise IntegrityError(rel, f"{n_lines} records, the manifest lists "
                             f"{entry['records']}", line=min(n_lines, entry["records"]) + 1)
    dec = decoder(rtype)
    expected = entry["record_hashes"]
    records = []
    seen: dict[str, int] = {}
    sha = hashlib.sha256
    id_fields = ID_FIELDS.get(rtype, ())
    one_id = id_fields[0] if len(id_fields) == 1 else None
    for i, line in enumerate(_lines(content), start=1):
        rec = _decode_line(rel, rtype, i, line, dec)
        if sha(line).hexdigest() != expected[i - 1]:
            raise _locate_difference(rel, entry, content)
        # (one ID field, the common case: read directly rather than joined)
        rid = str(rec.get(one_id)) if one_id else _record_id(rtype, rec)
        if rid is not None:
            # a group is identified within its episode (toy cohorts reuse g0, g1, ...)
            key = (rec["episode_id"], rid) if rtype == "group_record" else rid
            if key in seen:
                raise IntegrityError(rel, f"duplicate ID (first at line {seen[key]})", line=i,
                                     record_id=rid)
            seen[key] = i
        if keys is not None:
            # shared strings (the loader's columns use the same ones): not one copy per
            # record kept alive for the cross-file checks
            keys.append((intern(rec["run_id"]), intern(rec["episode_id"]),
                         intern(rec["group_id"]), intern(rec["status"])))
        if not stream:
            records.append(rec)
        elif sink is not None:
            sink(rec)
    if stream:
        return StreamedRecords(rel, entry, raw, n_lines)
    return records


def verify_records(root: str | os.PathLike, *, follow_symlinks: bool = False,
                   stream: dict[str, Callable | None] | None = None, workers: int = 1
                   ) -> tuple[VerificationReport, dict, dict]:
    """Verify and return ``(report, manifest, {relpath: records})``.

    ``follow_symlinks`` is for views assembled from links to verified folders (the
    pre-check of ``analysis.add_planner``); an export itself holds no links.
    ``stream`` maps record types to a callback (or None): each verified record of those
    types is handed to it as it is decoded and not kept; ``records[relpath]`` is then a
    :class:`StreamedRecords` that decodes them again on demand. A callback sees the
    records of a file before the cross-file checks ran; if verification fails, what it
    built must be discarded (the exception says so by being raised).
    ``workers=2`` verifies about half of the streamed files without a callback in a
    forked process (where ``os.fork`` exists): the same checks, and the same first
    error (that of the first failing file in path order).
    """
    if not isinstance(root, (str, os.PathLike)):
        raise TypeError(f"root={root!r}: expected an export folder path (str or os.PathLike)")
    root = Path(root)
    if not root.is_dir():
        raise IntegrityError(str(root), "is a file, not an export folder" if root.exists()
                             else "export folder does not exist")
    try:
        with _no_gc():
            return _verify(root, follow_symlinks, stream or {}, workers)
    except RecursionError:
        raise IntegrityError(str(root), "a record is nested too deeply") from None
    except MemoryError:
        raise IntegrityError(str(root), "out of memory while verifying") from None


def _split(manifest: dict, stream: dict) -> set[str]:
    """The files a second process verifies: streamed files without a callback (their
    records stay in that process), largest first, up to half of all decompressed bytes."""
    files = manifest["files"]
    size = {rel: e.get("decompressed_size", e["size"]) for rel, e in files.items()}
    half = sum(size.values()) / 2
    chosen, load = set(), 0
    for rel in sorted(files, key=lambda r: (-size[r], r)):
        rtype = files[rel]["record_type"]
        if rtype in stream and stream[rtype] is None and load + size[rel] <= half:
            chosen.add(rel)
            load += size[rel]
    return chosen


def _verify_in_child(root: Path, follow: bool, manifest: dict, rels: list[str]):
    """Fork a process that verifies ``rels`` (streamed, no callback;
    :class:`analysis._fs.fork.ForkWorker`). Returns ``collect()``: ``{rel:
    (StreamedRecords, group keys)}``, or the ``IntegrityError`` of its first failing file
    (returned, not raised: the caller orders the errors)."""

    def work():
        out: dict = {}
        try:
            for rel in rels:
                entry = manifest["files"][rel]
                keys = [] if entry["record_type"] == "group_record" else None
                n = len(_verify_file(root, rel, entry, follow, stream=True, keys=keys))
                out[rel] = (n, keys)
            return ("ok", out)
        except IntegrityError as exc:
            return ("error", exc)
        except BaseException as exc:  # noqa: BLE001 - handed to the parent
            return ("crash", f"{type(exc).__name__}: {exc}")

    worker = ForkWorker.start(work, name="verifying process")

    def collect():
        kind, value = worker.collect()
        if kind == "crash":
            raise RuntimeError(f"the verifying process failed: {value}")
        if kind == "error":
            return value
        return {rel: (_verified_view(root, rel, manifest["files"][rel], n, follow), keys)
                for rel, (n, keys) in value.items()}

    return collect


def _verified_view(root: Path, rel: str, entry: dict, n: int, follow: bool):
    """The :class:`StreamedRecords` of a file the child verified: its bytes are read
    here again and must still be the manifest's (else the file changed meanwhile)."""
    raw = _read_regular(root / rel, rel, follow=follow, limit=entry["size"] + _SLACK)
    if len(raw) != entry["size"] or hashlib.sha256(raw).hexdigest() != entry["sha256"]:
        raise IntegrityError(rel, "changed while the export was being verified")
    return StreamedRecords(rel, entry, raw, n)


def _verify(root: Path, follow: bool, stream: dict, workers: int = 1):
    manifest = _read_manifest(root, follow)
    listed = set(manifest["files"])
    on_disk, folders = _files_on_disk(root, follow, with_folders=True)
    extra = sorted(on_disk - listed)
    if extra:
        raise IntegrityError(extra[0], "file on disk is not in the manifest")
    empty = _empty_folders(on_disk, folders, listed)
    if empty:
        raise IntegrityError(empty[0], "a folder on disk that holds no file of the manifest "
                             "(unknown folder); remove it")
    missing = sorted(listed - on_disk)
    if missing:
        raise IntegrityError(missing[0], "missing: listed in the manifest but not on disk")
    records, group_keys = {}, {}
    elsewhere = _split(manifest, stream) if workers > 1 and hasattr(os, "fork") else set()
    collect = _verify_in_child(root, follow, manifest, sorted(elsewhere)) if elsewhere else None
    error = None
    try:
        for rel in sorted(listed - elsewhere):
            entry = manifest["files"][rel]
            rtype = entry["record_type"]
            keys = group_keys[rel] = [] if rtype == "group_record" else None
            records[rel] = _verify_file(root, rel, entry, follow, stream=rtype in stream,
                                        sink=stream.get(rtype), keys=keys)
    except IntegrityError as exc:
        error = exc
    finally:
        theirs = collect() if collect else {}
    # the first failing file in path order, as one process would have reported it
    if isinstance(theirs, IntegrityError) and (error is None or theirs.file < error.file):
        error = theirs
    if error is not None:
        raise error
    for rel, (view, keys) in theirs.items():
        records[rel] = view
        group_keys[rel] = keys
    records = {rel: records[rel] for rel in sorted(records)}
    suites, runs = _check_cross_file(manifest, records, group_keys)
    report = VerificationReport(
        root=str(root), n_files=len(records), n_records=sum(map(len, records.values())),
        suites=tuple(sorted(suites)), runs=tuple(sorted(runs)), records=records)
    return report, manifest, records


# --- across files ------------------------------------------------------------------------

def _check_cross_file(manifest: dict, records: dict, group_keys: dict) -> tuple[dict, dict]:
    """Runs cover every task and group of their suite, and belong to this cohort."""
    by_type: dict[str, list[str]] = {}
    for rel, entry in manifest["files"].items():
        by_type.setdefault(entry["record_type"], []).append(rel)
    for rtype, rels in by_type.items():
        if rtype not in ("run", "group_record", "task_record"):
            outside = [r for r in rels if not r.startswith("cohort/")]
            if outside:
                raise IntegrityError(outside[0], f"a {rtype} file belongs under cohort/")
        else:
            outside = [r for r in rels if not re.match(r"^runs/[^/]+/[^/]+$", r)]
            if outside:
                raise IntegrityError(outside[0], f"a {rtype} file belongs under runs/<run_id>/")
    for rtype in ("suite", "task", "episode"):
        if len(by_type.get(rtype, [])) > 1:
            raise IntegrityError(sorted(by_type[rtype])[1], f"a second {rtype} file (the "
                                 f"cohort has one: {sorted(by_type[rtype])[0]})")
    suites = {}
    for rel in by_type.get("suite", []):
        for rec in records[rel]:
            suites[rec["suite"]] = rec
    tasks = {rec["task_id"]: rec for rel in by_type.get("task", []) for rec in records[rel]}
    episodes = {rec["episode_id"]: rec for rel in by_type.get("episode", [])
                for rec in records[rel]}
    episode_groups = {e["episode_id"]: {g["group_id"] for g in e["groups"]}
                      for e in episodes.values()}
    for rel in by_type.get("task", []):
        for line, t in enumerate(records[rel], start=1):
            for gid in t["group_ids"]:
                if gid not in episode_groups.get(t["episode_id"], ()):
                    raise IntegrityError(rel, f"group {gid!r} is not a group of episode "
                                         f"{t['episode_id']!r}", line=line,
                                         record_id=t["task_id"])
            ids = [c["id"] for c in t["contract"]["conditions"]]
            if len(set(ids)) != len(ids):
                raise IntegrityError(rel, f"contract condition IDs repeat: {ids}", line=line,
                                     record_id=t["task_id"])
    for name, suite in suites.items():
        rel = _first(by_type, "suite")
        for tid in suite["task_ids"]:
            if tid not in tasks:
                raise IntegrityError(rel, f"suite {name!r} names unknown task {tid!r}",
                                     record_id=name)
            if tasks[tid]["episode_id"] not in suite["episode_ids"]:
                raise IntegrityError(rel, f"suite {name!r}: task {tid!r} is of episode "
                                     f"{tasks[tid]['episode_id']!r}, not in its episode_ids",
                                     record_id=name)
        for eid in suite["episode_ids"]:
            if eid not in episodes:
                raise IntegrityError(rel, f"suite {name!r} names unknown episode {eid!r}",
                                     record_id=name)
        for what in ("task_ids", "episode_ids"):
            if len(set(suite[what])) != len(suite[what]):
                raise IntegrityError(rel, f"suite {name!r}: {what} repeat an ID",
                                     record_id=name)
    fingerprint = cohort_fingerprint(manifest)
    runs = {}
    run_folders = {r.rsplit("/", 1)[0] for t in ("run", "group_record", "task_record")
                   for r in by_type.get(t, [])}
    for folder in sorted(run_folders):
        if f"{folder}/run.json" not in records:
            raise IntegrityError(f"{folder}/run.json", "missing: the run folder holds records "
                                 "but no run.json in the manifest")
    for rel in sorted(by_type.get("run", [])):
        if rel.rsplit("/", 1)[1] != "run.json":
            raise IntegrityError(rel, "a run record file is named run.json")
        run = records[rel][0] if records[rel] else None
        if run is None:
            raise IntegrityError(rel, "run file holds no record")
        run_id, folder = run["run_id"], rel.rsplit("/", 1)[0]
        # a run named apart from its planner (run_name) takes the name's place in its ID
        name = run.get("run_name", run["planner"])
        expected_id = f"{name}__{run['suite']}__{run['memory']}"
        if "run_name" in run and run["run_name"] == run["planner"]:
            raise IntegrityError(rel, f"run_name {name!r} equals the planner's name: a run "
                                 "named as its planner has no run_name", line=1,
                                 record_id=run_id)
        if not PLANNER_NAME.match(name) or run_id != expected_id:
            raise IntegrityError(rel, f"run_id {run_id!r} must be <run name>__<suite>__<memory> "
                                 f"= {expected_id!r} (the run name: run_name, else the "
                                 "planner's), with a name of lowercase letters, "
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
        from .limited import run_suite_of   # a limited run covers its first N episodes
        suite = run_suite_of(run, suites[run["suite"]], tasks)
        _check_run_files(folder, run, suite, tasks, episodes, records, group_keys, manifest)
        runs[run_id] = run
    for run_id in manifest.get("runs", {}):
        if run_id not in runs:
            raise IntegrityError(MANIFEST_NAME, f"runs entry {run_id!r} names no run of the "
                                 "export")
    return suites, runs


def _first(by_type, rtype):
    return sorted(by_type.get(rtype, ["?"]))[0]


def _check_run_files(folder, run, suite, tasks, episodes, records, group_keys, manifest):
    run_id = run["run_id"]
    names = {"tasks.jsonl": "task_record", "groups.jsonl.gz": "group_record"}
    task_rel, group_rel = f"{folder}/tasks.jsonl", f"{folder}/groups.jsonl.gz"
    for needed, rtype in ((task_rel, "task_record"), (group_rel, "group_record")):
        if needed not in records:
            raise IntegrityError(needed, f"missing for run {run_id!r}")
        if manifest["files"][needed]["record_type"] != rtype:
            raise IntegrityError(needed, f"record_type must be {rtype!r}")
    others = sorted(r for r in records if r.startswith(folder + "/")
                    and r.rsplit("/", 1)[1] not in (*names, "run.json"))
    if others:
        raise IntegrityError(others[0], f"unexpected file in run {run_id!r} (a run holds "
                             "run.json, groups.jsonl.gz and tasks.jsonl)")
    # group records: exactly the suite's groups, each of its own episode
    expected = [(e, g["group_id"]) for e in suite["episode_ids"] for g in episodes[e]["groups"]]
    episodes_of: dict[str, list[str]] = {}
    for e, g in expected:
        episodes_of.setdefault(g, []).append(e)
    wanted = set(expected)
    status = {}
    for line, (rec_run, rec_episode, gid, rec_status) in enumerate(group_keys[group_rel],
                                                                    start=1):
        if rec_run != run_id:
            raise IntegrityError(group_rel, f"run_id {rec_run!r} != {run_id!r}",
                                 line=line, record_id=gid)
        if (rec_episode, gid) not in wanted:
            if gid in episodes_of:
                raise IntegrityError(group_rel, f"episode_id {rec_episode!r}: the group "
                                     f"belongs to {episodes_of[gid][0]!r}", line=line,
                                     record_id=gid)
            raise IntegrityError(group_rel, f"group not of suite {run['suite']!r} of this "
                                 "cohort", line=line, record_id=gid)
        status[(rec_episode, gid)] = rec_status
    missing = [g for e, g in expected if (e, g) not in status]
    if missing:
        raise IntegrityError(group_rel, f"run {run_id!r} lacks {len(missing)} group record(s), "
                             f"first {missing[0]!r}", record_id=missing[0])
    # task records: exactly the suite's tasks, matching their contracts
    suite_tasks = set(suite["task_ids"])
    have = set()
    for line, rec in enumerate(records[task_rel], start=1):
        tid = rec["task_id"]
        if rec["run_id"] != run_id:
            raise IntegrityError(task_rel, f"run_id {rec['run_id']!r} != {run_id!r}", line=line,
                                 record_id=tid)
        if tid not in suite_tasks:
            raise IntegrityError(task_rel, f"task not in suite {run['suite']!r}", line=line,
                                 record_id=tid)
        task = tasks[tid]
        if rec["episode_id"] != task["episode_id"]:
            raise IntegrityError(task_rel, f"episode_id {rec['episode_id']!r}: the task "
                                 f"belongs to {task['episode_id']!r}", line=line, record_id=tid)
        contract = task["contract"]["conditions"]
        got = [c["id"] for c in rec["conditions"]]
        want = [c["id"] for c in contract]
        if got != want:
            raise IntegrityError(task_rel, f"conditions {got} must be the contract's "
                                 f"condition IDs {want}, once each and in order", line=line,
                                 record_id=tid)
        statuses = [status[(task["episode_id"], g)] for g in task["group_ids"]]
        completed = all(s == "completed" for s in statuses)
        if rec["completed"] != completed:
            raise IntegrityError(task_rel, f"completed is {rec['completed']} but the task's "
                                 f"groups recorded {statuses}",
                                 line=line, record_id=tid)
        for c, r in zip(contract, rec["conditions"]):
            # a condition's truth is UNKNOWN exactly when its evidence is missing
            # (docs/FORMAT.md): an incomplete task decides no atom and no unseen event
            if not completed and (r["truth"] == "FALSE" or
                                  (c["kind"] == "atom" and r["truth"] != "UNKNOWN")):
                raise IntegrityError(task_rel, f"conditions[{c['id']}].truth {r['truth']!r} "
                                     "is impossible for a task that did not complete",
                                     line=line, record_id=tid)
            if completed and c["kind"] == "event" and r["truth"] == "UNKNOWN":
                raise IntegrityError(task_rel, f"conditions[{c['id']}].truth 'UNKNOWN' is "
                                     "impossible for an event of a completed task", line=line,
                                     record_id=tid)
        have.add(tid)
    missing = [t for t in suite["task_ids"] if t not in have]
    if missing:
        raise IntegrityError(task_rel, f"run {run_id!r} does not cover {len(missing)} task(s) "
                             f"of suite {run['suite']!r}, first {missing[0]!r}",
                             record_id=missing[0])


def verify(root: str | os.PathLike | None = None, workers: int = 1) -> VerificationReport:
    """Verify the export at ``root`` (default: the committed export, wherever the working
    directory is, as :func:`analysis.load`); raise :class:`IntegrityError` on the first
    problem. ``workers=2`` shares the work with a forked process (see :func:`verify_records`).

    >>> verify().n_files > 0
    True
    """
    if root is None:
        from .._fs.resources import default_export_root   # where the repository's or the wheel's export is
        root = default_export_root()
    # the group records are checked and dropped one by one: verification alone keeps
    # none of them (a tenth of the memory)
    return verify_records(root, stream={"group_record": None}, workers=workers)[0]

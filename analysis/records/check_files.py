"""Trust layers 3 and 4 of verification: each file hashed (SHA-256, size) before anything
is decompressed or parsed, then each line decoded by its record type's typed decoder and
checked against its canonical serialization and record hash; docs/FORMAT.md.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from sys import intern

import msgspec

from .check_manifest import _diagnose_json, _reject_constant
from .check_tree import _read_regular
from .hashing import canonical_json, sha256_bytes
from .integrity_error import IntegrityError, _msg, _record_id, _short
from .io import DuplicateKey as _DuplicateKey
from .io import no_duplicates as _no_duplicates
from .schemas import ID_FIELDS, check_numbers, decoder, error_path, first_extra_field
from .streamed import StreamedRecords, _content


# --- one file ----------------------------------------------------------------------------





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

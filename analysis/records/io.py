"""Reading and atomically writing frozen record files.

``.json`` holds one record, ``.jsonl`` one record a line, ``.jsonl.gz`` the same
gzip-compressed with mtime 0 (so identical records give identical bytes). Every write
goes to a temporary file in the target folder and is renamed into place, so a failed
command never leaves a partial file.
"""
from __future__ import annotations

import gzip
import io
import json
import os
import zlib
from pathlib import Path
from typing import Any, Iterable

from .._fs.atomic import atomic_write, default_file_mode
from .hashing import canonical_json

__all__ = ["write_records", "write_record", "read_records", "parse_lines", "atomic_write_bytes",
           "read_user_records", "gunzip_limited", "MAX_RECORD_FILE_BYTES", "MAX_RECORD_LINE_BYTES",
           "encode_records", "decode_file_bytes", "gunzip_capped", "RecordParseError",
           "GZIP_HEADER"]

#: The 10-byte gzip header every frozen ``.gz`` file starts with (deflate, no flags, mtime
#: 0, best compression, OS "unknown"): what :func:`encode_records` writes.
GZIP_HEADER = bytes.fromhex("1f8b08000000000002ff")


class RecordParseError(ValueError):
    """A line that is not a JSON object (carries the 1-based line number)."""

    def __init__(self, line: int, message: str):
        super().__init__(f"line {line}: {message}")
        self.line = line


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and an atomic rename, with the
    permissions of a normal write (:func:`analysis._fs.atomic.atomic_write`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, data, mode=default_file_mode(), suffix=".tmp")


def _gzip(data: bytes) -> bytes:
    buf = io.BytesIO()
    # mtime=0 and no file name: the compressed bytes depend on the records alone.
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as gz:
        gz.write(data)
    return buf.getvalue()


def encode_records(path: str | os.PathLike, records: Iterable[Any]) -> bytes:
    """The exact bytes :func:`write_records` would write for ``path``."""
    name = str(path)
    if name.endswith(".json"):
        records = list(records)
        if len(records) != 1:
            raise ValueError(f"{name}: a .json file holds exactly one record, got {len(records)}")
        return canonical_json(records[0]) + b"\n"
    data = b"".join(canonical_json(r) + b"\n" for r in records)
    return _gzip(data) if name.endswith(".gz") else data


def write_records(path: str | os.PathLike, records: Iterable[Any]) -> None:
    """Write records as canonical JSON Lines (gzip when ``path`` ends in ``.gz``)."""
    atomic_write_bytes(path, encode_records(path, records))


def write_record(path: str | os.PathLike, record: Any) -> None:
    """Write one record as a canonical ``.json`` file."""
    atomic_write_bytes(path, canonical_json(record) + b"\n")


def decode_file_bytes(path: str | os.PathLike, raw: bytes) -> bytes:
    """Decompress ``raw`` when ``path`` is a ``.gz`` file."""
    if str(path).endswith(".gz"):
        try:
            return gzip.decompress(raw)
        # a flipped byte can surface as a bad header (OSError), a truncated stream
        # (EOFError) or corrupt deflate data (zlib.error), depending on where it lands
        except (OSError, EOFError, zlib.error) as exc:
            raise RecordParseError(0, f"not a valid gzip stream ({exc})") from exc
    return raw


def gunzip_capped(raw: bytes, cap: int) -> bytes:
    """Decompress one canonical gzip member, producing at most ``cap`` bytes.

    Refused (``ValueError`` naming why): another header than :data:`GZIP_HEADER`, output
    beyond ``cap`` (stopped there: a gzip bomb costs at most ``cap`` bytes of memory), a
    second member or trailing bytes, a truncated stream, a wrong CRC or length.

    >>> gunzip_capped(encode_records("x.jsonl.gz", [{"a": 1}]), 100).split()
    [b'{"a":1}']
    """
    if raw[:10] != GZIP_HEADER:
        raise ValueError("gzip header is not the canonical one (mtime 0, no name, "
                         f"compression 9): {raw[:10].hex()}")
    # gzip mode: zlib checks the header, the CRC and the length in C as it inflates
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    parts, total, data = [], 0, raw
    while True:
        # in slices, so that content which cannot be records is refused after the first
        # slice rather than after the whole (possibly huge) declared size
        try:
            part = d.decompress(data, min(1 << 24, cap + 1 - total))
        except zlib.error as exc:
            if "incorrect data check" in str(exc) or "incorrect length check" in str(exc):
                raise ValueError("gzip CRC or length does not match the data") from None
            raise ValueError(f"not a valid gzip stream ({exc})") from None
        if total == 0 and part and not part.startswith(b"{"):
            raise ValueError(f"decompressed content starts with {part[:1]!r}, not a record "
                             "('{'); not decompressed further")
        parts.append(part)
        total += len(part)
        data = d.unconsumed_tail
        if total > cap:
            raise ValueError(f"decompresses to more than the manifest's decompressed_size "
                             f"({cap} bytes); stopped there")
        if d.eof or not data:
            break
    if not d.eof:
        raise ValueError("gzip stream is truncated")
    if d.unused_data:
        raise ValueError(f"{len(d.unused_data)} byte(s) after the gzip member (a second "
                         "member or trailing data): a frozen .gz file holds exactly one member")
    return b"".join(parts)


def _reject_constant(name: str):
    raise ValueError(f"{name} is not allowed in frozen records")


class DuplicateKey(ValueError):
    """A JSON object with a key twice (json keeps the last value silently)."""


def no_duplicates(pairs):
    """``object_pairs_hook`` refusing a key given twice."""
    seen = {}
    for k, v in pairs:
        if k in seen:
            raise DuplicateKey(k)
        seen[k] = v
    return seen


def parse_lines(text: bytes) -> list[dict]:
    """Parse JSON Lines; every line must be one JSON object. NaN/Infinity and a key given
    twice are rejected (a record read back, verified or not, means one thing)."""
    records = []
    for i, line in enumerate(text.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line, parse_constant=_reject_constant, object_pairs_hook=no_duplicates)
        except DuplicateKey as exc:
            raise RecordParseError(i, f"duplicate key {exc.args[0]!r} (every key appears once)") from None
        except (ValueError, UnicodeDecodeError) as exc:
            raise RecordParseError(i, f"not valid JSON ({exc})") from exc
        except RecursionError:
            raise RecordParseError(i, "nested too deeply") from None
        if not isinstance(rec, dict):
            raise RecordParseError(i, f"expected a JSON object, got {type(rec).__name__}")
        records.append(rec)
    return records


def read_records(path: str | os.PathLike) -> list[dict]:
    """Read every record of a ``.json``, ``.jsonl`` or ``.jsonl.gz`` file (unverified)."""
    raw = Path(path).read_bytes()
    return parse_lines(decode_file_bytes(path, raw))


#: The most a record file given by a user (``add_planner records=``) may hold, decompressed:
#: ten times the largest file of the committed export (24 MB); like verification's
#: per-file ``decompressed_size``, the cap is enforced while decompressing, so a gzip bomb
#: costs at most this much memory.
MAX_RECORD_FILE_BYTES = 256 << 20
#: The longest record line (the committed export's longest is 82 KB): parsing a line
#: costs several times its size in memory, so longer lines are refused unparsed.
MAX_RECORD_LINE_BYTES = 16 << 20


def gunzip_limited(raw: bytes, cap: int) -> bytes:
    """Decompress a gzip file (any header, one or more members), producing at most
    ``cap`` bytes: ``ValueError`` past that (stopped there) or for a damaged stream.

    >>> gunzip_limited(gzip.compress(b"x" * 10), 10)
    b'xxxxxxxxxx'
    >>> gunzip_limited(gzip.compress(b"x" * 11), 10)
    Traceback (most recent call last):
    ...
    ValueError: decompresses to more than 10 bytes; stopped there
    """
    parts, total, data = [], 0, raw
    while data:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        while True:
            try:
                part = d.decompress(data, min(1 << 24, cap + 1 - total))
            except zlib.error as exc:
                raise ValueError(f"not a valid gzip stream ({exc})") from None
            parts.append(part)
            total += len(part)
            if total > cap:
                raise ValueError(f"decompresses to more than {cap} bytes; stopped there")
            data = d.unconsumed_tail
            if d.eof or not data:
                break
        if not d.eof:
            raise ValueError("gzip stream is truncated")
        data = d.unused_data
    return b"".join(parts)


def read_user_records(path: str | os.PathLike, limit: int = MAX_RECORD_FILE_BYTES,
                      line_limit: int = MAX_RECORD_LINE_BYTES) -> list[dict]:
    """The records of a ``.json``/``.jsonl``/``.jsonl.gz`` file given by a user, bounded:
    a regular file (a symlink, FIFO or device is refused, never opened in a way that
    blocks) of at most ``limit`` bytes, decompressing to at most ``limit`` bytes, with
    lines of at most ``line_limit`` bytes. ``ValueError`` (a
    :class:`~analysis._fs.errors.ConfinementError` for the file's kind or size, a
    :class:`RecordParseError` for its content) says which limit and where."""
    from analysis._fs.confine import read_regular
    raw = read_regular(path, str(path), limit=limit)
    if str(path).endswith(".gz"):
        try:
            raw = gunzip_limited(raw, limit)
        except ValueError as exc:
            raise RecordParseError(0, f"{exc} (at most {limit} bytes a file)") from None
    pos, i = 0, 1
    while True:  # line lengths first, without copying the lines
        nl = raw.find(b"\n", pos)
        end = len(raw) if nl < 0 else nl
        if end - pos > line_limit:
            raise RecordParseError(i, f"{end - pos} bytes, more than the {line_limit} a "
                                      "record line may hold; not parsed")
        if nl < 0:
            break
        pos, i = nl + 1, i + 1
    return parse_lines(raw)

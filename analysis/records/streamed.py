"""Streaming verification: the records of a verified file kept as the verified bytes and
decoded again on demand (:class:`StreamedRecords`, docs/ARCHITECTURE.md section 7), and
the second process that verifies half of the streamed files
(:class:`analysis._fs.fork.ForkWorker`).
"""
from __future__ import annotations

import functools
import gc
import zlib
from collections.abc import Sequence
from contextlib import contextmanager
from typing import Any, NotRequired, TypedDict

import msgspec

from .integrity_error import IntegrityError
from .io import gunzip_capped
from .schemas import decoder


@functools.lru_cache(maxsize=None)
def _projection(fields: tuple[str, ...]) -> msgspec.json.Decoder:
    """A decoder that keeps only ``fields`` of already verified records: a dotted name
    (``"attempts.action"``) keeps that field inside the objects of ``attempts`` (a list of
    objects, or one object), so that a run's attempts are decoded without their raw
    replies and checks when only their actions are read.

    >>> _projection(("a", "b.x")).decode(b'{"a":1,"b":[{"x":2,"y":3}],"c":4}')
    {'a': 1, 'b': [{'x': 2}]}
    >>> _projection(("a.x",)).decode(b'{"a":{"x":1,"y":2}}')
    {'a': {'x': 1}}
    """
    return msgspec.json.Decoder(_projected("projection", fields))


def _projected(name: str, fields: tuple[str, ...]) -> type:
    top: dict[str, list[str]] = {}
    for f in fields:
        head, _, rest = f.partition(".")
        top.setdefault(head, []).append(rest)
    types = {}
    for head, inner in top.items():
        if "" in inner:  # the whole field is named: kept whole
            types[head] = NotRequired[Any]
        else:
            # verified records: the field holds a list of objects, one object, or null
            sub = _projected(f"{name}_{head}", tuple(inner))
            types[head] = NotRequired[list[sub] | sub | None]
    return TypedDict(name, types)


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
        saves their memory); a dotted name keeps one field of the objects inside a field
        (``"attempts.action"``)."""
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

    def decode_by(self, key: str, fields: tuple[str, ...] | None = None):
        """The records grouped by the value of their top-level field ``key``: yields
        ``(value, records)`` in sorted order of the values, each group in file order and
        decoded only when reached (``fields`` as in :meth:`decode`), so that one group's
        records are alive at a time instead of the whole file's (:meth:`grouped`).

        >>> from analysis.records.io import encode_records
        >>> raw = encode_records("f.jsonl.gz", [{"e": "b", "x": 1}, {"e": "a", "x": 2},
        ...                                     {"e": "b", "x": 3}])
        >>> view = StreamedRecords("f.jsonl.gz", {"record_type": "group_record",
        ...                        "decompressed_size": 48}, raw, 3)
        >>> [(e, [r["x"] for r in recs]) for e, recs in view.decode_by("e", ("x",))]
        [('a', [2]), ('b', [1, 3])]
        """
        groups = self.grouped(key, fields)
        for value in groups.values:
            yield value, groups.pop(value)

    def grouped(self, key: str, fields: tuple[str, ...] | None = None) -> "GroupedRecords":
        """The records grouped by the value of their top-level field ``key``, each group
        decoded on demand (:class:`GroupedRecords`). The file is decompressed once, a
        slice at a time, and a first pass decodes only ``key``."""
        return GroupedRecords(_iter_lines(self.rel, self._raw, self._entry), key,
                              decoder(self._entry["record_type"]) if fields is None else
                              _projection(tuple(fields)))

    def __getitem__(self, i):
        if isinstance(i, slice):
            return list(self)[i]
        n = self._n
        if not -n <= i < n:
            raise IndexError(f"{self.rel}: record index {i} out of range ({n} records)")
        return self.decode()[i]

    def __repr__(self) -> str:
        return f"<StreamedRecords {self.rel}: {self._n} records>"


class GroupedRecords:
    """The records of one verified file grouped by a top-level field: :attr:`values`
    (sorted) and :meth:`decode` of one group, in file order. Holds the file's lines as
    text (decompressed a slice at a time: never the whole text and a copy of it), never
    its decoded records.

    >>> from analysis.records.io import encode_records
    >>> raw = encode_records("f.jsonl.gz", [{"e": "b", "x": 1}, {"e": "a", "x": 2}])
    >>> g = StreamedRecords("f.jsonl.gz", {"record_type": "group_record",
    ...                     "decompressed_size": 32}, raw, 2).grouped("e", ("x",))
    >>> g.values, g.decode("b"), g.decode("c")
    (['a', 'b'], [{'x': 1}], [])
    """

    def __init__(self, lines, key: str, decoder: msgspec.json.Decoder):
        self._decode = decoder.decode
        keys = _projection((key,)).decode
        self._lines: dict = {}
        with _no_gc():
            for line in lines:
                self._lines.setdefault(keys(line).get(key), []).append(line)
        self.values = sorted(self._lines)

    def decode(self, value) -> list[dict]:
        """The records whose field equals ``value``, in file order ([] for none)."""
        decode = self._decode
        with _no_gc():
            return [decode(line) for line in self._lines.get(value, ())]

    def pop(self, value) -> list[dict]:
        """:meth:`decode`, dropping the group's text (a last read)."""
        out = self.decode(value)
        self._lines.pop(value, None)
        return out


#: Decompressed bytes per slice when a file is read line by line.
_SLICE = 1 << 20


def _iter_lines(rel: str, raw: bytes, entry: dict):
    """The record lines of a verified file (each without its newline), decompressed a
    slice at a time: the whole text is never held, nor joined from its slices."""
    if not rel.endswith(".gz"):
        yield from raw.splitlines()
        return
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    carry, data = b"", raw
    while not d.eof:
        try:
            chunk = d.decompress(data, _SLICE)
        except zlib.error as exc:
            raise IntegrityError(rel, f"not a valid gzip stream ({exc})") from None
        data = d.unconsumed_tail
        if not chunk and not data:
            raise IntegrityError(rel, "gzip stream is truncated")
        lines = (carry + chunk if carry else chunk).split(b"\n")
        carry = lines.pop()
        yield from lines
    if carry:
        yield carry


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


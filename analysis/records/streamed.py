"""Streaming verification: the records of a verified file kept as the verified bytes and
decoded again on demand (:class:`StreamedRecords`, docs/ARCHITECTURE.md section 7), and
the second process that verifies half of the streamed files
(:class:`analysis._fs.fork.ForkWorker`).
"""
from __future__ import annotations

import functools
import gc
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
            yield value, groups.decode(value)

    def grouped(self, key: str, fields: tuple[str, ...] | None = None) -> "GroupedRecords":
        """The records grouped by the value of their top-level field ``key``, each group
        decoded on demand (:class:`GroupedRecords`). The file is decompressed once, and
        a first pass decodes only ``key``."""
        return GroupedRecords(_content(self.rel, self._raw, self._entry), key,
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
    """The records of one decompressed, verified file grouped by a top-level field:
    :attr:`values` (sorted) and :meth:`decode` of one group, in file order. Holds the
    file's text, never its decoded records.

    >>> from analysis.records.io import encode_records
    >>> raw = encode_records("f.jsonl.gz", [{"e": "b", "x": 1}, {"e": "a", "x": 2}])
    >>> g = StreamedRecords("f.jsonl.gz", {"record_type": "group_record",
    ...                     "decompressed_size": 32}, raw, 2).grouped("e", ("x",))
    >>> g.values, g.decode("b"), g.decode("c")
    (['a', 'b'], [{'x': 1}], [])
    """

    def __init__(self, content: bytes, key: str, decoder: msgspec.json.Decoder):
        self._view, self._decode = memoryview(content), decoder.decode
        keys = _projection((key,)).decode
        self._where: dict = {}
        start, end = 0, len(content)
        with _no_gc():
            while start < end:  # line by line: no second copy of the content
                stop = content.index(b"\n", start)
                value = keys(self._view[start:stop]).get(key)
                self._where.setdefault(value, []).append((start, stop))
                start = stop + 1
        self.values = sorted(self._where)

    def decode(self, value) -> list[dict]:
        """The records whose field equals ``value``, in file order ([] for none)."""
        view, decode = self._view, self._decode
        with _no_gc():
            return [decode(view[a:b]) for a, b in self._where.get(value, ())]


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


"""Verification of a frozen export against its manifest (docs/FORMAT.md, "MANIFEST.json").

Every failure raises :class:`IntegrityError` whose message names the file, the record
(line and ID) where one is involved, and what differs. The order of the checks is the
order of trust:

1. the manifest (:mod:`.check_manifest`): canonical bytes, its schema, a known
   ``format_version``, and paths that are normalised relative POSIX paths inside the
   export;
2. the folder (:mod:`.check_tree`): every file on disk is a regular file (no symbolic
   link, no unreadable folder) listed exactly once, and every listed file exists;
3. each file (:mod:`.check_files`) is hashed (SHA-256, size) *before* anything is
   decompressed or parsed; ``.gz`` files decompress to at most the manifest's
   ``decompressed_size``;
4. each line is decoded by the typed decoder of its record type (the JSON Schema
   documents, :mod:`analysis.records.schemas`), must equal its canonical serialization
   (which also rules out duplicate keys, a BOM, CRLF, other whitespace or key order)
   and the record hash the manifest lists; IDs are unique;
5. cross-file checks (:mod:`.check_cross_file`): suites name known tasks, runs belong
   to this cohort and cover every task and group of their suite exactly, and each run
   record matches the cohort (episode IDs, a task's condition IDs equal its contract's,
   ``completed`` equals "every group of the task recorded ``completed``").

Files of group records are streamed (:mod:`.streamed`: kept as the verified bytes and
decoded again on demand), and with ``workers=2`` half of them are verified in a second
process; this module orders the layers and reports the first failure in path order.

Outcomes themselves (group status, truths) are derived by re-execution
(:mod:`analysis.executor.replay`), not here.
"""
from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .._fs.fork import ForkWorker
# the trust layers, in the order of trust (this module's docstring)
from .check_cross_file import _check_cross_file
from .check_files import _SLACK, _verify_file
from .check_manifest import _read_manifest, check_relpath
from .check_tree import _empty_folders, _files_on_disk, _read_regular
from .integrity_error import IntegrityError
from .streamed import StreamedRecords, _no_gc

__all__ = ["IntegrityError", "VerificationReport", "StreamedRecords", "verify", "verify_records",
           "check_relpath"]


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

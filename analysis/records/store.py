"""The export store: the one path by which anything is written to an export (issue 36,
"One export store"; the frozen records of the paper's appendix A.3).

Every writer of an export (``compile``, ``run``, ``add_planner``, a sharded run's
registration, ``verify copy_to=``, the LLM subset tool) goes through
:class:`ExportStore`:

* :meth:`ExportStore.lock`: the writers' lock of the export (:mod:`analysis._fs.locking`);
* :meth:`ExportStore.recover`: roll back or complete a change a kill interrupted;
* :meth:`ExportStore.transaction`: a journaled change as a context manager
  (:mod:`analysis._fs.transaction`): folders staged, the new manifest staged last, all
  switched in at the end of the ``with`` block, or nothing on an exception;
* the operations :meth:`~ExportStore.replace_cohort`, :meth:`~ExportStore.put_run`,
  :meth:`~ExportStore.remove_runs` (each one transaction), :meth:`~ExportStore.copy_to`
  and :meth:`~ExportStore.subset` (a new export, built beside its destination, verified,
  then renamed into place).

The manifest changes themselves are the pure functions of
:mod:`analysis.records.manifest` (``with_cohort``, ``with_run``, ``without_runs``,
``with_files``): what a writer stages is what they return.

>>> store = ExportStore(example_export())
>>> store.put_run("r__planner__persistent", {"run.json": b'{"a":1}\\n',
...               "groups.jsonl.gz": encode_records("g.gz", []), "tasks.jsonl": b""})
28
>>> sorted(store.manifest()["files"])
['cohort/rules.json', 'runs/r__planner__persistent/groups.jsonl.gz', 'runs/r__planner__persistent/run.json', 'runs/r__planner__persistent/tasks.jsonl']
>>> store.remove_runs(["r__planner__persistent"])["files"].keys()
dict_keys(['cohort/rules.json'])
"""
from __future__ import annotations

import glob
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterable, Iterator, Mapping

from .._fs.errors import UserError
from .._fs.locking import export_lock
from .._fs.transaction import (OWNER, Transaction, _alive, export_txn_dir, recover_export,
                               write_point)
from . import manifest as _manifest
from .io import atomic_write_bytes, encode_records
from .manifest import (MANIFEST_NAME, RUN_FILES, cohort_fingerprint, empty_manifest,
                       file_entry, read_manifest, with_cohort, with_files, with_run,
                       without_runs)
from .run_names import check_run_absent

__all__ = ["ExportStore", "StoreTransaction", "example_export", "RUN_FILES"]


def example_export(root: str | os.PathLike | None = None) -> Path:
    """A tiny export for the examples: one cohort file (``cohort/rules.json``) and its
    manifest, in a new temporary folder unless ``root`` is given; returns its path. (It
    does not verify: a real export has every cohort file.)

    >>> sorted(read_manifest(example_export())["files"])
    ['cohort/rules.json']
    """
    root = Path(tempfile.mkdtemp()) / "export" if root is None else Path(root)
    atomic_write_bytes(root / "cohort" / "rules.json", encode_records("rules.json", [{}]))
    _manifest.update_manifest(root, {"cohort/rules.json": "rules"})
    return root


class StoreTransaction:
    """One journaled change of an export, made by :meth:`ExportStore.transaction`.

    Stage folders (:meth:`put_tree`) and removals (:meth:`remove`), then give the new
    manifest (:meth:`set_manifest`, usually a pure function of :attr:`manifest`, the
    current one); the ``with`` block's end stages it and switches everything in.
    """

    def __init__(self, store: "ExportStore", command: str):
        self.store = store
        self.manifest = store.manifest()
        self._txn = Transaction(store.root, store.txn_dir, command)
        self._new: dict | None = None

    def put_tree(self, rel: str, files: Mapping[str, bytes]) -> None:
        """Stage the folder ``rel`` holding exactly ``files`` (name -> bytes)."""
        self._txn.stage_tree(rel, dict(files))

    def remove(self, rel: str) -> None:
        """Delete ``rel`` (a file or a folder) as part of the switch."""
        self._txn.remove(rel)

    def entries(self, rel: str, record_types: Mapping[str, str]) -> dict[str, dict]:
        """The manifest entries (``{name: entry}``) of the staged files ``rel/<name>``."""
        return {name: file_entry(self._txn.stage / rel / name, rtype)
                for name, rtype in record_types.items()}

    def set_manifest(self, manifest: dict) -> None:
        """The manifest the export has after the switch."""
        self._new = manifest


class ExportStore:
    """The export at ``root``, and every way to change it (see the module docstring).

    The operations do not take the lock themselves: a command holds :meth:`lock` around
    its whole read-check-write sequence, so that no other writer changes the export in
    between (the lock is re-entrant within a process).
    """

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)

    def __repr__(self) -> str:
        return f"ExportStore({str(self.root)!r})"

    @property
    def txn_dir(self) -> Path:
        """The export's transaction folder (beside it, never inside)."""
        return export_txn_dir(self.root)

    def lock(self, say: Callable[[str], None] | None = None, wait: bool = True):
        """The writers' lock of the export, a context manager (``with store.lock():``)."""
        return export_lock(self.root, wait=wait, say=say)

    def recover(self, say: Callable[[str], None]) -> None:
        """Roll back or complete an interrupted change of the export and ``say`` which
        (:func:`analysis._fs.transaction.recover_export`); nothing when there is none.

        >>> ExportStore(example_export()).recover(print)
        """
        recover_export(self.root, say)

    def manifest(self) -> dict:
        """The export's manifest as it is now (an empty one when it has none)."""
        return read_manifest(self.root)

    @contextmanager
    def transaction(self, command: str,
                    check: Callable[[], None] | None = None) -> Iterator[StoreTransaction]:
        """A journaled change named ``command``: what the ``with`` block stages is
        switched in when it ends (``check`` then runs on the switched export before the
        commit point; an exception from it rolls everything back); an exception inside
        the block discards the staging and leaves the export as it was.

        >>> store = ExportStore(example_export())
        >>> with store.transaction("example") as txn:
        ...     txn.put_tree("runs/a__b__c", {"run.json": b"{}\\n"})
        ...     txn.set_manifest(txn.manifest)
        >>> (store.root / "runs/a__b__c/run.json").read_bytes()
        b'{}\\n'
        """
        txn = StoreTransaction(self, command)
        try:
            yield txn
        except BaseException:
            txn._txn.abort()
            raise
        try:
            if txn._new is not None:
                new = txn._new
                txn._txn.stage_with(MANIFEST_NAME,
                                    lambda path: _manifest.write_manifest(path.parent, new))
        except BaseException:
            txn._txn.abort()
            raise
        txn._txn.commit(check)  # rolls back by itself on a failure

    def replace_cohort(self, files: Mapping[str, bytes], record_types: Mapping[str, str],
                       drop_runs: Iterable[str] = (), command: str = "analysis.compile",
                       check: Callable[[], None] | None = None) -> dict:
        """Replace ``cohort/`` by ``files`` (name -> bytes; ``record_types``: name ->
        record type) and remove the runs ``drop_runs``, with the manifest, in one
        transaction; returns the new manifest.

        >>> store = ExportStore(example_export())
        >>> new = store.replace_cohort({"rules.json": b'{"x":1}\\n'}, {"rules.json": "rules"})
        >>> new["files"]["cohort/rules.json"]["size"]
        8
        """
        drop_runs = list(drop_runs)
        with self.transaction(command, check) as txn:
            txn.put_tree("cohort", files)
            for rid in drop_runs:
                txn.remove(f"runs/{rid}")
            entries = {f"cohort/{name}": e for name, e in txn.entries("cohort",
                                                                      record_types).items()}
            new = with_cohort(txn.manifest, entries, drop_runs)
            txn.set_manifest(new)
        return new

    def put_run(self, run_id: str, files: Mapping[str, bytes], overwrite: bool = False,
                meta: Mapping | None = None, command: str = "analysis.run",
                check: Callable[[], None] | None = None) -> int:
        """Add (or with ``overwrite`` replace) ``runs/<run_id>`` holding ``files`` (the
        three run files, name -> bytes) and its manifest entries (``meta``: the run's
        metadata in the manifest) in one transaction; returns the bytes written.
        Without ``overwrite`` an existing run is refused
        (:class:`~analysis.records.run_names.RunExists`, nothing written)."""
        if not overwrite:
            check_run_absent(self.root, run_id)
        with self.transaction(command, check) as txn:
            txn.put_tree(f"runs/{run_id}", files)
            txn.set_manifest(with_run(txn.manifest, run_id,
                                      txn.entries(f"runs/{run_id}", RUN_FILES), meta))
        return sum(len(b) for b in files.values())

    def remove_runs(self, run_ids: Iterable[str], command: str = "analysis.remove_runs",
                    check: Callable[[], None] | None = None) -> dict:
        """Remove the runs ``run_ids`` (folders, manifest entries and metadata) in one
        transaction; returns the new manifest. A run the export does not hold is
        refused (``ValueError`` naming it; nothing changed)."""
        run_ids = list(run_ids)
        manifest = self.manifest()
        held = manifest.get("runs", {}).keys() | {
            rel.split("/")[1] for rel in manifest.get("files", {}) if rel.startswith("runs/")}
        missing = sorted(set(run_ids) - held)
        if missing:
            raise ValueError(f"run_ids: {missing} not in {self.root} (runs: {sorted(held)}); "
                             "nothing changed")
        with self.transaction(command, check) as txn:
            for rid in run_ids:
                txn.remove(f"runs/{rid}")
            new = without_runs(txn.manifest, run_ids)
            txn.set_manifest(new)
        return new

    def copy_to(self, dest: str | os.PathLike, say: Callable[[str], None],
                check: Callable[[Path], object] | None = None) -> Path:
        """Copy the export to ``dest`` (absent or an empty folder) atomically: copied
        into a temporary folder beside ``dest``, checked there (``check(path)``, by
        default the full verification), then renamed into place. A non-empty ``dest``
        is refused (:class:`~analysis._fs.errors.UserError`, nothing copied), and so is
        a copy that does not verify.

        >>> store = ExportStore(example_export())
        >>> store.copy_to(store.root, print)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        analysis._fs.errors.UserError: copy_to=...: exists and is not an empty folder; choose a new folder (nothing copied)
        """
        from .integrity import IntegrityError, verify
        check = check or verify
        src, dest = self.root, Path(dest)
        if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
            raise UserError(f"copy_to={dest}: exists and is not an empty folder; choose a new "
                            "folder (nothing copied)")
        dest.parent.mkdir(parents=True, exist_ok=True)
        _remove_stale_copies(dest, say)
        tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.copy.", dir=dest.parent))
        try:
            (tmp / OWNER).write_text(str(os.getpid()))
            write_point(f"copy {src} to {tmp}")
            shutil.copytree(src, tmp / "export", symlinks=False)
            try:
                check(tmp / "export")
            except IntegrityError as exc:
                raise UserError(f"the copy does not verify, nothing copied: {exc}") from None
            if dest.exists():
                dest.rmdir()
            write_point(f"rename to {dest}")
            (tmp / "export").rename(dest)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return dest

    def subset(self, dst: str | os.PathLike, suites: bytes,
               runs: Callable[[Path, str], Mapping[str, Mapping[str, bytes]]],
               check: Callable[[Path], object] | None = None) -> Path:
        """Write the new export ``dst`` (which must not exist): this export's cohort with
        ``cohort/suites.jsonl`` replaced by ``suites``, its ``ATTRIBUTION.md``, and the
        runs that ``runs(cohort_root, cohort_fingerprint)`` returns (``{run_id: {name:
        bytes}}``; called once the new cohort is staged at ``cohort_root``, so that it
        can re-execute against it). The export is built in a temporary folder beside
        ``dst``, checked (``check(path)``, by default the full verification) and renamed
        into place: an exception anywhere (``runs`` refusing a run included) leaves no
        ``dst``.

        >>> src = ExportStore(example_export())
        >>> dst = src.root.parent / "cut"
        >>> _ = src.subset(dst, b'{"suite":"s"}\\n', lambda root, fp: {}, check=lambda p: None)
        >>> sorted(read_manifest(dst)["files"])
        ['cohort/rules.json', 'cohort/suites.jsonl']
        """
        from .integrity import verify
        check = check or verify
        src, dst = self.root, Path(dst)
        manifest = self.manifest()
        dst.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{dst.name}.subset.", dir=dst.parent))
        try:
            out = tmp / "export"
            (out / "cohort").mkdir(parents=True)
            # every cohort file as it is (rules, episodes, tasks, audit, ...), the suites new
            cohort_files = {rel: e["record_type"] for rel, e in manifest["files"].items()
                            if rel.startswith("cohort/") and rel != "cohort/suites.jsonl"}
            for rel in cohort_files:
                shutil.copyfile(src / rel, out / rel)
            atomic_write_bytes(out / "cohort/suites.jsonl", suites)
            types = {**cohort_files, "cohort/suites.jsonl": "suite"}
            new = with_files(empty_manifest(), {rel: file_entry(out / rel, types[rel])
                                                for rel in sorted(types)})
            _manifest.write_manifest(out, new)
            attribution = src / "ATTRIBUTION.md"
            if attribution.is_file():
                shutil.copyfile(attribution, out / "ATTRIBUTION.md")
            entries = {}
            for rid, files in runs(out, cohort_fingerprint(new)).items():
                for name, data in files.items():
                    atomic_write_bytes(out / "runs" / rid / name, data)
                    entries[f"runs/{rid}/{name}"] = file_entry(out / "runs" / rid / name,
                                                               RUN_FILES[name])
            if entries:
                _manifest.write_manifest(out, with_files(new, entries))
            check(out)
            out.rename(dst)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return dst


def _remove_stale_copies(dest: Path, say: Callable[[str], None]) -> None:
    """Remove the staging folders that a killed earlier ``copy_to=dest`` left beside it
    (their owner process is gone), and say so."""
    for old in sorted(dest.parent.glob(f".{glob.escape(dest.name)}.copy.*")):
        if not old.is_dir() or old.is_symlink():
            continue
        try:
            pid = int((old / OWNER).read_text())
        except (OSError, ValueError):
            pid = None
        if pid is not None and _alive(pid):
            continue
        shutil.rmtree(old, ignore_errors=True)
        say(f"removed {old}: the staging of an interrupted copy_to={dest}")

"""Journaled, all-or-nothing changes of a folder (an export, or an output folder).

A command stages every new file or folder in a transaction folder, writes a journal of
the renames it will make, applies them (each old file moved to a backup first), and then
writes a ``COMMITTED`` marker. A ``kill -9`` at any instant therefore leaves one of:

* no transaction folder, or one without a journal: nothing was changed yet;
* a journal without the marker: :func:`recover` moves every backup back and removes
  what was moved in (roll back to the old state);
* a journal with the marker: every rename is done; :func:`recover` only deletes the
  backups (roll forward to the new state).

The transaction folder is removed by renaming it to ``<name>.done`` first, so that a kill
during the removal can never leave a journal whose backups are half deleted.
Every command calls :func:`recover` before it reads the folder and prints what it did.

Test hook: ``E2W_KILL_AT_WRITE=N`` makes the process SIGKILL itself just before its Nth
change on disk (:func:`write_point`), and ``E2W_WRITE_LOG=FILE`` appends one line per
change, so a test can count the change points and kill at each.

>>> import tempfile, pathlib
>>> root = pathlib.Path(tempfile.mkdtemp())
>>> (root / "a.txt").write_text("old") and None
>>> t = Transaction(root, root / ".txn", "example")
>>> t.stage_bytes("a.txt", b"new")
>>> t.commit()
>>> (root / "a.txt").read_text(), (root / ".txn").exists()
('new', False)
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
from pathlib import Path
from typing import Callable

__all__ = ["Transaction", "TransactionBusy", "recover", "write_point", "KILL_ENV",
           "LOG_ENV", "export_txn_dir", "recover_export"]

KILL_ENV = "E2W_KILL_AT_WRITE"
LOG_ENV = "E2W_WRITE_LOG"
JOURNAL = "journal.json"
COMMITTED = "COMMITTED"
OWNER = "owner.pid"

_writes = 0


def write_point(label: str) -> None:
    """Called just before every change on disk that a transaction makes (test hook)."""
    global _writes
    _writes += 1
    log = os.environ.get(LOG_ENV)
    if log:
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(f"{_writes} {label}\n")
    kill = os.environ.get(KILL_ENV)
    if kill and kill.isdigit() and int(kill) == _writes:
        os.kill(os.getpid(), signal.SIGKILL)


class TransactionBusy(RuntimeError):
    """Another live process holds the transaction folder."""


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write_file(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_tree(txn_dir: Path) -> None:
    """Rename to ``<name>.done`` (atomic), then delete: a kill mid-way leaves only trash."""
    done = txn_dir.with_name(txn_dir.name + ".done")
    if txn_dir.exists():
        write_point(f"retire {txn_dir.name}")
        if done.exists():
            shutil.rmtree(done)
        os.rename(txn_dir, done)
    if done.exists():
        shutil.rmtree(done)


def recover(root: str | os.PathLike, txn_dir: str | os.PathLike) -> str | None:
    """Finish whatever an interrupted transaction left; return what was done, or None.

    Raises :class:`TransactionBusy` when a live process owns the transaction folder.
    """
    root, txn_dir = Path(root), Path(txn_dir)
    done = txn_dir.with_name(txn_dir.name + ".done")
    msg = None
    if txn_dir.exists():
        try:
            pid = int((txn_dir / OWNER).read_text())
        except (OSError, ValueError):
            pid = None
        if pid is not None and pid != os.getpid() and _alive(pid):
            raise TransactionBusy(f"{txn_dir}: another process (pid {pid}) is changing "
                                  f"{root}; wait for it to finish")
        journal_path = txn_dir / JOURNAL
        if not journal_path.exists():
            msg = (f"removed the staging of an interrupted {_command(txn_dir)} "
                   f"({txn_dir.name}); nothing of {root} had been changed")
        else:
            journal = json.loads(journal_path.read_text(encoding="utf-8"))
            if (txn_dir / COMMITTED).exists():
                msg = (f"completed an interrupted {journal['command']}: its changes to "
                       f"{root} were all made; removed its backups ({txn_dir.name})")
            else:
                n = _rollback(root, txn_dir, journal)
                msg = (f"rolled back an interrupted {journal['command']}: {n} change(s) to "
                       f"{root} undone, the previous state restored")
        _remove_tree(txn_dir)
    elif done.exists():
        shutil.rmtree(done)
        msg = f"removed the leftover {done.name} of a finished transaction"
    return msg


def _command(txn_dir: Path) -> str:
    try:
        return (txn_dir / "command").read_text(encoding="utf-8").strip() or "command"
    except OSError:
        return "command"


def _rollback(root: Path, txn_dir: Path, journal: dict) -> int:
    trash = txn_dir / "trash"
    undone = 0
    for i, op in reversed(list(enumerate(journal["ops"]))):
        target = root / op["target"]
        backup = txn_dir / "backup" / op["target"]
        staged = txn_dir / "stage" / op["staged"] if op["staged"] else None
        if os.path.lexists(backup):
            if os.path.lexists(target):
                trash.mkdir(exist_ok=True)
                write_point(f"rollback: discard new {op['target']}")
                os.rename(target, trash / str(i))
            write_point(f"rollback: restore {op['target']}")
            os.rename(backup, target)
            undone += 1
        elif (not op["existed"] and staged is not None and not os.path.lexists(staged)
              and os.path.lexists(target)):
            trash.mkdir(exist_ok=True)
            write_point(f"rollback: remove new {op['target']}")
            os.rename(target, trash / str(i))
            undone += 1
    _fsync_dir(root)
    return undone


class Transaction:
    """Stage files and folders, then switch ``root`` to them in one journaled step.

    ``txn_dir`` must be on the same file system as ``root`` (renames only) and is not
    part of what ``root`` holds. Paths are relative POSIX paths under ``root``.
    """

    def __init__(self, root: str | os.PathLike, txn_dir: str | os.PathLike, command: str):
        self.root, self.txn_dir, self.command = Path(root), Path(txn_dir), command
        self._ops: list[dict] = []
        self._started = False

    def _start(self) -> None:
        if self._started:
            return
        write_point(f"create {self.txn_dir.name}")
        self.txn_dir.mkdir(parents=True)
        (self.txn_dir / OWNER).write_text(str(os.getpid()))
        (self.txn_dir / "command").write_text(self.command)
        self._started = True

    @property
    def stage(self) -> Path:
        return self.txn_dir / "stage"

    def stage_bytes(self, rel: str, data: bytes) -> None:
        """Stage ``data`` as the new content of ``root/rel``."""
        self._start()
        write_point(f"stage {rel}")
        _write_file(self.stage / rel, data)
        self._ops.append({"target": rel, "staged": rel})

    def stage_tree(self, rel: str, files: dict[str, bytes]) -> None:
        """Stage a folder ``root/rel`` holding exactly ``files`` (name -> bytes); an
        existing folder there is replaced as a whole."""
        self._start()
        for name, data in sorted(files.items()):
            write_point(f"stage {rel}/{name}")
            _write_file(self.stage / rel / name, data)
        os.chmod(self.stage / rel, 0o755)
        self._ops.append({"target": rel, "staged": rel})

    def stage_with(self, rel: str, writer: Callable[[Path], None]) -> None:
        """Stage ``root/rel`` by calling ``writer(path)`` on its staging path."""
        self._start()
        write_point(f"stage {rel}")
        (self.stage / rel).parent.mkdir(parents=True, exist_ok=True)
        writer(self.stage / rel)
        self._ops.append({"target": rel, "staged": rel})

    def remove(self, rel: str) -> None:
        """Delete ``root/rel`` as part of the switch."""
        self._ops.append({"target": rel, "staged": None})

    def abort(self) -> None:
        """Discard the staging (nothing of ``root`` was changed yet)."""
        if self._started:
            _remove_tree(self.txn_dir)

    def commit(self, check: Callable[[], None] | None = None) -> None:
        """Apply every staged change; ``check`` runs on the switched ``root`` before the
        commit point, and an exception from it (or any failure) rolls everything back."""
        self._start()
        for op in self._ops:
            op["existed"] = os.path.lexists(self.root / op["target"])
        journal = {"command": self.command, "ops": self._ops}
        write_point("journal")
        tmp = self.txn_dir / (JOURNAL + ".tmp")
        _write_file(tmp, (json.dumps(journal, indent=1, sort_keys=True) + "\n").encode())
        os.rename(tmp, self.txn_dir / JOURNAL)
        _fsync_dir(self.txn_dir)
        try:
            for op in self._ops:
                target = self.root / op["target"]
                if op["existed"]:
                    backup = self.txn_dir / "backup" / op["target"]
                    backup.parent.mkdir(parents=True, exist_ok=True)
                    write_point(f"back up {op['target']}")
                    os.rename(target, backup)
                if op["staged"]:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    write_point(f"move in {op['target']}")
                    os.rename(self.stage / op["staged"], target)
            _fsync_dir(self.root)
            if check is not None:
                check()
            write_point("commit")
            _write_file(self.txn_dir / COMMITTED, b"")
            _fsync_dir(self.txn_dir)
        except BaseException:
            _rollback(self.root, self.txn_dir, journal)
            _remove_tree(self.txn_dir)
            raise
        _remove_tree(self.txn_dir)
        write_point("done")


def export_txn_dir(export_root: str | os.PathLike) -> Path:
    """An export's transaction folder: beside it (``.<name>.e2w_txn``), so that the
    export folder itself only ever holds what its manifest lists."""
    root = Path(export_root).resolve()
    return root.parent / f".{root.name}.e2w_txn"


#: Leftovers of the earlier, non-journaled writers: a temporary manifest and a run folder
#: staged inside ``runs/``. Never listed in a manifest (names start with a dot).
_OLD_LEFTOVERS = (re.compile(r"^\.MANIFEST\.json\..+\.tmp$"),
                  re.compile(r"^runs/\.[a-z0-9_-]+__[a-z0-9_-]+__[a-z]+\.[^/]+$"))


def recover_export(export_root: str | os.PathLike, say: Callable[[str], None]) -> None:
    """Roll back or complete an interrupted change of the export, and say which; also
    remove the temporary files an interrupted earlier version of the commands left."""
    root = Path(export_root)
    msg = recover(root, export_txn_dir(root))
    if msg:
        say(msg)
    candidates = list(root.glob(".MANIFEST.json.*.tmp")) + list(root.glob("runs/.*"))
    for path in sorted(candidates):
        rel = path.relative_to(root).as_posix()
        if any(p.match(rel) for p in _OLD_LEFTOVERS):
            write_point(f"remove leftover {rel}")
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
            say(f"removed {rel}, left in {root} by an interrupted earlier write")

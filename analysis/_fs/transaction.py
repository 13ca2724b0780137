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

The transaction folder, its journal and everything the journal names are state that
may have been edited or planted since: :func:`recover` checks the journal's schema, its
own SHA-256 (``journal_sha256``: a truncated or edited journal is caught), and that every
path it names stays inside ``root`` or the transaction folder without a symlink on the
way (:mod:`analysis._fs.confine`). A journal failing any check is refused with
:class:`JournalError` (one line naming it and how to clear it) and nothing is touched.
The owner of a transaction folder holds an ``flock`` on its ``owner.lock`` for the whole
transaction: the kernel drops it when the owner dies, so PID reuse cannot make a dead
owner look alive.

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

import fcntl
import hashlib
import json
import os
import re
import shutil
import signal
from pathlib import Path
from typing import Callable

from .confine import ConfinementError, confined_path, read_regular
from .errors import DiskError, JournalError, TransactionBusy, disk_error
from .locking import export_lock

__all__ = ["Transaction", "TransactionBusy", "JournalError", "recover", "write_point",
           "KILL_ENV", "LOG_ENV", "export_txn_dir", "recover_export"]

KILL_ENV = "E2W_KILL_AT_WRITE"
LOG_ENV = "E2W_WRITE_LOG"
JOURNAL = "journal.json"
COMMITTED = "COMMITTED"
OWNER = "owner.pid"
OWNER_LOCK = "owner.lock"

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


#: transaction folders this process owns (their ``owner.lock`` fds)
_owned: dict[str, int] = {}


def _journal_sha(journal: dict) -> str:
    body = {k: v for k, v in journal.items() if k != "journal_sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":"))
                          .encode()).hexdigest()


def _clear_hint(root: Path, txn_dir: Path) -> str:
    return (f"nothing was touched; to clear it, check {root} (python -m analysis.verify) "
            f"and remove {txn_dir} by hand")


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
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        raise disk_error(path, exc) from None


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (for ``verify copy_to``'s staging folders; a
    transaction folder's owner is decided by its ``owner.lock`` instead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _owner_alive(txn_dir: Path) -> bool:
    """Whether a live process holds ``txn_dir/owner.lock`` (an flock: released by the
    kernel when the owner dies, whatever its PID is reused for). A folder without the
    lock file (an older writer, or killed before it made it) has no live owner."""
    if str(txn_dir.resolve()) in _owned:
        return False
    path = txn_dir / OWNER_LOCK
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
    return False


def _check_journal(root: Path, txn_dir: Path, raw: bytes) -> dict:
    """The journal at ``txn_dir``, checked (schema, own hash, confinement)."""
    where = txn_dir / JOURNAL
    hint = _clear_hint(root, txn_dir)
    try:
        journal = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise JournalError(f"{where}: damaged journal (not JSON: {exc}); {hint}") from None
    if not isinstance(journal, dict) or not isinstance(journal.get("command"), str) \
            or not isinstance(journal.get("ops"), list):
        raise JournalError(f"{where}: not a journal (expected an object with 'command' and "
                           f"'ops'); {hint}")
    if journal.get("journal_sha256") != _journal_sha(journal):
        raise JournalError(f"{where}: journal_sha256 missing or not the journal's own hash "
                           f"(edited, truncated or planted); {hint}")
    for i, op in enumerate(journal["ops"]):
        if not (isinstance(op, dict) and set(op) == {"target", "staged", "existed"}
                and isinstance(op["existed"], bool)
                and (op["staged"] is None or isinstance(op["staged"], str))):
            raise JournalError(f"{where}: ops[{i}] is not {{target, staged, existed}}; {hint}")
        try:
            confined_path(root, op["target"], f"{where} ops[{i}].target")
            confined_path(txn_dir / "backup", op["target"], f"{where} ops[{i}].target")
            if op["staged"] is not None:
                confined_path(txn_dir / "stage", op["staged"], f"{where} ops[{i}].staged")
        except ConfinementError as exc:
            raise JournalError(f"{exc}; {hint}") from None
    return journal


def _remove_tree(txn_dir: Path) -> None:
    """Rename to ``<name>.done`` (atomic), then delete: a kill mid-way leaves only trash."""
    fd = _owned.pop(str(txn_dir.resolve()), None)
    done = txn_dir.with_name(txn_dir.name + ".done")
    try:
        if txn_dir.exists():
            write_point(f"retire {txn_dir.name}")
            if done.exists():
                shutil.rmtree(done)
            os.rename(txn_dir, done)
    finally:
        if fd is not None:
            os.close(fd)  # the owner lock, released once the folder is retired
    if done.exists():
        shutil.rmtree(done)


def recover(root: str | os.PathLike, txn_dir: str | os.PathLike) -> str | None:
    """Finish whatever an interrupted transaction left; return what was done, or None.

    Raises :class:`TransactionBusy` when a live process owns the transaction folder.
    """
    root, txn_dir = Path(root), Path(txn_dir)
    done = txn_dir.with_name(txn_dir.name + ".done")
    msg = None
    for d in (txn_dir, done):
        if d.is_symlink() or (d.exists() and not d.is_dir()):
            raise JournalError(f"{d}: a transaction folder that is a symlink or not a folder "
                               f"(planted); {_clear_hint(root, d)}")
    if txn_dir.exists():
        if _owner_alive(txn_dir):
            try:
                pid = _printable(read_regular(txn_dir / OWNER, limit=64).decode("ascii",
                                                                                "replace"))
            except (OSError, ValueError):
                pid = "?"
            raise TransactionBusy(
                f"{txn_dir}: a live process (pid {pid}) holds its owner.lock and is changing "
                f"{root}; wait for it to finish (the lock is released when it exits, so "
                "it cannot be stale)")
        journal_path = txn_dir / JOURNAL
        if not os.path.lexists(journal_path):
            msg = (f"removed the staging of an interrupted {_command(txn_dir)} "
                   f"({txn_dir.name}); nothing of {root} had been changed")
        else:
            try:
                raw = read_regular(journal_path, limit=64 << 20)
            except ConfinementError as exc:
                raise JournalError(f"{exc}; {_clear_hint(root, txn_dir)}") from None
            journal = _check_journal(root, txn_dir, raw)
            if (txn_dir / COMMITTED).exists():
                msg = (f"completed an interrupted {_printable(journal['command'])}: its "
                       f"changes to "
                       f"{root} were all made; removed its backups ({txn_dir.name})")
            else:
                n = _rollback(root, txn_dir, journal)
                msg = (f"rolled back an interrupted {_printable(journal['command'])}: "
                       f"{n} change(s) to "
                       f"{root} undone, the previous state restored")
        _remove_tree(txn_dir)
    elif done.exists():
        shutil.rmtree(done)
        msg = f"removed the leftover {done.name} of a finished transaction"
    return msg


def _printable(text: str) -> str:
    text = "".join(c if c.isprintable() else "?" for c in text.strip())[:80]
    return text or "command"


def _command(txn_dir: Path) -> str:
    try:  # never blocks on a planted FIFO
        return _printable(read_regular(txn_dir / "command", limit=4096).decode("utf-8",
                                                                               "replace"))
    except (OSError, ValueError):
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
        try:
            self.txn_dir.mkdir(parents=True)
        except FileExistsError:
            raise TransactionBusy(f"{self.txn_dir}: already exists (another process began a "
                                  "change at the same instant); rerun the command") from None
        except OSError as exc:
            raise disk_error(self.txn_dir, exc) from None
        try:
            fd = os.open(self.txn_dir / OWNER_LOCK, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            _owned[str(self.txn_dir.resolve())] = fd
            (self.txn_dir / OWNER).write_text(str(os.getpid()))
            (self.txn_dir / "command").write_text(self.command)
        except OSError as exc:
            # a full disk right after the folder was made: remove it now (left behind,
            # it would wait for the next command to clear it)
            fd = _owned.pop(str(self.txn_dir.resolve()), None)
            if fd is not None:
                os.close(fd)
            shutil.rmtree(self.txn_dir, ignore_errors=True)
            raise disk_error(self.txn_dir / OWNER, exc) from None
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
        try:
            (self.stage / rel).parent.mkdir(parents=True, exist_ok=True)
            writer(self.stage / rel)
        except DiskError:
            raise
        except OSError as exc:
            raise disk_error(self.stage / rel, exc) from None
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
        journal["journal_sha256"] = _journal_sha(journal)
        write_point("journal")
        tmp = self.txn_dir / (JOURNAL + ".tmp")
        try:
            _write_file(tmp, (json.dumps(journal, indent=1, sort_keys=True) + "\n").encode())
            os.rename(tmp, self.txn_dir / JOURNAL)
        except BaseException:
            self.abort()  # nothing of root was changed yet
            raise
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
    txn = export_txn_dir(root)
    if os.path.lexists(txn) or os.path.lexists(txn.with_name(txn.name + ".done")):
        # under the writers' lock (re-entrant): a reader such as verify never races a
        # writer that is creating its transaction folder; only taken when there is
        # something to recover, so that verifying creates no lock file
        with export_lock(root, say=say):
            msg = recover(root, txn)
    else:
        msg = None
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

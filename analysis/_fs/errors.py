"""The package's own errors, in one module that imports nothing from the package: a
fault on our side of the planner boundary (:class:`LocalFault`: confinement, disk,
journal, lock, transaction) and a command's refusal (:class:`UserError`).

Every other module raises these; the commands turn each into one line naming the file,
record or key (docs/ARCHITECTURE.md, "Errors").

>>> str(disk_error("/tmp/x", OSError(28, "No space left on device")))
'cannot write /tmp/x: No space left on device; nothing was changed'
"""
from __future__ import annotations

import errno

__all__ = ["LocalFault", "ConfinementError", "DiskError", "local_fault", "disk_error",
           "LockBusy", "TransactionBusy", "JournalError", "UserError"]


class LocalFault(Exception):
    """A fault on our side of the planner boundary (confinement, I/O, the rate limiter,
    the cache, the journal): it stops the run unregistered and is never scored as the
    planner's failure, whatever the class of the error that caused it (the runtime
    re-raises every subclass; :func:`local_fault` wraps any other exception)."""


class ConfinementError(LocalFault, ValueError):
    """A path read from a command's own state leaves its folder, or is not a regular
    file; nothing was touched."""


def local_fault(exc: BaseException, where: str) -> LocalFault:
    """``exc`` as a :class:`LocalFault` (itself when it already is one) naming ``where``.

    >>> str(local_fault(KeyError("x"), "the rate limiter"))
    "the rate limiter failed (KeyError: 'x'); the run stops (a local fault, not a planner failure)"
    """
    if isinstance(exc, LocalFault):
        return exc
    return LocalFault(f"{where} failed ({type(exc).__name__}: {exc}); the run stops (a local "
                      "fault, not a planner failure)")


class DiskError(LocalFault, OSError):
    """A local write failed (disk full, file size limit, permissions): names the file."""

    def __str__(self) -> str:
        return self.strerror or super().__str__()


def disk_error(path, exc: OSError, changed: str = "nothing was changed") -> DiskError:
    """A :class:`DiskError` naming ``path`` (what was being written) and what changed."""
    why = exc.strerror or str(exc)
    if exc.errno == errno.EFBIG:
        why = "file too large (a file size limit)"
    err = DiskError(exc.errno, f"cannot write {path}: {why}; {changed}")
    err.filename = str(path)
    return err


class LockBusy(RuntimeError):
    """The lock is held by a live process and the caller chose not to wait."""


class TransactionBusy(RuntimeError):
    """Another live process holds the transaction folder."""


class JournalError(ValueError):
    """A transaction folder's journal is damaged, planted or names a path outside its
    root: refused, nothing touched."""


class UserError(Exception):
    """A refusal during the work; ``str`` is the one-line message (exit code 1)."""

"""The one fork worker of the package: a forked process that computes one answer and
sends it back through a pipe (docs/ARCHITECTURE.md, "Layers"; docs/performance.md: the
second core verifies half of an export, or draws the figures while the tables are built).

The child inherits everything the parent imported and computed (no pickling of the
work, no new interpreter); only the answer, and an optional request sent after the
fork, cross the pipes. Ctrl-C is the parent's to handle: SIGINT stays blocked across the
fork so that none reaches the child before it ignores it, and the parent kills a child
whose answer it no longer wants. Where ``os.fork`` does not exist, :meth:`ForkWorker.start`
returns None and the caller does the work itself.

>>> w = ForkWorker.start(lambda: sum(range(10)), name="adding process")
>>> w.collect()
45
>>> w = ForkWorker.start(lambda xs: max(xs), name="max process", takes_request=True)
>>> w.submit([3, 9, 4]); w.collect()
9
"""
from __future__ import annotations

import os
import pickle
import signal
import threading
from typing import Callable

__all__ = ["ForkWorker"]


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _read_all(fd: int) -> bytes:
    chunks = []
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _child(work: Callable, prepare: Callable | None, request_fd: int | None,
           answer_fd: int) -> None:
    """Prepare, wait for the request if any (EOF: the parent gave up), work, answer
    ``("ok", value)`` or ``("error", exception)``. Never returns."""
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        try:
            if prepare is not None:
                prepare()
            if request_fd is None:
                value = work()
            else:
                request = _read_all(request_fd)
                if not request:
                    os._exit(0)
                value = work(pickle.loads(request))
            payload = pickle.dumps(("ok", value), protocol=pickle.HIGHEST_PROTOCOL)
        except BaseException as exc:  # noqa: BLE001 - handed to the parent
            try:
                payload = pickle.dumps(("error", exc))
            except Exception:  # noqa: BLE001 - an exception that does not pickle
                payload = pickle.dumps(("error", RuntimeError(f"{type(exc).__name__}: {exc}")))
        _write_all(answer_fd, payload)
    except BaseException:  # noqa: BLE001 - the parent reports the missing answer
        code = 1
    finally:
        os._exit(code)


class ForkWorker:
    """A forked process: :meth:`start`, then (with ``takes_request``) :meth:`submit`
    once, then :meth:`collect` once; or :meth:`close` to dismiss it (always safe)."""

    def __init__(self, pid: int, request_fd: int | None, answer_fd: int, name: str):
        self.pid, self.name = pid, name
        self._request_fd, self._answer_fd = request_fd, answer_fd
        self._sender: threading.Thread | None = None
        self._collected = False

    @classmethod
    def start(cls, work: Callable, *, name: str, prepare: Callable | None = None,
              takes_request: bool = False) -> ForkWorker | None:
        """Fork a process that runs ``prepare()`` then ``work()`` (or, with
        ``takes_request``, ``work(request)`` once :meth:`submit` sent it). ``name``
        (e.g. ``"figure process"``) names it in errors. None where ``os.fork`` does not
        exist."""
        if not hasattr(os, "fork"):
            return None
        ans_r, ans_w = os.pipe()
        req_r, req_w = os.pipe() if takes_request else (None, None)
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            pid = os.fork()
        except BaseException:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
            for fd in (ans_r, ans_w, req_r, req_w):
                if fd is not None:
                    os.close(fd)
            raise
        if pid == 0:
            os.close(ans_r)
            if req_w is not None:
                os.close(req_w)
            _child(work, prepare, req_r, ans_w)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        os.close(ans_w)
        if req_r is not None:
            os.close(req_r)
        return cls(pid, req_w, ans_r, name)

    def submit(self, request) -> None:
        """Send the request; returns at once (a thread writes it while the child may
        still be preparing, so the pipe never stalls the parent)."""
        data = pickle.dumps(request, protocol=pickle.HIGHEST_PROTOCOL)
        fd = self._request_fd
        self._request_fd = None

        def send():
            try:
                _write_all(fd, data)
            except OSError:
                pass  # the child ended early: its answer says why
            finally:
                os.close(fd)

        self._sender = threading.Thread(target=send, name=f"{self.name} request",
                                        daemon=True)
        self._sender.start()

    def collect(self):
        """The child's answer; raises what the work raised, or ``RuntimeError`` when the
        child ended without a whole answer."""
        try:
            payload = _read_all(self._answer_fd)
            self._collected = True
        finally:
            self.close()
        if not payload:
            raise RuntimeError(f"the {self.name} ended without an answer")
        try:
            kind, value = pickle.loads(payload)
        except (pickle.UnpicklingError, EOFError, ValueError):
            raise RuntimeError(f"the {self.name} ended before its whole answer was "
                               "written") from None
        if kind == "error":
            raise value
        return value

    def close(self) -> None:
        """Dismiss the child and reap it: one whose answer was not read is killed (it
        would otherwise finish its work first)."""
        if self.pid is not None and not self._collected:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self._request_fd is not None:
            os.close(self._request_fd)
            self._request_fd = None
        if self._sender is not None:
            self._sender.join()
            self._sender = None
        if self._answer_fd is not None:
            os.close(self._answer_fd)
            self._answer_fd = None
        if self.pid is not None:
            os.waitpid(self.pid, 0)
            self.pid = None

"""The figure process of ``python -m analysis.tables``.

Drawing the figures needs matplotlib, its PDF backend (which imports fontTools) and
the figure builders: about a second of imports, then about 0.8 s of drawing, and
nothing of it depends on the export. :meth:`FigureWorker.start` forks a process as the
command starts its work; it prepares matplotlib on the second core while the command
verifies the export, then draws every figure from the computed results
(:meth:`FigureWorker.submit`) while the command builds the tables. The figures only
read the results: the worker never sees the export.

The worker renders exactly what the command would render itself (same code, same
inputs, byte-identical files). Where ``os.fork`` does not exist, ``start`` returns
None and the caller draws in its own process.

>>> worker = FigureWorker.start()          # doctest: +SKIP
>>> worker.submit(results)                 # doctest: +SKIP
>>> figures = worker.collect()             # doctest: +SKIP
>>> figures["fig05_endpoints"][1].keys()   # doctest: +SKIP
dict_keys(['fig05_endpoints.data.csv', 'fig05_endpoints.png', 'fig05_endpoints.pdf'])
"""
from __future__ import annotations

import os
import pickle
import signal
import threading

__all__ = ["FigureWorker"]


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


def _prepare() -> None:
    """The imports the figures need (each would otherwise be paid on the first figure)."""
    import matplotlib
    matplotlib.use("Agg")  # never probe for a GUI backend
    import matplotlib.backends.backend_agg  # noqa: F401
    import matplotlib.backends.backend_pdf  # noqa: F401 - imports fontTools (the bulk)
    import matplotlib.figure  # noqa: F401

    from .. import report  # noqa: F401 - the builders, and the classes of the results


def draw_figures(results, export=None) -> dict:
    """``{name: (artefact, {filename: bytes})}`` for every figure of
    :data:`analysis.report.BUILDERS`, in paper order; the artefact is the
    :class:`~analysis.report.FigureOutput` without its matplotlib figure, or a
    :class:`~analysis.report.Skipped`."""
    import dataclasses

    from ..report import BUILDERS, Skip, Skipped, figure_style, render_figure
    out = {}
    for name, title, ref, build in BUILDERS:
        if not name.startswith("fig"):
            continue
        try:
            with figure_style():
                fo = build(export, results)
            out[name] = (dataclasses.replace(fo, figure=None), render_figure(fo))
        except Skip as exc:
            out[name] = (Skipped(name=name, title=title, paper_ref=ref, reason=str(exc)), {})
    return out


def _child(request_fd: int, answer_fd: int) -> None:
    """The worker: prepare, wait for the results (EOF: the command gave up), draw, answer.
    Never returns."""
    code = 0
    try:
        try:
            _prepare()
            request = _read_all(request_fd)
            if not request:
                os._exit(0)
            payload = pickle.dumps(("ok", draw_figures(pickle.loads(request))))
        except BaseException as exc:  # noqa: BLE001 - handed to the command
            try:
                payload = pickle.dumps(("error", exc))
            except Exception:  # noqa: BLE001 - an exception that does not pickle
                payload = pickle.dumps(("error", RuntimeError(f"{type(exc).__name__}: {exc}")))
        _write_all(answer_fd, payload)
    except BaseException:  # noqa: BLE001 - the command reports the missing answer
        code = 1
    finally:
        os._exit(code)


class FigureWorker:
    """A forked figure process: :meth:`start`, then :meth:`submit` once and
    :meth:`collect` once, or :meth:`close` to dismiss it (always safe to call)."""

    def __init__(self, pid: int, request_fd: int, answer_fd: int):
        self.pid, self._request_fd, self._answer_fd = pid, request_fd, answer_fd
        self._sender: threading.Thread | None = None

    @classmethod
    def start(cls) -> FigureWorker | None:
        """Fork the worker (None where ``os.fork`` does not exist)."""
        if not hasattr(os, "fork"):
            return None
        req_r, req_w = os.pipe()
        ans_r, ans_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(req_w)
            os.close(ans_r)
            _child(req_r, ans_w)
        os.close(req_r)
        os.close(ans_w)
        return cls(pid, req_w, ans_r)

    def submit(self, results) -> None:
        """Send the results; returns at once (a thread writes them while the worker may
        still be importing, so the pipe never stalls the command)."""
        data = pickle.dumps(results, protocol=pickle.HIGHEST_PROTOCOL)
        fd = self._request_fd
        self._request_fd = None

        def send():
            try:
                _write_all(fd, data)
            except OSError:
                pass  # the worker ended early: its answer says why
            finally:
                os.close(fd)

        self._sender = threading.Thread(target=send, name="figure-request", daemon=True)
        self._sender.start()

    def collect(self) -> dict:
        """The worker's figures (see :func:`draw_figures`); raises what a builder raised."""
        try:
            payload = _read_all(self._answer_fd)
        finally:
            self.close()
        if not payload:
            raise RuntimeError("the figure process ended without an answer")
        kind, value = pickle.loads(payload)
        if kind == "error":
            raise value
        return value

    def close(self) -> None:
        """Dismiss the worker and reap it. A worker that was sent nothing is killed (it
        writes nothing, and would otherwise finish its imports first)."""
        if self._request_fd is not None:
            os.close(self._request_fd)
            self._request_fd = None
            if self.pid is not None:
                try:
                    os.kill(self.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        if self._sender is not None:
            self._sender.join()
            self._sender = None
        if self._answer_fd is not None:
            os.close(self._answer_fd)
            self._answer_fd = None
        if self.pid is not None:
            os.waitpid(self.pid, 0)
            self.pid = None

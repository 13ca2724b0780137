"""Serving a built site on 127.0.0.1 (``python -m analysis.view serve=true``).

Only the loopback interface: the site holds the records, and nothing here is meant for
a network. ``port=0`` takes any free port; the URL is printed. The port is bound before
the site is built (:func:`bind`), so a port in use is said at once.

What is served is exactly the site: the files ``SITE.json`` lists, each read without
following a symlink (in the path or the file itself) and only while its SHA-256 is the
listed one; anything else is 404, a malformed path (``%00``, ``..``, a backslash, bad
percent-encoding) is 400, and there are no directory listings. A request whose ``Host``
is not ``127.0.0.1`` or ``localhost`` (DNS rebinding: a web page naming another host
that resolves here) is refused (400). Request lines are logged with control characters
escaped; at most :data:`MAX_THREADS` requests are handled at once, each connection
closed after one response or :data:`TIMEOUT_S` seconds of silence.

>>> serve("/tmp/e2w_site", port=0)  # doctest: +SKIP
serving /tmp/e2w_site at http://127.0.0.1:40123/index.html (Ctrl-C stops)
"""
from __future__ import annotations

import hashlib
import mimetypes
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

__all__ = ["serve", "bind", "HOST", "request_path", "escape_log", "MAX_THREADS", "TIMEOUT_S"]

HOST = "127.0.0.1"
#: Requests handled at once; the accept loop waits for a free one beyond that.
MAX_THREADS = 16
#: Seconds a connection may stay silent before it is closed.
TIMEOUT_S = 10.0
_HOSTS = ("127.0.0.1", "localhost")


class BadPath(ValueError):
    """A request path that is not a plain relative path of the site (answered 400)."""


def request_path(raw: str) -> str:
    """The site-relative file a request path names (``/`` is ``index.html``), or
    :class:`BadPath`: percent-decoding must be valid UTF-8, and the result a normalised
    relative path without NUL, control characters, backslash, ``.`` or ``..``.

    >>> request_path("/task/a%20b.html?x=1")
    'task/a b.html'
    >>> request_path("/%2e%2e/etc/passwd")
    Traceback (most recent call last):
    ...
    analysis.view.serve.BadPath: path '../etc/passwd' leaves the site (segment '..')
    """
    path = urlsplit(raw).path
    if not path.startswith("/"):
        raise BadPath(f"path {raw[:80]!r} does not start with '/'")
    try:
        rel = unquote(path[1:], errors="strict")
    except UnicodeDecodeError:
        raise BadPath("path is not valid UTF-8 once percent-decoded") from None
    if rel == "" or rel.endswith("/"):
        rel += "index.html"
    if any(not c.isprintable() for c in rel) or "\\" in rel:
        raise BadPath(f"path {escape_log(rel)[:80]!r} holds a control character or backslash")
    for seg in rel.split("/"):
        if seg in ("", ".", ".."):
            raise BadPath(f"path {rel[:80]!r} leaves the site (segment {seg!r})")
    return rel


def escape_log(text: str) -> str:
    """``text`` with every non-printable character written as ``\\xNN`` (a request line
    must not drive the terminal).

    >>> escape_log("GET /\\x1b[2J HTTP/1.1")
    'GET /\\\\x1b[2J HTTP/1.1'
    """
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" if ord(c) < 256
                   else f"\\u{ord(c):04x}" for c in text)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # one response per connection: no idle keep-alive threads
    timeout = TIMEOUT_S
    server_version = "analysis.view"
    sys_version = ""

    def log_message(self, fmt, *args):  # one line per request on stderr, escaped
        sys.stderr.write(f"[analysis.view] {escape_log(self.address_string())} "
                         f"{escape_log(fmt % args)}\n")

    def _host_ok(self) -> bool:
        host = (self.headers.get("Host") or "").strip().lower()
        name, sep, port = host.rpartition(":")
        if not sep:
            name, port = host, ""
        return name in _HOSTS and port in ("", str(self.server.server_address[1]))

    def _file(self) -> tuple[str, bytes] | None:
        try:
            rel = request_path(self.path)
        except BadPath as exc:
            self.send_error(400, "bad path", str(exc))
            return None
        site = self.server.site
        want = site.files.get(rel)
        if want is None:
            self.send_error(404, "not a file of the site")
            return None
        from .._fs.confine import ConfinementError, confined_path, read_regular
        try:
            data = read_regular(confined_path(site.root, rel, "SITE.json"), rel,
                                limit=site.limit)
        except (ConfinementError, OSError):
            self.send_error(404, "not a file of the site")
            return None
        if hashlib.sha256(data).hexdigest() != want:
            self.send_error(404, "changed since the site was built; rebuild it")
            return None
        return rel, data

    def _answer(self, body: bool) -> None:
        if not self._host_ok():
            self.send_error(400, "bad Host header (expected 127.0.0.1 or localhost)")
            return
        got = self._file()
        if got is None:
            return
        rel, data = got
        ctype = mimetypes.guess_type(rel)[0] or "application/octet-stream"
        if ctype.startswith("text/") or ctype in ("application/javascript", "application/json"):
            ctype += "; charset=utf-8"
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("X-Content-Type-Options", "nosniff")
        self.end_headers()
        if body:
            self.wfile.write(data)

    def do_GET(self):  # noqa: N802
        self._answer(True)

    def do_HEAD(self):  # noqa: N802
        self._answer(False)


class _Site:
    def __init__(self, root: Path, files: dict[str, str]):
        self.root = root
        self.files = files
        self.limit = 256 << 20


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    site: _Site | None = None

    def __init__(self, *a, **k):
        self._slots = threading.BoundedSemaphore(MAX_THREADS)
        super().__init__(*a, **k)

    def process_request(self, request, client_address):
        self._slots.acquire()  # bounded: the accept loop waits for a free handler
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def handle_error(self, request, client_address):
        pass  # a client that hangs up or times out: nothing to report


def bind(port: int = 8000) -> _Server:
    """The server bound to ``127.0.0.1:port`` (not yet serving): a port in use is a
    :class:`analysis._fs.errors.UserError` before any work."""
    try:
        return _Server((HOST, port), _Handler)
    except OSError as exc:
        from .._fs.errors import UserError
        raise UserError(f"port={port}: cannot serve on {HOST} ({exc.strerror}); choose "
                        "another port, or port=0 for any free one") from None
    except OverflowError:
        from .._fs.errors import UserError
        raise UserError(f"port={port}: expected 0 to 65535") from None


def serve(site_dir, port: int = 8000, server: _Server | None = None) -> int:
    """Serve the site in ``site_dir`` (the files its ``SITE.json`` lists) until
    interrupted, on ``server`` (from :func:`bind`) or a new one on ``port``; returns 0."""
    from .output import SiteDirError, read_site_manifest
    root = Path(site_dir)
    try:
        files = read_site_manifest(root)
    except SiteDirError as exc:
        if server is not None:
            server.server_close()
        from .._fs.errors import UserError
        raise UserError(f"{exc}; nothing served") from None
    server = server or bind(port)
    server.site = _Site(root, files)
    url = f"http://{HOST}:{server.server_address[1]}/index.html"
    print(f"serving {site_dir} at {url} (Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("stopped", flush=True)
    finally:
        server.server_close()
    return 0

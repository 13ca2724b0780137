"""Serving a built site on 127.0.0.1 (``python -m analysis.view serve=true``).

Only the loopback interface: the site holds the records, and nothing here is meant for
a network. ``port=0`` takes any free port; the URL is printed.

>>> serve("/tmp/e2w_site", port=0)  # doctest: +SKIP
serving /tmp/e2w_site at http://127.0.0.1:40123/index.html (Ctrl-C stops)
"""
from __future__ import annotations

import functools
import sys
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["serve", "HOST"]

HOST = "127.0.0.1"


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, fmt, *args):  # one line per request on stderr, as http.server
        sys.stderr.write(f"[analysis.view] {self.address_string()} {fmt % args}\n")


def serve(site_dir, port: int = 8000) -> int:
    """Serve ``site_dir`` until interrupted; returns 0."""
    handler = functools.partial(_Quiet, directory=str(site_dir))
    try:
        server = ThreadingHTTPServer((HOST, port), handler)
    except OSError as exc:
        from .._hydra import UserError
        raise UserError(f"port={port}: cannot serve on {HOST} ({exc.strerror}); choose "
                        "another port, or port=0 for any free one") from None
    url = f"http://{HOST}:{server.server_address[1]}/index.html"
    print(f"serving {site_dir} at {url} (Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("stopped", flush=True)
    finally:
        server.server_close()
    return 0

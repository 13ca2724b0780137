"""A loopback OpenAI-compatible chat server that misbehaves on purpose (for tests).

It answers ``POST /v1/chat/completions`` on 127.0.0.1 (random port) with a deterministic
plan derived from the request: with a typed ``response_format`` schema, the first action
alternative with the first allowed ID of each argument; otherwise the first action hint
of the prompt applied to the group's objects (so a plain-text planner gets a mix of
accepted and rejected actions). ``usage`` counts are word pieces of the prompt and reply.

Faults are decided by ``fault(body, attempt)`` -> ``None`` or one of :data:`FAULTS`
(``body``: the request JSON), where ``attempt`` counts earlier requests with the same body: a fault
plan depends on the request, not on arrival order, so runs with several threads meet the
same faults as serial runs. Every request is counted (``server.requests``) and its
``Authorization`` header kept (``server.auth``) so tests can check key handling.

``reply(body) -> str`` gives the reply content (default :func:`reply_for`); a test that
only needs a model to answer, not a mix of accepted and rejected actions, passes
:func:`empty_plan`: every group then ends after one call instead of up to
``max_planner_calls`` (tests/test_documented_commands.py).

``GET /v1/models`` (the runs' preflight, :mod:`.preflight`) lists ``models`` when given
(``server.model_requests`` counts these requests apart from the chat requests); with
``models=None`` (the default) the server serves every model name and, like a server
without a model listing, answers that path with HTTP 404.

>>> srv = LoopbackServer().start(); srv.url.startswith("http://127.0.0.1:")
True
>>> srv.stop()
"""
from __future__ import annotations

import hashlib
import json
import re
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

__all__ = ["LoopbackServer", "FAULTS", "reply_for", "empty_plan"]

FAULTS = ("429", "500", "503", "slow", "malformed", "truncated", "reset", "nousage", "401")

_PIECE = re.compile(r"\w+|[^\w\s]")


def reply_for(body: dict) -> str:
    """The deterministic reply content for a request body."""
    fmt = body.get("response_format") or {}
    schema = fmt.get("schema") or (fmt.get("json_schema") or {}).get("schema")
    if schema:
        alts = schema["properties"]["actions"]["items"].get("anyOf") or []
        if not alts:
            return json.dumps({"actions": [], "query": None})
        a = alts[0]["properties"]
        args = [slot["enum"][0] for slot in a["args"].get("prefixItems", [])]
        return json.dumps({"actions": [{"type": a["type"]["enum"][0], "args": args}],
                           "query": None})
    prompt = body["messages"][-1]["content"]
    hints = re.search(r"^Action hints: (.*)$", prompt, re.M)
    objs = re.search(r"^Objects: (.*)$", prompt, re.M)
    hint = (hints.group(1).split("; ")[0] if hints else "").split("(")[0].strip()
    args = [o for o in (objs.group(1).split(", ") if objs else []) if o]
    if not hint:
        return '{"actions": [], "query": null}'
    return json.dumps({"actions": [{"type": hint, "args": args[:2]}], "query": None})


def empty_plan(body: dict) -> str:
    """The reply of a model that proposes nothing (the group ends as ``empty_plan``).

    >>> empty_plan({"messages": [{"role": "user", "content": "Objects: glass"}]})
    '{"actions": [], "query": null}'
    """
    return '{"actions": [], "query": null}'


class LoopbackServer:
    """``start()`` / ``stop()``; ``url`` is the ``base_url`` (ends in ``/v1``)."""

    def __init__(self, fault: Callable[[dict, int], str | None] | None = None,
                 slow_seconds: float = 2.0, delay: float = 0.0, retry_after: str = "0",
                 models: tuple[str, ...] | list[str] | None = None,
                 reply: Callable[[dict], str] | None = None):
        self.fault = fault or (lambda body, attempt: None)
        self.reply = reply or reply_for
        self.models = None if models is None else list(models)
        self.model_requests = 0
        self.slow_seconds = slow_seconds
        self.delay = delay
        self.retry_after = retry_after
        self.requests = 0
        self.faults_sent: list[str] = []
        self.auth: list[str | None] = []
        self._seen: dict[str, int] = {}
        self._lock = threading.Lock()
        self._httpd = None
        self._thread = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def start(self) -> "LoopbackServer":
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # The headers and the body are two writes: with Nagle's algorithm the body
            # waits for the client's delayed ACK (about 40 ms a reply on Linux).
            disable_nagle_algorithm = True

            def log_message(self, *args):  # quiet
                pass

            def _send(self, code: int, payload: bytes, headers: dict | None = None,
                      length: int | None = None):
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload) if length is None else length))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(payload)
                self.wfile.flush()

            def do_GET(self):  # noqa: N802
                with server._lock:
                    server.model_requests += 1
                if self.path.rstrip("/") != "/v1/models" or server.models is None:
                    return self._send(404, b'{"error": {"message": "not found"}}')
                data = [{"id": m, "object": "model", "created": 0, "owned_by": "loopback"}
                        for m in server.models]
                return self._send(200, json.dumps({"object": "list", "data": data}).encode())

            def do_POST(self):  # noqa: N802
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n)
                sha = hashlib.sha256(raw).hexdigest()
                with server._lock:
                    server.requests += 1
                    server.auth.append(self.headers.get("Authorization"))
                    attempt = server._seen.get(sha, 0)
                    server._seen[sha] = attempt + 1
                body = json.loads(raw)
                kind = server.fault(body, attempt)
                if kind:
                    with server._lock:
                        server.faults_sent.append(kind)
                if server.delay:
                    time.sleep(server.delay)
                if kind == "429":
                    return self._send(429, b'{"error": {"message": "rate limited"}}',
                                      {"Retry-After": server.retry_after})
                if kind in ("500", "503"):
                    return self._send(int(kind), b'{"error": {"message": "server error"}}')
                if kind == "401":
                    # like hosted APIs, echo the key it got: the client must scrub it
                    got = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
                    msg = json.dumps({"error": {"message": f"Incorrect API key provided: {got}"}})
                    return self._send(401, msg.encode())
                if kind == "reset":
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                    return
                content = server.reply(body)
                prompt = " ".join(m["content"] for m in body["messages"])
                out = {"id": "cmpl-" + sha[:12], "object": "chat.completion", "created": 0,
                       "model": body.get("model"),
                       "choices": [{"index": 0, "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": content}}],
                       "usage": {"prompt_tokens": len(_PIECE.findall(prompt)),
                                 "completion_tokens": len(_PIECE.findall(content)),
                                 "total_tokens": 0}}
                if kind == "nousage":
                    del out["usage"]
                payload = json.dumps(out).encode()
                if kind == "slow":
                    time.sleep(server.slow_seconds)
                if kind == "malformed":
                    return self._send(200, b'{"choices": [{"message": ')
                if kind == "truncated":
                    self._send(200, payload[: len(payload) // 2], length=len(payload))
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                return self._send(200, payload)

        class Server(ThreadingHTTPServer):
            def handle_error(self, request, client_address):
                pass  # clients that time out close the socket: expected here

        self._httpd = Server(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None


def main(argv=None) -> int:
    """``python -m analysis.planners.llm.testserver [--delay S]``: serve until killed
    (prints the base URL); no faults. For trying the runner without a model."""
    import argparse
    ap = argparse.ArgumentParser(prog="analysis.planners.llm.testserver")
    ap.add_argument("--delay", type=float, default=0.0)
    ap.add_argument("--model", action="append", default=None,
                    help="a model name GET /v1/models lists (repeatable; default: no "
                         "listing, every name served)")
    args = ap.parse_args(argv)
    srv = LoopbackServer(delay=args.delay, models=args.model).start()
    print(srv.url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        srv.stop()
    return 0


if __name__ == "__main__":
    import sys
    sys.exit(main())

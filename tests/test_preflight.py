"""Issue 37 item 3: before a chat run writes anything, its model server is checked: it
answers, and it lists the model (GET /v1/models through the openai SDK). Tested against
a closed port on 127.0.0.1 (connection refused), the loopback server that does not know
the model, one that does, and one without a model listing (404: the run goes on, with a
note). Every refusal names the URL and writes nothing: no run, no journal, no call log."""
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("openai")

from analysis._cli import run as run_mod
from analysis.planners.chat import ChatPlanner, ChatSchemaPlanner
from analysis.planners.llm.client import ChatClient, ClientSettings
from analysis.planners.llm.preflight import PreflightError, check_endpoint
from analysis.executor.protocol import ProviderError
from test_llm import FAST, make_export, server  # noqa: F401  (server: the fixture)
from tree_state import tree_state as snapshot

REPO = Path(__file__).resolve().parent.parent


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def chat_settings(url, tmp_path, **kw):
    return {"base_url": url, "model": "toy-model", "timeout": 2.0, "cache_mode": "off",
            "max_retries": 0, "call_log": str(tmp_path / "calls.jsonl"), **kw}


def run_chat(export, tmp_path, say=None, **settings):
    kw = {} if say is None else {"say": say}
    return run_mod.run_suite("chat", "planner", "persistent", export, progress=False,
                             state_dir=str(tmp_path / "state"), runtime=FAST,
                             planner_settings=settings, **kw)


def test_a_refused_connection_stops_the_run_before_anything_is_written(tmp_path):
    export = make_export(tmp_path / "fe")
    before = snapshot(export)
    url = f"http://127.0.0.1:{closed_port()}/v1"
    with pytest.raises(PreflightError) as exc:
        run_chat(export, tmp_path, **chat_settings(url, tmp_path))
    assert str(exc.value) == (f"the model server at {url} does not answer (connection "
                              "refused): start it, or set planner.settings.base_url= to the "
                              "URL it serves")
    assert snapshot(export) == before
    assert not (tmp_path / "state").exists() and not (tmp_path / "calls.jsonl").exists()


def test_a_model_the_server_does_not_list_is_refused_naming_what_it_lists(server, tmp_path):
    srv = server(models=["other-model", "third-model"])
    export = make_export(tmp_path / "fe")
    before = snapshot(export)
    with pytest.raises(PreflightError) as exc:
        run_chat(export, tmp_path, **chat_settings(srv.url, tmp_path))
    assert str(exc.value) == (f"the model server at {srv.url} does not serve model "
                              "'toy-model' (it lists: other-model, third-model): set "
                              "planner.settings.model= to one of them")
    assert (srv.model_requests, srv.requests) == (1, 0)   # one check, no chat request
    assert snapshot(export) == before and not (tmp_path / "state").exists()


def test_a_listed_model_runs_and_a_server_without_a_listing_runs_with_a_note(server, tmp_path):
    srv = server(models=["toy-model"])
    _, rec = run_chat(make_export(tmp_path / "a"), tmp_path, **chat_settings(srv.url, tmp_path))
    assert srv.model_requests == 1 and srv.requests > 0
    assert rec["run"]["run_id"] == "chat__planner__persistent"
    plain = server()   # models=None: GET /v1/models answers 404, every name is served
    said = []
    _, rec2 = run_chat(make_export(tmp_path / "b"), tmp_path, say=said.append,
                       **chat_settings(plain.url, tmp_path, call_log=str(tmp_path / "c2.jsonl")))
    assert said == [f"the model server at {plain.url} lists no models (HTTP 404 on GET "
                    "/models): the model name 'toy-model' was not checked"]
    assert rec2["groups"] == rec["groups"]   # the check changes nothing in the records


def test_replay_makes_no_request_so_nothing_is_checked(tmp_path):
    url = f"http://127.0.0.1:{closed_port()}/v1"
    assert ChatPlanner.preflight(base_url=url, cache_mode="replay",
                                 cache_dir=str(tmp_path / "cache")) is None
    with pytest.raises(PreflightError, match="does not answer"):
        ChatSchemaPlanner.preflight(base_url=url, model="m")
    with pytest.raises(ValueError, match=r"planner.settings.modle: unknown setting"):
        ChatPlanner.preflight(base_url=url, modle="m")   # the settings' own check first


def test_a_refused_key_names_the_variable_to_set(tmp_path):
    """HTTP 401 on the listing: the message says which key setting to fix."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    import threading

    class Deny(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            body = b'{"error": {"message": "Incorrect API key provided: sk-x"}}'
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Deny)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
        with pytest.raises(PreflightError) as exc:
            check_endpoint(ClientSettings(model="m", base_url=url, api_key_env="E2W_NO_SUCH_KEY"))
        assert str(exc.value) == (f"the model server at {url} refused the request (HTTP 401) "
                                  "with the variable E2W_NO_SUCH_KEY: set "
                                  "planner.settings.api_key_env= to the NAME of the "
                                  "environment variable holding its key")
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.mark.e2e
def test_the_command_refuses_in_one_line_naming_the_url(tmp_path):
    export = make_export(tmp_path / "fe")
    before = snapshot(export)
    url = f"http://127.0.0.1:{closed_port()}/v1"
    r = subprocess.run(
        [sys.executable, "-m", "analysis.run", "planner=chat", "suite=planner",
         f"export_root={export}", f"state_dir={tmp_path / 'state'}", "progress=false",
         f"planner.settings.base_url={url}", "planner.settings.model=toy-model",
         f"planner.settings.call_log={tmp_path / 'calls.jsonl'}"],
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO),
                       "E2W_CACHE_DIR": str(tmp_path / "cache")},
        capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stderr
    assert r.stderr.strip().splitlines()[-1] == (
        f"analysis.run: refused, nothing written: the model server at {url} does not answer "
        "(connection refused): start it, or set planner.settings.base_url= to the URL it serves")
    assert "Traceback" not in r.stderr and snapshot(export) == before
    assert not (tmp_path / "state").exists() and not (tmp_path / "calls.jsonl").exists()


def test_a_connection_error_during_a_run_names_the_model_server(tmp_path):
    """Issue 37 friction 7: the provider error of a refused connection names the URL."""
    url = f"http://127.0.0.1:{closed_port()}/v1"
    c = ChatClient(ClientSettings(model="m", base_url=url, max_retries=0, cache_mode="off",
                                  timeout=2.0))
    with pytest.raises(ProviderError) as exc:
        c.complete([{"role": "user", "content": "hi"}])
    assert f"connection error to the model server at {url} (" in str(exc.value)

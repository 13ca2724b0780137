"""Issue 38 (items 4 and 5): the viewer's server serves the site and nothing else, and
``view`` replaces only a folder that a build of the viewer wrote.

The server runs in this process on 127.0.0.1 (:func:`analysis.view.serve.bind`, a free
port) over a small hand-made site (its ``SITE.json`` lists two files with their SHA-256),
and is asked with a real HTTP client (``http.client``, or a raw socket where the client
would refuse to send the request): planted symlinks (``root -> /``, a listed file or
folder replaced by a link), unlisted files, directories, encoded paths (``%00``,
``%2e%2e``, invalid UTF-8), a foreign ``Host``, a terminal escape in the request line,
and more idle connections than handler threads.
"""
from __future__ import annotations

import hashlib
import http.client
import json
import os
import socket
import threading
import time
from pathlib import Path

import pytest

from analysis.view import serve as serve_mod
from analysis.view.output import SiteDirError, check_site_dir, read_site_manifest

FILES = {"index.html": b"<html>overview</html>\n", "assets/viewer.js": b"console.log(1);\n"}


def make_site(folder: Path, files=FILES) -> Path:
    for rel, data in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(data)
    listing = {"about": "a static site written by python -m analysis.view; the next build "
                        "replaces the files listed here",
               "export_manifest_sha256": "0" * 64,
               "files": {k: hashlib.sha256(v).hexdigest() for k, v in sorted(files.items())}}
    (folder / "SITE.json").write_text(json.dumps(listing, indent=1, sort_keys=True) + "\n")
    return folder


@pytest.fixture()
def site(tmp_path):
    return make_site(tmp_path / "site")


@pytest.fixture()
def server(site):
    srv = serve_mod.bind(0)
    t = threading.Thread(target=serve_mod.serve, args=(site,), kwargs={"server": srv},
                         daemon=True)
    t.start()
    for _ in range(100):
        if srv.site is not None:
            break
        time.sleep(0.01)
    yield srv
    srv.shutdown()
    t.join(5)


def get(srv, path, host=None, method="GET"):
    port = srv.server_address[1]
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        if host is None:
            c.request(method, path)
        else:
            c.putrequest(method, path, skip_host=True)
            c.putheader("Host", host)
            c.endheaders()
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def raw(srv, line: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", srv.server_address[1]), timeout=5) as s:
        s.sendall(line)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
    return out


def test_listed_files_are_served(server, site):
    assert get(server, "/index.html") == (200, FILES["index.html"])
    assert get(server, "/") == (200, FILES["index.html"])
    assert get(server, "/assets/viewer.js") == (200, FILES["assets/viewer.js"])
    assert get(server, "/index.html?x=1#y")[0] == 200
    assert get(server, "/index.html", method="HEAD") == (200, b"")


def test_a_planted_root_symlink_serves_nothing_outside(server, site):
    """Issue item 4: a planted ``root -> /`` served /etc/passwd."""
    (site / "root").symlink_to("/", target_is_directory=True)
    status, body = get(server, "/root/etc/passwd")
    assert status == 404 and b"root:" not in body


def test_a_listed_file_or_folder_replaced_by_a_symlink_is_not_followed(server, site, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_bytes(FILES["index.html"])  # even with the listed bytes
    (site / "index.html").unlink()
    (site / "index.html").symlink_to(secret)
    assert get(server, "/index.html")[0] == 404
    other = tmp_path / "other"
    (other).mkdir()
    (other / "viewer.js").write_bytes(FILES["assets/viewer.js"])
    os.rename(site / "assets", tmp_path / "assets_moved")
    (site / "assets").symlink_to(other, target_is_directory=True)
    assert get(server, "/assets/viewer.js")[0] == 404


def test_unlisted_files_directories_and_changed_files_are_404(server, site):
    (site / "notes.txt").write_text("not part of the site")
    assert get(server, "/notes.txt")[0] == 404
    assert get(server, "/SITE.json")[0] == 404  # the listing itself is not a page
    for folder in ("/assets/", "/assets"):
        status, body = get(server, folder)
        assert status == 404 and b"viewer.js" not in body  # no directory listing
    (site / "assets" / "viewer.js").write_bytes(b"alert('changed');\n")
    assert get(server, "/assets/viewer.js")[0] == 404


@pytest.mark.parametrize("path", ["/%00", "/index.html%00.js", "/%2e%2e/etc/passwd",
                                  "/assets/%2E%2E/%2E%2E/x", "/%ff", "/a%5cb", "/a//b",
                                  "/./index.html"])
def test_bad_paths_are_400_without_a_traceback(server, path, capsys):
    status, body = get(server, path)
    assert status == 400, (path, status)
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize("host", ["evil.example", "evil.example:80", "127.0.0.2", "",
                                  "localhost:1"])
def test_a_foreign_host_header_is_refused(server, host):
    """DNS rebinding: a page on another name resolving to 127.0.0.1 gets nothing."""
    status, body = get(server, "/index.html", host=host)
    assert status == 400 and FILES["index.html"] not in body


def test_loopback_host_names_are_served(server):
    port = server.server_address[1]
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", "localhost", "LOCALHOST"):
        assert get(server, "/index.html", host=host)[0] == 200, host


def test_log_lines_are_escaped(server, capsys):
    """Issue item 4: request lines went raw to stderr (terminal escape injection)."""
    capsys.readouterr()
    raw(server, b"GET /\x1b[2J\x1b]0;pwned\x07 HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
    time.sleep(0.2)
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err
    assert "\\x1b[2J" in err


def test_handler_threads_are_bounded(server, monkeypatch):
    """Idle connections cannot pile up threads: at most MAX_THREADS handle requests, each
    closed after TIMEOUT_S of silence; a request after them is served."""
    monkeypatch.setattr(serve_mod._Handler, "timeout", 0.5)
    base = threading.active_count()
    idle = [socket.create_connection(("127.0.0.1", server.server_address[1]), timeout=5)
            for _ in range(serve_mod.MAX_THREADS + 8)]
    try:
        time.sleep(0.3)
        assert threading.active_count() - base <= serve_mod.MAX_THREADS
        assert get(server, "/index.html")[0] == 200  # once the idle ones time out
    finally:
        for s in idle:
            s.close()


def test_serving_a_folder_without_a_site_manifest_is_refused(tmp_path):
    from analysis._cli.hydra_glue import UserError
    d = tmp_path / "mine"
    d.mkdir()
    (d / "SITE.json").write_text("{}")
    with pytest.raises(UserError, match="not a site manifest"):
        serve_mod.serve(d, port=0)


def test_the_port_is_checked_before_the_build(tmp_path, capsys):
    """Issue item 4: a port in use was reported only after the (8 s) build."""
    from analysis._cli.hydra_glue import command_main
    from analysis._cli.view import _body
    from test_llm import make_export
    fe = make_export(tmp_path / "fe")
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    port = busy.getsockname()[1]
    out = tmp_path / "site"
    try:
        with pytest.raises(SystemExit) as info:
            command_main("view", _body, [f"export_root={fe}", f"out_dir={out}", "serve=true",
                                         f"port={port}"])
        err = capsys.readouterr().err
        assert info.value.code == 1 and f"port={port}: cannot serve" in err, err
        assert "verifying" not in err and not out.exists()  # refused before the build
    finally:
        busy.close()


# --- view replaces only its own site ------------------------------------------------------

def _sums(d: Path) -> dict:
    return {p.relative_to(d).as_posix(): (p.read_bytes() if p.is_file() else "dir")
            for p in sorted(d.rglob("*"))}


@pytest.mark.parametrize("manifest", ['{"files": {}}', "not json", '{"about": "x", '
                                      '"export_manifest_sha256": "0", "files": {"a": "b"}}', ""])
def test_a_folder_whose_site_json_is_not_the_viewers_is_refused(tmp_path, manifest):
    """Issue item 5: any SITE.json let the build wipe the folder (the user's other files
    with it). Now its content must be a site manifest written by the viewer."""
    d = tmp_path / "mine"
    d.mkdir()
    (d / "SITE.json").write_text(manifest)
    (d / "thesis.tex").write_text("years of work")
    before = _sums(d)
    with pytest.raises(SiteDirError) as info:
        check_site_dir(d, None)
    assert str(d) in str(info.value) and "not a site manifest" in str(info.value)
    assert _sums(d) == before


def test_the_viewers_own_site_is_accepted(tmp_path, site):
    """A folder an earlier build wrote (valid manifest) is replaced as a whole, as
    docs/viewer.md says (stale pages of an older build go with it)."""
    assert check_site_dir(site, None) == site.resolve()


def test_a_symlinked_or_fifo_site_json_is_refused(tmp_path):
    d = tmp_path / "mine"
    d.mkdir()
    (d / "x").write_text("x")
    os.mkfifo(d / "SITE.json")
    t0 = time.monotonic()
    with pytest.raises(SiteDirError, match="not a regular file"):
        read_site_manifest(d)
    assert time.monotonic() - t0 < 5

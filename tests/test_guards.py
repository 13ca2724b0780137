"""Issue 38: one guard for every state file a chat run reads or writes; no local fault
ever scored; no wait unbounded or silent.

Each case plants something where a chat run keeps its side files (the shared rate-limit
budget, the call log and its summary, the ``calls/``, ``rate/`` and ``shards/`` folders)
or makes a part of our side of the planner boundary fail with an unexpected exception
class, runs the chat planner against the loopback endpoint, and asserts: the run stops
with a message naming the file (never ``parse_failure``), nothing is registered (the
export's bytes are unchanged) and nothing outside the test's folders changed (an outside
folder's checksums before and after). Then the waits: a planted budget file far ahead
and a ``Retry-After: 50000`` both end within ``retry_budget``, with a message.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import struct
import time
from pathlib import Path

import pytest

pytest.importorskip("openai")

from analysis._fs.confine import ConfinementError, LocalFault, open_state, state_folder, write_state
from analysis._runs.journal import RunIncomplete
from analysis.planners.llm.client import ChatClient, ClientSettings
from analysis.planners.llm.ratelimit import SharedRateLimiter, bucket_path
from analysis.planners.llm.testserver import LoopbackServer
from analysis._cli.run import run_suite

from test_llm import make_export
from tree_state import tree_state as tree_sums

RID = "chat__planner__persistent"
FAST = {"max_planner_calls": 2}


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return make_export(tmp_path_factory.mktemp("guards") / "fe")


@pytest.fixture()
def fe(base, tmp_path):
    return Path(shutil.copytree(base, tmp_path / "fe"))


@pytest.fixture()
def outside(tmp_path):
    """A folder outside every folder a command is given, with a file worth keeping."""
    d = tmp_path / "outside"
    d.mkdir()
    (d / "victim.txt").write_text("precious")
    return d


@pytest.fixture(scope="module")
def srv():
    s = LoopbackServer().start()
    yield s
    s.stop()


def chat_settings(url, state: Path, **kw):
    out = dict(base_url=url, model="toy-model", timeout=2.0, backoff_base=0.01,
               backoff_max=0.05, max_retries=2, cache_dir=None,
               requests_per_minute=60000, rate_state=str(state / "rate"),
               call_log=str(state / "calls" / f"{RID}.jsonl"))
    out.update(kw)
    return out


def run_chat(fe, state, settings, **kw):
    return run_suite("chat", "planner", "persistent", fe, progress=False,
                     state_dir=str(state), planner_settings=settings, runtime=FAST, **kw)


def assert_refused(fe, outside, state, settings, *fragments, exc=LocalFault, shard=None):
    """The run stops with ``exc`` naming every fragment; export and outside unchanged."""
    before_fe, before_out = tree_sums(fe), tree_sums(outside)
    t0 = time.monotonic()
    with pytest.raises(exc) as info:
        run_chat(fe, state, settings, shard=shard)
    assert time.monotonic() - t0 < 60  # never hangs on a FIFO
    for f in fragments:
        assert str(f) in str(info.value), (f, str(info.value))
    assert "parse_failure" not in str(info.value)
    assert tree_sums(fe) == before_fe  # nothing registered
    assert not (fe / "runs" / RID).exists()
    assert tree_sums(outside) == before_out
    return info.value


# --- 1. planted state files and folders -----------------------------------------------------

def _budget(state, url):
    return bucket_path(state / "rate", url, "toy-model")


@pytest.mark.parametrize("kind", ["symlink", "fifo"])
def test_planted_rate_budget_file_stops_the_run_unregistered(fe, tmp_path, outside, srv, kind):
    """Issue item 1: a symlink or FIFO as the shared budget file gave rc 0, every group
    parse_failure, and a registered run."""
    state = tmp_path / "state"
    p = _budget(state, srv.url)
    p.parent.mkdir(parents=True)
    if kind == "symlink":
        p.symlink_to(outside / "victim.txt")
    else:
        os.mkfifo(p)
    err = assert_refused(fe, outside, state, chat_settings(srv.url, state), p,
                         exc=ConfinementError)
    assert "remove it" in str(err)


@pytest.mark.parametrize("kind", ["symlink", "fifo"])
def test_planted_call_log_summary_is_refused_before_any_request(fe, tmp_path, outside, kind):
    """Issue item 3: ``calls/<run>.jsonl.summary.json`` linked to an outside file was
    overwritten; as a FIFO the run hung forever. Refused before any request."""
    srv = LoopbackServer().start()
    try:
        state = tmp_path / "state"
        summary = state / "calls" / f"{RID}.jsonl.summary.json"
        summary.parent.mkdir(parents=True)
        if kind == "symlink":
            summary.symlink_to(outside / "victim.txt")
        else:
            os.mkfifo(summary)
        assert_refused(fe, outside, state, chat_settings(srv.url, state), summary,
                       "remove it", exc=ConfinementError)
        assert srv.requests == 0
    finally:
        srv.stop()


@pytest.mark.parametrize("folder", ["calls", "rate"])
def test_symlinked_state_folder_is_refused(fe, tmp_path, outside, srv, folder):
    """Issue item 3: ``calls/`` or ``rate/`` as a symlink sent the call log and the
    budget file outside the state folder."""
    state = tmp_path / "state"
    state.mkdir()
    (state / folder).symlink_to(outside, target_is_directory=True)
    assert_refused(fe, outside, state, chat_settings(srv.url, state), state / folder,
                   "symlink", exc=ConfinementError)


def test_symlinked_shards_folder_is_refused(fe, tmp_path, outside):
    """Issue item 3: ``shards/`` under the journal as a symlink put the markers outside.
    The journal folder exists once an episode is journaled; plant it there."""
    state = tmp_path / "state"
    run_suite("greedy_hints", "planner", "persistent", fe, progress=False,
              state_dir=str(state), shard="1/2")
    (journal,) = [p for p in state.iterdir() if p.is_dir()]
    shutil.rmtree(journal / "shards")
    (journal / "shards").symlink_to(outside, target_is_directory=True)
    before_fe, before_out = tree_sums(fe), tree_sums(outside)
    with pytest.raises(ConfinementError, match="shards"):
        run_suite("greedy_hints", "planner", "persistent", fe, progress=False,
                  state_dir=str(state), shard="2/2")
    assert tree_sums(fe) == before_fe and tree_sums(outside) == before_out


# --- 2. fault classes that cannot leak ------------------------------------------------------

def _raise(exc):
    def f(*a, **k):
        raise exc
    return f


FAULTS = {
    # where: (object to patch, attribute, the exception a bug there would raise)
    "limiter": ("analysis.planners.llm.ratelimit.SharedRateLimiter", "reserve",
                KeyError("slot")),
    "cache": ("analysis.planners.llm.cache.ResponseCache", "get", TypeError("bad entry")),
    "call_log": ("analysis.planners.llm.accounting.CallLog", "add",
                 RuntimeError("log broken")),
    "confinement": ("analysis.planners.llm.accounting.CallLog", "add",
                    ConfinementError("calls/x.jsonl: planted")),
    "io": ("analysis.planners.llm.ratelimit.SharedRateLimiter", "reserve",
           PermissionError(13, "Permission denied", "/state/rate/x.bucket")),
}


@pytest.mark.parametrize("where", sorted(FAULTS))
def test_a_local_fault_of_any_class_never_registers_a_run(fe, tmp_path, outside, srv,
                                                          monkeypatch, where):
    """Issue item 2: anything that is not the planner's own output stops the run
    unregistered, whatever its Python class (a ``ValueError`` from confinement was
    scored as ``parse_failure`` and the run registered)."""
    import importlib
    mod, cls = FAULTS[where][0].rsplit(".", 1)
    monkeypatch.setattr(getattr(importlib.import_module(mod), cls), FAULTS[where][1],
                        _raise(FAULTS[where][2]))
    state = tmp_path / "state"
    settings = chat_settings(srv.url, state, cache_dir=str(tmp_path / "cache"))
    before = tree_sums(fe)
    with pytest.raises((LocalFault, OSError)) as info:
        run_chat(fe, state, settings)
    assert str(FAULTS[where][2].args[-1] if where != "io" else "/state/rate/x.bucket") \
        in str(info.value)
    assert tree_sums(fe) == before and not (fe / "runs" / RID).exists()
    assert tree_sums(outside) == {"victim.txt": hashlib.sha256(b"precious").hexdigest()}


def test_a_local_fault_through_the_command_is_one_line_exit_1(fe, tmp_path, srv, capsys,
                                                            monkeypatch):
    """The same through ``python -m analysis.run``'s entry point: one line, exit 1."""
    from analysis._cli.hydra_glue import command_main
    from analysis._cli.run import _body
    monkeypatch.setattr(SharedRateLimiter, "reserve", _raise(KeyError("slot")))
    state = tmp_path / "state"
    argv = ["planner=chat", "suite=planner", "memory=persistent", f"export_root={fe}",
            f"state_dir={state}", "progress=false", f"planner.settings.base_url={srv.url}",
            "planner.settings.model=toy-model", "planner.settings.requests_per_minute=60000",
            f"planner.settings.cache_dir={tmp_path / 'cache'}", "runtime.max_planner_calls=2"]
    before = tree_sums(fe)
    with pytest.raises(SystemExit) as info:
        command_main("run", _body, argv)
    err = capsys.readouterr().err
    assert info.value.code == 1, err
    assert "Traceback" not in err
    assert "a local fault, not a planner failure" in err, err
    assert tree_sums(fe) == before


def test_a_planner_bug_is_still_scored():
    """The boundary: a planner's own exception (not a local fault) stays parse_failure."""
    from analysis.executor import Rules
    from analysis.executor.runtime import RuntimeConfig, run_episode
    from analysis.planners.toy import toy_episode, toy_tasks

    class Buggy:
        name = "buggy"

        def config(self):
            return {}

        def propose(self, view):
            return {}["no such key"]
    res = run_episode(toy_episode(), toy_tasks(), Buggy(), Rules.load(), "persistent",
                      RuntimeConfig())
    assert {g["status"] for g in res.group_records} == {"parse_failure"}


# --- 3. bounded, announced waits ------------------------------------------------------------

def test_retry_after_50000_ends_within_retry_budget_and_leaves_the_budget_alone(
        fe, tmp_path, capsys):
    """Issue item 2: one ``429 Retry-After: 50000`` stored 50000 s in the shared budget;
    the next episode and every rerun then slept ~14 h, silently. Now that request is a
    provider error at once, the budget file is not pushed, and a rerun runs at once."""
    sent = []

    def once(body, attempt):  # the first request of the test only
        sent.append(1)
        return "429" if len(sent) == 1 else None
    srv = LoopbackServer(fault=once, retry_after="50000").start()
    try:
        state = tmp_path / "state"
        settings = chat_settings(srv.url, state, retry_budget=5.0)
        t0 = time.monotonic()
        with pytest.raises(RunIncomplete) as info:
            run_chat(fe, state, settings)
        assert time.monotonic() - t0 < 5.0
        assert "Retry-After 50000 s, more than retry_budget=5 s" in str(info.value)
        nxt = struct.unpack("<d", _budget(state, srv.url).read_bytes())[0]
        assert nxt < time.time() + 5.0  # not poisoned
        t0 = time.monotonic()
        summary, _ = run_chat(fe, state, settings)  # the failed episode is rerun
        assert time.monotonic() - t0 < 5.0
        assert (fe / "runs" / RID / "run.json").is_file()
    finally:
        srv.stop()


def test_a_budget_file_planted_far_ahead_is_reset_with_a_warning(fe, tmp_path, srv, capsys):
    """Issue item 2: a budget file 22 hours ahead stalled every request silently."""
    state = tmp_path / "state"
    p = _budget(state, srv.url)
    p.parent.mkdir(parents=True)
    p.write_bytes(struct.pack("<d", time.time() + 22 * 3600))
    t0 = time.monotonic()
    run_chat(fe, state, chat_settings(srv.url, state, retry_budget=5.0))
    assert time.monotonic() - t0 < 30.0
    err = capsys.readouterr().err
    assert f"the rate-limit file {p} holds a start" in err and "reset" in err, err
    assert "more than retry_budget=5 s" in err


def _client(tmp_path, **kw):
    said, slept = [], []
    s = ClientSettings(model="m", base_url="http://127.0.0.1:9/v1", **kw)
    return ChatClient(s, sleep=slept.append, say=said.append), said, slept


def test_a_rate_limit_wait_counts_against_retry_budget(tmp_path):
    """A slot further away than the remaining retry_budget is a provider error (no slot
    taken, no sleep); a wait longer than a few seconds says what for and until when."""
    from analysis.executor.protocol import ProviderError
    c, said, slept = _client(tmp_path, requests_per_minute=1.0, retry_budget=30.0,
                             rate_state=str(tmp_path / "rate"))
    lim = c.limiter
    lim.defer(80.0)  # a (legitimate) Retry-After of another shard, beyond this budget
    with pytest.raises(ProviderError, match="no rate-limit slot within the remaining "
                                             "retry_budget"):
        c.complete([{"role": "user", "content": "hi"}])
    assert slept == []
    before = lim.path.read_bytes()
    assert lim.reserve(30.0) is None and lim.path.read_bytes() == before
    c._waiting(12.0, "a rate-limit slot")
    assert said and said[-1].startswith("waiting 12 s for a rate-limit slot, until ")
    assert "UTC" in said[-1]
    c._waiting(2.0, "a rate-limit slot")
    assert len(said) == 1  # short waits are not announced


def test_a_long_backoff_is_announced(tmp_path):
    """A retry wait above the notice threshold names the request and the fault."""
    c, said, slept = _client(tmp_path, backoff_base=16.0, backoff_max=16.0, max_retries=1,
                             retry_budget=100.0, timeout=0.5)
    from analysis.executor.protocol import ProviderError
    with pytest.raises(ProviderError):
        c.complete([{"role": "user", "content": "hi"}])  # port 9: connection refused
    assert slept and slept[0] >= 8.0
    assert any("for retry 1 of request" in m and "until" in m for m in said), said


# --- the guard itself ---------------------------------------------------------------------

def test_guard_refuses_links_fifos_and_devices(tmp_path, outside):
    link = tmp_path / "link"
    link.symlink_to(outside / "victim.txt")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for p in (link, fifo, Path("/dev/null")):
        with pytest.raises(ConfinementError, match=str(p)):
            open_state(p, os.O_RDONLY, "the state file")
        if p != Path("/dev/null"):
            with pytest.raises(ConfinementError, match=str(p)):
                write_state(p, b"x", "the state file")
    with pytest.raises(ConfinementError, match="is a symlink"):
        state_folder(link, "the folder")
    (tmp_path / "d").symlink_to(outside, target_is_directory=True)
    with pytest.raises(ConfinementError, match="is a symlink"):
        write_state(tmp_path / "d" / "x.json", b"x", "the state file")
    assert (outside / "victim.txt").read_text() == "precious"
    assert sorted(os.listdir(outside)) == ["victim.txt"]
    write_state(tmp_path / "new" / "x.json", b"ok", "the state file")
    assert (tmp_path / "new" / "x.json").read_bytes() == b"ok"

"""The chat runner against a loopback OpenAI-compatible server that injects faults.

Every test uses the toy cohort (3 episodes x 3 groups), short timeouts and a 10 ms
backoff base; the server's replies depend only on the request, so reruns, threads and
resumes must reproduce records byte for byte.
"""
import gzip
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

pytest.importorskip("openai")

from killing import kill_when

from analysis._cli import run as run_mod
from analysis._runs.journal import RunIncomplete
from analysis.executor import Rules
from analysis.executor.protocol import PlannerView, ProviderError, parse_plan
from analysis.records.io import write_record, write_records
from analysis.records.manifest import update_manifest
from analysis.planners.llm.accounting import read_calls, summarize
from analysis.planners.llm.client import ChatClient, ClientSettings, backoff_delay
from analysis.planners.llm.schema import plan_schema
from analysis.planners.llm.testserver import LoopbackServer
from analysis.planners.toy import toy_episode, toy_suite, toy_tasks

REPO = Path(__file__).resolve().parent.parent
EPS = ("toy-a", "toy-b", "toy-c")
KEY = "sk-test-SECRET-4242"
RUN_FILES = ("run.json", "groups.jsonl.gz", "tasks.jsonl")
FAST = {"max_planner_calls": 2}  # tiny episodes: 9 groups, at most 18 requests per run


def _episode(eid):
    ep = toy_episode(eid)
    for g in ep["groups"]:  # distinct prompts per episode, so faults can target one
        g["instruction"] += f" [{eid}]"
    return ep


def make_export(root: Path) -> Path:
    c = root / "cohort"
    write_record(c / "rules.json", Rules.load().to_json())
    write_records(c / "episodes.jsonl.gz", [_episode(e) for e in EPS])
    write_records(c / "tasks.jsonl", [t for e in EPS for t in toy_tasks(e)])
    write_records(c / "suites.jsonl", [toy_suite(EPS), dict(toy_suite(EPS[:2]), suite="memory")])
    update_manifest(root, {"cohort/rules.json": "rules", "cohort/episodes.jsonl.gz": "episode",
                           "cohort/tasks.jsonl": "task", "cohort/suites.jsonl": "suite"})
    return root


@pytest.fixture()
def export(tmp_path):
    return make_export(tmp_path / "fe")


@pytest.fixture()
def server():
    srvs = []

    def start(**kw):
        s = LoopbackServer(**kw).start()
        srvs.append(s)
        return s
    yield start
    for s in srvs:
        s.stop()


def settings(srv_url, tmp_path, **kw):
    base = dict(base_url=srv_url, model="toy-model", timeout=1.0, backoff_base=0.01,
                backoff_max=0.05, max_retries=3, cache_dir=str(tmp_path / "cache"),
                call_log=str(tmp_path / "calls.jsonl"))
    base.update(kw)
    return base


def run(export, planner="chat", tmp_path=None, **kw):
    st = kw.pop("state_dir", str(tmp_path / "state"))
    return run_mod.run_suite(planner, "planner", "persistent", export, progress=False,
                             state_dir=st, planner_settings=kw, runtime=FAST)


def run_files(export, rid="chat__planner__persistent"):
    d = export / "runs" / rid
    return {n: (d / n).read_bytes() for n in RUN_FILES}


def _view():
    return PlannerView(
        "wash the cup", ("cup",), ("wash",), {"region": "sink"}, None, (), None,
        ("sink", "counter"), {"cup": "cup", "sink": "sink", "counter": "counter", "milk": "milk"},
        {"wash": {"params": [["x", "item"], ["at", "sink"]]},
         "navigate": {"params": [["from", "fixture"], ["to", "fixture"]]},
         "fly": {"params": [["x", "bird"]]}},
        {"cup": "item", "milk": "item", "item": "entity", "sink": "fixture",
         "counter": "fixture", "fixture": "entity"}, "e/g/0")


# ------------------------------------------------------------------ schema
def test_typed_schema_has_exact_arities_and_only_shown_ids_of_the_right_type():
    s = plan_schema(_view())
    alts = {a["properties"]["type"]["enum"][0]: a["properties"]["args"]
            for a in s["properties"]["actions"]["items"]["anyOf"]}
    assert sorted(alts) == ["navigate", "wash"]  # no entity of type bird: fly left out
    assert alts["wash"]["prefixItems"] == [{"enum": ["cup", "milk"]}, {"enum": ["sink"]}]
    assert alts["wash"]["minItems"] == alts["wash"]["maxItems"] == 2
    assert alts["navigate"]["prefixItems"] == [{"enum": ["counter", "sink"]}] * 2
    assert s["properties"]["query"] == {"anyOf": [{"enum": ["counter", "sink"]}, {"type": "null"}]}


# ------------------------------------------------------------------ client
@pytest.mark.parametrize("fault", ["429", "500", "503", "slow", "malformed", "truncated",
                                   "reset", "nousage"])
def test_each_transient_fault_is_retried(server, tmp_path, fault):
    srv = server(fault=lambda body, n: fault if n == 0 else None, slow_seconds=1.5)
    c = ChatClient(ClientSettings(**settings(srv.url, tmp_path, timeout=0.5, cache_dir=None)))
    out = c.complete([{"role": "user", "content": "Action hints: wash\nObjects: cup"}])
    assert (out.retries, srv.requests, srv.faults_sent) == (1, 2, [fault])
    assert parse_plan(out.text).actions == [{"type": "wash", "args": ["cup"]}]


def test_the_stand_in_model_answers_what_its_reply_function_gives(server, tmp_path):
    # tests/test_documented_commands.py runs the docs' chat commands against a stand-in
    # that proposes nothing (one call a group); the default stand-in proposes the hint
    from analysis.planners.llm.testserver import empty_plan
    msg = [{"role": "user", "content": "Action hints: wash\nObjects: cup"}]
    for kw, actions in (({}, [{"type": "wash", "args": ["cup"]}]), ({"reply": empty_plan}, [])):
        srv = server(**kw)
        c = ChatClient(ClientSettings(**settings(srv.url, tmp_path, cache_dir=None)))
        out = c.complete(msg)
        assert parse_plan(out.text).actions == actions and srv.requests == 1


def test_retry_after_is_honoured_and_backoff_is_seeded(server, tmp_path):
    srv = server(fault=lambda body, n: "429" if n < 2 else None, retry_after="3")
    waits = []
    c = ChatClient(ClientSettings(**settings(srv.url, tmp_path, cache_dir=None)),
                   sleep=waits.append)
    c.complete([{"role": "user", "content": "x"}])
    assert len(waits) == 2 and all(w == 3.0 for w in waits)  # 3 s > 10 ms backoff
    srv2 = server(fault=lambda body, n: "500")
    waits2, waits3 = [], []
    s = ClientSettings(**settings(srv2.url, tmp_path, cache_dir=None, max_retries=3,
                                  backoff_base=1.0, backoff_max=100.0))
    for w in (waits2, waits3):
        with pytest.raises(ProviderError, match="HTTP 500 after 4 attempt"):
            ChatClient(s, sleep=w.append).complete([{"role": "user", "content": "y"}])
    assert waits2 == waits3  # deterministic jitter given the seed
    assert [1.0 * 2 ** i * 0.5 <= w < 1.0 * 2 ** i for i, w in enumerate(waits2)] == [True] * 3
    assert srv2.requests == 8
    # budget: the second wait (>= 1 s) would exceed 1.2 s of total waiting
    with pytest.raises(ProviderError):
        ChatClient(ClientSettings(**{**s.__dict__, "retry_budget": 1.2}),
                   sleep=lambda x: None).complete([{"role": "user", "content": "z"}])
    assert backoff_delay(s, "k", 0, None) != backoff_delay(
        ClientSettings(**{**s.__dict__, "seed": 1}), "k", 0, None)


def test_auth_failure_is_not_retried_and_the_key_is_scrubbed(server, tmp_path, monkeypatch):
    monkeypatch.setenv("TOY_KEY", KEY)
    srv = server(fault=lambda body, n: "401")
    c = ChatClient(ClientSettings(**settings(srv.url, tmp_path, api_key_env="TOY_KEY")))
    with pytest.raises(ProviderError) as exc:
        c.complete([{"role": "user", "content": "x"}])
    assert srv.requests == 1 and srv.auth == [f"Bearer {KEY}"]
    assert KEY not in str(exc.value) and "***" in str(exc.value)
    assert KEY not in (tmp_path / "calls.jsonl").read_text()


# ------------------------------------------------------------------ runs
def test_provider_error_is_its_own_status_and_the_run_resumes(export, server, tmp_path):
    broken = {"on": True}

    def fault(body, n):  # episode toy-b's second group always fails while broken
        text = body["messages"][-1]["content"]
        return "503" if broken["on"] and "Add squash to the glass [toy-b]" in text else None
    srv = server(fault=fault)
    kw = settings(srv.url, tmp_path, cache_mode="off")
    with pytest.raises(RunIncomplete, match="provider_error.*toy-b.*HTTP 503 after 4"):
        run(export, tmp_path=tmp_path, **kw)
    assert not (export / "runs").exists()  # nothing scored, nothing written
    state = next((tmp_path / "state").iterdir())
    assert sorted(p.name for p in (state / "episodes").iterdir()) == ["00000.json.gz",
                                                                       "00002.json.gz"]
    failed = json.loads((state / "incomplete.json").read_text())
    assert [f["episode_id"] for f in failed] == ["toy-b"]
    statuses = [g["status"] for g in failed[0]["groups"]]
    assert statuses == ["completed", "provider_error"]  # stopped there, never parse_failure
    # resume with the provider healthy: only toy-b is requested again
    broken["on"] = False
    before = srv.requests
    run(export, tmp_path=tmp_path, **kw)
    resumed = run_files(export)
    groups = [json.loads(l) for l in gzip.decompress(resumed["groups.jsonl.gz"]).splitlines()]
    toyb_calls = sum(len(g["planner_calls"]) for g in groups if g["episode_id"] == "toy-b")
    assert srv.requests - before == toyb_calls
    assert not state.exists()  # journal removed once the run is written
    # equals an uninterrupted run
    fresh = make_export(tmp_path / "fresh")
    run(fresh, tmp_path=tmp_path, state_dir=str(tmp_path / "s2"), **kw)
    assert run_files(fresh) == resumed


def test_cache_replay_makes_no_request_and_is_byte_identical(export, server, tmp_path):
    srv = server(fault=lambda body, n: "500" if n == 0 and len(body["messages"][-1]["content"]) % 3 == 0 else None)
    kw = settings(srv.url, tmp_path)
    run(export, tmp_path=tmp_path, **kw)
    first = run_files(export)
    assert srv.requests > 0 and srv.faults_sent
    srv.stop()
    again = make_export(tmp_path / "again")
    run(again, tmp_path=tmp_path, **{**kw, "cache_mode": "replay",
                                      "base_url": "http://127.0.0.1:9/v1"})
    assert run_files(again) == first
    s = json.loads((tmp_path / "calls.jsonl.summary.json").read_text())  # written by the run
    n_records = sum(len(g["planner_calls"]) for g in json.loads(
        "[" + ",".join(gzip.decompress(first["groups.jsonl.gz"]).decode().splitlines()) + "]"))
    # the replay run's summary counts its own calls only: every one a cache hit
    assert s["calls"] == s["cache_hits"] == n_records and s["network_calls"] == 0
    # the live run's log was kept aside when the fresh replay run started its own
    live = summarize(read_calls(tmp_path / "calls.jsonl.previous"))
    assert live["calls"] == n_records  # one log line per call
    assert live["network_calls"] + live["retries"] == srv.requests  # every request accounted
    assert live["retries"] == len(srv.faults_sent) > 0
    prices = tmp_path / "prices.yaml"
    prices.write_text("toy-model: {prompt_per_1k: 1.0, completion_per_1k: 0.0}\n")
    from analysis.planners.chat import ChatPlanner
    priced = ChatPlanner.after_run(call_log=str(tmp_path / "calls.jsonl"), price_table=str(prices))
    assert priced["cost"] == pytest.approx(s["prompt_tokens_endpoint"] / 1000)


def test_jobs4_equals_serial_with_faults_and_rate_limit(export, server, tmp_path):
    srv = server(fault=lambda body, n: "429" if n == 0 and "[toy-a]" in body["messages"][-1]["content"] else None, delay=0.02)
    kw = settings(srv.url, tmp_path, cache_mode="off", requests_per_minute=6000)
    run(export, tmp_path=tmp_path, **kw)
    serial = run_files(export)
    par = make_export(tmp_path / "par")
    run_mod.run_suite("chat", "planner", "persistent", par, progress=False, jobs=4,
                      state_dir=str(tmp_path / "s4"), planner_settings=kw, runtime=FAST)
    assert run_files(par) == serial


def test_typed_schema_runs_under_its_own_name(export, server, tmp_path):
    srv = server()
    _, rec = run(export, planner="chat_schema", tmp_path=tmp_path,
                 **settings(srv.url, tmp_path, response_format="json_object_schema"))
    assert rec["run"]["run_id"] == "chat_schema__planner__persistent"
    assert rec["run"]["planner_config"]["response_format"] == "json_object_schema"
    assert all(a["status"] == "accepted" or a["failed_checks"] for g in rec["groups"]
               for a in g["attempts"])
    assert {g["status"] for g in rec["groups"]} <= {"completed", "execution_blocked", "empty_plan"}


def _cli(export, tmp_path, url, extra=()):
    env = {**os.environ, "PYTHONPATH": str(REPO), "TOY_KEY": KEY}
    return [sys.executable, "-m", "analysis.run", "planner=chat", "suite=planner",
            f"export_root={export}", f"state_dir={tmp_path / 'state'}", "progress=false",
            f"planner.settings.base_url={url}", "planner.settings.api_key_env=TOY_KEY",
            "planner.settings.cache_mode=off", "planner.settings.timeout=2",
            "planner.settings.model=toy-model", "runtime.max_planner_calls=2",
            f"planner.settings.call_log={tmp_path / 'calls.jsonl'}", *extra], env


@pytest.mark.e2e
def test_kill9_then_rerun_is_byte_identical_and_the_key_never_leaks(export, server, tmp_path):
    # The kill lands mid-run however slowly this test is scheduled: the server holds
    # every request of a later episode until the process is dead (a held request gets
    # no reply, so that episode cannot be journaled before the kill).
    killed = threading.Event()

    def hold_later_episodes(body, attempt):
        if f"[{EPS[0]}]" not in body["messages"][-1]["content"]:
            killed.wait(timeout=120)
        return None
    srv = server(delay=0.05, fault=hold_later_episodes)
    cmd, env = _cli(export, tmp_path, srv.url)
    proc = subprocess.Popen(cmd, env=env, cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    journal = tmp_path / "state"
    try:
        kill_when(proc, lambda: bool(list(journal.glob("*/episodes/*.json.gz"))), poll=0.02)
    finally:
        killed.set()
    done_before = len(list(journal.glob("*/episodes/*.json.gz")))
    assert 1 <= done_before < len(EPS)
    out = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    resumed = run_files(export)
    assert srv.auth and all(a == f"Bearer {KEY}" for a in srv.auth)  # the key was used ...
    fresh = make_export(tmp_path / "fresh")
    run(fresh, tmp_path=tmp_path, state_dir=str(tmp_path / "s2"),
        **settings(srv.url, tmp_path, cache_mode="off", call_log=str(tmp_path / "c2.jsonl")))
    assert run_files(fresh) == resumed
    leaks = [p for p in tmp_path.rglob("*") if p.is_file() and KEY.encode() in (
        gzip.decompress(p.read_bytes()) if p.suffix == ".gz" else p.read_bytes())]
    assert leaks == [] and KEY not in out.stdout + out.stderr  # ... and never written


@pytest.mark.e2e
@pytest.mark.slow
def test_multirun_with_the_joblib_launcher_merges_deterministically(tmp_path):
    pytest.importorskip("hydra_plugins.hydra_joblib_launcher")
    a, b = make_export(tmp_path / "a"), make_export(tmp_path / "b")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-m", "analysis.run", "-m", "hydra/launcher=joblib_local",
         "planner=greedy_hints,lexicon", "suite=planner,memory", "progress=false",
         f"export_root={a}", f"state_dir={tmp_path / 'state'}"],
        env=env, cwd=REPO, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr[-2000:]
    for planner in ("lexicon", "greedy_hints"):  # the other order, one at a time
        for suite in ("memory", "planner"):
            run_mod.run_suite(planner, suite, "persistent", b, progress=False,
                              state_dir=tmp_path / "sb")
    assert (a / "MANIFEST.json").read_bytes() == (b / "MANIFEST.json").read_bytes()
    assert len(list((a / "runs").iterdir())) == 4


@pytest.mark.e2e
@pytest.mark.slow
def test_multirun_refuses_before_any_job_and_writes_no_hydra_folder(tmp_path, server):
    """Every job's configuration and the runs it would replace are checked before the
    first job starts; a planner setting needs no '++'; Hydra's folder does not stay;
    no per-request HTTP log line."""
    pytest.importorskip("hydra_plugins.hydra_joblib_launcher")
    srv = server()
    export = make_export(tmp_path / "fe")
    tmpdir = tmp_path / "tmp"  # the commands' temporary folders, to see what stays
    tmpdir.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO), "E2W_CACHE_DIR": str(tmp_path / "cache"),
           "TMPDIR": str(tmpdir)}
    cwd = tmp_path / "cwd"
    cwd.mkdir()

    def multirun(*args):
        return subprocess.run([sys.executable, "-m", "analysis.run", "-m",
                               "hydra/launcher=joblib_local", *args, f"export_root={export}",
                               "progress=false"], env=env, cwd=cwd, capture_output=True,
                              text=True, timeout=300)
    r = multirun("planner=chat,chat_schem", "suite=planner")
    assert r.returncode == 2 and "did you mean chat_schema?" in r.stderr, r.stderr
    r = multirun("planner=chat,chat_schema", "suite=planner", "planner.settings.modle=m")
    assert r.returncode == 2 and "did you mean model?" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and "not in struct" not in r.stderr
    r = multirun("planner=chat,chat_schema", "suite=planner,memory",
                 f"planner.settings.base_url={srv.url}", "planner.settings.model=m",
                 "planner.settings.timeout=2.0", "runtime.max_planner_calls=2")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "HTTP Request" not in r.stderr
    assert len(list((export / "runs").iterdir())) == 4
    before = srv.requests
    r = multirun("planner=chat,chat_schema", "suite=planner",
                 f"planner.settings.base_url={srv.url}")
    assert r.returncode == 1 and "already exists" in r.stderr, r.stderr
    assert srv.requests == before  # refused before any job ran
    assert list(cwd.iterdir()) == []
    assert not list(tmpdir.glob("e2w_multirun_*"))  # Hydra's multirun folder is gone


def test_a_request_the_http_client_cannot_make_is_a_provider_error_not_a_reply(tmp_path):
    """Outside audit, session 13: a base_url the HTTP client refuses (``http://[::1``)
    raised a plain exception that the runtime scored as the model's parse failure, so a
    run that never reached a model was registered at 0%. Now the client calls it a
    provider error (the run is incomplete, never scored), naming what failed."""
    from analysis.planners.llm.client import ChatClient, ClientSettings, ProviderError
    c = ChatClient(ClientSettings(**settings("http://[::1", tmp_path, cache_mode="off")))
    with pytest.raises(ProviderError, match="could not be (sent|made): "):
        c.complete([{"role": "user", "content": "hi"}])

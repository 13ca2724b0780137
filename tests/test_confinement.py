"""Issue 21: nothing outside its folder, nothing unverified into an export.

Each case plants or breaks state a command reads back (transaction journals, staging
folders, ``GENERATION.json``, resume journals, cache entries, locks), injects a local fault
(full disk, file size limit) or passes a path of the wrong kind, and asserts: the exit
code the command's entry point gives (``command_main``, the code every command runs, here
in process), the one-line message naming the file (and, for planted state, how to clear
it), and that nothing changed anywhere under the test's folder (a snapshot of the whole
tree, outside and inside the targets, before and after; only the empty lock files that
:mod:`analysis._fs.locking` creates are left out).

About 30 s on 2 cores (most cases run in process; six start a subprocess).
"""
from __future__ import annotations

import errno
import gzip
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis._fs import transaction
from analysis._cli.hydra_glue import command_main
from analysis._fs.confine import ConfinementError, DiskError, read_regular
from analysis._runs.journal import RunJournal
from analysis.records import IntegrityError, verify
from analysis._fs.locking import LockBusy, export_lock, file_lock, lock_path
from analysis.planners.llm.cache import CacheError, ResponseCache, request_key
from analysis._cli.run import run_suite
from analysis._cli.tables import GENERATION, txn_dir_of, write_generation
from analysis._fs.transaction import export_txn_dir, recover, recover_export

from test_integrity_adversarial import forge_records
from test_llm import make_export
from tree_state import tree_state

REPO = Path(__file__).resolve().parents[1]
RID = "greedy_hints__planner__persistent"


# --- helpers -------------------------------------------------------------------------------

def _lock_file(p: Path) -> bool:
    """The (empty) lock files of analysis._fs.locking and their folder."""
    return (p.name.endswith(".lock") and p.parent.name == ".run_state") or (
        p.name == ".run_state" and p.is_dir() and not p.is_symlink())


def snap(root: Path) -> dict:
    """Every path under ``root`` with its checksum / link target / kind (lock files aside)."""
    return tree_state(root, skip=_lock_file)


def command(capsys, name: str, body, argv=()) -> tuple[int, str]:
    """Run ``body`` as command ``name``'s entry point does: exit code and stderr."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as info:
        command_main(name, lambda cfg: body(cfg), list(argv))
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    return info.value.code, err


def refused(capsys, tmp_path, name, body, *fragments, code=1, argv=()):
    """``body`` run as command ``name`` exits ``code`` with one line holding every
    fragment, and nothing under ``tmp_path`` changed."""
    before = snap(tmp_path)
    got, err = command(capsys, name, body, argv)
    lines = [x for x in err.splitlines() if x.strip() and not x.startswith("[")]  # progress
    assert got == code, err
    assert len(lines) == 1, err
    for f in fragments:
        assert str(f) in err, (f, err)
    assert snap(tmp_path) == before
    return err


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """A small export (three toy episodes) holding one registered baseline run."""
    root = make_export(tmp_path_factory.mktemp("base") / "fe")
    run_suite("greedy_hints", "planner", "persistent", root, progress=False,
              state_dir=str(root.parent / "st"))
    return root


@pytest.fixture()
def fe(base, tmp_path):
    return Path(shutil.copytree(base, tmp_path / "fe"))


@pytest.fixture()
def victim(tmp_path):
    v = tmp_path / "outside" / "victim.txt"
    v.parent.mkdir()
    v.write_text("precious")
    return v


def plant_journal(txn: Path, journal, raw: bytes | None = None, committed=False):
    txn.mkdir(parents=True, exist_ok=True)
    (txn / "owner.pid").write_text("1")  # PID 1 is alive: must not matter
    (txn / "command").write_text("analysis.run")
    if raw is None:
        if isinstance(journal, dict) and "journal_sha256" not in journal:
            journal = {**journal, "journal_sha256": transaction._journal_sha(journal)}
        raw = json.dumps(journal).encode()
    (txn / "journal.json").write_bytes(raw)
    if committed:
        (txn / "COMMITTED").write_bytes(b"")


def op(target, staged="x", existed=False):
    return {"target": target, "staged": staged, "existed": existed}


# --- 1. planted, truncated and escaping transaction journals --------------------------------

def _journal_attacks(root: Path, victim: Path, txn: Path):
    """(id, setup) pairs: each plants one journal in ``txn`` for ``root``."""
    outside = victim.parent
    rel_up = os.path.relpath(victim, root)

    def j(*ops, **kw):
        return lambda: plant_journal(txn, {"command": "analysis.run", "ops": list(ops)}, **kw)

    def link_in_root():
        (root / "lnk").symlink_to(outside)
        plant_journal(txn, {"command": "analysis.run", "ops": [op("lnk/victim.txt")]})

    def backup_of_manifest(sha: str | None):
        def setup():
            (txn / "backup").mkdir(parents=True)
            (txn / "backup" / "MANIFEST.json").write_text("{}")
            jr = {"command": "analysis.run", "ops": [op("MANIFEST.json", None, True)]}
            if sha is not None:
                jr["journal_sha256"] = sha
            plant_journal(txn, jr, raw=json.dumps(jr).encode())
        return setup

    def fifo():
        txn.mkdir(parents=True)
        os.mkfifo(txn / "journal.json")

    def link_journal():
        txn.mkdir(parents=True)
        (txn / "journal.json").symlink_to(victim)

    def dir_journal():
        (txn / "journal.json").mkdir(parents=True)

    def txn_is_link():
        txn.parent.mkdir(parents=True, exist_ok=True)
        txn.symlink_to(outside)

    def done_is_link():
        txn.parent.mkdir(parents=True, exist_ok=True)
        txn.with_name(txn.name + ".done").symlink_to(outside)

    return [
        ("dotdot_target", j(op(rel_up))),                        # the issue's case
        ("absolute_target", j(op(str(victim)))),                 # the issue's case
        ("dotdot_inside_target", j(op("runs/../" + rel_up))),
        ("escaping_staged", j(op("runs/new", "../../" + rel_up))),
        ("target_through_symlink", link_in_root),
        ("backslash_target", j(op("runs\\..\\x"))),
        ("empty_target", j(op(""))),
        ("committed_absolute", j(op(str(victim)), committed=True)),
        ("no_journal_hash", backup_of_manifest(None)),
        ("wrong_journal_hash", backup_of_manifest("0" * 64)),
        ("truncated", lambda: plant_journal(txn, None, raw=b'{"command": "analysis.run", "op')),
        ("no_ops", lambda: plant_journal(txn, {"command": "analysis.run"})),
        ("ops_not_a_list", lambda: plant_journal(txn, {"command": "c", "ops": {"a": 1}})),
        ("op_extra_key", j({**op("runs/x"), "also": str(victim)})),
        ("op_existed_not_bool", j(op("runs/x", existed="yes"))),
        ("journal_a_list", lambda: plant_journal(txn, None, raw=b"[]")),
        ("journal_not_utf8", lambda: plant_journal(txn, None, raw=b"\xff\xfe{")),
        ("journal_empty", lambda: plant_journal(txn, None, raw=b"")),
        ("journal_a_fifo", fifo),
        ("journal_a_symlink", link_journal),
        ("journal_a_folder", dir_journal),
        ("txn_dir_a_symlink", txn_is_link),
        ("done_dir_a_symlink", done_is_link),
    ]


ATTACK_IDS = [a for a, _ in _journal_attacks(Path("/r"), Path("/o/v"), Path("/t"))]


@pytest.mark.parametrize("attack", ATTACK_IDS)
def test_planted_export_journal_is_refused_by_verify(fe, victim, tmp_path, capsys, attack):
    """Regression (issue 21): a stale journal whose op targets ../../outside/victim.txt
    made verify delete the victim. Every planted journal is refused naming the journal
    (or transaction folder) and how to clear it; the victim and the export are intact."""
    from analysis._cli.verify import run_verify
    txn = export_txn_dir(fe)
    dict(_journal_attacks(fe, victim, txn))[attack]()
    err = refused(capsys, tmp_path, "verify", lambda cfg: run_verify(fe), txn.name, "remove",
                  argv=[f"export_root={fe}"])
    assert "nothing was touched" in err, err
    assert victim.read_text() == "precious"


@pytest.mark.parametrize("attack", ATTACK_IDS)
def test_planted_tables_journal_is_refused(tmp_path, victim, capsys, attack):
    """The same journals under <out_dir>/.e2w_tables_txn: analysis.tables refused them
    only after deleting the victim."""
    out = tmp_path / "out"
    (out / "tables").mkdir(parents=True)
    (out / "tables" / "t1.csv").write_text("a\n")
    txn = txn_dir_of(out)
    dict(_journal_attacks(out, victim, txn))[attack]()
    # the command's out_dir is the folder recovered (its default would be the checkout's)
    refused(capsys, tmp_path, "tables", lambda cfg: recover(out, txn), txn.name, "remove",
            argv=[f"out_dir={out}"])
    assert victim.read_text() == "precious"


def test_a_valid_journal_still_rolls_back(tmp_path):
    """The checks refuse nothing a real interrupted transaction leaves."""
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("old")
    t = transaction.Transaction(root, tmp_path / "txn", "test")
    t.stage_bytes("a.txt", b"new")
    t.stage_bytes("sub/b.txt", b"b")

    def boom():
        raise RuntimeError("check failed")
    with pytest.raises(RuntimeError):
        t.commit(check=boom)
    assert (root / "a.txt").read_text() == "old" and not (root / "sub" / "b.txt").exists()
    assert not (tmp_path / "txn").exists()


def test_a_transaction_folder_appearing_meanwhile_is_busy_not_a_traceback(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "txn").mkdir()
    t = transaction.Transaction(root, tmp_path / "txn", "test")
    with pytest.raises(transaction.TransactionBusy, match="already exists"):
        t.stage_bytes("a.txt", b"x")


@pytest.mark.e2e
def test_killed_owner_releases_the_transaction(tmp_path):
    """kill -9 of a process inside a transaction: its owner.lock dies with it, whatever
    owner.pid says, and the next recover rolls back."""
    root = tmp_path / "root"
    root.mkdir()
    code = ("import sys, time; from analysis._fs.transaction import Transaction; "
            "t = Transaction(sys.argv[1], sys.argv[2], 'x'); t.stage_bytes('a', b'1'); "
            "print('ok', flush=True); time.sleep(60)")
    p = subprocess.Popen([sys.executable, "-c", code, str(root), str(tmp_path / "txn")],
                         stdout=subprocess.PIPE, text=True, cwd=REPO,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        assert p.stdout.readline().strip() == "ok"
        with pytest.raises(transaction.TransactionBusy, match="holds its owner.lock"):
            recover(root, tmp_path / "txn")
    finally:
        p.kill()
        p.wait()
    (tmp_path / "txn" / "owner.pid").write_text(str(os.getpid()))  # a live PID: irrelevant
    assert "nothing of" in recover(root, tmp_path / "txn")


# --- 2. GENERATION.json ------------------------------------------------------------------

def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _generation_attacks(out: Path, victim: Path):
    gen = out / GENERATION
    notes = out / "notes.txt"

    def listing(rel_of):
        def setup():
            notes.write_text("my notes")
            files = {rel: _sha(p) for rel, p in rel_of().items()}
            gen.write_text(json.dumps({"files": files}))
        return setup

    def sub_link():
        (out / "tables" / "sub").symlink_to(victim.parent)
        gen.write_text(json.dumps({"files": {"tables/sub/victim.txt": _sha(victim)}}))

    def fifo():
        os.mkfifo(gen)

    def to_zero():
        gen.symlink_to("/dev/zero")

    def tables_link():
        shutil.rmtree(out / "tables")
        (out / "tables").symlink_to(victim.parent)

    def bad_sha():
        (out / "tables" / "old.csv").write_text("x")
        gen.write_text(json.dumps({"files": {"tables/old.csv": "not-a-sha"}}))

    return [
        ("dotdot", listing(lambda: {"../outside/victim.txt": victim})),   # the issue's case
        ("top_level_notes", listing(lambda: {"notes.txt": notes})),       # the issue's case
        ("absolute", listing(lambda: {str(victim): victim})),             # the issue's case
        ("dotdot_below_tables", listing(lambda: {"tables/../../outside/victim.txt": victim})),
        ("a_folder_name", listing(lambda: {"figures": notes})),
        ("through_a_symlink", sub_link),
        ("generation_a_fifo", fifo),
        ("generation_to_dev_zero", to_zero),
        ("tables_a_symlink", tables_link),
        ("no_sha", bad_sha),
    ]


GEN_IDS = [a for a, _ in _generation_attacks(Path("/o"), Path("/v/x"))]


@pytest.mark.parametrize("attack", GEN_IDS)
def test_generation_listing_outside_its_folders_is_refused(tmp_path, victim, capsys, attack):
    """Regression (issue 21): GENERATION.json listing ../victim.txt (or notes.txt at the
    top of out_dir) with its SHA-256 made the next tables delete it; an absolute path
    printed a false "removed". Now refused before anything is touched."""
    out = tmp_path / "out"
    (out / "tables").mkdir(parents=True)
    dict(_generation_attacks(out, victim))[attack]()
    everything = {"tables/new.csv": b"a\n", GENERATION: b"{}\n"}
    err = refused(capsys, tmp_path, "tables",
                  lambda cfg: write_generation(out, everything, progress=lambda m: None),
                  "GENERATION.json" if attack != "tables_a_symlink" else "tables",
                  argv=[f"out_dir={out}"])
    assert "nothing was touched" in err
    assert victim.read_text() == "precious"


# --- 3. resume journals ------------------------------------------------------------------

@pytest.fixture()
def interrupted(fe, tmp_path, monkeypatch, capsys):
    """An export and the resume journal of a run command interrupted after all its
    episodes (the write failed), as a kill would leave it."""
    import analysis._cli.run as run_mod
    state = tmp_path / "state"

    def fail(*a, **k):
        raise RuntimeError("interrupted")
    with monkeypatch.context() as m:
        m.setattr(run_mod, "write_run", fail)
        code, err = command(capsys, "run", _run_body, _rerun(capsys, fe, state))
    assert code == 1 and "interrupted" in err, err
    (entry_dir,) = list(state.iterdir())
    assert len(list((entry_dir / "episodes").iterdir())) == 3
    return fe, state, entry_dir / "episodes"


def _rerun(capsys, fe, state):
    return ["planner=lexicon", "suite=planner", "memory=persistent", f"export_root={fe}",
            f"state_dir={state}", "progress=false"]


def _run_body(cfg):
    from analysis._cli.run import _body
    return _body(cfg)


def _rewrite(path: Path, mutate):
    data = json.loads(gzip.decompress(path.read_bytes()))
    mutate(data)
    path.write_bytes(gzip.compress(json.dumps(data).encode(), mtime=0))


def _all_true(d):  # the issue's forgery: every condition TRUE
    for t in d["tasks"]:
        t["completed"] = True
        for c in t["conditions"]:
            c["truth"] = "TRUE"


def _forge_status(d):
    d["groups"][0]["status"] = "completed" if d["groups"][0]["status"] != "completed" \
        else "empty_plan"


def _forge_world(d):
    d["groups"][-1]["world_sha256_after"] = "0" * 64


def _extra_attempt(d):
    g = d["groups"][0]
    g["attempts"] = g["attempts"] + g["attempts"][:1]


@pytest.mark.parametrize("forgery", [_all_true, _forge_status, _forge_world, _extra_attempt])
def test_forged_resume_entry_is_refused(interrupted, tmp_path, capsys, forgery):
    """Regression (issue 21): an episode journal rewritten so that every task is completed
    was resumed from and registered (verify passed). Every journaled episode is now
    re-derived from its own planner replies before use."""
    fe, state, episodes = interrupted
    victim = episodes / "00000.json.gz"
    _rewrite(victim, forgery)
    err = refused(capsys, tmp_path, "run", _run_body, victim, "differ", "remove",
                  argv=_rerun(capsys, fe, state))
    assert "nothing written" in err and not (fe / "runs" / "lexicon__planner__persistent").exists()


def _fifo_entry(p: Path):
    p.unlink()
    os.mkfifo(p)


def _symlink_entry(p: Path):
    good = p.with_name("elsewhere.gz")
    p.rename(good)
    p.symlink_to(good.name)


def _symlinked_folder(p: Path):
    real = p.parent.with_name("real")
    p.parent.rename(real)
    p.parent.symlink_to(real.name)


@pytest.mark.parametrize("plant", [_fifo_entry, _symlink_entry, _symlinked_folder])
def test_resume_entry_that_is_no_regular_file_is_refused_without_hanging(
        interrupted, tmp_path, capsys, plant):
    fe, state, episodes = interrupted
    entry = episodes / "00001.json.gz"
    plant(entry)
    t0 = time.monotonic()
    refused(capsys, tmp_path, "run", _run_body, "remove", argv=_rerun(capsys, fe, state))
    assert time.monotonic() - t0 < 20


@pytest.mark.parametrize("damage", ["garbage", "other_episode"])
def test_damaged_resume_entry_is_rerun_and_the_run_equals_a_fresh_one(
        interrupted, base, tmp_path, capsys, damage):
    fe, state, episodes = interrupted
    if damage == "garbage":
        (episodes / "00002.json.gz").write_bytes(b"\x1f\x8bnot gzip")
    else:
        shutil.copy(episodes / "00000.json.gz", episodes / "00002.json.gz")
    code, err = command(capsys, "run", _run_body, _rerun(capsys, fe, state))
    assert code == 0, err
    fresh = Path(shutil.copytree(base, tmp_path / "fresh"))
    run_suite("lexicon", "planner", "persistent", fresh, progress=False,
              state_dir=str(tmp_path / "s2"))
    d = "runs/lexicon__planner__persistent"
    for n in ("run.json", "groups.jsonl.gz", "tasks.jsonl"):
        assert (fe / d / n).read_bytes() == (fresh / d / n).read_bytes()


def test_journal_without_derive_is_never_trusted(tmp_path):
    j = RunJournal(tmp_path, "r", {"a": 1})
    j.save(0, "e", ([{"group_id": "g"}], [], None))
    with pytest.raises(ValueError, match="cannot be checked"):
        j.load(0, "e")


# --- 4. the response cache ---------------------------------------------------------------

REQ = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
OTHER = {"model": "m", "messages": [{"role": "user", "content": "other"}]}
RESP = {"content": "a reply", "prompt_tokens": 3, "completion_tokens": 2}


@pytest.fixture()
def cache(tmp_path):
    c = ResponseCache(tmp_path / "cache")
    key = request_key(REQ)
    c.put(key, REQ, RESP)
    assert c.get(key) == RESP
    return c, key, c._path(key)


def _entry(p):
    return json.loads(p.read_text())


def _edit_reply(p):
    e = _entry(p)
    e["response"]["content"] = "forged"
    p.write_text(json.dumps(e))


def _other_body(p):
    e = _entry(p)
    e["request"] = OTHER
    p.write_text(json.dumps(e))


def _other_body_rehashed(p):
    from analysis.planners.llm.cache import _entry_sha
    e = _entry(p)
    e["request"] = OTHER
    e["sha256"] = _entry_sha(e["key"], OTHER, e["response"])
    p.write_text(json.dumps(e))


def _no_sha(p):
    e = _entry(p)
    del e["sha256"]
    p.write_text(json.dumps(e))


def _truncated(p):
    p.write_bytes(p.read_bytes()[:-7])


def _fifo(p):
    p.unlink()
    os.mkfifo(p)


def _dev_zero(p):
    p.unlink()
    p.symlink_to("/dev/zero")


def _link_to_valid(p):
    good = p.with_name("copy.json")
    shutil.copy(p, good)
    p.unlink()
    p.symlink_to(good.name)


def _folder(p):
    p.unlink()
    p.mkdir()


def _not_a_dict(p):
    from analysis.planners.llm.cache import _entry_sha
    e = _entry(p)
    e["response"] = ["x"]
    e["sha256"] = _entry_sha(e["key"], e["request"], e["response"])
    p.write_text(json.dumps(e))


@pytest.mark.parametrize("plant", [_edit_reply, _other_body, _other_body_rehashed, _no_sha,
                                   _truncated, _fifo, _dev_zero, _link_to_valid, _folder,
                                   _not_a_dict])
def test_tampered_cache_entry_is_a_miss_and_never_hangs(cache, tmp_path, plant):
    """Regression (issue 21): an entry with the right key but a changed reply, or another
    request's body, was replayed; a FIFO or a symlink to /dev/zero hung the run."""
    c, key, p = cache
    plant(p)
    t0 = time.monotonic()
    assert c.get(key) is None
    assert time.monotonic() - t0 < 5


def test_a_miss_over_a_planted_entry_is_replaced_by_a_valid_one(cache):
    c, key, p = cache
    _dev_zero(p)
    c.put(key, REQ, RESP)
    assert not p.is_symlink() and c.get(key) == RESP and Path("/dev/zero").exists()


@pytest.mark.parametrize("where", ["cache_dir_a_file", "entry_a_folder", "prefix_a_symlink",
                                   "read_only"])
def test_cache_write_faults_name_the_file(tmp_path, victim, where):
    key = request_key(REQ)
    d = tmp_path / "cache"
    if where == "cache_dir_a_file":
        d.write_text("not a folder")
    elif where == "entry_a_folder":
        (d / key[:2] / f"{key}.json").mkdir(parents=True)
    elif where == "prefix_a_symlink":
        d.mkdir()
        (d / key[:2]).symlink_to(victim.parent)
    else:
        if os.geteuid() == 0:
            pytest.skip("root writes read-only folders")
        d.mkdir()
        d.chmod(0o500)
    before = snap(tmp_path)
    with pytest.raises(CacheError) as info:
        ResponseCache(d).put(key, REQ, RESP)
    assert str(d) in str(info.value) and "not a planner failure" in str(info.value)
    assert snap(tmp_path) == before


def test_concurrent_writers_of_one_key_leave_one_valid_entry(tmp_path):
    c = ResponseCache(tmp_path / "cache")
    key = request_key(REQ)
    threads = [threading.Thread(target=c.put, args=(key, REQ, RESP)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert c.get(key) == RESP
    assert [p.name for p in c._path(key).parent.iterdir()] == [f"{key}.json"]


# --- 5. usage counts and the fault classes ---------------------------------------------------

class _FakeSDK:
    def __init__(self, usage):
        body = {"choices": [{"message": {"content": "{}"}, "finish_reason": "stop"}]}
        if usage is not None:
            body["usage"] = usage
        text = json.dumps(body)

        class Raw:
            http_response = type("R", (), {"text": text})()
        create = lambda **kw: Raw()  # noqa: E731
        self.chat = type("C", (), {"completions": type("X", (), {
            "with_raw_response": type("W", (), {"create": staticmethod(create)})()})()})()


@pytest.mark.parametrize("usage", [
    {"prompt_tokens": -1000, "completion_tokens": 5},
    {"prompt_tokens": True, "completion_tokens": 5},
    {"prompt_tokens": 10 ** 30, "completion_tokens": 5},
    {"prompt_tokens": 12, "completion_tokens": -3},
    {"prompt_tokens": 1.5, "completion_tokens": 5},
    {"prompt_tokens": "12", "completion_tokens": 5},
    {"prompt_tokens": 12, "completion_tokens": False},
])
@pytest.mark.parametrize("require", [True, False])
def test_invalid_usage_is_a_provider_error(tmp_path, usage, require):
    """Regression (issue 21): usage of -1000, true or 10^30 tokens gave a registered
    run. It is now a provider error (after the retries), never a count."""
    pytest.importorskip("openai")
    from analysis.executor.protocol import ProviderError
    from analysis.planners.llm.client import ChatClient, ClientSettings
    c = ChatClient(ClientSettings(model="m", max_retries=1, backoff_base=0.001,
                                  backoff_max=0.001, require_usage=require,
                                  cache_dir=str(tmp_path / "cache")), sleep=lambda s: None)
    c._sdk = _FakeSDK(usage)
    with pytest.raises(ProviderError, match="invalid usage"):
        c.complete([{"role": "user", "content": "hi"}])
    assert not any((tmp_path / "cache").rglob("*.json"))  # nothing cached


def test_cache_hit_with_invalid_usage_is_a_miss(tmp_path):
    pytest.importorskip("openai")
    from analysis.planners.llm.client import ChatClient, ClientSettings
    c = ChatClient(ClientSettings(model="m", cache_dir=str(tmp_path / "cache")))
    body = c.request([{"role": "user", "content": "hi"}], None)
    c.cache.put(request_key(body), body, {**RESP, "prompt_tokens": -5})
    c._sdk = _FakeSDK({"prompt_tokens": 4, "completion_tokens": 1})
    out = c.complete([{"role": "user", "content": "hi"}])
    assert (out.prompt_tokens, out.cached) == (4, False)


class _FaultyPlanner:
    name = "faulty"

    def __init__(self, exc):
        self.exc = exc

    def config(self):
        return {}

    def propose(self, view):
        raise self.exc


@pytest.mark.parametrize("exc", [OSError(errno.ENOSPC, "No space left on device", "/c/x.json"),
                                 PermissionError(errno.EACCES, "Permission denied", "/c/y"),
                                 IsADirectoryError(errno.EISDIR, "Is a directory", "/c/log")])
def test_a_local_fault_in_a_planner_stops_the_run_and_is_never_a_parse_failure(exc):
    """Regression (issue 21): cache_dir naming a file, or a full disk, gave rc 0 with
    every group parse_failure. The runtime now stops with a DiskError naming the file."""
    from analysis.executor import Rules
    from analysis.executor.runtime import RuntimeConfig, run_episode
    from analysis.planners.toy import toy_episode, toy_tasks
    with pytest.raises(DiskError) as info:
        run_episode(toy_episode(), toy_tasks(), _FaultyPlanner(exc), Rules.load(),
                    "persistent", RuntimeConfig())
    assert exc.filename in str(info.value) and "not a planner failure" in str(info.value)


def test_a_planner_bug_is_still_a_parse_failure():
    from analysis.executor import Rules
    from analysis.executor.runtime import RuntimeConfig, run_episode
    from analysis.planners.toy import toy_episode, toy_tasks
    res = run_episode(toy_episode(), toy_tasks(), _FaultyPlanner(ValueError("bug")),
                      Rules.load(), "persistent", RuntimeConfig())
    assert {g["status"] for g in res.group_records} == {"parse_failure"}


def test_cache_dir_a_file_through_the_chat_planner_stops_the_run(fe, tmp_path):
    """The whole path: chat planner, loopback endpoint, cache_dir naming a regular file.
    The run stops naming the file; nothing registered; no parse_failure anywhere."""
    pytest.importorskip("openai")
    from analysis.planners.llm.testserver import LoopbackServer
    srv = LoopbackServer().start()
    try:
        bad = tmp_path / "cache_is_a_file"
        bad.write_text("x")
        before = snap(fe)
        with pytest.raises(DiskError, match=str(bad)):
            run_suite("chat", "planner", "persistent", fe, progress=False,
                      state_dir=str(tmp_path / "state"), runtime={"max_planner_calls": 2},
                      planner_settings={"base_url": srv.url, "model": "toy-model",
                                        "cache_dir": str(bad), "timeout": 2})
        assert snap(fe) == before
    finally:
        srv.stop()


@pytest.mark.parametrize("tokens", [(-7, -3), (10 ** 12, 1)])
def test_records_with_negative_or_absurd_tokens_do_not_verify(fe, tokens):
    """Regression (issue 21): records whose every call has -7/-3 tokens, with consistent
    totals, passed add_planner with re-execution on."""
    rel = f"runs/{RID}/groups.jsonl.gz"

    def mutate(recs):
        for g in recs:
            for c in g["planner_calls"]:
                c["prompt_tokens"], c["completion_tokens"] = tokens
            g["prompt_tokens"] = tokens[0] * len(g["planner_calls"])
            g["completion_tokens"] = tokens[1] * len(g["planner_calls"])
    forge_records(fe, rel, mutate)
    with pytest.raises(IntegrityError, match="groups.jsonl.gz.*tokens"):
        verify(fe)


# --- 6. locks --------------------------------------------------------------------------

def _holder(path: Path):
    code = ("import sys, time; from analysis._fs.locking import file_lock\n"
            "with file_lock(sys.argv[1]):\n print('ok', flush=True); time.sleep(60)")
    p = subprocess.Popen([sys.executable, "-c", code, str(path)], stdout=subprocess.PIPE,
                         text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert p.stdout.readline().strip() == "ok"
    return p


@pytest.mark.e2e
def test_a_held_lock_names_its_holder_and_dies_with_it(fe, tmp_path, capsys):
    lock = lock_path(fe)
    p = _holder(lock)
    try:
        refused(capsys, tmp_path, "verify",
                lambda cfg: export_lock(fe, wait=False).__enter__(), lock, f"pid {p.pid}",
                "can never be stale", argv=[f"export_root={fe}"])
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait()
    with export_lock(fe, wait=False):  # released by the kernel with its holder
        pass


@pytest.mark.parametrize("kind", ["symlink", "fifo", "folder"])
def test_a_planted_lock_file_is_refused(fe, tmp_path, victim, capsys, kind):
    lock = lock_path(fe)
    lock.parent.mkdir(parents=True, exist_ok=True)
    if kind == "symlink":
        lock.symlink_to(victim)
    elif kind == "fifo":
        os.mkfifo(lock)
    else:
        lock.mkdir()
    refused(capsys, tmp_path, "verify", lambda cfg: export_lock(fe).__enter__(), lock,
            argv=[f"export_root={fe}"])
    assert victim.read_text() == "precious"


@pytest.mark.e2e
def test_waiting_writer_says_whom_it_waits_for(tmp_path):
    lock = tmp_path / "x.lock"
    said = []
    p = _holder(lock)
    threading.Timer(0.5, p.kill).start()
    with file_lock(lock, say=said.append):
        pass
    p.wait()
    assert len(said) == 1 and f"pid {p.pid}" in said[0] and str(lock) in said[0]


@pytest.mark.e2e
@pytest.mark.slow
def test_two_add_planner_at_once_never_give_a_raw_error(base, tmp_path):
    """Regression (issue 21): two add_planner at once: one failed with a raw
    FileExistsError (add_planner took no lock). One adds, the other refuses by name."""
    from analysis.records import write_record, write_records
    from test_add_planner import COHORT, _cohort_only
    if not (COHORT / "episodes.jsonl.gz").exists():
        pytest.skip("no compiled cohort in frozen_exports/")
    fe = _cohort_only(tmp_path / "fe")
    _, recs = run_suite("lexicon", "planner", "persistent", fe, progress=False, write=False)
    rec = tmp_path / "rec"
    write_record(rec / "run.json", recs["run"])
    write_records(rec / "groups.jsonl.gz", recs["groups"])
    write_records(rec / "tasks.jsonl", recs["tasks"])
    cmd = [sys.executable, "-m", "analysis.add_planner", f"records={rec}", "name=mine",
           f"export_root={fe}"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    ps = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=env, cwd=tmp_path) for _ in range(2)]
    outs = [(p.wait(timeout=120), p.stderr.read()) for p in ps]
    assert sorted(c for c, _ in outs) == [0, 1], outs
    err = next(e for c, e in outs if c == 1)
    assert "already holds planner 'mine'" in err and "Traceback" not in err, err
    verify(fe)


# --- 7. disk faults --------------------------------------------------------------------

def _enospc_on(monkeypatch, module, match: str):
    real = module.open if hasattr(module, "open") else open

    def fake(path, *a, **k):
        if match in str(path) and ("w" in (a[0] if a else k.get("mode", "r"))):
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return real(path, *a, **k)
    monkeypatch.setattr("builtins.open", fake)


@pytest.mark.parametrize("match", ["groups.jsonl.gz", "MANIFEST.json", "journal.json.tmp"])
def test_disk_full_while_a_run_is_written_names_the_file(fe, tmp_path, capsys, monkeypatch,
                                                         match):
    """Regression (issue 21): a full disk during run/add_planner said only
    "failed: OSError: [Errno 28] No space left on device"."""
    from analysis._cli.run import write_run
    _, recs = run_suite("lexicon", "planner", "persistent", fe, progress=False, write=False)
    if match == "MANIFEST.json":
        import analysis.records.manifest as manifest_mod

        def full(path, data):
            raise OSError(errno.ENOSPC, "No space left on device")
        monkeypatch.setattr(manifest_mod, "atomic_write_bytes", full)
    else:
        _enospc_on(monkeypatch, transaction, match)
    refused(capsys, tmp_path, "run", lambda cfg: write_run(fe, "lexicon__planner__persistent",
                                                          recs),
            "cannot write", match, "No space left on device", "nothing was changed",
            argv=["planner=lexicon", f"export_root={fe}"])


def test_disk_full_while_tables_are_written_names_the_file(tmp_path, capsys, monkeypatch):
    out = tmp_path / "out"
    out.mkdir()
    everything = {"tables/a.csv": b"a\n", "tables/b.csv": b"b\n", GENERATION: b"{}\n"}
    _enospc_on(monkeypatch, transaction, "b.csv")
    refused(capsys, tmp_path, "tables", lambda cfg: write_generation(out, everything),
            "cannot write", "b.csv", "nothing was changed", argv=[f"out_dir={out}"])


def test_disk_full_while_journaling_an_episode_names_the_file(tmp_path, monkeypatch):
    import analysis._runs.journal as ep
    j = RunJournal(tmp_path / "state", "r", {"a": 1})
    j.save(0, "e", ([], [], None))

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(ep.os, "fsync", full)
    with pytest.raises(DiskError, match=r"cannot write .*00003.json.gz: No space left"):
        j.save(3, "e", ([], [], None))
    assert [p.name for p in (j.dir / "episodes").iterdir()] == ["00000.json.gz"]


def test_disk_full_in_the_call_log_names_it(tmp_path, monkeypatch):
    from analysis.planners.llm import accounting
    log = accounting.CallLog(tmp_path / "calls.jsonl")

    def full(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(accounting.os, "write", full)
    with pytest.raises(DiskError, match="calls.jsonl"):
        log.add({"a": 1})


@pytest.mark.e2e
def test_file_size_limit_during_the_run_command(base, tmp_path):
    """A real EFBIG: the run command under RLIMIT_FSIZE (Python ignores SIGXFSZ)."""
    import resource
    fe = Path(shutil.copytree(base, tmp_path / "fe"))
    before = snap(fe)

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (600, 600))
    r = subprocess.run([sys.executable, "-m", "analysis.run", "planner=lexicon",
                        "suite=planner", "memory=persistent", f"export_root={fe}",
                        f"state_dir={tmp_path / 'state'}", "progress=false"],
                       capture_output=True, text=True, preexec_fn=limit, cwd=tmp_path,
                       env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
    assert r.returncode == 1, r.stderr
    assert "cannot write" in r.stderr and "file too large" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and snap(fe) == before


# --- 8. paths refused before work --------------------------------------------------------

def _never(cfg):
    raise AssertionError("the command started work")


@pytest.mark.parametrize("command_name, key, make", [
    ("tables", "out_dir", lambda fe, t: fe),                       # the issue's case
    ("tables", "out_dir", lambda fe, t: fe / "runs"),
    ("run", "state_dir", lambda fe, t: fe / ".state"),             # the issue's case
    ("run", "state_dir", lambda fe, t: (t / "f").write_text("x") and t / "f"),
    ("run", "planner.settings.cache_dir", lambda fe, t: (t / "f").write_text("x") and t / "f"),
    ("run", "planner.settings.cache_dir", lambda fe, t: fe / "cohort" / "cache"),
    ("run", "planner.settings.call_log", lambda fe, t: t),         # the issue's case: a folder
    ("run", "planner.settings.call_log", lambda fe, t: fe / "calls.jsonl"),
    ("run", "planner.settings.call_log",
     lambda fe, t: (t / "l").symlink_to("/dev/null") or t / "l"),
])
def test_state_paths_inside_an_export_or_of_the_wrong_kind_are_refused_before_work(
        fe, tmp_path, capsys, command_name, key, make):
    path = make(fe, tmp_path / "elsewhere" if (tmp_path / "elsewhere").mkdir() is None
                else None)
    argv = [f"export_root={fe}", f"{key}={path}"]
    if command_name == "run":
        argv = ["planner=chat", *argv]
    refused(capsys, tmp_path, command_name, _never, f"{key}={path}", code=2, argv=argv)


@pytest.mark.parametrize("folder", ["runs/zz_empty_dir", "cohort/extra", "zz_top"])
def test_an_unknown_empty_folder_in_an_export_is_refused(fe, folder):
    """Regression (issue 21): an empty extra folder runs/zz_empty_dir verified."""
    (fe / folder).mkdir()
    with pytest.raises(IntegrityError, match=f"^{folder}: .*unknown folder"):
        verify(fe)


def test_an_export_whose_runs_folder_is_empty_verifies(tmp_path):
    fe = make_export(tmp_path / "fe")
    (fe / "runs").mkdir()
    verify(fe)


def test_read_regular_refuses_what_could_block_or_never_end(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "zero").symlink_to("/dev/zero")
    for name in ("fifo", "zero"):
        with pytest.raises(ConfinementError):
            read_regular(tmp_path / name)
    with pytest.raises(ConfinementError, match="more than"):
        (tmp_path / "big").write_bytes(b"x" * 11)
        read_regular(tmp_path / "big", limit=10)


# --- 9. statistics input ---------------------------------------------------------------

def _frame(bad=None):
    rows = [{"planner": p, "task_id": f"t{i}", "episode_id": f"e{i % 8}",
             "success": float((i + k) % 2), "condition": c, "group_index": i % 4,
             "n_groups_in_episode": 4, "outcome": float(i % 2)}
            for k, p in enumerate(("a", "b", "c")) for i in range(16)
            for c in ("persistent",)]
    df = pd.DataFrame(rows)
    if bad is not None:
        df.loc[(df.planner == "b") & (df.task_id == "t3"), "success"] = bad
    return df


@pytest.mark.parametrize("bad", [np.inf, -np.inf])
def test_pairwise_refuses_an_infinite_value_naming_planner_task_and_column(bad):
    """Regression (issue 21): one inf made every contrast NaN with verdict "tie"."""
    from analysis.stats import pairwise_simultaneous
    with pytest.raises(ValueError, match=r"column 'success'.*planner='b', task_id='t3'"):
        pairwise_simultaneous(_frame(bad), ["success"], n_resamples=99)


def test_cluster_bootstrap_refuses_inf_and_an_empty_frame():
    """Regression (issue 21): inf gave estimate=inf with a NaN interval; an empty frame
    an empty table without a word."""
    from analysis.stats import cluster_bootstrap
    with pytest.raises(ValueError, match=r"'success'.*planner='b'"):
        cluster_bootstrap(_frame(np.inf), ["success"], n_resamples=99)
    with pytest.raises(ValueError, match="empty"):
        cluster_bootstrap(_frame().iloc[:0], ["success"], n_resamples=99)


def test_every_other_public_statistic_refuses_inf_and_empty_input():
    from analysis.stats import mcnemar_exact, paired_conditions, quarter_profiles, sign_flip_p
    df = _frame(np.inf)
    df2 = pd.concat([df.assign(condition="persistent"), df.assign(condition="reset")])
    with pytest.raises(ValueError, match="'success'"):
        paired_conditions(df2[df2.planner == "b"], "condition", "persistent", "reset",
                          value_cols=["success"], outcome_col="outcome", n_resamples=99)
    with pytest.raises(ValueError, match="'success'"):
        quarter_profiles(df, ["success"], condition_col="planner", n_resamples=99)
    with pytest.raises(ValueError, match="empty"):
        quarter_profiles(df.iloc[:0], ["success"], condition_col="planner", n_resamples=99)
    with pytest.raises(ValueError, match="non-finite"):
        sign_flip_p([1.0, np.inf])
    with pytest.raises(ValueError, match="non-empty"):
        sign_flip_p([])
    with pytest.raises(ValueError, match="only_a"):
        mcnemar_exact(-1, 2)


def test_the_python_api_refuses_state_and_outputs_inside_the_export(fe, tmp_path):
    from analysis._cli.tables import OutputDirError, regenerate
    before = snap(tmp_path)
    with pytest.raises(ValueError, match=r"state_dir=.*inside the export"):
        run_suite("lexicon", "planner", "persistent", fe, progress=False,
                  state_dir=str(fe / ".state"))
    with pytest.raises(OutputDirError, match=r"out_dir=.*inside the export"):
        regenerate(fe, fe, progress=lambda m: None)
    assert snap(tmp_path) == before


def test_a_planted_compile_staging_symlink_is_refused(fe, tmp_path, victim, capsys):
    from analysis._cli.compile import compile_export
    (tmp_path / ".fe.e2w_compile").symlink_to(victim.parent)
    refused(capsys, tmp_path, "compile",
            lambda cfg: compile_export(tmp_path / "nowhere", fe), ".fe.e2w_compile",
            "remove it", argv=[f"source={tmp_path}", f"out_dir={fe}"])
    assert victim.read_text() == "precious"


def test_a_fifo_or_newlines_in_a_staging_folder_never_hang_or_split_the_message(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    txn = tmp_path / "txn"
    txn.mkdir()
    os.mkfifo(txn / "command")
    os.mkfifo(txn / "owner.pid")
    t0 = time.monotonic()
    msg = recover(root, txn)
    assert "nothing of" in msg and not txn.exists() and time.monotonic() - t0 < 5
    plant_journal(txn, {"command": "x\nFORGED LINE", "ops": []})
    msg = recover(root, txn)
    assert "\n" not in msg and "rolled back" in msg


@pytest.mark.e2e
def test_the_verify_command_itself_refuses_the_issue_s_planted_journal(fe, victim, tmp_path):
    """The issue's first case end to end, as a user runs it (a subprocess)."""
    txn = export_txn_dir(fe)
    plant_journal(txn, {"command": "analysis.run",
                        "ops": [op(os.path.relpath(victim, fe))]})
    before = snap(tmp_path)
    r = subprocess.run([sys.executable, "-m", "analysis.verify", f"export_root={fe}"],
                       capture_output=True, text=True, cwd=tmp_path, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(REPO)})
    assert r.returncode == 1, r.stderr
    assert str(txn / "journal.json") in r.stderr and "remove" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert snap(tmp_path) == before and victim.read_text() == "precious"


@pytest.fixture(scope="module")
def real_records(tmp_path_factory):
    """An export of the repository's cohort (three episodes, no runs) and a lexicon run's
    records for add_planner (the toy cohort repeats group IDs, which add_planner refuses)."""
    from analysis.records import write_record, write_records
    from test_add_planner import COHORT, _cohort_only
    if not (COHORT / "episodes.jsonl.gz").exists():
        pytest.skip("no compiled cohort in frozen_exports/")
    base = _cohort_only(tmp_path_factory.mktemp("real") / "fe")
    _, recs = run_suite("lexicon", "planner", "persistent", base, progress=False, write=False)

    def write(folder: Path, groups=None):
        write_record(folder / "run.json", recs["run"])
        write_records(folder / "groups.jsonl.gz", groups or recs["groups"])
        write_records(folder / "tasks.jsonl", recs["tasks"])
        return folder
    return base, recs, write


def _add_body(cfg):
    from analysis._cli.add_planner import _body
    return _body(cfg)


def test_add_planner_refuses_negative_token_counts(real_records, tmp_path, capsys):
    """Regression (issue 21): records whose every call has -7/-3 tokens with consistent
    totals passed add_planner with re-execution on."""
    base, recs, write = real_records
    fe = Path(shutil.copytree(base, tmp_path / "fe"))
    groups = [{**g, "planner_calls": [{**c, "prompt_tokens": -7, "completion_tokens": -3}
                                      for c in g["planner_calls"]],
               "prompt_tokens": -7 * len(g["planner_calls"]),
               "completion_tokens": -3 * len(g["planner_calls"])} for g in recs["groups"]]
    rec = write(tmp_path / "rec", groups)
    refused(capsys, tmp_path, "add_planner", _add_body, rec / "groups.jsonl.gz", "line 1",
            "_tokens': expected int >= 0", argv=[f"records={rec}", "name=mine", f"export_root={fe}"])


def test_disk_full_during_add_planner_names_the_file(real_records, tmp_path, capsys,
                                                     monkeypatch):
    base, recs, write = real_records
    fe = Path(shutil.copytree(base, tmp_path / "fe"))
    rec = write(tmp_path / "rec")
    _enospc_on(monkeypatch, transaction, "tasks.jsonl")
    refused(capsys, tmp_path, "add_planner", _add_body, "cannot write", "stage/runs/mine__",
            "tasks.jsonl", "No space left on device", "nothing was changed",
            argv=[f"records={rec}", "name=mine", f"export_root={fe}", "reexecute=false"])


def test_a_reader_on_a_read_only_place_runs_without_the_lock(tmp_path, monkeypatch):
    import analysis._fs.locking as locking
    real = os.open

    def read_only(path, *a, **k):
        if str(path).endswith(".lock"):
            raise OSError(errno.EROFS, "Read-only file system", str(path))
        return real(path, *a, **k)
    monkeypatch.setattr(locking.os, "open", read_only)
    ran = []
    with export_lock(tmp_path / "export", readonly_ok=True):
        ran.append(1)
    assert ran == [1]
    with pytest.raises(DiskError, match=r"cannot write .*\.lock: Read-only file system"):
        with export_lock(tmp_path / "export"):
            pass

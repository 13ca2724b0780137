"""Issue 38 (items 6, 7 and 8): user inputs are opened through the same guard as state,
and the message-poor cases name the file, the record and the next step.

* ``compile`` hung on a FIFO in its source folder (a file left out of ``SHA256SUMS``);
* ``add_planner`` read records without a size limit (an 11 MB ``groups.jsonl.gz`` took
  6.4 GB, a 2 MB gzip bomb 4.2 GB);
* the compiler's generic error path dropped the file and the record (non-UTF-8 bytes,
  deep nesting, a wrong field type, a 5,000-digit integer);
* look-alike planner names stopped in Hydra's lexer with "write key=value";
* a shard run with other settings said only "run shard=1/2";
* a full disk left ``add_planner``'s staging folder behind.
"""
from __future__ import annotations

import errno
import gzip
import json
import os
import shutil
import time
import zlib
from pathlib import Path

import pytest

from analysis.compiler import readers as R
from analysis.compiler.readers import SourceError
from analysis.records.io import MAX_RECORD_LINE_BYTES, read_user_records

REPO = Path(__file__).resolve().parents[1]
SOURCE = Path(os.environ.get("E2W_HDEPIC", REPO.parent / "shared" / "hd-epic"))
RUN = REPO / "frozen_exports" / "runs" / "lexicon__planner__persistent"

need_source = pytest.mark.skipif(not (SOURCE / "SHA256SUMS").is_file(),
                                 reason="the HD-EPIC annotations are not here")


@pytest.fixture()
def source(tmp_path):
    return Path(shutil.copytree(SOURCE, tmp_path / "hd-epic"))


# --- compile -------------------------------------------------------------------------------

@need_source
@pytest.mark.parametrize("kind", ["fifo", "symlink"])
def test_compile_refuses_a_fifo_or_symlink_in_its_source_before_any_work(source, tmp_path,
                                                                         capsys, kind):
    """Issue item 6: a FIFO named like an activity file, left out of SHA256SUMS, hung
    the compiler forever."""
    from analysis._cli.hydra_glue import command_main
    from analysis._cli.compile import _body
    planted = source / "high-level" / "activities" / "P99_recipe_timestamps.csv"
    if kind == "fifo":
        os.mkfifo(planted)
    else:
        planted.symlink_to("/etc/passwd")
    out = tmp_path / "out"
    t0 = time.monotonic()
    with pytest.raises(SystemExit) as info:
        command_main("compile", _body, [f"source={source}", f"out_dir={out}"])
    err = capsys.readouterr().err
    assert info.value.code == 1, err
    assert str(planted) in err and f"a {'FIFO' if kind == 'fifo' else 'symlink'}" in err
    assert "remove it" in err and "Traceback" not in err
    assert not out.exists()
    assert time.monotonic() - t0 < 60


def _rewrite(source: Path, rel: str, data: bytes) -> Path:
    """Replace a source file and its line in SHA256SUMS (an edit that passes the sums)."""
    import hashlib
    (source / rel).write_bytes(data)
    sums = source / "SHA256SUMS"
    lines = [(f"{hashlib.sha256(data).hexdigest()}  {rel}" if line.endswith(f"  {rel}")
              else line) for line in sums.read_text().splitlines()]
    sums.write_text("\n".join(lines) + "\n")
    R.verify_source(source)
    return source / rel


@need_source
@pytest.mark.parametrize("case", ["non_utf8", "deep", "big_int"])
def test_a_malformed_source_file_is_named(source, case):
    """Issue item 8: these fell to the generic error path without the file."""
    raw = (source / R.RECIPES).read_bytes()
    data = {"non_utf8": b"\xff\xfe" + raw, "deep": b"[" * 200_000 + b"]" * 200_000,
            "big_int": b'{"x": ' + b"7" * 5000 + b"}"}[case]
    path = _rewrite(source, R.RECIPES, data)
    with pytest.raises(SourceError) as info:
        R.read_recipes(source)
    msg = str(info.value)
    assert str(path) in msg, msg
    assert {"non_utf8": "not UTF-8", "deep": "nested too deeply",
            "big_int": "invalid JSON"}[case] in msg
    assert "restore the file" in msg


@need_source
def test_a_wrong_field_type_names_the_file_and_the_record(source):
    data = json.loads((source / R.RECIPES).read_text())
    rid = sorted(data)[0]
    data[rid]["captures"] = [{"videos": ["v"], "ingredients": 7}]
    path = _rewrite(source, R.RECIPES, json.dumps(data).encode())
    with pytest.raises(SourceError) as info:
        R.read_recipes(source)
    msg = str(info.value)
    assert f"{path}: recipe {rid}" in msg and "wrong type or shape" in msg, msg


@need_source
def test_a_wrong_field_type_in_another_reader_names_its_record(source):
    rel = R.ASSOC
    data = json.loads((source / rel).read_text())
    vid = sorted(data)[0]
    aid = sorted(data[vid])[0]
    data[vid][aid]["tracks"] = [5]
    path = _rewrite(source, rel, json.dumps(data).encode())
    with pytest.raises(SourceError) as info:
        R.read_associations(source)
    assert f"{path}: video {vid}: association {aid}" in str(info.value), str(info.value)


# --- add_planner records -------------------------------------------------------------------

def _records(tmp_path) -> Path:
    rec = tmp_path / "rec"
    shutil.copytree(RUN, rec)
    return rec


def _bomb(path: Path, n_bytes: int, unit: bytes = b"{" + b" " * ((1 << 20) - 1)) -> None:
    c = zlib.compressobj(6, zlib.DEFLATED, 31)
    with open(path, "wb") as fh:
        for _ in range(n_bytes // len(unit) + 1):
            fh.write(c.compress(unit))
        fh.write(c.flush())


@pytest.mark.skipif(not RUN.is_dir(), reason="no committed run")
def test_a_gzip_bomb_is_refused_within_the_limit(tmp_path):
    """Issue item 7: a 2 MB gzip bomb reached 4.2 GB of memory."""
    from analysis._cli.add_planner import AddPlannerError, _read
    from analysis.records.io import MAX_RECORD_FILE_BYTES
    rec = _records(tmp_path)
    _bomb(rec / "groups.jsonl.gz", MAX_RECORD_FILE_BYTES + (1 << 20))
    assert (rec / "groups.jsonl.gz").stat().st_size < 2 << 20
    with pytest.raises(AddPlannerError) as info:
        _read(rec)
    assert str(rec / "groups.jsonl.gz") in str(info.value)
    assert f"more than {MAX_RECORD_FILE_BYTES} bytes; stopped there" in str(info.value)


def test_a_huge_line_is_refused_unparsed(tmp_path):
    """Issue item 7: an 11 MB groups.jsonl.gz took 6.4 GB parsing its line 2."""
    p = tmp_path / "groups.jsonl.gz"
    with gzip.open(p, "wb") as fh:
        fh.write(b'{"a": 1}\n{"a": "' + b"x" * (MAX_RECORD_LINE_BYTES + 1) + b'"}\n')
    with pytest.raises(ValueError, match=r"line 2: \d+ bytes, more than the 16777216"):
        read_user_records(p)


@pytest.mark.skipif(not RUN.is_dir(), reason="no committed run")
@pytest.mark.parametrize("kind", ["fifo", "symlink"])
def test_records_that_are_no_regular_file_are_refused(tmp_path, kind):
    from analysis._cli.add_planner import AddPlannerError, _read
    rec = _records(tmp_path)
    target = rec / "tasks.jsonl"
    target.unlink()
    if kind == "fifo":
        os.mkfifo(target)
    else:
        target.symlink_to(RUN / "tasks.jsonl")
    t0 = time.monotonic()
    with pytest.raises(AddPlannerError) as info:
        _read(rec)
    msg = str(info.value)
    assert time.monotonic() - t0 < 30
    assert str(target) in msg and "put the file itself there" in msg, msg


def test_an_oversized_record_file_is_refused_before_it_is_read(tmp_path):
    from analysis._fs.confine import ConfinementError
    p = tmp_path / "tasks.jsonl"
    p.write_bytes(b'{"a": 1}\n' * 200)
    with pytest.raises(ConfinementError, match=f"{p}: 1800 bytes, more than the 1000"):
        read_user_records(p, limit=1000)


def test_a_full_disk_at_the_start_of_a_transaction_leaves_no_staging(tmp_path, monkeypatch):
    """Issue item 8: with a full disk, add_planner left its staging folder (the next
    command removed it). The transaction's start now removes what it made."""
    from analysis._fs import transaction
    from analysis._fs.confine import DiskError
    root = tmp_path / "fe"
    root.mkdir()
    real = Path.write_text

    def full(self, *a, **k):
        if self.name == transaction.OWNER:
            raise OSError(errno.ENOSPC, "No space left on device", str(self))
        return real(self, *a, **k)
    monkeypatch.setattr(Path, "write_text", full)
    txn = transaction.Transaction(root, transaction.export_txn_dir(root), "analysis.add_planner")
    with pytest.raises(DiskError, match="No space left on device"):
        txn.stage_bytes("x.json", b"{}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fe"]


# --- messages --------------------------------------------------------------------------------

@pytest.mark.parametrize("name,char", [("ｌexicon", "U+FF4C"), ("lex\u200bicon", "U+200B"),
                                       ("l\u0435xicon", "U+0435")])
def test_look_alike_planner_names_get_a_clear_message(capsys, name, char):
    from analysis._cli.hydra_glue import command_main
    from analysis._cli.run import _body
    with pytest.raises(SystemExit) as info:
        command_main("run", _body, [f"planner={name}", "suite=planner"])
    err = capsys.readouterr().err
    assert info.value.code == 2, err
    assert char in err and "not ASCII" in err and "retype it: planner=lexicon" in err, err
    assert "write key=value" not in err and err.count("\n") == 1


def test_a_shard_run_with_other_settings_says_what_differs(tmp_path):
    """Issue item 8: shard 2/2 with another seed than shard 1/2 said only "run
    shard=1/2", which the user had just done."""
    from analysis._cli.run import run_suite
    from test_llm import make_export
    fe = make_export(tmp_path / "fe")
    state = tmp_path / "state"
    first, _ = run_suite("greedy_hints", "planner", "persistent", fe, progress=False,
                         state_dir=str(state), shard="1/2", seed=0)
    second, _ = run_suite("greedy_hints", "planner", "persistent", fe, progress=False,
                          state_dir=str(state), shard="2/2", seed=1)
    msg = second.note
    assert "run shard=1/2" in msg
    assert "shards of this run ID with other settings are in" in msg
    assert "seed: 1 here, 0 there" in msg, msg

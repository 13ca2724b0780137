"""Adversarial suite for export integrity (issue 12, items 1-4): each case forges or
breaks an export the way an adversary would (usually recomputing every hash so that only
the new checks can catch it), then asserts the refusal, that the one-line message names
the file and the line/record or key, and that the export is byte-identical afterwards.

Most cases call the plain functions (fast); a few run the commands as subprocesses.
Exports are small synthetic ones (tests/export_factory.py), built once and copied.
"""
from __future__ import annotations

import copy
import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

from analysis._cli.add_planner import AddPlannerError, add_planner
from analysis.executor import Rules
from analysis.executor.replay import replay_run
from analysis.records import IntegrityError, canonical_json, verify, write_record, write_records
from analysis.records.io import GZIP_HEADER, encode_records, read_records
from analysis.records.manifest import manifest_bytes, update_manifest
from analysis.planners.toy import toy_episode, toy_tasks
from analysis._cli.reexecute import reexecute

from export_factory import build_export, build_replayable_export, toy_run_records
from tree_state import tree_state as snapshot

RUN = "runs/alpha__planner__persistent"
FLAKY = "runs/flaky__planner__persistent"
STEADY = "runs/steady__planner__persistent"


# --- fixtures and helpers ----------------------------------------------------------------

@pytest.fixture(scope="module")
def templates(tmp_path_factory):
    base = tmp_path_factory.mktemp("templates")
    return {"simple": build_export(base / "simple"),
            "toy": build_replayable_export(base / "toy")}


@pytest.fixture()
def ex(templates, tmp_path):
    """A fresh copy of the small synthetic export."""
    return Path(shutil.copytree(templates["simple"], tmp_path / "export", symlinks=True))


@pytest.fixture()
def toy(templates, tmp_path):
    """A fresh copy of the replayable toy export (real runtime records)."""
    return Path(shutil.copytree(templates["toy"], tmp_path / "toy", symlinks=True))


def refuse(root: Path, *fragments: str) -> str:
    """verify(root) fails with a one-line message holding every fragment; nothing on disk
    changes."""
    before = snapshot(root)
    with pytest.raises(IntegrityError) as info:
        verify(root)
    msg = str(info.value)
    assert "\n" not in msg and "Traceback" not in msg, msg
    for frag in fragments:
        assert frag in msg, msg
    assert snapshot(root) == before
    return msg


def manifest_of(root: Path) -> dict:
    return json.loads((root / "MANIFEST.json").read_bytes())


def put_manifest(root: Path, manifest: dict) -> None:
    (root / "MANIFEST.json").write_bytes(manifest_bytes(manifest))


def lines_of(root: Path, rel: str) -> list[bytes]:
    raw = (root / rel).read_bytes()
    data = gzip.decompress(raw) if rel.endswith(".gz") else raw
    return data.split(b"\n")[:-1]


def forge(root: Path, rel: str, raw: bytes, decompressed_size: int | None = None,
          record_type: str | None = None) -> None:
    """Write ``raw`` to ``rel`` and recompute its manifest entry as an adversary would:
    size, SHA-256, decompressed size, and a record count and hash per parsable line."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(raw)
    m = manifest_of(root)
    entry = dict(m["files"].get(rel, {"record_type": record_type or "rejected_task"}))
    if record_type:
        entry["record_type"] = record_type
    entry.update(size=len(raw), sha256=hashlib.sha256(raw).hexdigest())
    if rel.endswith(".gz"):
        try:
            # (a bomb's declared size is given: never inflate it here)
            content = gzip.decompress(raw) if decompressed_size is None else b""
        except Exception:  # noqa: BLE001 - a broken stream keeps the declared size
            content = b""
        entry["decompressed_size"] = (decompressed_size if decompressed_size is not None
                                      else len(content))
    else:
        content = raw
    hashes = []
    for line in content.split(b"\n"):
        if line.strip():
            try:
                hashes.append(hashlib.sha256(canonical_json(json.loads(line))).hexdigest())
            except (ValueError, RecursionError):
                hashes.append(hashlib.sha256(line).hexdigest())
    entry.update(records=len(hashes), record_hashes=hashes)
    m["files"][rel] = entry
    put_manifest(root, m)


def forge_lines(root: Path, rel: str, lines: list[bytes]) -> None:
    data = b"".join(x + b"\n" for x in lines)
    if rel.endswith(".gz"):
        buf = __import__("io").BytesIO()
        with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as g:
            g.write(data)
        data = buf.getvalue()
    forge(root, rel, data)


def forge_records(root: Path, rel: str, mutate) -> None:
    """Parse, mutate and rewrite canonically; recompute the manifest entry."""
    recs = read_records(root / rel)
    mutate(recs)
    forge(root, rel, encode_records(rel, recs))


def edit_line(root: Path, rel: str, index: int, old: bytes, new: bytes) -> None:
    lines = lines_of(root, rel)
    assert old in lines[index], (old, lines[index][:200])
    lines[index] = lines[index].replace(old, new, 1)
    forge_lines(root, rel, lines)


def gz(data: bytes, **kw) -> bytes:
    buf = __import__("io").BytesIO()
    with gzip.GzipFile(mode="wb", fileobj=buf, **{"filename": "", "mtime": 0,
                                                 "compresslevel": 9, **kw}) as g:
        g.write(data)
    return buf.getvalue()


def run_cmd(*args, cwd, prefix=()):
    return subprocess.run([*prefix, sys.executable, "-m", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


# --- B. manifest paths that escape or alias ----------------------------------------------

def _outside_entry(root: Path) -> tuple[bytes, dict]:
    rec = {"task_id": "tX", "episode_id": "P01-ep1", "reason": "r", "detail": "d"}
    raw = canonical_json(rec) + b"\n"
    return raw, {"record_type": "rejected_task", "size": len(raw),
                 "sha256": hashlib.sha256(raw).hexdigest(), "records": 1,
                 "record_hashes": [hashlib.sha256(canonical_json(rec)).hexdigest()]}


@pytest.mark.parametrize("key, fragment", [
    ("../outside.jsonl", "segment '..'"),
    ("cohort/../../outside.jsonl", "segment '..'"),
    ("ABSOLUTE", "absolute path"),
    ("./cohort/rejected.jsonl", "segment '.'"),
    ("cohort//rejected.jsonl", "segment ''"),
    ("cohort/./rejected.jsonl", "segment '.'"),
    ("cohort\\rejected.jsonl", "backslash"),
    ("cohort/rejected.jsonl/", "segment ''"),
    ("C:/outside.jsonl", "absolute path"),
    ("cohort/.hidden.jsonl", "starts with '.'"),
    ("cohort/notes.txt", "not a record file name"),
    ("MANIFEST.json", "not a record file"),
    ("", "empty path"),
    ("cohort/t\u00e2sks.jsonl", "characters outside"),
    ("cohort/re jected.jsonl", "characters outside"),
])
def test_manifest_path_must_be_normalised_and_inside(ex, tmp_path, key, fragment):
    raw, entry = _outside_entry(ex)
    (tmp_path / "outside.jsonl").write_bytes(raw)
    (ex / "cohort" / "rejected.jsonl").write_bytes(raw)
    if key == "ABSOLUTE":
        key = str(tmp_path / "outside.jsonl")
    m = manifest_of(ex)
    m["files"]["cohort/rejected.jsonl"] = entry  # the real file, correctly listed
    m["files"][key] = dict(entry)
    put_manifest(ex, m)
    refuse(ex, "MANIFEST.json", f"files entry {key[:200]!r}", fragment)


def test_alias_of_a_listed_file_is_refused_not_counted_twice(ex):
    m = manifest_of(ex)
    m["files"]["./cohort/tasks.jsonl"] = dict(m["files"]["cohort/tasks.jsonl"])
    put_manifest(ex, m)
    refuse(ex, "MANIFEST.json", "'./cohort/tasks.jsonl'", "segment '.'")


def test_paths_differing_only_in_case(ex):
    shutil.copy(ex / "cohort/tasks.jsonl", ex / "cohort/Tasks.jsonl")
    m = manifest_of(ex)
    m["files"]["cohort/Tasks.jsonl"] = dict(m["files"]["cohort/tasks.jsonl"])
    put_manifest(ex, m)
    refuse(ex, "MANIFEST.json", "differ only in case")


def test_cohort_file_placed_under_runs(ex):
    (ex / "runs/extra").mkdir()
    shutil.copy(ex / "cohort/scenes.jsonl", ex / "runs/extra/scenes.jsonl")
    m = manifest_of(ex)
    m["files"]["runs/extra/scenes.jsonl"] = dict(m["files"]["cohort/scenes.jsonl"])
    put_manifest(ex, m)
    refuse(ex, "runs/extra/scenes.jsonl", "belongs under cohort/")


def test_a_second_task_file(ex):
    shutil.copy(ex / "cohort/tasks.jsonl", ex / "cohort/tasks2.jsonl")
    m = manifest_of(ex)
    m["files"]["cohort/tasks2.jsonl"] = dict(m["files"]["cohort/tasks.jsonl"])
    put_manifest(ex, m)
    refuse(ex, "cohort/tasks2.jsonl", "a second task file")


# --- C. symbolic links -------------------------------------------------------------------

def test_listed_file_replaced_by_a_symlink(ex, tmp_path):
    shutil.copy(ex / "cohort/suites.jsonl", tmp_path / "elsewhere.jsonl")
    (ex / "cohort/suites.jsonl").unlink()
    os.symlink(tmp_path / "elsewhere.jsonl", ex / "cohort/suites.jsonl")
    refuse(ex, "cohort/suites.jsonl", "symbolic link")


def test_run_folder_replaced_by_a_symlink(ex, tmp_path):
    shutil.move(ex / RUN, tmp_path / "alpha")
    os.symlink(tmp_path / "alpha", ex / RUN)
    refuse(ex, RUN, "symbolic link")


def test_unlisted_symlink(ex):
    os.symlink("tasks.jsonl", ex / "cohort/alias.jsonl")
    refuse(ex, "cohort/alias.jsonl", "symbolic link")


def test_manifest_is_a_symlink(ex, tmp_path):
    shutil.move(ex / "MANIFEST.json", tmp_path / "M.json")
    os.symlink(tmp_path / "M.json", ex / "MANIFEST.json")
    refuse(ex, "MANIFEST.json", "symbolic link")


def test_symlink_loop(ex):
    os.symlink("loop", ex / "cohort/loop")
    refuse(ex, "cohort/loop", "symbolic link")


# --- D. duplicate JSON keys --------------------------------------------------------------

def test_duplicate_files_key_in_manifest(ex):
    raw = (ex / "MANIFEST.json").read_bytes()
    assert raw.startswith(b'{\n "files": {')
    (ex / "MANIFEST.json").write_bytes(raw.replace(b'{\n "files": {', b'{\n "files": {},\n "files": {', 1))
    refuse(ex, "MANIFEST.json", "duplicate key 'files'")


def test_duplicate_key_inside_a_manifest_entry(ex):
    raw = (ex / "MANIFEST.json").read_bytes()
    (ex / "MANIFEST.json").write_bytes(raw.replace(b'"record_type": "task",', b'"record_type": "task",\n   "record_type": "suite",', 1))
    refuse(ex, "MANIFEST.json", "duplicate key 'record_type'")


def test_duplicate_key_in_a_record(ex):
    edit_line(ex, f"{RUN}/tasks.jsonl", 0, b'{"completed":true', b'{"completed":false,"completed":true')
    refuse(ex, f"{RUN}/tasks.jsonl", "line 1", "duplicate key 'completed'")


def test_duplicate_key_nested_in_an_attempt(ex):
    edit_line(ex, f"{RUN}/groups.jsonl.gz", 1, b'"index":0', b'"index":5,"index":0')
    refuse(ex, f"{RUN}/groups.jsonl.gz", "line 2", "duplicate key 'index'")


def test_duplicate_key_in_a_free_form_object(ex):
    edit_line(ex, "cohort/tasks.jsonl", 2, b'"refs":{}', b'"refs":{"x":1,"x":2}')
    refuse(ex, "cohort/tasks.jsonl", "line 3", "duplicate key 'x'")


def test_duplicate_key_in_a_json_file(ex):
    edit_line(ex, f"{RUN}/run.json", 0, b'"seed":0', b'"seed":1,"seed":0')
    refuse(ex, f"{RUN}/run.json", "line 1", "duplicate key 'seed'")


# --- E. non-canonical bytes (hashes recomputed) ------------------------------------------

def test_byte_order_mark(ex):
    forge(ex, "cohort/tasks.jsonl", b"\xef\xbb\xbf" + (ex / "cohort/tasks.jsonl").read_bytes())
    refuse(ex, "cohort/tasks.jsonl", "line 1", "byte-order mark")


def test_crlf_line_endings(ex):
    forge(ex, "cohort/tasks.jsonl", (ex / "cohort/tasks.jsonl").read_bytes().replace(b"\n", b"\r\n"))
    refuse(ex, "cohort/tasks.jsonl", "line 1", "carriage return")


def test_whitespace_after_colon(ex):
    edit_line(ex, "cohort/suites.jsonl", 0, b'"suite":', b'"suite": ')
    refuse(ex, "cohort/suites.jsonl", "line 1", "not in canonical form")


def test_keys_out_of_order(ex):
    lines = lines_of(ex, "cohort/tasks.jsonl")
    rec = json.loads(lines[1])
    lines[1] = json.dumps(dict(reversed(list(rec.items()))), separators=(",", ":"),
                          ensure_ascii=False).encode()
    forge_lines(ex, "cohort/tasks.jsonl", lines)
    refuse(ex, "cohort/tasks.jsonl", "line 2", "record t2", "not in canonical form")


def test_missing_final_newline(ex):
    forge(ex, "cohort/tasks.jsonl", (ex / "cohort/tasks.jsonl").read_bytes()[:-1])
    refuse(ex, "cohort/tasks.jsonl", "line 4", "does not end with")


def test_blank_line(ex):
    lines = lines_of(ex, "cohort/tasks.jsonl")
    forge_lines(ex, "cohort/tasks.jsonl", lines[:2] + [b""] + lines[2:])
    refuse(ex, "cohort/tasks.jsonl", "line 3", "blank line")


def test_unicode_escape_instead_of_utf8(ex):
    edit_line(ex, "cohort/tasks.jsonl", 0, b'"title":"task t1"', b'"title":"caf\\u00e9"')
    refuse(ex, "cohort/tasks.jsonl", "line 1", "record t1", "not in canonical form")


def test_escaped_slash(ex):
    edit_line(ex, "cohort/tasks.jsonl", 0, b'"title":"task t1"', b'"title":"a\\/b"')
    refuse(ex, "cohort/tasks.jsonl", "line 1", "not in canonical form")


def test_non_canonical_float(ex):
    edit_line(ex, "cohort/episodes.jsonl.gz", 0, b'"start":0.0', b'"start":0.00')
    refuse(ex, "cohort/episodes.jsonl.gz", "line 1", "record P01-ep1", "0.00",
           "not in canonical form (expected 0.0)")


def test_exponent_float_written_without_sign(ex):
    edit_line(ex, "cohort/episodes.jsonl.gz", 0, b'"start":0.0', b'"start":1e16')
    refuse(ex, "cohort/episodes.jsonl.gz", "line 1", "expected 1e+16")


def test_integer_written_as_float(ex):
    edit_line(ex, f"{RUN}/groups.jsonl.gz", 0, b'"index":0', b'"index":0.0')
    refuse(ex, f"{RUN}/groups.jsonl.gz", "line 1", "'attempts[0].index'", "expected int, got float")


def test_split_gzip_members(ex):
    rel = f"{RUN}/groups.jsonl.gz"
    lines = lines_of(ex, rel)
    data = [b"".join(x + b"\n" for x in part) for part in (lines[:4], lines[4:])]
    forge(ex, rel, gz(data[0]) + gz(data[1]))
    refuse(ex, rel, "after the gzip member")


def test_gzip_with_a_timestamp(ex):
    rel = f"{RUN}/groups.jsonl.gz"
    forge(ex, rel, gz(gzip.decompress((ex / rel).read_bytes()), mtime=1_700_000_000))
    refuse(ex, rel, "gzip header is not the canonical one")


def test_gzip_with_a_file_name(ex):
    rel = f"{RUN}/groups.jsonl.gz"
    forge(ex, rel, gz(gzip.decompress((ex / rel).read_bytes()), filename="groups.jsonl"))
    refuse(ex, rel, "gzip header")


def test_gzip_with_trailing_bytes(ex):
    rel = f"{RUN}/groups.jsonl.gz"
    forge(ex, rel, (ex / rel).read_bytes() + b"\0" * 16)
    refuse(ex, rel, "16 byte(s) after the gzip member")


def test_gzip_at_another_compression_level(ex):
    rel = f"{RUN}/groups.jsonl.gz"
    forge(ex, rel, gz(gzip.decompress((ex / rel).read_bytes()), compresslevel=1))
    refuse(ex, rel, "gzip header")


def test_truncated_gzip_with_recomputed_hash(ex):
    rel = f"{RUN}/groups.jsonl.gz"
    raw = (ex / rel).read_bytes()
    forge(ex, rel, raw[:-20], decompressed_size=len(gzip.decompress(raw)))
    refuse(ex, rel, "truncated")


def test_gzip_with_a_wrong_crc(ex):
    rel = f"{RUN}/groups.jsonl.gz"
    raw = bytearray((ex / rel).read_bytes())
    raw[-8] ^= 0xFF
    content_size = len(gzip.decompress((ex / rel).read_bytes()))
    forge(ex, rel, bytes(raw), decompressed_size=content_size)
    refuse(ex, rel, "CRC")


def test_manifest_in_compact_form(ex):
    m = manifest_of(ex)
    (ex / "MANIFEST.json").write_bytes(json.dumps(m, sort_keys=True).encode() + b"\n")
    refuse(ex, "MANIFEST.json", "not in canonical form")


def test_manifest_with_bom(ex):
    (ex / "MANIFEST.json").write_bytes(b"\xef\xbb\xbf" + (ex / "MANIFEST.json").read_bytes())
    refuse(ex, "MANIFEST.json", "byte-order mark")


def test_manifest_with_crlf(ex):
    p = ex / "MANIFEST.json"
    p.write_bytes(p.read_bytes().replace(b"\n", b"\r\n"))
    refuse(ex, "MANIFEST.json", "carriage return")


def test_json_file_with_two_records(ex):
    rel = f"{RUN}/run.json"
    forge(ex, rel, (ex / rel).read_bytes() * 2)
    refuse(ex, rel, "line 2", "exactly one record line")


# --- F. format_version -------------------------------------------------------------------

@pytest.mark.parametrize("value, fragment", [
    (999, "format_version 999 is not supported"), (1, "format_version 1 is not supported"),
    ("2", "format_version '2' is not supported"), (True, "format_version True"),
    (2.0, "format_version 2.0"), (None, "format_version None")])
def test_unknown_format_version(ex, value, fragment):
    m = manifest_of(ex)
    m["format_version"] = value
    put_manifest(ex, m)
    refuse(ex, "MANIFEST.json", fragment, "known: [2]")


def test_missing_format_version(ex):
    m = manifest_of(ex)
    del m["format_version"]
    put_manifest(ex, m)
    refuse(ex, "MANIFEST.json", "format_version", "missing")


# --- G. gzip bombs -----------------------------------------------------------------------

GIB = 1 << 30


def _bomb(first: bytes) -> bytes:
    """A canonical-header gzip member of 1 GiB (about 1 MB): ``first`` then spaces, built
    from full-flushed compressed MiBs (so the test does not compress 1 GiB)."""
    chunk = b" " * (1 << 20)
    head = first + chunk[len(first):]
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    start = c.compress(head) + c.flush(zlib.Z_FULL_FLUSH)
    block = c.compress(chunk) + c.flush(zlib.Z_FULL_FLUSH)
    assert block == c.compress(chunk) + c.flush(zlib.Z_FULL_FLUSH)
    crc = zlib.crc32(head)
    for _ in range(1023):
        crc = zlib.crc32(chunk, crc)
    body = start + block * 1023 + c.flush()
    return GZIP_HEADER + body + crc.to_bytes(4, "little") + (GIB & 0xFFFFFFFF).to_bytes(4, "little")


@pytest.fixture(scope="module")
def bomb() -> tuple[bytes, int]:
    """1 GiB of spaces (issue 12, c50)."""
    return _bomb(b""), GIB


@pytest.fixture(scope="module")
def brace_bomb() -> tuple[bytes, int]:
    """'{' and then 1 GiB of spaces: it starts like a record."""
    return _bomb(b"{"), GIB


def _timed_refuse(root, *frags):
    t = time.perf_counter()
    msg = refuse(root, *frags)
    assert time.perf_counter() - t < 5, "a bomb must be refused quickly"
    return msg


def test_bomb_with_the_old_manifest_is_refused_by_its_hash(ex, bomb):
    rel = f"{RUN}/groups.jsonl.gz"
    (ex / rel).write_bytes(bomb[0])
    _timed_refuse(ex, rel, "larger than the manifest's size")


def test_bomb_with_recomputed_hash_is_capped_by_decompressed_size(ex, brace_bomb):
    rel = f"{RUN}/groups.jsonl.gz"
    old = manifest_of(ex)["files"][rel]["decompressed_size"]
    forge(ex, rel, brace_bomb[0], decompressed_size=old)
    _timed_refuse(ex, rel, f"more than the manifest's decompressed_size ({old} bytes)")


def test_bomb_declaring_its_full_size_is_refused_at_the_first_slice(ex, bomb):
    rel = f"{RUN}/groups.jsonl.gz"
    forge(ex, rel, bomb[0], decompressed_size=bomb[1])
    _timed_refuse(ex, rel, "starts with b' '")


def test_content_one_byte_over_the_declared_size(ex):
    rel = f"{RUN}/groups.jsonl.gz"
    raw = (ex / rel).read_bytes()
    forge(ex, rel, raw, decompressed_size=len(gzip.decompress(raw)) - 1)
    refuse(ex, rel, "more than the manifest's decompressed_size")


def test_content_smaller_than_the_declared_size(ex):
    rel = f"{RUN}/groups.jsonl.gz"
    raw = (ex / rel).read_bytes()
    forge(ex, rel, raw, decompressed_size=len(gzip.decompress(raw)) + 5)
    refuse(ex, rel, "the manifest says")


@pytest.mark.e2e
def test_bomb_through_the_command_uses_bounded_memory(ex, bomb, tmp_path):
    rel = f"{RUN}/groups.jsonl.gz"
    forge(ex, rel, bomb[0], decompressed_size=bomb[1])
    before = snapshot(ex)
    timer = shutil.which("time") or "/usr/bin/time"
    if not os.path.exists(timer):
        pytest.skip("no /usr/bin/time to measure the command's peak memory")
    t = time.perf_counter()
    # measured by time(1), a small fresh process, so the peak is the command's own
    res = run_cmd("analysis.verify", f"export_root={ex}", cwd=tmp_path,
                  prefix=(timer, "-f", "peak_kib=%M"))
    assert time.perf_counter() - t < 30
    err = [x for x in res.stderr.splitlines()
           if not x.startswith(("peak_kib=", "Command exited"))]
    assert res.returncode == 1 and rel in err[0] and len(err) == 1, res.stderr
    peak = int(res.stderr.rsplit("peak_kib=", 1)[1].split()[0])
    assert peak < 400 * 1024, f"peak {peak} KiB"
    assert snapshot(ex) == before


# --- H. manifest field types ---------------------------------------------------------------

def _entry_edit(field, value):
    def edit(m):
        m["files"]["cohort/tasks.jsonl"][field] = value
    return edit


@pytest.mark.parametrize("edit, fragments", [
    (_entry_edit("record_hashes", None), ("'cohort/tasks.jsonl'.record_hashes", "expected array, got null")),
    (_entry_edit("record_type", ["suite"]), ("'cohort/tasks.jsonl'.record_type", "got array")),
    (_entry_edit("record_type", "bogus"), ("'cohort/tasks.jsonl'.record_type", "bogus")),
    (_entry_edit("size", "12"), ("'cohort/tasks.jsonl'.size", "expected int, got str")),
    (_entry_edit("size", -1), ("'cohort/tasks.jsonl'.size", ">= 0")),
    (_entry_edit("sha256", "xyz"), ("'cohort/tasks.jsonl'.sha256", "matching regex")),
    (_entry_edit("records", 99), ("'cohort/tasks.jsonl'", "records 99 != 4 record_hashes")),
    (_entry_edit("decompressed_size", 10), ("'cohort/tasks.jsonl'", "decompressed_size is required for .gz")),
    (_entry_edit("foo", 1), ("unknown field", "foo")),
    (lambda m: m["files"]["cohort/tasks.jsonl"].pop("sha256"), ("'cohort/tasks.jsonl'.sha256", "missing")),
    (lambda m: m["files"][f"{RUN}/groups.jsonl.gz"].pop("decompressed_size"),
     (f"'{RUN}/groups.jsonl.gz'", "decompressed_size is required")),
    (lambda m: m.__setitem__("files", list(m["files"])), ("files", "expected object, got array")),
    (lambda m: m.__setitem__("runs", []), ("runs", "expected object, got array")),
    (lambda m: m.__setitem__("extra", 1), ("unknown field 'extra'",)),
    (lambda m: m["runs"].__setitem__("nobody__planner__persistent", {"reexecuted": True}),
     ("runs entry 'nobody__planner__persistent'",)),
    (lambda m: m["runs"].__setitem__("alpha__planner__persistent", {"reexecuted": "yes"}),
     ("runs entry 'alpha__planner__persistent'.reexecuted", "expected bool, got str")),
])
def test_bad_manifest_field(ex, edit, fragments):
    m = manifest_of(ex)
    edit(m)
    put_manifest(ex, m)
    refuse(ex, "MANIFEST.json", *fragments)


@pytest.mark.parametrize("raw, fragment", [
    (b"", "not valid JSON"), (b"[]\n", "expected object, got array"),
    (b"[" * 200_000, "MANIFEST.json"), (b'{"files": {}}', "format_version")])
def test_manifest_that_is_not_an_object(ex, raw, fragment):
    (ex / "MANIFEST.json").write_bytes(raw)
    refuse(ex, "MANIFEST.json", fragment)


def test_missing_manifest(ex):
    (ex / "MANIFEST.json").unlink()
    refuse(ex, "MANIFEST.json", "missing")


# --- I. big floats, deep nesting, big integers -------------------------------------------

def test_float_overflow_in_a_free_form_object(ex):
    edit_line(ex, "cohort/tasks.jsonl", 1, b'"refs":{}', b'"refs":{"t":1e999}')
    refuse(ex, "cohort/tasks.jsonl", "line 2", "record t2", "1e999", "out of range")


def test_negative_float_overflow(ex):
    edit_line(ex, "cohort/episodes.jsonl.gz", 1, b'"start":0.0', b'"start":-1e999')
    refuse(ex, "cohort/episodes.jsonl.gz", "line 2", "-1e999", "out of range")


def test_float_overflow_in_an_integer_field(ex):
    edit_line(ex, f"{RUN}/groups.jsonl.gz", 0, b'"prompt_tokens":10,', b'"prompt_tokens":1e999,')
    refuse(ex, f"{RUN}/groups.jsonl.gz", "line 1", "prompt_tokens")


def test_nan_with_recomputed_hash(ex):
    edit_line(ex, "cohort/tasks.jsonl", 1, b'"refs":{}', b'"refs":{"t":NaN}')
    refuse(ex, "cohort/tasks.jsonl", "line 2", "NaN")


def test_deep_nesting_in_a_record(ex):
    edit_line(ex, "cohort/tasks.jsonl", 1, b'"refs":{}', b'"refs":{"t":' + b"[" * 200_000 + b"]" * 200_000 + b"}")
    refuse(ex, "cohort/tasks.jsonl", "line 2", "nested too deeply")


def test_deep_unbalanced_nesting(ex):
    edit_line(ex, "cohort/tasks.jsonl", 1, b'"refs":{}', b'"refs":{"t":' + b"[" * 200_000)
    refuse(ex, "cohort/tasks.jsonl", "line 2")


def test_moderate_nesting_and_big_integers_are_valid(ex):
    """Controls: legitimate values still verify."""
    edit_line(ex, f"{RUN}/run.json", 0, b'"planner_config":{}',
              b'"planner_config":{"n":' + b"[" * 50 + b"1" + b"]" * 50 + b',"z":'
              + str(10**30).encode() + b"}")
    assert verify(ex).n_files == 10


# --- J. unreadable or special files ------------------------------------------------------

def test_fifo_in_place_of_a_listed_file(ex):
    (ex / "cohort/suites.jsonl").unlink()
    os.mkfifo(ex / "cohort/suites.jsonl")
    refuse(ex, "cohort/suites.jsonl", "not a regular file")


def test_folder_in_place_of_a_listed_file(ex):
    (ex / "cohort/suites.jsonl").unlink()
    (ex / "cohort/suites.jsonl").mkdir()
    refuse(ex, "cohort/suites.jsonl", "missing")


def test_unreadable_file_in_process(ex, monkeypatch):
    real = os.open

    def deny(path, *a, **k):
        if str(path).endswith("cohort/tasks.jsonl"):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path, *a, **k)
    monkeypatch.setattr(os, "open", deny)
    refuse(ex, "cohort/tasks.jsonl", "cannot be read", "Permission denied")


def test_unreadable_folder_in_process(ex, monkeypatch):
    real = os.scandir

    def deny(path="."):
        if str(path).endswith("/runs"):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)
    monkeypatch.setattr(os, "scandir", deny)
    refuse(ex, "runs", "unreadable folder", "Permission denied")


def _as_unprivileged():
    if os.geteuid() != 0:
        return ()
    if shutil.which("setpriv") is None:
        pytest.skip("root without setpriv: permissions cannot be enforced")
    return ("setpriv", "--bounding-set=-dac_override,-dac_read_search")


@pytest.mark.e2e
@pytest.mark.parametrize("target, fragment", [("cohort/tasks.jsonl", "cannot be read"),
                                              (RUN, "unreadable folder")])
def test_unreadable_path_through_the_command(ex, tmp_path, target, fragment):
    prefix = _as_unprivileged()
    before = snapshot(ex)
    os.chmod(ex / target, 0)
    try:
        res = run_cmd("analysis.verify", f"export_root={ex}", cwd=tmp_path, prefix=prefix)
    finally:
        os.chmod(ex / target, 0o755 if (ex / target).is_dir() else 0o644)
    assert res.returncode == 1, res.stdout + res.stderr
    err = res.stderr.strip()
    assert target in err and fragment in err and "Traceback" not in err, err
    assert len(err.splitlines()) == 1, err
    assert snapshot(ex) == before


# --- K. missing and extra files ----------------------------------------------------------

def test_listed_file_missing(ex):
    (ex / f"{RUN}/tasks.jsonl").unlink()
    refuse(ex, f"{RUN}/tasks.jsonl", "missing")


@pytest.mark.parametrize("stray", ["cohort/notes.txt", "cohort/.DS_Store",
                                   "runs/.alpha.x1.tmp/run.json", "stray.jsonl"])
def test_file_on_disk_not_listed(ex, stray):
    (ex / stray).parent.mkdir(parents=True, exist_ok=True)
    (ex / stray).write_bytes(b"{}\n")
    refuse(ex, stray, "not in the manifest")


def test_unexpected_listed_file_in_a_run(ex):
    shutil.copy(ex / f"{RUN}/tasks.jsonl", ex / f"{RUN}/tasks2.jsonl")
    m = manifest_of(ex)
    m["files"][f"{RUN}/tasks2.jsonl"] = dict(m["files"][f"{RUN}/tasks.jsonl"])
    put_manifest(ex, m)
    refuse(ex, f"{RUN}/tasks2.jsonl", "unexpected file in run")


# --- L. duplicate IDs --------------------------------------------------------------------

@pytest.mark.parametrize("rel, index, key, rid", [
    (f"{RUN}/groups.jsonl.gz", 3, "group_id", "P01-ep1/g000"),
    (f"{RUN}/tasks.jsonl", 2, "task_id", "t1"),
    ("cohort/episodes.jsonl.gz", 1, "episode_id", "P01-ep1"),
    ("cohort/scenes.jsonl", 1, "scene_id", "P01"),
])
def test_duplicate_ids(ex, rel, index, key, rid):
    def dup(recs):
        recs[index] = {**recs[index], key: rid}
        if key == "group_id":  # a group is identified within its episode
            recs[index]["episode_id"] = "P01-ep1"
    forge_records(ex, rel, dup)
    refuse(ex, rel, f"line {index + 1}", f"record {rid}", "duplicate ID")


def test_repeated_condition_in_a_contract(ex):
    forge_records(ex, "cohort/tasks.jsonl", lambda r: r[0]["contract"]["conditions"].__setitem__(
        1, {**r[0]["contract"]["conditions"][1], "id": "c1"}))
    refuse(ex, "cohort/tasks.jsonl", "line 1", "record t1", "condition IDs repeat")


def test_suite_repeats_a_task(ex):
    forge_records(ex, "cohort/suites.jsonl", lambda r: r[0]["task_ids"].append("t1"))
    refuse(ex, "cohort/suites.jsonl", "record planner", "repeat")


# --- M. runs that do not match the cohort (verify, no replay) ----------------------------

def _task_rec(idx, **change):
    return lambda r: r[idx].update(change)


@pytest.mark.parametrize("rel, mutate, fragments", [
    (f"{RUN}/groups.jsonl.gz", lambda r: r.pop(4), ("lacks 1 group record", "P01-ep2/g001")),
    (f"{RUN}/tasks.jsonl", lambda r: r.pop(1), ("does not cover", "t2")),
    (f"{RUN}/tasks.jsonl", _task_rec(0, task_id="t9"), ("line 1", "record t9", "not in suite")),
    (f"{RUN}/groups.jsonl.gz", _task_rec(0, group_id="P09-x/g000"), ("line 1", "not of suite")),
    (f"{RUN}/tasks.jsonl", _task_rec(0, episode_id="P02-ep1"), ("line 1", "record t1", "belongs to 'P01-ep1'")),
    (f"{RUN}/groups.jsonl.gz", _task_rec(0, episode_id="P02-ep1"), ("line 1", "belongs to 'P01-ep1'")),
    (f"{RUN}/groups.jsonl.gz", _task_rec(0, run_id="beta__planner__persistent"), ("line 1", "run_id")),
    # a01: a task's conditions [c1, c2] replaced by [c1, c1]
    (f"{RUN}/tasks.jsonl", lambda r: r[0]["conditions"].__setitem__(1, dict(r[0]["conditions"][0])),
     ("line 1", "record t1", "['c1', 'c1']", "['c1', 'c2']")),
    # c48: an extra condition
    (f"{RUN}/tasks.jsonl", lambda r: r[1]["conditions"].append({"id": "c99", "truth": "TRUE"}),
     ("line 2", "record t2", "'c99'")),
    (f"{RUN}/tasks.jsonl", lambda r: r[0]["conditions"].reverse(), ("line 1", "in order")),
    (f"{RUN}/tasks.jsonl", lambda r: r[0]["conditions"].pop(), ("line 1", "record t1", "conditions ['c1']")),
    (f"{RUN}/tasks.jsonl", _task_rec(0, completed=False), ("line 1", "record t1", "completed is False")),
    (f"{RUN}/tasks.jsonl", lambda r: r[1]["conditions"][0].update(truth="UNKNOWN"),
     ("line 2", "record t2", "impossible for an event of a completed task")),
])
def test_run_records_cross_checked_with_the_cohort(ex, rel, mutate, fragments):
    forge_records(ex, rel, mutate)
    refuse(ex, rel, *fragments)


def test_incomplete_task_cannot_claim_a_true_atom(ex):
    forge_records(ex, f"{RUN}/groups.jsonl.gz", lambda r: r[0].update(status="parse_failure"))
    forge_records(ex, f"{RUN}/tasks.jsonl", _task_rec(0, completed=False))
    refuse(ex, f"{RUN}/tasks.jsonl", "line 1", "record t1", "impossible for a task that did "
           "not complete")


def test_run_folder_without_run_json(ex):
    (ex / f"{RUN}/run.json").unlink()
    m = manifest_of(ex)
    del m["files"][f"{RUN}/run.json"]
    put_manifest(ex, m)
    refuse(ex, f"{RUN}/run.json", "no run.json")


def test_run_without_its_groups_file(ex):
    (ex / f"{RUN}/groups.jsonl.gz").unlink()
    m = manifest_of(ex)
    del m["files"][f"{RUN}/groups.jsonl.gz"]
    put_manifest(ex, m)
    refuse(ex, f"{RUN}/groups.jsonl.gz", "missing for run")


def test_suite_names_an_unknown_episode(ex):
    forge_records(ex, "cohort/suites.jsonl", lambda r: r[0]["episode_ids"].append("P09-x"))
    refuse(ex, "cohort/suites.jsonl", "unknown episode 'P09-x'")


# --- A. forged outcomes: re-execution derives them ---------------------------------------

def _toy_cohort():
    ep = toy_episode()
    return {ep["episode_id"]: ep}, {t["task_id"]: t for t in toy_tasks()}


RULES = Rules.load()


def _replay(run, groups, tasks):
    episodes, cohort_tasks = _toy_cohort()
    suite = {"suite": "planner", "episode_ids": list(episodes),
             "task_ids": list(cohort_tasks)}
    return replay_run(run["run_id"], groups, tasks, episodes, cohort_tasks, RULES, run=run,
                      suite=suite)


@pytest.fixture(scope="module")
def flaky(templates):
    root = templates["toy"]
    return tuple(read_records(root / FLAKY / f) for f in ("run.json", "groups.jsonl.gz",
                                                           "tasks.jsonl"))


def _a05(groups, tasks, truth):
    """Relabel the parse_failure group as completed and its task as completed."""
    g = copy.deepcopy(groups)
    t = copy.deepcopy(tasks)
    (bad,) = [x for x in g if x["status"] == "parse_failure"]
    bad["status"] = "completed"
    t[0].update(completed=True, conditions=[{"id": "c1", "truth": truth}])
    return g, t


def test_flaky_run_has_a_parse_failure(flaky):
    run, groups, tasks = flaky
    assert [g["status"] for g in groups] == ["completed", "parse_failure", "completed"]
    assert _replay(run[0], groups, tasks).ok


@pytest.mark.parametrize("forgery, field", [
    ("a01", "conditions"), ("c48", "conditions"), ("flip_truth", "conditions[c1].truth"),
    ("a05", "status"), ("relabel_blocked", "status"), ("drop_call", "attempts"),
    ("extra_call", "planner_calls"), ("raw", "attempts[0].raw"),
    ("source", "attempts[0].source"), ("counter", "belief.anchor_delta_conflicts"),
    ("drop_attempt", "attempts"), ("completed", "completed"),
    ("missing_task", "task_id"), ("duplicate_group", "group_id")])
def test_replay_derives_every_outcome(flaky, forgery, field):
    run, groups, tasks = copy.deepcopy(flaky)
    run = run[0]
    if forgery == "a01":
        tasks[1]["conditions"].append(dict(tasks[1]["conditions"][0]))
    elif forgery == "c48":
        tasks[1]["conditions"].append({"id": "c99", "truth": "TRUE"})
    elif forgery == "flip_truth":
        tasks[1]["conditions"][0]["truth"] = "FALSE"
    elif forgery == "a05":
        groups, tasks = _a05(groups, tasks, "TRUE")
    elif forgery == "relabel_blocked":
        groups[1]["status"] = "execution_blocked"
    elif forgery == "drop_call":
        groups[2]["planner_calls"].pop()
    elif forgery == "extra_call":
        groups[0]["planner_calls"].append(dict(groups[0]["planner_calls"][-1]))
    elif forgery == "raw":
        groups[0]["attempts"][0]["raw"] = '{"args":[],"type":"noop"}'
    elif forgery == "source":
        groups[0]["attempts"][0]["source"] = "repair"
    elif forgery == "counter":
        groups[0]["belief"]["anchor_delta_conflicts"] += 1
    elif forgery == "drop_attempt":
        groups[0]["attempts"].pop()
    elif forgery == "completed":
        tasks[1]["completed"] = False
    elif forgery == "missing_task":
        tasks.pop(0)
    elif forgery == "duplicate_group":
        groups.append(copy.deepcopy(groups[0]))
    rep = _replay(run, groups, tasks)
    assert not rep.ok
    d = rep.divergences[0]
    assert d.field == field, d.message()
    assert d.file in ("groups.jsonl.gz", "tasks.jsonl") and d.record_id, d.message()


def test_replay_refuses_unknown_runtime_settings(flaky):
    run, groups, tasks = copy.deepcopy(flaky)
    run[0]["planner_config"]["runtime"]["turbo"] = True
    d = _replay(run[0], groups, tasks).divergences[0]
    assert (d.file, d.field) == ("run.json", "planner_config.runtime") and "turbo" in str(d.recorded)


def test_replay_refuses_an_attempt_limit_that_is_not_the_loop_s(flaky):
    run, groups, tasks = copy.deepcopy(flaky)
    run[0]["attempt_limit"] = 79
    d = _replay(run[0], groups, tasks).divergences[0]
    assert d.field == "planner_config.runtime" and "attempt_limit" in str(d.recorded)


def _write_forged_run(toy, forgery):
    run, groups, tasks = (read_records(toy / FLAKY / f)
                          for f in ("run.json", "groups.jsonl.gz", "tasks.jsonl"))
    if forgery == "a05":
        for truth in ("TRUE", "FALSE"):
            g, t = _a05(groups, tasks, truth)
            write_records(toy / FLAKY / "groups.jsonl.gz", g)
            write_records(toy / FLAKY / "tasks.jsonl", t)
            update_manifest(toy, {f"{FLAKY}/groups.jsonl.gz": "group_record",
                                  f"{FLAKY}/tasks.jsonl": "task_record"})
            try:
                verify(toy)
                return  # the forgery verify cannot see: only re-execution can
            except IntegrityError:
                continue
        raise AssertionError("a05 forgery should pass verification")
    if forgery == "a01":
        tasks[1]["conditions"].append(dict(tasks[1]["conditions"][0]))
    write_records(toy / FLAKY / "tasks.jsonl", tasks)
    update_manifest(toy, {f"{FLAKY}/tasks.jsonl": "task_record"})


def test_reexecute_refuses_a05_that_verify_cannot_see(toy):
    _write_forged_run(toy, "a05")
    before = snapshot(toy)
    reports = {r.run_id: r for r in reexecute(toy)}
    assert reports["steady__planner__persistent"].ok
    d = reports["flaky__planner__persistent"].divergences[0]
    assert (d.file, d.line, d.record_id, d.field, d.recorded, d.replayed) == (
        f"{FLAKY}/groups.jsonl.gz", 2, "g1", "status", "completed", "parse_failure")
    assert snapshot(toy) == before


def test_reexecute_verifies_first_a01(toy):
    _write_forged_run(toy, "a01")
    before = snapshot(toy)
    with pytest.raises(IntegrityError) as info:
        reexecute(toy)
    assert f"{FLAKY}/tasks.jsonl, line 2 (record toy-ep-t1)" in str(info.value)
    assert snapshot(toy) == before


@pytest.fixture()
def records_dir(tmp_path, toy):
    """The flaky run's records as a user would hand them to add_planner."""
    src = tmp_path / "records"
    run, groups, tasks = toy_run_records(toy, "flaky")
    write_record(src / "run.json", run)
    write_records(src / "groups.jsonl.gz", groups)
    write_records(src / "tasks.jsonl", tasks)
    return src, run, groups, tasks


@pytest.mark.parametrize("forgery, fragment", [
    ("a01", "conditions"), ("a05", "status: recorded 'completed', replayed 'parse_failure'"),
    ("c48", "conditions"), ("truth", "conditions[c1].truth")])
def test_add_planner_refuses_forged_outcomes(toy, records_dir, forgery, fragment):
    src, run, groups, tasks = records_dir
    if forgery == "a01":
        tasks[1]["conditions"].append(dict(tasks[1]["conditions"][0]))
    elif forgery == "c48":
        tasks[1]["conditions"].append({"id": "c99", "truth": "TRUE"})
    elif forgery == "truth":
        tasks[1]["conditions"][0]["truth"] = "FALSE"
    else:
        groups, tasks = _a05(groups, tasks, "TRUE")
    write_records(src / "groups.jsonl.gz", groups)
    write_records(src / "tasks.jsonl", tasks)
    before = snapshot(toy)
    with pytest.raises(AddPlannerError) as info:
        add_planner(toy, src, "forger")
    assert fragment in str(info.value) and "line" in str(info.value), str(info.value)
    assert snapshot(toy) == before


def test_add_planner_accepts_the_honest_records(toy, records_dir):
    src = records_dir[0]
    res = add_planner(toy, src, "honest")
    assert res.reexecuted and verify(toy).runs[0] == "flaky__planner__persistent"
    assert "honest__planner__persistent" in verify(toy).runs


# --- commands as subprocesses ----------------------------------------------------------

@pytest.mark.e2e
def test_reexecute_command_names_the_forged_status(toy, tmp_path):
    _write_forged_run(toy, "a05")
    before = snapshot(toy)
    res = run_cmd("analysis.reexecute", f"export_root={toy}", cwd=tmp_path)
    assert res.returncode == 1, res.stdout + res.stderr
    assert f"{FLAKY}/groups.jsonl.gz line 2 (g1): status" in res.stderr, res.stderr
    assert "Traceback" not in res.stderr and snapshot(toy) == before


@pytest.mark.e2e
def test_reexecute_command_names_a_flipped_gzip_byte(toy, tmp_path):
    rel = f"{STEADY}/groups.jsonl.gz"
    raw = bytearray((toy / rel).read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    (toy / rel).write_bytes(bytes(raw))
    before = snapshot(toy)
    res = run_cmd("analysis.reexecute", f"export_root={toy}", cwd=tmp_path)
    assert res.returncode == 1 and rel in res.stderr and "Traceback" not in res.stderr, res.stderr
    assert snapshot(toy) == before


@pytest.mark.e2e
def test_reexecute_command_on_a_group_without_attempts(toy, tmp_path):
    forge_records(toy, f"{STEADY}/groups.jsonl.gz", lambda r: r[1].pop("attempts"))
    before = snapshot(toy)
    res = run_cmd("analysis.reexecute", f"export_root={toy}", cwd=tmp_path)
    assert res.returncode == 1, res.stderr
    assert f"{STEADY}/groups.jsonl.gz, line 2 (record g1)" in res.stderr and \
        "'attempts'" in res.stderr and "Traceback" not in res.stderr, res.stderr
    assert snapshot(toy) == before


@pytest.mark.e2e
@pytest.mark.parametrize("case", ["escape", "c48", "hashes_null", "big_float", "nesting"])
def test_verify_command_exit_1_one_line(ex, tmp_path, case):
    if case == "escape":
        raw, entry = _outside_entry(ex)
        (tmp_path / "x.jsonl").write_bytes(raw)
        m = manifest_of(ex)
        m["files"]["../x.jsonl"] = entry
        put_manifest(ex, m)
        names = "'../x.jsonl'"
    elif case == "c48":
        forge_records(ex, f"{RUN}/tasks.jsonl",
                      lambda r: r[0]["conditions"].append({"id": "c99", "truth": "TRUE"}))
        names = f"{RUN}/tasks.jsonl, line 1 (record t1)"
    elif case == "hashes_null":
        m = manifest_of(ex)
        m["files"]["cohort/tasks.jsonl"]["record_hashes"] = None
        put_manifest(ex, m)
        names = "MANIFEST.json: files entry 'cohort/tasks.jsonl'.record_hashes"
    elif case == "big_float":
        edit_line(ex, "cohort/tasks.jsonl", 1, b'"refs":{}', b'"refs":{"t":1e999}')
        names = "cohort/tasks.jsonl, line 2 (record t2)"
    else:
        edit_line(ex, "cohort/tasks.jsonl", 1, b'"refs":{}',
                  b'"refs":{"t":' + b"[" * 200_000 + b"]" * 200_000 + b"}")
        names = "cohort/tasks.jsonl, line 2"
    before = snapshot(ex)
    res = run_cmd("analysis.verify", f"export_root={ex}", cwd=tmp_path)
    err = res.stderr.strip()
    assert res.returncode == 1 and names in err, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert snapshot(ex) == before


def test_add_planner_refuses_deeply_nested_records_in_one_line(toy, records_dir):
    src = records_dir[0]
    p = src / "tasks.jsonl"
    p.write_bytes(p.read_bytes().replace(b'"episode_id"', b'"x":' + b"[" * 200_000 + b"]" * 200_000 + b',"episode_id"', 1))
    before = snapshot(toy)
    with pytest.raises(AddPlannerError) as info:
        add_planner(toy, src, "deep")
    msg = str(info.value)
    assert "tasks.jsonl" in msg and "line 1" in msg and "nested too deeply" in msg, msg
    assert snapshot(toy) == before


def test_add_planner_refuses_an_overflowing_float(toy, records_dir):
    src = records_dir[0]
    p = src / "run.json"
    p.write_bytes(p.read_bytes().replace(b'"seed":2', b'"seed":2,"x":1e999', 1))
    before = snapshot(toy)
    with pytest.raises(AddPlannerError) as info:
        add_planner(toy, src, "huge")
    assert "run.json" in str(info.value) and "line 1" in str(info.value), str(info.value)
    assert snapshot(toy) == before


def test_unknown_field_in_a_nested_record_object(ex):
    edit_line(ex, f"{RUN}/groups.jsonl.gz", 2, b'"failed_checks":', b'"forged":true,"failed_checks":')
    refuse(ex, f"{RUN}/groups.jsonl.gz", "line 3", "record P01-ep1/g002",
           "'attempts[0].forged'", "unknown field")


def test_a_key_injected_twice_is_named_even_with_the_manifest_untouched(tmp_path):
    """``"planner":"evil","planner":"lexicon"``: json keeps the last value, so the record
    still hashes as listed and only the file's sha256 differs; the message names the
    duplicate key and line, not a formatting change (outside audit, session 13)."""
    export = tmp_path / "export"
    shutil.copytree(Path(__file__).resolve().parents[1] / "frozen_exports", export)
    run = export / "runs" / "lexicon__planner__persistent" / "run.json"
    text = run.read_text()
    assert text.count('"planner":"lexicon"') == 1
    run.write_text(text.replace('"planner":"lexicon"', '"planner":"evil","planner":"lexicon"'))
    with pytest.raises(IntegrityError) as exc:
        verify(export)
    msg = str(exc.value)
    assert "runs/lexicon__planner__persistent/run.json, line 1" in msg
    assert "duplicate key 'planner' (every key appears once)" in msg and "formatting" not in msg

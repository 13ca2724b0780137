"""Frozen exports: hashing rules, the manifest, and every tampering case of docs/FORMAT.md ("MANIFEST.json").

Each bad input must fail verification with a message that names the file and the record,
and `analysis.verify` / `analysis.tables` must exit 1 without touching tables/ or figures/.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from analysis.records import (IntegrityError, canonical_json, load, sha256_record,
                             update_manifest, verify, write_records)
from analysis.records.io import encode_records, read_records
from analysis.records.manifest import read_manifest, write_manifest

from export_factory import build_export

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture()
def export(tmp_path):
    return build_export(tmp_path / "export")


# --- canonical JSON --------------------------------------------------------------------

def test_canonical_json_sorts_keys_and_drops_whitespace():
    assert canonical_json({"b": [1, 2.5], "a": "é"}) == '{"a":"é","b":[1,2.5]}'.encode()


def test_canonical_json_rejects_nan_and_infinity():
    for bad in (math.nan, math.inf, -math.inf):
        with pytest.raises(ValueError):
            canonical_json({"x": bad})


def test_integers_stay_exact_and_floats_round_trip():
    big = 2**63 + 1
    assert canonical_json(big) == str(big).encode()
    assert json.loads(canonical_json(0.1 + 0.2)) == 0.1 + 0.2


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text()
                    | st.floats(allow_nan=False, allow_infinity=False),
                    lambda c: st.lists(c) | st.dictionaries(st.text(), c), max_leaves=20))
def test_record_hash_is_independent_of_key_order(obj):
    rebuilt = json.loads(canonical_json(obj))
    assert sha256_record(rebuilt) == sha256_record(obj)


def test_gzip_output_is_byte_identical_across_writes(tmp_path):
    recs = [{"a": i} for i in range(50)]
    assert encode_records(tmp_path / "x.jsonl.gz", recs) == encode_records(
        tmp_path / "x.jsonl.gz", recs)
    write_records(tmp_path / "x.jsonl.gz", recs)
    assert read_records(tmp_path / "x.jsonl.gz") == recs


# --- a valid export ----------------------------------------------------------------------

def test_valid_export_verifies_and_loads(export):
    report = verify(export)
    assert (report.n_files, report.suites, report.runs) == (
        10, ("planner",), ("alpha__planner__persistent", "beta__planner__persistent"))
    data = load(export)
    assert len(data.task_records) == 8 and len(data.group_records) == 18
    assert set(data.tasks.tier) == {"terminal", "event"}
    # beta's attempts are accepted in groups g000 and g002 (seed 1: (i+1) % 2 == 0 -> i odd)
    beta = data.group_records[data.group_records.run_id.str.startswith("beta")]
    assert beta.n_accepted.tolist() == [0, 1, 0] * 3


# --- tampering ---------------------------------------------------------------------------

def _gz_lines(path):
    return gzip.decompress(path.read_bytes()).split(b"\n")


def _expect(export, *fragments):
    with pytest.raises(IntegrityError) as info:
        verify(export)
    for frag in fragments:
        assert frag in str(info.value), str(info.value)
    return info.value


def test_flipped_byte_is_named_with_file_and_record(export):
    path = export / "cohort" / "tasks.jsonl"
    data = bytearray(path.read_bytes())
    i = data.index(b"task t3")
    data[i + 5] = ord("X")
    path.write_bytes(bytes(data))
    _expect(export, "cohort/tasks.jsonl", "line 3", "record t3", "hash differs")


def test_flipped_byte_in_gzip_file(export):
    path = export / "runs" / "alpha__planner__persistent" / "groups.jsonl.gz"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    _expect(export, "runs/alpha__planner__persistent/groups.jsonl.gz")


def test_truncated_file(export):
    path = export / "cohort" / "tasks.jsonl"
    lines = path.read_bytes().split(b"\n")
    path.write_bytes(b"\n".join(lines[:2]) + b"\n")
    _expect(export, "cohort/tasks.jsonl", "missing", "line 3")


def test_deleted_file(export):
    (export / "cohort" / "suites.jsonl").unlink()
    _expect(export, "cohort/suites.jsonl", "missing")


def test_extra_file_not_in_manifest(export):
    (export / "runs" / "stray.jsonl").write_text("{}\n")
    _expect(export, "runs/stray.jsonl", "not in the manifest")


def test_record_edited_with_file_hash_updated_but_record_hash_stale(export):
    path = export / "cohort" / "tasks.jsonl"
    recs = read_records(path)
    recs[1]["title"] = "edited"
    write_records(path, recs)
    manifest = read_manifest(export)
    entry = manifest["files"]["cohort/tasks.jsonl"]
    fresh = update_manifest(export, {"cohort/tasks.jsonl": "task"})["files"]["cohort/tasks.jsonl"]
    entry.update(size=fresh["size"], sha256=fresh["sha256"])  # record hashes left stale
    write_manifest(export, manifest)
    _expect(export, "cohort/tasks.jsonl", "line 2", "record t2", "hash differs")


def test_reordered_records(export):
    path = export / "cohort" / "tasks.jsonl"
    recs = read_records(path)
    write_records(path, [recs[1], recs[0]] + recs[2:])
    _expect(export, "cohort/tasks.jsonl", "line 1", "record t2", "reordered")


def _rewrite_with_manifest(export, rel, rtype, mutate):
    path = export / rel
    recs = read_records(path)
    mutate(recs)
    write_records(path, recs)
    update_manifest(export, {rel: rtype})


def test_duplicate_task_ids(export):
    _rewrite_with_manifest(export, "cohort/tasks.jsonl", "task",
                           lambda r: r.__setitem__(3, {**r[3], "task_id": "t1"}))
    _expect(export, "cohort/tasks.jsonl", "line 4", "record t1", "duplicate ID")


def test_schema_violation_missing_field(export):
    _rewrite_with_manifest(export, "cohort/tasks.jsonl", "task",
                           lambda r: r[2].pop("title"))
    _expect(export, "cohort/tasks.jsonl", "line 3", "record t3", "'title'", "missing")


def test_schema_violation_wrong_type(export):
    rel = "runs/alpha__planner__persistent/tasks.jsonl"
    _rewrite_with_manifest(export, rel, "task_record",
                           lambda r: r[0].__setitem__("completed", "yes"))
    _expect(export, rel, "line 1", "record t1", "'completed'", "expected bool")


def test_schema_violation_nan(export):
    rel = "cohort/tasks.jsonl"
    path = export / rel
    text = path.read_text().replace('"title":"task t2"', '"title":NaN')
    path.write_text(text)
    update_manifest_raw = read_manifest(export)
    # The file cannot even be hashed record by record: NaN is refused at parse time.
    del update_manifest_raw  # manifest left as is: the error must still name the line
    _expect(export, rel, "line 2", "NaN")


def test_run_missing_a_task_of_its_suite(export):
    rel = "runs/beta__planner__persistent/tasks.jsonl"
    _rewrite_with_manifest(export, rel, "task_record", lambda r: r.pop(2))
    _expect(export, rel, "does not cover", "t3")


def test_manifest_not_valid_json(export):
    (export / "MANIFEST.json").write_text("{not json")
    _expect(export, "MANIFEST.json", "not valid JSON")


def test_run_from_another_cohort(export):
    rel = "runs/alpha__planner__persistent/run.json"
    _rewrite_with_manifest(export, rel, "run",
                           lambda r: r[0].__setitem__("cohort_sha256", "0" * 64))
    _expect(export, rel, "another cohort")


# --- the commands ------------------------------------------------------------------------

def _run(*args, cwd):
    return subprocess.run([sys.executable, "-m", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


def _snapshot(folder: Path) -> dict:
    return {p: p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.e2e
def test_verify_command_passes_on_a_valid_export(export, tmp_path):
    res = _run("analysis.verify", f"export_root={export}", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("verified 10 files")
    assert not (tmp_path / ".hydra_runs").exists() and not (tmp_path / "outputs").exists()


def _stale_record_hash(export):
    rel = "cohort/tasks.jsonl"
    recs = read_records(export / rel)
    recs[1]["title"] = "edited"
    write_records(export / rel, recs)
    manifest = read_manifest(export)
    raw = (export / rel).read_bytes()
    manifest["files"][rel].update(size=len(raw), sha256=hashlib.sha256(raw).hexdigest())
    write_manifest(export, manifest)


def _rewrite(rel, rtype, mutate):
    return lambda export: _rewrite_with_manifest(export, rel, rtype, mutate)


def _replace_bytes(rel, old, new):
    def tamper(export):
        p = export / rel
        p.write_bytes(p.read_bytes().replace(old, new))
    return tamper


RUN = "runs/alpha__planner__persistent"
#: Every bad input of issue 2 (and two more), each with the file its message must name.
TAMPERS = {
    "flipped byte": (_replace_bytes("cohort/tasks.jsonl", b"task t1", b"task t9"),
                     "cohort/tasks.jsonl"),
    "truncated file": (lambda e: (e / "cohort/tasks.jsonl").write_bytes(
        b"\n".join((e / "cohort/tasks.jsonl").read_bytes().split(b"\n")[:2]) + b"\n"),
        "cohort/tasks.jsonl"),
    "deleted file": (lambda e: (e / "cohort/scenes.jsonl").unlink(), "cohort/scenes.jsonl"),
    "extra file": (lambda e: (e / "cohort/notes.txt").write_text("x"), "cohort/notes.txt"),
    "stale record hash": (_stale_record_hash, "cohort/tasks.jsonl"),
    "reordered records": (lambda e: write_records(e / "cohort/tasks.jsonl", (lambda r: [r[1], r[0], *r[2:]])(
        read_records(e / "cohort/tasks.jsonl"))), "cohort/tasks.jsonl"),
    "duplicate task IDs": (_rewrite("cohort/tasks.jsonl", "task",
                                    lambda r: r.__setitem__(3, {**r[3], "task_id": "t1"})),
                           "cohort/tasks.jsonl"),
    "missing field": (_rewrite("cohort/tasks.jsonl", "task", lambda r: r[2].pop("title")),
                      "cohort/tasks.jsonl"),
    "wrong type": (_rewrite(f"{RUN}/tasks.jsonl", "task_record",
                            lambda r: r[0].__setitem__("completed", "yes")), f"{RUN}/tasks.jsonl"),
    "NaN": (_replace_bytes("cohort/tasks.jsonl", b'"title":"task t2"', b'"title":NaN'),
            "cohort/tasks.jsonl"),
    "run missing a task": (_rewrite(f"{RUN}/tasks.jsonl", "task_record", lambda r: r.pop(2)),
                           f"{RUN}/tasks.jsonl"),
    "manifest not JSON": (lambda e: (e / "MANIFEST.json").write_text("["), "MANIFEST.json"),
    "run of another cohort": (_rewrite(f"{RUN}/run.json", "run",
                                       lambda r: r[0].__setitem__("cohort_sha256", "0" * 64)),
                              f"{RUN}/run.json"),
}


# session: the same for every tampering (the regeneration, 10,000 resamples, took about
# 5 s a case); each case tampers a copy, beside a copy of the outputs
@pytest.fixture(scope="session")
def regenerated(tmp_path_factory):
    from analysis._cli.tables import regenerate
    base = tmp_path_factory.mktemp("tamper")
    regenerate(build_export(base / "export"), base / "out", progress=lambda msg: None)
    return base


@pytest.mark.e2e
@pytest.mark.parametrize("tamper", sorted(TAMPERS))
def test_commands_exit_1_and_write_nothing_on_tampering(regenerated, tmp_path, tamper):
    export = Path(shutil.copytree(regenerated / "export", tmp_path / "export"))
    out = Path(shutil.copytree(regenerated / "out", tmp_path / "out"))
    before = _snapshot(out)
    assert any(p.name == "table02_cohort_scope.csv" for p in before)
    apply, names_file = TAMPERS[tamper]
    apply(export)
    for cmd in (["analysis.verify"], ["analysis.tables", f"out_dir={out}"]):
        res = _run(*cmd, f"export_root={export}", cwd=tmp_path)
        assert res.returncode == 1, (cmd, res.stdout, res.stderr)
        assert names_file in res.stderr, res.stderr
    assert _snapshot(out) == before


def test_run_id_must_name_its_planner_suite_and_memory(export):
    rel = "runs/alpha__planner__persistent/run.json"
    _rewrite_with_manifest(export, rel, "run", lambda r: r[0].__setitem__("planner", "gamma"))
    _expect(export, rel, "line 1", "record alpha__planner__persistent",
            "'gamma__planner__persistent'")


# --- the published JSON Schema documents are what is enforced ---------------------------

def test_published_json_schemas_accept_what_verification_accepts(tmp_path):
    """Every record of a rich synthetic export and of the replayable toy export is valid
    under the published documents (checked by the reference `jsonschema` validator), and
    a record the decoders refuse is refused by the documents too."""
    jsonschema = pytest.importorskip("jsonschema")
    from analysis.records.schemas import SCHEMAS, schema_document, validate, SchemaError
    from export_factory import build_rich_export, build_replayable_export

    doc = schema_document("records")
    jsonschema.Draft202012Validator.check_schema(doc)
    jsonschema.Draft202012Validator.check_schema(schema_document("manifest"))

    def validator(rtype):
        return jsonschema.Draft202012Validator({**doc, "$ref": f"#/$defs/{rtype}"})

    checked = set()
    for root in (build_rich_export(tmp_path / "rich"), build_replayable_export(tmp_path / "toy")):
        manifest = read_manifest(root)
        jsonschema.validate(manifest, schema_document("manifest"))
        for rel, e in manifest["files"].items():
            v = validator(e["record_type"])
            for rec in read_records(root / rel):
                assert not list(v.iter_errors(rec)), (rel, rec)
                checked.add(e["record_type"])
    assert {"episode", "task", "suite", "group_record", "task_record", "run", "rules",
            "audit", "rejected_task", "scene"} <= checked
    assert set(SCHEMAS) == set(doc["$defs"]) & set(SCHEMAS)
    bad = [("suite", {"suite": "p", "task_ids": [], "episode_ids": []}),
           ("suite", {"suite": "p", "task_ids": [1], "episode_ids": [], "definition": "d"}),
           ("task_record", {"run_id": "r", "task_id": "t", "episode_id": "e", "completed": True,
                            "conditions": [{"id": "c1", "truth": "MAYBE"}]}),
           ("dropped_event", {"event_id": "e", "episode_id": None, "kind": "cue", "what": "w",
                              "reason": "r", "time": "soon", "refs": {}}),
           ("run", {"run_id": "r", "planner": "p", "memory": "persistent", "suite": "s",
                    "seed": 0, "attempt_limit": 80, "cohort_sha256": "x",
                    "planner_config": {}, "extra": 1})]
    for rtype, rec in bad:
        with pytest.raises(SchemaError):
            validate(rtype, rec)
        assert list(validator(rtype).iter_errors(rec)), (rtype, rec)

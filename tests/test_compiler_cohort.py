"""End-to-end compile: determinism, refusal on bad sources, the worked examples, admission."""
import json
import os
import shutil
from pathlib import Path

import pytest

from analysis.compiler.cohort import compile_cohort
from analysis.compiler.readers import SourceError
from analysis.frozen import read_records, verify

SOURCE = Path(os.environ.get("E2W_HDEPIC", Path(__file__).resolve().parents[2] / "shared" / "hd-epic"))
pytestmark = pytest.mark.skipif(not (SOURCE / "SHA256SUMS").is_file(),
                                reason=f"HD-EPIC source files absent at {SOURCE} (set E2W_HDEPIC)")


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    a = tmp_path_factory.mktemp("a")
    rep = compile_cohort(SOURCE, a, progress=lambda m: None)
    return a, rep


def test_compiling_twice_is_byte_identical(compiled, tmp_path):
    a, _ = compiled
    compile_cohort(SOURCE, tmp_path, progress=lambda m: None)
    files = sorted(p.name for p in (a / "cohort").iterdir())
    assert files == sorted(p.name for p in (tmp_path / "cohort").iterdir())
    for name in files:
        assert (a / "cohort" / name).read_bytes() == (tmp_path / "cohort" / name).read_bytes(), name
    assert verify(a).ok if hasattr(verify(a), "ok") else True


def test_missing_source_writes_nothing(tmp_path):
    out = tmp_path / "out"
    with pytest.raises(SourceError, match="does not exist"):
        compile_cohort(tmp_path / "absent", out, progress=lambda m: None)
    assert not out.exists()


def test_altered_source_writes_nothing(tmp_path):
    copy = tmp_path / "hd"
    shutil.copytree(SOURCE, copy)
    f = copy / "high-level" / "complete_recipes.json"
    os.chmod(f.parent, 0o755)
    os.chmod(f, 0o644)
    f.write_bytes(f.read_bytes().replace(b"Squash", b"Squish", 1))
    out = tmp_path / "out"
    with pytest.raises(SourceError, match="complete_recipes.json.*altered"):
        compile_cohort(copy, out, progress=lambda m: None)
    assert not out.exists()


def test_add_squash_task_is_terminal_and_in_both_suites(compiled):
    a, _ = compiled
    tasks = read_records(a / "cohort" / "tasks.jsonl")
    sq = [t for t in tasks if t["episode_id"] == "P02-20240209-194141"
          and t["contract"]["conditions"][0].get("atom") == ["in", "squash", "glass"]]
    assert len(sq) == 1 and sq[0]["tier"] == "terminal"
    assert sq[0]["provenance"]["refs"]["ingredient"] == "P02_R03_I02"
    suites = {s["suite"]: s for s in read_records(a / "cohort" / "suites.jsonl")}
    assert sq[0]["task_id"] in suites["memory"]["task_ids"]
    assert sq[0]["task_id"] in suites["planner"]["task_ids"]
    assert len(suites["planner"]["episode_ids"]) == 18


def test_audit_all_admitted_pass_and_rejections_have_reasons(compiled):
    a, rep = compiled
    audit = read_records(a / "cohort" / "audit.jsonl")
    assert audit and all(r["passed"] for r in audit)
    rej = read_records(a / "cohort" / "rejected.jsonl")
    assert all(r["reason"] in {"reference_fails", "initial_passes", "trivially_true"} for r in rej)
    tasks = {t["task_id"] for t in read_records(a / "cohort" / "tasks.jsonl")}
    assert not tasks & {r["task_id"] for r in rej}
    assert {r["check"] for r in audit if r["check"].startswith("stress_")} >= {
        "stress_replay", "stress_witness", "stress_repeat", "stress_immutability"}

"""``analysis.compile`` switches the cohort in one journaled step and never strands runs.

The HD-EPIC compile itself is tested in test_compiler_*; here ``compile_cohort`` is
replaced by a writer of a small synthetic cohort so that every write point can be
killed quickly: after each kill, the next command's recovery leaves the export byte for
byte equal to the old or the new state, and the result verifies.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import analysis._cli.compile as compile_mod
from analysis.compiler.cohort import FILES
from analysis._cli.hydra_glue import UserError
from analysis.records import read_records, update_manifest, verify, write_records
from analysis._fs.transaction import recover_export

from export_factory import build_export
from test_transactions import _fork, _leftovers, _points, _snapshot

quiet = lambda msg: None  # noqa: E731
COHORT_TYPES = {rel.split("/", 1)[1]: rtype for rel, rtype in FILES.items()}


def _fake_compiler(template: Path, retitle: str | None):
    """A stand-in for compile_cohort: the template export's cohort, optionally with the
    first task's title changed (a different cohort)."""
    def fake(source, out_dir, progress=None):
        out = Path(out_dir) / "cohort"
        shutil.copytree(template / "cohort", out)
        if retitle is not None:
            tasks = read_records(out / "tasks.jsonl")
            tasks[0]["title"] = retitle
            write_records(out / "tasks.jsonl", tasks)
        listed = {f"cohort/{p.name}": COHORT_TYPES[p.name] for p in out.iterdir()
                  if p.name in COHORT_TYPES}
        update_manifest(out_dir, listed)
        return "report"
    return fake


@pytest.fixture
def export(tmp_path):
    return build_export(tmp_path / "export")


@pytest.fixture
def template(tmp_path):
    return build_export(tmp_path / "template")


def test_identical_recompile_keeps_every_run(export, template, monkeypatch):
    monkeypatch.setattr(compile_mod, "compile_cohort", _fake_compiler(template, None))
    before = _snapshot(export)
    compile_mod.compile_export("src", export, say=quiet)
    assert _snapshot(export) == before
    verify(export)


def test_changed_cohort_with_runs_is_refused_and_names_them(export, template, monkeypatch):
    monkeypatch.setattr(compile_mod, "compile_cohort", _fake_compiler(template, "changed"))
    before = _snapshot(export)
    with pytest.raises(UserError, match=r"alpha__planner__persistent.*stale_runs=drop"):
        compile_mod.compile_export("src", export, say=quiet)
    assert _snapshot(export) == before and _leftovers(export) == []


def test_stale_runs_drop_removes_them_in_the_same_step(export, template, monkeypatch):
    monkeypatch.setattr(compile_mod, "compile_cohort", _fake_compiler(template, "changed"))
    said = []
    compile_mod.compile_export("src", export, stale_runs="drop", say=said.append)
    assert not (export / "runs").exists() or not any((export / "runs").iterdir())
    assert "removed 2 run(s)" in said[-1]
    assert read_records(export / "cohort" / "tasks.jsonl")[0]["title"] == "changed"
    verify(export)


def test_unknown_stale_runs_value_is_refused(export):
    with pytest.raises(UserError, match=r"stale_runs='keep'.*refuse"):
        compile_mod.compile_export("src", export, stale_runs="keep")


def test_kill_at_every_write_point_leaves_old_or_new(export, template, tmp_path,
                                                     monkeypatch):
    monkeypatch.setattr(compile_mod, "compile_cohort", _fake_compiler(template, "changed"))
    base = tmp_path / "base"
    shutil.copytree(export, base)
    old = _snapshot(base)
    expected = tmp_path / "expected"
    shutil.copytree(base, expected)
    compile_mod.compile_export("src", expected, stale_runs="drop", say=quiet)
    new = _snapshot(expected)
    work = tmp_path / "work"

    def fresh():
        if work.exists():
            shutil.rmtree(work)
        shutil.copytree(base, work)
        return work

    labels = _points(lambda: compile_mod.compile_export("src", fresh(), stale_runs="drop",
                                                        say=quiet), tmp_path)
    assert "commit" in labels and len(labels) > 5
    outcomes = set()
    for n in range(1, len(labels) + 1):
        killed = _fork(n, lambda: compile_mod.compile_export("src", fresh(), stale_runs="drop",
                                                             say=quiet))
        assert killed, labels[n - 1]
        said = []
        recover_export(work, said.append)
        snap = _snapshot(work)
        assert snap in (old, new), f"kill before {labels[n - 1]!r} left a mix"
        outcomes.add("new" if snap == new else "old")
        assert _leftovers(work) == [], labels[n - 1]
        verify(work)
        # the compile staging a kill left beside the export goes with the next compile
        staging = work.parent / ".work.e2w_compile"
        if staging.exists():
            said = []
            compile_mod.compile_export("src", work, stale_runs="drop", say=said.append)
            assert not staging.exists() and "interrupted compile" in said[0]
            assert _snapshot(work) == new
    assert outcomes == {"old", "new"}
    assert sorted(p.name for p in tmp_path.iterdir() if "e2w" in p.name) == []

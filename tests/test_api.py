"""The public API (analysis/api.py, docs/api.md): joins, raw records, results equal to
the committed tables, verification once, errors that name the key. About 6 s."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

import analysis
from analysis.report.output import _csv

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def export():
    return analysis.load(REPO / "frozen_exports")


@pytest.fixture(scope="module")
def results(export):
    return export.results()


def test_public_names_are_curated():
    assert {"load", "Export", "Results", "task_metrics", "cluster_bootstrap",
            "pairwise_simultaneous"} <= set(analysis.__all__)
    for name in analysis.__all__:
        assert getattr(analysis, name).__doc__, name
    with pytest.raises(AttributeError, match="no attribute 'lod'"):
        analysis.lod
    # the README's list of the public names is the whole list
    import re
    readme = (REPO / "README.md").read_text()
    para = readme[readme.index("`analysis.__all__` lists the public names"):]
    para = para[:para.index("\n\n")]
    assert sorted(set(re.findall(r"`(\w+)`", para)) - {"analysis"}) == sorted(analysis.__all__)


def test_every_table_equals_its_committed_csv(results):
    names = [n for n in results.names if n.startswith("table")]
    assert len(names) >= 14
    for name in names:
        committed = REPO / "tables" / f"{name}.csv"
        assert _csv(results.table(name)) == committed.read_bytes(), name
    t4 = results.table("planner_results")
    pd.testing.assert_frame_equal(
        t4, pd.read_csv(REPO / "tables/table04_planner_results.csv"),
        check_dtype=False, rtol=1e-9)
    assert results.table("table04_planner_results").equals(t4)


def test_per_run_tables_carry_planner_suite_memory(export):
    runs = export.runs.set_index("run_id")
    for df in (export.group_records, export.attempts, export.task_records,
               export.condition_records):
        assert list(df.columns[:4]) == ["run_id", "planner", "suite", "memory"]
        joined = runs.loc[df.run_id, ["planner", "suite", "memory"]].reset_index(drop=True)
        pd.testing.assert_frame_equal(df[["planner", "suite", "memory"]].reset_index(drop=True),
                                      joined)
    # the loader's own frames are left as they were
    assert "planner" not in export.frozen.group_records.columns


def test_task_groups_is_the_exploded_task_table(export):
    tg = export.task_groups
    expected = [(t, g, i) for t, gids in zip(export.tasks.task_id, export.tasks.group_ids)
                for i, g in enumerate(gids)]
    assert list(zip(tg.task_id, tg.group_id, tg.position)) == expected
    assert tg.instruction.notna().all()
    # a task's group belongs to the task's episode
    ep = export.groups.set_index("group_id").episode_id
    assert (ep.loc[tg.group_id].to_numpy() == tg.episode_id.to_numpy()).all()
    both = export.tasks[export.tasks.suites.map(len) > 1]
    assert set(export.suites.suite) == {s for v in export.tasks.suites for s in v}
    assert all(set(v) <= {"planner", "memory"} for v in both.suites)


def test_raw_records_of_a_run_and_a_task(export):
    rid = "belief_search__planner__persistent"
    recs = export.group_records_of(rid)
    assert len(recs) == int((export.group_records.run_id == rid).sum())
    assert {r["run_id"] for r in recs} == {rid}
    assert export.run("lexicon")["run_id"] == "lexicon__planner__persistent"
    tid = export.tasks.task_id.iloc[3]
    trace = export.task_trace(rid, tid)
    assert trace["task_record"]["task_id"] == tid
    assert [g["group_id"] for g in trace["group_records"]] == trace["task"]["group_ids"]
    with pytest.raises(ValueError, match="did you mean belief_search"):
        export.group_records_of("belief_serch")
    with pytest.raises(ValueError, match="names 3 runs"):
        export.group_records_of("belief_search")
    with pytest.raises(KeyError, match="not in the cohort"):
        export.task("no-such-task")


def test_results_overrides_are_checked_and_cached(export, results):
    assert export.results() is results
    assert results.config.n_resamples == 10_000
    with pytest.raises(analysis.ConfigError, match="did you mean n_resamples"):
        export.results(n_resample=5)
    with pytest.raises(analysis.ConfigError, match="stats.confidence_level=1.5"):
        export.results(confidence_level=1.5)
    with pytest.raises(analysis.ConfigError, match="need at least"):
        export.results(n_resamples=20, confidence_level=0.99)
    with pytest.raises(KeyError, match="did you mean planner_results"):
        results.table("planner_result")
    metrics = results.task_metrics
    assert {"run_id", "task_id", "endpoint", "success", "gcr", "label"} <= set(metrics.columns)
    assert len(metrics) == len(export.task_records)


@pytest.mark.slow
def test_load_verifies_once_and_again_after_a_change(tmp_path, export):
    root = tmp_path / "x"
    shutil.copytree(REPO / "frozen_exports", root)
    first = analysis.load(root)
    assert analysis.load(root) is first
    assert analysis.load(root, refresh=True) is not first
    # a changed file (here: the same bytes rewritten later) is verified again
    rel = "runs/lexicon__planner__persistent/tasks.jsonl"
    data = (root / rel).read_bytes()
    (root / rel).write_bytes(data)
    st = (root / rel).stat()
    os.utime(root / rel, ns=(st.st_atime_ns, st.st_mtime_ns + 10_000_000))
    assert analysis.load(root) is not first
    (root / rel).write_bytes(data.replace(b'"completed": true', b'"completed": false', 1)
                             if b'"completed": true' in data else data + b" ")
    with pytest.raises(analysis.IntegrityError, match="tasks.jsonl"):
        analysis.load(root)
    with pytest.raises(FileNotFoundError, match="export_root="):
        analysis.load(tmp_path / "missing")


def test_readme_from_python_example_runs(capsys):
    """The README's "From Python" block runs as written; its first three lines give
    table 4 as a DataFrame equal to the committed CSV."""
    import re
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## From Python", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    lines = [l for l in code.splitlines() if l.strip() and not l.lstrip().startswith("#")]
    assert len(code.strip().splitlines()) <= 16
    first = {}
    exec(compile("\n".join(lines[:3]), "README.md", "exec"), first)
    assert _csv(first["t4"]) == (REPO / "tables/table04_planner_results.csv").read_bytes()
    scope: dict = {}
    exec(compile(code, "README.md", "exec"), scope)
    out = capsys.readouterr().out
    assert "belief_search" in out and "verdict" in out


@pytest.mark.e2e
def test_verify_without_a_path_checks_the_committed_export_from_any_folder(tmp_path):
    """``analysis.verify()`` defaults to the committed export as ``analysis.load()`` does,
    not to a folder named frozen_exports in the working directory."""
    import subprocess
    import sys
    from pathlib import Path
    repo = Path(__file__).resolve().parents[1]
    r = subprocess.run([sys.executable, "-c", "import analysis; print(analysis.verify().root)"],
                       cwd=tmp_path, capture_output=True, text=True,
                       env={**__import__("os").environ, "PYTHONPATH": str(repo)})
    assert r.returncode == 0, r.stderr
    assert Path(r.stdout.strip()).resolve() == (repo / "frozen_exports").resolve()


def test_bad_names_and_arguments_name_the_parameter_in_one_plain_line(tmp_path):
    """A misspelt artefact or task is a KeyError (``except KeyError`` still works) whose
    message prints as written, with the allowed names; a wrong argument type names the
    parameter; a file given as the export is called a file."""
    import pytest as _pytest
    import analysis
    export = analysis.load()
    res = export.results()
    with _pytest.raises(KeyError) as e:
        res.table("planner_result")
    assert str(e.value).startswith("table 'planner_result': not an artefact; did you mean planner_results?")
    with _pytest.raises(KeyError) as e:
        res.artefact("nope")
    assert "artefacts: example_task" in str(e.value) and "pairwise_forest" in str(e.value)
    assert str(e.value).count("endpoints,") == 1
    with _pytest.raises(KeyError) as e:
        export.task("P02-20240209-194141/t00")
    assert str(e.value).startswith("task_id 'P02-20240209-194141/t00': not in the cohort")
    with _pytest.raises(TypeError, match=r"^export_root=5: expected a folder path"):
        analysis.load(5)
    with _pytest.raises(TypeError, match=r"^refresh='yes': expected True or False"):
        analysis.load(refresh="yes")
    f = tmp_path / "a_file"
    f.write_text("x")
    with _pytest.raises(FileNotFoundError, match="a file, not a folder"):
        analysis.load(f)


def test_verify_and_task_metrics_name_a_wrong_argument():
    """``analysis.verify`` stays callable once its command module is imported (which
    rebinds the package attribute to the module: the suite's other tests do)."""
    import pytest as _pytest
    import analysis
    import analysis._cli.verify  # noqa: F401
    assert analysis.verify().n_files > 0
    with _pytest.raises(TypeError, match=r"^root=5: expected an export folder path"):
        analysis.verify(5)
    with _pytest.raises(analysis.IntegrityError, match="is a file, not an export folder"):
        analysis.verify("/etc/hostname")
    with _pytest.raises(TypeError, match=r"^export=int: expected an export \(analysis.load\(\)\)"):
        analysis.task_metrics(5)


def test_the_names_shared_with_the_viewer_are_the_tables_own():
    """analysis.api.SHARED (docs/api.md, "Shared with the tables"): each name is the very
    object the tables use, and each is documented."""
    from analysis import api, metrics
    from analysis.executor.failures import DerivationError
    from analysis.report import common, context, links, planners
    assert api.ENDPOINTS is metrics.ENDPOINTS
    assert api.ENDPOINT_LABELS is planners.ENDPOINT_LABELS
    assert api.PLANNER_METRICS is context.PLANNER_METRICS
    assert api.pct_ci is common.pct_ci and api.ci is common.ci
    assert api.view_task_page is links.view_task_page
    assert api.DerivationError is DerivationError
    # hand-checked values
    assert api.pct_ci(0.5, 0.25, 0.75) == "50.0 [25.0, 75.0]"
    assert api.ENDPOINT_LABELS["completed_all"] == "success (all conditions met)"
    assert api.PLANNER_METRICS[0] == ("success", "Operational-TSR")
    doc = (REPO / "docs" / "api.md").read_text()
    section = doc.split("## Shared with the tables", 1)[1].split("\n## ", 1)[0]
    for name in api.SHARED:
        assert f"`{name}" in section, name
        assert name in api.__all__
    with pytest.raises(AttributeError, match="no attribute 'ENDPOINT'"):
        api.ENDPOINT


def test_one_export_class_and_one_results_class(export, results):
    """issue 36: the tables, the API and the viewer use one Export and one Results class.
    analysis.Export is the records' Export (joined) plus the computations; FrozenExport
    is the same class under the name docs/api.md promises; analysis.Results is the
    report's Results, the one compute fills and the builders read."""
    import pickle

    from analysis import records, report
    from analysis.frozen import FrozenExport
    assert records.FrozenExport is records.Export is FrozenExport
    assert isinstance(export, records.Export) and type(export.frozen) is records.Export
    assert analysis.Results is report.Results and isinstance(results, report.Results)
    assert results.export is export      # compare names runs as the API export does
    # the loader's form is its own frozen form; joining it again gives the API's columns
    fx = export.frozen
    assert fx.frozen is fx
    again = fx.joined()
    assert type(again) is records.Export and again.frozen is fx
    assert list(again.attempts.columns[:4]) == ["run_id", "planner", "suite", "memory"]
    pd.testing.assert_frame_equal(again.task_records, export.task_records)
    assert again.task_groups is fx.task_groups and len(fx.task_groups) == len(export.task_groups)
    # runs by name on the loader's form too (one resolution for both)
    rid = "lexicon__planner__persistent"
    assert fx.run_ids("lexicon") == [rid] and fx.run("lexicon")["run_id"] == rid
    assert len(fx.group_records_of("lexicon")) == int((fx.group_records.run_id == rid).sum())
    assert export.group_records_of("lexicon") == list(fx.group_records_of(rid))
    with pytest.raises(KeyError, match="did you mean lexicon"):
        fx.group_records_of("lexicn")
    with pytest.raises(ValueError, match="did you mean lexicon"):
        fx.group_records_of("lexicn")
    # the figure process gets the results without the export and without built artefacts
    results.table("planner_results")
    back = pickle.loads(pickle.dumps(results))
    assert back.export is None and back._built == {} and results._built
    assert back.labels == results.labels
    pd.testing.assert_frame_equal(back.planner_bootstrap.table, results.planner_bootstrap.table)

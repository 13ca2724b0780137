"""Kill -9 at every write point of tables, run and add_planner: old or new, never a mix.

``E2W_KILL_AT_WRITE=N`` makes a process SIGKILL itself just before its Nth change on
disk (analysis._fs.transaction.write_point); ``E2W_WRITE_LOG`` counts the points. Every
point is killed in a forked child that runs the same writing function the command runs
(fast); the commands themselves are killed as processes at the points that matter (the
first change, mid-switch, the commit point, the clean-up), and add_planner at every
point. After each kill, the recovery the next command runs must leave the folder byte
for byte equal to the old or the new state, and that next command must say what it did.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from analysis._fs import transaction
from analysis.records import read_records, verify, write_record, write_records
from analysis._cli.tables import (_generation_bytes, build_generation, check_out_dir, regenerate,
                            txn_dir_of, write_generation, OutputDirError)
from analysis._fs.transaction import KILL_ENV, LOG_ENV, export_txn_dir, recover, recover_export

from export_factory import build_export

REPO = Path(__file__).resolve().parent.parent
COHORT = REPO / "frozen_exports" / "cohort"
quiet = lambda msg: None  # noqa: E731
OLD = {"stats": {"n_resamples": 40, "seed": 0}}
NEW = {"stats": {"n_resamples": 40, "seed": 1, "contrast_metrics": ["gcr"]}}
USER_FILES = {"tables/table99_my_notes.csv": b"mine\n", "figures/fig42_mine.png": b"\x89PNG mine"}


def _snapshot(folder: Path) -> dict:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _fork(n: int | None, fn, log: Path | None = None) -> bool:
    """Run ``fn`` in a child killed at write point ``n``; True if it was killed."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            transaction._writes = 0
            os.environ.pop(KILL_ENV, None)
            if n is not None:
                os.environ[KILL_ENV] = str(n)
            if log is not None:
                os.environ[LOG_ENV] = str(log)
            fn()
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        assert os.WTERMSIG(status) == signal.SIGKILL
        return True
    assert os.WEXITSTATUS(status) == 0
    return False


def _points(fn, tmp: Path) -> list[str]:
    log = tmp / "points.log"
    assert not _fork(None, fn, log)
    labels = [line.split(" ", 1)[1] for line in log.read_text().splitlines()]
    log.unlink()
    return labels


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.parent.iterdir() if "e2w_txn" in p.name) + \
        sorted(p.name for p in folder.iterdir() if "e2w_tables_txn" in p.name)


# --- tables ----------------------------------------------------------------------------

# session: built once per worker, however work stealing splits this file
@pytest.fixture(scope="session")
def generations(tmp_path_factory):
    export = build_export(tmp_path_factory.mktemp("tx") / "export")
    base = tmp_path_factory.mktemp("tx_out") / "out"
    regenerate(export, base, OLD, progress=quiet)
    for rel, data in USER_FILES.items():
        (base / rel).write_bytes(data)
    new = build_generation(export, NEW, progress=quiet)
    # drop one output so that the switch also deletes a file of the old generation
    del new["tables/table13_trace_excerpt.tex"]
    new["tables/GENERATION.json"] = _generation_bytes(
        {k: v for k, v in new.items() if k != "tables/GENERATION.json"})
    expected_new = tmp_path_factory.mktemp("tx_new") / "out"
    shutil.copytree(base, expected_new)
    write_generation(expected_new, new, progress=quiet)
    return export, base, new, _snapshot(base), _snapshot(expected_new)


@pytest.mark.e2e
def test_tables_kill_at_every_write_point_leaves_old_or_new(generations, tmp_path):
    export, base, new, old_snap, new_snap = generations
    assert old_snap != new_snap and "tables/table13_trace_excerpt.tex" not in new_snap
    work = tmp_path / "out"

    def fresh():
        if work.exists():
            shutil.rmtree(work)
        shutil.copytree(base, work)
        return work

    labels = _points(lambda: write_generation(fresh(), new, progress=quiet), tmp_path)
    commit = labels.index("commit") + 1
    assert len(labels) > 40 and labels[-1] == "done"
    outcomes = []
    for n in range(1, len(labels) + 1):
        fresh()
        assert _fork(n, lambda: write_generation(work, new, progress=quiet))
        msg = recover(work, txn_dir_of(work))
        snap = _snapshot(work)
        assert snap in (old_snap, new_snap), f"kill at point {n} ({labels[n - 1]}): a mix"
        want = old_snap if n <= commit else new_snap
        assert snap == want, f"kill at point {n} ({labels[n - 1]})"
        if labels[n - 1] not in ("create .e2w_tables_txn", "done"):
            assert msg, f"kill at point {n}: recovery said nothing"
        assert _leftovers(work) == []
        outcomes.append(snap is old_snap or snap == old_snap)
    assert any(outcomes) and not all(outcomes)
    for rel, data in USER_FILES.items():
        assert new_snap[rel] == data  # never deleted, never changed


def _run(*args, cwd, env=None, timeout=300):
    return subprocess.run([sys.executable, "-m", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **(env or {})})


@pytest.mark.e2e
@pytest.mark.slow
def test_tables_command_killed_then_next_run_recovers_and_says_so(generations, tmp_path):
    export, base, _, old_snap, _ = generations
    out = tmp_path / "out"
    shutil.copytree(base, out)
    args = ["analysis.tables", f"export_root={export}", f"out_dir={out}",
            "stats.n_resamples=40", "stats.seed=1"]
    log = tmp_path / "log"
    shutil.copytree(base, tmp_path / "count")
    r = _run(*args[:2], f"out_dir={tmp_path / 'count'}", *args[3:], cwd=tmp_path,
             env={LOG_ENV: str(log)})
    assert r.returncode == 0, r.stderr
    labels = [line.split(" ", 1)[1] for line in log.read_text().splitlines()]
    new_snap = _snapshot(tmp_path / "count")
    commit = labels.index("commit") + 1
    # mid-switch: rolled back; after the commit point: completed (every other point is
    # killed in test_tables_kill_at_every_write_point_leaves_old_or_new)
    picks = {labels.index("journal") + 5: "rolled back", commit + 1: "completed"}
    for n, said in picks.items():
        if out.exists():
            shutil.rmtree(out)
        shutil.copytree(base, out)
        r = _run(*args, cwd=tmp_path, env={KILL_ENV: str(n)})
        assert r.returncode == -signal.SIGKILL, (n, r.stderr)
        probe = tmp_path / "probe"
        if probe.exists():
            shutil.rmtree(probe)
        shutil.copytree(out, probe, symlinks=True)
        recover(probe, txn_dir_of(probe))
        assert _snapshot(probe) == (old_snap if n <= commit else new_snap), f"kill at {n}"
        r = _run(*args, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        if said:
            assert said in r.stderr, (n, r.stderr)
        assert _snapshot(out) == new_snap
        assert _leftovers(out) == []


def test_user_files_survive_and_stale_generation_files_go(tmp_path):
    export = build_export(tmp_path / "export")
    out = tmp_path / "out"
    (out / "tables").mkdir(parents=True)
    (out / "figures").mkdir()
    for rel, data in USER_FILES.items():
        (out / rel).write_bytes(data)
    regenerate(export, out, OLD, progress=quiet)
    gen = (out / "tables" / "GENERATION.json").read_text()
    assert "table99" not in gen and "fig42" not in gen
    for rel, data in USER_FILES.items():
        assert (out / rel).read_bytes() == data
    # a file the old generation wrote and the next one does not is removed; a user's is not
    extra = out / "tables" / "table98_gone.csv"
    extra.write_bytes(b"x\n")
    import hashlib, json
    g = json.loads(gen)
    g["files"]["tables/table98_gone.csv"] = hashlib.sha256(b"x\n").hexdigest()
    (out / "tables" / "GENERATION.json").write_text(json.dumps(g))
    said = []
    regenerate(export, out, OLD, progress=said.append)
    assert not extra.exists()
    assert any("removed" in m and "table98_gone.csv" in m for m in said)
    for rel, data in USER_FILES.items():
        assert (out / rel).read_bytes() == data


@pytest.mark.e2e
def test_out_dir_that_is_a_file_is_refused_before_any_work(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(OutputDirError, match="is not a folder"):
        check_out_dir(f)
    r = _run("analysis.tables", f"out_dir={f}", "export_root=/nonexistent-but-unused",
             cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    # export_root is checked first here (keys in order); a real export, then out_dir
    r = _run("analysis.tables", f"out_dir={f}", cwd=tmp_path)
    assert r.returncode == 2 and "out_dir=" in r.stderr and "is not a folder" in r.stderr
    assert "verifying" not in r.stderr and "Traceback" not in r.stderr
    assert f.read_text() == "x"


def _mount_read_only(path: Path) -> bool:
    """Bind-mount ``path`` read-only onto itself (needs root and mount rights)."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    r = subprocess.run(["mount", "--bind", "-o", "ro", str(path), str(path)],
                       capture_output=True)
    if r.returncode != 0:
        return False
    try:
        (path / ".probe").write_bytes(b"")
    except OSError:
        return True
    (path / ".probe").unlink()
    subprocess.run(["umount", str(path)], check=True)
    return False


@pytest.mark.e2e
def test_read_only_out_dir_is_refused_before_anything_is_computed(generations, tmp_path):
    export, base, *_ = generations
    out = tmp_path / "ro"
    shutil.copytree(base, out)
    before = _snapshot(out)
    for target in (out, out / "tables"):
        if not _mount_read_only(target):
            pytest.skip("cannot mount a read-only folder here (needs root and mount)")
        try:
            r = _run("analysis.tables", f"export_root={export}", f"out_dir={out}",
                     cwd=tmp_path)
        finally:
            subprocess.run(["umount", str(target)], check=True)
        assert r.returncode == 2, r.stderr
        where = "out_dir=" + str(out) + (": tables/" if target != out else ":")
        assert where in r.stderr and "not writable" in r.stderr, r.stderr
        assert "verifying" not in r.stderr and "Traceback" not in r.stderr
        assert _snapshot(out) == before


# --- run and add_planner ---------------------------------------------------------------

# session: built once per worker, however work stealing splits this file
@pytest.fixture(scope="session")
def export_base(tmp_path_factory):
    if not (COHORT / "episodes.jsonl.gz").exists():
        pytest.skip("no compiled cohort in frozen_exports/")
    from test_add_planner import shared_base

    from analysis._cli.run import run_suite
    base = shared_base(tmp_path_factory)  # the cohort and two baseline runs, read only
    _, recs = run_suite("lexicon", "planner", "persistent", base, seed=3, progress=False,
                        write=False)
    rec_dir = tmp_path_factory.mktemp("records") / "records"
    write_record(rec_dir / "run.json", recs["run"])
    write_records(rec_dir / "groups.jsonl.gz", recs["groups"])
    write_records(rec_dir / "tasks.jsonl", recs["tasks"])
    return base, rec_dir, recs


def _fresh_export(base: Path, work: Path) -> Path:
    for p in (work, export_txn_dir(work), export_txn_dir(work).with_name(
            export_txn_dir(work).name + ".done")):
        if p.exists():
            shutil.rmtree(p)
    shutil.copytree(base, work)
    return work


@pytest.mark.e2e
@pytest.mark.slow
@pytest.mark.parametrize("overwrite", [False, True])
def test_run_write_killed_at_every_point_leaves_old_or_new(export_base, tmp_path, overwrite):
    from analysis._cli.run import write_run
    base, _, recs = export_base
    work = tmp_path / "export"
    # overwrite: replace greedy_hints' run with other records under the same ID
    rid = "greedy_hints__planner__persistent" if overwrite else "lexicon__planner__persistent"
    records = recs if not overwrite else {
        "run": {**recs["run"], "run_id": rid, "planner": "greedy_hints"},
        "groups": [{**g, "run_id": rid} for g in recs["groups"]],
        "tasks": [{**t, "run_id": rid} for t in recs["tasks"]]}

    def write():
        write_run(work, rid, records, overwrite=overwrite, check=lambda: verify(work))

    old_snap = _snapshot(_fresh_export(base, work))
    labels = _points(write, tmp_path)
    new_snap = _snapshot(work)
    assert old_snap != new_snap
    verify(work)
    commit = labels.index("commit") + 1
    for n in range(1, len(labels) + 1):
        _fresh_export(base, work)
        assert _fork(n, write)
        said = []
        recover_export(work, said.append)
        snap = _snapshot(work)
        # both states verified above, so byte equality means the export verifies
        assert snap == (old_snap if n <= commit else new_snap), \
            f"kill at point {n} ({labels[n - 1]})"
        assert _leftovers(work) == []
        if labels[n - 1] not in ("create .export.e2w_txn", "done"):
            assert said, f"kill at point {n}: recovery said nothing"


@pytest.mark.e2e
@pytest.mark.slow
def test_run_command_killed_then_next_command_recovers(export_base, tmp_path):
    base, _, _ = export_base
    work = tmp_path / "export"
    args = ["analysis.run", "planner=lexicon", "suite=planner", "memory=persistent",
            "progress=false", f"export_root={work}"]
    old_snap = _snapshot(_fresh_export(base, work))
    log = tmp_path / "log"
    r = _run(*args, cwd=tmp_path, env={LOG_ENV: str(log)})
    assert r.returncode == 0, r.stderr
    assert "registered in the export's MANIFEST.json" in r.stdout
    new_snap = _snapshot(work)
    labels = [line.split(" ", 1)[1] for line in log.read_text().splitlines()]
    commit = labels.index("commit") + 1
    # the second run of the same ID is refused without overwrite=true, nothing changed
    r = _run(*args, cwd=tmp_path)
    assert r.returncode == 1 and "overwrite=true" in r.stderr and "Traceback" not in r.stderr
    assert _snapshot(work) == new_snap
    # just before the commit point and just after it (every point: the forked test above)
    for n, said in ((commit - 1, "rolled back"), (commit + 1, "completed")):
        _fresh_export(base, work)
        r = _run(*args, cwd=tmp_path, env={KILL_ENV: str(n)})
        assert r.returncode == -signal.SIGKILL, r.stderr
        r = _run("analysis.verify", f"export_root={work}", cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        assert said in r.stderr, r.stderr
        assert _snapshot(work) == (old_snap if n <= commit else new_snap)
        assert _leftovers(work) == []


@pytest.mark.e2e
@pytest.mark.slow
def test_add_planner_command_killed_then_next_command_recovers(export_base, tmp_path):
    # add_planner writes through analysis.run.write_run, killed at every point above
    base, rec_dir, _ = export_base
    work = tmp_path / "export"
    args = ["analysis.add_planner", f"records={rec_dir}", "name=mine", "reexecute=false",
            f"export_root={work}"]
    old_snap = _snapshot(_fresh_export(base, work))
    log = tmp_path / "log"
    r = _run(*args, cwd=tmp_path, env={LOG_ENV: str(log)})
    assert r.returncode == 0, r.stderr
    new_snap = _snapshot(work)
    labels = [line.split(" ", 1)[1] for line in log.read_text().splitlines()]
    commit = labels.index("commit") + 1
    for n, said, nxt in ((labels.index("journal") + 2, "rolled back", "add_planner"),
                         (commit + 1, "completed", "verify")):
        _fresh_export(base, work)
        r = _run(*args, cwd=tmp_path, env={KILL_ENV: str(n)})
        assert r.returncode == -signal.SIGKILL, (n, r.stderr)
        if nxt == "verify":
            r = _run("analysis.verify", f"export_root={work}", cwd=tmp_path)
            assert r.returncode == 0 and said in r.stderr, r.stderr
            assert _snapshot(work) == (old_snap if n <= commit else new_snap)
        else:  # the next add_planner says what it did, then adds the run
            r = _run(*args, cwd=tmp_path)
            assert r.returncode == 0, r.stderr
            assert f"{said} an interrupted analysis.add_planner" in r.stderr, r.stderr
            assert _snapshot(work) == new_snap
        assert _leftovers(work) == []


@pytest.mark.e2e
def test_a_live_transaction_is_not_rolled_back_by_another_process(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    txn = tmp_path / "txn"
    txn.mkdir()
    (txn / "owner.pid").write_text("12345")
    holder = subprocess.Popen(  # holds owner.lock as a live Transaction does
        [sys.executable, "-c", "import fcntl, os, sys, time; fd = os.open(sys.argv[1], "
         "os.O_RDWR | os.O_CREAT); fcntl.flock(fd, fcntl.LOCK_EX); print('ok', flush=True); "
         "time.sleep(60)", str(txn / "owner.lock")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ok"
        with pytest.raises(transaction.TransactionBusy, match="live process .pid 12345. "
                           "holds its owner.lock"):
            recover(root, txn)
        assert txn.exists()
    finally:
        holder.kill()
        holder.wait()
    assert "staging" in recover(root, txn) and not txn.exists()  # its owner died


def test_a_reused_pid_does_not_wedge_a_stale_transaction(tmp_path):
    """Regression (issue 21): owner.pid naming a live unrelated process (PID reuse, here
    pid 1) made every command refuse forever; the owner is the holder of owner.lock."""
    root = tmp_path / "root"
    root.mkdir()
    txn = tmp_path / "txn"
    txn.mkdir()
    (txn / "owner.pid").write_text("1")
    (txn / "owner.lock").write_text("1")
    assert "nothing of" in recover(root, txn) and not txn.exists()


@pytest.mark.e2e
def test_tables_and_reexecute_also_recover_an_interrupted_export_change(export_base,
                                                                      tmp_path, capsys):
    from analysis._cli.reexecute import run_reexecute
    from analysis._cli.run import write_run
    base, _, recs = export_base
    work = tmp_path / "export"
    rid = "lexicon__planner__persistent"
    old_snap = _snapshot(_fresh_export(base, work))
    labels = _points(lambda: write_run(work, rid, recs), tmp_path)
    _fresh_export(base, work)
    assert _fork(labels.index("journal") + 3, lambda: write_run(work, rid, recs))
    said = []
    regenerate(work, tmp_path / "out", OLD, progress=said.append)
    assert any("rolled back an interrupted analysis.run" in m for m in said), said
    assert _snapshot(work) == old_snap and _leftovers(work) == []
    _fresh_export(base, work)
    assert _fork(labels.index("commit") + 2, lambda: write_run(work, rid, recs))
    assert run_reexecute(work, run="greedy_hints") == 0
    assert "completed an interrupted analysis.run" in capsys.readouterr().err
    assert rid in {p.name for p in (work / "runs").iterdir()} and _leftovers(work) == []


def test_leftovers_of_the_earlier_non_journaled_writers_are_removed_and_reported(tmp_path):
    export = build_export(tmp_path / "export")
    before = _snapshot(export)
    (export / ".MANIFEST.json.abc123.tmp").write_text("{}")
    (export / "runs" / ".alpha__planner__persistent.x1y2").mkdir()
    (export / "runs" / ".alpha__planner__persistent.x1y2" / "run.json").write_text("{}")
    said = []
    recover_export(export, said.append)
    assert _snapshot(export) == before and len(said) == 2
    verify(export)
    out = tmp_path / "out"
    regenerate(export, out, OLD, progress=quiet)
    stale = out / "tables" / ".table04_planner_results.csv.k2j3.tmp"
    stale.write_text("half")
    mine = out / "tables" / ".my_notes.tmp"
    mine.write_text("mine")
    said = []
    regenerate(export, out, OLD, progress=said.append)
    assert not stale.exists() and mine.read_text() == "mine"
    assert any(".table04_planner_results.csv.k2j3.tmp" in m for m in said)

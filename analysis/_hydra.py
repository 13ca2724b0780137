"""Shared plumbing of the Hydra entry points.

Every command resolves its default paths against the repository root (so it works from
any working directory) and keeps Hydra's own run directory under the git-ignored
``.hydra_runs/`` of the repository.
"""
from __future__ import annotations

from pathlib import Path

from omegaconf import OmegaConf

REPO_ROOT = Path(__file__).resolve().parent.parent
CONFIG_PATH = str(REPO_ROOT / "configs")
if not (REPO_ROOT / "configs").is_dir():
    # A wheel install has the package but not the repository's configs/ and frozen_exports/.
    raise ImportError(f"analysis: no configs/ folder beside the package ({REPO_ROOT}); the "
                      "commands run from a clone of the repository installed with "
                      "`pip install -e .`")

if not OmegaConf.has_resolver("repo_root"):
    OmegaConf.register_new_resolver("repo_root", lambda: str(REPO_ROOT))


def resolve_path(path: str | Path) -> Path:
    """A config path: absolute as given, relative to the working directory otherwise."""
    return Path(path).expanduser().resolve()

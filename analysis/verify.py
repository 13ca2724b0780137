"""``python -m analysis.verify``: verify the frozen export's hashes and schemas.

Exit 0 with a one-line summary, or exit 1 with the error naming file and record.
"""
from __future__ import annotations

import os
import sys

import hydra
from omegaconf import DictConfig

from ._hydra import CONFIG_PATH, resolve_path
from .frozen import IntegrityError, verify


def run_verify(export_root, keep: list | None = None) -> int:
    """Verify ``export_root``; print the summary or the error; return the exit code.
    ``keep`` receives the report (so that a caller can decide when it is freed)."""
    try:
        report = verify(resolve_path(export_root))
    except IntegrityError as exc:
        print(f"verification FAILED: {exc}", file=sys.stderr)
        return 1
    print(report.summary())
    if keep is not None:
        keep.append(report)
    return 0


@hydra.main(config_path=CONFIG_PATH, config_name="verify", version_base="1.3")
def main(cfg: DictConfig) -> None:
    keep: list = []
    code = run_verify(cfg.export_root, keep)
    # Freeing the million decoded objects one by one at exit would cost a tenth of the
    # command's time; nothing else is pending but the two streams.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()

"""The committed tables/ and figure data are exactly what the code regenerates.

Regenerates with the committed defaults of configs/tables.yaml (10,000 resamples) into a
temporary directory and compares every table file and every figure-data CSV byte for
byte with the committed ones (PNG/PDF bytes may differ across matplotlib versions; the
numbers they plot are in the data CSVs and may not).
"""
from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

import analysis._cli.hydra_glue  # noqa: F401  (registers the repo_root resolver)
from analysis._cli.tables import regenerate

REPO = Path(__file__).resolve().parent.parent


def _compare_set(committed: Path, fresh: Path, pattern: str) -> list[str]:
    # recursive: the task cards live in tables/cards/
    a = {p.relative_to(committed).as_posix() for p in committed.rglob(pattern) if p.is_file()}
    b = {p.relative_to(fresh).as_posix() for p in fresh.rglob(pattern) if p.is_file()}
    assert a == b, f"files differ: only committed {sorted(a - b)}, only regenerated {sorted(b - a)}"
    return sorted(a)


@pytest.mark.e2e
@pytest.mark.skipif(not (REPO / "tables" / "README.md").exists(), reason="no committed tables")
def test_committed_outputs_are_regenerated_byte_for_byte(tmp_path):
    cfg = OmegaConf.to_container(OmegaConf.load(REPO / "configs" / "tables.yaml"), resolve=False)
    regenerate(REPO / "frozen_exports", tmp_path, {"stats": cfg["stats"]},
               progress=lambda m: None)
    diffs = []
    for name in _compare_set(REPO / "tables", tmp_path / "tables", "*"):
        if (REPO / "tables" / name).read_bytes() != (tmp_path / "tables" / name).read_bytes():
            diffs.append(f"tables/{name}")
    if (REPO / "figures").is_dir() or (tmp_path / "figures").is_dir():
        for name in _compare_set(REPO / "figures", tmp_path / "figures", "*.data.csv"):
            if (REPO / "figures" / name).read_bytes() != (tmp_path / "figures" / name).read_bytes():
                diffs.append(f"figures/{name}")
        _compare_set(REPO / "figures", tmp_path / "figures", "*.png")
        _compare_set(REPO / "figures", tmp_path / "figures", "*.pdf")
    assert not diffs, ("committed outputs differ from what python -m analysis.tables "
                       f"regenerates: {diffs}")

"""Time ``analysis.verify`` against a naive standard-library pass over the same export.

    python bench/verify.py [--export frozen_exports] [--repeat 5]

The naive pass (issue 13) is what any reader must do at least: SHA-256 of every file,
gunzip, ``json.loads`` of every record, and a canonical re-dump and SHA-256 of every
record. This machine is shared and noisy, so both are measured in the same run (median
of ``--repeat``) and the ratio is printed next to the absolute times:

* ``verify()``: the function (what ``analysis.tables`` pays before loading);
* ``python -m analysis.verify``: the command, wall time of a fresh process (Python and
  Hydra start-up included);
* ``startup``: a Hydra command that does nothing (the floor under the command).
"""
from __future__ import annotations

import argparse
import gzip
import resource
import hashlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def naive_pass(root: Path) -> int:
    n = 0
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        raw = path.read_bytes()
        hashlib.sha256(raw).hexdigest()
        if path.name in ("MANIFEST.json", "ATTRIBUTION.md"):
            continue
        data = gzip.decompress(raw) if path.suffix == ".gz" else raw
        for line in data.splitlines():
            rec = json.loads(line)
            canon = json.dumps(rec, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                               allow_nan=False).encode()
            hashlib.sha256(canon).hexdigest()
            n += 1
    return n


def _median(fn, repeat: int) -> tuple[float, float]:
    """Median wall time and median CPU time (this process plus waited-for children):
    on a loaded machine the CPU time is the better estimate of an idle machine's wall."""
    walls, cpus = [], []

    def cpu():
        a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(
            resource.RUSAGE_CHILDREN)
        return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime
    for _ in range(repeat):
        c, t = cpu(), time.perf_counter()
        fn()
        walls.append(time.perf_counter() - t)
        cpus.append(cpu() - c)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--export", default=str(REPO / "frozen_exports"))
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    root = Path(args.export).resolve()
    from analysis.records import verify

    verify(root)  # warm the page cache and imports
    naive = _median(lambda: naive_pass(root), args.repeat)
    func = _median(lambda: verify(root), args.repeat)
    env_cmd = [sys.executable, "-m", "analysis.verify", f"export_root={root}"]
    with tempfile.TemporaryDirectory() as cwd:
        cmd = _median(lambda: subprocess.run(env_cmd, cwd=cwd, check=True,
                                             capture_output=True), args.repeat)
        floor = _median(lambda: subprocess.run(
            [sys.executable, "-m", "analysis.verify", "--cfg"], cwd=cwd, check=True,
            capture_output=True), args.repeat)
    print(f"export: {root}   (median of {args.repeat}; wall s / CPU s)")
    print(f"naive standard-library pass   {naive[0]:6.3f} / {naive[1]:6.3f}")
    print(f"verify() function             {func[0]:6.3f} / {func[1]:6.3f}   "
          f"({func[0] / naive[0]:.2f}x naive wall, {func[1] / naive[1]:.2f}x CPU; target <= 0.7x)")
    print(f"python -m analysis.verify     {cmd[0]:6.3f} / {cmd[1]:6.3f}   "
          f"({cmd[0] / naive[0]:.2f}x naive wall; targets <= 1 s, issue 12 <= 2 s)")
    print(f"  of which start-up (--cfg)   {floor[0]:6.3f} / {floor[1]:6.3f}")


if __name__ == "__main__":
    main()

"""Wall time and peak memory of ``python -m analysis.tables`` (10,000 resamples), and how
they grow when the number of planners doubles.

    python bench/tables.py [--export frozen_exports] [--resamples 10000]

Runs the real command in a subprocess (imports, verification, metrics, statistics, every
table and figure, writing) on (1) the export and (2) a generated copy with twice the runs:
every planner-suite run is added again under a new planner name through ``analysis.add_planner``
(``reexecute=false``; identical records, so the contrast family grows to 2P planners).
Peak memory is the child's maximum resident set size. If the export does not verify, a
synthetic export from tests/export_factory.py is used (stated in the output).
"""
from __future__ import annotations

import argparse
import shutil
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))


def run_tables(export: Path, out: Path, resamples: int) -> tuple[float, float]:
    """Wall seconds and peak resident MiB of one ``analysis.tables`` process.

    ``os.wait4`` gives the rusage of that child alone (``RUSAGE_CHILDREN`` would be the
    maximum over every child so far, hiding a smaller second run).
    """
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "analysis.tables",
                                 f"export_root={export}", f"out_dir={out}",
                                 f"stats.n_resamples={resamples}"],
                                stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            raise SystemExit(f"analysis.tables failed:\n{err.read().decode()}")
    return seconds, usage.ru_maxrss / 1024.0  # MiB (ru_maxrss is KiB on Linux)


def double_runs(src: Path, dst: Path) -> int:
    from analysis.add_planner import add_planner
    from analysis.frozen import read_records
    from analysis.frozen.manifest import read_manifest
    shutil.copytree(src, dst)
    runs = [rel for rel, e in read_manifest(dst)["files"].items() if e["record_type"] == "run"]
    for rel in sorted(runs):
        folder = dst / rel.rsplit("/", 1)[0]
        run = read_records(folder / "run.json")[0]
        if run["suite"] != "planner":
            continue
        add_planner(dst, folder, f"{run['planner']}-copy", reexecute=False)
    return len(runs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--export", default=str(REPO / "frozen_exports"))
    ap.add_argument("--resamples", type=int, default=10_000)
    args = ap.parse_args()
    from analysis.frozen import IntegrityError, load
    work = Path(tempfile.mkdtemp(prefix="bench_tables."))
    export = Path(args.export)
    try:
        e = load(export)
        label = str(export)
    except IntegrityError as exc:
        from export_factory import build_rich_export
        print(f"note: {export} does not verify ({exc}); using a synthetic export")
        export = build_rich_export(work / "synthetic")
        e = load(export)
        label = "synthetic (tests/export_factory.build_rich_export)"
    double = work / "double"
    double_runs(export, double)
    e2 = load(double)
    rows = []
    for name, ex, er in (("export", export, e), ("2x planners", double, e2)):
        secs, mib = run_tables(ex, work / f"out_{name.replace(' ', '_')}", args.resamples)
        rows.append((name, len(er.runs), er.runs[er.runs.suite == "planner"].planner.nunique(),
                     er.report.n_records, secs, mib))
    print(f"export: {label}; resamples: {args.resamples}; python -m analysis.tables end to end")
    print(f"{'case':11} {'runs':>5} {'planners':>8} {'records':>8} {'wall s':>7} {'peak MiB':>9}")
    for r in rows:
        print(f"{r[0]:11} {r[1]:5d} {r[2]:8d} {r[3]:8d} {r[4]:7.1f} {r[5]:9.0f}")
    print(f"growth with 2x planners: wall time x{rows[1][4] / rows[0][4]:.2f}, "
          f"peak memory x{rows[1][5] / rows[0][5]:.2f} (records x{rows[1][3] / rows[0][3]:.2f})")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

"""End-to-end speed of ``analysis.verify`` and ``analysis.tables`` against a naive
standard-library pass over the same export, measured in the same run, plus linear growth
and peak memory.

    python bench/tables.py [--export frozen_exports] [--resamples 10000] [--repeat 3]
                           [--factor 4]
    python bench/tables.py --figure-stage     # CPU of building and rendering the figures

The shared machines are noisy, so absolute seconds mean little; the ratios against the
naive pass (measured interleaved with the commands, best of ``--repeat``) are the
targets (issue 13):

* naive pass: sha256 of every file of the export, gunzip, ``json.loads`` of every
  record, canonical re-dump (``json.dumps(sort_keys=True, separators=(",", ":"),
  ensure_ascii=False)``) and sha256 of every record; a child process like the others;
* ``python -m analysis.verify``: wall time <= 0.7 x the naive pass;
* ``python -m analysis.tables`` (every table and figure, written to a scratch folder):
  wall time <= 3 x the naive pass;
* linear growth: an export with ``--factor`` (4) x the run records (every run copied
  under new planner names ``<planner>-x<k>``, records re-hashed through the package's
  manifest code, ``analysis.records.update_manifest``) takes <= 4.5 x the time (both
  commands; the ratio is also shown per record);
* peak resident memory of every child < 400 MiB (printed for both exports; the grown
  one has 24 planners, whose pairwise family of 828 contrasts dominates its peak).

Every child is timed with ``os.wait4`` (its own rusage, which includes the processes it
waited for: ``analysis.tables`` draws its figures in a forked worker and
``analysis.verify`` verifies in two processes; maximum resident set size is the largest
of them). The machine load is printed with the results.
If the export does not verify, a synthetic one from tests/export_factory.py is used.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

TARGETS = {"verify": 0.7, "tables": 3.0}
GROWTH_TARGET = 4.5
PEAK_MIB = 400.0


# ------------------------------------------------------------------ the naive pass
def naive_pass(root: Path) -> int:
    """The standard-library baseline: returns the number of records it went through."""
    import gzip
    import hashlib
    n = 0
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        raw = path.read_bytes()
        hashlib.sha256(raw).hexdigest()
        if path.suffix == ".gz":
            raw = gzip.decompress(raw)
        if not path.name.endswith((".json", ".jsonl", ".jsonl.gz")):
            continue
        lines = raw.splitlines() if ".jsonl" in path.name else [raw]
        for line in lines:
            if not line.strip():
                continue
            rec = json.loads(line)
            dump = json.dumps(rec, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
            hashlib.sha256(dump.encode("utf-8")).hexdigest()
            n += 1
    return n


# ------------------------------------------------------------------ children
def run_child(args: list[str], cwd: Path) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (user + system) and peak resident MiB of one child
    process (exit code checked)."""
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, *args], stdout=subprocess.DEVNULL,
                                stderr=err, cwd=cwd, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - t0
        if os.waitstatus_to_exitcode(status) != 0:
            err.seek(0)
            raise SystemExit(f"{' '.join(args)} failed:\n{err.read().decode()[-3000:]}")
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0  # KiB on Linux


def commands(export: Path, out: Path, resamples: int) -> dict[str, list[str]]:
    return {
        "naive": [str(Path(__file__).resolve()), "--naive-only", str(export)],
        "verify": ["-m", "analysis.verify", f"export_root={export}"],
        "tables": ["-m", "analysis.tables", f"export_root={export}", f"out_dir={out}",
                   f"stats.n_resamples={resamples}"],
    }


def measure(export: Path, work: Path, resamples: int, repeat: int) -> dict:
    """Best-of-``repeat`` wall time and the peak memory of each command, interleaved so
    that a noisy minute hits all three alike."""
    cmds = commands(export, work / f"out_{export.name}", resamples)
    runs = {k: [] for k in cmds}
    for _ in range(repeat):
        for k, argv in cmds.items():
            runs[k].append(run_child(argv, cwd=work))
    return {k: {"best": min(s for s, _, _ in v),
                "median": statistics.median(s for s, _, _ in v),
                "cpu": min(c for _, c, _ in v), "peak": max(m for _, _, m in v)}
            for k, v in runs.items()}


# ------------------------------------------------------------------ the grown export
def grow_export(src: Path, dst: Path, factor: int) -> None:
    """Copy ``src`` and add ``factor - 1`` copies of every run under new planner names
    (``<planner>-x<k>``), written with the package's record writers and registered
    (re-hashed) through ``analysis.records.update_manifest``."""
    from analysis.records import read_records, update_manifest, write_record, write_records
    from analysis.records.manifest import read_manifest
    shutil.copytree(src, dst)
    manifest = read_manifest(dst)
    run_files = sorted(rel for rel, e in manifest["files"].items() if e["record_type"] == "run")
    files: dict[str, str] = {}
    for k in range(1, factor):
        for rel in run_files:
            folder = dst / rel.rsplit("/", 1)[0]
            run = read_records(folder / "run.json")[0]
            planner = f"{run['planner']}-x{k}"
            rid = f"{planner}__{run['suite']}__{run['memory']}"
            out = dst / "runs" / rid
            write_record(out / "run.json", dict(run, planner=planner, run_id=rid))
            write_records(out / "groups.jsonl.gz", [dict(g, run_id=rid) for g in
                                                    read_records(folder / "groups.jsonl.gz")])
            write_records(out / "tasks.jsonl", [dict(t, run_id=rid) for t in
                                                read_records(folder / "tasks.jsonl")])
            files.update({f"runs/{rid}/run.json": "run",
                          f"runs/{rid}/groups.jsonl.gz": "group_record",
                          f"runs/{rid}/tasks.jsonl": "task_record"})
    runs_meta = {}
    for rel in files:
        if rel.endswith("run.json"):
            rid = rel.split("/")[1]
            base, suite, memory = rid.split("__")
            orig = f"{base.rsplit('-x', 1)[0]}__{suite}__{memory}"
            if orig in manifest.get("runs", {}):
                runs_meta[rid] = manifest["runs"][orig]
    update_manifest(dst, files, runs=runs_meta)


def size(root: Path) -> tuple[int, int]:
    """Records and planners the manifest lists."""
    files = json.loads((root / "MANIFEST.json").read_text())["files"]
    planners = {rel.split("/")[1].split("__")[0] for rel, e in files.items()
                if e["record_type"] == "run"}
    return sum(e["records"] for e in files.values()), len(planners)


def figure_stage(export: Path, repeat: int = 5) -> None:
    """CPU seconds of the figure stage alone (build + render of every figure), in one
    process: the first round and the best of the following ``repeat`` rounds
    (matplotlib is imported before the rounds in both old and new code)."""
    import contextlib
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.figure  # noqa: F401
    from analysis.records import load
    import analysis.report as R
    style = getattr(R, "figure_style", contextlib.nullcontext)
    e = load(export)
    res = R.compute(e, {"stats": {"n_resamples": 200}})
    figs = [(n, b) for n, _, _, b in R.BUILDERS if n.startswith("fig")]
    times = []
    for _ in range(repeat + 1):
        t = time.process_time()
        for _name, build in figs:
            with style():
                fo = build(e, res)
            R.render_figure(fo)
        times.append(time.process_time() - t)
    print(f"figure stage ({len(figs)} figures, build + PNG + PDF): first round "
          f"{times[0]:.2f} s CPU (font loading), best of {repeat} after "
          f"{min(times[1:]):.2f} s CPU")


# ------------------------------------------------------------------ report
def _verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--export", default=str(REPO / "frozen_exports"))
    ap.add_argument("--resamples", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--factor", type=int, default=4)
    ap.add_argument("--naive-only", metavar="EXPORT", help=argparse.SUPPRESS)
    ap.add_argument("--grow-into", metavar="DST", help=argparse.SUPPRESS)
    ap.add_argument("--figure-stage", action="store_true",
                    help="only time the figure stage (build + render) in this process")
    args = ap.parse_args()
    if args.figure_stage:
        figure_stage(Path(args.export))
        return
    if args.naive_only:  # the child that times the naive pass
        naive_pass(Path(args.naive_only))
        return
    if args.grow_into:  # the child that writes the grown export
        grow_export(Path(args.export), Path(args.grow_into), args.factor)
        return
    work = Path(tempfile.mkdtemp(prefix="bench_tables."))
    export = Path(args.export).resolve()
    try:
        # The parent stays small (nothing loaded here): a forked child's peak resident
        # size would otherwise include the parent's pages.
        verifies = subprocess.run([sys.executable, "-m", "analysis.verify",
                                   f"export_root={export}"], capture_output=True, text=True,
                                  env=dict(os.environ, PYTHONPATH=str(REPO)), cwd=work)
        if verifies.returncode == 0:
            label = str(export)
        else:
            from export_factory import build_rich_export
            print(f"note: {export} does not verify; using a synthetic export")
            export = build_rich_export(work / "synthetic")
            label = "synthetic (tests/export_factory.build_rich_export)"
        grown = work / f"x{args.factor}"
        subprocess.run([sys.executable, str(Path(__file__).resolve()), "--export",
                        str(export), "--factor", str(args.factor), "--grow-into", str(grown)],
                       check=True, env=dict(os.environ, PYTHONPATH=str(REPO)))
        (n1, p1), (n4, p4) = size(export), size(grown)
        load_before = os.getloadavg()
        r1 = measure(export, work, args.resamples, args.repeat)
        r4 = measure(grown, work, args.resamples, args.repeat)
        load_after = os.getloadavg()
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print(f"export: {label}; resamples {args.resamples}; best of {args.repeat} interleaved "
          f"runs per command (wall seconds, end to end: interpreter, imports, work)")
    print(f"machine load (1/5/15 min averages, {os.cpu_count()} cores): before "
          f"{'/'.join(f'{x:.1f}' for x in load_before)}, after "
          f"{'/'.join(f'{x:.1f}' for x in load_after)}; above the core count the wall "
          "ratios mostly measure the other processes, the CPU ratios much less so")
    print(f"{'command':8} {'export':>6} {'records':>8} {'planners':>8} {'best s':>7} "
          f"{'median s':>8} {'cpu s':>6} {'peak MiB':>9}")
    for tag, r, n, p in (("x1", r1, n1, p1), (f"x{args.factor}", r4, n4, p4)):
        for k in ("naive", "verify", "tables"):
            print(f"{k:8} {tag:>6} {n:8d} {p:8d} {r[k]['best']:7.2f} {r[k]['median']:8.2f} "
                  f"{r[k]['cpu']:6.2f} {r[k]['peak']:9.0f}")
    print()
    print("targets (ratios use the best times of the same run):")
    for k, limit in TARGETS.items():
        ratio = r1[k]["best"] / r1["naive"]["best"]
        cpu = r1[k]["cpu"] / r1["naive"]["cpu"]
        print(f"  {k} / naive pass = {ratio:.2f}x wall (target <= {limit}x): "
              f"{_verdict(ratio <= limit)}; CPU time {cpu:.2f}x "
              f"({_verdict(cpu <= limit)} by CPU time; the CPU of analysis.tables includes "
              "its figure child)" if k == "tables" else
              f"  {k} / naive pass = {ratio:.2f}x wall (target <= {limit}x): "
              f"{_verdict(ratio <= limit)}; CPU time {cpu:.2f}x "
              f"({_verdict(cpu <= limit)} by CPU time)")
    rec = n4 / n1
    for k in ("verify", "tables"):
        g = r4[k]["best"] / r1[k]["best"]
        print(f"  {k} growth with x{rec:.2f} records = x{g:.2f} (target <= x{GROWTH_TARGET} "
              f"for x4 records; per record x{g / rec * 4:.2f} scaled to x4): "
              f"{_verdict(g / rec * 4 <= GROWTH_TARGET)}")
    for tag, r in (("x1, the export measured", r1), (f"x{args.factor}", r4)):
        peak = max(r[k]["peak"] for k in ("verify", "tables"))
        print(f"  peak memory {tag}: {peak:.0f} MiB (target < {PEAK_MIB:.0f} MiB): "
              f"{_verdict(peak < PEAK_MIB)}")


if __name__ == "__main__":
    main()

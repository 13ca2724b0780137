"""Time the trace viewer: the site build of an export and the open time of its pages.

    python bench/view.py [--export frozen_exports] [--repeat 3] [--screenshot docs/viewer_task.png]

Measured in the same run (medians of ``--repeat``), with a reference beside each, since
this machine is shared and noisy:

* ``python -m analysis.view``: wall and CPU time of a fresh process building the site
  into a temporary folder (target: at most 10 s on 2 cores), against
  ``python -m analysis.verify`` (verification alone, which the build includes);
* the largest task page (by data file) opened in headless Chromium from ``file://``
  with the network off: time from navigation start to the page drawn
  (``window.E2W_DRAWN_MS``, set by viewer.js after rendering) and to the first frame
  after it and the load event, whichever is later ("shown"; target: under 1 s), against
  the smallest task page, and the overview;
* ``--scale K`` (default 10): the same pages with K times the data, made by replicating
  the records in the data files (the overview with K x the tasks; the largest task page
  with K x the runs), to show how the open time grows (a K x export has K x the tasks
  or runs; each task page still loads only its own task);
* ``--screenshot PATH``: also save a screenshot of the Add Squash task page (the one in
  docs/).
"""
from __future__ import annotations

import argparse
import json
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def _cpu() -> float:
    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


def _command(argv, repeat) -> tuple[float, float]:
    walls, cpus = [], []
    for _ in range(repeat):
        c, t = _cpu(), time.perf_counter()
        subprocess.run([sys.executable, "-m", *argv], cwd=REPO, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        walls.append(time.perf_counter() - t)
        cpus.append(_cpu() - c)
    return statistics.median(walls), statistics.median(cpus)


def _browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium") or shutil.which("chromium-browser")
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1400,1000", "--hide-scrollbars"):
        opts.add_argument(arg)
    d = webdriver.Chrome(options=opts, service=Service(shutil.which("chromedriver")))
    d.set_network_conditions(offline=True, latency=0, download_throughput=0, upload_throughput=0)
    return d


def _open_ms(d, page: Path, repeat: int) -> tuple[float, float]:
    drawn, loaded = [], []
    for _ in range(repeat):
        d.get("about:blank")
        d.get(page.as_uri())
        for _ in range(200):  # the first frame after drawing
            t = d.execute_script("return [window.E2W_DRAWN_MS, window.E2W_PAINTED_MS,"
                                 " performance.getEntriesByType('navigation')[0].loadEventEnd];")
            if t[1] is not None and t[2]:
                break
            time.sleep(0.01)
        drawn.append(t[0])
        loaded.append(max(t[1], t[2]))
    return statistics.median(drawn), statistics.median(loaded)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--export", default=str(REPO / "frozen_exports"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--scale", type=int, default=10)
    ap.add_argument("--screenshot", default=None)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="e2w_bench_view_"))
    try:
        site = tmp / "site"
        build = _command(["analysis.view", f"export_root={args.export}", f"out_dir={site}"],
                         args.repeat)
        verify = _command(["analysis.verify", f"export_root={args.export}"], args.repeat)
        n_files = sum(1 for p in site.rglob("*") if p.is_file())
        size = sum(p.stat().st_size for p in site.rglob("*") if p.is_file())
        print(f"site: {n_files} files, {size / 1e6:.1f} MB")
        print(f"python -m analysis.view   : wall {build[0]:6.2f} s  cpu {build[1]:6.2f} s  "
              f"(target <= 10 s)")
        print(f"python -m analysis.verify : wall {verify[0]:6.2f} s  cpu {verify[1]:6.2f} s  "
              f"(reference)")
        print(f"ratio build / verify      : wall {build[0] / verify[0]:.2f}x  "
              f"cpu {build[1] / verify[1]:.2f}x")
        data = sorted((site / "data" / "task").iterdir(), key=lambda p: p.stat().st_size)
        largest, smallest = data[-1], data[0]
        d = _browser()
        try:
            rows = []
            for label, page, data_file in (
                    ("largest task page", site / "task" / largest.name.replace(".js", ".html"), largest),
                    ("smallest task page", site / "task" / smallest.name.replace(".js", ".html"), smallest),
                    ("largest compare page", site / "compare" / largest.name.replace(".js", ".html"), largest),
                    ("overview", site / "index.html", site / "data" / "overview.js")):
                drawn, loaded = _open_ms(d, page, max(args.repeat, 3))
                rows.append((label, page, data_file, drawn, loaded))
            if args.scale > 1:
                big_task = _scaled(site, "task", largest, args.scale)
                big_overview = _scaled(site, "overview", site / "data" / "overview.js", args.scale)
                for label, (page, data_file) in ((f"largest task x{args.scale} runs", big_task),
                                                 (f"overview x{args.scale} tasks", big_overview)):
                    drawn, loaded = _open_ms(d, page, max(args.repeat, 3))
                    rows.append((label, page, data_file, drawn, loaded))
            ref = rows[1][3]
            for label, page, data_file, drawn, loaded in rows:
                print(f"{label:21s}: drawn {drawn:7.1f} ms  shown {loaded:7.1f} ms  "
                      f"({data_file.stat().st_size / 1e3:.0f} kB data; {drawn / ref:.2f}x the "
                      f"smallest)  {page.relative_to(site)}")
            print("target: the largest page shown in under 1000 ms")
            if args.screenshot:
                _screenshot(d, args.export, site, Path(args.screenshot))
        finally:
            d.quit()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _scaled(site: Path, kind: str, data_file: Path, k: int) -> tuple[Path, Path]:
    """A page whose data file holds ``k`` copies of the records (IDs suffixed)."""
    text = data_file.read_text(encoding="utf-8")
    prefix = "window.E2W_DATA = "
    data = json.loads(text[len(prefix):-2])
    key = "runs" if kind == "task" else "tasks"
    id_key = "run_id" if kind == "task" else "task_id"
    data[key] = [{**x, id_key: f"{x[id_key]}~{i}"} for i in range(k) for x in data[key]]
    if kind == "overview":  # the cells name runs, which stay; the page links get suffixed
        for x in data["tasks"]:
            x["page"], x["compare"] = x["page"], x["compare"]
    name = f"scaled_{kind}_{data_file.stem}"
    out = data_file.with_name(name + ".js")
    out.write_text(prefix + json.dumps(data, separators=(",", ":")) + ";\n", encoding="utf-8")
    folder = "task" if kind == "task" else "."
    page_src = (site / "task" / (data_file.stem + ".html")) if kind == "task" else site / "index.html"
    page = site / folder / (name + ".html")
    page.write_text(page_src.read_text(encoding="utf-8").replace(
        data_file.name, out.name), encoding="utf-8")
    return page, out


def _screenshot(d, export_root, site: Path, path: Path) -> None:
    """The Add Squash task page, scrolled to the first run's first group."""
    import analysis
    from analysis.report.links import view_task_page
    export = analysis.load(export_root)
    memory = set(export.suites.task_id[export.suites.suite == "memory"])
    # "Add Squash- Add the amount of Squash to your glass": the title starts with the row's words
    tasks = [t for t in export.frozen.records_of("task")
             if re.match(r"add squash\b", t["title"].strip().lower())]
    task = next((t for t in tasks if t["task_id"] in memory), tasks[0])
    d.set_window_size(1280, 900)
    d.get((site / view_task_page(task["task_id"])).as_uri())
    d.execute_script("document.querySelector('section.run').scrollIntoView();"
                     "window.scrollBy(0, -8);")
    path.parent.mkdir(parents=True, exist_ok=True)
    d.save_screenshot(str(path))
    print(f"screenshot: {path} ({json.dumps(task['task_id'])})")


if __name__ == "__main__":
    main()

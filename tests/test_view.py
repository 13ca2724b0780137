"""``python -m analysis.view``: the site's files, its data against the API, the command
line (help, refusals, exit codes), all-or-nothing writes, determinism and ``serve=true``.

The rendered pages are tested in a real browser in ``test_view_browser.py``. About 25 s
on 2 cores (two builds of the committed export, the rest on small synthetic exports).
"""
from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from checkout_copy import checkout_copy, git_status
from export_factory import build_export, build_rich_export
from view_oracle import REPO, api_export, committed_site, runs_of_task, squash_task

pytestmark = [
    pytest.mark.skipif(not (REPO / "frozen_exports" / "MANIFEST.json").exists(),
                       reason="no committed export"),
    # the small synthetic exports have six episodes: the statistics say so, rightly
    pytest.mark.filterwarnings("ignore::analysis.stats.FewClustersWarning"),
]


def _data(site: Path, rel: str) -> dict:
    text = (site / rel).read_text(encoding="utf-8")
    assert text.startswith("window.E2W_DATA = ") and text.endswith(";\n")
    return json.loads(text[len("window.E2W_DATA = "):-2].replace("<\\/", "</"))


def _run(*args, cwd=None, env=None, timeout=120):
    return subprocess.run([sys.executable, "-m", *args], cwd=cwd or REPO, capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **(env or {})})


def _git_status() -> str:
    return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=REPO,
                          capture_output=True, text=True, check=True).stdout


def _tree(folder: Path) -> dict:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


# --- the site of the committed export -----------------------------------------------------

@pytest.mark.e2e
def test_every_task_has_a_page_a_compare_page_and_its_own_data_file_only():
    site, export = committed_site(), api_export()
    from analysis.report.links import task_slug
    tasks = sorted(export.tasks.task_id)
    for tid in tasks:
        slug = task_slug(tid)
        for page in (f"task/{slug}.html", f"compare/{slug}.html"):
            text = (site / page).read_text(encoding="utf-8")
            scripts = re.findall(r'<script src="([^"]+)"', text)
            # its own data file and the shared code: nothing of another task
            assert scripts == [f"../data/task/{slug}.js", "../assets/viewer.js"], (page, scripts)
    assert len(list((site / "data" / "task").iterdir())) == len(tasks)
    listing = json.loads((site / "SITE.json").read_text())
    assert set(listing["files"]) == set(_tree(site)) - {"SITE.json"}


@pytest.mark.e2e
def test_nothing_refers_to_another_host():
    site = committed_site()
    for rel, data in _tree(site).items():
        if rel.startswith("data/"):
            continue  # records, not markup (checked by the browser test: no request leaves)
        text = data.decode("utf-8")
        assert not re.search(r"https?://|//[a-z0-9.-]+\.[a-z]{2,}/|@import|url\(", text), rel
        assert not re.search(r"fetch\(|XMLHttpRequest|import\(", text), rel


@pytest.mark.e2e
def test_the_squash_task_data_are_the_records():
    site, export = committed_site(), api_export()
    task = squash_task(export)
    from analysis.report.links import task_slug
    data = _data(site, f"data/task/{task_slug(task['task_id'])}.js")
    assert data["task"]["title"] == task["title"]
    assert [c["id"] for c in data["task"]["conditions"]] == \
        [c["id"] for c in task["contract"]["conditions"]]
    assert [r["run_id"] for r in data["runs"]] == runs_of_task(export, task["task_id"])
    tm = export.task_metrics.set_index(["run_id", "task_id"])
    for run in data["runs"]:
        trace = export.task_trace(run["run_id"], task["task_id"])
        assert run["truths"] == [{"id": c["id"], "truth": c["truth"]}
                                 for c in trace["task_record"]["conditions"]]
        assert run["completed"] == trace["task_record"]["completed"]
        assert run["metrics"]["endpoint"] == tm.loc[(run["run_id"], task["task_id"]), "endpoint"]
        assert [g["group_id"] for g in run["groups"]] == task["group_ids"]
        for mine, rec in zip(run["groups"], trace["group_records"]):
            assert mine["status"] == rec["status"]
            assert mine["world_sha256_after"] == rec["world_sha256_after"]
            assert mine["belief"] == rec["belief"]
            assert [(a["index"], a["source"], a["status"], a["failed_checks"])
                    for a in mine["attempts"]] == \
                [(a["index"], a["source"], a["status"], a["failed_checks"])
                 for a in rec["attempts"]]
            assert [q["region"] for q in mine["queries"]] == [q["region"] for q in rec["queries"]]


@pytest.mark.e2e
def test_task_card_on_the_page_is_the_card_file():
    """The page's "Task card" shows the lines of tables/cards/<task>.md (issue 18 item 7):
    track spans, the video, the question and answer text, readable segment lines and the
    note that source rows are in their own video's time; the planner table's warnings
    and its "tasks without attempts" travel to the overview."""
    site, export = committed_site(), api_export()
    from analysis.report.links import task_slug
    # every task: an event condition, whole-number times, several videos alike
    for t in export.tasks.task_id:
        data = _data(site, f"data/task/{task_slug(t)}.js")["task"]
        plain = (REPO / "tables" / "cards" / f"{task_slug(t)}.md").read_text().replace("**", "").replace("`", "")
        # (a source text's own backtick stays on the page, as in the card)
        lines = [e.replace("`", "") for c in data["conditions"] for e in [c["line"], *c["evidence"]]] + \
            [x.replace("`", "") for x in data["source_lines"]]
        assert all(f"- {line}\n" in plain for line in lines), \
            (t, [line for line in lines if f"- {line}\n" not in plain])
    tid = "P02-20240211-104948/t000"
    data = _data(site, f"data/task/{task_slug(tid)}.js")["task"]
    c1 = " ".join(data["conditions"][0]["evidence"])
    assert "@ 109.47456-111.59956 s" in c1 and 'A: "top of drawer"' in c1
    assert all(c["line"].startswith(f"{c['id']} ") for c in data["conditions"])
    overview = _data(site, "data/overview.js")
    table4 = (REPO / "tables" / "table04_planner_results.md").read_text()
    assert overview["warnings"]["planner"] and overview["warnings"]["planner"] in " ".join(table4.split())
    no_att = export.task_metrics.assign(none=export.task_metrics.n_attempts == 0).groupby("run_id").none.sum()
    assert {r["run_id"]: r["tasks_without_attempts"] for r in overview["runs"]} == no_att.to_dict()


@pytest.mark.e2e
def test_overview_cells_and_metrics_are_the_tables_own():
    site, export = committed_site(), api_export()
    ov = _data(site, "data/overview.js")
    tm = export.task_metrics
    assert sum(len(t["cells"]) for t in ov["tasks"]) == len(tm)
    cells = {(rid, t["task_id"]): c["endpoint"] for t in ov["tasks"] for rid, c in t["cells"].items()}
    assert cells == dict(zip(zip(tm.run_id, tm.task_id), tm.endpoint))
    # the intervals are the very texts of table 4 (same results objects, same formatting)
    t4 = export.results().artefact("planner_results").display.set_index("planner")
    runs = {r["run_id"]: r for r in ov["runs"]}
    checked = 0
    for r in export.runs.itertuples():
        if r.suite != "planner":
            continue
        mine = {m["label"] + " (%)": m["text"] for m in runs[r.run_id]["metrics"]}
        row = t4.loc[runs[r.run_id]["label"]]
        for col, text in mine.items():
            assert row[col] == text, (r.run_id, col)
            checked += 1
    assert checked >= 8
    # repairs per run are the attempts table's counts
    att = export.attempts
    for rid, r in runs.items():
        part = att[att.run_id == rid]
        assert (r["attempts"], r["repair_attempts"]) == (len(part), int((part.source == "repair").sum()))


def _serve_and_stop(argv: list[str], site: Path, cwd: Path = REPO, env=None) -> None:
    """Run a ``serve=true`` command, fetch the printed URL, stop it with Ctrl-C (exit 0)."""
    # SIGINT's default disposition, as in a terminal's foreground: a suite started in the
    # background (``cmd &``) passes it ignored, and Python then installs no Ctrl-C handler
    proc = subprocess.Popen([sys.executable, "-m", *argv], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        url = None
        for line in proc.stdout:
            m = re.search(r"at (http://127\.0\.0\.1:\d+/index\.html)", line)
            if m:
                url = m.group(1)
                break
        assert url, proc.stderr.read() if proc.poll() is not None else "no URL printed"
        with urllib.request.urlopen(url, timeout=10) as resp:
            assert resp.status == 200 and resp.read() == (site / "index.html").read_bytes()
        with urllib.request.urlopen(url.replace("index.html", "assets/viewer.js"), timeout=10) as resp:
            assert resp.read() == (site / "assets" / "viewer.js").read_bytes()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.e2e
def test_the_tables_and_task_cards_link_the_viewer_pages():
    """tables/README.md and every card link a page the default site has (the links are
    relative to the repository's build/view)."""
    site = committed_site()
    export = api_export()
    from analysis.report.links import DEFAULT_SITE, task_slug
    pairs = [("tables/README.md", None)] + [
        (f"tables/cards/{task_slug(t)}.md", t) for t in sorted(export.tasks.task_id)]
    for rel, tid in pairs:
        text = (REPO / rel).read_text(encoding="utf-8")
        links = [m for m in re.findall(r"\]\(([^)]+\.html)\)", text)]
        assert links, rel
        for link in links:
            target = (REPO / rel).parent.joinpath(link).resolve()
            inner = target.relative_to((REPO / DEFAULT_SITE).resolve())
            assert (site / inner).is_file(), (rel, link)
            if tid is not None:
                assert inner.as_posix() == f"task/{task_slug(tid)}.html"


def _add_my_planner(scratch: Path, tmp_path: Path) -> str:
    """A verified copy of the committed export with one planner-suite run added again
    under the name my_planner (add_planner, as README "Adding your planner" does)."""
    r = _run("analysis.verify", f"copy_to={scratch}")
    assert r.returncode == 0, r.stderr
    export = api_export()
    src_run = sorted(export.runs.run_id[export.runs.suite == "planner"])[0]
    records = tmp_path / "records"
    records.mkdir()
    for name in ("run.json", "groups.jsonl.gz", "tasks.jsonl"):
        (records / name).write_bytes((REPO / "frozen_exports" / "runs" / src_run / name).read_bytes())
    r = _run("analysis.add_planner", f"records={records}", "name=my_planner", "reexecute=false",
             f"export_root={scratch}")
    assert r.returncode == 0, r.stderr
    return src_run


def _check_my_planner(site: Path, src_run: str) -> None:
    ov = _data(site, "data/overview.js")
    # the run's name is my_planner; its records still say which planner made them
    mine = [x for x in ov["runs"] if x["run_name"] == "my_planner"]
    assert [x["run_id"] for x in mine] == ["my_planner__planner__persistent"]
    assert (mine[0]["label"], mine[0]["planner"]) == ("my_planner", src_run.split("__")[0])
    assert mine[0]["metrics"], "the new planner has its table-4 intervals"
    src_cells = {t["task_id"]: t["cells"][src_run]["endpoint"] for t in ov["tasks"] if src_run in t["cells"]}
    new_cells = {t["task_id"]: t["cells"]["my_planner__planner__persistent"]["endpoint"]
                 for t in ov["tasks"] if "my_planner__planner__persistent" in t["cells"]}
    assert new_cells == src_cells  # the same records under a new name


@pytest.mark.e2e
@pytest.mark.slow(seconds=80)
def test_the_readme_and_docs_commands_run_verbatim(tmp_path):
    """Every `python -m analysis.view` line of README.md and docs/viewer.md, as written
    (only the scratch paths under /tmp moved into tmp_path), from the root of a temporary
    copy of this checkout (tests/checkout_copy.py), so the default build never lands in the
    checkout other tests read. The scratch export is the issue's new user's: the committed
    export plus a planner ``my_planner``. The default build goes to build/view (git-ignored:
    the copy's git status stays clean) and has the same bytes as any other build of the
    same records."""
    lines = []
    for doc in ("README.md", "docs/viewer.md"):
        text = (REPO / doc).read_text(encoding="utf-8")
        for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
            lines += [re.sub(r"\s+#\s.*$", "", ln).strip() for ln in block.splitlines()
                      if ln.strip().startswith("python -m analysis.view")]
        prose = re.sub(r"```.*?```", "", text, flags=re.S)
        lines += re.findall(r"`(python -m analysis\.view(?: [^`\n]*)?)`", prose)
    assert lines, "no analysis.view command in README.md or docs/viewer.md"
    scratch = tmp_path / "scratch"
    kinds = set()
    checkout_before = _git_status()
    root = checkout_copy(tmp_path / "clone")  # the repository the commands run in
    in_root = {"PYTHONPATH": str(root)}
    before = git_status(root)
    assert before == ""
    for line in dict.fromkeys(lines):
        if line.endswith(" --help"):
            r = _run(*shlex.split(line)[2:], cwd=root, env=in_root)
            assert r.returncode == 0 and r.stdout.startswith("python -m analysis.view ")
            kinds.add("help")
            continue
        argv = shlex.split(line.replace("/tmp/", f"{tmp_path}/"))
        on_scratch = any(a.startswith("export_root=") for a in argv)
        if on_scratch and not scratch.exists():
            src_run = _add_my_planner(scratch, tmp_path)
        out = next((Path(a.split("=", 1)[1]) for a in argv if a.startswith("out_dir=")),
                   root / "build" / "view")
        if "serve=true" in argv:
            _serve_and_stop(argv[2:], out, cwd=root, env=in_root)
            kinds.add("serve")
        else:
            r = _run(*argv[2:], cwd=root, env=in_root)
            assert r.returncode == 0, (line, r.stderr)
            assert f"open {(out / 'index.html').as_uri()}" in r.stdout
            kinds.add("build")
        if on_scratch:
            _check_my_planner(out, src_run)
        else:  # deterministic bytes: the same records give the same site, anywhere
            assert _tree(out) == _tree(committed_site()), line
        assert git_status(root) == before, line  # build/ is git-ignored; nothing else written
    assert kinds == {"build", "serve", "help"} and scratch.exists()
    assert (root / "build" / "view" / "index.html").is_file()  # the default build was made
    assert _git_status() == checkout_before  # and the checkout was not written at all


# --- the command line ------------------------------------------------------------------

@pytest.fixture(scope="module")
def small(tmp_path_factory):
    base = tmp_path_factory.mktemp("view")
    return {"export": build_export(base / "export"), "rich": build_rich_export(base / "rich"),
            "base": base}


def _call(argv, capsys, monkeypatch, cwd):
    """The command in this process (the code path of ``python -m``, milliseconds)."""
    from analysis._cli.view import main
    monkeypatch.chdir(cwd)
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def test_help_lists_every_key(capsys, monkeypatch, tmp_path):
    code, out, err = _call(["--help"], capsys, monkeypatch, tmp_path)
    assert code == 0 and err == ""
    for key in ("export_root", "out_dir", "serve", "port", "stats.n_resamples", "stats.seed"):
        assert f"  {key}  (" in out, key


@pytest.mark.parametrize("bad, needles", [
    (["port=70000"], ["port=70000", "from 0 to 65535"]),
    (["serve=maybe"], ["serve='maybe'", "true or false"]),
    (["out_dri=/tmp/x"], ["'out_dri'", "did you mean out_dir"]),
    (["stats.n_resamples=3"], ["stats.n_resamples=3", "from 20"]),
])
def test_bad_values_are_one_line_exit_2(bad, needles, small, tmp_path, capsys, monkeypatch):
    code, _, err = _call([f"export_root={small['export']}", f"out_dir={tmp_path}/site", *bad],
                         capsys, monkeypatch, tmp_path)
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert all(n in err for n in needles), err
    assert list(tmp_path.iterdir()) == []


def test_out_dir_refusals_name_the_key_and_write_nothing(small, tmp_path, capsys, monkeypatch):
    export = small["export"]
    before = _tree(export)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("my own file\n")
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    for out, needle in ((export / "site", "is inside the export"), (mine, "no SITE.json"),
                        (a_file, "is not a folder"), (export, "is an export")):
        code, _, err = _call([f"export_root={export}", f"out_dir={out}"], capsys, monkeypatch,
                             tmp_path)
        assert code == 2 and needle in err and "out_dir=" in err, err
        assert err.count("\n") == 1
    assert _tree(export) == before
    assert _tree(mine) == {"notes.txt": b"my own file\n"}


@pytest.mark.e2e
def test_a_tampered_export_is_refused_with_exit_1_and_nothing_written(small, tmp_path):
    export = tmp_path / "export"
    build_export(export)
    tasks = export / "cohort" / "tasks.jsonl"
    tasks.write_bytes(tasks.read_bytes().replace(b'"terminal"', b'"event"', 1))
    r = _run("analysis.view", f"export_root={export}", f"out_dir={tmp_path / 'site'}")
    assert r.returncode == 1, r.stderr
    assert "verification FAILED" in r.stderr and "tasks.jsonl" in r.stderr
    assert r.stderr.strip().count("\n") <= 3 and "Traceback" not in r.stderr
    assert not (tmp_path / "site").exists()


@pytest.mark.e2e
def test_a_rebuild_replaces_the_site_and_a_killed_build_leaves_the_old_one(small, tmp_path,
                                                                           monkeypatch):
    from analysis.view import build
    site = tmp_path / "site"
    stats = {"n_resamples": 200}
    build(small["rich"], site, stats)
    first = _tree(site)
    log = tmp_path / "writes.log"
    monkeypatch.setenv("E2W_WRITE_LOG", str(log))
    build(small["rich"], site, stats)  # a rebuild over a site: the changes to count
    monkeypatch.delenv("E2W_WRITE_LOG")
    assert _tree(site) == first
    (site / "task" / "stale.html").write_text("left by an older cohort")
    with_stale = _tree(site)
    # a fresh process makes the same changes in the same order: kill it just before the
    # new folder is moved in (the old one is already backed up)
    labels = [line.split(" ", 1)[1] for line in log.read_text().splitlines()]
    n = labels.index("move in site") + 1
    r = _run("analysis.view", f"export_root={small['rich']}", f"out_dir={site}",
             "stats.n_resamples=200", env={"E2W_KILL_AT_WRITE": str(n)})
    assert r.returncode == -signal.SIGKILL, r.stderr
    assert not site.exists()  # moved to the backup, the new one not yet in
    said = []
    build(small["rich"], site, stats, progress=said.append)
    assert any("rolled back" in m for m in said), said
    assert _tree(site) == first  # the stale page is gone: the folder is exactly the new site
    assert with_stale != first
    assert [p.name for p in tmp_path.iterdir() if "e2w_view_txn" in p.name] == []

"""The viewer in a real browser: headless Chromium (Debian's ``chromium`` and
``chromium-driver``, driven by selenium), the site opened from ``file://`` with the
network switched off.

One walk, as a user would: overview -> filter -> task -> compare, asserting on the
rendered text against expectations computed from the API (the Add Squash task of the
memory suite in every run that holds it; the first divergence of two of its runs), that
every resource loaded is a local file, and that the console stays empty. About 15 s.

Without a browser the tests skip, unless ``E2W_REQUIRE_BROWSER=1`` (set by ``.ci/run``),
where a missing browser fails them.
"""
from __future__ import annotations

import os
import shutil
from urllib.parse import quote

import pytest

from view_oracle import (REPO, action_text, api_export, committed_site, first_divergence,
                         runs_of_task, squash_task, timeline)

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
try:
    import selenium  # noqa: F401
    HAVE_SELENIUM = True
except ImportError:
    HAVE_SELENIUM = False

_missing = [what for what, ok in (("chromium", CHROMIUM), ("chromedriver", DRIVER),
                                  ("selenium", HAVE_SELENIUM)) if not ok]
if _missing and os.environ.get("E2W_REQUIRE_BROWSER") == "1":
    raise RuntimeError(f"E2W_REQUIRE_BROWSER=1 but {', '.join(_missing)} missing: .ci/run "
                       "installs them (apt-get install chromium chromium-driver; pip install "
                       "-e '.[test]')")
pytestmark = [
    pytest.mark.skipif(bool(_missing), reason=f"no browser: {', '.join(_missing)} missing "
                       "(.ci/run installs them)"),
    pytest.mark.skipif(not (REPO / "frozen_exports" / "MANIFEST.json").exists(),
                       reason="no committed export"),
]


@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1400,1000", "--disable-extensions",
                "--disable-background-networking", "--no-first-run"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=opts, service=Service(DRIVER))
    # no network at all: every page must render from the files alone
    driver.set_network_conditions(offline=True, latency=0, download_throughput=0,
                                  upload_throughput=0)
    driver.implicitly_wait(0)
    yield driver
    driver.quit()


def _open(driver, path):
    driver.get(path.as_uri() if hasattr(path, "as_uri") else path)
    driver.find_element("css selector", "main h1")  # drawn by the script
    return driver


def _no_console_messages(driver):
    logs = driver.get_log("browser")
    assert logs == [], logs


def _local_only(driver):
    names = driver.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name)"
        ".concat([location.href]);")
    assert names and all(n.startswith("file://") for n in names), names


def _rows(driver):
    return [tr.get_attribute("data-task")
            for tr in driver.find_elements("css selector", "#matrix tbody tr")]


@pytest.mark.e2e
@pytest.mark.slow
def test_overview_filter_task_compare(browser):
    from selenium.webdriver.support.ui import Select

    site, export = committed_site(), api_export()
    task = squash_task(export)
    tid = task["task_id"]
    tm = export.task_metrics
    d = _open(browser, site / "index.html")
    n_tasks = len(export.tasks)
    assert d.find_element("id", "count").text == \
        f"Showing {n_tasks} of {n_tasks} tasks and {len(export.runs)} of {len(export.runs)} runs."
    _no_console_messages(d)
    _local_only(d)

    # tier and episode filters: exactly the tasks of that tier / episode
    tiers = export.tasks.set_index("task_id").tier
    for tier in sorted(set(tiers)):
        Select(d.find_element("id", "f-tier")).select_by_value(tier)
        assert _rows(d) == sorted(tiers.index[tiers == tier])
    Select(d.find_element("id", "f-tier")).select_by_value("")
    episode = export.tasks.set_index("task_id").loc[tid, "episode_id"]
    Select(d.find_element("id", "f-episode")).select_by_value(episode)
    assert _rows(d) == sorted(export.tasks.task_id[export.tasks.episode_id == episode])
    Select(d.find_element("id", "f-episode")).select_by_value("")
    assert len(_rows(d)) == n_tasks

    # filter: one planner, the memory suite, tasks it completed without reaching the goal
    planner = sorted(export.runs.planner[export.runs.suite == "memory"])[0]
    Select(d.find_element("id", "f-planner")).select_by_value(planner)
    Select(d.find_element("id", "f-suite")).select_by_value("memory")
    Select(d.find_element("id", "f-endpoint")).select_by_value("completed_not_goal")
    mine = tm[(tm.planner == planner) & (tm.suite == "memory")]
    want = sorted(set(mine.task_id[mine.endpoint.isin(["completed_none", "completed_partial"])]))
    assert _rows(d) == want
    # then the task's own title: the squash task's row is there iff its endpoint qualifies
    box = d.find_element("id", "f-q")
    box.send_keys(task["title"])
    Select(d.find_element("id", "f-endpoint")).select_by_value("")
    q = task["title"].lower()
    titled = sorted(set(mine.task_id) & {t["task_id"] for t in export.frozen.records_of("task")
                                         if q in f"{t['title']} {t['task_id']}".lower()})
    assert _rows(d) == titled and tid in titled
    # sorting by a run's endpoint keeps the rows, reorders them
    runs_shown = d.find_elements("css selector", "#matrix thead th.sortable")
    shown_runs = export.runs[(export.runs.planner == planner) & (export.runs.suite == "memory")]
    assert len(runs_shown) == 4 + len(shown_runs)  # task, title, tier, episode, the runs
    runs_shown[-1].click()
    assert sorted(_rows(d)) == titled
    _no_console_messages(d)

    # task page, from the row's link
    d.find_element("css selector", f'#matrix tr[data-task="{tid}"] a.tasklink').click()
    d.find_element("css selector", "main h1")
    assert d.find_element("css selector", "main h1").text == f"{task['title']} \u2014 {tid}"
    page = d.find_element("id", "app").text
    for c in task["contract"]["conditions"]:
        assert c["id"] in page
    runs = runs_of_task(export, tid)
    sections = d.find_elements("css selector", "section.run")
    assert [s.get_attribute("id") for s in sections] == [f"run-{r}" for r in runs]
    for section, run in zip(sections, runs):
        trace = export.task_trace(run, tid)
        text = section.text
        # the attempts, in order: proposed action, planner or repair, accepted or failed checks
        shown = [tr.text for tr in section.find_elements("css selector", "tr.step.attempt")]
        recorded = [a for g in trace["group_records"] for a in g["attempts"]]
        assert len(shown) == len(recorded)
        for row, a in zip(shown, recorded):
            assert row.startswith(f"attempt {a['index']} ")
            assert ("repair" in row) == (a["source"] == "repair")
            if a["action"] is not None:
                assert action_text(a) in row
            assert (a["status"] in row) and all(c in row for c in a["failed_checks"])
        queries = section.find_elements("css selector", "tr.step.query")
        assert len(queries) == sum(len(g["queries"]) for g in trace["group_records"])
        for g in trace["group_records"]:
            assert f"Group status {g['status']}" in text
            b = g["belief"]
            assert (f"cross-group hits {b['cross_group_hits']}, repeated region queries "
                    f"{b['repeated_region_queries']}, anchor-delta conflicts "
                    f"{b['anchor_delta_conflicts']}") in text
        truths = [td.text for td in section.find_elements("css selector", "table.truths td.truth-cell")]
        # text and shape: a glyph before the word
        assert [t.split()[-1] for t in truths] == \
            [c["truth"] for c in trace["task_record"]["conditions"]]
        endpoint = tm[(tm.run_id == run) & (tm.task_id == tid)].endpoint.iloc[0]
        assert section.find_element("css selector", f".runsum .ep-{endpoint}")
    _no_console_messages(d)
    _local_only(d)

    # compare: the first two runs of the task (for the memory suite: persistent vs reset)
    a, b = runs[0], runs[1]
    d.find_element("id", "compare-link").click()
    d.find_element("id", "divergence")
    _check_compare(d, export, task, a, b)
    # another pair, chosen in the page
    other = runs[-1]
    Select(d.find_element("id", "pick-b")).select_by_value(other)
    d.find_element("css selector", "main h1")
    assert quote(other) in d.current_url
    _check_compare(d, export, task, a, other)
    # the pair that diverges latest, and a pair that never does (where the records hold
    # them), each by its link
    traces = {r: export.task_trace(r, tid) for r in runs}
    pairs = [(x, y) for i, x in enumerate(runs) for y in runs[i + 1:]]
    divs = {p: first_divergence(traces[p[0]], traces[p[1]]) for p in pairs}
    late = max((p for p in pairs if divs[p]), key=lambda p: divs[p])
    same = [p for p in pairs if divs[p] is None][:1]
    base = (site / "compare" / d.current_url.split("/compare/", 1)[1].split("#")[0]).as_uri()
    for x, y in [late, *same]:
        d.get(f"{base}#a={quote(x)}&b={quote(y)}")
        d.find_element("id", "divergence")
        _check_compare(d, export, task, x, y)
    _no_console_messages(d)
    _local_only(d)


def _check_compare(d, export, task, a, b):
    tid = task["task_id"]
    ta, tb = export.task_trace(a, tid), export.task_trace(b, tid)
    div = first_divergence(ta, tb)
    summary = d.find_element("id", "divergence").text
    marked = d.find_elements("css selector", "#compare-table tr.diverge")
    if div is None:
        assert summary.startswith("= No divergence") and marked == []
        return
    gi, step, status_only = div
    gid = task["group_ids"][gi].rsplit("/", 1)[1]
    assert f"First divergence: group {gid} ({gi + 1} of {len(task['group_ids'])})" in summary
    assert len(marked) == 1 and marked[0].get_attribute("id") == "d-first"
    cell_text = marked[0].text
    if status_only:
        assert "group status" in cell_text
    else:
        assert f"step {step + 1}" in summary and f"step {step + 1} (differs)" in cell_text
        for steps in (timeline(ta["group_records"][gi]), timeline(tb["group_records"][gi])):
            if step < len(steps):
                kind, x = steps[step]
                want = (f"attempt {x['index']} [{x['source']}]" if kind == "attempt"
                        else f"query({x['region']})")
                assert want in cell_text, (want, cell_text)
    # the truths of both runs, side by side, before the step table
    assert d.execute_script("return document.getElementById('conditions-table')"
                            ".compareDocumentPosition(document.getElementById('compare-table'))"
                            " & Node.DOCUMENT_POSITION_FOLLOWING") != 0
    rows = d.find_elements("css selector", "#conditions-table tr.truthrow")
    assert len(rows) == len(task["contract"]["conditions"])
    for row, ca, cb in zip(rows, ta["task_record"]["conditions"], tb["task_record"]["conditions"]):
        cells = row.find_elements("css selector", "td")
        assert cells[1].text.endswith(ca["truth"]) and cells[2].text.endswith(cb["truth"])


@pytest.mark.e2e
@pytest.mark.slow
def test_overview_solved_by_a_not_by_b(browser):
    """The overview's "solved by A, not by B" filter (from the address and the selects):
    exactly the tasks where A's task metrics say success and B's do not."""
    from selenium.webdriver.support.ui import Select

    site, export = committed_site(), api_export()
    tm = export.task_metrics
    a, b = "belief_search__planner__persistent", "greedy_hints__planner__persistent"
    ok = tm.set_index(["run_id", "task_id"]).success
    want = sorted(t for t in tm.task_id[tm.run_id == a]
                  if ok[(a, t)] and not ok[(b, t)])
    assert want  # the committed export has such tasks: the check below can fail
    d = _open(browser, site.joinpath("index.html").as_uri() + f"#solved={a}&unsolved={b}")
    assert _rows(d) == want
    Select(d.find_element("id", "f-unsolved")).select_by_value("")
    assert _rows(d) == sorted(set(tm.task_id[(tm.run_id == a) & tm.success]))
    Select(d.find_element("id", "f-solved")).select_by_value(b)
    Select(d.find_element("id", "f-unsolved")).select_by_value(a)
    assert _rows(d) == sorted(t for t in tm.task_id[tm.run_id == b]
                              if ok[(b, t)] and not ok[(a, t)])
    _no_console_messages(d)


@pytest.mark.e2e
def test_largest_page_renders_offline_without_console_messages(browser):
    site = committed_site()
    biggest = max((site / "data" / "task").iterdir(), key=lambda p: p.stat().st_size)
    d = _open(browser, site / "task" / biggest.name.replace(".js", ".html"))
    assert d.find_elements("css selector", "section.run")
    _no_console_messages(d)
    _local_only(d)


@pytest.mark.e2e
def test_unknown_bookmark_dashes_last_and_no_page_scroll(browser):
    """A bookmarked filter or run this export lacks is said, and all is shown; a run's
    column sorted either way puts the tasks outside its suite (dashes) last; at 1400 px
    no page scrolls sideways (wide tables scroll in their own box)."""
    site, export = committed_site(), api_export()
    d = _open(browser, site.joinpath("index.html").as_uri() + "#planner=my_planner&tier=bogus")
    alert = d.find_element("id", "unknown-filter").text
    assert "planner \u201cmy_planner\u201d" in alert and "tier \u201cbogus\u201d" in alert
    n = len(export.tasks)
    assert d.find_element("id", "count").text.startswith(f"Showing {n} of {n} tasks")
    run = export.runs.loc[export.runs.suite == "planner", "run_id"].iloc[0]
    inside = set(export.task_metrics.loc[export.task_metrics.run_id == run, "task_id"])
    for direction in ("", "&dir=desc"):
        browser.get(site.joinpath("index.html").as_uri() + f"#sort={quote(run)}{direction}")
        browser.refresh()  # a new hash alone does not reload the page
        rows = _rows(_open(browser, browser.current_url))
        assert rows[0] in inside and rows[-1] not in inside, direction
        first_out = next(i for i, t in enumerate(rows) if t not in inside)
        assert all(t not in inside for t in rows[first_out:]), direction
    tid = squash_task(export)["task_id"]
    from analysis.report.links import view_compare_page, view_task_page
    browser.get(site.joinpath(view_compare_page(tid)).as_uri() + "#a=nope&b=" + quote(run))
    d = _open(browser, browser.current_url)
    assert "\u201cnope\u201d" in d.find_element("id", "unknown-run").text
    for page in ("index.html", view_task_page("P02-20240211-104948/t000"), view_task_page(tid)):
        d = _open(browser, site / page)
        width = d.execute_script("return [document.documentElement.scrollWidth, "
                                 "document.documentElement.clientWidth]")
        assert width[0] <= width[1], (page, width)
    _no_console_messages(d)

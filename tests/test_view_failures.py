"""The failure labels in the viewer (issue 35, item 5), in headless Chromium.

Expectations come from the API (``Export.failures``: labels derived by re-execution),
never from the site's data files: a task page shows each rejected attempt's label and
deciding check, the overview links each run to its label profile, and the compare page
gives each run's labels on the task.
"""
from __future__ import annotations

from collections import Counter

import pytest

from test_view_browser import _missing, _no_console_messages, _open, browser  # noqa: F401
from view_oracle import REPO, api_export, committed_site

pytestmark = [
    pytest.mark.skipif(bool(_missing), reason=f"no browser: {', '.join(_missing)} missing"),
    pytest.mark.skipif(not (REPO / "frozen_exports" / "MANIFEST.json").exists(),
                       reason="no committed export"),
]


def _safe(s: str) -> str:
    import re
    return re.sub(r"[^A-Za-z0-9_-]", "_", s)


def _task_with_labels(export, run_id):
    """The planner-suite task (first by ID) whose groups in ``run_id`` carry the most
    distinct attempt labels, and those labelled attempts in the task's group order."""
    f = export.failures(run_id).attempts
    f = f[f.run_id == run_id]
    planner_tasks = set(export.suites.task_id[export.suites.suite == "planner"])
    best = None
    for t in sorted(export.frozen.records_of("task"), key=lambda t: t["task_id"]):
        if t["task_id"] not in planner_tasks:
            continue
        mine = f[f.group_id.isin(t["group_ids"])]
        n = mine.failure.nunique()
        if n and (best is None or n > best[0]):
            best = (n, t, mine)
    return best[1], best[2]


@pytest.mark.e2e
@pytest.mark.slow
def test_task_overview_and_compare_pages_show_the_labels(browser):  # noqa: F811
    from urllib.parse import quote

    from analysis.report.links import view_compare_page, view_task_page
    site, export = committed_site(), api_export()
    runs = export.runs[export.runs.suite == "planner"].sort_values("run_id").run_id.tolist()
    a, b = runs[0], runs[1]
    task, labelled = _task_with_labels(export, a)
    tid = task["task_id"]

    # task page: every rejected attempt of run a shows its label and deciding check
    # (texts collected in one script: element-by-element reads are slow on a big page)
    d = _open(browser, site / view_task_page(tid))
    spans = d.execute_script(
        "return Array.from(document.querySelectorAll('.flabel')).map(e => e.textContent)")
    for r in labelled.itertuples():
        assert f"; label {r.failure} (check {r.check})" in spans, (r.group_id, r.index)
    suite_of = export.runs.set_index("run_id").suite
    n_all = 0
    for rid in export.runs.run_id:
        if tid in set(export.suites.task_id[export.suites.suite == suite_of[rid]]):
            fa = export.failures(rid).attempts
            n_all += int(((fa.run_id == rid) & fa.group_id.isin(task["group_ids"])).sum())
    assert len(spans) == n_all   # one label per rejected attempt, on every run of the task
    _no_console_messages(d)

    # overview: each run's row links its profile, whose counts are the API's
    d = _open(browser, site / "index.html")
    got = d.execute_script("""
      var out = {};
      document.querySelectorAll('#failures .profile').forEach(function (box) {
        var rows = {};
        box.querySelectorAll('tbody tr').forEach(function (tr) {
          var td = tr.querySelectorAll('td');
          if (td[1].textContent === 'rejected attempt') rows[td[0].textContent] = +td[2].textContent;
        });
        out[box.id] = rows;
      });
      var links = {};
      document.querySelectorAll('a.profile-link').forEach(function (a) {
        links[a.closest('tr').id] = a.getAttribute('href'); });
      return [out, links];""")
    profiles, links = got
    for rid in export.runs.run_id:
        assert links[f"metrics-{_safe(rid)}"] == f"#failures-{_safe(rid)}"
        fa = export.failures(rid).attempts
        assert profiles[f"failures-{_safe(rid)}"] == dict(Counter(fa.failure[fa.run_id == rid])), rid
    d.find_element("css selector", f"#metrics-{_safe(a)} a.profile-link").click()
    assert d.execute_script("return location.hash") == f"#failures-{_safe(a)}"
    _no_console_messages(d)

    # compare: each run's column carries its labels on the task
    d = _open(browser, site / view_compare_page(tid))
    d.get((site / view_compare_page(tid)).as_uri() + f"#a={quote(a)}&b={quote(b)}")
    d.refresh()
    d.find_element("css selector", "main h1")
    cells = d.execute_script(
        "return Array.from(document.querySelectorAll('#failure-labels td')).map(e => e.textContent)")
    for rid, cell in ((a, cells[1]), (b, cells[2])):
        fa = export.failures(rid).attempts
        got = Counter(fa.failure[(fa.run_id == rid) & fa.group_id.isin(task["group_ids"])])
        fg = export.failures(rid).groups
        got.update(f"{x} (group)" for x in fg.failure[(fg.run_id == rid) &
                                                      fg.group_id.isin(task["group_ids"])])
        if not got:
            assert cell == "no rejected attempt, every group completed"
            continue
        parts = dict(p.rsplit(" \u00d7", 1) for p in cell.split("; "))
        assert {k: int(v) for k, v in parts.items()} == dict(got), rid
    _no_console_messages(d)

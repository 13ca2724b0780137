"""The static site: every page and data file of the viewer, as ``{relpath: bytes}``.

Pages are small HTML shells; each loads the shared ``assets/viewer.js`` and
``assets/viewer.css`` and its own data file (a script that sets ``window.E2W_DATA``, so
that the site opens from ``file://``, where browsers refuse ``fetch`` of local files):
``data/overview.js`` for the overview, ``data/task/<task>.js`` for a task's page and its
compare page. A page therefore loads only its own task's data. Nothing refers to another
host, and the bytes depend only on the records and the statistics settings (keys sorted,
no timestamps, no absolute paths).

>>> _js({"b": 1, "a": "</script>"})
'window.E2W_DATA = {"a":"<\\\\/script>","b":1};\\n'
"""
from __future__ import annotations

import hashlib
import html
import json
import math
from importlib import resources

# the tables' own vocabulary, interval text and card lines, through the public API
from ..api import (ENDPOINT_LABELS, ENDPOINTS, PLANNER_METRICS, STUDY_METRICS, ci,
                   condition_lines, pct_ci, ref_text, source_lines, task_slug,
                   view_compare_page, view_index, view_task_page)
from .output import SITE_INDEX

__all__ = ["build_site", "SITE_INDEX", "ENDPOINT_GLYPHS"]

#: Endpoint -> (short text, glyph): the matrix shows both, never colour alone.
ENDPOINT_GLYPHS = {
    "parse_failure": ("parse failure", "\u2717"),      # ✗
    "empty_plan": ("empty plan", "\u2205"),             # ∅
    "execution_blocked": ("blocked", "\u25a0"),         # ■
    "completed_none": ("completed, none met", "\u25cb"),  # ○
    "completed_partial": ("completed, partial", "\u25d0"),  # ◐
    "completed_all": ("success", "\u25cf"),             # ●
}

_PCT_STUDY = {"action_validity", "success", "completed", "gcr"}


def _js(data) -> str:
    text = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"),
                      allow_nan=False)
    # a data file is a script: "</" must not end it early when inlined anywhere
    return "window.E2W_DATA = " + text.replace("</", "<\\/") + ";\n"


def _num(v):
    """A JSON-safe number (NaN and infinities become null)."""
    if v is None:
        return None
    v = float(v)
    return None if math.isnan(v) or math.isinf(v) else v


def _page(title: str, kind: str, data_src: str, depth: int) -> str:
    up = "../" * depth
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        # no favicon request (file:// has none)
        "<link rel=\"icon\" href=\"data:,\">\n"
        f"<title>{html.escape(title)}</title>\n"
        f"<link rel=\"stylesheet\" href=\"{up}assets/viewer.css\">\n"
        "</head>\n"
        f"<body data-page=\"{kind}\" data-root=\"{up}\">\n"
        f"<noscript>This page is drawn by assets/viewer.js: enable JavaScript.</noscript>\n"
        "<main id=\"app\"><p class=\"loading\">Loading\u2026</p></main>\n"
        f"<script src=\"{up}{data_src}\"></script>\n"
        f"<script src=\"{up}assets/viewer.js\"></script>\n"
        "</body>\n</html>\n")


def _asset(name: str) -> bytes:
    return resources.files("analysis.view").joinpath("assets", name).read_bytes()


# --- the cohort side of a task page (the task card's content) ---------------------------

def _cond_text(c: dict) -> str:
    if c["kind"] == "atom":
        return f"{c['atom'][0]}({', '.join(c['atom'][1:])})"
    ev = c["event"]
    return f"accepted {ev['type']}({', '.join('*' if a is None else a for a in ev['args'])})"


def _action_text(action) -> str | None:
    if action is None:
        return None
    return f"{action['type']}({', '.join(action['args'])})"


def _task_card(task: dict, episode: dict) -> dict:
    groups = {g["group_id"]: g for g in episode["groups"]}
    mine = [groups[g] for g in task["group_ids"]]
    prov = task.get("provenance", {}) or {}
    cprov = prov.get("conditions", {}) or {}
    conditions = []
    for c in task["contract"]["conditions"]:
        p = cprov.get(c["id"], {}) or {}
        pr = p.get("refs", {}) or {}
        # the lines of tables/cards/<task>.md: spans, video, question and answer text
        head, rows = condition_lines(c, p, markdown=False)
        conditions.append({"id": c["id"], "kind": c["kind"], "text": _cond_text(c),
                           "source": p.get("source", "?"), "operation": pr.get("operation"),
                           "time": pr.get("time"), "line": head, "evidence": rows})
    out_groups = []
    for g in mine:
        s = g.get("source", {}) or {}
        out_groups.append({
            "group_id": g["group_id"], "index": g["index"], "instruction": g["instruction"],
            "recipe": s.get("recipe"), "steps": list(s.get("steps", [])),
            "video": s.get("video"), "start": _num(s.get("start")), "end": _num(s.get("end")),
            "operations": [{"text": _action_text(op), "source": op["provenance"]["source"],
                            "time": (op["provenance"].get("refs", {}) or {}).get("time"),
                            "evidence": [ref_text(a, markdown=False) for a in
                                         (op["provenance"].get("refs", {}) or {}).get("args", [])]}
                           for op in g["operations"]]})
    return {"task_id": task["task_id"], "title": task["title"], "tier": task["tier"],
            "episode_id": task["episode_id"], "scene_id": episode.get("scene_id"),
            "videos": list(episode.get("videos", [])),
            "source_lines": source_lines(task, episode, markdown=False),
            "conditions": conditions, "groups": out_groups,
            "reference_action_types": sorted(set(task.get("reference_action_types", [])))}


# --- the run side: what each run did on the task --------------------------------------

def _run_labels(f, run_id: str) -> tuple[dict, dict]:
    """``({(group_id, index): (label, check)}, {group_id: outcome label})`` of one run."""
    if isinstance(f, str):  # no labels: the records do not re-execute
        return {}, {}
    att = f.attempts[f.attempts.run_id == run_id]
    grp = f.groups[f.groups.run_id == run_id]
    return ({(g, int(i)): (x, c) for g, i, x, c in zip(att.group_id, att["index"], att.failure,
                                                       att.check)},
            dict(zip(grp.group_id, grp.failure)))


def _profile(f, run_id: str) -> dict:
    """A run's label profile: each label's count and share of its rejected attempts (of
    its groups, for group outcomes), most frequent first (as Table 15 counts them)."""
    if isinstance(f, str):
        return {"rejected": 0, "groups": 0, "labels": [], "why": f}
    att = f.attempts[f.attempts.run_id == run_id].failure.value_counts()
    grp = f.groups[f.groups.run_id == run_id].failure.value_counts()
    n_att, n_grp = int(att.sum()), int((f.group_counts.run_id == run_id).sum())
    rows = [{"label": k, "unit": "rejected attempt", "count": int(v), "share": int(v) / n_att}
            for k, v in sorted(att.items(), key=lambda kv: (-kv[1], kv[0]))]
    rows += [{"label": k, "unit": "group", "count": int(v), "share": int(v) / n_grp if n_grp else None}
             for k, v in sorted(grp.items(), key=lambda kv: (-kv[1], kv[0]))]
    return {"rejected": n_att, "groups": n_grp, "labels": rows}


def _group_trace(g: dict, labels: tuple[dict, dict] = ({}, {})) -> dict:
    att_labels, group_labels = labels

    def failure(a):
        got = att_labels.get((g["group_id"], a["index"]))
        return {"failure": got[0], "check": got[1]} if got else {}
    return {
        "group_id": g["group_id"], "status": g["status"],
        "failure": group_labels.get(g["group_id"]),
        "attempts": [{"index": a["index"], "source": a["source"],
                      "action": _action_text(a["action"]),
                      "raw": None if a["action"] is not None else (a["raw"] or ""),
                      "status": a["status"], "failed_checks": list(a["failed_checks"]),
                      **failure(a)}
                     for a in g["attempts"]],
        "queries": [{"region": q["region"], "responded": q["responded"],
                     "after_attempts": q["after_attempts"], "anchor": list(q["anchor"]),
                     "visible": list(q["visible"]), "added": list(q["added"]),
                     "removed": list(q["removed"])} for q in g["queries"]],
        "belief": dict(g["belief"]), "world_sha256_after": g["world_sha256_after"],
        "planner_calls": len(g.get("planner_calls", [])),
        "prompt_tokens": g["prompt_tokens"], "completion_tokens": g["completion_tokens"]}


def _metric_cell(row) -> dict:
    return {"endpoint": row.endpoint, "gcr": _num(row.gcr), "success": bool(row.success),
            "completed": bool(row.completed), "n_true": int(row.n_true),
            "n_conditions": int(row.n_conditions), "n_attempts": int(row.n_attempts),
            "n_repair_attempts": int(row.n_repair_attempts),
            "action_validity": _num(row.action_validity)}


# --- per-run metrics with intervals, from the results objects of the tables -------------

def _run_metrics(src) -> dict:
    """``{run_id: {"table": ..., "metrics": [...]}}``: Table 4's intervals for planner-suite
    runs, Table 8's per-condition intervals for memory-suite runs with both conditions;
    other runs get the reason they have none."""
    res = src.results
    by_label = {r["label"]: r["run_id"] for r in src.runs if r["suite"] == "planner"}
    out = {}
    boot = res.planner_bootstrap
    if boot is not None:
        t = boot.table
        for label, part in t.groupby("label", sort=False):
            rid = by_label.get(label)
            if rid is None:
                continue
            rows = part.set_index("metric")
            out[rid] = {"table": "table04_planner_results", "metrics": [
                {"metric": m, "label": lab, "text": pct_ci(rows.loc[m].estimate,
                                                          rows.loc[m].low, rows.loc[m].high),
                 "estimate": _num(rows.loc[m].estimate)}
                for m, lab in PLANNER_METRICS if m in rows.index]}
    for planner, study in sorted(res.memory.items()):
        t = study.by_condition.table.set_index(["memory", "metric"])
        for cond, rid in sorted(study.run_ids.items()):
            metrics = []
            for m, lab in STUDY_METRICS:
                if (cond, m) not in t.index:
                    continue
                r = t.loc[(cond, m)]
                text = (pct_ci(r.estimate, r.low, r.high) if m in _PCT_STUDY
                        else ci(r.estimate, r.low, r.high, 1))
                metrics.append({"metric": m, "label": lab + (" (%)" if m in _PCT_STUDY else ""),
                                "text": text, "estimate": _num(r.estimate)})
            out[rid] = {"table": "table08_memory_study", "metrics": metrics}
    skipped = dict(getattr(res, "skipped", {}) or {})
    for r in src.runs:
        if r["run_id"] in out:
            continue
        if r["suite"] == "memory":
            why = ("the memory study needs both a persistent and a reset run of this planner"
                   if "memory" not in skipped or res.memory else skipped["memory"])
        else:
            why = skipped.get("planner", "not in the tables' statistics")
        out[r["run_id"]] = {"table": None, "metrics": [], "why": why}
    return out


def build_site(src, progress=None) -> dict[str, bytes]:
    """Every file of the site for the export ``src`` (:class:`analysis.view.source.Source`),
    ``SITE.json`` included. Writes nothing."""
    say = progress or (lambda msg: None)
    files: dict[str, str | bytes] = {}
    runs = src.runs
    tm = src.task_metrics
    cells: dict = {}
    for row in tm.itertuples():
        cells.setdefault(row.task_id, {})[row.run_id] = _metric_cell(row)
    suites_of = {}
    for s, tids in src.suites.items():
        for t in tids:
            suites_of.setdefault(t, []).append(s)
    episodes = {e["episode_id"]: e for e in src.episodes()}
    cfg = src.results.config
    counts = src.repair_counts()
    run_metrics = _run_metrics(src)
    say("failure labels of every run (re-executed)")
    failures = {r["run_id"]: src.failures(r["run_id"]) for r in runs}
    no_attempts = (tm.n_attempts == 0).groupby(tm.run_id).sum()
    run_info = [{**r, "attempts": counts.get(r["run_id"], (0, 0, 0))[0],
                 "tasks_without_attempts": int(no_attempts.get(r["run_id"], 0)),
                 "repair_attempts": counts.get(r["run_id"], (0, 0, 0))[1],
                 "accepted_attempts": counts.get(r["run_id"], (0, 0, 0))[2],
                 "n_tasks": len(src.suites.get(r["suite"], [])),
                 "failure_profile": _profile(failures[r["run_id"]], r["run_id"]),
                 **run_metrics[r["run_id"]]} for r in runs]
    common = {"fingerprint": src.fingerprint, "stats": cfg.describe(),
              "endpoints": [{"key": e, "label": ENDPOINT_LABELS[e],
                             "short": ENDPOINT_GLYPHS[e][0], "glyph": ENDPOINT_GLYPHS[e][1]}
                            for e in ENDPOINTS]}
    # the tables' few-episode warnings travel with their intervals
    res = src.results
    warnings = {"planner": " ".join(dict.fromkeys(getattr(res.planner_bootstrap, "warnings", ()) or ())),
                "memory": " ".join(dict.fromkeys(w for st in res.memory.values()
                                                 for w in getattr(st.by_condition, "warnings", ()) or ()))}
    overview = {"kind": "overview", **common, "runs": run_info,
                "warnings": {k: v for k, v in warnings.items() if v}, "tasks": [
        {"task_id": t["task_id"], "title": t["title"], "tier": t["tier"],
         "episode_id": t["episode_id"], "suites": sorted(suites_of.get(t["task_id"], [])),
         "page": view_task_page(t["task_id"]), "compare": view_compare_page(t["task_id"]),
         "cells": cells.get(t["task_id"], {})}
        for t in src.tasks]}
    files["data/overview.js"] = _js(overview)
    files[view_index()] = _page("Ego2World trace viewer: overview", "overview",
                                "data/overview.js", 0)

    # one run at a time: its group records are decoded once and dropped before the next
    traces: dict = {t["task_id"]: [] for t in src.tasks}
    task_groups = {t["task_id"]: t["group_ids"] for t in src.tasks}
    by_suite = {s: set(t) for s, t in src.suites.items()}
    for i, r in enumerate(runs, 1):
        say(f"run {i}/{len(runs)}: {r['run_id']}")
        groups = src.group_records(r["run_id"])
        trecs = src.task_records(r["run_id"])
        labels = _run_labels(failures[r["run_id"]], r["run_id"])
        for tid in sorted(by_suite.get(r["suite"], ())):
            rec = trecs.get(tid)
            cell = cells.get(tid, {}).get(r["run_id"])
            traces[tid].append({
                "run_id": r["run_id"], "label": r["label"], "planner": r["planner"],
                "memory": r["memory"], "suite": r["suite"], "metrics": cell,
                "completed": rec["completed"] if rec else None,
                "truths": [dict(c) for c in rec["conditions"]] if rec else [],
                "groups": [_group_trace(groups[g], labels) for g in task_groups[tid]
                           if g in groups]})
        del groups, trecs
    say(f"writing {len(src.tasks)} task pages")
    for t in src.tasks:
        tid = t["task_id"]
        data = {"kind": "task", **common, "task": _task_card(t, episodes[t["episode_id"]]),
                "runs": traces[tid], "index": view_index(), "page": view_task_page(tid),
                "card": f"{task_slug(tid)}.md",
                "compare": view_compare_page(tid)}
        slug = task_slug(tid)
        files[f"data/task/{slug}.js"] = _js(data)
        title = f"{t['title']} ({tid})"
        files[view_task_page(tid)] = _page(f"{title}: trace viewer", "task",
                                           f"data/task/{slug}.js", 1)
        files[view_compare_page(tid)] = _page(f"{title}: compare runs", "compare",
                                              f"data/task/{slug}.js", 1)
    files["assets/viewer.js"] = _asset("viewer.js")
    files["assets/viewer.css"] = _asset("viewer.css")
    out = {k: (v.encode("utf-8") if isinstance(v, str) else v) for k, v in files.items()}
    listing = {"about": "a static site written by python -m analysis.view; the next build "
                        "replaces the files listed here",
               "export_manifest_sha256": src.fingerprint,
               "files": {k: hashlib.sha256(v).hexdigest() for k, v in sorted(out.items())}}
    out[SITE_INDEX] = (json.dumps(listing, indent=1, sort_keys=True) + "\n").encode()
    return out

"""Grounding table (cohort faithfulness) and per-task cards: how much of each suite rests on HD-EPIC
annotations, and, for every task, the source rows a reviewer needs to check it.

* :func:`grounding_table`: per suite, the observed share of world facts, of operation
  arguments and of contract conditions (observed = an HD-EPIC row supports it; curated =
  a documented compiler rule produced it).
* :func:`task_cards`: one Markdown card per task (title, the source steps with times,
  each condition with its supporting rows, the reference operations with their rows),
  plus an index; ``python -m analysis.tables`` writes them under ``tables/cards/`` as
  part of its generation, and the grounding table's note links the index from
  ``tables/README.md``.

>>> _fmt_ref({"source": "observed", "refs": {"file": "assoc_info.json", "id": "v/a/t", "time": 1.0,
...                                          "end": 2.5, "name": "new glass"}})
'observed: assoc_info.json v/a/t "new glass" @ 1.0-2.5 s'
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from .links import view_link_from, view_task_page
from .output import Table

__all__ = ["grounding_table", "task_cards", "CARDS_DIR"]

CARDS_DIR = "cards"


def _share(xs: list[str]) -> float:
    return xs.count("observed") / len(xs) if xs else float("nan")


def grounding_table(export) -> Table:
    """Observed share of facts, operation arguments and conditions, per suite."""
    episodes = {e["episode_id"]: e for e in export.records_of("episode")}
    tasks = {t["task_id"]: t for t in export.records_of("task")}
    rows = []
    for suite in export.records_of("suite"):
        eps = [episodes[e] for e in sorted(suite["episode_ids"])]
        facts = [p["source"] for e in eps for p in e["fact_provenance"]]
        args = [a["source"] for e in eps for g in e["groups"] for op in g["operations"]
                for a in op["provenance"]["refs"].get("args", [])]
        conds = [p["source"] for tid in suite["task_ids"]
                 for p in tasks[tid]["provenance"].get("conditions", {}).values()]
        first = [tasks[tid]["provenance"].get("conditions", {}).get("c1", {}).get("source")
                 for tid in suite["task_ids"]]
        rows.append({"suite": suite["suite"], "tasks": len(suite["task_ids"]),
                     "facts": len(facts), "observed_fact_share": _share(facts),
                     "operation_args": len(args), "observed_arg_share": _share(args),
                     "conditions": len(conds), "observed_condition_share": _share(conds),
                     "observed_first_condition_share": _share(first)})
    data = pd.DataFrame(rows).sort_values("suite").reset_index(drop=True)
    pct = lambda v: "" if pd.isna(v) else f"{100 * v:.1f}"  # noqa: E731
    disp = pd.DataFrame({
        "suite": data.suite, "tasks": data.tasks, "world facts": data.facts,
        "observed facts (%)": data.observed_fact_share.map(pct),
        "operation arguments": data.operation_args,
        "observed arguments (%)": data.observed_arg_share.map(pct),
        "conditions": data.conditions,
        "observed conditions (%)": data.observed_condition_share.map(pct),
        "observed first conditions (%)": data.observed_first_condition_share.map(pct)})
    return Table(
        name="table14_grounding", title="Grounding: observed shares per suite",
        paper_ref="paper 3 and 7", data=data, display=disp,
        notes="Observed = supported by an HD-EPIC row (file, row or annotation ID, time); "
              "curated = produced by a documented compiler rule (docs/compiler.md). Operation "
              "arguments count each argument of each reference operation. Shares in percent; "
              "the CSV keeps them as fractions. Task cards: "
              f"[{CARDS_DIR}/README.md]({CARDS_DIR}/README.md).")


def _span(r: dict) -> str:
    t, e = r.get("start", r.get("time")), r.get("end")
    if t is None:
        return ""
    return f" @ {t}-{e} s" if e is not None and e != t else f" @ {t} s"


def ref_text(p: dict, markdown: bool = True) -> str:
    """:func:`_fmt_ref` as plain text when ``markdown`` is false (the trace viewer's task
    card shows the same lines as ``tables/cards``).

    >>> ref_text({"source": "curated", "refs": {"rule": "r"}}, markdown=False)
    'CURATED rule r'
    """
    text = _fmt_ref(p)
    return text if markdown else _plain(text)


def source_lines(task: dict, episode: dict, markdown: bool = True) -> list[str]:
    """The card's "Source" list: the task's source row, each of its step and prep segments
    (flagged where nothing was compiled in it) and each source step with its text."""
    q = "`" if markdown else ""
    refs = task["provenance"].get("refs", {})
    src = ", ".join(f"{k} {q}{v}{q}" for k, v in sorted(refs.items()) if v is not None and k != "segments")
    lines = [f"task source row: {src}"]
    for x in refs.get("segments", []):
        lines.append(f"{x['kind']} segment {x['video']} {x['start']:.2f}-{x['end']:.2f} s"
                     + ("" if x.get("compiled", True) else
                        f" (no operation compiled in it: its events are in {q}dropped.jsonl{q}, or it has none)"))
    groups = {g["group_id"]: g for g in episode["groups"]}
    shown = set()
    for g in (groups[i] for i in task["group_ids"]):
        s = g["source"]
        seen_key = (tuple(s.get("steps") or ()), s.get("video"), s.get("start"), s.get("end"))
        if s.get("steps") and seen_key not in shown:
            shown.add(seen_key)
            lines.append(f"step {', '.join(s['steps'])} of {s.get('recipe')}: \"{s.get('text', g['instruction'])}\" "
                         f"({s['video']} {s['start']:.2f}-{s['end']:.2f} s)")
    return lines


#: What a condition's source rows are timed in (the witnessing operation is in episode time).
ROWS_TIME_NOTE = "source rows below in their own video's time"


def _fmt_ref(p: dict) -> str:
    """One source row as a reviewer checks it: file and ID, the track's name and span
    (start-end in its own video's time, with the video's offset in the episode), the
    question and answer text of a VQA or itinerary row, the next track a "take" answer
    belongs to; a curated row is flagged, and so is the curated identity of a later
    video's object merged by name with an earlier one (its observed row is shown)."""
    r = p.get("refs", {})
    ident = None
    if p.get("source") != "observed" and r.get("track_source") == "observed":
        # a track of a later video merged with an earlier video's object by name: the
        # track is observed, the identity is not
        ident = {"rule": r.get("rule"), "same_as": r.get("same_as")}
    elif p.get("source") != "observed":
        return f"**CURATED** rule `{r.get('rule', '?')}`"
    where = f"{r.get('file', '?')} {r.get('id', '')}".strip()
    if r.get("name"):
        where += f" \"{r['name']}\""
    where += _span(r)
    if r.get("offset"):
        where += f" (video starts at episode time {r['offset']} s)"
    if r.get("video") and r.get("file", "").startswith(("3d_perception", "object_motion", "fine_grained")):
        where += f", video {r['video']}"
    if r.get("question"):
        where += f"; Q: \"{r['question']}\" A: \"{r.get('answer', '')}\""
    if r.get("next_track"):
        span = r.get("next_track_span") or []
        where += f"; answer of the next track {r['next_track']}" + (
            f" ({span[0]}-{span[1]} s)" if len(span) == 2 else "")
    if ident:
        where += f"; **CURATED** identity: the same object as {ident.get('same_as')} (rule `{ident.get('rule')}`)"
        return f"observed row: {where}"
    return f"observed: {where}"


def condition_lines(c: dict, p: dict, markdown: bool = True) -> tuple[str, list[str]]:
    """A card's condition: its line (ID, predicate or event, source, the witnessing
    operation and its episode time) and one line per source row it rests on. The trace
    viewer shows the same lines (``markdown=False``)."""
    r = p.get("refs", {})
    head = (f"**{c['id']}** {_cond_text(c)}: {p.get('source', '?')}, witnessed by "
            f"`{r.get('operation', '?')}` at episode time {r.get('time')} s ({ROWS_TIME_NOTE})")
    rows = []
    for a in r.get("args", []):
        how = a.get("refs", {}).get("how")
        rows.append(_fmt_ref(a) + (f" ({how})" if how else ""))
    if not markdown:
        head, rows = _plain(head), [_plain(x) for x in rows]
    return head, rows


def _plain(text: str) -> str:
    return text.replace("**", "").replace("`", "")


def _cond_text(c: dict) -> str:
    if c["kind"] == "atom":
        return f"`{c['atom'][0]}({', '.join(c['atom'][1:])})`"
    ev = c["event"]
    return f"event `{ev['type']}({', '.join(x if x is not None else '*' for x in ev['args'])})`"


def _viewer_line(task_id: str) -> str:
    """The link to the task's trace-viewer page (every run's attempts and truths)."""
    page = view_link_from(f"tables/{CARDS_DIR}", view_task_page(task_id))
    return (f"What every run did on this task: [trace viewer page]({page}) (built by "
            "`python -m analysis.view`).")


def _card(task: dict, episode: dict, conflicts: list[dict] = ()) -> str:
    groups = {g["group_id"]: g for g in episode["groups"]}
    mine = [groups[g] for g in task["group_ids"]]
    refs = task["provenance"].get("refs", {})
    lines = [f"# {task['task_id']}: {task['title']}", "",
             f"Episode `{task['episode_id']}`, tier **{task['tier']}**, "
             f"groups {task['group_ids'][0]} .. {task['group_ids'][-1]} ({len(mine)}).", "",
             _viewer_line(task["task_id"]), "",
             "## Source", ""]
    n_seg = len(refs.get("segments", []))
    lines += [("  - " if 0 < k <= n_seg else "- ") + line
              for k, line in enumerate(source_lines(task, episode))]
    lines += ["", "## Conditions", ""]
    cprov = task["provenance"].get("conditions", {})
    for c in task["contract"]["conditions"]:
        head, rows = condition_lines(c, cprov.get(c["id"], {}))
        lines.append(f"- {head}")
        lines += [f"  - {r}" for r in rows]
    cited = {a.get("refs", {}).get("id", "") for g in mine for op in g["operations"]
             for a in op["provenance"]["refs"].get("args", [])}
    mine_c = [c for c in conflicts if f"{c['refs'].get('video')}/{c['refs'].get('association')}/"
              f"{c['refs'].get('track')}" in cited]
    if mine_c:
        lines += ["", "## CONFLICTS (observed sources that disagree; neither compiled)", ""]
        lines += [f"- {c['what']}: {c['reason']}" for c in mine_c]
    lines += ["", "## Reference operations", "", "| group | time | operation | provenance |",
              "|---|---|---|---|"]
    for g in mine:
        for op in g["operations"]:
            r = op["provenance"]["refs"]
            ev = "; ".join(_fmt_ref(a) for a in r.get("args", []))
            lines.append(f"| {g['group_id'].rsplit('/', 1)[1]} | {r.get('time')} | "
                         f"`{op['type']}({', '.join(op['args'])})` | **{op['provenance']['source']}** "
                         f"(args: {ev.replace('|', '/')}) |")
    return "\n".join(lines) + "\n"


def task_cards(export) -> dict[str, str]:
    """``{relative path: Markdown}``: one card per task and the index ``README.md``."""
    episodes = {e["episode_id"]: e for e in export.records_of("episode")}
    tasks = sorted(export.records_of("task"), key=lambda t: t["task_id"])
    suites = {s["suite"]: set(s["task_ids"]) for s in export.records_of("suite")}
    conflicts = [d for d in export.records_of("dropped_event")
                 if d["kind"] == "source" and "observed_conflict" in d["reason"]]
    out = {}
    index = ["# Task cards", "",
             "One card per compiled task: source steps with times, each condition with the "
             "source rows that support it, the reference operations with their rows. "
             "Generated by `python -m analysis.tables`; do not edit.", "",
             "| task | suites | tier | title | c1 |", "|---|---|---|---|---|"]
    for t in tasks:
        rel = f"{t['task_id'].replace('/', '_')}.md"
        out[rel] = _card(t, episodes[t["episode_id"]], conflicts)
        member = ", ".join(s for s in sorted(suites) if t["task_id"] in suites[s])
        index.append(f"| [{t['task_id']}]({rel}) | {member} | {t['tier']} | "
                     f"{t['title'].replace('|', '/')} | {_cond_text(t['contract']['conditions'][0])} |")
    out["README.md"] = "\n".join(index) + "\n"
    return out

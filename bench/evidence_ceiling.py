"""How many observed end states the HD-EPIC rows hold per source unit, whatever the binding.

    python bench/evidence_ceiling.py [EXPORT_ROOT] [SOURCE] [--units]

``EXPORT_ROOT`` holds ``cohort/`` (default: the repository's ``frozen_exports``);
``SOURCE`` is the HD-EPIC copy (default ``$E2W_HDEPIC``, else ``../shared/hd-epic`` beside
the repository); ``--units`` prints every unit's counts.

Issue 18 asks that half of each suite's tasks have two or more conditions. This script
counts what the source rows hold for that, without the compiler's binding rules (no
unique binding, no vague-name filter, no hand model, no target decision, no admission),
over every source unit of each suite's episodes, the units of ``compiler.tasks``: a
recipe step with all its step and prep segments in the episode's videos, or an activity
row (``PXX_recipe_timestamps.csv``) of one of them. A unit's count is the sum of

* **adds**: every add event of ``complete_recipes.json`` overlapping one of the step's
  segments (for a row: falling in it and in no step or prep segment), counted once per
  named association of that video whose name shares a word with the ingredient and whose
  track overlaps the add (five eggs, five ``in``), at least once;
* **placements**: every named object with a final put-down in the unit (a track ending
  in the unit, after which no track of the object starts in the unit) whose destination
  some answer gives: a VQA "put" answer within 0.05 s of that track's start, a "take"
  answer within 0.05 s of the object's next track's end, or an itinerary linked to the
  object (a track boundary within 0.05 s of its time) whose moves are one per track, or
  whose final "to" is this, its last, track; a row counts the put-downs inside its
  nested steps too;
* **contents**: every object a contents-retrieval answer says was put in or on a
  container, at a question time inside the unit (the compiler reads none of these);
* **states**: the compiled task's states other than ``in`` and ``at`` (``powered``,
  ``capped``, ...), or the unit's state-changing snippets (open, close, switch on or
  off), whichever is more;
* **events**: the compiled task's events (stir, chop, press, ...); left out for the
  memory suite, which holds terminal tasks only.

Every count is generous (an ambiguous answer counts for every object it may be about),
so the share of units with two or more among those with any is what full binding of
this evidence would give. It is not a proof that no compiler could do better: a step's
key action the compiler does not bind (a stir with two vessels in hand) would add an
event. :func:`exceeding` checks the count as an oracle where it does not copy the
compiler: no compiled task may hold more ``in`` conditions than its unit's adds (plus one
for a step's transfer, "add the frothed milk into the coffee", which has no add row) or
more ``at`` conditions than its placements (tests/test_compiler_cohort.py).
"""
from __future__ import annotations

import gzip
import json
import os
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from analysis.compiler.readers import (_TIME_RE, Span, parse_time,  # noqa: E402
                                       read_activities, read_associations, read_durations,
                                       read_itineraries, read_location_answers, read_recipes,
                                       read_snippets)

TOL = 0.05      # seconds: an answer's time and a track boundary (worlds.AMBIGUITY)
CONTENTS = "vqa-benchmark/3d_perception_object_contents_retrieval.json"
#: Snippet actions that leave a represented state (a container or appliance open or closed,
#: switched on or off); the other snippet verbs are gestures with no end state.
STATE_VERBS = ("open", "close", "turn on", "turn off", "switch on", "switch off")


@dataclass(frozen=True)
class Unit:
    episode: str
    kind: str           # "step" or "row"
    key: str            # "<recipe>/<step>" or "<file>:<line>", as in a task's provenance
    label: str
    adds: int
    placements: int
    events: int         # the compiled task's event conditions (stir, chop, press, ...)
    other: int          # the compiled task's state conditions other than in() and at()
    states: int = 0     # state-changing snippets (open, close, switch) in the unit
    contents: int = 0   # objects a contents answer says were put in something, in the unit

    def ceiling(self, events: bool = True) -> int:
        """The unit's observed end states (and, with ``events``, its compiled events): the
        most conditions a faithful task of it could hold."""
        return (self.adds + self.placements + self.contents + max(self.other, self.states)
                + (self.events if events else 0))


class Source:
    """The raw rows the ceiling reads, once."""

    def __init__(self, root: Path):
        self.recipes = read_recipes(root)
        self.activities = read_activities(root, read_durations(root))
        self.assocs = read_associations(root)
        self.answers = read_location_answers(root)
        self.itineraries = read_itineraries(root)
        self.snippets = read_snippets(root)
        self.contents = []           # (video, time, [objects put in or on it])
        for q in json.loads((Path(root) / CONTENTS).read_text()).values():
            text, times = q["question"], _TIME_RE.findall(q["question"])
            answer = q["choices"][q["correct_idx"]]
            if "put in/on" in text and times and answer != "Nothing":
                self.contents.append((q["inputs"]["video 1"]["id"], parse_time(times[0][0]),
                                      [x for x in answer.split(", ") if x]))

    def answered(self, video: str) -> set[tuple[str, str]]:
        """``(association, track)`` pairs of the video whose destination some answer gives."""
        named = [a for a in self.assocs.get(video, []) if a.name]
        out = set()
        for ans in (x for x in self.answers if x.video == video):
            for a in named:
                for i, t in enumerate(a.tracks):
                    if ans.kind == "put" and abs(t.start - ans.time) <= TOL:
                        out.add((a.assoc_id, t.track_id))
                    if ans.kind == "take" and i > 0 and abs(t.end - ans.time) <= TOL:
                        out.add((a.assoc_id, a.tracks[i - 1].track_id))
        for it in (x for x in self.itineraries if x.video == video):
            for a in named:
                if any(min(abs(t.start - it.time), abs(t.end - it.time)) <= TOL for t in a.tracks):
                    covered = a.tracks if len(it.moves) == len(a.tracks) else a.tracks[-1:]
                    out |= {(a.assoc_id, t.track_id) for t in covered}
        return out

    def instances(self, event) -> int:
        words = {w.rstrip("s") for w in event.name.lower().split() if len(w) > 2}
        n = sum(1 for a in self.assocs.get(event.span.video, []) if a.name
                and words & {w.rstrip("s") for w in a.name.lower().replace("_", " ").split()}
                and any(t.start < event.span.end and event.span.start < t.end for t in a.tracks))
        return max(n, 1)


def _inside(video: str, t: float, spans) -> bool:
    return any(sp.video == video and sp.start <= t <= sp.end for sp in spans)


def _task_key(task: dict) -> tuple[str, str]:
    r = task["provenance"]["refs"]
    return task["episode_id"], (r["row"] if r.get("unit") == "activity row" else f"{r['recipe']}/{r['step']}")


def units(src: Source, episode: str, videos: list[str], other: dict) -> list[Unit]:
    """Every source unit of one episode with its counts."""
    vs = set(videos)
    answered = {v: src.answered(v) for v in videos}
    spans_of = []
    for r in src.recipes.values():
        for c in r.captures:
            if not vs & set(c.videos):
                continue
            by = defaultdict(list)
            for s in c.segments:
                if s.span.video in vs:
                    by[s.step_id].append(s.span)
            for sid, spans in by.items():
                adds = [e for e in c.events if e.kind == "add" and any(
                    e.span.video == sp.video and e.span.start < sp.end and sp.start < e.span.end
                    for sp in spans)]
                spans_of.append(("step", f"{r.recipe_id}/{sid}", r.steps.get(sid, sid), spans,
                                 sum(src.instances(e) for e in adds)))
    step_spans = [sp for kind, _, _, spans, _ in spans_of for sp in spans]
    row_adds = [e for r in src.recipes.values() for c in r.captures if vs & set(c.videos)
                for e in c.events if e.kind == "add" and not any(
                    e.span.video == sp.video and e.span.start < sp.end and sp.start < e.span.end
                    for sp in step_spans)]
    for a in src.activities:
        if a.video in vs:
            # an add outside every step segment belongs to the row it falls in
            mine = [e for e in row_adds if e.span.video == a.video and a.start <= e.span.start <= a.end]
            spans_of.append(("row", a.source_row, a.label, [Span(a.video, a.start, a.end)],
                             sum(src.instances(e) for e in mine)))
    out = []
    for kind, key, label, spans, adds in spans_of:
        places = 0
        for v in videos:
            for a in src.assocs.get(v, []):
                if not a.name:
                    continue
                ends = [t for t in a.tracks if _inside(v, t.end, spans)]
                # a final put-down of the unit: no track of the object starts after it in
                # the unit (overlapping tracks of one association: any of them)
                final = [t for t in ends
                         if not any(u.start > t.end and _inside(v, u.start, spans) for u in a.tracks)]
                places += any((a.assoc_id, t.track_id) in answered[v] for t in final)
        states = len({x.action for x in src.snippets if _inside(x.video, x.start, spans)
                      and x.action.lower().startswith(STATE_VERBS)})
        contents = sum(len(objs) for v, t, objs in src.contents if _inside(v, t, spans))
        out.append(Unit(episode, kind, key, label, adds, places, *other.get((episode, key), (0, 0)),
                        states, contents))
    return out


def ceilings(export_root: Path, source: Path) -> tuple[dict, dict]:
    """``({suite: [Unit, ...]}, {task_id: task})`` for both suites of an export."""
    cohort = Path(export_root) / "cohort"
    tasks = {t["task_id"]: t for t in map(json.loads, (cohort / "tasks.jsonl").read_text().splitlines())}
    suites = {s["suite"]: s for s in map(json.loads, (cohort / "suites.jsonl").read_text().splitlines())}
    videos = {}
    with gzip.open(cohort / "episodes.jsonl.gz", "rt") as f:
        for line in f:
            e = json.loads(line)
            videos[e["episode_id"]] = e["videos"]
    other = {_task_key(t): (sum(1 for c in t["contract"]["conditions"] if c["kind"] == "event"),
                            sum(1 for c in t["contract"]["conditions"] if c["kind"] == "atom"
                                and c["atom"][0] not in ("in", "at")))
             for t in tasks.values()}
    src = Source(Path(source))
    return ({name: [u for ep in s["episode_ids"] for u in units(src, ep, videos[ep], other)]
             for name, s in suites.items()}, {t: tasks[t] for t in tasks})


def exceeding(per_suite: dict, tasks: dict) -> list[str]:
    """Compiled tasks holding more ``in`` or ``at`` conditions than their unit's ceiling
    counts (should be none: the ceiling is an upper bound)."""
    by_key = {(u.episode, u.key): u for us in per_suite.values() for u in us}
    bad = []
    for tid, t in sorted(tasks.items()):
        u = by_key.get(_task_key(t))
        if u is None:
            bad.append(f"{tid}: its unit {_task_key(t)[1]} is not a unit of its episode")
            continue
        atoms = [c["atom"][0] for c in t["contract"]["conditions"] if c["kind"] == "atom"]
        if atoms.count("in") > u.adds + (u.kind == "step") or atoms.count("at") > u.placements:
            bad.append(f"{tid}: {atoms.count('in')} in / {atoms.count('at')} at conditions, "
                       f"ceiling {u.adds} adds / {u.placements} placements")
    return bad


def summary(per_suite: dict, tasks: dict, suites_ids: dict) -> list[str]:
    """One line per suite: units with an observed end state, those with two or more, as if
    every piece of evidence were bound (the memory suite is terminal only: its events
    are left out), against the compiled tasks."""
    lines = []
    for name, us in sorted(per_suite.items(), key=lambda kv: kv[0] != "planner"):
        compiled = [tasks[t] for t in suites_ids[name]]
        multi = sum(len(t["contract"]["conditions"]) >= 2 for t in compiled)
        h = Counter(min(u.ceiling(events=name != "memory"), 2) for u in us)
        some = h[1] + h[2]
        lines.append(f"{name}: {len(us)} units in {len({u.episode for u in us})} episodes; "
                     f"{some} with an observed end state{'' if name != 'memory' else ' (terminal)'}, "
                     f"{h[2]} with two or more ({h[2] / max(some, 1):.1%}); compiled: "
                     f"{len(compiled)} tasks, {multi} with two or more ({multi / len(compiled):.1%})")
    return lines


def main(argv=None) -> None:
    args = sys.argv[1:] if argv is None else argv
    flags = [a for a in args if a.startswith("--")]
    pos = [a for a in args if not a.startswith("--")]
    root = Path(pos[0]) if pos else REPO / "frozen_exports"
    source = Path(pos[1] if len(pos) > 1 else
                  os.environ.get("E2W_HDEPIC") or REPO.parent / "shared" / "hd-epic")
    per_suite, tasks = ceilings(root, source)
    cohort = root / "cohort"
    ids = {s["suite"]: s["task_ids"] for s in map(json.loads, (cohort / "suites.jsonl").read_text().splitlines())}
    print("\n".join(summary(per_suite, tasks, ids)))
    bad = exceeding(per_suite, tasks)
    print(f"compiled tasks above their unit's ceiling: {len(bad)} of {len(tasks)}")
    for line in bad[:10]:
        print("  " + line)
    if "--units" in flags:
        for name, us in per_suite.items():
            for u in us:
                print(f"{name}\t{u.episode}\t{u.kind}\t{u.key}\t{u.adds}\t{u.placements}\t"
                      f"{u.contents}\t{u.states}\t{u.events}\t{u.other}\t{u.label[:60]}")


if __name__ == "__main__":
    main()

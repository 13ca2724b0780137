"""How many observed end states the HD-EPIC rows hold per source unit, whatever the binding.

    python bench/evidence_ceiling.py [EXPORT_ROOT] [SOURCE] [--units]

``EXPORT_ROOT`` holds ``cohort/`` (default: the repository's ``frozen_exports``);
``SOURCE`` is the HD-EPIC copy (default ``$E2W_HDEPIC``, else ``../shared/hd-epic`` beside
the repository); ``--units`` prints every unit's counts and its compiled task, one
tab-separated line each (:data:`HEADER`).

The units are those of ``compiler.tasks``: a recipe step with all its step and prep
segments in the episode's videos, or an activity row (``PXX_recipe_timestamps.csv``).
The count reads the raw rows only, without the compiler's binding rules, so it bounds
what any compiler could express. It has two versions, printed side by side per suite.

**Strict** (the count a verdict rests on). One row rule decides which unit owns a
moment: a step owns the moments inside its segments (the most specific step, then the
latest start, as ``groups.segment_at``); an activity row owns what lies in it and
outside every step segment (the latest-starting row, as ``tasks.unit_of``). Every piece
of evidence goes to the unit owning the moment its end state arises (a put-down: the
track's end; a snippet: its end); a placement or a close counts only if it lasts to that
unit's end (its last owned moment in that video):

* **adds**: distinct ingredients (``complete_recipes.json`` ingredient IDs) with an add
  in the unit (:func:`add_owner`: the rows time an add coarsely, so the step of its own
  recipe whose segments it overlaps most owns it); five eggs are one ingredient, and no
  word match on track names (which hit packaging and tools: butter in "butter knife");
* **placements**: distinct named objects whose put-down (a track's end) a VQA location
  answer or an itinerary gives with one candidate object (the tracks of one association
  are one candidate), linked within two frames, and with no later track of the object
  starting before the unit's end;
* **contents**: objects a contents-retrieval answer says were put in or on a container
  at a question time in the unit, only where the object's own track (an association of
  that exact name) ends in the unit and lasts; an object already counted as a placement
  counts once;
* **closes**: distinct objects of the fine-grained snippets closed or switched off in
  the unit and not opened or switched on again later in it ("open bottle" then "close
  bottle" is one end state, capped; an open or a switch-on can be undone unobserved).

Reported apart, not counted: **ambiguous** answers (two or more candidate objects; each
answer once, in the unit owning its earliest candidate put-down) and **events**, the
compiled task's event conditions (stir, chop, press, ...; a unit's key action is not an
end state).

**Generous** (the rules of the count this one replaced, kept for comparison): adds
overlapping a step's segments, counted once per association whose name shares a word
with the ingredient; an ambiguous answer once per candidate; put-downs without the
lasting check, a row counting those inside its nested steps; contents answers at the
question time; every state-changing snippet action string; the compiled task's events
(planner suite) and states.

:func:`exceeding` checks the strict count as an oracle that does not copy the compiler:
no compiled task may hold more ``in`` conditions than its unit's distinct adds (plus
one for a step's transfer, "add the frothed milk into the coffee", which has no add row)
or more ``at`` conditions than its placements and ambiguous answers
(tests/test_compiler_cohort.py).
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

from analysis.compiler.readers import (_TIME_RE, FRAME, Span, parse_time,  # noqa: E402
                                       read_activities, read_associations, read_durations,
                                       read_itineraries, read_location_answers, read_recipes,
                                       read_snippets)

#: Seconds between an answer's time and a track boundary: two frames at 30 fps (plus the
#: 3-decimal rounding of question times, readers.FRAME), as issue 34 asks of the binding.
TOL = 2 * FRAME
#: The generous count's tolerance (the replaced script's, worlds.AMBIGUITY).
GENEROUS_TOL = 0.05
CONTENTS = "vqa-benchmark/3d_perception_object_contents_retrieval.json"
#: Snippet verbs leaving a state that an unobserved action cannot silently undo within the
#: unit as far as the rows tell (closed, switched off), and those that undo them.
CLOSING = ("close", "turn off", "switch off", "shut")
OPENING = ("open", "turn on", "switch on")
#: The generous count's state-changing verbs.
STATE_VERBS = ("open", "close", "turn on", "turn off", "switch on", "switch off")


@dataclass(frozen=True)
class Unit:
    """One source unit's counts (strict, with what is reported apart, and generous)."""
    episode: str
    kind: str           # "step" or "row"
    key: str            # "<recipe>/<step>" or "<file>:<line>", as in a task's provenance
    label: str
    adds: int           # distinct ingredients added
    placements: int     # objects put down for good (an unambiguous answer)
    contents: int       # further objects a contents answer puts in something, own track
    closes: int         # objects closed or switched off for good (snippets)
    ambiguous: int = 0  # answers with two or more candidate objects (reported apart)
    events: int = 0     # the compiled task's event conditions (reported apart)
    generous: int = 0   # the replaced count, events included

    @property
    def strict(self) -> int:
        """Observed end states of the unit: the most end-state conditions a faithful task
        of it could hold (events apart)."""
        return self.adds + self.placements + self.contents + self.closes


class Source:
    """The raw rows the count reads, once."""

    def __init__(self, root: Path):
        self.recipes = read_recipes(root)
        self.activities = read_activities(root, read_durations(root))
        self.assocs = read_associations(root)
        self.answers = read_location_answers(root)
        self.itineraries = read_itineraries(root)
        self.snippets = read_snippets(root)
        self.contents = read_contents(root)


def read_contents(root: Path) -> list[tuple[str, float, list[str]]]:
    """``(video, question time, [objects put in or on the container])`` of every
    answered "put in/on" contents-retrieval question."""
    out = []
    for q in json.loads((Path(root) / CONTENTS).read_text()).values():
        text, times = q["question"], _TIME_RE.findall(q["question"])
        answer = q["choices"][q["correct_idx"]]
        if "put in/on" in text and times and answer != "Nothing":
            out.append((q["inputs"]["video 1"]["id"], parse_time(times[0][0]),
                        [x.strip() for x in answer.split(", ") if x.strip()]))
    return sorted(out)


# --------------------------------------------------------------------------- the row rule

@dataclass(frozen=True)
class _Span:
    video: str
    start: float
    end: float
    rank: int           # 0 step segment, 1 prep segment, 2 activity row
    key: str            # the owning unit's key
    label: str


def _spans(src, videos) -> list[_Span]:
    """Every step, prep and activity-row span of the episode's videos."""
    vs, out = set(videos), []
    for r in src.recipes.values():
        for c in r.captures:
            if vs & set(c.videos):
                out += [_Span(s.span.video, s.span.start, s.span.end, 0 if s.kind == "step" else 1,
                              f"{r.recipe_id}/{s.step_id}", r.steps.get(s.step_id, s.step_id))
                        for s in c.segments if s.span.video in vs]
    out += [_Span(a.video, a.start, a.end, 2, a.source_row, a.label)
            for a in src.activities if a.video in vs]
    return out


def owner(spans: list[_Span], video: str, t: float) -> str | None:
    """The unit owning moment ``t`` of ``video``: the most specific step segment holding
    it (steps over preps, then the latest start), else the latest-starting activity row
    holding it, else none.

    >>> s = [_Span("v", 0, 100, 2, "row", ""), _Span("v", 10, 20, 0, "R/S1", "")]
    >>> owner(s, "v", 15), owner(s, "v", 25), owner(s, "v", 150)
    ('R/S1', 'row', None)
    """
    hits = [s for s in spans if s.video == video and s.start - 1e-9 <= t <= s.end + 1e-9]
    if not hits:
        return None
    return min(hits, key=lambda s: (s.rank, -s.start, s.key)).key


def add_owner(spans: list[_Span], recipe: str, span) -> str | None:
    """The unit owning an add: the step of its own recipe whose segments overlap it most
    (the rows time an add coarsely: it often ends past its step, "porridge oats" 35.0 to
    53.1 s in a step ending at 52.4 s), else the unit owning its start.

    >>> s = [_Span("v", 0, 100, 2, "row", ""), _Span("v", 10, 20, 0, "R/S1", ""),
    ...      _Span("v", 19, 40, 0, "R/S2", ""), _Span("v", 50, 60, 0, "Q/S1", "")]
    >>> [add_owner(s, "R", Span("v", a, b)) for a, b in ((12, 21), (18, 30), (45, 55), (41, 45))]
    ['R/S1', 'R/S2', 'row', 'row']
    """
    overlap: dict = defaultdict(float)
    for s in spans:
        if (s.video == span.video and s.rank < 2 and s.key.startswith(recipe + "/")
                and s.start < span.end and span.start < s.end):
            overlap[s.key] += min(s.end, span.end) - max(s.start, span.start)
    if overlap:
        return max(sorted(overlap), key=overlap.get)
    return owner(spans, span.video, span.start)


def _unit_ends(spans: list[_Span]) -> dict[tuple[str, str], float]:
    """``{(unit, video): its last owned moment}`` (a row's end, a step's last segment end)."""
    ends: dict = {}
    for s in spans:
        k = (s.key, s.video)
        ends[k] = max(ends.get(k, s.end), s.end)
    return ends


# --------------------------------------------------------------------------- answers

def _answer_candidates(src, video: str, tol: float) -> list[tuple[str, set]]:
    """``(answer id, {(association, track), ...})`` for every location answer and
    itinerary of the video: the put-downs it gives (a "put" answer: the track starting at
    its time; a "take" answer: the track before the one ending at its time; an itinerary:
    every track of an object with a boundary at its time when there is one move per
    track, else the object's last track)."""
    named = [a for a in src.assocs.get(video, []) if a.name]
    out = []
    for ans in (x for x in src.answers if x.video == video):
        hits = set()
        for a in named:
            for i, t in enumerate(a.tracks):
                if ans.kind == "put" and abs(t.start - ans.time) <= tol:
                    hits.add((a.assoc_id, t.track_id))
                if ans.kind == "take" and i > 0 and abs(t.end - ans.time) <= tol:
                    hits.add((a.assoc_id, a.tracks[i - 1].track_id))
        out.append((ans.vqa_id, hits))
    for it in (x for x in src.itineraries if x.video == video):
        hits = set()
        for a in named:
            if any(min(abs(t.start - it.time), abs(t.end - it.time)) <= tol for t in a.tracks):
                covered = a.tracks if len(it.moves) == len(a.tracks) else a.tracks[-1:]
                hits |= {(a.assoc_id, t.track_id) for t in covered}
        out.append((it.vqa_id, hits))
    return out


def _lasts(assoc, track, video: str, unit: str, ends: dict) -> bool:
    """No track of the object starts after this put-down and before the unit's end."""
    end = ends[(unit, video)]
    return not any(track.end < u.start <= end for u in assoc.tracks)


# --------------------------------------------------------------------------- counts

def strict_counts(src, videos: list[str]) -> dict[str, dict[str, set]]:
    """``{unit key: {"adds"|"placements"|"contents"|"closes"|"ambiguous": set of what
    counted}}`` for one episode, by the strict rules (module docstring)."""
    spans = _spans(src, videos)
    ends = _unit_ends(spans)
    vs = set(videos)
    out: dict = defaultdict(lambda: defaultdict(set))
    for r in src.recipes.values():
        for c in r.captures:
            if vs & set(c.videos):
                for e in c.events:
                    u = add_owner(spans, r.recipe_id, e.span) if e.kind == "add" else None
                    if u is not None:
                        out[u]["adds"].add(e.ingredient_id)
    for v in videos:
        by_id = {a.assoc_id: a for a in src.assocs.get(v, [])}
        for qid, hits in _answer_candidates(src, v, TOL):
            objects = {a for a, _ in hits}
            if len(objects) > 1:
                first = min(t.end for a, tid in hits for t in by_id[a].tracks if t.track_id == tid)
                u = owner(spans, v, first)
                if u is not None:
                    out[u]["ambiguous"].add(qid)      # once, whatever the candidates
                continue
            for a, tid in hits:
                t = next(t for t in by_id[a].tracks if t.track_id == tid)
                u = owner(spans, v, t.end)
                if u is not None and _lasts(by_id[a], t, v, u, ends):
                    out[u]["placements"].add(a)
    for v, time, objects in src.contents:
        u = owner(spans, v, time) if v in vs else None
        if u is None:
            continue
        for name in objects:
            own = [a for a in src.assocs.get(v, []) if a.name and a.raw_name.lower() == name.lower()]
            lasting = [a.assoc_id for a in own for t in a.tracks
                       if owner(spans, v, t.end) == u and _lasts(a, t, v, u, ends)]
            if lasting and not set(lasting) & out[u]["placements"]:
                out[u]["contents"].add(lasting[0] if len(set(lasting)) == 1 else f"name:{name}")
    last_state: dict = {}
    for x in src.snippets:
        if x.video not in vs:
            continue
        verb = next((p for p in CLOSING + OPENING if x.action.startswith(p + " ")), None)
        u = owner(spans, x.video, x.end) if verb else None
        if u is not None:
            obj = x.action[len(verb) + 1:]
            # snippets are sorted by video and time: the last one of an object wins
            last_state[(u, x.video, obj)] = verb in CLOSING
    for (u, v, obj), closed in last_state.items():
        if closed:
            out[u]["closes"].add(f"{v}:{obj}")
    return out


def _inside(video: str, t: float, spans) -> bool:
    return any(sp.video == video and sp.start <= t <= sp.end for sp in spans)


def _overlaps(e, spans) -> bool:
    return any(e.span.video == sp.video and e.span.start < sp.end and sp.start < e.span.end
               for sp in spans)


def generous_counts(src, videos: list[str], compiled: dict) -> dict[str, int]:
    """``{unit key: count}`` by the replaced count's rules (module docstring), with the
    compiled task's ``(events, other states)`` from ``compiled``."""
    vs = set(videos)

    def instances(event) -> int:
        words = {w.rstrip("s") for w in event.name.lower().split() if len(w) > 2}
        n = sum(1 for a in src.assocs.get(event.span.video, []) if a.name
                and words & {w.rstrip("s") for w in a.name.lower().replace("_", " ").split()}
                and any(t.start < event.span.end and event.span.start < t.end for t in a.tracks))
        return max(n, 1)

    answered = {}
    for v in videos:
        answered[v] = set().union(*[h for _, h in _answer_candidates(src, v, GENEROUS_TOL)])
    units = []
    for r in src.recipes.values():
        for c in r.captures:
            if vs & set(c.videos):
                by = defaultdict(list)
                for s in c.segments:
                    if s.span.video in vs:
                        by[s.step_id].append(s.span)
                for sid, spans in by.items():
                    adds = [e for e in c.events if e.kind == "add" and _overlaps(e, spans)]
                    units.append((f"{r.recipe_id}/{sid}", spans, sum(map(instances, adds))))
    step_spans = [sp for _, spans, _ in units for sp in spans]
    row_adds = [e for r in src.recipes.values() for c in r.captures if vs & set(c.videos)
                for e in c.events if e.kind == "add" and not _overlaps(e, step_spans)]
    for a in src.activities:
        if a.video in vs:
            mine = [e for e in row_adds if e.span.video == a.video and a.start <= e.span.start <= a.end]
            units.append((a.source_row, [Span(a.video, a.start, a.end)], sum(map(instances, mine))))
    out = {}
    for key, spans, adds in units:
        places = 0
        for v in videos:
            for a in src.assocs.get(v, []):
                if a.name:
                    final = [t for t in a.tracks if _inside(v, t.end, spans) and not any(
                        u.start > t.end and _inside(v, u.start, spans) for u in a.tracks)]
                    places += any((a.assoc_id, t.track_id) in answered[v] for t in final)
        states = len({x.action for x in src.snippets if _inside(x.video, x.start, spans)
                      and x.action.startswith(STATE_VERBS)})
        contents = sum(len(objs) for v, t, objs in src.contents if _inside(v, t, spans))
        events, other = compiled.get(key, (0, 0))
        out[key] = adds + places + contents + max(other, states) + events
    return out


def units(src, episode: str, videos: list[str], compiled: dict, memory: bool = False) -> list[Unit]:
    """Every source unit of one episode with its counts; ``compiled`` maps a unit key to
    its compiled task's ``(events, other states)`` (the memory suite, terminal only, is
    given no events)."""
    strict = strict_counts(src, videos)
    generous = generous_counts(src, videos, {k: (0 if memory else e, o) for k, (e, o) in compiled.items()})
    labels = {s.key: (("row" if s.rank == 2 else "step"), s.label) for s in _spans(src, videos)}
    out = []
    for key, (kind, label) in labels.items():
        c = strict.get(key, {})
        out.append(Unit(episode, kind, key, label, *(len(c.get(f, ())) for f in
                        ("adds", "placements", "contents", "closes", "ambiguous")),
                        compiled.get(key, (0, 0))[0], generous.get(key, 0)))
    return sorted(out, key=lambda u: (u.kind, u.key))


def _task_key(task: dict) -> tuple[str, str]:
    r = task["provenance"]["refs"]
    return task["episode_id"], (r["row"] if r.get("unit") == "activity row" else f"{r['recipe']}/{r['step']}")


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
    compiled: dict = defaultdict(dict)
    for t in tasks.values():
        ep, key = _task_key(t)
        conds = t["contract"]["conditions"]
        compiled[ep][key] = (sum(1 for c in conds if c["kind"] == "event"),
                             sum(1 for c in conds if c["kind"] == "atom" and c["atom"][0] not in ("in", "at")))
    src = Source(Path(source))
    return ({name: [u for ep in s["episode_ids"] for u in units(src, ep, videos[ep], compiled[ep],
                                                                   memory=name == "memory")]
             for name, s in suites.items()}, tasks)


def exceeding(per_suite: dict, tasks: dict) -> list[str]:
    """Compiled tasks holding more ``in`` or ``at`` conditions than their unit's strict
    count allows (should be none: the count is an upper bound)."""
    by_key = {(u.episode, u.key): u for us in per_suite.values() for u in us}
    bad = []
    for tid, t in sorted(tasks.items()):
        u = by_key.get(_task_key(t))
        if u is None:
            bad.append(f"{tid}: its unit {_task_key(t)[1]} is not a unit of its episode")
            continue
        atoms = [c["atom"][0] for c in t["contract"]["conditions"] if c["kind"] == "atom"]
        if atoms.count("in") > u.adds + (u.kind == "step") or \
                atoms.count("at") > u.placements + u.ambiguous:
            bad.append(f"{tid}: {atoms.count('in')} in / {atoms.count('at')} at conditions, "
                       f"strict count {u.adds} adds / {u.placements} placements "
                       f"(+{u.ambiguous} ambiguous)")
    return bad


def summary(per_suite: dict, tasks: dict, suite_ids: dict) -> list[str]:
    """One line per suite: units with an observed end state and with two or more, strict
    and generous, against the compiled tasks, and the units with a strict end state that
    no compiled task expresses."""
    lines = []
    for name, us in sorted(per_suite.items(), key=lambda kv: kv[0] != "planner"):
        compiled = [tasks[t] for t in suite_ids[name]]
        multi = sum(len(t["contract"]["conditions"]) >= 2 for t in compiled)
        cells = []
        for rule, h in (("strict", Counter(min(u.strict, 2) for u in us)),
                        ("generous", Counter(min(u.generous, 2) for u in us))):
            some = h[1] + h[2]
            cells.append(f"{rule} {some} with an observed end state, {h[2]} with two or more "
                         f"({h[2] / max(some, 1):.1%})")
        keys = {_task_key(t) for t in compiled}
        idle = sum(1 for u in us if u.strict and (u.episode, u.key) not in keys)
        lines.append(f"{name}: {len(us)} units in {len({u.episode for u in us})} episodes; "
                     f"{'; '.join(cells)}; compiled: {len(compiled)} tasks, {multi} with two "
                     f"or more ({multi / max(len(compiled), 1):.1%}); units with a strict end "
                     f"state and no task: {idle}")
    return lines


def apart(per_suite: dict) -> list[str]:
    """One line per suite: what the strict count reports apart."""
    lines = []
    for name, us in sorted(per_suite.items(), key=lambda kv: kv[0] != "planner"):
        amb = [u for u in us if u.ambiguous]
        lifted = sum(1 for u in us if u.strict < 2 <= u.strict + u.ambiguous + u.events)
        lines.append(f"{name} apart: {sum(u.ambiguous for u in us)} ambiguous answers in "
                     f"{len(amb)} units, {sum(u.events for u in us)} compiled events; "
                     f"units they would lift to two or more: {lifted}")
    return lines


HEADER = ("suite\tepisode\tkind\tkey\tadds\tplacements\tcontents\tcloses\tstrict\t"
          "ambiguous\tevents\tgenerous\ttask\tlabel")


def unit_lines(per_suite: dict, tasks: dict, suite_ids: dict) -> list[str]:
    """``--units``: one line per unit (``HEADER``'s columns); ``task`` is the unit's
    compiled task in that suite, ``-`` for none (a unit with a strict end state and no
    task is what a target short of the count is missing)."""
    lines = [HEADER]
    for name, us in sorted(per_suite.items(), key=lambda kv: kv[0] != "planner"):
        task_of = {_task_key(tasks[t]): t for t in suite_ids.get(name, ())}
        lines += [f"{name}\t{u.episode}\t{u.kind}\t{u.key}\t{u.adds}\t{u.placements}\t"
                  f"{u.contents}\t{u.closes}\t{u.strict}\t{u.ambiguous}\t{u.events}\t"
                  f"{u.generous}\t{task_of.get((u.episode, u.key), '-')}\t{u.label[:60]}"
                  for u in us]
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
    print("\n".join(summary(per_suite, tasks, ids) + apart(per_suite)))
    bad = exceeding(per_suite, tasks)
    print(f"compiled tasks above their unit's strict count: {len(bad)} of {len(tasks)}")
    for line in bad[:10]:
        print("  " + line)
    if "--units" in flags:
        print("\n".join(unit_lines(per_suite, tasks, ids)))


if __name__ == "__main__":
    main()

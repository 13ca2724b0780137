"""How many recipe-step tasks hold an ``in()`` for the ingredient adds timed in their unit.

    python bench/add_coverage.py EXPORT_ROOT [--source=HDEPIC] [--list] [--why]

(the source defaults to ``$E2W_HDEPIC`` or ``../shared/hd-epic`` beside the repository)

Issue 34's measure of "every add bound where the source names its vessel". For every
task of ``cohort/tasks.jsonl`` whose unit is a recipe step (``refs.unit`` is "recipe step
with its prep segments"), the add events of ``complete_recipes.json`` of that recipe whose
start lies inside one of the unit's segments (same video, the segment's own times) are
the adds *timed in its unit* (an add timed in segments of several steps belongs to the one
whose text names the ingredient, when one does: the compiler's rule). A task *holds the in()* of such an add when its contract
has an ``in(x, v)`` condition that the add's compiled operation establishes (the episode's
operation whose provenance names the add's recipe and ingredient and whose ``refs.time``
is inside the add's span on the episode clock: ``in(s, dst)`` of a pour / empty_into,
``in(o, c)`` of add_ingredient / put_in_container / insert). Prints, per suite, the tasks,
the tasks with two or more conditions, and the recipe-step tasks with an add in their unit
and how many of them lack an ``in()`` for one of those adds, and those adds per class of
their ``dropped.jsonl`` reason (the closed set ``ADD_DROP_REASONS``); ``--list`` names
each such task, add and class; ``--why`` adds, per such add, its full ``dropped.jsonl``
reason, its step's text, the vessel phrases the text names and the vessels tracked in
the add's video with their tracks nearest the add (:func:`why_lines`: what a reader needs
to judge whether the source names the add's vessel). ``add_coverage(export, source)``
returns the same as an :class:`AddCoverage`. Each add lacking its ``in()`` is also classed
by what leaves it open (:data:`SOURCE_LIMITS`, :func:`source_limit`): a limit of the source
(the add row's times, its step, the instance, the vessel, a substance with no tracked
container) or of the soundness rules, else a gap of the compiler, and by what the rows leave
(:func:`candidates`): two or more candidates (left open by the source), none, or one that a
rule refuses; a task lacking only adds the source leaves open is at the evidence's limit
(issue 34's criterion, "every add bound where the source names its vessel", counts the others).
"""
from __future__ import annotations

import gzip
import json
import os
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from analysis.compiler.episodes import offsets_of
from analysis.compiler.grounding import add_drop_class, words
from analysis.compiler.readers import read_durations, read_recipes

STEP_UNIT = "recipe step with its prep segments"
# the roles an add's operation puts into its vessel: (content argument, vessel argument)
IN_ARGS = {"pour": (0, 2), "empty_into": (0, 2), "add_ingredient": (0, 1),
           "put_in_container": (0, 1), "insert": (0, 1)}
SLACK = 0.5      # an add's operation time may sit inside its held track, a hair off the row


@dataclass
class AddCoverage:
    """Counts of one compiled cohort (see the module docstring)."""
    step_tasks_with_add: int
    lacking: int
    per_suite: dict                                   # suite -> {"tasks", "two_or_more"}
    missing: list = field(default_factory=list)       # (task_id, recipe/ingredient, name)
    reasons: list = field(default_factory=list)       # per missing add: its class (below)
    details: list = field(default_factory=list)       # per missing add: (full reason, step text, video, start, end)
    during: list = field(default_factory=list)        # per missing add: vessels tracked during it

    @property
    def by_reason(self) -> dict:
        """Missing adds per class: a class of the closed set of add drop reasons
        (``analysis.compiler.grounding.ADD_DROP_REASONS``) of the add's ``dropped.jsonl``
        record; ``ledger <code>`` (compiled, no task holds it: the ledger record of the add
        row at its time says why, ``intermediate``: the food is taken out before the unit
        ends); ``in another unit's task`` (compiled, no record: its group lies in another
        unit); ``not listed`` (neither compiled nor in ``dropped.jsonl``)."""
        return dict(sorted(Counter(self.reasons).items(), key=lambda kv: (-kv[1], kv[0])))

    @property
    def lacking_share(self) -> float:
        return self.lacking / self.step_tasks_with_add if self.step_tasks_with_add else 0.0


def _read_jsonl(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _owners(recipe, cap, ev) -> set:
    """The steps an add is timed in, by the compiler's rule (``grounding.adds.step_of_add``):
    those of its recipe with a step segment overlapping it, else (in no step segment) those
    with a prep segment overlapping it; when there are several, the one whose text names the
    ingredient if exactly one does ("Heat the oil in a heavy bottomed pan" owns the oil add
    that the prep segment of "Add the onions" also spans). A step segment beats a prep one:
    P02_R01's Worcestershire sauce (1418.09-1420.05 s) is poured in S03's step segment
    (1418.96-1420.64 s), though it starts in S06's prep segment and S06's text names it."""
    sp = ev.span
    over = [s for s in cap.segments if s.span.video == sp.video and sp.start < s.span.end and s.span.start < sp.end]
    steps = {s.step_id for s in over if s.kind == "step"} or {s.step_id for s in over}
    if len(steps) > 1:
        named = {x for x in steps if set(words(recipe.steps.get(x, ""))) & set(words(ev.name))}
        if len(named) == 1:
            return named
    return steps


def add_coverage(export: str | Path, source: str | Path) -> AddCoverage:
    """Measure the export's compiled cohort against the HD-EPIC ``source`` it came from."""
    cohort = Path(export) / "cohort"
    tasks = _read_jsonl(cohort / "tasks.jsonl")
    episodes = {e["episode_id"]: e for e in _read_jsonl(cohort / "episodes.jsonl.gz")}
    suites = _read_jsonl(cohort / "suites.jsonl")
    recipes = read_recipes(Path(source))
    durations = read_durations(Path(source))
    adds = {}       # recipe -> [(ingredient, name, Span, the steps it belongs to)]
    for rid, r in recipes.items():
        for cap in r.captures:
            adds.setdefault(rid, []).extend((ev.ingredient_id, ev.name, ev.span, _owners(r, cap, ev))
                                            for ev in cap.events if ev.kind == "add")
    # (episode, recipe, ingredient) -> [(episode time, in-atom)] of compiled add operations
    ops = {}
    for eid, ep in episodes.items():
        for g in ep["groups"]:
            for op in g["operations"]:
                refs = op["provenance"]["refs"]
                if op["type"] in IN_ARGS and refs.get("ingredient"):
                    i, j = IN_ARGS[op["type"]]
                    # an add whose row's times are swapped with another's is timed by that
                    # row: its ingredient argument cites its own row's start instead
                    arg = (refs.get("args") or [{}])[i].get("refs", {})
                    tm = (("row", round(float(arg["time"]), 2)) if arg.get("evidence") == "swapped_add_times"
                          else refs.get("time"))
                    ops.setdefault((eid, refs.get("recipe"), refs["ingredient"]), []).append(
                        (tm, ["in", op["args"][i], op["args"][j]]))
    # (episode, recipe, ingredient, video, start) -> reason of the add's dropped record
    drops, ledger = {}, {}
    if (cohort / "dropped.jsonl").is_file():
        for d in _read_jsonl(cohort / "dropped.jsonl"):
            r = d.get("refs", {})
            if d.get("kind") == "add" and r.get("ingredient") and r.get("start") is not None \
                    and not d.get("what", "").startswith("weigh"):      # a weigh row is no add
                drops.setdefault((d["episode_id"], r.get("recipe"), r["ingredient"], r.get("video"),
                                  round(float(r["start"]), 2)), d["reason"])
            elif d.get("kind") == "ledger" and r.get("row") == "add":
                # a compiled add no task holds: the ledger says why (its in() does not last
                # to the unit's end, an argument is not observed, ...), at the add's own time
                for key in r.get("ids", []):
                    ledger.setdefault((d["episode_id"], key), []).append((float(d["time"]), d["reason"]))
    total, lacking, missing, reasons, details = 0, 0, [], [], []
    for t in tasks:
        refs = t["provenance"]["refs"]
        if refs.get("unit") != STEP_UNIT:
            continue
        ep = episodes[t["episode_id"]]
        off = offsets_of(ep["videos"], durations)
        segs = refs.get("segments", [])
        mine = [(iid, name, sp) for iid, name, sp, owners in adds.get(refs.get("recipe"), [])
                if refs.get("step") in owners
                and any(s["video"] == sp.video and sp.start < s["end"] and s["start"] < sp.end for s in segs)]
        if not mine:
            continue
        total += 1
        atoms = [c["atom"] for c in t["contract"]["conditions"] if c.get("kind") == "atom"]
        lost = []
        for iid, name, sp in mine:
            a, b = sp.start + off.get(sp.video, 0.0), sp.end + off.get(sp.video, 0.0)
            done = [atom for tm, atom in ops.get((t["episode_id"], refs["recipe"], iid), [])
                    if tm == ("row", round(sp.start, 2)) or isinstance(tm, (int, float))
                    and a - SLACK <= tm <= b + SLACK]
            if not any(atom in atoms for atom in done):
                lost.append((f"{refs['recipe']}/{iid}", name))
                why = drops.get((t["episode_id"], refs["recipe"], iid, sp.video, round(sp.start, 2)))
                led = [w for tm, w in ledger.get((t["episode_id"], f"{refs['recipe']}/{iid}"), [])
                       if done and a - SLACK <= tm <= b + SLACK and not w.startswith("not_grounded")]
                if why is None and led:
                    why = led[0]
                    reasons.append(f"ledger {why.split(':', 1)[0]}")
                else:
                    reasons.append(add_drop_class(why) if why else
                                   "in another unit's task" if done else "not listed")
                details.append((why or "", recipes[refs["recipe"]].steps.get(refs.get("step"), ""),
                                sp.video, sp.start, sp.end))
        if lost:
            lacking += 1
            missing.extend((t["task_id"], key, name) for key, name in lost)
    by_id = {t["task_id"]: t for t in tasks}
    per_suite = {}
    for s in suites:
        ts = [by_id[x] for x in s["task_ids"] if x in by_id]
        per_suite[s["suite"]] = {"tasks": len(ts),
                                 "two_or_more": sum(len(x["contract"]["conditions"]) >= 2 for x in ts)}
    return AddCoverage(total, lacking, per_suite, missing, reasons, details)


#: Why an add's ``in()`` is not compiled, by its ``dropped.jsonl`` reason (issue 34's "every
#: add bound where the source names its vessel"): a pattern -> ``(limit, candidates)``, first
#: match wins. ``candidates`` says what the rows leave: ``open`` (two or more candidates: the
#: source leaves the add open), ``conflict`` (the add row's time holds another ingredient's
#: tracks: the rows disagree), ``none`` (the rows give no candidate: no track of a
#: container, no vessel named) or ``one`` (one candidate a rule refuses: soundness, a vessel
#: held through the add or tracked only in another video, an instance handled only after).
#: A reason matching none is a gap of the compiler (the builder's refusals, an ``in()`` in
#: another unit's task, an add not listed).
SOURCE_LIMITS = [
    ("no vessel; of the vessels the text of", "vessel: the step text names none; the one vessel the recipe last named "
     "is refused (in the hand during the add, or another vessel handled around it)", "one"),
    ("add_time_matches_other_ingredient", "times: the add row's span holds another ingredient's tracks", "conflict"),
    ("overlapping_steps", "step: segments of several steps overlap the add, the text decides none", "open"),
    ("several tracked objects match", "instance: several tracked objects are the ingredient", "open"),
    ("several tracks of the ingredient", "instance: several tracked objects are the ingredient", "open"),
    ("tracked objects are named", "instance: several tracked objects are the ingredient", "open"),
    ("is tracked after the add", "instance: the tracked one is handled after the add", "one"),
    # grounding/named_food.py: the ingredient's head noun names tracked foods
    ("tracked foods (", "instance: several tracked objects are the ingredient", "open"),
    ("two of whose tracks overlap", "instance: several tracked objects are the ingredient", "open"),
    (", tracked after the add (", "instance: the tracked one is handled after the add", "one"),
    ("which an earlier add already put in", "instance: an earlier add of it put the tracked one in", "one"),
    ("is the ingredient's source", "instance: the tracked one is its source (fruit squeezed, jar scooped), "
     "no container to pour from", "one"),
    ("already given a curated place", "instance: an earlier untracked add of it was curated", "one"),
    ("is not held without a container", "substance: no container of it is tracked (none is invented)", "none"),
    ("no vessel named", "vessel: the step text names none and no step operation decides one", "none"),
    ("ambiguous vessel", "vessel: two or more of the named noun qualify", "open"),
    ("tracked in another video", "vessel: the named noun is tracked only in other videos", "open"),
    ("in the hand through the whole add", "vessel: the only one named is held through the add (source or target)",
     "one"),
    ("or put down in the 60 s before it (", "vessel: several of the named noun, none handled near the add", "open"),
    ("no untracked", "vessel: a tracked vessel of its kind (pot/pan) may be the untracked one the text names", "open"),
    ("true_at_task_start", "soundness: the in() holds at the task's start (no free credit)", "one"),
    ("true_in_initial_world", "soundness: the in() holds in the initial world (no free credit)", "one"),
    ("an argument is not observed", "soundness: the vessel's identity is a curated merge across videos", "one"),
    # the ledger's codes for a compiled add no task holds (analysis/compiler/ledger.py)
    ("intermediate: in(", "soundness: the in() does not last to the unit's end (the food is taken out, "
     "the object moved again)", "one"),
    ("not_lasting: ", "soundness: the in() does not last to the unit's end", "one"),
    ("argument_not_observed: ", "soundness: an argument of the in() is not observed", "one"),
]
CANDIDATES = {"open": "left open by the source (two or more candidates)",
              "conflict": "the rows disagree (not a clean swap)",
              "none": "no candidate in the rows", "one": "one candidate, refused by a rule"}


def source_limit(reason: str) -> str | None:
    """The limit of :data:`SOURCE_LIMITS` an add's dropped ``reason`` shows, or ``None``
    for a gap of the compiler.

    >>> source_limit("target not decided: step text 'pan': ambiguous vessel, 2 pan instances ...")
    'vessel: two or more of the named noun qualify'
    >>> source_limit("jar is not in the hand at 2944.63s (its track was not selected or not executable)") is None
    True
    >>> candidates("no track named for the ingredient overlaps the add; 'red onions' names 3 tracked foods (onion, "
    ...            "red_onion, spring_onion): which one went in is not observed, and a curated entity ...")
    'open'
    >>> candidates("...; 'red onions' names the tracked red_onion, tracked after the add (971.66 s in v): what went in "
    ...            "may not be the tracked one, and a curated entity of it would place one object twice: not compiled")
    'one'
    >>> candidates("target not decided: step text names 'pot', ...; red_saucepan (a pan; handled 729.12-736.14 s), "
    ...            "handled in the step's segments ..., may be the pot it means: no untracked pot is created")
    'open'
    """
    return next((limit for pat, limit, _ in SOURCE_LIMITS if pat in (reason or "")), None)


def candidates(reason: str, during: int | None = None) -> str | None:
    """What the rows leave for an add with this dropped ``reason`` (:data:`SOURCE_LIMITS`):
    ``open``, ``conflict``, ``none``, ``one``, or ``None`` (a gap of the compiler). A vessel tracked only in
    other videos is open only when the reason lists two or more of them; where the text names
    no vessel, or a substance is refused for want of a tracked container of it, ``during``
    (the vessels tracked during the add, when known) are the candidates; the one vessel the
    recipe last named, refused (:func:`analysis.compiler.grounding.bracketing_vessel.bracketing_vessel`),
    is one candidate, and two that bracket the add are open.

    >>> candidates("target not decided: step text names 'pot'; such vessels are tracked in another video (pot, pot2), none in v")
    'open'
    >>> candidates("target not decided: step text names 'cup'; such vessels are tracked in another video (cup_glass), none in v")
    'one'
    >>> candidates("source check add_without_track: ...; a substance (x) is not held without a container, ...")
    'none'
    >>> [candidates("target not decided: no vessel named in the step text", n) for n in (0, 1, 2)]
    ['none', 'one', 'open']
    >>> [candidates("source check add_without_track: ...; a substance (x) is not held without a container", n)
    ...  for n in (0, 1, 2)]
    ['none', 'one', 'open']
    >>> candidates("target not decided: the step text names no vessel; of the vessels the text of S02, the recipe's "
    ...            "last step naming one, names (mortar), one candidate: mortar (the one mortar of v) is in the hand "
    ...            "during the add: it may be the food's source")
    'one'
    """
    kind = next((k for pat, _, k in SOURCE_LIMITS if pat in (reason or "")), None)
    if kind == "one" and "bracket the add, not decided" in reason:
        return "open"                       # two vessels the recipe last named qualify
    if kind == "none" and ("no vessel named" in reason or "is not held without a container" in reason) and during:
        # the vessels tracked during the add are the candidates (a substance: the rule
        # refusing it acts before its vessel is chosen, so one tracked is one refused)
        return "open" if during >= 2 else "one"
    if kind == "open" and "tracked in another video (" in reason:
        listed = reason.split("tracked in another video (", 1)[1].split(")", 1)[0]
        return "open" if len(listed.split(", ")) >= 2 else "one"
    return kind


def open_by_source(cov: AddCoverage) -> tuple[int, Counter]:
    """``(tasks, limits)``: how many lacking tasks lack only adds the source leaves open
    (every one has two or more candidates by :func:`candidates`), and the adds per limit."""
    return triage(cov)["open"], Counter(source_limit(why) or "compiler" for why, *_ in cov.details)


def triage(cov: AddCoverage) -> Counter:
    """Lacking tasks by their weakest add: ``compiler`` (an add whose vessel the source names
    and decides), else ``one`` (an add with one candidate a rule refuses), else ``none`` (an
    add the rows give no candidate for), else ``conflict`` (an add whose row the tracks
    contradict), else ``open`` (only adds with two or more candidates)."""
    rank = ["open", "conflict", "none", "one", "compiler"]
    worst: dict = {}
    for (tid, _, _), (why, *_rest), n in zip(cov.missing, cov.details, cov.during or [None] * len(cov.missing)):
        k = candidates(why, n) or "compiler"
        worst[tid] = max(worst.get(tid, "open"), k, key=rank.index)
    return Counter(worst.values())


def _vessel_heads() -> set:
    from analysis.compiler.vocabulary import Vocabulary
    vocab = Vocabulary.load()
    return {w for w, leaf in vocab.data["noun_types"].items() if ":" not in w
            and (vocab.is_a(leaf, "vessel") or vocab.is_a(leaf, "electric_container"))}


def _container_heads() -> set:
    """The nouns the vocabulary types as a container that is no vessel (sachet, jar, box)."""
    from analysis.compiler.vocabulary import Vocabulary
    vocab = Vocabulary.load()
    return {w for w, leaf in vocab.data["noun_types"].items() if ":" not in w
            and vocab.is_a(leaf, "container") and not vocab.is_a(leaf, "vessel")}


def held_through(assocs: list, heads: set, a: float, b: float) -> int:
    """How many of ``assocs`` have a head noun in ``heads`` and a track over the whole span
    ``a``-``b`` (held through it: a substance's source may be one).

    >>> from types import SimpleNamespace as NS
    >>> sachet = NS(name="folded sachet", tracks=[NS(start=2103.83, end=2121.07)])
    >>> box = NS(name="yeast box2", tracks=[NS(start=2101.0, end=2108.0), NS(start=2120.2, end=2125.0)])
    >>> held_through([sachet, box], {"sachet", "box"}, 2110.0, 2119.1)
    1
    """
    return sum(1 for asc in assocs if (words(asc.name or "") or [""])[-1] in heads
               and any(x.start <= a and b <= x.end for x in asc.tracks))


def vessels_during(cov: AddCoverage, source: str | Path) -> list[int]:
    """Per add lacking its ``in()``: how many associations of its video named for a vessel
    noun have a track overlapping the add (its candidates where the text names none); for
    a substance refused for want of a container of it, also the other containers held
    through the add (P03-20240216-185832's dried yeast: a "folded sachet" held
    2103.83-2121.07 s, the add 2110.0-2119.1 s; its name does not name the yeast, so a rule
    refuses the one candidate)."""
    from analysis.compiler.readers import read_associations
    heads, assocs, boxes = _vessel_heads(), read_associations(Path(source)), _container_heads()
    return [sum(1 for asc in assocs.get(video, []) if any(w in heads for w in words(asc.name or ""))
                and any(x.start <= b and a <= x.end for x in asc.tracks))
            + (held_through(assocs.get(video, []), boxes, a, b) if "is not held without a container" in (why or "")
               else 0)
            for why, _, video, a, b in cov.details]


def why_lines(cov: AddCoverage, source: str | Path) -> list[str]:
    """Per add lacking its ``in()``: the task, the add and its class, then indented its
    full dropped reason, its step text, the text's vessel phrases (the target rule's
    ``target_phrases`` over the vocabulary's vessel nouns) and every association of the
    add's video whose name ends in a vessel noun, with its track nearest the add (local
    seconds; ``during`` when it overlaps the add): those whose name's last vessel noun is one
    the text names, and any tracked during the add."""
    from analysis.compiler.grounding import target_phrases
    from analysis.compiler.readers import read_associations
    heads = _vessel_heads()
    assocs = read_associations(Path(source))
    out = []
    for k, ((tid, key, name), cls, (why, text, video, a, b)) in enumerate(zip(cov.missing, cov.reasons,
                                                                             cov.details)):
        out.append(f"{tid}\t{key}\t{name}\t{cls}\t{video} {a:.2f}-{b:.2f} s")
        out.append(f"    reason: {why or '-'}")
        kind = candidates(why, cov.during[k] if cov.during else None)
        out.append(f"    {CANDIDATES[kind]}: {source_limit(why)}" if kind else
                   "    left open by the source: no (a gap of the compiler)")
        out.append(f"    step text: {text!r}")
        phrases = target_phrases(text, heads)
        said = {ph[-1] for ph in phrases if ph and ph[-1] in heads}
        out.append(f"    vessel phrases: {', '.join(' '.join(ph) for ph in phrases) if phrases else '-'}")
        vs = []
        for asc in assocs.get(video, []):
            ws = [w for w in words(asc.name or "") if w in heads]
            if not ws or not asc.tracks:
                continue
            during = [x for x in asc.tracks if x.start <= b and a <= x.end]
            if not during and ws[-1] not in said:
                continue
            tr = during[0] if during else min(asc.tracks, key=lambda x: min(abs(x.start - b), abs(x.end - a)))
            tag = " during" if during else ""
            vs.append(f"{asc.name} [{len(asc.tracks)} tr; nearest {tr.start:.1f}-{tr.end:.1f}{tag}]")
        out.append(f"    vessels named or tracked during the add: {'; '.join(vs) if vs else '-'}")
    return out


def main(argv: list[str]) -> int:
    args = [a for a in argv if not a.startswith("--")]
    opts = dict(a[2:].split("=", 1) if "=" in a else (a[2:], "1") for a in argv if a.startswith("--"))
    if len(args) != 1:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    source = opts.get("source", os.environ.get("E2W_HDEPIC",
                                               str(Path(__file__).resolve().parents[1].parent / "shared" / "hd-epic")))
    cov = add_coverage(args[0], source)
    cov.during = vessels_during(cov, source)
    if "why" in opts:
        print("\n".join(why_lines(cov, source)))
    elif "list" in opts:
        for (tid, key, name), why in zip(cov.missing, cov.reasons):
            print(f"{tid}\t{key}\t{name}\t{why}")
    print(f"recipe-step tasks with an add timed in their unit: {cov.step_tasks_with_add}; "
          f"lacking an in() for one: {cov.lacking} ({100 * cov.lacking_share:.1f}%)")
    print("adds lacking an in(), by reason: " + "; ".join(f"{k} {v}" for k, v in cov.by_reason.items()))
    n_open, limits = open_by_source(cov)
    tri = triage(cov)
    print(f"of the {cov.lacking} tasks lacking one, {n_open} lack only adds the source leaves open "
          f"(two or more candidates), {tri['conflict']} also adds whose row the tracks contradict, "
          f"{tri['none']} also adds the rows give no candidate for, {tri['one']} "
          f"also adds with one candidate a rule refuses, {tri['compiler']} an add whose vessel the source "
          f"names and decides")
    print("adds lacking an in(), by what leaves them open: " + "; ".join(
        f"{k} {v}" for k, v in sorted(limits.items(), key=lambda kv: (-kv[1], kv[0]))))
    for suite, c in sorted(cov.per_suite.items()):
        print(f"{suite}: {c['tasks']} tasks, {c['two_or_more']} with two or more conditions")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

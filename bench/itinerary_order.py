"""Whole-cohort check of compiled put-downs against the objects' itinerary chains.

    PYTHONPATH=. python bench/itinerary_order.py EXPORT_ROOT [SOURCE] [--loose] [--all]

``EXPORT_ROOT`` is a compile's ``out_dir`` (holding ``cohort/``); ``SOURCE`` the HD-EPIC
copy (default ``../shared/hd-epic``); ``--all`` prints every example, not the first 6.

For every association with an itinerary bound by the unique-binding rule (exactly one
track of the video, named, starts within 0.05 s of the question's time and within a
frame; ``--loose``: the only *named* track within 0.05 s, the builders' earlier count),
its chain of fixtures ``f0, f1, ...`` (every "from" and "to" in order, via
``normalise.fixture_id``, consecutive repeats merged) is walked along the association's
compiled track put-downs in time order (observed and curated; the set-downs for the
other hand are not track put-downs and are left out). The walk starts at ``f0``; a
put-down on the current chain fixture stays (an in-place handling, which the chain
leaves out); on a later chain fixture it advances to the first such position. A
curated put-down is counted as

* **off_chain** when its fixture is not in the chain at all;
* **out_of_order** when its fixture is in the chain only *before* the walk's position:
  the chain has already left that fixture for good and the put-down returns the object
  to it (e.g. a curated default sending an object back into its drawer after observed
  answers have moved it further along the chain);
* **put_back_in_storage_at_chain_start** when it stays at the chain's first fixture, an
  enclosing storage fixture or appliance, before the object has been put anywhere else,
  for an itinerary with more tracks than moves (taken out and put straight back although
  the chain moves it on: the chopping board of ``P03-20240217-131219`` under the backward
  alignment). Not a contradiction of the chain, but the pattern the audit of draw 6 found.

Counts are given for curated put-downs (the destination argument curated), with how many
lie in a task's reference groups and in how many tasks. Also printed, from the source
rows alone: for tracks strictly between the chain's two ends of an itinerary whose move
count differs from the track count, how often the destination a VQA answer observes for
the track (its own "put" answer, or the "take" answer of the object's next track) agrees
with the fixture the backward alignment (moves aligned from the last track) and the
forward alignment (``worlds.chain_defaults``: tracks ``1..m-1`` take moves ``1..m-1``, the
rest stay at move ``m``'s "from"; no anchors) would give.
"""
from __future__ import annotations

import gzip
import json
import sys
from collections import Counter
from pathlib import Path

from analysis.compiler import readers as R
from analysis.compiler.normalise import fixture_id
from analysis.compiler.answer_links import chain_defaults

AMBIGUITY = 0.05
PUTS = {"put_on", "put_in_storage", "put_in_appliance", "place_on_appliance", "put_in_sink", "throw_away"}


def bound_itineraries(source: Path, loose: bool = False):
    """``{(video, assoc_id): (itinerary, association)}`` by the compiler's unique binding
    (``loose``: the only *named* track starting within 0.05 s, unnamed tracks and the
    frame ignored, a looser binding than the compiler's)."""
    durations = R.read_durations(source)
    known = frozenset(durations)
    assocs = R.read_associations(source)
    out = {}
    for it in R.read_itineraries(source, known):
        if not it.moves:
            continue
        hits = [(a, t, abs(t.start - it.time)) for a in assocs.get(it.video, []) for t in a.tracks
                if abs(t.start - it.time) <= AMBIGUITY and (a.name or not loose)]
        if len(hits) == 1 and hits[0][0].name and (loose or hits[0][2] <= R.FRAME):
            a = hits[0][0]
            out.setdefault((it.video, a.assoc_id), (it, a))
    return out, assocs, known


def chain_of(it) -> list[str]:
    """The chain's fixtures in order: every "from" and "to", consecutive repeats merged
    (a move's "from" is not always the previous "to": "from counter top left of fridge
    to another counter top left of fridge, then from counter top left of fridge to ...")."""
    out: list[str] = []
    for frm, to in it.moves:
        for f in (fixture_id(frm), fixture_id(to)):
            if not out or out[-1] != f:
                out.append(f)
    return out


def walk(chain: list[str], dests: list[str]) -> list[str]:
    """Each put-down's verdict: ``stay``, ``advance``, ``out_of_order`` or ``off_chain``."""
    p, out = 0, []
    for f in dests:
        if f == chain[p]:
            out.append("stay")
        elif f in chain[p + 1:]:
            p = chain.index(f, p + 1)
            out.append("advance")
        elif f in chain[:p]:
            out.append("out_of_order")
        else:
            out.append("off_chain")
    return out


def put_downs(export: Path):
    """``({(video, assoc): [(time, fixture, source, rule, group_id, episode, track)]} in op
    order, {fixtures with the static fact enclosing(f)})``."""
    out: dict = {}
    enclosing: set = set()
    with gzip.open(export / "cohort" / "episodes.jsonl.gz", "rt") as fh:
        for line in fh:
            e = json.loads(line)
            enclosing |= {f[1] for f in e["initial_world"]["facts"] if f[0] == "enclosing"}
            for g in e["groups"]:
                for op in g["operations"]:
                    if op["type"] not in PUTS:
                        continue
                    a0, a1 = op["provenance"]["refs"]["args"][:2]
                    ident = a0["refs"].get("id", "")
                    if a0["source"] != "observed" or a0["refs"].get("file") != "assoc_info.json" \
                            or "start" not in a0["refs"]:
                        continue          # not a track's own put-down (a set-down for the other hand)
                    video, assoc, _track = ident.split("/")
                    out.setdefault((video, assoc), []).append(
                        (op["provenance"]["refs"]["time"], op["args"][1], a1["source"],
                         a1["refs"].get("rule"), g["group_id"], e["episode_id"], _track))
    return out, enclosing


def alignment_agreement(source: Path, bound, assocs, known):
    """Observed destinations of middle tracks vs the backward and forward alignments."""
    answers = R.read_location_answers(source, known)
    obs = {}                     # (video, assoc, track) -> fixture the object was put on
    for ans in answers:
        key = "end" if ans.kind == "take" else "start"
        hits = [(a, i, abs(getattr(t, key) - ans.time)) for a in assocs.get(ans.video, [])
                for i, t in enumerate(a.tracks) if abs(getattr(t, key) - ans.time) <= AMBIGUITY]
        if len(hits) != 1 or not hits[0][0].name or hits[0][2] > R.FRAME:
            continue
        a, i, _ = hits[0]
        if ans.kind == "put":
            obs.setdefault((ans.video, a.assoc_id, i), set()).add(fixture_id(ans.phrase))
        elif i > 0:              # where the next track took it from = where this one put it
            obs.setdefault((ans.video, a.assoc_id, i - 1), set()).add(fixture_id(ans.phrase))
    c = Counter()
    for (video, aid), (it, a) in bound.items():
        n, m = len(a.tracks), len(it.moves)
        if n == m:
            continue
        for i in range(n - 1):
            seen = obs.get((video, aid, i))
            if not seen or len(seen) > 1:
                continue
            f = next(iter(seen))
            k = i - (n - m)
            back = fixture_id(it.moves[k][1]) if k >= 0 else fixture_id(it.moves[0][0])
            fwd = chain_defaults(it.moves, list(range(n)))[i]
            c["observed middle tracks"] += 1
            c["backward agrees"] += back == f
            c["forward agrees"] += fwd == f
            c["in chain"] += f in chain_of(it)
    return c


def main(argv=None) -> None:
    args = sys.argv[1:] if argv is None else argv
    loose, show_all = "--loose" in args, "--all" in args
    args = [x for x in args if x not in ("--loose", "--all")]
    export = Path(args[0])
    source = Path(args[1]) if len(args) > 1 else Path(__file__).resolve().parents[2] / "shared" / "hd-epic"
    bound, assocs, known = bound_itineraries(source, loose)
    tasks = [json.loads(x) for x in (export / "cohort" / "tasks.jsonl").read_text().splitlines()]
    in_task: dict = {}
    for t in tasks:
        for gid in t["group_ids"]:
            in_task.setdefault(gid, set()).add(t["task_id"])
    pds, enclosing = put_downs(export)
    res = {k: Counter() for k in ("off_chain", "out_of_order", "put_back_in_storage_at_chain_start")}
    verdicts = Counter()
    task_sets = {k: set() for k in res}
    examples = {k: [] for k in res}
    moves_tracks = Counter()
    rules = Counter()
    for key, (it, a) in sorted(bound.items()):
        n, m = len(a.tracks), len(it.moves)
        moves_tracks["n == m" if n == m else "n > m" if n > m else "n < m"] += 1
        ops = pds.get(key)
        if not ops:
            continue
        chain = chain_of(it)
        for j, ((t, f, src, rule, gid, eid, trk), verdict) in enumerate(zip(ops, walk(chain, [o[1] for o in ops]))):
            verdicts[(src, verdict)] += 1
            if src == "curated":
                rules[rule] += 1
            if verdict == "stay" and f == chain[0] and f in enclosing and n > m and m > 0 \
                    and all(o[1] == chain[0] for o in ops[:j]):
                # taken out of the storage the chain starts in and put straight back,
                # before the chain has moved it anywhere
                verdict = "put_back_in_storage_at_chain_start"
            if verdict not in res or src != "curated":
                continue
            res[verdict]["curated put-downs"] += 1
            if gid in in_task:
                res[verdict]["in task references"] += 1
                task_sets[verdict] |= in_task[gid]
            examples[verdict].append(f"{eid} {a.raw_name!r} {it.vqa_id.rsplit('_', 1)[-1]} "
                                     f"track {trk} t={t} -> {f} [{rule}] chain {' > '.join(chain)}")
    print(f"export {export}")
    print(f"bound itineraries{' (loose binding)' if loose else ''}: {len(bound)} "
          f"({dict(moves_tracks)}; n = tracks, m = moves)")
    print("walk verdicts of all track put-downs (destination source, verdict):",
          dict(sorted(verdicts.items())))
    print("curated track put-downs of chain-linked objects by rule:",
          dict(sorted(rules.items(), key=lambda kv: -kv[1])))
    for k in res:
        print(f"{k}: {res[k]['curated put-downs']} curated put-downs, "
              f"{res[k]['in task references']} in task references, {len(task_sets[k])} tasks")
        for x in examples[k] if show_all else examples[k][:6]:
            print("   ", x)
        if not show_all and len(examples[k]) > 6:
            print(f"    ... {len(examples[k]) - 6} more (--all)")
    print("middle tracks with an observed destination:", dict(alignment_agreement(source, bound, assocs, known)))


if __name__ == "__main__":
    main()

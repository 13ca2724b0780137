"""Compile the cohort: episodes, tasks, suites, audit, rejections -> frozen_exports/cohort.

``compile_cohort(source, out_dir)`` verifies the source against SHA256SUMS, compiles into
a temporary directory, moves the files into ``out_dir/cohort`` and updates the manifest.
Nothing is written when the source is missing or altered.
"""
from __future__ import annotations

import shutil
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from . import readers as R
from .admission import admit, replay
from .audit import audit_episode
from .row_audit import audit_rows, decisions, refuse_contradictions, row_audit_records, track_index
from .episodes import capture_groups, episode_videos, offsets_of, shift_activities, shift_recipes
from .fixtures import scene_fixtures, work_counter
from .groups import build_groups, episode_segments, group_records
from .ledger import account, ledger_records, unit_rows
from .sim import Sim
from .tasks import unit_tasks
from .vocabulary import Vocabulary
from .worlds import build_world

PLANNER_EPISODES = (
    "P01-20240202-110250", "P01-20240203-093333", "P01-20240204-095114", "P01-20240203-130505",
    "P01-20240204-121042", "P02-20240209-194141", "P02-20240210-195833", "P02-20240209-231412",
    "P02-20240211-104948", "P02-20240209-184316", "P03-20240218-144430", "P03-20240218-094452",
    "P03-20240216-084005", "P03-20240218-140054", "P05-20240423-172243", "P05-20240425-173353",
    "P05-20240426-085333", "P05-20240427-145526")
MEMORY_FIXED = ("P01-20240202-110250", "P02-20240209-194141")
MEMORY_KITCHENS = ("P03", "P04", "P05", "P06", "P07", "P08", "P09")
MEMORY_PER_KITCHEN = 5
# every admitted task: grounding, not a quota, decides what enters a suite
PLANNER_PER_EPISODE = {"terminal": 10**6, "event": 10**6}
MEMORY_PER_EPISODE = 10**6
STRESS_TASKS = 12
SQUASH = ("P02-20240209-194141", ["in", "squash", "glass_2"])

FILES = {"cohort/rules.json": "rules", "cohort/scenes.jsonl": "scene",
         "cohort/episodes.jsonl.gz": "episode", "cohort/tasks.jsonl": "task",
         "cohort/suites.jsonl": "suite", "cohort/audit.jsonl": "audit",
         "cohort/rejected.jsonl": "rejected_task", "cohort/dropped.jsonl": "dropped_event"}


@dataclass
class CompileReport:
    episodes: int = 0
    scenes: int = 0
    groups: int = 0
    tasks: dict = field(default_factory=dict)          # suite -> tier -> count
    facts: dict = field(default_factory=dict)          # observed/curated counts
    operations: dict = field(default_factory=dict)
    rejections: dict = field(default_factory=dict)
    audit: dict = field(default_factory=dict)          # check -> [passed, total]
    dropped_events: int = 0                            # records of cohort/dropped.jsonl
    dropped_by_kind: dict = field(default_factory=dict)
    source_quirks: list = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> str:
        lines = [f"episodes {self.episodes}, scenes {self.scenes}, groups {self.groups}"]
        for s, tiers in sorted(self.tasks.items()):
            lines.append(f"suite {s}: " + ", ".join(f"{k} {v}" for k, v in sorted(tiers.items())))
        lines.append(f"world facts: {self.facts}; operations: {self.operations}")
        lines.append(f"rejections: {self.rejections}; dropped source events: {self.dropped_events} "
                     f"{self.dropped_by_kind}")
        lines.append("audit: " + ", ".join(f"{k} {p}/{n}" for k, (p, n) in sorted(self.audit.items())))
        lines.append(f"compile time {self.seconds:.1f} s")
        return "\n".join(lines)


def _progress(msg: str) -> None:
    print(f"[compile] {msg}", file=sys.stderr, flush=True)


def memory_candidates(recipes, answers) -> list[str]:
    """Videos of the memory kitchens with any grounding evidence (an ingredient add event
    or a VQA object-location answer); every one is compiled, and
    :func:`memory_episodes` keeps those with the most admitted terminal tasks."""
    vids = {a.video for a in answers}
    for r in recipes.values():
        for cap in r.captures:
            for e in cap.events:
                if e.kind == "add":
                    vids.add(e.span.video)
    return sorted(v for v in vids if v[:3] in MEMORY_KITCHENS)


def memory_episodes(candidates: list[str], n_terminal: dict) -> list[str]:
    """The Nespresso and Squash episodes, then per memory kitchen the
    ``MEMORY_PER_KITCHEN`` candidate videos with the most admitted terminal tasks (ties by
    video ID); videos without any admitted terminal task are never chosen."""
    out = list(MEMORY_FIXED)
    for k in MEMORY_KITCHENS:
        vids = sorted((v for v in candidates if v.startswith(k + "-") and n_terminal.get(v, 0) > 0),
                      key=lambda v: (-n_terminal[v], v))
        out.extend(vids[:MEMORY_PER_KITCHEN])
    return out


def compile_cohort(source, out_dir, progress=_progress) -> CompileReport:
    t0 = time.perf_counter()
    source, out_dir = Path(source), Path(out_dir)
    R.verify_source(source)            # raises before anything is written
    progress(f"source verified: {source}")
    vocab = Vocabulary.load()
    sim = Sim(vocab)
    rep = CompileReport()
    durations = R.read_durations(source)
    known = frozenset(durations)
    quirks: list[str] = []
    activities = R.read_activities(source, durations, quirks)
    recipes = R.read_recipes(source)
    quirks += [q for r in recipes.values() for q in r.quirks]
    assocs = R.read_associations(source)
    answers = R.read_location_answers(source, known)
    itins = R.read_itineraries(source, known)
    landmarks = R.read_fixture_questions(source, known)
    snippets = R.read_snippets(source, known)
    nouns = R.read_noun_classes(source)
    import json
    raw_loc = json.loads((source / R.VQA_LOCATION).read_text(encoding="utf-8"))
    choices = {k: list(v.get("choices", [])) for k, v in raw_loc.items()}
    step_texts = {sid: txt for r in recipes.values() for sid, txt in r.steps.items()}
    rep.source_quirks = quirks

    # complete episodes: an anchor video with every video its multi-video captures span;
    # planner/fixed episodes keep the anchor's ID, a memory candidate whose videos another
    # episode already covers is the same episode and is compiled once
    cap_groups = capture_groups(recipes)
    videos_of: dict[str, list[str]] = {}
    covered: set = set()
    for eid in sorted(set(PLANNER_EPISODES) | set(MEMORY_FIXED)):
        videos_of[eid] = episode_videos(eid, cap_groups)
        covered |= set(videos_of[eid])
    mem_cands = []
    for v in memory_candidates(recipes, answers):
        vids = episode_videos(v, cap_groups)
        if set(vids) & covered:
            continue
        videos_of[vids[0]] = vids          # the episode starts with its first video
        covered |= set(vids)
        mem_cands.append(vids[0])
    episode_ids = sorted(videos_of)
    for vid in sorted({v for vids in videos_of.values() for v in vids}):
        if vid not in known:
            raise R.SourceError(f"{source / R.DURATIONS}: episode video {vid} not listed")
    scenes = sorted({e[:3] for e in episode_ids})
    scene_recs, fixtures_of, counter_of = [], {}, {}
    for s in scenes:
        fx = scene_fixtures(s, answers, choices, itins, landmarks, step_texts, vocab)
        fixtures_of[s], counter_of[s] = fx, work_counter(fx, answers, s)
        scene_recs.append({"scene_id": s, "fixtures": fx})

    episodes, all_tasks, rejected, audit = [], {}, [], []
    per_ep = {}
    dropped_of: dict[str, list[dict]] = {}
    conflicts_all: list[dict] = []
    checks_of: dict[str, list[dict]] = {}
    rows_of: dict = {}
    ledger_in: dict = {}
    for n, eid in enumerate(episode_ids, 1):
        progress(f"episode {n}/{len(episode_ids)} {eid}")
        s = eid[:3]
        vids = videos_of[eid]
        offsets = offsets_of(vids, durations)
        ep_recipes = shift_recipes(recipes, offsets)
        world = build_world(eid, s, vids, fixtures_of[s], counter_of[s], assocs, answers, itins,
                            ep_recipes, nouns, vocab, offsets)
        ep_acts = shift_activities(activities, offsets)
        groups, builder, grounding, op_group = build_groups(world, ep_recipes, ep_acts, sim,
                                                            [x for x in snippets if x.video in vids])
        grecs = group_records(world, groups)
        dropped_of[eid] = sorted(grounding.dropped + builder.out.dropped + world.dropped,
                                 key=lambda d: (d["time"] if d["time"] is not None else -1.0,
                                                d["kind"], d["what"], d["reason"]))
        checks_of[eid] = grounding.checks + [
            {"check": "observed_conflict", "what": f"{c['video']}/{c['association']}/{c['track']} ({c['side']})",
             "reason": "observed sources disagree, neither compiled: " + "; ".join(
                 f"{x['file']} {x['id']}: {x['fixture']}" for x in c["answers"]),
             "time": None, "refs": {"video": c["video"], "association": c["association"], "track": c["track"],
                                    "answers": c["answers"]}} for c in world.conflicts]
        conflicts_all.extend(world.conflicts)
        facts = sorted(world.facts)
        objects = world.objects
        init = frozenset(world.facts)
        anchors = {}
        for a in facts:
            if a[0] == "at" and world.facts[a]["source"] == "observed":
                anchors.setdefault(a[2], []).append(a[1])
        episodes.append({
            "episode_id": eid, "scene_id": s, "videos": list(vids),
            "initial_world": {"objects": objects, "facts": [list(a) for a in facts]},
            "fact_provenance": [world.facts[a] for a in facts],
            "anchors": {k: sorted(v) for k, v in sorted(anchors.items())},
            "groups": grecs,
        })
        states, events, rej_ops = replay(sim, objects, init, grecs)
        if rej_ops:
            raise RuntimeError(f"{eid}: compiled reference operations rejected on replay: {rej_ops[:3]}")
        infos: dict = {}
        cands, dup, held = unit_tasks(eid, world, groups, grecs, builder, op_group, ep_acts, sim, objects,
                                      states, segments=episode_segments(world, ep_recipes), ledger=infos)
        rejected += dup
        dropped_of[eid] += sorted(held, key=lambda d: (d["time"], d["what"]))
        admitted = []
        for c in cands:
            ok, reason, detail = admit(c, states, events, objects)
            if ok:
                admitted.append(c)
            else:
                rejected.append({"task_id": c["task_id"], "episode_id": eid, "reason": reason,
                                 "detail": f"{c['title']}: {detail}"})
        per_ep[eid] = (admitted, objects, init, grecs)
        refused = {r["task_id"]: r["reason"] for r in rejected if r["episode_id"] == eid}
        ledger_in[eid] = (infos, builder.out.ops, op_group, refused, vids, offsets)
        # the row audit's decisions: every location row of the episode's videos, including
        # those the compiler set aside (analysis/compiler/row_audit.py)
        entity_of = {(tr.assoc.video, tr.assoc.assoc_id): tr.entity for tr in world.tracks}
        ds, rows = [], Counter()
        vas = []
        for v in vids:
            d_, r_ = decisions(v, assocs.get(v, []), answers, itins, world.fixture_ids, entity_of,
                               offsets[v], offsets[v] + durations[v])
            ds += d_
            rows += r_
            vas += assocs.get(v, [])
        first_assoc = {}
        for tr in world.tracks:
            if tr.same_as is None:
                first_assoc.setdefault(tr.entity, (tr.assoc.video, tr.assoc.assoc_id))
        rows_of[eid] = (ds, rows, dict(world.facts), first_assoc, track_index(vas))

    # suites
    mem_eps = memory_episodes(mem_cands, {e: sum(c["tier"] == "terminal" for c in per_ep[e][0])
                                          for e in mem_cands})
    def pick(eid, limits):
        admitted = per_ep[eid][0]
        chosen = []
        for tier, k in sorted(limits.items()):
            pool = [c for c in admitted if c["tier"] == tier]
            # ingredient adds first (they carry the recipe's goal), then observed puts
            pool.sort(key=lambda c: (c["key"][0] != "add", c["first"], c["task_id"]))
            chosen += pool[:k]
        return chosen

    planner = []
    for eid in PLANNER_EPISODES:
        planner += pick(eid, PLANNER_PER_EPISODE)
    memory = []
    for eid in mem_eps:
        chosen = pick(eid, {"terminal": MEMORY_PER_EPISODE})
        if eid == SQUASH[0]:
            sq = [c for c in per_ep[eid][0] if c["conditions"][0].get("atom") == SQUASH[1]]
            chosen = sq[:1] + [c for c in chosen if c not in sq][: MEMORY_PER_EPISODE - len(sq[:1])]
        memory += chosen
    chosen_ids = {c["task_id"] for c in planner + memory}
    for eid in episode_ids:
        for c in per_ep[eid][0]:
            if c["task_id"] not in chosen_ids:
                continue
            all_tasks[c["task_id"]] = {
                "task_id": c["task_id"], "episode_id": eid, "group_ids": c["group_ids"],
                "tier": c["tier"], "title": c["title"],
                "contract": {"tier": c["tier"], "conditions": c["conditions"]},
                "reference_action_types": c["reference_action_types"],
                "provenance": c["provenance"],
            }
    # audit (admitted tasks of the suites); stress test on the first 12 terminal suite tasks
    stress_ids = {c["task_id"] for c in sorted((c for c in planner if c["tier"] == "terminal"),
                                               key=lambda c: c["task_id"])[:STRESS_TASKS]}
    for eid in episode_ids:
        admitted, objects, init, grecs = per_ep[eid]
        mine = [c for c in admitted if c["task_id"] in chosen_ids]
        if mine:
            audit += audit_episode(sim, objects, init, grecs, mine, stress_ids)
    row_results = {}
    for eid in episode_ids:
        admitted, objects, init, grecs = per_ep[eid]
        mine = [c for c in admitted if c["task_id"] in chosen_ids]
        if mine:
            ds, rows, wfacts, first_assoc, index = rows_of[eid]
            row_results[eid] = audit_rows(ds, rows, wfacts, grecs, mine, first_assoc, index)
    refuse_contradictions(row_results)          # before anything is written
    audit += row_audit_records(row_results)
    audit += executor_crosscheck(episodes)
    audit.append({"check": "observed_conflicts", "task_id": None, "condition_id": None, "passed": True,
                  "detail": f"{len(conflicts_all)} tracks whose observed sources (VQA answers, itineraries) "
                            "disagree; neither source compiled (listed in dropped.jsonl as source check "
                            "observed_conflict)"})
    audit.sort(key=lambda a: (a["task_id"] or "", a["check"], a["condition_id"] or "", a["detail"]))

    used_eps = sorted({c["episode_id"] for c in all_tasks.values()})
    episodes = [e for e in episodes if e["episode_id"] in used_eps]
    used_scenes = sorted({e["scene_id"] for e in episodes})
    scene_recs = [r for r in scene_recs if r["scene_id"] in used_scenes]
    suites = [
        {"suite": "memory", "task_ids": sorted(c["task_id"] for c in memory),
         "episode_ids": sorted({c["episode_id"] for c in memory}),
         "definition": ("every admitted terminal-tier task of the Nespresso and Squash episodes "
                        "plus, for each of P03, P04, P05, P06, P07, P08, P09, the 5 complete "
                        "episodes outside the planner suite (from videos with an ingredient add or "
                        "a VQA object-location answer) with the most admitted terminal tasks; "
                        "includes Add Squash")},
        {"suite": "planner", "task_ids": sorted(c["task_id"] for c in planner),
         "episode_ids": sorted({c["episode_id"] for c in planner}),
         "definition": ("the complete episodes (all videos of their multi-video recipe captures) "
                        "of the 18 videos of kitchens P01, P02, P03, P05 listed in the HD-EPIC data "
                        "README; every task grounded instance by instance that passes admission")},
    ]
    rejected.sort(key=lambda r: r["task_id"])
    dropped = dropped_records(quirks, dropped_of, used_eps, checks_of)
    # the completeness ledger (analysis/compiler/ledger.py): every end-state row of every
    # unit of an exported episode is expressed by a condition or dropped with a reason
    for eid in used_eps:
        infos, ops, op_group, refused, vids, offsets = ledger_in[eid]
        rows = unit_rows(recipes, activities, assocs, answers, itins, snippets, vids)
        mine = [d for d in dropped if d["episode_id"] == eid]
        drops, expressed = ledger_records(eid, account(rows, infos, ops, op_group, chosen_ids, refused, mine),
                                          offsets)
        dropped += drops
        audit += expressed
    audit.sort(key=lambda a: (a["task_id"] or "", a["check"], a["condition_id"] or "", a["detail"]))
    rules = vocab.rules
    rules_rec = {"rules_version": rules["rules_version"], "types": rules["types"],
                 "predicates": rules["predicates"], "actions": rules["actions"]}

    # the cohort folder and its manifest entries switched in by the export store, in one
    # journaled step (analysis.records.store)
    from analysis.records.io import encode_records
    from analysis.records.store import ExportStore
    out_dir.mkdir(parents=True, exist_ok=True)
    records = {"rules.json": [rules_rec], "scenes.jsonl": scene_recs,
               "episodes.jsonl.gz": episodes,
               "tasks.jsonl": [all_tasks[k] for k in sorted(all_tasks)],
               "suites.jsonl": suites, "audit.jsonl": audit, "rejected.jsonl": rejected,
               "dropped.jsonl": dropped}
    ExportStore(out_dir).replace_cohort(
        {name: encode_records(name, recs) for name, recs in records.items()},
        {rel.split("/", 1)[1]: rtype for rel, rtype in FILES.items()})

    rep.episodes, rep.scenes = len(episodes), len(scene_recs)
    rep.groups = sum(len(e["groups"]) for e in episodes)
    for name, lst in (("planner", planner), ("memory", memory)):
        rep.tasks[name] = dict(Counter(c["tier"] for c in lst))
    # of the exported episodes only (63 are compiled, those without a suite task are not
    # exported): the counts docs/compiler.md quotes from the files
    rep.facts = dict(Counter(p["source"] for e in episodes for p in e["fact_provenance"]))
    rep.operations = dict(Counter(op["provenance"]["source"] for e in episodes
                                  for g in e["groups"] for op in g["operations"]))
    rep.rejections = dict(Counter(r["reason"] for r in rejected))
    rep.dropped_events = len(dropped)
    rep.dropped_by_kind = dict(sorted(Counter(d["kind"] for d in dropped).items()))
    agg = {}
    for a in audit:
        p, n = agg.get(a["check"], (0, 0))
        agg[a["check"]] = (p + a["passed"], n + 1)
    rep.audit = agg
    rep.seconds = time.perf_counter() - t0
    # the summary itself is the command's output (stdout): here only that it is done
    progress(f"compiled {rep.episodes} episodes in {rep.seconds:.1f} s")
    return rep


def executor_crosscheck(episodes) -> list[dict]:
    """Replay every episode's reference operations from its initial world through
    :class:`analysis.executor.Executor`, as a user's re-execution would (not the
    compiler's incremental state)."""
    from analysis.executor import Executor, Rules, World

    ex = Executor(Rules.load())
    total, total_bad, bad_eps = 0, 0, []
    for e in episodes:
        w = World(e["initial_world"]["objects"], e["initial_world"]["facts"])
        bad = 0
        n = 0
        for g in e["groups"]:
            for op in g["operations"]:
                o = ex.apply(w, {"type": op["type"], "args": op["args"]})
                n += 1
                if o.accepted:
                    w = o.world
                else:
                    bad += 1
        total += n
        total_bad += bad
        if bad:
            bad_eps.append(e["episode_id"])
    return [{"check": "executor_replay", "task_id": None, "condition_id": None,
             "passed": total_bad == 0,
             "detail": f"{total - total_bad}/{total} reference operations of {len(episodes)} "
                       f"episodes accepted by analysis.executor; failing episodes: {bad_eps}"}]


def dropped_records(quirks: list[str], dropped_of: dict, episode_ids: list[str],
                    checks_of: dict | None = None) -> list[dict]:
    """``cohort/dropped.jsonl``: every source event that produced no accepted operation.

    Kind ``source``: rows/events the readers discard (a quirk string ``"<where>: <why>;
    ... dropped"``; no episode). Kinds ``track``/``add``/``cue``: per exported episode, in
    the operation builder's order (time order of the events). The completeness ledger's
    ``ledger`` records are appended after these (:mod:`analysis.compiler.ledger`)."""
    out = []
    for n, q in enumerate(q for q in quirks if q.endswith("dropped")):
        where, _, why = q.partition(": ")
        out.append({"event_id": f"source/d{n:03d}", "episode_id": None, "kind": "source",
                    "what": where, "reason": why.rsplit(";", 1)[0], "time": None, "refs": {}})
    for eid in episode_ids:
        for n, d in enumerate(dropped_of[eid]):
            out.append({"event_id": f"{eid}/d{n:03d}", "episode_id": eid, **d})
        # source checks: inconsistent labels found while grounding (not compiled)
        for n, c in enumerate((checks_of or {}).get(eid, [])):
            out.append({"event_id": f"{eid}/s{n:03d}", "episode_id": eid, "kind": "source",
                        "what": c["what"], "reason": f"source check {c['check']}: {c['reason']}",
                        "time": c["time"], "refs": c["refs"]})
    return out

"""Compile the cohort (paper section 3 and appendix A: HD-EPIC annotations -> episode worlds,
operations, tasks with frozen contracts, the suites, the audit): ``frozen_exports/cohort``.

``compile_cohort(source, out_dir)`` is a pipeline of named stages, each returning a small
frozen dataclass the next one reads:

1. :func:`read_source` -> :class:`Source`: the verified HD-EPIC files, parsed;
2. :func:`plan_episodes` -> :class:`EpisodePlan`: the complete episodes and their videos;
3. :func:`compile_scenes` -> :class:`Scenes`: each scene's fixtures and work counter;
4. :func:`compile_episode` -> :class:`CompiledEpisode`, per episode: world, groups,
   admitted tasks and what the audits and the ledger need;
5. :func:`analysis.compiler.suites.select_suites` -> ``Suites`` (the policy:
   :mod:`analysis.compiler.policy`);
6. :func:`audit_cohort` -> the audit records (refusing contradicted rows first);
7. :func:`export_records` -> :class:`CohortRecords`: every file's records;
8. :func:`_write_cohort`: one swap of ``out_dir/cohort`` and the manifest;
9. :func:`report_of` -> :class:`CompileReport`.

Nothing is written when the source is missing or altered, or a check refuses.
"""
from __future__ import annotations

import json
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from analysis.executor import Executor, Rules, World
from analysis.records.io import encode_records
from analysis.records.store import ExportStore

from . import readers as R
from .admission import admit, replay
from .audit import audit_episode
from .episodes import capture_groups, episode_videos, offsets_of, shift_activities, shift_recipes
from .fixtures import scene_fixtures, work_counter
from .groups import build_groups, episode_segments, group_records
from .ledger import account, conditions_without_rows, ledger_records, unit_rows
from .policy import SuitePolicy
from .row_audit import (ambiguous, audit_rows, audit_states, decisions, refuse_contradictions,
                        row_audit_records, track_index)
from .sim import Sim
from .suites import Suites, memory_candidates, select_suites, suite_records
from .tasks import reopen_rows, unit_tasks
from .vocabulary import Vocabulary
from .worlds import build_world

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


@dataclass(frozen=True)
class Source:
    """The HD-EPIC files, verified and parsed (:mod:`analysis.compiler.readers`)."""
    root: Path
    durations: dict
    known: frozenset
    activities: list
    recipes: dict
    assocs: dict
    answers: list
    itins: list
    landmarks: dict
    snippets: list
    nouns: object
    choices: dict              # VQA location question -> its answer choices
    step_texts: dict           # recipe step ID -> its text
    quirks: list               # the readers' notes on source rows (dropped ones end in "dropped")


@dataclass(frozen=True)
class EpisodePlan:
    """The complete episodes to compile: ID -> videos, and the memory candidates among them."""
    videos_of: dict
    memory_cands: list

    @property
    def episode_ids(self) -> list[str]:
        return sorted(self.videos_of)


@dataclass(frozen=True)
class Scenes:
    records: list              # cohort/scenes.jsonl, every compiled scene
    fixtures_of: dict
    counter_of: dict


@dataclass(frozen=True)
class CompiledEpisode:
    """One episode compiled: its record, admitted tasks and the audits' and ledger's inputs."""
    record: dict               # cohort/episodes.jsonl.gz's record
    admitted: list
    objects: dict
    init: frozenset
    grecs: list
    dropped: list              # dropped events (before the ledger's), time order
    checks: list               # source checks found while grounding
    conflicts: list            # tracks whose observed sources disagree
    rejected: list             # rejected_task records
    ledger_in: tuple           # (infos, ops, op_group, refused, videos, offsets)
    rows: tuple                # (decisions, rows, facts, first_assoc, track_index, ambiguous)


@dataclass(frozen=True)
class CohortRecords:
    """Every record of the cohort's files, in file order."""
    rules: dict
    scenes: list
    episodes: list
    tasks: list
    suites: list
    audit: list
    rejected: list
    dropped: list


def read_source(source: Path) -> Source:
    """Read every HD-EPIC file the compiler uses (after :func:`readers.verify_source`)."""
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
    raw_loc = json.loads((source / R.VQA_LOCATION).read_text(encoding="utf-8"))
    choices = {k: list(v.get("choices", [])) for k, v in raw_loc.items()}
    step_texts = {sid: txt for r in recipes.values() for sid, txt in r.steps.items()}
    return Source(source, durations, known, activities, recipes, assocs, answers, itins,
                  landmarks, snippets, nouns, choices, step_texts, quirks)


def plan_episodes(src: Source, policy: SuitePolicy) -> EpisodePlan:
    """Complete episodes: an anchor video with every video its multi-video captures span;
    planner/fixed episodes keep the anchor's ID, a memory candidate whose videos another
    episode already covers is the same episode and is compiled once."""
    cap_groups = capture_groups(src.recipes)
    videos_of: dict[str, list[str]] = {}
    covered: set = set()
    for eid in sorted(set(policy.planner_episodes) | set(policy.memory_fixed)):
        videos_of[eid] = episode_videos(eid, cap_groups)
        covered |= set(videos_of[eid])
    mem_cands = []
    for v in memory_candidates(src.recipes, src.answers, policy):
        vids = episode_videos(v, cap_groups)
        if set(vids) & covered:
            continue
        videos_of[vids[0]] = vids          # the episode starts with its first video
        covered |= set(vids)
        mem_cands.append(vids[0])
    for vid in sorted({v for vids in videos_of.values() for v in vids}):
        if vid not in src.known:
            raise R.SourceError(f"{src.root / R.DURATIONS}: episode video {vid} not listed")
    return EpisodePlan(videos_of, mem_cands)


def compile_scenes(src: Source, plan: EpisodePlan, vocab: Vocabulary) -> Scenes:
    """Each scene's fixtures (from every observed source) and its work counter."""
    scene_recs, fixtures_of, counter_of = [], {}, {}
    for s in sorted({e[:3] for e in plan.episode_ids}):
        fx = scene_fixtures(s, src.answers, src.choices, src.itins, src.landmarks, src.step_texts, vocab)
        fixtures_of[s], counter_of[s] = fx, work_counter(fx, src.answers, s)
        scene_recs.append({"scene_id": s, "fixtures": fx})
    return Scenes(scene_recs, fixtures_of, counter_of)


def _episode_record(eid: str, vids: list, world, grecs: list) -> dict:
    facts = sorted(world.facts)
    anchors = {}
    for a in facts:
        if a[0] == "at" and world.facts[a]["source"] == "observed":
            anchors.setdefault(a[2], []).append(a[1])
    return {
        "episode_id": eid, "scene_id": eid[:3], "videos": list(vids),
        "initial_world": {"objects": world.objects, "facts": [list(a) for a in facts]},
        "fact_provenance": [world.facts[a] for a in facts],
        "anchors": {k: sorted(v) for k, v in sorted(anchors.items())},
        "groups": grecs,
    }


def _conflict_checks(world) -> list[dict]:
    return [
        {"check": "observed_conflict", "what": f"{c['video']}/{c['association']}/{c['track']} ({c['side']})",
         "reason": "observed sources disagree, neither compiled: " + "; ".join(
             f"{x['file']} {x['id']}: {x['fixture']}" for x in c["answers"]),
         "time": None, "refs": {"video": c["video"], "association": c["association"], "track": c["track"],
                                "answers": c["answers"]}} for c in world.conflicts]


def _row_inputs(world, vids: list, offsets: dict, src: Source) -> tuple:
    """The row audit's decisions: every location row of the episode's videos, including
    those the compiler set aside (analysis/compiler/row_audit.py)."""
    entity_of = {(tr.assoc.video, tr.assoc.assoc_id): tr.entity for tr in world.tracks}
    ds, rows = [], Counter()
    vas, amb = [], []
    for v in vids:
        d_, r_ = decisions(v, src.assocs.get(v, []), src.answers, src.itins, world.fixture_ids,
                           entity_of, offsets[v], offsets[v] + src.durations[v])
        ds += d_
        rows += r_
        vas += src.assocs.get(v, [])
        amb += ambiguous(v, src.assocs.get(v, []), src.answers, src.itins, world.fixture_ids,
                         entity_of, offsets[v], offsets[v] + src.durations[v])
    first_assoc = {}
    for tr in world.tracks:
        if tr.same_as is None:
            first_assoc.setdefault(tr.entity, (tr.assoc.video, tr.assoc.assoc_id))
    return (ds, rows, dict(world.facts), first_assoc, track_index(vas), amb)


def compile_episode(eid: str, src: Source, plan: EpisodePlan, scenes: Scenes, vocab: Vocabulary,
                    sim: Sim) -> CompiledEpisode:
    """World, groups, candidate tasks and admission of one complete episode."""
    s = eid[:3]
    vids = plan.videos_of[eid]
    offsets = offsets_of(vids, src.durations)
    ep_recipes = shift_recipes(src.recipes, offsets)
    world = build_world(eid, s, vids, scenes.fixtures_of[s], scenes.counter_of[s], src.assocs,
                        src.answers, src.itins, ep_recipes, src.nouns, vocab, offsets)
    ep_acts = shift_activities(src.activities, offsets)
    groups, builder, grounding, op_group = build_groups(world, ep_recipes, ep_acts, sim,
                                                        [x for x in src.snippets if x.video in vids])
    grecs = group_records(world, groups)
    dropped = sorted(grounding.dropped + builder.out.dropped + world.dropped,
                     key=lambda d: (d["time"] if d["time"] is not None else -1.0,
                                    d["kind"], d["what"], d["reason"]))
    checks = grounding.checks + _conflict_checks(world)
    record = _episode_record(eid, vids, world, grecs)
    objects = world.objects
    init = frozenset(world.facts)
    states, events, rej_ops = replay(sim, objects, init, grecs)
    if rej_ops:
        raise RuntimeError(f"{eid}: compiled reference operations rejected on replay: {rej_ops[:3]}")
    infos: dict = {}
    cands, rejected, held = unit_tasks(eid, world, groups, grecs, builder, op_group, ep_acts, sim,
                                       objects, states, segments=episode_segments(world, ep_recipes),
                                       ledger=infos, reopen=reopen_rows([x for x in src.snippets if x.video in vids],
                                                                        ep_recipes, offsets))
    dropped += sorted(held, key=lambda d: (d["time"], d["what"]))
    admitted = []
    for c in cands:
        ok, reason, detail = admit(c, states, events, objects)
        if ok:
            admitted.append(c)
        else:
            rejected.append({"task_id": c["task_id"], "episode_id": eid, "reason": reason,
                             "detail": f"{c['title']}: {detail}"})
    refused = {r["task_id"]: r["reason"] for r in rejected if r["episode_id"] == eid}
    return CompiledEpisode(record, admitted, objects, init, grecs, dropped, checks, world.conflicts,
                           rejected, (infos, builder.out.ops, op_group, refused, vids, offsets),
                           _row_inputs(world, vids, offsets, src))


def task_records(compiled: dict, chosen_ids: set) -> list[dict]:
    """``cohort/tasks.jsonl``: the suites' tasks, sorted by task ID."""
    tasks = {}
    for eid, ep in sorted(compiled.items()):
        for c in ep.admitted:
            if c["task_id"] not in chosen_ids:
                continue
            tasks[c["task_id"]] = {
                "task_id": c["task_id"], "episode_id": eid, "group_ids": c["group_ids"],
                "tier": c["tier"], "title": c["title"],
                "contract": {"tier": c["tier"], "conditions": c["conditions"]},
                "reference_action_types": c["reference_action_types"],
                "provenance": c["provenance"],
            }
    return [tasks[k] for k in sorted(tasks)]


def _audit_key(a: dict) -> tuple:
    return (a["task_id"] or "", a["check"], a["condition_id"] or "", a["detail"])


def audit_cohort(compiled: dict, suites: Suites, policy: SuitePolicy, sim: Sim) -> list[dict]:
    """The audit of the suites' admitted tasks (the stress test on the first
    ``policy.stress_tasks`` terminal planner tasks), the row audit (refusing contradicted
    rows before anything is written), the executor's replay of every compiled episode and
    the observed conflicts' count."""
    chosen_ids = suites.chosen_ids
    stress_ids = {c["task_id"] for c in sorted((c for c in suites.planner if c["tier"] == "terminal"),
                                               key=lambda c: c["task_id"])[:policy.stress_tasks]}
    audit = []
    for eid, ep in sorted(compiled.items()):
        mine = [c for c in ep.admitted if c["task_id"] in chosen_ids]
        if mine:
            audit += audit_episode(sim, ep.objects, ep.init, ep.grecs, mine, stress_ids)
    row_results = {}
    for eid, ep in sorted(compiled.items()):
        mine = [c for c in ep.admitted if c["task_id"] in chosen_ids]
        if mine:
            ds, rows, wfacts, first_assoc, index, amb = ep.rows
            row_results[eid] = audit_rows(ds, rows, wfacts, ep.grecs, mine, first_assoc, index)
            # the replayed state at each deciding row (and each ambiguous row's candidates)
            row_results[eid].checks += audit_states(ds, amb, ep.objects, ep.init, ep.grecs, sim, index)
    refuse_contradictions(row_results)          # before anything is written
    audit += row_audit_records(row_results)
    audit += executor_crosscheck([ep.record for _, ep in sorted(compiled.items())])
    n_conflicts = sum(len(ep.conflicts) for ep in compiled.values())
    audit.append({"check": "observed_conflicts", "task_id": None, "condition_id": None, "passed": True,
                  "detail": f"{n_conflicts} tracks whose observed sources (VQA answers, itineraries) "
                            "disagree; neither source compiled (listed in dropped.jsonl as source check "
                            "observed_conflict)"})
    audit.sort(key=_audit_key)
    return audit


def export_records(src: Source, scenes: Scenes, compiled: dict, suites: Suites, audit: list,
                   policy: SuitePolicy, vocab: Vocabulary) -> CohortRecords:
    """The exported episodes (those with a suite task) and scenes, the suites, rejections,
    dropped events and the completeness ledger (analysis/compiler/ledger.py: every end-state
    row of every unit of an exported episode is expressed by a condition or dropped with a
    reason)."""
    chosen_ids = suites.chosen_ids
    tasks = task_records(compiled, chosen_ids)
    used_eps = sorted({t["episode_id"] for t in tasks})
    episodes = [ep.record for eid, ep in sorted(compiled.items()) if eid in used_eps]
    used_scenes = sorted({e["scene_id"] for e in episodes})
    scene_recs = [r for r in scenes.records if r["scene_id"] in used_scenes]
    rejected = sorted((r for _, ep in sorted(compiled.items()) for r in ep.rejected),
                      key=lambda r: r["task_id"])
    dropped = dropped_records(src.quirks, {e: ep.dropped for e, ep in compiled.items()}, used_eps,
                              {e: ep.checks for e, ep in compiled.items()})
    audit = list(audit)
    for eid in used_eps:
        infos, ops, op_group, refused, vids, offsets = compiled[eid].ledger_in
        rows = unit_rows(src.recipes, src.activities, src.assocs, src.answers, src.itins, src.snippets, vids)
        mine = [d for d in dropped if d["episode_id"] == eid]
        accounted = account(rows, infos, ops, op_group, chosen_ids, refused, mine)
        drops, expressed = ledger_records(eid, accounted, offsets,
                                          conditions_without_rows(rows, accounted, infos, chosen_ids))
        dropped += drops
        audit += expressed
    audit.sort(key=_audit_key)
    rules = vocab.rules
    rules_rec = {"rules_version": rules["rules_version"], "types": rules["types"],
                 "predicates": rules["predicates"], "actions": rules["actions"]}
    return CohortRecords(rules_rec, scene_recs, episodes, tasks, suite_records(suites, policy),
                         audit, rejected, dropped)


def _write_cohort(out_dir: Path, recs: CohortRecords) -> None:
    """Switch every cohort file and its manifest entries in through the export store, in one
    journaled step (:class:`analysis.records.store.ExportStore`)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    records = {"rules.json": [recs.rules], "scenes.jsonl": recs.scenes,
               "episodes.jsonl.gz": recs.episodes, "tasks.jsonl": recs.tasks,
               "suites.jsonl": recs.suites, "audit.jsonl": recs.audit,
               "rejected.jsonl": recs.rejected, "dropped.jsonl": recs.dropped}
    ExportStore(out_dir).replace_cohort(
        {name: encode_records(name, rows) for name, rows in records.items()},
        {rel.split("/", 1)[1]: rtype for rel, rtype in FILES.items()})


def report_of(recs: CohortRecords, suites: Suites, quirks: list, seconds: float) -> CompileReport:
    """The command's summary, counted from the exported records."""
    rep = CompileReport()
    rep.source_quirks = quirks
    rep.episodes, rep.scenes = len(recs.episodes), len(recs.scenes)
    rep.groups = sum(len(e["groups"]) for e in recs.episodes)
    for name, lst in (("planner", suites.planner), ("memory", suites.memory)):
        rep.tasks[name] = dict(Counter(c["tier"] for c in lst))
    # of the exported episodes only (63 are compiled, those without a suite task are not
    # exported): the counts docs/compiler.md quotes from the files
    rep.facts = dict(Counter(p["source"] for e in recs.episodes for p in e["fact_provenance"]))
    rep.operations = dict(Counter(op["provenance"]["source"] for e in recs.episodes
                                  for g in e["groups"] for op in g["operations"]))
    rep.rejections = dict(Counter(r["reason"] for r in recs.rejected))
    rep.dropped_events = len(recs.dropped)
    rep.dropped_by_kind = dict(sorted(Counter(d["kind"] for d in recs.dropped).items()))
    agg = {}
    for a in recs.audit:
        p, n = agg.get(a["check"], (0, 0))
        agg[a["check"]] = (p + a["passed"], n + 1)
    rep.audit = agg
    rep.seconds = seconds
    return rep


def compile_cohort(source, out_dir, progress=_progress, policy: SuitePolicy | None = None) -> CompileReport:
    """Compile HD-EPIC at ``source`` into ``out_dir/cohort`` (the stages: module docstring);
    ``policy`` defaults to ``suite_policy.yaml`` (:class:`SuitePolicy`)."""
    t0 = time.perf_counter()
    source, out_dir = Path(source), Path(out_dir)
    policy = policy or SuitePolicy.load()
    R.verify_source(source)            # raises before anything is written
    progress(f"source verified: {source}")
    vocab = Vocabulary.load()
    sim = Sim(vocab)
    src = read_source(source)
    plan = plan_episodes(src, policy)
    scenes = compile_scenes(src, plan, vocab)
    compiled = {}
    for n, eid in enumerate(plan.episode_ids, 1):
        progress(f"episode {n}/{len(plan.episode_ids)} {eid}")
        compiled[eid] = compile_episode(eid, src, plan, scenes, vocab, sim)
    suites = select_suites({e: ep.admitted for e, ep in compiled.items()}, plan.memory_cands, policy)
    audit = audit_cohort(compiled, suites, policy, sim)
    recs = export_records(src, scenes, compiled, suites, audit, policy, vocab)
    _write_cohort(out_dir, recs)
    rep = report_of(recs, suites, src.quirks, time.perf_counter() - t0)
    # the summary itself is the command's output (stdout): here only that it is done
    progress(f"compiled {rep.episodes} episodes in {rep.seconds:.1f} s")
    return rep


def executor_crosscheck(episodes) -> list[dict]:
    """Replay every episode's reference operations from its initial world through
    :class:`analysis.executor.Executor`, as a user's re-execution would (not the
    compiler's incremental state)."""
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

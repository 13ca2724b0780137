"""Episode timeline -> reference operations -> groups (consecutive operations that share
a source segment: recipe step, prep segment, activity, or a background window)."""
from __future__ import annotations

import re
from dataclasses import dataclass

from .operations import OpBuilder
from .readers import Activity, Recipe
from .sim import Sim
from .worlds import EpisodeWorld

BACKGROUND_WINDOW = 120.0   # seconds; unannotated time is chunked so groups stay moderate


@dataclass
class Segment:
    kind: str          # step | prep | activity | background
    key: str
    recipe: str | None
    steps: list
    video: str
    start: float
    end: float
    instruction: str


def episode_segments(world: EpisodeWorld, recipes: dict[str, Recipe], activities: list[Activity]):
    segs = []
    for rid in sorted(recipes):
        r = recipes[rid]
        for cap in r.captures:
            if not set(cap.videos) & set(world.videos):
                continue
            for s in cap.segments:
                if s.span.video not in world.videos:
                    continue
                text = r.steps.get(s.step_id, s.step_id)
                instr = text if s.kind == "step" else f"Prepare for: {text}"
                segs.append(Segment(s.kind, f"{s.kind}:{s.step_id}:{s.span.start}", rid, [s.step_id],
                                    s.span.video, s.span.start, s.span.end, instr))
    for a in activities:
        if a.video in world.videos:
            segs.append(Segment("activity", f"activity:{a.label}:{a.start}",
                                ",".join(a.recipe_ids) or None, [], a.video, a.start, a.end, a.label))
    return segs


_RANK = {"step": 0, "prep": 1, "activity": 2}


def segment_at(segs: list[Segment], video: str, t: float) -> Segment:
    hits = [s for s in segs if s.video == video and s.start - 1e-9 <= t <= s.end + 1e-9]
    if hits:
        # most specific first: steps over preps over activities, then the latest start
        return sorted(hits, key=lambda s: (_RANK[s.kind], -s.start, s.key))[0]
    w = int(t // BACKGROUND_WINDOW)
    return Segment("background", f"background:{video}:{w}", None, [], video, w * BACKGROUND_WINDOW,
                   (w + 1) * BACKGROUND_WINDOW, "Handle and put away items (unannotated activity)")


def cue_of(text: str, cues: dict) -> str | None:
    low = text.lower()
    for cue in sorted(cues, key=lambda c: (-len(c), c)):
        if re.search(rf"\b{re.escape(cue)}\b", low):
            return cues[cue]
    return None


def build_groups(world: EpisodeWorld, recipes, activities, sim: Sim):
    """Return ``(groups, builder, adds)``; ``adds`` lists accepted ingredient adds
    ``(op_index, ingredient_entity, target, recipe, step)`` for task building."""
    segs = episode_segments(world, recipes, activities)
    video = world.videos[0]
    events = []   # (time, order, kind, payload)
    next_src = {}
    by_ent = {}
    for tr in world.tracks:
        by_ent.setdefault(tr.entity, []).append(tr)
    for ent, trs in by_ent.items():
        for a, b in zip(trs, trs[1:]):
            if b.src:
                next_src[a.track_id] = (b.src, b.src_ref)
    for i, tr in enumerate(world.tracks):
        events.append((tr.start, 1, i, "track", tr))
    for rid in sorted(recipes):
        r = recipes[rid]
        for cap in r.captures:
            if not set(cap.videos) & set(world.videos):
                continue
            for j, ev in enumerate(cap.events):
                if ev.kind == "add" and ev.span.video in world.videos:
                    # the step whose segment overlaps the add names the target container
                    steps = [s for s in cap.segments if s.kind == "step" and s.span.video == ev.span.video
                             and s.span.start <= ev.span.end and ev.span.start <= s.span.end]
                    sid = steps[0].step_id if steps else None
                    events.append((ev.span.start, 0, j, "add", (rid, sid, r.steps.get(sid, "") if sid else "", ev)))
            seen = set()
            for s in cap.segments:
                if s.kind != "step" or s.span.video not in world.videos or s.step_id in seen:
                    continue
                seen.add(s.step_id)
                verb = cue_of(r.steps.get(s.step_id, ""), sim.vocab.step_cues)
                if verb:
                    events.append((s.span.start, 2, 0, "cue", (rid, s, verb, r.steps[s.step_id])))
    events.sort(key=lambda e: (e[0], e[1], e[2], e[3]))
    b = OpBuilder(world, sim)
    adds = []
    for t, _, _, kind, payload in events:
        n0 = len(b.out.ops)
        if kind == "track":
            b.track(payload, next_src)
        elif kind == "add":
            rid, sid, text, ev = payload
            res = b.add(ev, rid, sid, text)
            if res:
                adds.append((len(b.out.ops) - 1, res[0], res[1], rid, sid, ev))
        else:
            rid, s, verb, text = payload
            b.cue(t, verb, text, {"recipe": rid, "step": s.step_id, "video": s.span.video,
                                  "start": s.span.start, "end": s.span.end})
        # ops of one event share the event's segment (navigation belongs to its event)
        seg = segment_at(segs, video, t)
        for op in b.out.ops[n0:]:
            op.segment = seg
    # consecutive ops with the same segment form a group
    groups, cur = [], None
    op_group = []
    for op in b.out.ops:
        if cur is None or op.segment.key != cur["seg"].key:
            cur = {"seg": op.segment, "ops": []}
            groups.append(cur)
        cur["ops"].append(op)
        op_group.append(len(groups) - 1)
    return groups, b, adds, op_group


def group_records(world: EpisodeWorld, groups) -> list[dict]:
    out = []
    for i, g in enumerate(groups):
        seg, ops = g["seg"], g["ops"]
        objs = sorted({a for op in ops for a in op.action["args"]
                       if a in world.objects and not _is_fixture(world, a)})
        hints = sorted({op.action["type"] for op in ops})
        times = [o.provenance["refs"].get("start") for o in ops if o.provenance["source"] == "observed"]
        times = [x for x in times if x is not None]
        out.append({
            "group_id": f"{world.episode_id}/g{i:04d}",
            "index": i,
            "instruction": seg.instruction,
            "objects": objs,
            "action_hints": hints,
            "source": {"recipe": seg.recipe, "steps": seg.steps, "video": seg.video,
                       "start": seg.start, "end": seg.end,
                       "refs": {"segment": seg.kind, "first_event": min(times) if times else seg.start}},
            "operations": [{"type": op.action["type"], "args": op.action["args"],
                            "provenance": op.provenance} for op in ops],
        })
    return out


def _is_fixture(world, ent) -> bool:
    return ent in world.fixture_ids

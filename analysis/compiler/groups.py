"""Episode timeline -> reference operations -> groups (paper section 3 and appendix A.1:
ordered source steps grouped around operations, with their source-step identifiers and
temporal spans).

A group is a run of consecutive operations that share one source unit: a timed recipe
step segment, a prep segment, or, outside every step, one object track (its pick-up and
put-down with the navigation they need). Groups therefore split at step and sub-step
boundaries and at track boundaries, so no group is an unbounded activity dump.
"""
from __future__ import annotations

from dataclasses import dataclass

from .grounding import ground
from .grounding.windows import episode_recipe_segments
from .operations import build_operations
from .readers import Activity, Recipe
from .sim import Sim
from .out_of_storage import out_of_storage_sources, unload_sources
from .worlds import EpisodeWorld, mark_disputed_origins


@dataclass
class Segment:
    kind: str          # step | prep | track
    key: str
    recipe: str | None
    steps: list
    video: str
    start: float
    end: float
    instruction: str


def episode_segments(world: EpisodeWorld, recipes: dict[str, Recipe]):
    segs = []
    for rid, r, _, s in episode_recipe_segments(world, recipes):
        text = r.steps.get(s.step_id, s.step_id)
        instr = text if s.kind == "step" else f"Prepare for: {text}"
        segs.append(Segment(s.kind, f"{s.kind}:{s.step_id}:{s.span.start}", rid, [s.step_id],
                            s.span.video, s.span.start, s.span.end, instr))
    return segs


_RANK = {"step": 0, "prep": 1}


def segment_at(segs: list[Segment], t: float):
    """The most specific source segment at episode time ``t`` (one clock for all videos)."""
    hits = [s for s in segs if s.start - 1e-9 <= t <= s.end + 1e-9]
    if hits:
        # most specific first: steps over preps, then the latest start
        return sorted(hits, key=lambda s: (_RANK[s.kind], -s.start, s.key))[0]
    return None


def activity_at(activities: list[Activity], t: float) -> str | None:
    hits = [a for a in activities if a.start <= t <= a.end]
    return sorted(hits, key=lambda a: (-a.start, a.label))[0].label if hits else None


def build_groups(world: EpisodeWorld, recipes, activities, sim: Sim, snippets=()):
    """``(groups, builder, grounding, op_group)``: groups as ``{"seg", "ops"}`` dicts."""
    g = ground(world, recipes, sim.vocab, activities, snippets)
    for ent, typ in sorted(g.objects.items()):
        world.objects.setdefault(ent, typ)
    world.objects = dict(sorted(world.objects.items()))
    for atom, prov in sorted(g.facts.items()):
        world.facts.setdefault(atom, prov)
    unload_sources(world, activities, sim.vocab)
    out_of_storage_sources(world, activities, sim.vocab)
    mark_disputed_origins(world)        # last: the passes above rewrite initial places
    b = build_operations(world, g, sim)
    segs = episode_segments(world, recipes)
    # every operation of one source event (with its navigation and open/close steps)
    # gets the segment of the event's own operation: the planned one, else the track's
    events: dict[int, list] = {}
    for op in b.out.ops:
        events.setdefault(op.event, []).append(op)
    for n in sorted(events):
        ops = events[n]
        main = next((o for o in ops if o.planned is not None), None) or next(
            (o for o in ops if any(a["refs"].get("file") == "assoc_info.json"
                                   for a in o.provenance["refs"].get("args", []))), ops[-1])
        p = main.planned
        if p is not None and p.step is not None and p.step.row:
            # an activity row's key action: a track-kind segment at its time, inside the
            # row's own time, so the group is the row's (tasks.unit_of)
            w = p.step
            seg = Segment("track", f"row:{w.row}:{main.time}", None, [], w.video, main.time, main.time,
                          w.text)
        elif p is not None and p.step is not None:
            w = p.step
            seg = Segment("step", f"step:{w.step}:{w.start}", w.recipe, [w.step], w.video,
                          w.start, w.end, w.text)
        else:
            seg = segment_at(segs, main.time)
        if seg is None:
            track = next((a["refs"]["id"] for a in main.provenance["refs"].get("args", [])
                          if a["refs"].get("file") == "assoc_info.json"), None)
            label = activity_at(activities, main.time) or "Unannotated activity"
            video = track.split("/", 1)[0] if track else video_at(world, main.time)
            seg = Segment("track", f"track:{track or main.time}", None, [], video, main.time, main.time,
                          f"{label}: handle and put away items")
        for o in ops:
            o.segment = seg
    groups, cur = [], None
    op_group = []
    for op in b.out.ops:
        if cur is None or op.segment.key != cur["seg"].key:
            cur = {"seg": op.segment, "ops": []}
            groups.append(cur)
        cur["ops"].append(op)
        op_group.append(len(groups) - 1)
    for gr in groups:
        times = [o.time for o in gr["ops"]]
        if gr["seg"].kind == "track":
            gr["seg"] = Segment("track", gr["seg"].key, None, [], gr["seg"].video, min(times), max(times),
                                gr["seg"].instruction)
    return groups, b, g, op_group


def video_at(world: EpisodeWorld, t: float) -> str:
    """The episode's video playing at episode time ``t``."""
    return [v for v in world.videos if world.offsets.get(v, 0.0) <= t + 1e-9][-1]


#: put-down action -> the preposition an instruction uses for its destination
PUT_WORDS = {"put_on": "on", "place_on_appliance": "on", "put_in_storage": "in",
             "put_in_appliance": "in", "put_in_sink": "in", "throw_away": "in"}


def words_of(entity_id: str) -> str:
    """An ID as instruction words (``counter_right_of_hob`` -> ``counter right of hob``)."""
    return entity_id.replace("_", " ")


def instruction_of(seg, ops) -> str:
    """The group's goal as a planner reads it: the source text, then one sentence per
    put-down whose destination the source observes ("Put the mug 2 in the dishwasher."),
    so that an observed placement a contract asks for is stated in the instruction the
    planner gets (a curated destination is never stated: the source does not say it)."""
    said = []
    for op in ops:
        prep = PUT_WORDS.get(op.action["type"])
        args = op.provenance["refs"].get("args", [])
        if prep is None or len(args) != 2 or args[1]["source"] != "observed":
            continue
        obj, dst = op.action["args"]
        said.append(f"Put the {words_of(obj)} {prep} the {words_of(dst)}.")
    if not said:
        return seg.instruction
    text = seg.instruction.rstrip()
    return " ".join([text if text.endswith((".", "!", "?")) else text + "."] + said)


def group_records(world: EpisodeWorld, groups) -> list[dict]:
    """Group records; ``source`` times are in the group's own video."""
    out = []
    for i, g in enumerate(groups):
        seg, ops = g["seg"], g["ops"]
        objs = sorted({a for op in ops for a in op.action["args"]
                       if a in world.objects and a not in world.fixture_ids})
        hints = sorted({op.action["type"] for op in ops})
        times = [o.time for o in ops if o.provenance["source"] == "observed"]
        off = world.offsets.get(seg.video, 0.0)
        local = lambda t: round(t - off, 5)  # noqa: E731
        out.append({
            "group_id": f"{world.episode_id}/g{i:04d}",
            "index": i,
            "instruction": instruction_of(seg, ops),
            "objects": objs,
            "action_hints": hints,
            "source": {"recipe": seg.recipe, "steps": seg.steps, "text": seg.instruction, "video": seg.video,
                       "start": local(seg.start), "end": local(seg.end),
                       "refs": {"segment": seg.kind,
                                "first_event": local(min(times) if times else seg.start)}},
            "operations": [{"type": op.action["type"], "args": op.action["args"],
                            "provenance": op.provenance} for op in ops],
        })
    return out

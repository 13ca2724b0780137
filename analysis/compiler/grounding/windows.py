"""Grounding (paper section 3, source-step links with temporal spans): step windows and
the grounding records (a planned event, the grounding result)."""
from __future__ import annotations

from dataclasses import dataclass, field

from .text import MARGIN, overlaps, words

@dataclass
class StepWindow:
    recipe: str
    step: str
    text: str
    video: str
    start: float            # step segment
    end: float
    win_start: float        # with the step's prep segments
    index: int              # occurrence of this step in the episode (0 = first)
    spans: tuple = ()       # the step segment and its own prep segments ((start, end), ...)
    row: str = ""           # an activity row's source row (then ``text`` is its label)
    own: tuple = ()         # a row's own time: its span minus the step/prep segments inside it


@dataclass
class Planned:
    """One grounded source event, to be emitted as an operation at ``time``.

    ``roles`` maps role names to entity IDs; ``evidence`` maps the same role names to the
    observed reference that decided the binding. ``hold`` is the entity that must be in
    the hand at ``time`` (its track is reserved for this event)."""
    kind: str                       # add | step
    time: float
    action: str                     # pour | add_ingredient | empty_into | insert | stir | ...
    roles: dict
    evidence: dict
    refs: dict                      # the source row: recipe/ingredient/step/video/start/end
    hold: str | None = None
    hold_track: str | None = None
    step: StepWindow | None = None
    title: str = ""
    what: str = ""
    pickup: str | None = None       # curated fixture ``hold`` is picked up from just before


@dataclass
class Grounding:
    planned: list[Planned] = field(default_factory=list)
    dropped: list[dict] = field(default_factory=list)
    checks: list[dict] = field(default_factory=list)        # source checks (not compiled)
    facts: dict = field(default_factory=dict)               # extra initial facts -> provenance
    objects: dict = field(default_factory=dict)             # extra entities (substances)


def episode_recipe_segments(world, recipes):
    """``(recipe id, recipe, capture, segment)`` for every step and prep segment of the
    recipes that lies in one of the episode's videos, in recipe and capture order."""
    for rid in sorted(recipes):
        r = recipes[rid]
        for cap in r.captures:
            if not set(cap.videos) & set(world.videos):
                continue
            for s in cap.segments:
                if s.span.video in world.videos:
                    yield rid, r, cap, s


def step_windows(world, recipes) -> list[StepWindow]:
    out = []
    seen: dict = {}
    for rid, r, cap, s in episode_recipe_segments(world, recipes):
        if s.kind != "step":
            continue
        preps = [p.span for p in cap.segments if p.kind == "prep" and p.step_id == s.step_id
                 and p.span.video == s.span.video and p.span.end <= s.span.start + MARGIN
                 and p.span.end >= s.span.start - 30.0]
        ws = min([s.span.start] + [p.start for p in preps])
        k = (rid, s.step_id)
        out.append(StepWindow(rid, s.step_id, r.steps.get(s.step_id, ""), s.span.video,
                              s.span.start, s.span.end, ws, seen.get(k, 0),
                              tuple([(s.span.start, s.span.end)] + [(p.start, p.end) for p in preps])))
        seen[k] = seen.get(k, 0) + 1
    out.sort(key=lambda w: (w.video, w.start, w.end, w.step))
    return out


def prep_windows_at(ctx, video, t0, t1, rid, ing_words=frozenset()):
    """The step an add belongs to when no step segment overlaps it but a *prep*
    segment of its recipe does (the flour weighed into the bowl minutes before the
    "Mix the flour ... in a large bowl" step segment, which the step window, built
    from prep segments that end at most 30 s before its step segment, leaves out):
    the unit of that step (its task) holds the add, so its text names the add's
    vessel. Prep segments of several steps overlapping the add: the one step whose
    text names the ingredient ("Heat the oil in a heavy bottomed pan" for the oil, not
    "Add the onions"), as for overlapping step segments. One window, spanning every
    segment of that step in the video; ``[]`` unless one step is left."""
    hits = {s[2] for s in ctx.segments if s[0] == video and s[1] == rid and s[3] == "prep"
            and overlaps(s[4], s[5], t0, t1, 0.0)}
    if len(hits) > 1:
        hits = {h for h in hits if set(words(ctx.recipes[rid].steps.get(h, ""))) & set(ing_words)}
    if len(hits) != 1:
        return []
    step = hits.pop()
    spans = tuple(sorted((s[4], s[5]) for s in ctx.segments if s[0] == video and s[1] == rid
                         and s[2] == step))
    seg = [sp for sp in spans if overlaps(sp[0], sp[1], t0, t1, 0.0)][0]
    return [StepWindow(rid, step, ctx.recipes[rid].steps.get(step, ""), video, seg[0], seg[1], seg[0],
                       0, spans)]

"""Grounding (paper section 3, source-step links with temporal spans): step windows and
the grounding records (a planned event, the grounding result)."""
from __future__ import annotations

from dataclasses import dataclass, field

from .text import MARGIN

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

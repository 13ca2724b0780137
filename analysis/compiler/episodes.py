"""Complete episodes (paper section 3): a recipe capture filmed over several videos is one continuous
episode whose world state carries across its videos (the paper's "complete episodes").

An episode is the closure of videos that share a multi-video capture (in time order: HD-EPIC
video IDs are ``P<kitchen>-<date>-<time>``). One clock orders it: each video starts where
the previous one ended (``offsets``), and every track, add, step and activity time of the
episode is shifted onto that clock; source references keep their own video's times.

>>> episode_videos("P05-20240427-145526", {"R": [("P05-20240427-143353", "P05-20240427-145526")]})
['P05-20240427-143353', 'P05-20240427-145526']
"""
from __future__ import annotations

from dataclasses import replace

from .readers import Activity, Recipe, Span


def capture_groups(recipes: dict[str, Recipe]) -> dict[str, list[tuple[str, ...]]]:
    """``{recipe: [videos of each multi-video capture]}``."""
    return {rid: [tuple(c.videos) for c in r.captures if len(c.videos) > 1]
            for rid, r in sorted(recipes.items())}


def episode_videos(anchor: str, groups: dict) -> list[str]:
    """The anchor video and every video linked to it through multi-video captures."""
    out = {anchor}
    changed = True
    while changed:
        changed = False
        for caps in groups.values():
            for vids in caps:
                if out & set(vids) and not set(vids) <= out:
                    out |= set(vids)
                    changed = True
    return sorted(out)


def offsets_of(videos: list[str], durations: dict[str, float]) -> dict[str, float]:
    """Each video's start in episode time: the summed durations of the videos before it."""
    out, t = {}, 0.0
    for v in videos:
        out[v] = round(t, 3)
        t += durations[v]
    return out


def _span(s: Span, offsets: dict) -> Span:
    off = offsets.get(s.video)
    return s if not off else Span(s.video, s.start + off, s.end + off)


def shift_recipes(recipes: dict[str, Recipe], offsets: dict[str, float]) -> dict[str, Recipe]:
    """The recipes with every event and segment of the episode's videos on episode time."""
    if not any(offsets.values()):
        return recipes
    out = {}
    for rid, r in recipes.items():
        caps = []
        for c in r.captures:
            if not set(c.videos) & set(offsets):
                caps.append(c)
                continue
            caps.append(replace(c, events=tuple(replace(e, span=_span(e.span, offsets)) for e in c.events),
                                segments=tuple(replace(s, span=_span(s.span, offsets)) for s in c.segments)))
        out[rid] = replace(r, captures=tuple(caps))
    return out


def shift_activities(activities: list[Activity], offsets: dict[str, float]) -> list[Activity]:
    return [replace(a, start=a.start + offsets[a.video], end=a.end + offsets[a.video])
            if offsets.get(a.video) else a for a in activities if a.video in offsets]

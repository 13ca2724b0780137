"""Readers of the recipe captures (paper section 3: HD-EPIC temporal annotations;
complete_recipes.json: steps, prep and step segments,
ingredient add and weigh events) and the activity rows (PXX_recipe_timestamps.csv)."""
from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

from .source import (_load_json, _names_record, _num, ACTIVITIES_DIR, read_durations, RECIPES,
                     repair_video_id, SourceError)


@dataclass(frozen=True)
class Span:
    """A timed segment ``[start, end]`` in one video."""
    video: str
    start: float
    end: float


@dataclass(frozen=True)
class IngredientEvent:
    ingredient_id: str
    name: str
    kind: str          # "add" or "weigh"
    span: Span


@dataclass(frozen=True)
class StepSegment:
    step_id: str
    kind: str          # "step" or "prep"
    span: Span


@dataclass(frozen=True)
class Capture:
    recipe_id: str
    index: int
    videos: tuple[str, ...]
    ingredients: dict          # ingredient_id -> name
    events: tuple[IngredientEvent, ...]
    segments: tuple[StepSegment, ...]


@dataclass(frozen=True)
class Recipe:
    recipe_id: str
    participant: str
    name: str
    steps: dict                # step_id -> text
    captures: tuple[Capture, ...]
    quirks: tuple[str, ...] = field(default=())


def _span(obj, where: str) -> Span:
    if not isinstance(obj, dict):
        raise SourceError(f"{where}: expected an object with video/start/end")
    for key in ("video", "start", "end"):
        if key not in obj:
            raise SourceError(f"{where}: field {key} missing")
    start = _num(obj["start"], f"{where}: field start")
    end = _num(obj["end"], f"{where}: field end")
    if end < start:
        raise SourceError(f"{where}: end {end} before start {start}")
    return Span(str(obj["video"]), start, end)


@_names_record
def read_recipes(root: Path) -> dict[str, Recipe]:
    """All recipes keyed by ID; events outside their capture's videos are dropped and noted."""
    path = Path(root) / RECIPES
    data = _load_json(root, RECIPES)
    if not isinstance(data, dict):
        raise SourceError(f"{path}: expected an object keyed by recipe ID")
    out: dict[str, Recipe] = {}
    for rid in sorted(data):
        rec = data[rid]
        where = f"{path}: recipe {rid}"
        for key in ("participant", "name", "steps", "captures"):
            if key not in rec:
                raise SourceError(f"{where}: field {key} missing")
        quirks: list[str] = []
        captures = []
        for ci, cap in enumerate(rec["captures"]):
            cw = f"{where}: capture {ci}"
            videos = tuple(cap.get("videos") or ())
            if not videos:
                raise SourceError(f"{cw}: field videos empty")
            vset = set(videos)
            ingredients, events = {}, []
            for iid in sorted(cap.get("ingredients", {})):
                ing = cap["ingredients"][iid]
                ingredients[iid] = str(ing.get("name", "")).strip()
                for kind in ("add", "weigh"):
                    for ei, ev in enumerate(ing.get(kind) or []):
                        span = _span(ev, f"{cw}: ingredient {iid}: {kind}[{ei}]")
                        if span.video not in vset:
                            # Filed under the wrong video: its times refer to a video we do
                            # not compile with this capture, so the event is unusable here.
                            quirks.append(f"{rid} capture {ci} {iid} {kind}[{ei}]: video "
                                          f"{span.video} outside capture {list(videos)}; dropped")
                            continue
                        events.append(IngredientEvent(iid, ingredients[iid], kind, span))
            segments = []
            for kind, key in (("step", "step_times"), ("prep", "prep_times")):
                for sid in sorted(cap.get(key, {})):
                    for si, seg in enumerate(cap[key][sid] or []):
                        span = _span(seg, f"{cw}: {key} {sid}[{si}]")
                        if span.video not in vset:
                            quirks.append(f"{rid} capture {ci} {key} {sid}[{si}]: video "
                                          f"{span.video} outside capture; dropped")
                            continue
                        segments.append(StepSegment(sid, kind, span))
            key_ev = lambda e: (e.span.video, e.span.start, e.span.end, e.ingredient_id, e.kind)
            key_seg = lambda s: (s.span.video, s.span.start, s.span.end, s.step_id, s.kind)
            captures.append(Capture(rid, ci, videos, ingredients,
                                    tuple(sorted(events, key=key_ev)),
                                    tuple(sorted(segments, key=key_seg))))
        out[rid] = Recipe(rid, str(rec["participant"]), str(rec["name"]),
                          dict(sorted(rec["steps"].items())), tuple(captures), tuple(quirks))
    return out


# --------------------------------------------------------------------------- activities

@dataclass(frozen=True)
class Activity:
    video: str
    recipe_ids: tuple[str, ...]    # full IDs, e.g. ("P01_R08", "P01_R07"); () = background
    label: str
    start: float
    end: float
    end_from_duration: bool        # the row said the literal "end"
    source_row: str                # "<file>:<line>" for provenance


@_names_record
def read_activities(root: Path, durations: dict[str, float] | None = None,
                    quirks: list[str] | None = None) -> list[Activity]:
    """All activity rows of every kitchen, sorted by (video, start, end, label).

    Rows whose end precedes their start (one in P04) cannot be placed in time: they are
    dropped and described in ``quirks`` (when a list is given).
    """
    root = Path(root)
    durations = read_durations(root) if durations is None else durations
    known = frozenset(durations)
    folder = root / ACTIVITIES_DIR
    files = sorted(folder.glob("P*_recipe_timestamps.csv"))
    if not files:
        raise SourceError(f"{folder}: no PXX_recipe_timestamps.csv files")
    out = []
    for path in files:
        participant = path.name.split("_", 1)[0]
        with open(path, newline="", encoding="utf-8") as fh:
            for line, row in enumerate(csv.DictReader(fh), 2):
                where = f"{path}: line {line}"
                raw_vid = (row.get("video_id") or "").strip()
                vid = repair_video_id(raw_vid, known)
                if vid is None:
                    raise SourceError(f"{where}: field video_id {raw_vid!r} is not a known video")
                rids = tuple(f"{participant}_{r.strip()}" for r in
                             (row.get("recipe_id") or "").split(",") if r.strip())
                start = _num(row.get("start_time"), f"{where}: field start_time")
                raw_end = (row.get("end_time") or "").strip()
                literal_end = raw_end.lower() == "end"
                end = durations[vid] if literal_end else _num(raw_end, f"{where}: field end_time")
                if end < start:
                    if quirks is not None:
                        quirks.append(f"{path.name}:{line}: end_time {end} before start_time "
                                      f"{start}; row dropped")
                    continue
                out.append(Activity(vid, rids, (row.get("high_level_activity_label") or "").strip(),
                                    start, end, literal_end, f"{path.name}:{line}"))
    out.sort(key=lambda a: (a.video, a.start, a.end, a.label, a.recipe_ids))
    return out


# --------------------------------------------------------------------------- tracks

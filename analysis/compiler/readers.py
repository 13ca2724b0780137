"""Readers for the raw HD-EPIC annotation files.

Each reader returns plain, sorted, immutable records and survives the quirks listed in
``../shared/hd-epic/README.md``:

* activity rows ending with the literal ``end`` (replaced by the video duration);
* the multi-recipe ID ``"R08, R07"`` (split into a tuple of recipe IDs);
* the mistyped video ID ``P09-2024623-154547`` (repaired to ``P09-20240623-154547``
  by zero-padding the month, and only if the repaired ID is a known video);
* add/weigh events filed under a video outside their capture (dropped, and listed in
  :attr:`Recipe.quirks` so the audit can count them);
* unnamed tracks ("Track N": kept, with ``name=None`` and ``unnamed=True``);
* differently phrased fixtures (kept verbatim here; :mod:`analysis.compiler.normalise`
  canonicalises them).

Errors raise :class:`SourceError` naming the file, the record and the field.
"""
from __future__ import annotations

import ast
import csv
import functools
import hashlib
import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from analysis._fs.confine import ConfinementError, read_regular

RECIPES = "high-level/complete_recipes.json"
ACTIVITIES_DIR = "high-level/activities"
ASSOC = "scene-and-object-movements/assoc_info.json"
DURATIONS = "youtube-links/HD_EPIC_YouTube_URLs.csv"
VQA_LOCATION = "vqa-benchmark/3d_perception_object_location.json"
VQA_ITINERARY = "vqa-benchmark/object_motion_object_movement_itinerary.json"
VQA_FIXTURE = "vqa-benchmark/3d_perception_fixture_location.json"
VQA_FINE = ("vqa-benchmark/fine_grained_how_recognition.json",
            "vqa-benchmark/fine_grained_why_recognition.json")
NOUN_CLASSES = "narrations-and-action-segments/HD_EPIC_noun_classes.csv"
VERB_CLASSES = "narrations-and-action-segments/HD_EPIC_verb_classes.csv"
SUMS = "SHA256SUMS"

# Tolerance for linking a VQA time stamp to a track boundary: one frame at 30 fps, plus
# half a millisecond because question times are written with 3 decimals ("00:03:58.733")
# while track times have 5: a frame-late answer is then up to 1/30 + 0.0005 s away (the
# audit of 57fc3c9a found 13 answers at 0.0337 s, one frame plus rounding, dropped).
FRAME = 1.0 / 30.0 + 0.0005 + 1e-6
# The binding window of a time-keyed answer (issue 34): two frames plus the same rounding.
# A question's frame and the track's boundary frame are annotated separately, and a single
# candidate track 43 ms (more than one frame) from the question's time was refused although
# nothing else was near it; a second object within this window still makes it ambiguous.
TWO_FRAMES = 2.0 / 30.0 + 0.0005 + 1e-6

_VIDEO_RE = re.compile(r"^P\d\d-\d{8}-\d{6}$")
# "Track 12", "Track 12 (skipped)", "new track 3": the annotators never named the object.
_UNNAMED_RE = re.compile(r"^(new\s+)?track\s*\d+(\s*\(skipped\))?$", re.IGNORECASE)


class SourceError(ValueError):
    """A source file is missing, altered or malformed. The message names file/record/field."""


# --------------------------------------------------------------------------- checksums

def verify_source(root: Path) -> dict[str, str]:
    """Check every file listed in ``SHA256SUMS``; return ``{relpath: sha256}``.

    Raises :class:`SourceError` naming the first missing or altered file, so the compiler
    can refuse before writing anything.
    """
    root = Path(root)
    sums_path = root / SUMS
    if not root.is_dir():
        raise SourceError(f"source directory {root} does not exist")
    _only_regular_files(root)
    if not sums_path.is_file():
        raise SourceError(f"{sums_path}: missing checksum list SHA256SUMS")
    expected: dict[str, str] = {}
    try:
        sums_text = _read_source(sums_path, 16 << 20).decode("utf-8")
    except UnicodeDecodeError:
        raise SourceError(f"{sums_path}: not UTF-8 text") from None
    for lineno, line in enumerate(sums_text.splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split(None, 1)
        if len(parts) != 2:
            raise SourceError(f"{sums_path}: line {lineno}: malformed checksum line")
        expected[parts[1].strip().lstrip("*")] = parts[0]
    for rel in sorted(expected):
        path = root / rel
        if not path.is_file():
            raise SourceError(f"{path}: listed in SHA256SUMS but missing")
        digest = hashlib.sha256(_read_source(path, MAX_SOURCE_FILE)).hexdigest()
        if digest != expected[rel]:
            raise SourceError(
                f"{path}: SHA-256 {digest} differs from SHA256SUMS ({expected[rel]}): "
                "the source file was altered")
    return expected


#: The largest source file read (the largest HD-EPIC annotation file is about 3 MB).
MAX_SOURCE_FILE = 1 << 30


def _read_source(path: Path, limit: int) -> bytes:
    """The bytes of the source file ``path``: a regular file of at most ``limit`` bytes,
    read without following a symlink or blocking on a FIFO; else :class:`SourceError`
    naming it and what to do."""
    try:
        return read_regular(path, str(path), limit=limit)
    except ConfinementError as exc:
        raise SourceError(f"{exc}; the compiler reads regular files only: replace it by "
                          "the file itself") from None
    except OSError as exc:
        raise SourceError(f"{path}: cannot be read ({exc.strerror or exc})") from None


def _only_regular_files(root: Path) -> None:
    """Refuse, before any work, a source folder holding anything but folders and regular
    files (listed in SHA256SUMS or not): a FIFO blocks a reader forever, a device never
    ends, a symlink reads whatever it points to."""
    for dirpath, dirs, names in os.walk(root):
        for n in sorted(dirs) + sorted(names):
            p = Path(dirpath) / n
            mode = os.lstat(p).st_mode
            if stat.S_ISDIR(mode) or stat.S_ISREG(mode):
                continue
            kind = ("a symlink" if stat.S_ISLNK(mode) else "a FIFO" if stat.S_ISFIFO(mode)
                    else "a device or socket")
            raise SourceError(f"{p}: {kind}, not a regular file; the compiler reads regular "
                              "files only (a FIFO would block it): remove it, or put the "
                              "file itself there")


def _load_json(root: Path, rel: str):
    path = Path(root) / rel
    if not os.path.lexists(path):
        raise SourceError(f"{path}: missing")
    raw = _read_source(path, MAX_SOURCE_FILE)
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise SourceError(f"{path}: not UTF-8 (byte {exc.start}); restore the file from "
                          "HD-EPIC") from None
    except json.JSONDecodeError as exc:
        raise SourceError(f"{path}: invalid JSON ({exc})") from None
    except RecursionError:
        raise SourceError(f"{path}: JSON nested too deeply; restore the file from HD-EPIC") \
            from None
    except ValueError as exc:  # e.g. an integer of more than 4300 digits
        raise SourceError(f"{path}: invalid JSON ({str(exc)[:160]}); restore the file from "
                          "HD-EPIC") from None


def _names_record(fn):
    """Any unexpected error of the reader ``fn`` (a field of the wrong type or shape, a
    CSV that is not UTF-8) becomes a :class:`SourceError` naming the file and the record:
    the record is the reader's own ``where`` (every reader sets it for the record at
    hand), read from the failing frame, so no reader needs a handler per field."""
    @functools.wraps(fn)
    def wrapper(root, *args, **kwargs):
        try:
            return fn(root, *args, **kwargs)
        except SourceError:
            raise
        except (TypeError, AttributeError, KeyError, IndexError, ValueError,
                RecursionError) as exc:
            where, tb = None, exc.__traceback__
            while tb is not None:
                if tb.tb_frame.f_code is fn.__code__:
                    loc = tb.tb_frame.f_locals
                    where = loc.get("where") or loc.get("path")
                tb = tb.tb_next
            what = ("not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else
                    f"a field has the wrong type or shape ({type(exc).__name__}: "
                    f"{str(exc)[:160]})")
            raise SourceError(f"{where or root}: {what}; fix the record or restore the file "
                              "from HD-EPIC") from None
    return wrapper


def _num(value, where: str) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise SourceError(f"{where}: not a number: {value!r}") from None
    if out != out or out in (float("inf"), float("-inf")):
        raise SourceError(f"{where}: not finite: {value!r}")
    return out


# --------------------------------------------------------------------------- durations

@_names_record
def read_durations(root: Path) -> dict[str, float]:
    """``{video_id: duration_seconds}`` from the YouTube link table (the only source)."""
    path = Path(root) / DURATIONS
    out: dict[str, float] = {}
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            for i, row in enumerate(csv.DictReader(fh), 2):
                vid = (row.get("video_id") or "").strip()
                if not vid:
                    raise SourceError(f"{path}: line {i}: field video_id empty")
                out[vid] = _num(row.get("duration"), f"{path}: line {i} ({vid}): field duration")
    except FileNotFoundError:
        raise SourceError(f"{path}: missing") from None
    return dict(sorted(out.items()))


def repair_video_id(video_id: str, known: set[str] | frozenset[str]) -> str | None:
    """Return the known video ID ``video_id`` stands for, or ``None``.

    HD-EPIC contains ``P09-2024623-154547``: a date written without the month's leading
    zero. We zero-pad a 7-digit date (``2024623`` -> ``20240623``) and accept the result
    only if it names a known video, so no ID is invented.
    """
    video_id = video_id.strip()
    if video_id in known:
        return video_id
    m = re.match(r"^(P\d\d)-(\d{4})(\d)(\d\d)-(\d{6})$", video_id)
    if m:
        fixed = f"{m.group(1)}-{m.group(2)}0{m.group(3)}{m.group(4)}-{m.group(5)}"
        if fixed in known:
            return fixed
    return None


# --------------------------------------------------------------------------- recipes

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

@dataclass(frozen=True)
class Track:
    track_id: str
    start: float
    end: float


@dataclass(frozen=True)
class Association:
    video: str
    assoc_id: str
    name: str | None               # None for unnamed "Track N" associations
    raw_name: str
    tracks: tuple[Track, ...]      # sorted by time

    @property
    def unnamed(self) -> bool:
        return self.name is None


@_names_record
def read_associations(root: Path) -> dict[str, list[Association]]:
    """``{video: [Association, ...]}``; associations and tracks sorted by first time."""
    path = Path(root) / ASSOC
    data = _load_json(root, ASSOC)
    out: dict[str, list[Association]] = {}
    for vid in sorted(data):
        assocs = []
        for aid in sorted(data[vid]):
            rec = data[vid][aid]
            where = f"{path}: video {vid}: association {aid}"
            raw = str(rec.get("name", "")).strip()
            tracks = []
            for ti, tr in enumerate(rec.get("tracks") or []):
                seg = tr.get("time_segment")
                if not isinstance(seg, list) or len(seg) != 2:
                    raise SourceError(f"{where}: track {ti}: field time_segment malformed")
                s = _num(seg[0], f"{where}: track {ti}: time_segment[0]")
                e = _num(seg[1], f"{where}: track {ti}: time_segment[1]")
                tracks.append(Track(str(tr.get("track_id", f"{aid}:{ti}")), s, max(s, e)))
            tracks.sort(key=lambda t: (t.start, t.end, t.track_id))
            name = None if (not raw or _UNNAMED_RE.match(raw)) else raw
            assocs.append(Association(vid, aid, name, raw, tuple(tracks)))
        assocs.sort(key=lambda a: ((a.tracks[0].start if a.tracks else 1e18), a.assoc_id))
        out[vid] = assocs
    return out


# --------------------------------------------------------------------------- VQA

_TIME_RE = re.compile(r"<TIME ([\d:.]+) video (\d+)>")


def parse_time(text: str, where: str = "time") -> float:
    """``HH:MM:SS.sss`` -> seconds."""
    try:
        h, m, s = text.split(":")
        return int(h) * 3600 + int(m) * 60 + float(s)
    except ValueError:
        raise SourceError(f"{where}: malformed time {text!r}") from None


@dataclass(frozen=True)
class LocationAnswer:
    """A VQA object-location answer: where an object was taken from / put on."""
    vqa_id: str
    video: str
    kind: str         # "take" (answer = location before the track) or "put" (after)
    time: float
    phrase: str
    question: str = ""    # the question's own text (for the task cards)


@dataclass(frozen=True)
class Itinerary:
    vqa_id: str
    video: str
    time: float
    moves: tuple[tuple[str, str], ...]    # ((from, to), ...)
    question: str = ""


def _answer(q: dict, where: str) -> str:
    try:
        return str(q["choices"][int(q["correct_idx"])]).strip()
    except (KeyError, IndexError, TypeError, ValueError):
        raise SourceError(f"{where}: fields choices/correct_idx malformed") from None


def _video_of(q: dict, where: str, known) -> str:
    try:
        raw = q["inputs"]["video 1"]["id"]
    except (KeyError, TypeError):
        raise SourceError(f"{where}: field inputs['video 1'].id missing") from None
    vid = repair_video_id(str(raw), known) if known else str(raw)
    if vid is None:
        raise SourceError(f"{where}: field inputs.video 1.id {raw!r} is not a known video")
    return vid


def _plain(question: str) -> str:
    """A question as a reviewer reads it: the bounding box dropped, times kept.

    >>> _plain("Where did I put the object identified by <BBOX 1 2 3 4> at <TIME 00:04:47.9 video 1>?")
    'Where did I put the object at 00:04:47.9?'
    """
    q = re.sub(r"\s*(?:identified by\s*)?<BBOX[^>]*>", "", question)
    return re.sub(r"<TIME ([0-9:.]+)[^>]*>", r"\1", q).strip()


@_names_record
def read_location_answers(root: Path, known=None) -> list[LocationAnswer]:
    path = Path(root) / VQA_LOCATION
    data = _load_json(root, VQA_LOCATION)
    out = []
    for qid in sorted(data):
        q = data[qid]
        where = f"{path}: question {qid}"
        text = str(q.get("question", ""))
        kind = "take" if text.startswith("Where did I take") else (
            "put" if text.startswith("Where did I put") else None)
        if kind is None:
            raise SourceError(f"{where}: field question has an unknown template")
        times = _TIME_RE.findall(text)
        if not times:
            raise SourceError(f"{where}: field question has no <TIME>")
        out.append(LocationAnswer(qid, _video_of(q, where, known), kind,
                                  parse_time(times[0][0], where), _answer(q, where), _plain(text)))
    return out


@_names_record
def read_itineraries(root: Path, known=None) -> list[Itinerary]:
    path = Path(root) / VQA_ITINERARY
    data = _load_json(root, VQA_ITINERARY)
    out = []
    for qid in sorted(data):
        q = data[qid]
        where = f"{path}: question {qid}"
        times = _TIME_RE.findall(str(q.get("question", "")))
        if not times:
            raise SourceError(f"{where}: field question has no <TIME>")
        moves = []
        for part in _answer(q, where).split(", then "):
            m = re.match(r"^from (.+?) to (.+)$", part.strip())
            if not m:
                raise SourceError(f"{where}: answer part {part!r} is not 'from X to Y'")
            moves.append((m.group(1).strip(), m.group(2).strip()))
        out.append(Itinerary(qid, _video_of(q, where, known), parse_time(times[0][0], where),
                             tuple(moves), _plain(str(q.get("question", "")))))
    return out


@_names_record
def read_fixture_questions(root: Path, known=None) -> dict[str, list[str]]:
    """``{video: [landmark fixture name, ...]}`` from the fixture-location questions."""
    path = Path(root) / VQA_FIXTURE
    data = _load_json(root, VQA_FIXTURE)
    out: dict[str, set[str]] = {}
    for qid in sorted(data):
        q = data[qid]
        where = f"{path}: question {qid}"
        m = re.search(r"where is the (.+?) located\?", str(q.get("question", "")))
        if not m:
            continue
        out.setdefault(_video_of(q, where, known), set()).add(m.group(1).strip())
    return {k: sorted(v) for k, v in sorted(out.items())}


@dataclass(frozen=True)
class Snippet:
    """A fine-grained recognition question: one timed action ``<verb noun>`` of a video
    (``action``, e.g. ``"tap teaspoon"``) with how or why it was done (``answer``)."""
    vqa_id: str
    file: str          # the file's name (``fine_grained_how_recognition.json``)
    video: str
    start: float       # video time
    end: float
    action: str
    question: str
    answer: str


_ACTION_RE = re.compile(r"<([^<>]+)>")


@_names_record
def read_snippets(root: Path, known=None) -> list[Snippet]:
    """Every fine-grained snippet of ``VQA_FINE``, sorted by video and start time."""
    out = []
    for rel in VQA_FINE:
        path = Path(root) / rel
        data = _load_json(root, rel)
        for qid in sorted(data):
            q = data[qid]
            where = f"{path}: question {qid}"
            m = _ACTION_RE.search(str(q.get("question", "")))
            if not m:
                raise SourceError(f"{where}: field question names no <action>")
            try:
                span = q["inputs"]["video 1"]
                t0, t1 = span["start_time"], span["end_time"]
            except (KeyError, TypeError):
                raise SourceError(f"{where}: field inputs['video 1'].start_time/end_time missing") from None
            start, end = parse_time(str(t0), where), parse_time(str(t1), where)
            if end < start:
                raise SourceError(f"{where}: end_time {t1} is before start_time {t0}")
            out.append(Snippet(qid, Path(rel).name, _video_of(q, where, known), start, end,
                               re.sub(r"\s+", " ", m.group(1).strip().lower()),
                               str(q.get("question", "")).strip(), _answer(q, where)))
    return sorted(out, key=lambda s: (s.video, s.start, s.end, s.vqa_id))


# --------------------------------------------------------------------------- classes

@dataclass(frozen=True)
class ClassTable:
    """Noun or verb classes: ``key -> category`` and ``instance -> key`` (first class wins)."""
    category: dict
    instance_to_key: dict
    instances: dict            # key -> tuple of instances


@_names_record
def read_classes(root: Path, rel: str) -> ClassTable:
    path = Path(root) / rel
    category, inst, instances = {}, {}, {}
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
    except FileNotFoundError:
        raise SourceError(f"{path}: missing") from None
    # Sorted by numeric class id: lower ids are the more frequent classes, so an instance
    # listed under several classes resolves to the most common one (deterministically).
    for line, row in sorted(enumerate(rows, 2), key=lambda r: int(r[1].get("id") or 0)):
        key = (row.get("key") or "").strip()
        if not key:
            raise SourceError(f"{path}: line {line}: field key empty")
        category[key] = (row.get("category") or "").strip()
        try:
            items = ast.literal_eval(row.get("instances") or "[]")
        except (ValueError, SyntaxError):
            raise SourceError(f"{path}: line {line} ({key}): field instances unparseable") from None
        instances[key] = tuple(str(i) for i in items)
        for i in items:
            inst.setdefault(str(i).strip().lower(), key)
        inst.setdefault(key.lower(), key)
    return ClassTable(category, inst, instances)


def read_noun_classes(root: Path) -> ClassTable:
    return read_classes(root, NOUN_CLASSES)


def read_verb_classes(root: Path) -> ClassTable:
    return read_classes(root, VERB_CLASSES)

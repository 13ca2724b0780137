"""Readers of object movements and their VQA answers (paper section 3 and appendix A.1:
object references): the tracked associations
(assoc_info.json), object-location answers, itineraries and fixture-location questions."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .source import (_load_json, _names_record, _num, _UNNAMED_RE, ASSOC, repair_video_id,
                     SourceError, VQA_FIXTURE, VQA_ITINERARY, VQA_LOCATION)


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

"""Reader of the fine-grained how-recognition questions (paper section 3: source activity
evidence): timed snippets of handling."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .source import _load_json, _names_record, SourceError, VQA_FINE
from .movements import _answer, _video_of, parse_time


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

"""The HD-EPIC source (paper section 3 and appendix A.1: the annotations compiled): file
names, verification against SHA256SUMS, safe reading, the shared error and time tolerances,
video IDs and durations."""
from __future__ import annotations

import csv
import functools
import hashlib
import json
import os
import re
import stat
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

"""Readers for the raw HD-EPIC annotation files (paper section 3 and appendix A.1: the
source annotations the cohort is compiled from).

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

The readers live in one module per source family: :mod:`.source` (verification, safe
reading, time tolerances), :mod:`.recipes`, :mod:`.movements` (tracks and VQA answers),
:mod:`.snippets`, :mod:`.classes`; every name is importable from ``readers`` itself.
"""
from __future__ import annotations

from .source import (  # noqa: F401
    RECIPES,
    ACTIVITIES_DIR,
    ASSOC,
    DURATIONS,
    VQA_LOCATION,
    VQA_ITINERARY,
    VQA_FIXTURE,
    VQA_FINE,
    NOUN_CLASSES,
    VERB_CLASSES,
    SUMS,
    FRAME,
    TWO_FRAMES,
    _VIDEO_RE,
    _UNNAMED_RE,
    SourceError,
    verify_source,
    MAX_SOURCE_FILE,
    _read_source,
    _only_regular_files,
    _load_json,
    _names_record,
    _num,
    read_durations,
    repair_video_id,
)
from .recipes import (  # noqa: F401
    Span,
    IngredientEvent,
    StepSegment,
    Capture,
    Recipe,
    _span,
    read_recipes,
    Activity,
    read_activities,
)
from .movements import (  # noqa: F401
    Track,
    Association,
    read_associations,
    _TIME_RE,
    parse_time,
    LocationAnswer,
    Itinerary,
    _answer,
    _video_of,
    _plain,
    read_location_answers,
    read_itineraries,
    read_fixture_questions,
)
from .snippets import (  # noqa: F401
    Snippet,
    _ACTION_RE,
    read_snippets,
)
from .classes import (  # noqa: F401
    ClassTable,
    read_classes,
    read_noun_classes,
    read_verb_classes,
)

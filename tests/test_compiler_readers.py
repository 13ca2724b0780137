"""Readers survive each quirk of the HD-EPIC files (data README, "Quirks")."""
import os
import shutil
from pathlib import Path

import pytest

from analysis.compiler import readers as r

SOURCE = Path(os.environ.get("E2W_HDEPIC", Path(__file__).resolve().parents[2] / "shared" / "hd-epic"))
needs_source = pytest.mark.skipif(not (SOURCE / "SHA256SUMS").is_file(),
                                  reason=f"HD-EPIC source files absent at {SOURCE} (set E2W_HDEPIC)")


@pytest.fixture(scope="module")
def durations():
    return r.read_durations(SOURCE)


@pytest.fixture(scope="module")
def activities(durations):
    quirks = []
    acts = r.read_activities(SOURCE, durations, quirks)
    return acts, quirks


def test_repair_video_id_pads_month_only_when_known():
    known = {"P09-20240623-154547"}
    assert r.repair_video_id("P09-2024623-154547", known) == "P09-20240623-154547"
    assert r.repair_video_id("P09-2024623-154547", set()) is None
    assert r.repair_video_id("P09-20240623-154547", known) == "P09-20240623-154547"


@needs_source
def test_literal_end_uses_video_duration(activities, durations):
    acts, _ = activities
    ends = [a for a in acts if a.end_from_duration]
    assert len(ends) == 148
    row = [a for a in acts if a.video == "P01-20240202-110250" and a.start == 319.0][0]
    assert row.end_from_duration and row.end == durations["P01-20240202-110250"] == 396.266667


@needs_source
def test_multi_recipe_id_is_split(activities):
    acts, _ = activities
    row = [a for a in acts if a.video == "P01-20240204-160230" and a.start == 55.0][0]
    assert row.recipe_ids == ("P01_R08", "P01_R07")


@needs_source
def test_mistyped_video_id_is_repaired(activities):
    acts, _ = activities
    vids = {a.video for a in acts}
    assert "P09-2024623-154547" not in vids
    rows = [a for a in acts if a.video == "P09-20240623-154547" and a.label == "Cleanup"]
    assert len(rows) == 1 and rows[0].start == 20.0


@needs_source
def test_reversed_activity_rows_are_dropped_and_reported(activities):
    acts, quirks = activities
    assert all(a.end >= a.start for a in acts)
    assert any("P04_recipe_timestamps.csv:75" in q for q in quirks)
    assert len(acts) == 1490 - len(quirks)


@needs_source
def test_events_under_wrong_video_are_dropped():
    recipes = r.read_recipes(SOURCE)
    assert sum(len(x.quirks) for x in recipes.values()) == 5
    squash = recipes["P02_R03"]
    assert any("P02-20240210-195833" in q for q in squash.quirks)
    for cap in squash.captures:
        assert all(e.span.video in cap.videos for e in cap.events)
    # The worked example's add event survives.
    cap0 = squash.captures[0]
    adds = [e for e in cap0.events if e.kind == "add"]
    assert [(e.name, e.span.start, e.span.end) for e in adds] == [
        ("concentrated fruit squash", 894.043, 898.059)]


@needs_source
def test_unnamed_tracks_are_flagged_not_named():
    assocs = r.read_associations(SOURCE)
    flat = [a for v in assocs.values() for a in v]
    unnamed = [a for a in flat if a.unnamed]
    assert len(unnamed) == 1318      # 1,313 "Track N" (+ "(skipped)") and 5 "new track N"
    assert all(a.name is None and "rack" in a.raw_name for a in unnamed)
    squash = {a.name: a for a in assocs["P02-20240209-194141"] if a.name}
    tr = squash["bottle of squash"].tracks
    assert any(abs(t.start - 891.9) < 0.1 and abs(t.end - 901.2) < 0.1 for t in tr)


@needs_source
def test_vqa_answers_parse_both_templates(durations):
    answers = r.read_location_answers(SOURCE, set(durations))
    kinds = sorted({a.kind for a in answers})
    assert kinds == ["put", "take"] and len(answers) == 500
    first = [a for a in answers if a.vqa_id == "3d_perception_object_location_0"][0]
    assert first.phrase == "counter left from sink" and abs(first.time - 287.9) < 1e-9
    its = r.read_itineraries(SOURCE, set(durations))
    it1 = [i for i in its if i.vqa_id == "object_motion_object_movement_itinerary_1"][0]
    assert it1.moves == (("sink", "counter top right of dishwasher"),)


@needs_source
def test_verify_source_names_altered_file(tmp_path):
    copy = tmp_path / "hd"
    shutil.copytree(SOURCE, copy)
    os.chmod(copy / "youtube-links", 0o755)
    target = copy / "youtube-links" / "HD_EPIC_YouTube_URLs.csv"
    os.chmod(target, 0o644)
    target.write_text(target.read_text() + "\n")
    with pytest.raises(r.SourceError, match="HD_EPIC_YouTube_URLs.csv.*altered"):
        r.verify_source(copy)
    target.unlink()
    with pytest.raises(r.SourceError, match="HD_EPIC_YouTube_URLs.csv.*missing"):
        r.verify_source(copy)


def test_verify_source_missing_directory(tmp_path):
    with pytest.raises(r.SourceError, match="does not exist"):
        r.verify_source(tmp_path / "nope")

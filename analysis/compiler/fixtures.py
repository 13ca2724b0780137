"""Per-scene fixture sets (paper section 3: the fixtures of the typed world graph) with
stable IDs from the differently phrased VQA answers, and the curated default place of an
item no source places."""
from __future__ import annotations

from .normalise import fixture_head, fixture_id
from .readers import Itinerary, LocationAnswer
from .vocabulary import Vocabulary


def scene_fixtures(scene: str, answers: list[LocationAnswer], choices: dict[str, list[str]],
                   itineraries: list[Itinerary], landmarks: dict[str, list[str]],
                   step_texts: dict[str, str], vocab: Vocabulary) -> list[dict]:
    """Fixture records ``{id, type, phrases, provenance}`` of one scene, sorted by ID.

    Sources (all observed): object-location answers and their choices (the choices of a
    question are fixtures of the same kitchen), itinerary chains, landmark names of the
    fixture-location questions, and appliances named in the scene's recipe step text.
    """
    found: dict[str, dict] = {}

    def add(phrase: str, ref_key: str, ref: str, ftype: str | None = None, fid: str | None = None):
        fid = fid or fixture_id(phrase)
        if not fid:
            return
        rec = found.setdefault(fid, {"phrases": set(), "refs": set(), "ref_key": ref_key, "type": ftype})
        rec["phrases"].add(phrase.strip())
        rec["refs"].add(ref)
        if ftype and not rec["type"]:
            rec["type"] = ftype

    for a in answers:
        if a.video.startswith(scene + "-"):
            add(a.phrase, "vqa", a.vqa_id)
            for c in choices.get(a.vqa_id, []):
                add(c, "vqa", a.vqa_id)
    for it in itineraries:
        if it.video.startswith(scene + "-"):
            for src, dst in it.moves:
                add(src, "vqa", it.vqa_id)
                add(dst, "vqa", it.vqa_id)
    for video in sorted(landmarks):
        if video.startswith(scene + "-"):
            for name in landmarks[video]:
                add(name, "video", video)
    for step_id in sorted(step_texts):
        if not step_id.startswith(scene + "_"):
            continue
        low = step_texts[step_id].lower()
        for phrase, (fid, ftype) in sorted(vocab.step_fixtures.items()):
            if phrase in low and (fid in found or ftype in ("coffee_machine", "toaster")):
                # only appliances that are new to the scene's VQA evidence are added from
                # text (coffee machine, toaster); an oven/hob named in text must also be a
                # VQA fixture, so that step text never invents a second copy of it.
                add(phrase, "step", step_id, ftype, fid)

    out = []
    for fid in sorted(found):
        rec = found[fid]
        ftype, rule = (rec["type"], "step_fixtures") if rec["type"] else vocab.fixture_type(
            fixture_head(sorted(rec["phrases"])[0]))
        refs = sorted(rec["refs"])
        out.append({
            "id": fid, "type": ftype,
            "phrases": sorted(rec["phrases"]),
            "provenance": {"source": "observed",
                           "refs": {rec["ref_key"]: refs[:5], "n_sources": len(refs),
                                    "typed_by": rule}},
        })
    return out


def work_counter(fixtures: list[dict], answers: list[LocationAnswer], scene: str) -> str:
    """The scene's main work surface: the counter most often given as a VQA answer."""
    counts: dict[str, int] = {}
    types = {f["id"]: f["type"] for f in fixtures}
    for a in answers:
        if a.video.startswith(scene + "-"):
            fid = fixture_id(a.phrase)
            if types.get(fid) == "counter":
                counts[fid] = counts.get(fid, 0) + 1
    if counts:
        return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
    counters = sorted(f["id"] for f in fixtures if f["type"] == "counter")
    if counters:
        return counters[0]
    return sorted(f["id"] for f in fixtures)[0]


def default_location(leaf: str, fixtures: list[dict], work_counter: str, vocab: Vocabulary):
    """The curated place of an item of type ``leaf`` no source places (vocabulary
    ``default_locations``): the first fixture of the first listed kind the scene has, the
    work counter for ``counter`` or when none fits; with the rule that decided it."""
    kinds, rule = vocab.default_location_kinds(leaf)
    for kind in kinds:
        if kind == "counter":
            return work_counter, rule
        cands = sorted(f["id"] for f in fixtures if vocab.is_a(f["type"], kind))
        if cands:
            return cands[0], rule
    return work_counter, rule + ":work_counter"

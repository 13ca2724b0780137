"""Instance-level grounding (paper section 3: entity bindings distinguish operations;
appendix A.1): every ingredient add and every step's key action is bound to
specific tracked objects from the evidence, or it is not compiled.

Evidence, and nothing else:

* the times: an object track *overlaps* an add event or a step window (the step's timed
  segment together with the prep segments of the same step in the same video); a vessel
  is the one the event happens in: tracked during the add or the step segment itself, or
  put down in the ``LOOKBACK`` s before it and not picked up again before it ends
  (:func:`.grounder.vessel_at`); the food a step cuts, peels, kneads or grates and the
  kettle it switches on are bound by the same rule over the step segment
  (:func:`.steps.named_at`);
* the names: a track's annotated name shares a content word with the ingredient name, or
  its own head noun is the vessel noun the step text names ("Pour milk into the
  **frother**" -> the track "milk frother base"; a "bowl of flour" is a bowl);
* uniqueness: the one instance that qualifies; two qualifying instances drop the event.

No binding is ever decided by recency or by sorted ID: where the evidence leaves more
than one candidate (or none), the event is dropped with the reason, and inconsistent
source labels (an add whose time matches another ingredient's track; steps of one capture
overlapping the same add) are dropped as source checks (kind ``add``, reason
``source check <check>: ...``, one of the closed set :data:`ADD_DROP_REASONS`).

>>> words("Add the frothed milk into the coffee")
['add', 'frothed', 'milk', 'coffee']
"""
from __future__ import annotations

from .adds import ADD_DROP_REASONS, add_drop_class, ground_adds
from .grounder import GroundingContext, drop
from .open_adds import step_add_vessels
from .rows import ground_rows
from .snippets import ground_snippets
from .steps import ground_steps
from .text import (COLOUR_WORDS, CONTAINER_WORDS, EXCLUDED_TARGETS, LOOKBACK, MARGIN,
    PART_WORDS, ROW_VERBS, STIR_TOOLS, STOP, SUBSTANCE_WORDS, TEXT_VESSEL_RULE, UNTRACKED_RULE, WHERE_IT_STANDS,
    all_verbs, mixes_its_adds,
    ingredient_entity, ingredient_type, key_verb, name_content, name_head, overlaps, row_verbs,
    row_words, strip_postposed, target_groups, target_phrases, title_of, words)
from .windows import Grounding, Planned, StepWindow, step_windows

__all__ = ["ADD_DROP_REASONS", "COLOUR_WORDS", "CONTAINER_WORDS", "EXCLUDED_TARGETS", "Grounding", "GroundingContext",
           "LOOKBACK", "MARGIN", "PART_WORDS", "Planned", "ROW_VERBS", "STIR_TOOLS", "STOP",
           "SUBSTANCE_WORDS", "StepWindow", "TEXT_VESSEL_RULE", "UNTRACKED_RULE", "VESSEL_ACTIONS", "WHERE_IT_STANDS", "all_verbs", "ground", "add_drop_class",
           "ground_snippets", "ingredient_entity", "ingredient_type", "key_verb",
           "name_content", "name_head", "overlaps", "row_verbs", "row_words", "step_vessels", "step_windows",
           "strip_postposed", "target_groups", "target_phrases", "title_of", "words"]


def ground(world, recipes, vocab, activities=(), snippets=()) -> Grounding:
    """Ground one episode. An add whose target the evidence leaves open is bound, in a
    second pass, to its step's vessel (:func:`step_vessels`) when the first pass found
    one, or to the one vessel its step's other adds went into when its text names that
    vessel's noun (:func:`~.open_adds.step_adds_vessel`), or the recipe's running vessel
    from its earlier steps' adds (:func:`~.running_vessel.running_vessel`), or the recipe's
    named vessel that brackets it (:func:`~.bracketing_vessel.bracketing_vessel`, second pass
    only: the first pass's bindings stay those of the other rules): the pass is repeated
    whole, so every rule sees the same bindings."""
    g = _ground_once(world, recipes, vocab, activities, snippets, {})
    vessels = step_vessels(g.out.planned)
    adds = step_add_vessels(g.out.planned)
    if any(k in vessels for k in g.open_adds) or any(k in adds for k in g.named_open) or (
            g.running_open and any(k[0] == r for k in adds for r, _, _ in g.running_open)) or g.bracket_open:
        g = _ground_once(world, recipes, vocab, activities, snippets, vessels, adds)
    return g.out


#: operations whose vessel argument is where the step's food goes (role ``c`` or ``dst``)
VESSEL_ACTIONS = frozenset({"stir", "whisk", "add_ingredient", "pour", "empty_into", "grate",
                            "break_into"})


def step_vessels(planned) -> dict:
    """``(recipe, step, video) -> (vessel, evidence, [(action, time), ...])`` for each
    recipe step whose bound operations (its adds and its key actions, never an activity
    row's or a snippet's) all act on one vessel of that video, and at least one of them
    says so by itself: an add (its add row observes where the food went) or a key action
    whose vessel the step text names. A stir bound only as "the only vessel tracked during
    the segment" does not make a step vessel: the food may go into an untracked pan on
    the hob while a bowl is stirred (P04_R06_S06: lemon juice and a stir of ``bowl1``),
    unless the step text mixes every food it adds and cooks nothing (:func:`mixes_its_adds`:
    "Mix salad ingredients with oil and vinegar": the salad is in the bowl stirred)."""
    seen: dict = {}
    for p in planned:
        if p.kind not in ("add", "step") or p.step is None or p.step.row or p.action not in VESSEL_ACTIONS:
            continue
        role = "dst" if "dst" in p.roles else "c"
        ev = p.evidence.get(role) or {}
        strong = p.kind == "add" or str(ev.get("how", "")).startswith("step text names") or (
            p.action in ("stir", "whisk") and mixes_its_adds(p.step.text))
        key = (p.step.recipe, p.step.step, p.step.video)
        seen.setdefault(key, []).append((p.time, p.roles[role], ev, p.action, strong))
    out = {}
    for key, ops in seen.items():
        ops.sort(key=lambda o: (o[0], o[3]))
        strong = [o for o in ops if o[4]]
        if len({o[1] for o in ops}) == 1 and strong:
            out[key] = (strong[0][1], strong[0][2], [(o[3], o[0]) for o in ops])
    return out


def _ground_once(world, recipes, vocab, activities, snippets, vessels, adds=None) -> GroundingContext:
    g = GroundingContext(world, recipes, vocab)
    g.step_vessels = vessels
    g.step_add_vessels = adds or {}
    g.second_pass = adds is not None
    g.activities = list(activities)     # an add's activity row corroborates its vessel
    ground_adds(g)
    add_steps = {(p.step.recipe, p.step.step, p.step.video, p.step.start)
                 for p in g.out.planned if p.step is not None}
    ground_steps(g, add_steps)
    ground_rows(g, activities)
    ground_snippets(g, list(snippets))
    for a in world.assocs_unnamed:
        off = world.offsets.get(a.video, 0.0)
        why = ("unnamed track (annotators gave no object name)" if a.unnamed else
               "vague name: the annotation does not say what the object is")
        for t in a.tracks:
            drop(g, "track", f"track {t.track_id} ({a.raw_name})", why,
                   t.start + off, file="assoc_info.json", association=a.assoc_id, track=t.track_id, video=a.video)
    g.out.planned.sort(key=lambda p: (p.time, p.kind, p.action, p.what))
    return g

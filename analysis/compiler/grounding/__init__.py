"""Instance-level grounding: every ingredient add and every step's key action is bound to
specific tracked objects from the evidence, or it is not compiled.

Evidence, and nothing else:

* the times: an object track *overlaps* an add event or a step window (the step's timed
  segment together with the prep segments of the same step in the same video); a vessel
  is the one the event happens in: tracked during the add or the step segment itself, or
  put down in the ``LOOKBACK`` s before it and not picked up again before it ends
  (:meth:`Grounder.vessel_at`); the food a step cuts, peels, kneads or grates and the
  kettle it switches on are bound by the same rule over the step segment
  (:meth:`Grounder.named_at`);
* the names: a track's annotated name shares a content word with the ingredient name, or
  its own head noun is the vessel noun the step text names ("Pour milk into the
  **frother**" -> the track "milk frother base"; a "bowl of flour" is a bowl);
* uniqueness: the one instance that qualifies; two qualifying instances drop the event.

No binding is ever decided by recency or by sorted ID: where the evidence leaves more
than one candidate (or none), the event is dropped with the reason, and inconsistent
source labels (an add whose time matches another ingredient's track; steps of one capture
overlapping the same add) are reported as source checks.

>>> words("Add the frothed milk into the coffee")
['add', 'frothed', 'milk', 'coffee']
"""
from __future__ import annotations

from .adds import AddsMixin
from .grounder import GrounderBase
from .rows import RowsMixin
from .snippets import ground_snippets
from .steps import StepsMixin
from .text import (COLOUR_WORDS, CONTAINER_WORDS, EXCLUDED_TARGETS, LOOKBACK, MARGIN,
    PART_WORDS, ROW_VERBS, STIR_TOOLS, STOP, SUBSTANCE_WORDS, UNTRACKED_RULE, all_verbs,
    ingredient_entity, ingredient_type, key_verb, name_content, name_head, overlaps, row_verbs,
    row_words, target_groups, target_phrases, title_of, words)
from .windows import Grounding, Planned, StepWindow, step_windows

__all__ = ["COLOUR_WORDS", "CONTAINER_WORDS", "EXCLUDED_TARGETS", "Grounder", "Grounding",
           "LOOKBACK", "MARGIN", "PART_WORDS", "Planned", "ROW_VERBS", "STIR_TOOLS", "STOP",
           "SUBSTANCE_WORDS", "StepWindow", "UNTRACKED_RULE", "all_verbs", "ground",
           "ground_snippets", "ingredient_entity", "ingredient_type", "key_verb",
           "name_content", "name_head", "overlaps", "row_verbs", "row_words", "step_windows",
           "target_groups", "target_phrases", "title_of", "words"]


class Grounder(AddsMixin, StepsMixin, RowsMixin, GrounderBase):
    """Binds one episode's source events to its tracked objects (one concern per mixin:
    :mod:`.adds`, :mod:`.steps`, :mod:`.rows`; the fine-grained snippets in :mod:`.snippets`)."""


def ground(world, recipes, vocab, activities=(), snippets=()) -> Grounding:
    g = Grounder(world, recipes, vocab)
    g.ground_adds()
    add_steps = {(p.step.recipe, p.step.step, p.step.video, p.step.start)
                 for p in g.out.planned if p.step is not None}
    g.ground_steps(add_steps)
    g.ground_rows(activities)
    ground_snippets(g, list(snippets))
    for a in world.assocs_unnamed:
        off = world.offsets.get(a.video, 0.0)
        why = ("unnamed track (annotators gave no object name)" if a.unnamed else
               "vague name: the annotation does not say what the object is")
        for t in a.tracks:
            g.drop("track", f"track {t.track_id} ({a.raw_name})", why,
                   t.start + off, file="assoc_info.json", association=a.assoc_id, track=t.track_id, video=a.video)
    g.out.planned.sort(key=lambda p: (p.time, p.kind, p.action, p.what))
    return g.out

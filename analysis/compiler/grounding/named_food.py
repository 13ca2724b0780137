"""Grounding (paper section 3, entity bindings): the tracked food an untracked add names
under another name ("sourdough baguette" for the tracked "baguette"), so that an add no
track overlaps never creates a second, curated entity of an object the world already has
(issue 34: one object placed twice, a task resting on the duplicate; docs/compiler.md,
Adds)."""
from __future__ import annotations

from .grounder import is_food, local
from .text import PART_WORDS, _spelling, words

#: words of a track name that name a part of a food, the food named before them
#: ("twigs of coriander leaves" is coriander): the text's part words and leaves
FOOD_PART_WORDS = PART_WORDS | {"leave", "leaf", "sprig", "twig"}


def names_food(ws: list, head: str) -> bool:
    """Whether a track name (its words, singular) names the food whose head noun is
    ``head``: its own head is that noun, singular or plural alike ("red onion" for "red
    onions", "chilly" for "chilli"), or its head is a part word and the food is named
    before it ("coriander leaves" for "coriander"; a "garlic clove" is garlic, never cloves).

    >>> [names_food(words(n), "onion") for n in ("red onion", "half of onion", "onion bag")]
    [True, True, False]
    >>> names_food(words("few twigs of coriander leaves"), "coriander"), names_food(words("ginger root"), "ginger")
    (True, False)
    >>> names_food(words("garlic clove"), "clove"), names_food(words("garlic clove"), "garlic")
    (False, True)
    """
    if not ws or not head:
        return False
    h = _spelling(head)
    if ws[-1] in FOOD_PART_WORDS:
        # the part is of the food named before it: a "garlic clove" is no (whole) clove
        return h in {_spelling(w) for w in ws[:-1]}
    return _spelling(ws[-1]) == h


def tracked_food_named(ctx, ev, sub: str, t0: float) -> tuple[str, str | None]:
    """``(entity, refusal)`` for an add no track overlaps, of ingredient entity ``sub``:
    the one tracked food (no fixture) the ingredient's head noun names, or ``sub`` itself
    when the world tracks it under its own name, which the add then binds (it goes in from
    wherever the world has it then, never from a place curated anew); ``sub`` itself when
    no tracked food is named (the curated entity stands alone). One rule for both (an
    ingredient entity ``garlic`` tracked under its own name is one candidate among the
    tracked "garlic clove"s, never the answer by its id alone). A refusal (the add is not
    compiled) when several tracked foods are named (which went in is not observed), when
    the one named is tracked again after the add (what went in is not the tracked one),
    when two of its tracks overlap under another name (it is several objects at once), or when an earlier add
    already put it in."""
    if sub in ctx.w.objects and (sub in ctx.w.fixture_ids or not is_food(ctx, sub)):
        return sub, f"an object {sub} is already in the world and is no food: not compiled"
    head = (words(ev.name) or [""])[-1]
    named = sorted({e for e, wss in ctx.name_words.items() if e not in ctx.w.fixture_ids and is_food(ctx, e)
                    and any(names_food(ws, head) for ws in wss)} | ({sub} & set(ctx.w.objects)))
    if not named:
        return sub, None
    dup = "a curated entity of it would place one object twice: not compiled"
    if len(named) > 1:
        return sub, (f"{ev.name!r} names {len(named)} tracked foods ({', '.join(named)}): which one went "
                     f"in is not observed, and {dup}")
    e = named[0]
    trs = sorted(ctx.tracks_of.get(e, []), key=lambda tr: tr.start)
    again = [tr for tr in trs if tr.start >= t0 - 1e-6]
    if again:
        return sub, (f"{ev.name!r} names the tracked {e}, tracked after the add "
                     f"({local(ctx, again[0].assoc.video, again[0].start):.2f} s in {again[0].assoc.video}): "
                     f"what went in may not be the tracked one, and {dup}")
    # under another name only: a food tracked under the ingredient's own name is that food
    # whole, its overlapping tracks its pieces (P08's celery, a 0.4 s track inside another
    # while it is cut, all of it put in the salad bowl: the reviewer traced it sound)
    if e != sub and any(a.end > b.start and a.assoc.video == b.assoc.video for a, b in zip(trs, trs[1:])):
        return sub, f"{ev.name!r} names the tracked {e}, two of whose tracks overlap (several objects), and {dup}"
    if any(p.hold == e and p.kind == "add" for p in ctx.out.planned):
        return sub, f"{ev.name!r} names the tracked {e}, which an earlier add already put in, and {dup}"
    return e, None

"""Grounding (paper section 3, entity bindings; issue 34): what a tracked object named for
an ingredient is to its add: an instance put in (the garlic, each spinach handful), or the
source the ingredient comes out of (a bottle, the "bowl of shredded lettuce", the lemon half a
juice is squeezed from, the peanut-butter jar a spoon scoops from), never both.

>>> juiced_from("lemon juice"), juiced_from("juice of a lime"), juiced_from("orange")
('lemon', 'lime', None)
"""
from __future__ import annotations

import re

from .grounder import is_a, is_food, local, overlapping
from .text import CONTAINER_WORDS, COVER_WORDS, _spelling, words

#: drop reason prefix (``ADD_DROP_REASONS``) of an add whose tracked object is the
#: ingredient's source, not what goes in, and no container the executor pours from
SOURCE_NOT_ADDED = "the tracked object is the ingredient's source"

#: tool types that take a spread out of its jar (a spoon scooping, a knife spreading)
SCOOPING_TOOLS = ("spoon", "knife")
#: foods that go in whole or in pieces, never scooped out of a jar (a spoon stirring while
#: the onion goes in does not make the onion a container)
WHOLE_FOODS = ("vegetable", "fruit", "meat", "fish")


def is_cover(ctx, ent: str) -> bool:
    """A lid or cap ("lid jar2", "cap pepper mill"): it closes a container, holds no food;
    a lid it comes *with* does not make a container one ("jar of spices with green lid")."""
    return is_a(ctx, ent, "lid") or any(set(ws) & COVER_WORDS for ws in main_words(ctx, ent))


def main_words(ctx, ent: str) -> list[list[str]]:
    """The words of each name of ``ent`` before a "with" clause, which describes the
    object, not what it is or holds ("jar of spices with green lid": jar, spices)."""
    return [words(re.split(r"\bwith\b", n.lower())[0]) for n in ctx.w.names.get(ent, [])]


def juiced_from(name: str) -> str | None:
    """The fruit an ingredient named "<X> juice" or "juice of <X>" is squeezed from (its
    head word), else ``None``; "juice" alone names no fruit.

    >>> juiced_from("freshly squeezed lemon juice"), juiced_from("juice")
    ('lemon', None)
    """
    ws = words(name)
    if "juice" not in ws or len(ws) < 2:
        return None
    return ws[-1] if ws[0] == "juice" else (ws[ws.index("juice") - 1] if ws.index("juice") else None)


def holds_named(ctx, ent: str, typ: str, ing_words: set) -> bool:
    """A vessel named "<vessel> of <content>" for the ingredient holds it (issue 34:
    every food add compiles): the "bowl of shredded lettuce" is the lettuce's source,
    emptied into the vessel the add goes to, not a food itself."""
    return ctx.vocab.is_a(typ, "vessel") and bool(
        ctx.contents.get(ent, set()) & {_spelling(w) for w in ing_words})


def instances_added(ctx, mine, t0: float, t1: float) -> list[tuple]:
    """The instances of an ingredient that one add row puts in, when several are
    tracked during it: every food instance (or, with no food instance, every
    container of it) with one track that overlaps the add for at least half of the
    shorter of the two (track or add). A container named for the ingredient is the
    source of its food instances ("packet of eggs" beside egg1..egg5), and an instance
    handled mostly outside the add ("butter" put down 3 s into a 23 s add) is not one
    of those it puts in. The tracks of one container are one candidate (issue 34: the
    flour bag put down and picked up again while the flour goes in); it is poured from in
    the one that holds it longest during the add. A food instance handled in several
    tracks during the add is not one of them (which track put it in is not decided).
    ``[(instance, its track), ...]`` in the order they are handled."""
    def inside(tr):
        return min(tr.end, t1) - max(tr.start, t0)

    def share(tr):
        return inside(tr) >= 0.5 * min(tr.end - tr.start, t1 - t0) and inside(tr) > 0
    foods = {tr.entity for tr in mine if is_food(ctx, tr.entity) and not is_a(ctx, tr.entity, "container")}
    pool = [tr for tr in mine if (tr.entity in foods) == bool(foods)]
    out = []
    for ent in sorted({tr.entity for tr in pool}):
        trs = [tr for tr in pool if tr.entity == ent and share(tr)]
        if len(trs) == 1 or (trs and not foods):
            out.append((ent, sorted(trs, key=lambda x: (-inside(x), x.start))[0]))
    return sorted(out, key=lambda x: (x[1].start, x[0]))


def scooped_from(ctx, ent: str, tr, t0: float, t1: float) -> str | None:
    """Why ``ent`` (held in ``tr`` during the add ``[t0, t1]``) is the container a spread
    is taken out of, or ``None``: its own lid ("lid of peanut butter": a cover whose name
    carries every word of ``ent``'s) is handled during its track, or, held through the
    whole add, a spoon or knife is handled inside its track during the add (scooping)."""
    mine = set(ctx.tokens.get(ent, ()))
    for x in overlapping(ctx, tr.start, tr.end, 0.0):
        if x.entity != ent and is_cover(ctx, x.entity) and mine and mine <= ctx.tokens.get(x.entity, set()):
            v = x.assoc.video
            return f"its lid {x.entity} is handled {local(ctx, v, x.start):.2f}-{local(ctx, v, x.end):.2f} s"
    if tr.start <= t0 + 1e-6 and tr.end >= t1 - 1e-6:
        for x in overlapping(ctx, t0, t1, 0.0):
            if any(is_a(ctx, x.entity, k) for k in SCOOPING_TOOLS) and tr.start <= x.start and x.end <= tr.end + 1.0:
                v = x.assoc.video
                return (f"held through the add while {x.entity} (a {ctx.w.objects[x.entity]}) is handled "
                        f"{local(ctx, v, x.start):.2f}-{local(ctx, v, x.end):.2f} s: scooped from")
    return None


def source_role(ctx, ent: str, typ: str, name: str, ing_words: set, subst: bool, tr,
                t0: float, t1: float) -> tuple[bool, str | None]:
    """``(container, refusal)``: whether the tracked ``ent`` (type ``typ``, held in ``tr``
    over the add ``[t0, t1]`` of the ingredient ``name``) is the ingredient's container
    (its content is poured or emptied into the vessel) rather than what goes in; with
    ``refusal`` (a drop reason starting :data:`SOURCE_NOT_ADDED`) the add is not compiled.

    * A container by its name or type: a container word ("milk bottle"), a sealable or
      electric container, a vessel holding a substance, a "<vessel> of <ingredient>".
    * An ingredient named "<X> juice" is squeezed from the tracked X ("second half of
      lemon"): X is its source, never the thing added.
    * An object named for a spread whose lid is handled, or that a spoon or knife scoops
      from during the add (:func:`scooped_from`), is its container (the peanut-butter jar).

    The last two are compiled as a pour from ``ent`` only when its type is a container
    (the executor's ``pour`` takes a substance out of a container); a fruit or a jar typed
    as its food is refused with the reason."""
    if bool(ctx.tokens.get(ent, set()) & CONTAINER_WORDS) or ctx.vocab.is_a(typ, "sealable_container") \
            or ctx.vocab.is_a(typ, "electric_container") or (ctx.vocab.is_a(typ, "vessel") and subst) \
            or holds_named(ctx, ent, typ, ing_words):
        return True, None
    fruit = juiced_from(name)
    why = None
    if fruit and "juice" not in ctx.tokens.get(ent, set()) and fruit in ctx.tokens.get(ent, set()):
        why = f"'{name}' is squeezed from the {fruit} it is named for, which never goes in itself"
    elif ctx.vocab.is_a(typ, "container") or (is_food(ctx, ent) and not any(
            ctx.vocab.is_a(typ, k) for k in WHOLE_FOODS)):
        how = scooped_from(ctx, ent, tr, t0, t1)
        why = f"'{name}' is taken out of it ({how}): it is the ingredient's container" if how else None
    if why is None:
        return False, None
    if ctx.vocab.is_a(typ, "container"):
        return True, None
    return False, (f"{SOURCE_NOT_ADDED}: {ent} (a {typ}, track {local(ctx, tr.assoc.video, tr.start):.2f}-"
                   f"{local(ctx, tr.assoc.video, tr.end):.2f} s): {why}; the executor pours a substance only out "
                   f"of a container and a {typ} is none: not compiled")

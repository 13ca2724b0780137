"""Grounding (paper section 3, entity bindings): the tracked food an untracked add names
under another name ("sourdough baguette" for the tracked "baguette"), so that an add no
track overlaps never creates a second, curated entity of an object the world already has
(issue 34: one object placed twice, a task resting on the duplicate; docs/compiler.md,
Adds); or, for a plural ingredient, the several tracked pieces that all went in."""
from __future__ import annotations

import re

from .grounder import is_food, local, put_away
from .text import CUBE_WORDS, PART_WORDS, _sing, _spelling, words

#: words of a track name that name a part of a food, the food named before them
#: ("twigs of coriander leaves" is coriander): the text's part words and leaves
FOOD_PART_WORDS = PART_WORDS | {"leave", "leaf", "sprig", "twig"}
#: the most pieces of a plural ingredient bound all together (P01's 54 tracked dates, 20
#: carrots: that every one went in is no longer what the rows show)
MAX_PIECES = 5
#: the part words naming what a whole food is cut into, all of it: never a clove, head or
#: bunch (the rest of the garlic stays whole), an end (a trimming, thrown away: P01's
#: carrot ends), a half, quarter or portion (the other part stays), a leg or handful
CUT_WORDS = PART_WORDS & {"piece", "slice", "bit", "chunk", "strip", "wedge", "segment"}


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

    A cube is of the food named just before it (``CUBE_WORDS``): a "butter cube" is butter,
    a "chicken stock cube" stock; an ingredient's food is read alike (:func:`food_head`).

    >>> [names_food(words(n), "butter") for n in ("butter cube", "butter packaging")]
    [True, False]
    >>> [names_food(words(n), food_head(words("chicken stock cube"))) for n in ("stock cube", "chicken stock cube")]
    [True, True]
    >>> names_food(words("chicken stock cube"), "chicken"), names_food(words("ice cube tray"), "ice")
    (False, False)
    """
    if not ws or not head:
        return False
    h = _spelling(head)
    if len(ws) > 1 and ws[-1] in CUBE_WORDS:
        return _spelling(ws[-2]) == h
    if ws[-1] in FOOD_PART_WORDS:
        # the part is of the food named before it: a "garlic clove" is no (whole) clove
        return h in {_spelling(w) for w in ws[:-1]}
    return _spelling(ws[-1]) == h


def food_head(ws: list) -> str:
    """The food an ingredient's words name: its head noun, or for a cube the word before it
    (the ingredient "chicken stock cube" is stock, in cubes).

    >>> [food_head(words(n)) for n in ("unsalted butter", "chicken stock cube", "cube")]
    ['butter', 'stock', 'cube']
    """
    if len(ws) > 1 and ws[-1] in CUBE_WORDS:
        return ws[-2]
    return ws[-1] if ws else ""


def tracked_food_named(ctx, ev, sub: str, t0: float) -> tuple[list[str], str | None]:
    """``(entities, refusal)`` for an add no track overlaps, of ingredient entity ``sub``:
    the one tracked food (no fixture) the ingredient's head noun names, or ``sub`` itself
    when the world tracks it under its own name, which the add then binds (it goes in from
    wherever the world has it then, never from a place curated anew); ``sub`` itself when
    no tracked food is named (the curated entity stands alone). One rule for both (an
    ingredient entity ``garlic`` tracked under its own name is one candidate among the
    tracked "garlic clove"s, never the answer by its id alone). A refusal (the add is not
    compiled) when several tracked foods are named (which went in is not observed), when
    the one named is tracked again after the add (what went in is not the tracked one),
    when two of its tracks overlap under another name (it is several objects at once), or
    when an earlier add already put it in. A plural ingredient whose several named foods
    are its pieces binds them all (:func:`all_pieces`)."""
    if sub in ctx.w.objects and (sub in ctx.w.fixture_ids or not is_food(ctx, sub)):
        return [sub], f"an object {sub} is already in the world and is no food: not compiled"
    head = food_head(words(ev.name))
    named = sorted({e for e, wss in ctx.name_words.items() if e not in ctx.w.fixture_ids and is_food(ctx, e)
                    and any(names_food(ws, head) for ws in wss)} | ({sub} & set(ctx.w.objects)))
    if not named:
        return [sub], None
    dup = "a curated entity of it would place one object twice: not compiled"
    if len(named) > 1:
        named = cut_whole(ctx, named)
    if len(named) > 1:
        why = all_pieces(ctx, ev, named, t0)
        if why is None:
            return named, None
        return [sub], (f"{ev.name!r} names {len(named)} tracked foods ({', '.join(named)}): which one went "
                       f"in is not observed ({why}), and {dup}")
    e = named[0]
    trs = sorted(ctx.tracks_of.get(e, []), key=lambda tr: tr.start)
    again = [tr for tr in trs if tr.start >= t0 - 1e-6]
    if again:
        return [sub], (f"{ev.name!r} names the tracked {e}, tracked after the add "
                       f"({local(ctx, again[0].assoc.video, again[0].start):.2f} s in {again[0].assoc.video}): "
                       f"what went in may not be the tracked one, and {dup}")
    # under another name only: a food tracked under the ingredient's own name is that food
    # whole, its overlapping tracks its pieces (P08's celery, a 0.4 s track inside another
    # while it is cut, all of it put in the salad bowl: the reviewer traced it sound)
    if e != sub and any(a.end > b.start and a.assoc.video == b.assoc.video for a, b in zip(trs, trs[1:])):
        return [sub], f"{ev.name!r} names the tracked {e}, two of whose tracks overlap (several objects), and {dup}"
    if any(p.hold == e and p.kind == "add" for p in ctx.out.planned):
        return [sub], f"{ev.name!r} names the tracked {e}, which an earlier add already put in, and {dup}"
    return [e], None


def is_cut_from(whole_names: list, part_names: list, whole_tracks: list, part_tracks: list) -> bool:
    """Whether a tracked food whose names are ``part_names`` is the tracked whole named
    ``whole_names``, cut: every part name is a whole name followed by a word of what it is
    cut into (:data:`CUT_WORDS`: "carrot pieces" of "carrot", never a "garlic clove"), and its first track starts, in the
    video where the whole's last track ends, at or after that end (the whole was cut into
    it; P08's carrot chopped at 565-595 s, its "carrot pieces" tracked from 595.5 s).

    >>> class T:
    ...     def __init__(s, v, a, b): s.start, s.end, s.assoc = a, b, type("A", (), {"video": v})
    >>> whole, piece = [T("v", 500, 595)], [T("v", 595.5, 607.5)]
    >>> is_cut_from([["carrot"]], [["carrot", "piece"]], whole, piece)
    True
    >>> is_cut_from([["carrot"]], [["carrot", "piece"]], whole, [T("v", 590, 607.5)])   # held together
    False
    >>> is_cut_from([["carrot"]], [["carrot", "piece"]], whole, [T("w", 600, 607.5)])   # another video
    False
    >>> is_cut_from([["red", "onion"]], [["onion", "piece"]], whole, piece)            # another name
    False
    >>> is_cut_from([["garlic"]], [["garlic", "clove"]], whole, piece)                 # the bulb stays
    False
    """
    if not whole_names or not part_names or not whole_tracks or not part_tracks:
        return False
    wholes = {tuple(ws) for ws in whole_names}
    if not all(len(ws) > 1 and ws[-1] in CUT_WORDS and tuple(ws[:-1]) in wholes for ws in part_names):
        return False
    last = max(whole_tracks, key=lambda tr: tr.end)
    first = min(part_tracks, key=lambda tr: tr.start)
    return first.assoc.video == last.assoc.video and first.start >= last.end - 1e-6


def cut_whole(ctx, named: list) -> list:
    """``named`` without each tracked whole food some other of them is cut from
    (:func:`is_cut_from`): the whole in pieces is one food, and the pieces are the form an
    add after the cut puts in, so the add binds them.

    >>> class C: name_words, tracks_of = {}, {}
    >>> cut_whole(C(), ["carrot", "onion"])
    ['carrot', 'onion']
    """
    gone = {w for w in named for p in named if p != w and is_cut_from(
        ctx.name_words.get(w, []), ctx.name_words.get(p, []), ctx.tracks_of.get(w, []), ctx.tracks_of.get(p, []))}
    return [e for e in named if e not in gone]


def is_plural(name: str) -> bool:
    """Whether an ingredient is named in the plural: its last word is ("finger chillies",
    "chicken breasts"), never a mass noun or a singular ("broccoli", "mango").

    >>> [is_plural(n) for n in ("finger chillies", "chicken breasts", "mangoes", "mango", "broccoli", "asparagus")]
    [True, True, True, False, False, False]
    """
    last = (re.findall(r"[a-z]+", name.lower()) or [""])[-1]
    return len(last) > 3 and last.endswith("s") and not last.endswith("ss") and _sing(last) != last


def all_pieces(ctx, ev, named: list, t0: float) -> str | None:
    """``None`` when the several tracked foods ``named`` are the pieces of a plural
    ingredient that all went in by this add row, so the add binds each (the person reads
    "add the chillies" as all of them); else the first condition that fails:

    * the ingredient is named in the plural, and the tracks name them by the same words
      (the pieces of one food: never an onion and a spring onion, a garlic and its clove);
    * no track of them is named in the plural (several at once, or their pack), and there
      are two to :data:`MAX_PIECES` of them;
    * each was last handled in the add's own video before the add, never put away then
      (storage, an enclosed appliance, a sink: a leftover kept), and none is tracked at or
      after the add anywhere in the episode (a piece handled later did not go in);
    * no other add row of the episode names any of them (the onions of two adds: which
      went in by which row is not observed), and no earlier add put one in."""
    if not is_plural(ev.name):
        return "the ingredient is named in the singular"
    names = {e: {tuple(ws) for ws in ctx.name_words.get(e, [])} for e in named}
    if len({frozenset(n) for n in names.values()}) != 1:
        return "the tracks name them by different words (not the pieces of one food)"
    groups = sorted(e for e in named if any(is_plural(tr.assoc.name) for tr in ctx.tracks_of.get(e, [])))
    if groups:
        # a track named in the plural is several pieces at once, or their pack (P02's
        # "tomatoes", out of which tomato1-4 are taken): never one piece of them
        return f"a track names several at once ({', '.join(groups)})"
    if len(named) > MAX_PIECES:
        return f"more than {MAX_PIECES} pieces"
    for e in named:
        trs = sorted(ctx.tracks_of.get(e, []), key=lambda tr: (tr.end, tr.track_id))
        if not trs or trs[-1].end > t0 + 1e-6 or any(tr.start >= t0 - 1e-6 for tr in trs):
            return f"{e} is tracked at or after the add"
        if trs[-1].assoc.video != ev.span.video:
            return f"{e} is last handled in another video ({trs[-1].assoc.video})"
        if (away := put_away(ctx, trs[-1])) is not None:
            return f"{e} was last {away}"
    for rid in sorted(ctx.recipes):
        for cap in ctx.recipes[rid].captures:
            for other in cap.events:
                if other.kind != "add" or other.span.video not in ctx.w.videos or other is ev or (
                        other.ingredient_id == ev.ingredient_id and other.span == ev.span):
                    continue
                h = food_head(words(other.name))
                if any(names_food(list(ws), h) for e in named for ws in names[e]):
                    return f"another add row ({other.ingredient_id}, {other.name!r}) names them too"
    if any(p.hold in named and p.kind == "add" for p in ctx.out.planned):
        return "an earlier add put one in"
    return None

"""Tracked objects as typed entities (paper section 3: entity bindings; appendix A.1): the
entity ID and leaf type a track's own name gives, and the names too vague to compile."""
from __future__ import annotations

import re

from .grounding.text import _sing, COLOUR_WORDS, CONTAINER_WORDS, PART_WORDS, strip_postposed, words
from .normalise import canonical_object, resolve_noun
from .vocabulary import Vocabulary


VAGUE_WORDS = {"something", "thing", "stuff", "clue", "object", "item"}

#: words that say which part or how many, never what: "squash ninth piece" is squash,
#: "four last strips of plant-based burger" plant-based burger, and a "cut piece" or
#: "thin slice2" says nothing of what it is (vague_name)
PART_QUALIFIERS = {"first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth",
                   "tenth", "eleventh", "twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth",
                   "seventeenth", "eighteenth", "nineteenth", "twentieth", "twenty", "twenth", "thirty",
                   "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "few",
                   "last", "final", "next", "more", "other", "another", "remaining", "cut", "peeled",
                   "sliced", "thin", "thick", "small", "big", "large", "larger", "smaller", "broken",
                   "left", "right", "top", "bottom", "new", "whole", "entire", "inner", "outer", "wide",
                   "very", "the", "a", "an", "of", "off", "torn", "folded"}


def _raw_words(text: str) -> list[str]:
    """Every word of a name, lower case and singular (stop words kept: "piece" is one)."""
    return [_sing(w) for w in re.findall(r"[a-z]+", text.lower())]


def vague_name(name: str | None) -> bool:
    """A name that does not say what the object is ("something", "no clue2", "red
    thing"): such a track is not compiled, like an unnamed one. A part word with no
    noun ("piece2", "cut piece", "slice3") is one too: HD-EPIC files "piece" under the
    class plate and "slice" under slicer, and the name does not say what it is a part of.

    >>> vague_name("no clue2"), vague_name("Small thing to throw"), vague_name("pan lid")
    (True, True, False)
    >>> vague_name("piece2"), vague_name("cut pieces"), vague_name("carrot pieces")
    (True, True, False)
    """
    ws = set(re.findall(r"[a-z]+", (name or "").lower()))
    raw = set(_raw_words(name or ""))
    bare_part = bool(raw & PART_WORDS) and raw <= PART_WORDS | PART_QUALIFIERS
    return bool(name) and (bool(ws & VAGUE_WORDS) or ws == {"unknown"} or bare_part)


_PART_WORDS = PART_WORDS        # one rule with grounding.name_head


#: a "stack of bowls" is bowls (moved as one); a "stack of wheat bixies" stays what it was
STACK_WORDS = {"stack", "pile"}


def _is_dish(head: str, vocab: Vocabulary) -> bool:
    leaf = vocab.data["noun_types"].get(head)
    return head in CONTAINER_WORDS or bool(leaf) and any(vocab.is_a(leaf, k) for k in ("vessel", "utensil", "blade"))


#: HD-EPIC noun categories' leaf types that are solid foods, never poured (track_entity)
SOLID_FOOD_TYPES = ("vegetable", "fruit", "meat")
#: words that make a "roll" a roll of material (track_entity)
ROLL_MATERIALS = {"kitchen", "paper", "tissue", "towel", "foil", "film", "cling", "parchment", "liner",
                  "bag", "baking", "toilet", "recyclable", "foodwaste", "freezer", "drawer"}


#: a preposition ends the object's own noun phrase: "bowl with onions" is a bowl, "slice of
#: potato for discarding" potato, "fork in dishwasher cutlery tray" a fork, "bowl from sink"
#: a bowl (HD-EPIC's class of the last word would make them an onion, a tray, a sink)
_OWN_PHRASE_END = re.compile(r"\s+(?:with|for|from|in|inside|on)\s+")
#: words after the noun that name no thing ("courgettes together" are courgettes, "plastic
#: piece round" a plastic piece)
TRAILING_WORDS = {"together", "round", "circular"}


def _own_phrase(base: str) -> str:
    """The words of a name that name the object itself (see ``_OWN_PHRASE_END``)."""
    own = _OWN_PHRASE_END.split(base, maxsplit=1)[0]
    ws = own.split(" ")
    while len(ws) > 1 and ws[-1] in TRAILING_WORDS:
        ws = ws[:-1]
    own = " ".join(ws)
    return own if words(own) else base


def _whole_of_part(own: str, part_words) -> str | None:
    """The phrase naming the whole thing when ``own`` names a part or a heap of it:
    "<part or stack> of X" -> X ("pile of peeled carrots"), "X [qualifiers] <part>" -> X
    ("squash ninth piece"); else ``None``."""
    of = re.match(r"^(.+?) of (.+)$", own)
    if of:
        left = _raw_words(of.group(1))
        # "rest of cheese" is cheese (and a "spoon rest" no spoon: "rest" is a part word only here)
        return of.group(2) if left and left[-1] in part_words | STACK_WORDS | {"rest"} else None
    ws = _raw_words(own)
    if len(ws) < 2 or ws[-1] not in part_words:
        return None
    rest = ws[:-1]
    while rest and rest[-1] in PART_QUALIFIERS:
        rest = rest[:-1]
    if set(rest) <= COLOUR_WORDS:
        return None                      # "green stick": a colour alone names no food
    return " ".join(rest)


def _parse(base: str, vocab: Vocabulary):
    """``(stem words, head noun, content)`` of a name without digits (the name's own words;
    "<part> of X" is X, "<container> of X" a container holding X)."""
    of = re.match(r"^(.+?) of (.+)$", base)
    content = None
    if of:
        left, right = words(of.group(1)), words(of.group(2))
        if left and right and (left[-1] in _PART_WORDS or (left[-1] in STACK_WORDS and _is_dish(right[-1], vocab))):
            ws, head = right, right[-1]
        elif left and right and left[-1] in CONTAINER_WORDS:
            ws, head = right + [left[-1]], left[-1]
            content = right[-1]
        else:
            ws = (left or []) + (right or [])
            head = left[-1] if left else (right[-1] if right else "")
    else:
        ws = words(base)
        core = strip_postposed(ws)       # the stem keeps its colour; the type does not
        head = core[-1] if core else ""
        if len(core) > 1 and head in CONTAINER_WORDS:
            content = core[-2]
    return ws, head, content


def _leaf(base: str, head: str, nouns, overrides: dict, vocab: Vocabulary) -> str:
    """The leaf type of a head noun: the vocabulary, then HD-EPIC's noun classes for the
    head, then for the whole phrase; a substance word that HD-EPIC files under a solid
    food (squash: vegetables) is that food."""
    nt = vocab.data["noun_types"]
    if head in nt:
        leaf = nt[head]
    else:
        key, _ = resolve_noun(head, nouns) if head else (None, "")
        if key is not None:
            leaf, _ = vocab.item_type(head, key, nouns.category.get(key))
        else:
            co = canonical_object(base, nouns, overrides)
            leaf, _ = vocab.item_type(re.sub(r"\d+$", "", co.stem), co.class_key, co.category)
    if head == "roll" and set(words(base)) & ROLL_MATERIALS:
        # HD-EPIC's "roll" class holds bread rolls and rolls of kitchen paper alike: a roll
        # of a material is a supply ("kitchen roll", "roll of cling film"), never a food
        leaf = "other_supply"
    if vocab.is_a(leaf, "substance") and head:
        # the vocabulary's substance word may also name a solid food: "squash" is the
        # drink poured from a bottle and the vegetable cut into pieces. A tracked thing
        # is never a liquid by itself, so HD-EPIC's own class decides: filed under a
        # solid food category (squash: vegetables), it is that food
        key, _ = resolve_noun(head, nouns)
        solid = vocab.data["category_types"].get(nouns.category.get(key)) if key is not None else None
        if solid in SOLID_FOOD_TYPES:
            leaf = solid
    return leaf


def _part_leaf(whole: str, piece: str, nouns, overrides: dict, vocab: Vocabulary) -> str | None:
    """The type of a part of ``whole`` ("carrot" of "carrot pieces") when it is a food: the
    whole's food type; a piece of a substance (a stock cube, a cinnamon stick) is a solid
    food (``ingredient_heads.whole``); ``None`` for a part of anything else."""
    if whole in overrides:
        w_leaf, _ = vocab.item_type(overrides[whole], None, None)
    else:
        w_ws, w_head, _ = _parse(whole, vocab)
        if not w_ws:
            return None
        w_leaf = _leaf(whole, w_head, nouns, overrides, vocab)
    if vocab.is_a(w_leaf, "food"):
        return w_leaf
    whole_types = vocab.data.get("ingredient_heads", {}).get("whole", {})
    if vocab.is_a(w_leaf, "substance") and piece in whole_types:
        return whole_types[piece]
    return None


def track_entity(name: str, nouns, overrides: dict, vocab: Vocabulary) -> tuple[str, str, str | None]:
    """``(stem, leaf type, content substance)`` of a tracked object from its own name.

    The stem is the name's own content words ("pan lid" -> ``pan_lid``, "new glass" ->
    ``glass``); the type comes from the object's own head noun ("pan lid" is a lid, "bottle
    of squash" a bottle holding squash, "piece of bread" bread), then from HD-EPIC's noun
    classes for the head, then for the whole name. The object's own noun phrase ends at a
    preposition ("bowl with onions" is a bowl). A part or heap of a food is that food,
    whatever HD-EPIC's class of the part word ("chicken strip2", "pizza slice", "pile of
    peeled carrots"); a piece of a substance is a solid food ("one cube of stock").

    >>> from analysis.compiler.readers import ClassTable
    >>> v = Vocabulary.load()
    >>> track_entity("pan lid", ClassTable({}, {}, {}), v.overrides, v)
    ('pan_lid', 'lid', None)
    >>> track_entity("bottle of squash", ClassTable({}, {}, {}), v.overrides, v)
    ('squash_bottle', 'bottle', 'squash')
    >>> squash = ClassTable({"squash": "vegetables"}, {"squash": "squash"}, {})
    >>> track_entity("remaining squash", squash, v.overrides, v)
    ('squash', 'vegetable', None)
    >>> track_entity("squash ninth piece", squash, v.overrides, v)
    ('squash_ninth', 'vegetable', None)
    >>> hd = ClassTable({"clothes": "materials", "chicken": "meat and substitute", "bag": "containers"},
    ...                 {"strip": "clothes", "chicken": "chicken", "thigh": "chicken", "bag": "bag"}, {})
    >>> track_entity("chicken strip2", hd, v.overrides, v)
    ('chicken_strip2', 'meat', None)
    >>> track_entity("plastic bag with chicken thigh", hd, v.overrides, v)
    ('plastic_bag_chicken_thigh', 'bag', None)
    >>> track_entity("one cube of stock", hd, v.overrides, v)
    ('stock_cube', 'other_food', None)
    """
    low = re.sub(r"\s+", " ", name.strip().lower())
    m = re.match(r"^(.*?[a-z])\s*(\d+)$", low)
    base, digits = (m.group(1), m.group(2)) if m else (low, "")
    if base in overrides:
        stem = overrides[base]
        leaf, _ = vocab.item_type(stem, None, None)
        return snake_id(stem + digits), leaf, None
    ws, head, content = _parse(base, vocab)         # the stem: every word of the name
    own = _own_phrase(base)
    own_ws = ws
    if own != base:
        own_ws, head, content = _parse(own, vocab)  # the type: the object's own phrase
    if not ws:
        ws, head = [re.sub(r"[^a-z0-9]+", "_", base).strip("_") or "object"], ""
    whole_types = vocab.data.get("ingredient_heads", {}).get("whole", {})
    parts = _PART_WORDS | set(whole_types)
    whole = _whole_of_part(own, parts)
    if whole is not None:
        piece = (_raw_words(own.split(" of ")[0]) if " of " in own else _raw_words(own))[-1]
        p_leaf = _part_leaf(whole, piece, nouns, overrides, vocab)
        if p_leaf is not None:
            if piece in whole_types and piece not in _PART_WORDS and " of " in own:
                ws = words(whole) + [piece]          # "one cube of stock" is a stock cube
            return snake_id("_".join(ws) + digits), p_leaf, None
        if " of " not in own and vocab.is_a(_leaf(own, head, nouns, overrides, vocab), "container"):
            # "few plastic pieces", "metalic piece": a piece holds nothing (HD-EPIC files
            # "piece" under the class plate); the words before the part word type it
            own = whole
            own_ws, head, content = _parse(whole, vocab)
    leaf = _leaf(own, head, nouns, overrides, vocab)
    if head in CONTAINER_WORDS and len(own_ws) > 1 and not vocab.is_a(leaf, "sealable_container"):
        leaf = "other_sealable"          # "mango pot", "coffee jug" hold a content: not a vessel
    if vocab.is_a(leaf, "substance"):
        # a tracked "oat milk" is the milk's container; the substance sits inside it
        content, leaf, ws = head, "other_sealable", ws + ["container"]
    if content is not None:
        c_leaf = vocab.data["noun_types"].get(content)
        if not (c_leaf and vocab.is_a(c_leaf, "substance")):
            content = None
    return snake_id("_".join(ws) + digits), leaf, content


def snake_id(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_") or "object"

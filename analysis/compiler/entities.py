"""Tracked objects as typed entities (paper section 3: entity bindings; appendix A.1): the
entity ID and leaf type a track's own name gives, and the names too vague to compile."""
from __future__ import annotations

import re

from .grounding.text import CONTAINER_WORDS, PART_WORDS, strip_postposed, words
from .normalise import canonical_object, resolve_noun
from .vocabulary import Vocabulary


VAGUE_WORDS = {"something", "thing", "stuff", "clue", "object", "item"}


def vague_name(name: str | None) -> bool:
    """A name that does not say what the object is ("something", "no clue2", "red
    thing"): such a track is not compiled, like an unnamed one.

    >>> vague_name("no clue2"), vague_name("Small thing to throw"), vague_name("pan lid")
    (True, True, False)
    """
    ws = set(re.findall(r"[a-z]+", (name or "").lower()))
    return bool(name) and (bool(ws & VAGUE_WORDS) or ws == {"unknown"})


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


def track_entity(name: str, nouns, overrides: dict, vocab: Vocabulary) -> tuple[str, str, str | None]:
    """``(stem, leaf type, content substance)`` of a tracked object from its own name.

    The stem is the name's own content words ("pan lid" -> ``pan_lid``, "new glass" ->
    ``glass``); the type comes from the name's head noun ("pan lid" is a lid, "bottle of
    squash" a bottle holding squash, "piece of bread" bread), then from HD-EPIC's noun
    classes for the head, then for the whole name.

    >>> from analysis.compiler.readers import ClassTable
    >>> v = Vocabulary.load()
    >>> track_entity("pan lid", ClassTable({}, {}, {}), v.overrides, v)
    ('pan_lid', 'lid', None)
    >>> track_entity("bottle of squash", ClassTable({}, {}, {}), v.overrides, v)
    ('squash_bottle', 'bottle', 'squash')
    >>> squash = ClassTable({"squash": "vegetables"}, {"squash": "squash"}, {})
    >>> track_entity("remaining squash", squash, v.overrides, v)
    ('squash', 'vegetable', None)
    """
    low = re.sub(r"\s+", " ", name.strip().lower())
    m = re.match(r"^(.*?[a-z])\s*(\d+)$", low)
    base, digits = (m.group(1), m.group(2)) if m else (low, "")
    if base in overrides:
        stem = overrides[base]
        leaf, _ = vocab.item_type(stem, None, None)
        return snake_id(stem + digits), leaf, None
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
    if not ws:
        ws, head = [re.sub(r"[^a-z0-9]+", "_", base).strip("_") or "object"], ""
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
    if head == "roll" and set(ws) & ROLL_MATERIALS:
        # HD-EPIC's "roll" class holds bread rolls and rolls of kitchen paper alike: a roll
        # of a material is a supply ("kitchen roll", "roll of cling film"), never a food
        leaf = "other_supply"
    if head in CONTAINER_WORDS and len(ws) > 1 and not vocab.is_a(leaf, "sealable_container"):
        leaf = "other_sealable"          # "mango pot", "coffee jug" hold a content: not a vessel
    if vocab.is_a(leaf, "substance") and head:
        # the vocabulary's substance word may also name a solid food: "squash" is the
        # drink poured from a bottle and the vegetable cut into pieces. A tracked thing
        # is never a liquid by itself, so HD-EPIC's own class decides: filed under a
        # solid food category (squash: vegetables), it is that food
        key, _ = resolve_noun(head, nouns)
        solid = vocab.data["category_types"].get(nouns.category.get(key)) if key is not None else None
        if solid in SOLID_FOOD_TYPES:
            leaf = solid
    if vocab.is_a(leaf, "substance"):
        # a tracked "oat milk" is the milk's container; the substance sits inside it
        content, leaf, ws = head, "other_sealable", ws + ["container"]
    if content is not None:
        c_leaf = nt.get(content)
        if not (c_leaf and vocab.is_a(c_leaf, "substance")):
            content = None
    return snake_id("_".join(ws) + digits), leaf, content


def snake_id(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_") or "object"

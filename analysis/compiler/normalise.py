"""Normalisation of fixture phrases and object names (paper section 3 and appendix A.1:
normalised entity bindings).

* Fixture phrases differ between files ("counter left from sink", "counter top right of
  dishwasher", "At the counter to the right of the fridge."). :func:`fixture_phrase`
  maps them onto one canonical phrase ("counter left of sink", "counter right of
  dishwasher", "counter right of fridge"); :func:`fixture_id` makes a stable snake-case ID.
* Object names are canonicalised through HD-EPIC's noun classes
  (:func:`canonical_object`): a name resolves to a class key and category; a name ending
  in digits ("glass5") keeps its digits, because HD-EPIC uses them for separate instances.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .readers import ClassTable

# Ordered rewrites; order matters ("to the right of" must go before "the" is dropped).
_FIXTURE_REWRITES: tuple[tuple[str, str], ...] = (
    (r"[.!?,;:]+$", ""),
    (r"^(at|on|in|inside|into|onto|from)\s+", ""),
    (r"\bto the (left|right) of\b", r"\1 of"),
    (r"\bto (left|right) of\b", r"\1 of"),
    (r"\b(left|right|top|bottom|above|below|under) from\b", r"\1 of"),
    (r"\bon the (left|right) of\b", r"\1 of"),
    (r"\bcounter\s*top\b", "counter"),
    (r"\bworktop\b", "counter"),
    (r"\bthe\b", ""),
    (r"\s+", " "),
)


def fixture_phrase(text: str) -> str:
    """Canonical fixture phrase: lower case, no articles, "X of Y" relations."""
    out = text.strip().lower()
    for pattern, repl in _FIXTURE_REWRITES:
        out = re.sub(pattern, repl, out).strip()
    return out


def snake(text: str) -> str:
    """Lowercase snake-case identifier (ASCII letters, digits and underscores)."""
    out = re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")
    return out or "unnamed"


def fixture_id(text: str) -> str:
    """Stable fixture ID from any phrasing, e.g. ``counter_right_of_fridge``."""
    return snake(fixture_phrase(text))


def fixture_head(phrase: str) -> str:
    """The fixture's head noun: the first word of its canonical phrase ("counter")."""
    canon = fixture_phrase(phrase)
    if canon.startswith("top of "):
        return "top"
    ws = [w for w in re.split(r"[^a-z]+", canon) if w]
    if len(ws) > 1 and ws[0] in _MODIFIERS and ws[1] != "of":
        # "top cupboard" (spelt "top)cupboard" once) is a cupboard, not a surface
        return ws[1]
    return ws[0] if ws else ""


_MODIFIERS = {"top", "bottom", "upper", "lower", "small", "big", "tall", "wall", "corner", "main"}


def class_label(key: str) -> str:
    """A class key as an entity stem: ``maker:coffee`` -> ``coffee_maker``."""
    parts = key.split(":")
    return snake(" ".join(reversed(parts)) if len(parts) > 1 else key)


@dataclass(frozen=True)
class CanonicalObject:
    """A resolved object name."""
    raw: str
    stem: str              # entity ID stem, e.g. "glass", "squash_bottle", "glass5"
    class_key: str | None  # HD-EPIC noun class key, None when unresolved
    category: str | None   # HD-EPIC noun category
    rule: str              # how it was resolved (for provenance / the audit)


def resolve_noun(phrase: str, nouns: ClassTable) -> tuple[str | None, str]:
    """``(class key, rule)`` for a noun phrase: exact instance, then shorter suffixes.

    "new glass" is not an instance but "glass" is: we drop leading words one by one, so the
    head noun (English puts it last) decides. "bottle of squash" is an exact instance.
    """
    text = re.sub(r"\s+", " ", phrase.strip().lower())
    if text in nouns.instance_to_key:
        return nouns.instance_to_key[text], "exact"
    words = text.split(" ")
    for i in range(1, len(words)):
        tail = " ".join(words[i:])
        if tail in nouns.instance_to_key:
            return nouns.instance_to_key[tail], "suffix"
    singular = re.sub(r"(e?s)$", "", text)
    if singular != text and singular in nouns.instance_to_key:
        return nouns.instance_to_key[singular], "singular"
    return None, "unresolved"


def canonical_object(name: str, nouns: ClassTable, overrides: dict | None = None) -> CanonicalObject:
    """Canonicalise an object name through the noun classes.

    ``overrides`` (from the curated vocabulary) maps raw names or class keys to stems, for
    the few places where HD-EPIC's first matching class is wrong for our purpose.
    """
    overrides = overrides or {}
    raw = name.strip()
    low = re.sub(r"\s+", " ", raw.lower())
    m = re.match(r"^(.*?[a-z])\s*(\d+)$", low)
    base, digits = (m.group(1), m.group(2)) if m else (low, "")
    if base in overrides:
        stem = overrides[base]
        key, rule = resolve_noun(base, nouns)
        return CanonicalObject(raw, snake(stem + digits), key,
                               nouns.category.get(key) if key else None, "override")
    # "<container> of <content>" -> "<content>_<container>" so that a bottle of squash and
    # a bottle of milk stay distinguishable (the container class alone would merge them).
    of = re.match(r"^(?:.*\s)?(bottle|jar|bag|box|packet|pack|carton|tin|can|tub|pot|bowl|"
                  r"glass|cup|mug|plate|tray|container|sachet|punnet|bunch|head|clove|slice|"
                  r"piece|half)s? of (.+)$", base)
    if of:
        content_key, _ = resolve_noun(of.group(2), nouns)
        container_key, _ = resolve_noun(of.group(1), nouns)
        if content_key and container_key:
            content = overrides.get(content_key, class_label(content_key))
            if of.group(1) in ("piece", "half", "slice", "clove", "head", "bunch"):
                # a piece of an onion is still the onion, for the symbolic world
                return CanonicalObject(raw, snake(content + digits), content_key,
                                       nouns.category.get(content_key), "part_of")
            container = overrides.get(container_key, class_label(container_key))
            return CanonicalObject(raw, snake(f"{content}_{container}{digits}"), container_key,
                                   nouns.category.get(container_key), "container_of")
    key, rule = resolve_noun(base, nouns)
    if key is None:
        return CanonicalObject(raw, snake(base + digits), None, None, "unresolved")
    stem = overrides.get(key, class_label(key))
    return CanonicalObject(raw, snake(stem + digits), key, nouns.category.get(key), rule)

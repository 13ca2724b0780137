"""Items that start out of storage (paper section 3: initialised world graphs): objects
whose initial place would only be a curated storage default but whose activity rows show
they were out (taken out of the dishwasher, spent, cut, first handled while tidying up)."""
from __future__ import annotations

import re

from .grounding.text import PART_WORDS, name_head, words
from .vocabulary import Vocabulary
from .worlds import EpisodeWorld, curated


UNLOAD_RULE = "taken_out_of_the_dishwasher_in_an_unload_row"
#: what a dishwasher holds: crockery, cutlery, utensils (never a food or a supply)
DISHWASHER_KINDS = ("vessel", "utensil", "blade")
_UNLOAD_RE = re.compile(r"\b(?:unload\w*|empty\w*)\s+(?:the\s+)?dishwasher\b", re.IGNORECASE)


def unload_sources(world: EpisodeWorld, activities, vocab: Vocabulary) -> list[str]:
    """Objects the person takes out of the dishwasher: an object whose first track starts
    inside an activity row whose label says the dishwasher is unloaded or emptied
    ("Unload dishwasher and put clean crockery away"), that a dishwasher holds
    (``DISHWASHER_KINDS``), and whose initial place is only a curated storage default,
    starts in the scene's only dishwasher instead (curated ``UNLOAD_RULE``, citing the
    row): fetching the clean mugs from their cupboard and putting them back there would
    invert the row. Changes ``world.facts``; returns the
    entities changed."""
    dws = sorted(f for f in world.fixture_ids if vocab.is_a(world.objects.get(f, ""), "dishwasher"))
    rows = [a for a in activities if a.video in world.videos and _UNLOAD_RE.search(a.label)]
    if len(dws) != 1 or not rows:
        return []
    first: dict = {}
    for tr in world.tracks:                     # time order
        first.setdefault(tr.entity, tr)
    changed = []
    for ent, tr0 in sorted(first.items()):
        row = next((a for a in rows if a.video == tr0.assoc.video and a.start <= tr0.start < a.end), None)
        atom = next((a for a in world.facts if a[0] == "at" and a[1] == ent), None)
        prov = world.facts.get(atom) if atom else None
        leaf = world.objects.get(ent, "")
        if row is None or prov is None or prov["source"] != "curated" \
                or not prov["refs"].get("rule", "").startswith("default_locations") \
                or not vocab.is_a(world.objects.get(atom[2], ""), "storage") \
                or not any(vocab.is_a(leaf, k) for k in DISHWASHER_KINDS):
            continue
        del world.facts[atom]
        world.facts[("at", ent, dws[0])] = curated(f"{UNLOAD_RULE}:{row.source_row}")
        changed.append(ent)
    return changed


TIDY_RULE = "first_handled_in_a_tidy_up_row_starts_out_of_storage"
SPENT_RULE = "spent_item_starts_out_of_storage"
# a row that only puts things back, unpacks, cleans or clears: what it first handles was out
_TIDY_RE = re.compile(r"\b(?:clean\w*|clear\w*|tid(?:y|ied|ying)\w*|away|unpack\w*|wash\w*\s+up|"
                      r"wash\w*\s+(?:the\s+)?dishes|load\w*\s+(?:the\s+)?dishwasher)\b", re.IGNORECASE)
# ... unless the label also fetches, prepares or serves something (which may come from storage)
_FETCH_RE = re.compile(r"\b(?:get\w*|take\w*|fetch\w*|set|setting|serv\w*|prepar\w*|mak\w*|cook\w*|"
                       r"read\w*|measur\w*|slic\w*|chop\w*|add\w*|weigh\w*|peel\w*|mix\w*|fry\w*|"
                       r"bak\w*|boil\w*|drink\w*|eat\w*|pour\w*|refill\w*|fill\w*|plat\w*|check\w*|"
                       r"wait\w*|unload\w*|empty\w*|continu\w*|replac\w*)\b", re.IGNORECASE)
#: what a tidy-up row puts back: containers, food, devices and cutlery; never the
#: cleaning tools and supplies the row may fetch from storage (a sponge, a cloth, foil)
TIDY_KINDS = ("container", "food", "device", "blade", "fork", "spoon", "spatula", "ladle",
              "masher", "whisk_tool", "tongs", "grater", "peeler", "rolling_pin", "other_utensil")
#: words of a name that say the object is spent, as an adjective anywhere ("dirty
#: bowl", "used tea bag") or as its head noun ("butter packaging", "slice of potato peel",
#: "eggshell halves"; not "food waste bin": its head is the bin)
SPENT_ADJECTIVES = {"used", "dirty", "discarded"}
SPENT_NOUNS = {"rubbish", "waste", "trash", "wrapper", "wrapping", "packaging", "peel", "peeling",
               "scrap", "leftover", "shell", "eggshell", "skin", "rind", "stalk", "core",
               "ground"}     # singular: name_head's words
#: tools named by a spent noun ("wooden pizza peel": the vocabulary names only the bare one)
NOT_SPENT = ("pizza peel",)
#: words that say a food is a cut piece: it exists only once cut, on a work surface
#: (never "slice": bread, ham and cheese are bought sliced and kept so)
CUT_WORDS = {"piece", "pieces", "chunk", "chunks", "cut", "chopped", "diced", "peeled", "grated",
             "minced", "crushed"}
CUT_RULE = "cut_food_starts_out_of_storage"


def spent(names: list[str], leaf: str, vocab: Vocabulary) -> bool:
    """A name says the object is used up or waste ("used tea bag", "butter packaging",
    "egg shell"); "empty" says so of a sealed food container only ("empty milk carton";
    an "empty glass" is clean).

    >>> v = Vocabulary.load()
    >>> [spent([n], t, v) for n, t in [("used tea bag", "tea_bag"), ("empty carton", "carton"),
    ...     ("empty glass", "glass"), ("food waste bin", "other_supply"), ("pizza peel", "other_utensil")]]
    [True, True, False, False, False]
    """
    for n in names:
        ws = set(re.findall(r"[a-z]+", n.lower()))
        if ws & SPENT_ADJECTIVES or ("empty" in ws and vocab.is_a(leaf, "sealable_container")):
            return True
        head = words(n)
        while len(head) > 1 and head[-1] in PART_WORDS | {"halve"}:   # "eggshell halves" (words: halve)
            head = head[:-1]
        if (name_head(n) in SPENT_NOUNS or (head and head[-1] in SPENT_NOUNS)) \
                and not vocab.is_a(leaf, "utensil") and not n.lower().rstrip("0123456789 ").endswith(NOT_SPENT):
            return True
    return False


def cut_piece(names: list[str], leaf: str, vocab: Vocabulary) -> bool:
    """A food named as a cut piece ("piece of tomato", "cut pieces of butter", "pile of
    peeled carrots"): it is made on a work surface, not kept in storage; bread (bought
    as slices and pieces of a loaf) is left alone.

    >>> v = Vocabulary.load()
    >>> [cut_piece([n], t, v) for n, t in [("piece of tomato", "vegetable"), ("tomato", "vegetable"),
    ...     ("piece of bread", "bread"), ("slice of egg", "egg"), ("piece of foil", "foil")]]
    [True, False, False, False, False]
    """
    if not vocab.is_a(leaf, "food") or vocab.is_a(leaf, "bread"):
        return False
    return any(set(re.findall(r"[a-z]+", n.lower())) & CUT_WORDS for n in names)


def out_of_storage_sources(world: EpisodeWorld, activities, vocab: Vocabulary) -> list[str]:
    """Objects whose initial place is only a curated storage default, but which the rows
    show were out: a spent object (``spent``: a used tea bag is not fetched from a
    cupboard), a cut piece of food (``cut_piece``: the tomato's pieces are not in the
    fridge), or one first handled inside a row that only tidies up or unpacks (``_TIDY_RE``, and
    no fetching verb in the label: "Put stuff away and load dishwasher") and of a kind a
    tidy-up puts back (``TIDY_KINDS``). They start on the work counter instead (curated
    ``SPENT_RULE``, ``CUT_RULE`` or ``TIDY_RULE``, citing the row): the reference would otherwise take
    the used mug out of its cupboard to put it in the dishwasher. Run after
    ``unload_sources``. Changes ``world.facts``; returns the entities changed."""
    rows = [a for a in activities if a.video in world.videos and _TIDY_RE.search(a.label)
            and not _FETCH_RE.search(a.label)]
    first: dict = {}
    for tr in world.tracks:                     # time order
        first.setdefault(tr.entity, tr)
    changed = []
    for ent, tr0 in sorted(first.items()):
        atom = next((a for a in world.facts if a[0] == "at" and a[1] == ent), None)
        prov = world.facts.get(atom) if atom else None
        leaf = world.objects.get(ent, "")
        if prov is None or prov["source"] != "curated" \
                or not prov["refs"].get("rule", "").startswith("default_locations") \
                or not vocab.is_a(world.objects.get(atom[2], ""), "storage"):
            continue
        if spent(world.names.get(ent, []), leaf, vocab):
            rule = SPENT_RULE
        elif cut_piece(world.names.get(ent, []), leaf, vocab):
            rule = CUT_RULE
        else:
            row = next((a for a in rows if a.video == tr0.assoc.video and a.start <= tr0.start < a.end),
                       None)                # episode time, both
            if row is None or not any(vocab.is_a(leaf, k) for k in TIDY_KINDS):
                continue
            rule = f"{TIDY_RULE}:{row.source_row}"
        del world.facts[atom]
        world.facts[("at", ent, world.work_counter)] = curated(rule)
        changed.append(ent)
    return changed

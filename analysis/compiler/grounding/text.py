"""Grounding (paper section 3 and appendix A.1: verb-noun descriptions): the source text's
own words: content words, head nouns, step verbs, titles, ingredient types."""
from __future__ import annotations

import re


STOP = {"the", "a", "an", "of", "your", "some", "and", "with", "into", "in", "to", "on", "onto",
        "over", "for", "it", "its", "them", "new", "first", "second", "third", "fourth", "one",
        "two", "other", "another", "left", "right", "half", "small", "big", "large", "little",
        "fresh", "piece", "bit", "amount", "desired", "minimum", "little", "then", "this", "that",
        "from", "at", "up", "out", "all", "each", "until", "about", "part", "top", "bottom",
        "empty", "clean", "dirty", "used", "full", "remaining"}
CONTAINER_WORDS = {"bottle", "jar", "tin", "can", "carton", "packet", "pack", "bag", "box", "tub",
                   "container", "sachet", "grinder", "mill", "shaker", "pot", "jug", "punnet", "tube"}
# never the target of an add, pour or stir: covers and boards are not vessels, a kettle
# only ever holds water (filled at the tap, not by a recipe add)
EXCLUDED_TARGETS = {"lid", "chopping_board", "kettle"}
STIR_TOOLS = {"spoon", "fork", "spatula", "whisk_tool", "ladle"}   # a towel is not a stirrer
COLOUR_WORDS = {"black", "white", "red", "green", "blue", "yellow", "orange", "brown", "pink",
                "purple", "grey", "gray", "silver", "golden", "dark", "light", "clear"}
# a lid or cap closes a container and holds no food
COVER_WORDS = {"lid", "cap"}
# words of a container name that say nothing of which food it holds: "spice jar1" and
# "black jar2" held through an add of paprika are its source as much as "bottle" is
GENERIC_SOURCE_WORDS = CONTAINER_WORDS | COLOUR_WORDS | {"spice", "herb", "seasoning", "small", "large", "big"}
# a colour written after the noun ("frying pan grey", "plate blue", "spice jar black") is
# no head noun; green and orange are foods as well ("spring green", "third orange")
POSTPOSED_COLOURS = COLOUR_WORDS - {"green", "orange"}
MARGIN = 0.5                                          # seconds of slack on time overlaps
# a vessel not moved during a step or add may have been put down just before it (a bowl
# on the counter is stirred, not picked up): its last put-down counts only this close
LOOKBACK = 60.0
UNTRACKED_RULE = "ingredient_without_track_at_default_location"
# an untracked vessel the step text names (no object of the episode has its noun): a world
# entity on the work counter (issue 34)
TEXT_VESSEL_RULE = "untracked_vessel_named_by_step_text_on_the_work_counter"
# the pick-up place of an untracked add whose food is a tracked entity: where the world has it
WHERE_IT_STANDS = "*"
# "<part> of X" and "X <part>" name X ("piece of bread" and "chicken strip" are the food);
# any other "X of Y" is an X ("bowl of flour" is a bowl, "bottle of squash" a bottle): the
# world's typing rule (entities.track_entity). HD-EPIC files several part words under a
# class of their own (strip and quarter: clothes, slice: slicer, piece: plate), so a part
# word never types a thing by itself
PART_WORDS = {"piece", "slice", "half", "bunch", "head", "clove", "end", "ends", "handful", "bit",
              "strip", "quarter", "part", "chunk", "portion", "wedge", "segment", "leg"}
# "X cube" is a cube of the food named just before it: a tracked "butter cube" is butter, a
# "chicken stock cube" is stock (never chicken), an ingredient "vegetable stock cube" names
# stock cubes; "ice cube tray" is a tray (its head). Not a part word: the world types a cube
# by its own entry (entities.track_entity), and a "stock cube" ingredient is the cube itself
CUBE_WORDS = {"cube"}


def _sing(w: str) -> str:
    if len(w) > 4 and w.endswith("oes"):
        return w[:-2]
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 4 and w.endswith(("xes", "ches", "shes", "sses", "zes")):
        return w[:-2]                    # boxes, dishes, glasses (not "boxe", "glasse")
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us")):   # couscous, citrus
        return w[:-1]
    return w


def words(text: str) -> list[str]:
    """Content words of a phrase, lower case and singular, stop words removed."""
    return [_sing(w) for w in re.findall(r"[a-z]+", text.lower()) if w not in STOP and len(w) > 1]


def name_head(name: str) -> str:
    """The head noun of an object's name, read as the world types it: "bowl of flour" is
    a bowl, "large bowl2" a bowl, "piece of bread" bread, "small cup of glass" a cup.

    >>> [name_head(n) for n in ("bowl of flour", "large bowl2", "piece of bread", "small cup of glass",
    ...                         "frying pan grey")]
    ['bowl', 'bowl', 'bread', 'cup', 'pan']
    """
    low = re.sub(r"\s+", " ", name.strip().lower())
    of = re.match(r"^(.+?) of (.+)$", low)
    if of:
        left, right = words(of.group(1)), words(of.group(2))
        if left and right and left[-1] in PART_WORDS:
            return right[-1]
        if left:
            return left[-1]
        return right[-1] if right else ""
    ws = strip_postposed(words(low))
    return ws[-1] if ws else ""


def strip_postposed(ws: list[str]) -> list[str]:
    """Content words without a trailing colour that follows a noun ("frying pan grey").

    Green and orange are foods too ("spring green"), so they are a colour only after a
    container word ("spice jar green", "bottle green"), else a jar of HD-EPIC would be
    typed a vegetable and start in the fridge.

    >>> strip_postposed(["frying", "pan", "grey"]), strip_postposed(["spring", "green"])
    (['frying', 'pan'], ['spring', 'green'])
    >>> strip_postposed(["spice", "jar", "orange"])
    ['spice', 'jar']
    """
    while len(ws) > 1 and (ws[-1] in POSTPOSED_COLOURS
                           or ws[-1] in COLOUR_WORDS and ws[-2] in CONTAINER_WORDS):
        ws = ws[:-1]
    return ws


def name_content(name: str) -> list[str]:
    """Content words of a "<container> of <content>" name ("bowl of flour" -> flour);
    none for a "<part> of X" name or any other name.

    >>> name_content("small bowl of yogurt"), name_content("piece of bread"), name_content("bowl")
    (['yogurt'], [], [])
    """
    of = re.match(r"^(.+?) of (.+)$", re.sub(r"\s+", " ", name.strip().lower()))
    if not of:
        return []
    left, right = words(of.group(1)), words(of.group(2))
    return right if left and right and left[-1] not in PART_WORDS else []


# the one spelling table: variants of one word, each compared in one spelling ("chillies"
# singularises to chilly). Found over the whole source (every ingredient word against every
# track word): yoghurt/yogurt (P04's "yogurt container"), cardamon, soya, dhal (typos such
# as "peper" or "balsemic" are left alone: no table of misspellings)
_SPELLINGS = {"yoghurt": "yogurt", "chili": "chilli", "chilly": "chilli", "cardamon": "cardamom", "soya": "soy",
              "dhal": "dal"}


def _spelling(w: str) -> str:
    return _SPELLINGS.get(w, w)


def overlaps(a0: float, a1: float, b0: float, b1: float, margin: float = MARGIN) -> bool:
    return a0 < b1 + margin and b0 < a1 + margin


def title_of(text: str, limit: int = 70) -> str:
    """The annotation's own words, cut at a word boundary (never mid-word).

    >>> title_of("Pour the soy sauce and the sesame oil in a small bowl and mix them well together", 40)
    'Pour the soy sauce and the sesame oil...'
    >>> title_of("Tidy up - load the dishwasher and wash up")
    'Tidy up - load the dishwasher and wash up'
    """
    # the whole label, dashes kept: "Tidy up - load the dishwasher" is not "Tidy up"
    # (draw 14: 12 titles lost their second half, one became another row's label)
    head = re.sub(r"\s+", " ", text).strip()
    if len(head) <= limit:
        return head
    cut = head[:limit + 1].rsplit(" ", 1)[0].rstrip(" ,;:.")
    return cut + "..."


# ------------------------------------------------------------------ the text's own words
_TARGET_RE = re.compile(r"\b(?:into|in|to|onto|on|over|inside)\s+(?:the\s+|your\s+|a\s+|an\s+|each\s+)?"
                        r"([a-z][a-z0-9 ]*(?:-[a-z][a-z0-9 ]*)*)")   # "a medium-heat pan"
_VERBS = [  # (surface forms, verb key); the first verb in the step's title decides
    (("stir", "mix", "combine", "fold"), "stir"),
    (("whisk", "beat"), "whisk"),
    (("chop", "cut", "slice", "dice", "halve", "mince", "quarter"), "chop"),
    (("peel",), "peel"),
    (("grate", "zest"), "grate"),
    (("wash", "rinse"), "wash"),
    (("fill",), "fill"),
    (("boil",), "boil"),
    (("press", "push"), "press"),
    (("turn on", "switch on", "start"), "turn_on"),
    (("crack", "break"), "crack"),
    (("pour", "add", "put", "place", "tip", "transfer", "drizzle", "insert", "top"), "add"),
    (("sprinkle", "season"), "sprinkle"),
    (("knead",), "knead"),
    (("squeeze",), "squeeze"),
    (("weigh", "measure"), "weigh"),
]


def _forms(verb: str) -> str:
    """Regex of a verb's inflections: "stir" -> stir, stirs, stirred, stirring; "chop" ->
    chopped; "slice" -> sliced, slicing."""
    stem = re.escape(verb[:-1]) if verb.endswith("e") and " " not in verb else re.escape(verb)
    if stem != re.escape(verb):
        return rf"(?:{re.escape(verb)}s?|{stem}(?:ed|ing))"
    return rf"{stem}(?:{re.escape(verb[-1])}?(?:ed|ing)|s|es)?"


def _verb_text(text: str) -> str:
    """Lower-case words; a hyphenated compound is one word ("stir-fry" is not "stir")."""
    return " " + re.sub(r"[^a-z ]+", " ", re.sub(r"([a-z])-([a-z])", r"\1\2", text.lower())) + " "


_NEGATION = {"not", "never", "without", "don", "dont", "no", "nor", "avoid"}


def _asked(low: str, m) -> bool:
    """A verb the step asks for: not negated ("don't stir", "without stirring") and not
    the aspectual "start to" ("until they start to brown" switches nothing on)."""
    before = low[:m.start()].split()[-3:]
    if set(before) & _NEGATION:
        return False
    if m.group(0).strip().endswith("ed"):
        return False    # a participle describes a prior state: "the chopped onion", "melted butter"
    return not (m.group(0).strip().startswith("start") and low[m.end():].startswith("to "))


def _verb_hits(low: str, f: str):
    return [m for m in re.finditer(rf" {_forms(f)} ", low) if _asked(low, m)]


def key_verb(text: str) -> str | None:
    """The first verb the step text asks for.

    >>> key_verb("Turn the heat to medium-high, so that the potatoes sizzle, but don't stir until they start to brown")
    >>> key_verb("Stir in the lentils")
    'stir'
    >>> key_verb("Sweat one chopped onion in a pot, stirring")
    'stir'
    """
    low = _verb_text(text)
    best = None
    for forms, key in _VERBS:
        for f in forms:
            hits = _verb_hits(low, f)
            if hits and (best is None or hits[0].start() < best[0]):
                best = (hits[0].start(), key)
    return best[1] if best else None


def all_verbs(text: str) -> list[str]:
    """Every verb key the step text asks for, in the order the text names them."""
    low = _verb_text(text)
    found = {}
    for forms, key in _VERBS:
        for f in forms:
            for m in _verb_hits(low, f):
                found[key] = min(found.get(key, m.start()), m.start())
    return [k for k, _ in sorted(found.items(), key=lambda kv: (kv[1], kv[0]))]


def target_phrases(text: str, heads: frozenset | set = frozenset()) -> list[list[str]]:
    """Content words of each prepositional target phrase of a step text, in order."""
    return [p for group in target_groups(text, heads) for p in group]


#: a recipe's name for a vessel that the tracks call by another noun (issue 34: "Place the
#: chicken breast on a baking sheet": the baking tray); whole phrases only, so a "sheet of
#: foil" stays no vessel
TEXT_VESSEL_ALIASES = {"baking sheet": "baking tray", "sheet pan": "baking tray"}


def heated_phrases(text: str, heads: frozenset | set) -> set[tuple[str, ...]]:
    """The target phrases of a step text that a heating verb's direct object gives ("Heat
    a wok"): with no vessel of that noun tracked, :func:`bind_target` reads them as the
    vessels the vocabulary types alike (the wok tracked as "pan"), never an untracked one.

    >>> heated_phrases("Heat a wok over high heat, then add in the oil", {"wok"})
    {('wok',)}
    """
    return {tuple(p) for g in target_groups(text, heads, heated=True) for p in g}


def target_groups(text: str, heads: frozenset | set = frozenset(), heated: bool = False) -> list[list[list[str]]]:
    """Like :func:`target_phrases`, with alternatives kept together: "in a shallow
    saucepan or deep frying pan" -> ``[[["shallow", "saucepan"], ["deep", "frying", "pan"]]]``.
    A phrase also ends right after a word of ``heads`` (vessel nouns): "In a large bowl
    mix together flour, salt" -> ``[["large", "bowl"]]``, not "together flour salt".
    A vessel phrase of :data:`TEXT_VESSEL_ALIASES` reads as the tracks' noun:

    >>> target_groups("Place the chicken on a baking sheet and spray it", {"tray"})
    [[['baking', 'tray']]]

    With ``heads``, the direct object of a heating verb is a target phrase when it is a
    vessel ("Heat a wok", not "Heat the oil"), and a modal "can" ends a phrase:

    >>> target_groups("Heat a wok over high heat, then add in the oil", {"wok", "pan"})
    [[['wok']], [['high', 'heat']], [['oil']]]
    >>> target_groups("Heat the oil in a heavy bottomed pan", {"wok", "pan"})
    [[['heavy', 'bottomed', 'pan']]]
    >>> target_groups("Turn the heat to the lowest you can (a heat diffuser helps)", {"pan"})
    [[['lowest', 'you']]]

    The instrument of a grinding or blending verb is where the food goes ("Grind coffee
    beans using the electric coffee grinder"), when it is a vessel ("blend with the milk": no):

    >>> target_groups("Grind coffee beans using the electric coffee grinder", {"grinder", "bowl"})
    [[['electric', 'coffee', 'grinder']]]
    >>> target_groups("Blend with the milk until smooth", {"grinder", "blender"})
    []
    """
    low = text.lower()
    for said, meant in TEXT_VESSEL_ALIASES.items():
        low = re.sub(rf"\b{said}s?\b", meant, low)
    low = _MODAL.sub(r"\1 ;", low)     # "the lowest you can": a verb, never the noun can
    hits = [] if heated else [(m, False) for m in _TARGET_RE.finditer(low)]
    hits += [(m, True) for m in _HEAT_OBJECT_RE.finditer(low)] if heads else []
    hits += [(m, True) for m in _INSTRUMENT_RE.finditer(low)] if heads and not heated else []
    out = []
    for m, obj in sorted(hits, key=lambda x: x[0].start()):
        group, kept = [], []
        toks = m.group(1).split() + ["."]
        for i, w in enumerate(toks):
            if w == "or" or w in _PHRASE_END or w == ".":
                ws = words(" ".join(kept))[-3:]
                if ws:
                    group.append(ws)
                kept = []
                if w != "or":
                    break   # the noun phrase ends at the next conjunction or preposition
                continue
            kept.append(w)
            wl, nl = words(w), words(toks[i + 1])
            if heads and wl and wl[-1] in heads and not (nl and nl[-1] in heads) \
                    and toks[i + 1] not in ("or", "."):
                # the vessel noun ends the phrase ("frying pan" stays whole; "or" and the
                # end of text are handled above)
                group.append(words(" ".join(kept))[-3:])
                kept = []
                break
        if obj:     # a heated object names the vessel only when it is one ("heat the oil": no)
            group = [ph for ph in group if ph[-1] in heads]
        if group:
            out.append(group)
    return out


#: a modal "can" after a pronoun ("the lowest you can", "if we can") is no tin
_MODAL = re.compile(r"\b(you|we|i|they|he|she)\s+(?:can(?:not|'t)?|could)\b")
#: the direct object of a heating verb names the step's vessel when it is a vessel noun
#: ("Preheat the pan over medium low heat then add 2 tablespoons olive oil", "Heat a wok
#: over high heat ... add in the oil"); "Heat the oil in a pan" names the pan by its "in"
_HEAT_OBJECT_RE = re.compile(r"\b(?:pre-?heat|heat|warm)(?:s|ing)?\s+(?:up\s+)?(?:the|your|a|an)\s+"
                             r"([a-z][a-z0-9 ]*(?:-[a-z][a-z0-9 ]*)*)")


#: the instrument a grinding or blending verb names ("Grind coffee beans using the electric
#: coffee grinder", "blitz with a food processor") holds what it grinds: the food goes in it
_INSTRUMENT_RE = re.compile(r"\b(?:grind(?:s|ing)?|blend(?:s|ed|ing)?|blitz(?:es|ed|ing)?|whizz(?:es|ed|ing)?|"
                            r"puls(?:e|es|ed|ing)|pur[e\u00e9]e(?:s|d|ing)?|liquidi[sz](?:e|es|ed|ing)|mill(?:s|ed|ing)?)\b[^.;]*?"
                            r"\b(?:using|with)\s+(?:the\s+|your\s+|a\s+|an\s+)?([a-z][a-z0-9 ]*)")


_PHRASE_END = {"and", "then", "with", "until", "for", "to", "in", "on", "over", "into", "onto",
               "while", "before", "after", "so", "or", "it", "them", "from", "at", "by", "of"}


#: a step that mixes what it adds: a mix verb whose clause names them all ("Mix salad
#: ingredients with oil and vinegar", "mix everything well", "whisk together")
_MIXES_ADDS = re.compile(r"\b(?:stir|mix|combine|fold|whisk|toss|blend)\w*\b[^.;]*?\b(?:ingredients|everything|all|together)\b")
#: a step that cooks: a food may go into an untracked pan on the hob while a bowl is
#: stirred (P04_R06_S06), so the bowl stirred is no evidence of where the food went
_COOKS = re.compile(r"\b(?:fr(?:y|ies|ying|ied)|cook\w*|saut\w*|simmer\w*|boil\w*|heat\w*|roast\w*|bak\w*|"
                    r"toast\w*|grill\w*|melt\w*|sizzl\w*|brown\w*|burn\w*|microwave\w*|hob|oven|pan|pot|wok)\b")


def mixes_its_adds(text: str) -> bool:
    """Whether a step text mixes every food it adds and cooks nothing: its stir then
    happens where its adds went (issue 34: the vessel from the step's own operations).

    >>> mixes_its_adds("Mix salad ingredients with oil and vinegar.")
    True
    >>> mixes_its_adds("Add 300ml of water followed by the rice and fry. Mix gently to coat the rice.")
    False
    >>> mixes_its_adds("Stir, then add the lettuce.")
    False
    """
    low = text.lower()
    return bool(_MIXES_ADDS.search(low)) and not _COOKS.search(low)


ROW_VERBS = ("stir", "whisk", "chop", "peel", "grate", "wash", "fill", "boil", "turn_on", "crack", "knead")


_CLAUSE_START = re.compile(r"(?:^|[,;:.\-(]\s*|\b(?:and|then|to|continue|finish|also|or)\s+)$")


def row_verbs(label: str) -> list[str]:
    """The verbs of an activity label that start a clause (the label is a list of what
    was done: "Tidy up - load dishwasher and wash knife"); a verb form after another word
    is a noun ("Measure and record salad mix in phone app": no stir).

    >>> row_verbs("Measure and record salad mix in phone app"), row_verbs("Put coffee beans bag away, rinse spoon")
    (['weigh'], ['add', 'wash'])
    """
    low = label.lower()
    found = {}
    for forms, key in _VERBS:
        for f in forms:
            for m in re.finditer(rf"\b{_forms(f)}\b", low):
                if _CLAUSE_START.search(low[:m.start()]) and _asked(_verb_text(low[:m.start()]) + m.group(0) + " ",
                                                                     re.search(r"\S+ $", _verb_text(low[:m.start()]) + m.group(0) + " ")):
                    found[key] = min(found.get(key, m.start()), m.start())
    return [k for k, _ in sorted(found.items(), key=lambda kv: (kv[1], kv[0]))]


def row_words(how: str) -> str:
    """A step handler's evidence or reason text, worded for an activity row (the label
    is its text; tools and foods are held in the row's own time).

    >>> row_words("step text names 'pan'; the only pan tracked during the step segment (1-2 s)")
    "activity label names 'pan'; the only pan tracked during the activity row (1-2 s)"
    >>> row_words("utensil tracked during the step")
    "utensil tracked during the row's own time (outside the recipe steps inside it)"
    """
    how = how.replace("the step segment", "the activity row").replace("step segment", "activity row")
    how = re.sub(r"\b(the )?step text\b", lambda m: (m.group(1) or "") + "activity label", how)
    how = re.sub(r"\bthe text\b", "the label", how)
    how = re.sub(r"during the step\b(?! segment)", "during the row's own time (outside the recipe steps inside it)",
                 how)
    return how


def ingredient_entity(name: str, vocab) -> str:
    """The substance/food entity an ingredient name stands for: an override of the curated
    vocabulary, else the substance word of the name, else the name itself in snake case."""
    low = re.sub(r"\s+", " ", name.strip().lower())
    if low in vocab.overrides:
        return vocab.overrides[low]
    nt = vocab.data["noun_types"]
    got = _head_type(words(low), vocab)
    if got is not None and vocab.is_a(got[0], "food"):
        # a food by its head noun: "chicken stock cube" is the cube, never the stock
        return re.sub(r"[^a-z0-9]+", "_", low).strip("_")
    for w in reversed(words(low)):
        if w in nt and vocab.is_a(nt[w], "substance"):
            return w
    return re.sub(r"[^a-z0-9]+", "_", low).strip("_") or "ingredient"


SUBSTANCE_WORDS = {"oil", "water", "milk", "sauce", "salt", "pepper", "sugar", "flour", "stock",
                   "vinegar", "honey", "cream", "juice", "syrup", "powder", "spice", "paste", "coffee",
                   "tea", "cumin", "paprika", "turmeric", "cinnamon", "masala", "sumac", "seasoning",
                   "squash", "ketchup", "mayonnaise", "mustard", "yogurt", "yoghurt", "soy", "extract",
                   "essence", "oregano", "thyme", "chilli", "flake", "seed", "nutmeg", "coriander",
                   "dressing", "broth", "wine", "cocoa", "soda", "yeast", "rice", "oat", "lentil",
                   "tahini", "ghee", "curry"}


def ingredient_type(name: str, vocab) -> tuple[str, str]:
    """``(leaf type, rule)`` of an ingredient from its own words (never from an unrelated
    noun class): a substance word of the curated vocabulary, a substance keyword, else
    ``other_food``.

    >>> from analysis.compiler.vocabulary import Vocabulary
    >>> v = Vocabulary.load()
    >>> ingredient_type("medjool dates", v), ingredient_type("tortilla wraps", v)
    (('fruit', 'noun_types:date'), ('bread', 'noun_types:tortilla'))
    >>> ingredient_type("puff pastry", v)
    ('other_food', 'ingredient:food_default')
    >>> [ingredient_type(n, v)[0] for n in ("red bell pepper", "green chilli", "finger chillies",
    ...                                     "coriander", "black pepper", "chilli powder", "chicken stock cube")]
    ['vegetable', 'vegetable', 'vegetable', 'herb', 'spice', 'other_substance', 'other_food']
    """
    ws = words(name)
    got = _head_type(ws, vocab)
    if got is not None:
        return got
    ent = ingredient_entity(name, vocab)
    nt = vocab.data["noun_types"]
    if ent in nt and (vocab.is_a(nt[ent], "substance") or vocab.is_a(nt[ent], "food")):
        return nt[ent], f"noun_types:{ent}"
    for w in reversed(ws):
        if w in nt and vocab.is_a(nt[w], "substance"):
            return nt[w], f"noun_types:{w}"
    if set(ws) & SUBSTANCE_WORDS:
        return "other_substance", "ingredient:substance_word"
    for w in reversed(ws):
        if w in nt and vocab.is_a(nt[w], "food"):
            return nt[w], f"noun_types:{w}"
    return "other_food", "ingredient:food_default"


def _head_type(ws: list[str], vocab) -> tuple[str, str] | None:
    """``(leaf, rule)`` of an ingredient by its head noun (``ingredient_heads`` of the
    vocabulary): a fresh pepper, chilli or herb and a whole spice are foods; a pepper or
    chilli with a ground qualifier ("black pepper") is the ground spice. ``None`` when the
    head noun is none of these (the substance keywords and food default decide)."""
    heads = vocab.ingredient_heads
    if not ws or not heads:
        return None
    head = _spelling(ws[-1])
    fresh, whole = heads.get("fresh", {}), heads.get("whole", {})
    if head in fresh:
        if set(ws[:-1]) & set(heads.get("ground_qualifiers", ())) and vocab.is_a(fresh[head], "vegetable"):
            return heads["ground_type"], f"ingredient_heads:ground_qualifiers:{head}"
        return fresh[head], f"ingredient_heads:fresh:{head}"
    if head in whole:
        return whole[head], f"ingredient_heads:whole:{head}"
    return None


def clause_of(ctx, text: str, ing_words: set) -> str:
    """The sentence of a step text that names the ingredient, when it is the only one
    and it names a target: "In a large bowl mix together flour, salt ... In a separate
    cup mix yeast with sugar": sugar goes to the cup's sentence, never to the first
    vessel of the text. Else the whole text."""
    sents = [x for x in re.split(r"(?<=[.!?;])\s+", text) if x.strip()]
    mine = [x for x in sents if set(words(x)) & ing_words]
    if len(mine) == 1 and any(ph[-1] in ctx.vessel_heads
                              for ph in target_phrases(mine[0], ctx.vessel_heads)):
        return mine[0]
    return text


def fixture_named(ctx, text: str) -> str | None:
    low = text.lower()
    for phrase, (fid, _) in sorted(ctx.vocab.step_fixtures.items()):
        if re.search(rf"\b(?:into|in|inside)\s+(?:the\s+)?{re.escape(phrase)}\b", low) \
                and fid in ctx.w.objects:
            return fid
    return None

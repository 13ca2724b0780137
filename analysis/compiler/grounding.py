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

import re
from dataclasses import dataclass, field

STOP = {"the", "a", "an", "of", "your", "some", "and", "with", "into", "in", "to", "on", "onto",
        "over", "for", "it", "its", "them", "new", "first", "second", "third", "fourth", "one",
        "two", "other", "another", "left", "right", "half", "small", "big", "large", "little",
        "fresh", "piece", "bit", "amount", "desired", "minimum", "little", "then", "this", "that",
        "from", "at", "up", "out", "all", "each", "until", "about", "part", "top", "bottom",
        "empty", "clean", "dirty", "used", "full", "remaining"}
CONTAINER_WORDS = {"bottle", "jar", "tin", "can", "carton", "packet", "pack", "bag", "box", "tub",
                   "container", "sachet", "grinder", "shaker", "pot", "jug", "punnet", "tube"}
# never the target of an add, pour or stir: covers and boards are not vessels, a kettle
# only ever holds water (filled at the tap, not by a recipe add)
EXCLUDED_TARGETS = {"lid", "chopping_board", "kettle"}
STIR_TOOLS = {"spoon", "fork", "spatula", "whisk_tool", "ladle"}   # a towel is not a stirrer
COLOUR_WORDS = {"black", "white", "red", "green", "blue", "yellow", "orange", "brown", "pink",
                "purple", "grey", "gray", "silver", "golden", "dark", "light", "clear"}
MARGIN = 0.5                                          # seconds of slack on time overlaps
# a vessel not moved during a step or add may have been put down just before it (a bowl
# on the counter is stirred, not picked up): its last put-down counts only this close
LOOKBACK = 60.0
UNTRACKED_RULE = "ingredient_without_track_at_default_location"
# "<part> of X" names X ("piece of bread" is bread); any other "X of Y" is an X ("bowl of
# flour" is a bowl, "bottle of squash" a bottle): the world's typing rule (worlds.track_entity)
PART_WORDS = {"piece", "slice", "half", "bunch", "head", "clove", "end", "ends", "handful", "bit"}


def _sing(w: str) -> str:
    if len(w) > 4 and w.endswith("oes"):
        return w[:-2]
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us")):   # couscous, citrus
        return w[:-1]
    return w


def words(text: str) -> list[str]:
    """Content words of a phrase, lower case and singular, stop words removed."""
    return [_sing(w) for w in re.findall(r"[a-z]+", text.lower()) if w not in STOP and len(w) > 1]


def name_head(name: str) -> str:
    """The head noun of an object's name, read as the world types it: "bowl of flour" is
    a bowl, "large bowl2" a bowl, "piece of bread" bread, "small cup of glass" a cup.

    >>> [name_head(n) for n in ("bowl of flour", "large bowl2", "piece of bread", "small cup of glass")]
    ['bowl', 'bowl', 'bread', 'cup']
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
    ws = words(low)
    return ws[-1] if ws else ""


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


_SPELLINGS = {"yoghurt": "yogurt", "chili": "chilli"}


def _spelling(w: str) -> str:
    return _SPELLINGS.get(w, w)


def overlaps(a0: float, a1: float, b0: float, b1: float, margin: float = MARGIN) -> bool:
    return a0 < b1 + margin and b0 < a1 + margin


@dataclass
class StepWindow:
    recipe: str
    step: str
    text: str
    video: str
    start: float            # step segment
    end: float
    win_start: float        # with the step's prep segments
    index: int              # occurrence of this step in the episode (0 = first)
    spans: tuple = ()       # the step segment and its own prep segments ((start, end), ...)
    row: str = ""           # an activity row's source row (then ``text`` is its label)
    own: tuple = ()         # a row's own time: its span minus the step/prep segments inside it


@dataclass
class Planned:
    """One grounded source event, to be emitted as an operation at ``time``.

    ``roles`` maps role names to entity IDs; ``evidence`` maps the same role names to the
    observed reference that decided the binding. ``hold`` is the entity that must be in
    the hand at ``time`` (its track is reserved for this event)."""
    kind: str                       # add | step
    time: float
    action: str                     # pour | add_ingredient | empty_into | insert | stir | ...
    roles: dict
    evidence: dict
    refs: dict                      # the source row: recipe/ingredient/step/video/start/end
    hold: str | None = None
    hold_track: str | None = None
    step: StepWindow | None = None
    title: str = ""
    what: str = ""
    pickup: str | None = None       # curated fixture ``hold`` is picked up from just before


@dataclass
class Grounding:
    planned: list[Planned] = field(default_factory=list)
    dropped: list[dict] = field(default_factory=list)
    checks: list[dict] = field(default_factory=list)        # source checks (not compiled)
    facts: dict = field(default_factory=dict)               # extra initial facts -> provenance
    objects: dict = field(default_factory=dict)             # extra entities (substances)


def step_windows(world, recipes) -> list[StepWindow]:
    out = []
    seen: dict = {}
    for rid in sorted(recipes):
        r = recipes[rid]
        for cap in r.captures:
            if not set(cap.videos) & set(world.videos):
                continue
            for s in cap.segments:
                if s.kind != "step" or s.span.video not in world.videos:
                    continue
                preps = [p.span for p in cap.segments if p.kind == "prep" and p.step_id == s.step_id
                         and p.span.video == s.span.video and p.span.end <= s.span.start + MARGIN
                         and p.span.end >= s.span.start - 30.0]
                ws = min([s.span.start] + [p.start for p in preps])
                k = (rid, s.step_id)
                out.append(StepWindow(rid, s.step_id, r.steps.get(s.step_id, ""), s.span.video,
                                      s.span.start, s.span.end, ws, seen.get(k, 0),
                                      tuple([(s.span.start, s.span.end)] + [(p.start, p.end) for p in preps])))
                seen[k] = seen.get(k, 0) + 1
    out.sort(key=lambda w: (w.video, w.start, w.end, w.step))
    return out


def title_of(text: str, limit: int = 70) -> str:
    """The annotation's own words, cut at a word boundary (never mid-word).

    >>> title_of("Pour the soy sauce and the sesame oil in a small bowl and mix them well together", 40)
    'Pour the soy sauce and the sesame oil...'
    """
    head = re.split(r"\s+-\s+|-\s", text, maxsplit=1)[0].strip() or text.strip()
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


def target_groups(text: str, heads: frozenset | set = frozenset()) -> list[list[list[str]]]:
    """Like :func:`target_phrases`, with alternatives kept together: "in a shallow
    saucepan or deep frying pan" -> ``[[["shallow", "saucepan"], ["deep", "frying", "pan"]]]``.
    A phrase also ends right after a word of ``heads`` (vessel nouns): "In a large bowl
    mix together flour, salt" -> ``[["large", "bowl"]]``, not "together flour salt"."""
    out = []
    for m in _TARGET_RE.finditer(text.lower()):
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
        if group:
            out.append(group)
    return out


_PHRASE_END = {"and", "then", "with", "until", "for", "to", "in", "on", "over", "into", "onto",
               "while", "before", "after", "so", "or", "it", "them", "from", "at", "by", "of"}


class Grounder:
    def __init__(self, world, recipes, vocab):
        self.w = world
        self.vocab = vocab
        self.recipes = recipes
        self.out = Grounding()
        self.windows = step_windows(world, recipes)
        self.tokens = {e: set(words(" ".join(n))) for e, n in world.names.items()}
        self.name_words = {e: [words(x) for x in n] for e, n in world.names.items()}
        self.heads = {e: {ws[-1] for ws in wl if ws} | {re.sub(r"\d+$", "", e).rstrip("_").split("_")[-1]}
                      for e, wl in self.name_words.items()}
        # the head noun each name has as the world types it (a "bowl of flour" is a bowl;
        # the override stem's head for curated names: "milk frother base" is a frother):
        # a vessel is matched to the text's vessel noun by this head, never by another
        # word of its name ("glass bowl" is no glass, "small cup of glass" no glass)
        self.own_heads = {}
        for e, n in world.names.items():
            hs = {name_head(x) for x in n} - {""}
            for x in n:
                base = re.sub(r"\s*\d+$", "", x.strip().lower())
                if base in vocab.overrides:
                    hs.add(vocab.overrides[base].split("_")[-1])
            self.own_heads[e] = hs
        # what a "<vessel> of <content>" name says it holds ("bowl of flour": flour)
        self.contents = {e: {_spelling(w) for x in n for w in name_content(x)} for e, n in world.names.items()}
        nt = vocab.data["noun_types"]
        self.vessel_heads = {w for w, leaf in nt.items() if ":" not in w and leaf not in EXCLUDED_TARGETS
                             and (vocab.is_a(leaf, "vessel") or vocab.is_a(leaf, "electric_container"))}
        # every timed step and prep segment: (video, recipe, step, kind, start, end)
        self.segments = sorted({(x.span.video, rid, x.step_id, x.kind, x.span.start, x.span.end)
                                for rid, r in recipes.items() for cap in r.captures for x in cap.segments
                                if x.span.video in world.videos})
        # (recipe, step, video) -> first evidenced add target (instances are per video)
        self.step_targets: dict = {}
        self.undecided_adds: list = []     # (video, start, end) of adds with a source, no target
        self.tracks_of: dict[str, list] = {}
        for tr in world.tracks:
            self.tracks_of.setdefault(tr.entity, []).append(tr)

    # ----------------------------------------------------------------- helpers
    def is_a(self, ent, t) -> bool:
        return ent in self.w.objects and self.vocab.is_a(self.w.objects[ent], t)

    def target_ok(self, ent) -> bool:
        """A vessel by its own name: its head noun is a vessel word of the curated
        vocabulary (never a loose noun-class match: "heat diffuser" is not a blender)."""
        t = self.w.objects.get(ent)
        if not t or t in EXCLUDED_TARGETS or not (
                self.vocab.is_a(t, "vessel") or self.vocab.is_a(t, "electric_container")):
            return False
        return bool(self.own_heads.get(ent, set()) & self.vessel_heads)

    @staticmethod
    def nearest(trs, t0, t1):
        """The track of an instance that witnesses an event at ``[t0, t1]``: one that
        overlaps it, else the last one before it, else the first after it (a card then
        cites the track the event used, not an earlier handling)."""
        over = [tr for tr in trs if overlaps(tr.start, tr.end, t0, t1, 0.0)]
        if over:
            return min(over, key=lambda x: (x.start, x.track_id))
        before = [tr for tr in trs if tr.end <= t0]
        if before:
            return max(before, key=lambda x: (x.end, x.track_id))
        return min(trs, key=lambda x: (x.start, x.track_id))

    def overlapping(self, t0, t1, margin=MARGIN):
        return [tr for tr in self.w.tracks if overlaps(tr.start, tr.end, t0, t1, margin)]

    def track_ref(self, tr) -> dict:
        """The track's source row, with its own video's times."""
        return {"file": "assoc_info.json", "video": tr.assoc.video, "association": tr.assoc.assoc_id,
                "track": tr.track_id, "name": tr.assoc.name, "start": round(tr.start - tr.offset, 5),
                "end": round(tr.end - tr.offset, 5)}

    def local(self, video: str, t: float) -> float:
        return round(t - self.w.offsets.get(video, 0.0), 5)

    def drop(self, kind, what, reason, t, **refs):
        self.out.dropped.append({"kind": kind, "what": what, "reason": reason, "time": t,
                                 "refs": {k: v for k, v in sorted(refs.items()) if v is not None}})

    def named_entities(self, head: str) -> list[str]:
        return sorted(e for e, toks in self.tokens.items() if head in toks and e in self.tracks_of)

    def bind_target(self, text: str, t0: float, t1: float, win: StepWindow | None,
                    exclude: set | dict, fallback: bool = True, video: str | None = None,
                    event: str | None = None) -> tuple[str | None, dict | None, str]:
        """The vessel the event ``[t0, t1]`` (a step segment, or an add) happens in: the
        vessel the step text names, decided by :meth:`vessel_at`; or, with ``fallback``
        and no vessel named, the only vessel tracked during the event itself.

        A named vessel is an instance whose own head noun (:func:`name_head`: "bowl of
        flour" and "large bowl2" are bowls) is the noun of the text's target phrase,
        tracked in the event's own video (HD-EPIC gives no identity across videos); among
        them, the ones sharing most words with the phrase ("metal V60 filter")."""
        video = video or (win.video if win else None)
        ev = event or "the step segment"
        if not isinstance(exclude, dict):
            exclude = {e: "the event's own object" for e in exclude}

        def in_video(e):
            return any(tr.assoc.video == video for tr in self.tracks_of[e])

        for group in target_groups(text, self.vessel_heads):
            heads, cands, elsewhere, others = [], set(), set(), {}
            for phrase in group:
                head = phrase[-1]
                alln = [e for e in sorted(self.tracks_of) if head in self.own_heads.get(e, ()) and self.target_ok(e)]
                others.update({e: exclude[e] for e in alln if e in exclude and in_video(e)})
                mine = [e for e in alln if e not in exclude]
                if alln:
                    heads.append(head)
                    here = [e for e in mine if in_video(e)]
                    elsewhere |= set(mine) - set(here)
                    if here:
                        best = max(len(set(phrase) & self.tokens[e]) for e in here)
                        cands |= {e for e in here if len(set(phrase) & self.tokens[e]) == best}
                        others.update({e: f"its name shares fewer words with '{' '.join(phrase)}'"
                                       for e in here if len(set(phrase) & self.tokens[e]) < best})
                elif head not in SUBSTANCE_WORDS and (self.named_entities(head) or head in self.vessel_heads):
                    heads.append(head)     # a named vessel that is not tracked: no fallback
            if not heads:
                continue            # "into the coffee": the drink, its vessel is not named
            named = "' or '".join(heads)
            others = {e: r for e, r in others.items() if e not in cands}
            if not cands and elsewhere:
                return None, None, (f"step text names '{named}'; such vessels are tracked in another video "
                                    f"({', '.join(sorted(elsewhere))}), none in {video} (HD-EPIC gives no "
                                    f"identity across videos)")
            if not cands:
                return None, None, (f"step text names '{named}', and no tracked vessel has that head noun"
                                    + (" apart from " + ", ".join(f"{e} ({r})" for e, r in sorted(others.items()))
                                       if others else ""))
            return self.vessel_at(named, "/".join(heads), sorted(cands), t0, t1, video, ev, win, others)
        if not fallback:
            return None, None, "no vessel named in the step text (a vessel held while a food is added may be its source)"
        # The text names no vessel: only a vessel handled *during the event itself* (the
        # add, or the step segment) decides it. A vessel last handled earlier in the
        # step's prep window is not evidence: the ingredient usually goes into an
        # untracked pan ("salt to the mixture" is not the bowl moved 95 s earlier).
        seg = f"{ev} ({self.local(video, t0):.2f}-{self.local(video, t1):.2f} s)" if video else ev
        held = sorted({tr.entity for tr in self.overlapping(t0, t1, 0.0) if self.target_ok(tr.entity)})
        # a vessel named for a content the step text names ("cup of yogurt" while the text
        # adds yoghurt) is that content's source: it is spooned out of, not stirred in
        said = {_spelling(w) for w in words(text)}
        skip = [f"{e} ({exclude[e]})" for e in held if e in exclude] + \
               [f"{e} (named for a content the step text names: its source)" for e in held
                if e not in exclude and self.contents.get(e, set()) & said]
        near = [e for e in held if e not in exclude and not self.contents.get(e, set()) & said]
        note = f"; not counted: {', '.join(skip)}" if skip else ""
        if len(near) == 1:
            tr = self.nearest([tr for tr in self.overlapping(t0, t1, 0.0) if tr.entity == near[0]], t0, t1)
            return near[0], {"how": f"the text names no vessel; the only vessel tracked during {seg}{note}",
                             **self.track_ref(tr)}, ""
        return None, None, (f"{len(near)} vessels handled during the event {near}{note}" if near
                            else f"no vessel named in the step text or handled during the event{note}")

    def put_away(self, tr, side: str = "dst") -> str | None:
        """Why a vessel is not where a step or add happens: the observed destination of
        its track (``side="dst"``: where it was put down) or the observed source of its
        first track (``side="src"``: where it was until then) is storage, an enclosed
        appliance or a sink."""
        fx, ref, file = (tr.dst, tr.dst_ref, tr.dst_file) if side == "dst" else (tr.src, tr.src_ref, None)
        if fx is None or tr.conflict:
            return None
        if ("enclosing", fx) in self.w.facts or self.is_a(fx, "sink"):
            return f"{'put in' if side == 'dst' else 'taken from'} {fx} ({file or 'VQA/itinerary'} {ref})"
        return None

    def other_step(self, tr, win: StepWindow | None) -> str | None:
        """The other step a track was handled for: it overlaps a step or prep segment of
        another step and none of ``win``'s own segments (the frying pan of the bacon step
        S02, put down 6 s before the pasta add of S01, is not the pasta's pan)."""
        if win is not None and any(overlaps(tr.start, tr.end, a, b, 0.0) for a, b in win.spans):
            return None
        mine = (win.recipe, win.step) if win is not None else None
        for v, rid, sid, kind, a, b in self.segments:
            if v == tr.assoc.video and (rid, sid) != mine and overlaps(tr.start, tr.end, a, b, 0.0):
                return (f"its last track {self.local(v, tr.start):.2f}-{self.local(v, tr.end):.2f} s is in a "
                        f"{kind} segment of {sid} ({self.local(v, a):.2f}-{self.local(v, b):.2f} s), "
                        f"not in this step's own segments")
        return None

    def vessel_at(self, named: str, noun: str, cands: list, t0: float, t1: float, video: str,
                  ev: str, win: StepWindow | None = None, others: dict | None = None,
                  role: str = "vessel", other_steps: bool = True) -> tuple[str | None, dict | None, str]:
        """Which of the named vessels ``cands`` (instances tracked in ``video``) the event
        ``[t0, t1]`` happens in, from their tracks in that video. Each candidate is

        * *tracked during* the event: a track overlaps ``[t0, t1]`` (no margin); else
        * *put down before* it: its last track before the event ended before ``t0``, so
          it is not picked up again before the event ends (*recently* when that was at
          most ``LOOKBACK`` s before ``t0``); else
        * *first picked up after* it (only listed in the reason of a drop);

        not counted when an observed destination of that last track (or an observed
        source of the first track after the event) is storage, an enclosed appliance or a
        sink, nor when that last track was handled for another step
        (:meth:`other_step`). ``others`` (instances of the noun excluded by the caller or
        by the text's words) are named in the ``how`` or reason when they would have
        counted. The vessel is

        1. the one candidate tracked during the event, when no other was put down
           recently (a vessel just put down is as likely the one stirred as one held
           meanwhile, which may be a source: the "bowl of flour");
        2. with none tracked during the event, the one candidate put down recently.

        Anything else is dropped with the reason: two candidates are never told apart by
        which was handled last, and a vessel last put down longer ago, or first picked up
        after the event, is not evidence of where the event happens (the text's noun
        alone would decide it; an untracked vessel may stand on the hob). The ``how``
        text states what was checked.

        The same rule binds the food a step action works on and the appliance it switches
        on (``role``: "food", "appliance"; :meth:`named_at`): the food chopped on a board
        is usually put down just before it is cut, and a food or kettle handled minutes
        earlier in the prep window is not evidence of what the step segment acts on.
        With ``other_steps=False`` (a food or appliance the text names by its own name) a
        track handled for another step still counts: the potatoes washed in one step are
        the ones the next step chops, while a vessel named only by its noun ("a pan") and
        last used for another step is that step's vessel."""
        seg = f"{ev} ({self.local(video, t0):.2f}-{self.local(video, t1):.2f} s)"
        during, recent, rest, later, away = {}, {}, {}, {}, []
        for e in cands + sorted(others or {}):
            trs = [tr for tr in self.tracks_of[e] if tr.assoc.video == video]
            over = [tr for tr in trs if overlaps(tr.start, tr.end, t0, t1, 0.0)]
            before = [tr for tr in trs if tr.end <= t0]
            last = max(before, key=lambda x: (x.end, x.track_id)) if before else None
            if e in (others or {}):
                # not a candidate; named in the reason when it would otherwise have counted
                if over or (last is not None and t0 - last.end <= LOOKBACK):
                    away.append(f"{e} ({others[e]})")
                continue
            if over:
                during[e] = min(over, key=lambda x: (x.start, x.track_id))
                continue
            if last is not None:
                why = self.put_away(last)
                if why:
                    if t0 - last.end <= LOOKBACK:
                        away.append(f"{e} {why} at {self.local(video, last.end):.2f} s")
                elif t0 - last.end > LOOKBACK:
                    rest[e] = last
                elif other_steps and self.other_step(last, win):
                    away.append(f"{e} ({self.other_step(last, win)})")
                else:
                    recent[e] = last
                continue
            first = min(trs, key=lambda x: (x.start, x.track_id))
            if not self.put_away(first, "src"):
                later[e] = first

        def span(tr):
            return f"{self.local(video, tr.start):.2f}-{self.local(video, tr.end):.2f} s"

        def put(e, tr):
            return f"{e} put down at {self.local(video, tr.end):.2f} s"

        excl = f"; not counted: {', '.join(away)}" if away else ""
        if during:
            if len(during) == 1 and not recent:
                e, tr = next(iter(during.items()))
                return e, {"how": f"step text names '{named}'; the only {noun} of the video tracked during "
                                  f"{seg} (track {span(tr)}), and no other {noun} put down in the "
                                  f"{LOOKBACK:.0f} s before it{excl}", **self.track_ref(tr)}, ""
            qual = [f"{e} tracked {span(tr)}" for e, tr in sorted(during.items())] + \
                   [put(e, tr) for e, tr in sorted(recent.items())]
            return None, None, (f"step text '{named}': ambiguous {role}, {len(qual)} {noun} instances tracked "
                                f"during {seg} or put down in the {LOOKBACK:.0f} s before it ({'; '.join(qual)})")
        if len(recent) == 1:
            e, tr = next(iter(recent.items()))
            return e, {"how": f"step text names '{named}'; no {noun} of the video is tracked during {seg}; "
                              f"the only {noun} of the video put down in the {LOOKBACK:.0f} s before it: "
                              f"put down at {self.local(video, tr.end):.2f} s ({t0 - tr.end:.1f} s before it), "
                              f"not picked up again before it ends{excl}", **self.track_ref(tr)}, ""
        if recent:
            return None, None, (f"step text '{named}': ambiguous {role}, {len(recent)} {noun} instances put down "
                                f"in the {LOOKBACK:.0f} s before {seg} and not tracked during it "
                                f"({'; '.join(put(e, tr) for e, tr in sorted(recent.items()))})")
        if rest or later:
            return None, None, (f"step text names '{named}'; no {noun} tracked during {seg} or put down in the "
                                f"{LOOKBACK:.0f} s before it ("
                                + "; ".join([put(e, tr) for e, tr in sorted(rest.items())]
                                            + [f"{e} first picked up at {self.local(video, tr.start):.2f} s"
                                               for e, tr in sorted(later.items())]) + f"){excl}")
        return None, None, (f"step text names '{named}'; no {noun} of the video is tracked during {seg} "
                            f"or put down before it{excl}")

    def windows_at(self, video, t0, t1, recipe):
        return [w for w in self.windows if w.video == video and w.recipe == recipe
                and overlaps(w.start, w.end, t0, t1, 0.0)]

    # ----------------------------------------------------------------- adds
    def ground_adds(self):
        for rid in sorted(self.recipes):
            r = self.recipes[rid]
            for cap in r.captures:
                if not set(cap.videos) & set(self.w.videos):
                    continue
                matches = {}
                for iid, name in sorted(cap.ingredients.items()):
                    ws = set(words(name))
                    matches[iid] = ws
                for ev in cap.events:
                    if ev.span.video not in self.w.videos:
                        continue
                    refs = {"file": "complete_recipes.json", "recipe": rid, "ingredient": ev.ingredient_id,
                            "name": ev.name, "video": ev.span.video,
                            "start": self.local(ev.span.video, ev.span.start),
                            "end": self.local(ev.span.video, ev.span.end)}
                    if ev.kind == "weigh":
                        self.drop("add", f"weigh {ev.ingredient_id} ({ev.name})",
                                  "weigh events are not compiled (no scale binding rule)", ev.span.start,
                                  **refs)
                        continue
                    self.ground_add(rid, cap, ev, matches, refs)

    def ingredient_tracks(self, ing_words: set, t0: float, t1: float):
        out = []
        for tr in self.overlapping(t0, t1):
            if any(self.names_ingredient(ws, ing_words) for ws in self.name_words.get(tr.entity, [])):
                out.append(tr)
        return out

    @staticmethod
    def names_ingredient(ws: list, ing_words: set) -> bool:
        """A track name names an ingredient when its head noun is one of the ingredient's
        words ("garlic", "bottle of squash"), or when its head is a container word and
        it names the ingredient ("milk bottle"); "milk frother base" is not milk."""
        if not ws:
            return False
        if ws[-1] in ing_words:
            return True
        # a colour names the container, not its content: "black jar1" is not black pepper
        return ws[-1] in CONTAINER_WORDS and bool((set(ws[:-1]) - COLOUR_WORDS) & ing_words)

    def ground_add(self, rid, cap, ev, matches, refs):
        t0, t1 = ev.span.start, ev.span.end
        what = f"add {ev.ingredient_id} ({ev.name})"
        mine = self.ingredient_tracks(matches[ev.ingredient_id], t0, t1)
        generic = False
        if not mine:
            # a container whose name names no content ("bottle") held during the whole add
            # of a substance, and no other container held then: it is the add's source
            held = [tr for tr in self.overlapping(t0, t1, 0.0) if self.is_a(tr.entity, "container")]
            plain = [tr for tr in held if all(set(ws) <= CONTAINER_WORDS for ws in self.name_words.get(tr.entity, []))
                     and tr.start <= t0 + MARGIN and tr.end >= t1 - MARGIN]
            leaf, _ = ingredient_type(ev.name, self.vocab)
            if (len({tr.entity for tr in held}) == 1 and len(plain) == 1
                    and self.vocab.is_a(leaf, "substance")):
                mine, generic = plain, True
        if not mine:
            others = sorted({iid for iid, ws in matches.items() if iid != ev.ingredient_id
                             and self.ingredient_tracks(ws, t0, t1)})
            if others:
                self.out.checks.append({"check": "add_time_matches_other_ingredient", "what": what,
                                        "reason": f"the tracks overlapping this add are named for "
                                                  f"{others}, not for {ev.name!r}: add times swapped or "
                                                  f"mislabelled", "time": t0, "refs": refs})
            else:
                self.add_untracked(rid, ev, matches, refs, what)
            return
        ents = sorted({tr.entity for tr in mine})
        if len(ents) > 1:
            strict = [tr for tr in mine if overlaps(tr.start, tr.end, t0, t1, 0.0)]
            if len({tr.entity for tr in strict}) == 1:
                mine, ents = strict, [strict[0].entity]
        if len(ents) > 1:
            self.drop("add", what, f"several tracked objects match the ingredient: {ents}", t0, **refs)
            return
        ent = ents[0]
        tr = sorted(mine, key=lambda x: (abs(x.start - t0), x.track_id))[0]
        if len([x for x in mine if x.entity == ent]) > 1:
            tr = [x for x in mine if x.entity == ent and overlaps(x.start, x.end, t0, t1, 0.0)]
            if len(tr) != 1:
                self.drop("add", what, "several tracks of the ingredient overlap the add", t0, **refs)
                return
            tr = tr[0]
        ok, win = self.step_of_add(rid, ev, matches, refs, what)
        if not ok:
            return
        text = win.text if win else ""
        ttext = self.clause_of(text, matches[ev.ingredient_id])
        typ = self.w.objects[ent]
        leaf, _ = ingredient_type(ev.name, self.vocab)
        subst = self.vocab.is_a(leaf, "substance")
        container = bool(self.tokens.get(ent, set()) & CONTAINER_WORDS) or self.vocab.is_a(typ, "sealable_container") \
            or self.vocab.is_a(typ, "electric_container") or (self.vocab.is_a(typ, "vessel") and subst)
        ev_ing = {"how": "ingredient of complete_recipes.json", **refs}
        src_ev = {"how": ("the only container held during the whole add (its name names no content)"
                          if generic else "track named for the ingredient overlaps the add"), **self.track_ref(tr)}
        if container:
            if not subst and not self.vocab.is_a(leaf, "food"):
                self.drop("add", what, f"ingredient typed {leaf}", t0, **refs)
                return
            sub = ingredient_entity(ev.name, self.vocab)
            self.out.objects.setdefault(sub, leaf)
            self.out.facts.setdefault(("in", sub, ent), {"source": "observed", "refs": {
                **self.track_ref(tr), "ingredient": ev.ingredient_id, "recipe": rid,
                "how": "the track's name names the ingredient it holds"}})
            target, tev, why = self.bind_target(ttext, t0, t1, win, {ent}, video=ev.span.video, event="the add")
            target, tev = self.same_step_target(rid, win, target, tev, why, {ent})
            if target is None:
                self.drop("add", what, f"target not decided: {why}", t0, **refs)
                self.undecided_adds.append((ev.span.video, t0, t1))
                return
            action = "pour" if subst else "empty_into"
            roles = {"s": sub, "src": ent, "dst": target}
            evid = {"s": ev_ing, "src": src_ev, "dst": tev}
        else:
            if self.vocab.is_a(typ, "food"):
                action = "add_ingredient"
            elif self.vocab.is_a(typ, "supply"):
                action = "insert"
            else:
                self.drop("add", what, f"matching track {ent} is typed {typ} (not food, supply or a container)",
                          t0, **refs)
                return
            if action == "insert":
                fx = self.fixture_named(text)
                if fx is None:
                    target, tev, why = self.bind_target(ttext, t0, t1, win, {ent}, video=ev.span.video, event="the add")
                    action = "put_in_container"
                else:
                    target, tev, why = fx, {"how": "step text names the appliance", "file": "complete_recipes.json",
                                            "recipe": rid, "step": win.step if win else None}, ""
            else:
                target, tev, why = self.bind_target(ttext, t0, t1, win, {ent}, video=ev.span.video, event="the add")
                target, tev = self.same_step_target(rid, win, target, tev, why, {ent})
            if target is None:
                self.drop("add", what, f"target not decided: {why}", t0, **refs)
                self.undecided_adds.append((ev.span.video, t0, t1))
                return
            roles = {"o": ent, "c": target}
            evid = {"o": src_ev, "c": tev}
        t = min(max(t0, tr.start + 0.01), tr.end - 0.01)
        if win is not None and action != "insert":
            self.step_targets.setdefault((rid, win.step, win.video), (roles.get("dst") or roles.get("c"),
                                                          evid.get("dst") or evid.get("c"), t))
        self.out.planned.append(Planned(
            "add", round(t, 3), action, roles, evid,
            {**refs, "step": win.step if win else None}, hold=ent, hold_track=tr.track_id, step=win,
            title=title_of(text) if text else f"Add {ev.name}", what=what))

    def step_of_add(self, rid, ev, matches, refs, what):
        """``(ok, window)``: the step window of an add (``ok`` False: the
        ``overlapping_steps`` source check was recorded)."""
        t0, t1 = ev.span.start, ev.span.end
        steps = self.windows_at(ev.span.video, t0, t1, rid)
        if len({w.step for w in steps}) > 1:
            named = [w for w in steps if set(words(w.text)) & matches[ev.ingredient_id]]
            if len({w.step for w in named}) != 1:
                self.out.checks.append({"check": "overlapping_steps", "what": what,
                                        "reason": f"steps {sorted({w.step for w in steps})} overlap the add "
                                                  "and the text does not decide", "time": t0, "refs": refs})
                return False, None
            steps = named
        return True, (steps[0] if steps else None)

    def add_untracked(self, rid, ev, matches, refs, what):
        """An add no track names the ingredient for (and no track of another ingredient
        overlaps): the add row observes that the ingredient went into something then. When
        the vessel the step text names is bound by the target rule (:meth:`bind_target`
        without its fallback: with no track of the food, the only vessel held during the
        add may be the food's source),
        the add compiles as ``add_ingredient(food, vessel, f)``: the food entity from the
        ingredient's own words, observed from the add row; the vessel observed from its
        track; the food's place before the add curated (rule
        ``ingredient_without_track_at_default_location``) and picked up there just before
        the add (curated). A substance is not compiled: it cannot be held without a
        container, and no container is invented."""
        t0, t1 = ev.span.start, ev.span.end
        base = "no track named for the ingredient overlaps the add"

        def check(reason):
            self.out.checks.append({"check": "add_without_track", "what": what,
                                    "reason": f"{base}; {reason}", "time": t0, "refs": refs})

        leaf, _ = ingredient_type(ev.name, self.vocab)
        if self.vocab.is_a(leaf, "substance"):
            check(f"a substance ({leaf}) is not held without a container, and no container of it is "
                  "tracked during the add (none is invented): not compiled")
            return
        if not self.vocab.is_a(leaf, "food"):
            check(f"ingredient typed {leaf}: not compiled")
            return
        sub = ingredient_entity(ev.name, self.vocab)
        if sub in self.out.objects:
            check(f"{sub} was already given a curated place by an earlier add without a track "
                  "(one curated source per entity): not compiled")
            return
        if sub in self.w.objects:
            check(f"an object {sub} is already in the world (tracked or a fixture): its place is not "
                  "curated anew: not compiled")
            return
        # a food tracked during the add under another name ("wheat bixie" for cereal) may
        # be the ingredient itself: a second, curated entity of it would duplicate it
        foods = sorted({tr.entity for tr in self.overlapping(t0, t1, 0.0) if self.is_food(tr.entity)})
        if foods:
            check(f"a food tracked during the add ({', '.join(foods)}) may be the ingredient under another "
                  "name: not compiled")
            return
        ok, win = self.step_of_add(rid, ev, matches, refs, what)
        if not ok:
            return
        text = win.text if win else ""
        ttext = self.clause_of(text, matches[ev.ingredient_id])
        # only a vessel the step text names: with no track of the food, a vessel held
        # during the add is as likely its source (the bowl the onion is tipped out of)
        target, tev, why = self.bind_target(ttext, t0, t1, win, set(), fallback=False, video=ev.span.video,
                                            event="the add")
        if target is None:
            check(f"target not decided: {why}")
            return
        from .worlds import default_location     # worlds imports this module
        fixtures = [{"id": f, "type": self.w.objects[f]} for f in sorted(self.w.fixture_ids)
                    if f in self.w.objects]
        place, rule = default_location(leaf, fixtures, self.w.work_counter, self.vocab)
        self.out.objects[sub] = leaf
        self.out.facts[("at", sub, place)] = {"source": "curated", "refs": {
            "rule": f"{UNTRACKED_RULE}:{rule}", "recipe": rid, "ingredient": ev.ingredient_id,
            "how": "no track names the ingredient: its place before the add is a curated default"}}
        ev_ing = {"how": "ingredient of complete_recipes.json (the add row: no track names it)", **refs}
        if win is not None:
            self.step_targets.setdefault((rid, win.step, win.video), (target, tev, t0))
        self.out.planned.append(Planned(
            "add", round(t0, 3), "add_ingredient", {"o": sub, "c": target}, {"o": ev_ing, "c": tev},
            {**refs, "step": win.step if win else None}, hold=sub, hold_track=None, step=win,
            title=title_of(text) if text else f"Add {ev.name}", what=what, pickup=place))

    def clause_of(self, text: str, ing_words: set) -> str:
        """The sentence of a step text that names the ingredient, when it is the only one
        and it names a target: "In a large bowl mix together flour, salt ... In a separate
        cup mix yeast with sugar": sugar goes to the cup's sentence, never to the first
        vessel of the text. Else the whole text."""
        sents = [x for x in re.split(r"(?<=[.!?;])\s+", text) if x.strip()]
        mine = [x for x in sents if set(words(x)) & ing_words]
        if len(mine) == 1 and any(ph[-1] in self.vessel_heads
                                  for ph in target_phrases(mine[0], self.vessel_heads)):
            return mine[0]
        return text

    def same_step_target(self, rid, win, target, tev, why, exclude):
        """When the step text names no vessel and none is handled in the window, the
        vessel an earlier add *of the same recipe step* was bound to by evidence: one step
        text describes one target ("Add the tomatoes, mango chutney and salt")."""
        if target is not None or win is None or not why.startswith("no vessel named"):
            return target, tev
        prev = self.step_targets.get((rid, win.step, win.video))
        if prev is None or prev[0] in exclude:
            return None, None
        return prev[0], {**prev[1], "how": f"target of an earlier add of the same step {win.step} "
                                            f"at {prev[2]:.1f}s ({prev[1].get('how')})"}

    def fixture_named(self, text: str) -> str | None:
        low = text.lower()
        for phrase, (fid, _) in sorted(self.vocab.step_fixtures.items()):
            if re.search(rf"\b(?:into|in|inside)\s+(?:the\s+)?{re.escape(phrase)}\b", low) \
                    and fid in self.w.objects:
                return fid
        return None

    # ----------------------------------------------------------------- steps
    def ground_steps(self, add_steps: set):
        """Each timed step segment: the first verb of the step text (in text order) whose
        objects the tracks held in the segment bind; the add event itself when the step
        has one."""
        for win in self.windows:
            what = f"step {win.step} at {win.start:.1f}s"
            refs = {"file": "complete_recipes.json", "recipe": win.recipe, "step": win.step,
                    "video": win.video, "start": self.local(win.video, win.start),
                    "end": self.local(win.video, win.end)}
            if (win.recipe, win.step, win.video, win.start) in add_steps:
                continue       # the add event itself is the step's key action
            if self.add_inside(win):
                # the person did an add in this segment (its ingredient track is held)
                # but its target is not decided: the add is the segment's key action, and
                # another verb of the text is not what the person did then (the teaspoon
                # that spooned the sugar did not "mix" the bowl of the first clause)
                self.drop("cue", what, "the segment's key action is an add whose target is not decided",
                          win.start, **refs)
                continue
            verbs = all_verbs(win.text)
            if not verbs:
                self.drop("cue", what, "no key verb the rules compile in the step text", win.start, **refs)
                continue
            reasons = []
            for verb in verbs:
                handler = getattr(self, f"step_{'transfer' if verb == 'add' else verb}", None)
                if handler is None:
                    reasons.append(f"{verb}: no binding rule")
                    continue
                n_drop, n_plan = len(self.out.dropped), len(self.out.planned)
                handler(win, what, refs)
                if len(self.out.planned) > n_plan:
                    del self.out.dropped[n_drop:]
                    break
                reasons += [f"{verb}: {d['reason']}" for d in self.out.dropped[n_drop:]]
                del self.out.dropped[n_drop:]
            else:
                self.drop("cue", what, "; ".join(reasons), win.start, **refs)

    def ground_rows(self, activities):
        """Each activity row's label, compiled as key actions by the step machinery
        (:data:`ROW_VERBS`): the first verb of the label whose objects the tracks bind,
        with tools and foods held during the row's *own* time (its span outside the
        recipe steps and prep segments inside it, which are other units), vessels by the
        vessel rule over the row's span. The action's time lies in the row's own time
        (outside every activity row nested in it), so its group is the row's."""
        for a in activities:
            if a.video not in self.w.videos or a.end <= a.start:
                continue
            inner = sorted((x, y) for v, _, _, _, x, y in self.segments
                           if v == a.video and overlaps(x, y, a.start, a.end, 0.0))
            own, cur = [], a.start
            for x, y in inner:
                if x > cur:
                    own.append((cur, min(x, a.end)))
                cur = max(cur, y)
            if cur < a.end:
                own.append((cur, a.end))
            nested_rows = [(b.start, b.end) for b in activities if b is not a and b.video == a.video
                           and a.start - 1e-9 <= b.start and b.end <= a.end + 1e-9
                           and (b.start, b.end) != (a.start, a.end)]
            win = StepWindow("", a.source_row, a.label, a.video, a.start, a.end, a.start, 0,
                             ((a.start, a.end),), row=a.source_row, own=tuple(own))
            what = f"activity row {a.source_row} ({a.label})"
            refs = {"file": a.source_row.split(":")[0], "row": a.source_row, "label": a.label,
                    "video": a.video, "start": self.local(a.video, a.start), "end": self.local(a.video, a.end)}
            verbs = [v for v in row_verbs(a.label) if v in ROW_VERBS and (
                v != "turn_on" or re.search(r"\b(?:turn|switch)\w*\s+(?:\w+\s+)?on\b", a.label.lower()))]
            if not verbs:
                continue        # a placement or generic label ("Tidy", "Clean up"): nothing to bind
            if not own:
                self.drop("cue", what, "the row's span lies inside recipe steps (other units)", a.start, **refs)
                continue
            # a verb a recipe step nested in the row asks for is that step's action (another
            # unit): "Fill glass with water and sip" around S02 "Fill Your Glass With Water"
            steps_in = {(rid, sid): self.recipes[rid].steps.get(sid, "") for v, rid, sid, _, x, y in self.segments
                        if v == a.video and overlaps(x, y, a.start, a.end, 0.0) and rid in self.recipes}
            reasons = []
            for verb in verbs:
                mine = sorted(sid for (rid, sid), text in steps_in.items() if verb in all_verbs(text))
                if mine:
                    reasons.append(f"{verb}: a recipe step inside the row asks for it ({', '.join(mine)}: "
                                   f"another unit)")
                    continue
                n_drop, n_plan = len(self.out.dropped), len(self.out.planned)
                getattr(self, f"step_{verb}")(win, what, refs)
                if len(self.out.planned) > n_plan:
                    p = self.out.planned[-1]
                    why = self.row_time(p, win, nested_rows)
                    if why is None:
                        del self.out.dropped[n_drop:]
                        break
                    del self.out.planned[n_plan:]
                    self.out.dropped[n_drop:] = []
                    reasons.append(f"{verb}: {why}")
                    continue
                reasons += [f"{verb}: {row_words(d['reason'])}" for d in self.out.dropped[n_drop:]]
                del self.out.dropped[n_drop:]
            else:
                self.drop("cue", what, "; ".join(reasons), a.start, **refs)

    def row_time(self, p, win, nested_rows) -> str | None:
        """Place a row's key action in the row's own time (inside its held track when it
        has one) and word its evidence for the row; the reason when it cannot be."""
        tr = None
        if p.hold_track:
            tr = next(x for x in self.tracks_of[p.hold] if x.track_id == p.hold_track)
        spans = [(max(x, tr.start) if tr else x, min(y, tr.end) if tr else y) for x, y in win.own]
        spans = [(x, y) for x, y in spans if y - x > 0.02]
        if tr is None:
            spans = [(x, y) for x, y in spans if x <= p.time <= y] or spans[:0]
        for r0, r1 in nested_rows:
            spans = [(x, y) for x, y in spans if y <= r0 or x >= r1]
        if not spans:
            return ("its time falls in a recipe step or activity row inside the row (another unit)"
                    if tr is None else "its held track lies in the row only inside recipe steps or activity "
                                       "rows nested in it (other units)")
        if tr is not None:
            p.time = round(max(spans[0][0] + 0.01, min(p.time, spans[0][1] - 0.01))
                           if spans[0][0] <= p.time <= spans[0][1] else spans[0][0] + 0.01, 3)
        p.title = title_of(win.text)
        p.what = f"{p.action} {win.row}"
        for ev in p.evidence.values():
            if isinstance(ev, dict) and "how" in ev:
                ev["how"] = row_words(ev["how"])
        return None

    def add_inside(self, win) -> bool:
        """An add of the recipe whose ingredient track was found (the person did the add
        in this segment) but whose target the evidence did not decide."""
        return any(v == win.video and overlaps(t0, t1, win.start, win.end, 0.0)
                   for v, t0, t1 in self.undecided_adds)

    def own_overlap(self, win, tr) -> float:
        """Seconds of ``tr`` inside the window's own time: the step segment, or an activity
        row's span outside the recipe steps inside it (those are other units)."""
        spans = win.own if win.row else ((win.start, win.end),)
        return sum(max(0.0, min(tr.end, b) - max(tr.start, a)) for a, b in spans)

    def during(self, win):
        """The tracks held during the window's own time (no margin)."""
        return [tr for tr in self.overlapping(win.start, win.end, 0.0) if self.own_overlap(win, tr) > 0]

    def tracks_in(self, win, pred):
        return [tr for tr in self.overlapping(win.win_start, win.end) if pred(tr.entity)]

    def held_in(self, win, pred, what, refs, role, vessel=False):
        """The one tracked object satisfying ``pred`` held during the step segment itself
        (for at least half of it, or a second). A vessel must carry the vessel noun the
        step text names, when it names one ("Fill your glass": a glass, not a bowl)."""
        need = min(1.0, 0.5 * (win.end - win.start))
        trs = [tr for tr in self.during(win) if pred(tr.entity) and self.own_overlap(win, tr) >= need]
        if vessel:
            # a kettle named ("Fill kettle of water") is what is filled: no other vessel
            named = set(words(win.text)) & (self.vessel_heads | {"kettle"})
            if named:
                trs = [tr for tr in trs if self.own_heads.get(tr.entity, set()) & named]
        ents = sorted({tr.entity for tr in trs})
        if len(ents) != 1:
            self.drop("cue", what, f"{role}: {len(ents)} candidate tracks in the step segment {ents}",
                      win.start, **refs)
            return None, None
        tr = sorted(trs, key=lambda x: (x.start, x.track_id))[0]
        return ents[0], tr

    def plan_step(self, win, action, roles, evid, refs, hold=None, tr=None, t=None):
        if t is None:
            t = win.start if tr is None else max(win.start, tr.start + 0.01)
            if tr is not None:
                t = min(t, tr.end - 0.01)
        self.out.planned.append(Planned("step", round(t, 3), action, roles, evid, refs, hold=hold,
                                        hold_track=tr.track_id if tr else None, step=win,
                                        title=title_of(win.text), what=f"{action} {win.step}"))

    def step_stir(self, win, what, refs, action="stir"):
        tools = {"whisk_tool"} if action == "whisk" else STIR_TOOLS
        tool, tr = self.held_in(win, lambda e: self.w.objects.get(e) in tools, what, refs, "tool")
        if tool is None:
            return
        # nothing is stirred on a plate or a tray, nor in a colander (it drains: "Stir in
        # the red lentils" happens in the pot, not in the colander that rinsed them)
        flat = {e: "nothing is stirred on a plate or a tray, nor in a colander"
                for e, t in self.w.objects.items() if t in ("plate", "tray", "colander")}
        text = win.text
        if win.row and not target_groups(text, self.vessel_heads):
            # a label names its vessel bare ("Stir pot"): that noun, never another vessel
            # handled somewhere in the row
            bare = [w for w in words(text) if w in self.vessel_heads]
            if bare:
                text = f"in the {bare[0]}"
        target, tev, why = self.bind_target(text, win.start, win.end, win, {**flat, tool: "the tool"})
        if target is None:
            self.drop("cue", what, f"target not decided: {why}", win.start, **refs)
            return
        self.plan_step(win, action, {"t": tool, "c": target},
                       {"t": {"how": "utensil tracked during the step", **self.track_ref(tr)}, "c": tev},
                       refs, hold=tool, tr=tr)

    def step_whisk(self, win, what, refs):
        self.step_stir(win, what, refs, "whisk")

    def named_at(self, win, pred, what, refs, role, held=False):
        """The one object satisfying ``pred`` (a food, a switchable container) whose name
        carries a word of the step text and that the step segment acts on, by the vessel
        rule (:meth:`vessel_at`, the step segment as the event): tracked during the
        segment with no other such object put down in the ``LOOKBACK`` s before it, or,
        with none tracked during it, the only one put down in those 60 s and not picked
        up again before it ends. A track anywhere else in the prep window is not evidence
        (P05-20240425-173353: the bacon handled 314-316 s is not what S04's segment from
        343.95 s cuts). ``held``: the action needs the object in the hand (a food is
        grated while held), so one only put down before the segment does not bind.
        ``(entity, evidence, track)``, or ``(None, None, None)`` with the reason dropped."""
        # a part word names no food: "slice of mango3" is mango, and "slice" in the text
        # is the verb ("Peel and slice mangoes")
        ws = set(words(win.text)) - PART_WORDS
        ents = sorted(e for e in self.tracks_of if pred(e) and self.tokens.get(e, set()) & ws
                      and any(tr.assoc.video == win.video for tr in self.tracks_of[e]))
        if not ents:
            self.drop("cue", what, f"{role}: no {role} tracked in the video is named by the step text",
                      win.start, **refs)
            return None, None, None
        hit = sorted(set().union(*(self.tokens[e] & ws for e in ents)))
        nested = {}
        if win.row:
            # a row's own objects: one tracked in the row only inside the recipe steps
            # nested in it was handled for those steps (other units), not for the row
            for e in ents:
                inrow = [tr for tr in self.tracks_of[e] if tr.assoc.video == win.video
                         and overlaps(tr.start, tr.end, win.start, win.end, 0.0)]
                if inrow and not any(self.own_overlap(win, tr) > 0 for tr in inrow):
                    nested[e] = "tracked in the row only inside the recipe steps nested in it"
            ents = [e for e in ents if e not in nested]
            if not ents:
                self.drop("cue", what, f"{role}: every {role} the label names is tracked in the row only inside "
                                       f"the recipe steps nested in it ({', '.join(sorted(nested))})",
                          win.start, **refs)
                return None, None, None
        ent, ev, why = self.vessel_at("' or '".join(hit), "/".join(hit), ents, win.start, win.end, win.video,
                                      "the step segment", win, others=nested, role=role, other_steps=False)
        if ent is None:
            self.drop("cue", what, f"{role} not decided: {why}", win.start, **refs)
            return None, None, None
        tr = next(x for x in self.tracks_of[ent] if x.assoc.video == win.video and x.track_id == ev["track"])
        if held and not self.own_overlap(win, tr) > 0:
            self.drop("cue", what, f"{role} not held: {ent} is not tracked during the step segment "
                                   f"({self.local(win.video, win.start):.2f}-{self.local(win.video, win.end):.2f} s; "
                                   f"put down at {self.local(win.video, tr.end):.2f} s)", win.start, **refs)
            return None, None, None
        return ent, ev, tr

    def is_food(self, e) -> bool:
        return self.is_a(e, "food")

    def step_chop(self, win, what, refs):
        blade, tr = self.held_in(win, lambda e: self.is_a(e, "knife") or self.is_a(e, "scissors"),
                                 what, refs, "blade")
        if blade is None:
            return
        food, fev, _ = self.named_at(win, self.is_food, what, refs, "food")
        if food is None:
            return
        self.plan_step(win, "chop", {"o": food, "t": blade},
                       {"o": fev, "t": {"how": "blade tracked during the step", **self.track_ref(tr)}},
                       refs, hold=blade, tr=tr)

    def step_peel(self, win, what, refs):
        food, fev, ftr = self.named_at(win, self.is_food, what, refs, "food")
        if food is None:
            return
        ents = [food]
        blades = [tr for tr in self.during(win) if self.is_a(tr.entity, "blade")]
        if len({b.entity for b in blades}) == 1:
            b = blades[0]
            self.plan_step(win, "peel", {"o": ents[0], "t": b.entity},
                           {"o": fev, "t": {"how": "blade tracked during the step", **self.track_ref(b)}},
                           refs, hold=b.entity, tr=b)
        elif self.own_overlap(win, ftr) > 0:
            self.plan_step(win, "peel_by_hand", {"o": ents[0]}, {"o": fev}, refs, hold=ents[0], tr=ftr)
        else:
            self.drop("cue", what, "food not held during the step and no blade tracked", win.start, **refs)

    def step_grate(self, win, what, refs):
        food, fev, ftr = self.named_at(win, self.is_food, what, refs, "food", held=True)
        if food is None:
            return
        ents = [food]
        target, tev, why = self.bind_target(win.text, win.start, win.end, win, {ents[0]})
        if target is None:
            self.drop("cue", what, f"target not decided: {why}", win.start, **refs)
            return
        self.plan_step(win, "grate", {"o": ents[0], "c": target},
                       {"o": fev, "c": tev}, refs, hold=ents[0], tr=ftr)

    def step_crack(self, win, what, refs):
        eggs = [tr for tr in self.during(win) if self.is_a(tr.entity, "egg")]
        ents = sorted({x.entity for x in eggs})
        if len(ents) != 1:
            self.drop("cue", what, f"egg: {len(ents)} eggs tracked during the step {ents}", win.start, **refs)
            return
        target, tev, why = self.bind_target(win.text, win.start, win.end, win, {ents[0]})
        if target is None:
            self.drop("cue", what, f"target not decided: {why}", win.start, **refs)
            return
        self.plan_step(win, "break_into", {"o": ents[0], "c": target},
                       {"o": {"how": "egg tracked during the step", **self.track_ref(eggs[0])}, "c": tev},
                       refs, hold=ents[0], tr=eggs[0])

    def step_wash(self, win, what, refs):
        # the object washed is the one the verb's own clause names ("Wash the starch out of
        # the rice. Add to a pan with a lid": rice, not the lid)
        m = re.search(r"\b(?:wash|rinse)\w*\s+([^.;,]*)", win.text.lower())
        named = set(words(m.group(1))) if m else set()
        if m and re.match(r"up\b", m.group(1)):
            named = set()   # "Washing up and refilling dish soap bottle": washing up names no object
        # by the object's own head noun: a "box of chicken" is a box, not the chicken washed
        obj, tr = self.held_in(win, lambda e: self.is_a(e, "item") and not self.is_a(e, "supply")
                               and bool(self.own_heads.get(e, set()) & named), what, refs,
                               "object named by the text")
        if obj is None:
            return
        self.plan_step(win, "wash", {"o": obj},
                       {"o": {"how": "object held during the step", **self.track_ref(tr)}},
                       refs, hold=obj, tr=tr)

    def step_fill(self, win, what, refs):
        if "water" not in words(win.text):
            self.drop("cue", what, "fill: only filling with water from the tap is compiled", win.start, **refs)
            return
        obj, tr = self.held_in(win, self.target_ok, what, refs, "vessel", vessel=True)
        if obj is None:
            return
        self.out.objects.setdefault("water", "water")
        self.plan_step(win, "fill_from_tap", {"c": obj},
                       {"c": {"how": "vessel held during the step", **self.track_ref(tr)}},
                       refs, hold=obj, tr=tr)

    def appliance_named(self, win):
        low = win.text.lower()
        for phrase, (fid, _) in sorted(self.vocab.step_fixtures.items()):
            if re.search(rf"\b{re.escape(phrase)}\b", low) and fid in self.w.objects:
                return fid
        return None

    def step_press(self, win, what, refs):
        fx = self.appliance_named(win)
        if fx is None:
            recipe_text = " ".join(self.recipes[win.recipe].steps.values())
            named = [f for p, (f, _) in sorted(self.vocab.step_fixtures.items())
                     if re.search(rf"\b{re.escape(p)}\b", recipe_text.lower()) and f in self.w.objects]
            if "button" in win.text.lower() and len(set(named)) == 1:
                fx = named[0]
        if fx is None:
            self.drop("cue", what, "press: no appliance named by the step or its recipe", win.start, **refs)
            return
        self.plan_step(win, "press_button", {"a": fx},
                       {"a": {"how": "appliance named by the recipe's step text", **refs}}, refs)

    def step_turn_on(self, win, what, refs):
        fx = self.appliance_named(win)
        if fx is not None:
            self.plan_step(win, "turn_on", {"a": fx}, {"a": {"how": "appliance named by the step text", **refs}},
                           refs)
            return
        self.step_boil(win, what, refs)

    def step_boil(self, win, what, refs):
        app, aev, tr = self.named_at(win, lambda e: self.is_a(e, "electric_container"), what, refs, "appliance")
        if app is None:
            return
        # switched on once it is set down (on its base): after the bound track, or at the
        # segment's end when it is still held then
        self.plan_step(win, "turn_on_container", {"c": app}, {"c": aev}, refs,
                       t=max(win.start, tr.end + 0.01) if tr.end < win.end else win.end)

    def step_transfer(self, win, what, refs):
        """An add/put/pour step without an add event. A container held during the step
        that holds a substance the text names (its name names it, or an earlier grounded
        pour filled it) is poured into the vessel the text names; else the one item held
        during the step whose name the text names is added / put / inserted into it."""
        held = self.overlapping(win.start, win.end, 0.0)
        named = set(words(win.text))
        holds = {}
        # a vessel an earlier add filled is a source only for a later step that pours
        # "into" something ("Add the frothed milk into the coffee"), never for the step
        # of that add itself ("Preheat the pan ... add olive oil": the pan is the target)
        into = re.search(r"\binto\b", win.text.lower()) is not None
        for q in self.out.planned:
            if (q.action == "pour" and q.time < win.start and set(words(q.roles["s"])) & named
                    and into and (q.step is None or q.step.step != win.step)):
                holds.setdefault(q.roles["dst"], (q.roles["s"], q))
        for (pred, *xs) in sorted(set(self.out.facts) | set(self.w.facts)):
            if pred == "in" and len(xs) == 2 and set(words(xs[0])) & named:
                holds.setdefault(xs[1], (xs[0], None))
        srcs = sorted({tr.entity for tr in held if tr.entity in holds and self.is_a(tr.entity, "container")})
        if len(srcs) > 1:
            self.drop("cue", what, f"{len(srcs)} held containers hold a substance the text names {srcs}",
                      win.start, **refs)
            return
        if len(srcs) == 1:
            src = srcs[0]
            sub, q = holds[src]
            src_tr = sorted((tr for tr in held if tr.entity == src), key=lambda x: (x.start, x.track_id))[0]
            target, tev, why = self.bind_target(win.text, win.start, win.end, win, {src})
            if target is None:
                self.drop("cue", what, f"pour target not decided: {why}", win.start, **refs)
                return
            s_ev = ({"how": f"{sub} was poured into {src} by the earlier grounded add", **q.refs} if q else
                    {"how": f"{src}'s track name names {sub}", **self.track_ref(src_tr)})
            t = min(max(win.start, src_tr.start + 0.01), src_tr.end - 0.01)
            self.out.planned.append(Planned(
                "step", round(t, 3), "pour", {"s": sub, "src": src, "dst": target},
                {"s": s_ev, "src": {"how": "container holding the substance, held during the step",
                                    **self.track_ref(src_tr)}, "dst": tev},
                refs, hold=src, hold_track=src_tr.track_id, step=win, title=title_of(win.text), what=what))
            return
        heads = {ph[-1] for ph in target_phrases(win.text, self.vessel_heads)}
        items = sorted({tr.entity for tr in held if (self.is_a(tr.entity, "food") or self.is_a(tr.entity, "supply"))
                        and (self.heads.get(tr.entity, set()) & named) - heads})
        if len(items) != 1:
            self.drop("cue", what, f"{len(items)} held foods/supplies named by the text {items}",
                      win.start, **refs)
            return
        ent = items[0]
        tr = sorted((x for x in held if x.entity == ent), key=lambda x: (x.start, x.track_id))[0]
        fx = self.fixture_named(win.text) if self.is_a(ent, "supply") else None
        if fx is not None:
            action, target, tev = "insert", fx, {"how": "step text names the appliance", **refs}
        else:
            # no "only vessel handled" fallback: a vessel held while a food is added is as
            # likely the food's source (the bowl of sliced onion) as its target
            target, tev, why = self.bind_target(win.text, win.start, win.end, win, {ent}, fallback=False)
            if target is None:
                self.drop("cue", what, f"target not decided: {why}", win.start, **refs)
                return
            action = "add_ingredient" if self.is_a(ent, "food") else "put_in_container"
        t = min(max(win.start, tr.start + 0.01), tr.end - 0.01)
        self.out.planned.append(Planned(
            "step", round(t, 3), action, {"o": ent, "c": target},
            {"o": {"how": "item the step text names, held during the step", **self.track_ref(tr)}, "c": tev},
            refs, hold=ent, hold_track=tr.track_id, step=win, title=title_of(win.text), what=what))

    def step_sprinkle(self, win, what, refs):
        self.drop("cue", what, "sprinkle: no binding rule for the seasoning source", win.start, **refs)

    def step_knead(self, win, what, refs):
        food, fev, ftr = self.named_at(win, self.is_food, what, refs, "food")
        if food is None:
            return
        # kneaded where it lies: after the bound track is put down (or at the segment's end)
        self.plan_step(win, "knead", {"o": food}, {"o": fev}, refs,
                       t=max(win.start, ftr.end + 0.01) if ftr.end < win.end else win.end)

    def step_squeeze(self, win, what, refs):
        self.drop("cue", what, "squeeze: no binding rule", win.start, **refs)

    def step_weigh(self, win, what, refs):
        self.drop("cue", what, "weigh: no binding rule for the scale", win.start, **refs)


#: the label verbs an activity row compiles: actions whose objects the tracks bind (never
#: add/put/pour: a row's placements are its observed put-downs; press needs a recipe;
#: turn_on only as "turn/switch ... on": "start timer", "start baking" switch on nothing named)
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
    for w in reversed(words(low)):
        if w in nt and vocab.is_a(nt[w], "substance"):
            return w
    return re.sub(r"[^a-z0-9]+", "_", low).strip("_") or "ingredient"


SUBSTANCE_WORDS = {"oil", "water", "milk", "sauce", "salt", "pepper", "sugar", "flour", "stock",
                   "vinegar", "honey", "cream", "juice", "syrup", "powder", "spice", "paste", "coffee",
                   "tea", "cumin", "paprika", "turmeric", "cinnamon", "masala", "sumac", "seasoning",
                   "squash", "ketchup", "mayonnaise", "mustard", "yogurt", "yoghurt", "soy", "extract",
                   "essence", "oregano", "thyme", "chilli", "flake", "seed", "nutmeg", "coriander",
                   "dressing", "broth", "wine", "cocoa", "baking", "yeast", "rice", "oat", "lentil",
                   "tahini", "ghee", "curry"}


def ingredient_type(name: str, vocab) -> tuple[str, str]:
    """``(leaf type, rule)`` of an ingredient from its own words (never from an unrelated
    noun class): a substance word of the curated vocabulary, a substance keyword, else
    ``other_food``.

    >>> from analysis.compiler.vocabulary import Vocabulary
    >>> ingredient_type("medjool dates", Vocabulary.load())
    ('other_food', 'ingredient:food_default')
    """
    ent = ingredient_entity(name, vocab)
    nt = vocab.data["noun_types"]
    if ent in nt and (vocab.is_a(nt[ent], "substance") or vocab.is_a(nt[ent], "food")):
        return nt[ent], f"noun_types:{ent}"
    ws = words(name)
    for w in reversed(ws):
        if w in nt and vocab.is_a(nt[w], "substance"):
            return nt[w], f"noun_types:{w}"
    if set(ws) & SUBSTANCE_WORDS:
        return "other_substance", "ingredient:substance_word"
    for w in reversed(ws):
        if w in nt and vocab.is_a(nt[w], "food"):
            return nt[w], f"noun_types:{w}"
    return "other_food", "ingredient:food_default"


def ground(world, recipes, vocab, activities=(), snippets=()) -> Grounding:
    # imported here: the snippet module builds on this one's Grounder
    from analysis.compiler.snippets import ground_snippets
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

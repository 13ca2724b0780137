"""Grounding (paper section 3, entity bindings): the grounding context (one episode's
state, :class:`GroundingContext`) and the helpers every binding rule uses (vessels, tracks,
drops); every rule, here and in :mod:`.adds`, :mod:`.steps`, :mod:`.rows` and
:mod:`.snippets`, is a plain function taking the context first."""
from __future__ import annotations

import re

from .text import (EXCLUDED_TARGETS, LOOKBACK, MARGIN, SUBSTANCE_WORDS, TEXT_VESSEL_RULE, _spelling, heated_phrases, name_content, name_head, overlaps, target_groups, words)
from .windows import Grounding, StepWindow, step_windows

#: the rule binding the tracked vessel an add's text names by another noun (:func:`handled_vessel`)
TEXT_VESSEL_HANDLED = "text_vessel_handled_in_the_add_row"


class GroundingContext:
    """One episode's grounding state: the world, the recipes, the vocabulary, the
    names' words and heads, the step windows and what the binding rules found so
    far (``out``); every binding rule is a function taking it first."""

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
        # (recipe, step, video) -> the step's one vessel (set by ``ground``'s second pass)
        self.step_vessels: dict = {}
        self.open_adds: set = set()        # (recipe, step, video) of adds left without a target
        self.step_add_vessels: dict = {}   # (recipe, step, video) -> its adds' vessels (first pass)
        self.named_open: set = set()       # steps with an add whose named vessel was left open
        self.running_open: set = set()     # steps with an add left for the recipe's running vessel
        self.running_left: dict = {}       # (recipe, start, end) of an add -> why its running vessel is open
        self.bracket_open: set = set()     # adds left for the bracketing vessel (bound in the second pass)
        self.second_pass = False           # set by ``ground`` on its second pass
        self.agreed_vessels: dict = {}     # add -> the one vessel of the several steps overlapping it
        self.text_vessels: dict = {}       # vessel noun -> the untracked entity the text names
        self.activities: list = []         # the episode's activity rows (set by ``ground``)
        self.tracks_of: dict[str, list] = {}
        for tr in world.tracks:
            self.tracks_of.setdefault(tr.entity, []).append(tr)

# ----------------------------------------------------------------- helpers


def is_a(ctx, ent, t) -> bool:
    return ent in ctx.w.objects and ctx.vocab.is_a(ctx.w.objects[ent], t)


def is_food(ctx, e) -> bool:
    return is_a(ctx, e, "food")


def target_ok(ctx, ent) -> bool:
    """A vessel by its own name: its head noun is a vessel word of the curated
    vocabulary (never a loose noun-class match: "heat diffuser" is not a blender)."""
    t = ctx.w.objects.get(ent)
    if not t or t in EXCLUDED_TARGETS or not (
            ctx.vocab.is_a(t, "vessel") or ctx.vocab.is_a(t, "electric_container")):
        return False
    return bool(ctx.own_heads.get(ent, set()) & ctx.vessel_heads)


def has_head(ctx, ent, nouns) -> bool:
    """Whether the object's own head noun is one of ``nouns`` (a word or a set), or a
    compound of one that the vocabulary types alike: a "saucepan" is the "pan" a text
    names (both are pans); a "teapot" is no "pot" (it is not typed as one)."""
    nt = ctx.vocab.data["noun_types"]
    nouns = {nouns} if isinstance(nouns, str) else nouns
    return any(h == n or (h.endswith(n) and n in nt and nt.get(h) == nt[n])
               for h in ctx.own_heads.get(ent, ()) for n in nouns)


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


def overlapping(ctx, t0, t1, margin=MARGIN):
    return [tr for tr in ctx.w.tracks if overlaps(tr.start, tr.end, t0, t1, margin)]


def track_ref(ctx, tr) -> dict:
    """The track's source row, with its own video's times."""
    return {"file": "assoc_info.json", "video": tr.assoc.video, "association": tr.assoc.assoc_id,
            "track": tr.track_id, "name": tr.assoc.name, "start": round(tr.start - tr.offset, 5),
            "end": round(tr.end - tr.offset, 5)}


def local(ctx, video: str, t: float) -> float:
    return round(t - ctx.w.offsets.get(video, 0.0), 5)


def video_tracks(ctx, ent: str, video: str) -> list:
    """The tracks of entity ``ent`` in ``video``, in time order (ties by track ID)."""
    return sorted((tr for tr in ctx.tracks_of[ent] if tr.assoc.video == video), key=lambda x: (x.start, x.track_id))


def drop(ctx, kind, what, reason, t, **refs):
    ctx.out.dropped.append({"kind": kind, "what": what, "reason": reason, "time": t,
                             "refs": {k: v for k, v in sorted(refs.items()) if v is not None}})


def named_entities(ctx, head: str) -> list[str]:
    return sorted(e for e, toks in ctx.tokens.items() if head in toks and e in ctx.tracks_of)


def bind_target(ctx, text: str, t0: float, t1: float, win: StepWindow | None,
                exclude: set | dict, fallback: bool = True, video: str | None = None,
                event: str | None = None, kitchen: bool = False) -> tuple[str | None, dict | None, str]:
    """The vessel the event ``[t0, t1]`` (a step segment, or an add) happens in: the
    vessel the step text names, decided by :meth:`vessel_at`; or, with ``fallback``
    and no vessel named, the only vessel tracked during the event itself.

    A named vessel is an instance whose own head noun (:func:`name_head`: "bowl of
    flour" and "large bowl2" are bowls) is the noun of the text's target phrase,
    tracked in the event's own video (HD-EPIC gives no identity across videos); among
    them, the ones sharing most words with the phrase ("metal V60 filter").

    With ``kitchen`` (an add: issue 34), the vessel noun the text names also binds
    when it resolves to exactly one entity of the kitchen (the episode's world):
    its only instance of that noun, tracked in this video but not near the event or
    only in another video (:meth:`kitchen_vessel`), or, with no instance of the noun
    at all, an untracked vessel that becomes a world entity with a curated place
    (:meth:`text_vessel`). The evidence then says ``evidence: step_text``."""
    video = video or (win.video if win else None)
    ev = event or "the step segment"
    if not isinstance(exclude, dict):
        exclude = {e: "the event's own object" for e in exclude}

    def in_video(e):
        return any(tr.assoc.video == video for tr in ctx.tracks_of[e])

    heated = heated_phrases(text, ctx.vessel_heads)
    for group in target_groups(text, ctx.vessel_heads):
        heads, cands, elsewhere, others, untracked, every = [], set(), set(), {}, [], set()
        for phrase in group:
            head = phrase[-1]
            alln = [e for e in sorted(ctx.tracks_of) if has_head(ctx, e, head) and target_ok(ctx, e)]
            if not alln and tuple(phrase) in heated:
                # "Heat a wok" with no wok tracked: a vessel the vocabulary types alike (the
                # "pan" the annotators named it), else none (no untracked wok is invented)
                leaf = ctx.vocab.data["noun_types"].get(head)
                alln = [e for e in sorted(ctx.tracks_of) if ctx.w.objects.get(e) == leaf and target_ok(ctx, e)]
                if not alln:
                    continue
            every |= set(alln)
            others.update({e: exclude[e] for e in alln if e in exclude and in_video(e)})
            mine = [e for e in alln if e not in exclude]
            if alln:
                heads.append(head)
                here = [e for e in mine if in_video(e)]
                elsewhere |= set(mine) - set(here)
                if here:
                    best = max(len(set(phrase) & ctx.tokens[e]) for e in here)
                    cands |= {e for e in here if len(set(phrase) & ctx.tokens[e]) == best}
                    others.update({e: f"its name shares fewer words with '{' '.join(phrase)}'"
                                   for e in here if len(set(phrase) & ctx.tokens[e]) < best})
            elif head not in SUBSTANCE_WORDS and (named_entities(ctx, head) or head in ctx.vessel_heads):
                heads.append(head)     # a named vessel that is not tracked: no fallback
                # no object of the episode has the noun as its own head ("pot cover" is
                # a cover: the pot it covers is not tracked)
                if head in ctx.vessel_heads and not any(has_head(ctx, e, head) for e in ctx.own_heads):
                    untracked.append(head)
        if not heads:
            continue            # "into the coffee": the drink, its vessel is not named
        named = "' or '".join(heads)
        others = {e: r for e, r in others.items() if e not in cands}
        # the kitchen's only instance of the noun (issue 34): the only one tracked in the
        # event's video (instances are per video: another video's pan may be this one),
        # or, with none there, the only one of the episode; none excluded by the caller
        # or by the phrase's words
        only = None
        if kitchen and not others and not untracked:
            if len(cands) == 1:
                only = sorted(cands)[0]
            elif not cands and len(every) == 1:
                only = sorted(every)[0]
        if kitchen and not every and untracked and len(untracked) == len(heads):
            return text_vessel(ctx, untracked, text, t0, t1, win, exclude, video, ev)
        if not cands and elsewhere:
            why = (f"step text names '{named}'; such vessels are tracked in another video "
                   f"({', '.join(sorted(elsewhere))}), none in {video} (HD-EPIC gives no "
                   f"identity across videos)")
            if only is not None and only in elsewhere:
                got = kitchen_vessel(ctx, only, named, "/".join(heads), t0, t1, video, ev, win)
                if got[0] is not None:
                    return got
                why += "; " + got[2].split("; ", 1)[1]
            return None, None, why
        if not cands:
            return None, None, (f"step text names '{named}', and no tracked vessel has that head noun"
                                + (" apart from " + ", ".join(f"{e} ({r})" for e, r in sorted(others.items()))
                                   if others else ""))
        got = vessel_at(ctx, named, "/".join(heads), sorted(cands), t0, t1, video, ev, win, others)
        if got[0] is None and only is not None and only in cands and (
                f"no {'/'.join(heads)} tracked during" in got[2]):
            # neither tracked during the event nor put down just before it: the kitchen's
            # only one is still where the text says the food goes
            return kitchen_vessel(ctx, only, named, "/".join(heads), t0, t1, video, ev, win)
        return got
    if not fallback:
        return None, None, "no vessel named in the step text (a vessel held while a food is added may be its source)"
    # The text names no vessel: only a vessel handled *during the event itself* (the
    # add, or the step segment) decides it. A vessel last handled earlier in the
    # step's prep window is not evidence: the ingredient usually goes into an
    # untracked pan ("salt to the mixture" is not the bowl moved 95 s earlier).
    seg = f"{ev} ({local(ctx, video, t0):.2f}-{local(ctx, video, t1):.2f} s)" if video else ev
    held = sorted({tr.entity for tr in overlapping(ctx, t0, t1, 0.0) if target_ok(ctx, tr.entity)})
    # a vessel named for a content the step text names ("cup of yogurt" while the text
    # adds yoghurt) is that content's source: it is spooned out of, not stirred in
    said = {_spelling(w) for w in words(text)}
    skip = [f"{e} ({exclude[e]})" for e in held if e in exclude] + \
           [f"{e} (named for a content the step text names: its source)" for e in held
            if e not in exclude and ctx.contents.get(e, set()) & said]
    near = [e for e in held if e not in exclude and not ctx.contents.get(e, set()) & said]
    note = f"; not counted: {', '.join(skip)}" if skip else ""
    if len(near) == 1:
        tr = nearest([tr for tr in overlapping(ctx, t0, t1, 0.0) if tr.entity == near[0]], t0, t1)
        return near[0], {"how": f"the text names no vessel; the only vessel tracked during {seg}{note}",
                         **track_ref(ctx, tr)}, ""
    return None, None, (f"{len(near)} vessels handled during the event {near}{note}" if near
                        else f"no vessel named in the step text or handled during the event{note}")


def put_away(ctx, tr, side: str = "dst") -> str | None:
    """Why a vessel is not where a step or add happens: the observed destination of
    its track (``side="dst"``: where it was put down) or the observed source of its
    first track (``side="src"``: where it was until then) is storage, an enclosed
    appliance or a sink."""
    fx, ref, file = (tr.dst, tr.dst_ref, tr.dst_file) if side == "dst" else (tr.src, tr.src_ref, None)
    if fx is None or tr.conflict:
        return None
    if ("enclosing", fx) in ctx.w.facts or is_a(ctx, fx, "sink"):
        return f"{'put in' if side == 'dst' else 'taken from'} {fx} ({file or 'VQA/itinerary'} {ref})"
    return None


def other_step(ctx, tr, win: StepWindow | None) -> str | None:
    """The other step a track was handled for: it overlaps a step or prep segment of
    another step and none of ``win``'s own segments (the frying pan of the bacon step
    S02, put down 6 s before the pasta add of S01, is not the pasta's pan)."""
    if win is not None and any(overlaps(tr.start, tr.end, a, b, 0.0) for a, b in win.spans):
        return None
    mine = (win.recipe, win.step) if win is not None else None
    for v, rid, sid, kind, a, b in ctx.segments:
        if v == tr.assoc.video and (rid, sid) != mine and overlaps(tr.start, tr.end, a, b, 0.0):
            return (f"its last track {local(ctx, v, tr.start):.2f}-{local(ctx, v, tr.end):.2f} s is in a "
                    f"{kind} segment of {sid} ({local(ctx, v, a):.2f}-{local(ctx, v, b):.2f} s), "
                    f"not in this step's own segments")
    return None


def vessel_at(ctx, named: str, noun: str, cands: list, t0: float, t1: float, video: str,
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
    2. with none tracked during the event, the one candidate put down recently, when no
       other was put down in the ``LOOKBACK`` s before that (two set out together).

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
    seg = f"{ev} ({local(ctx, video, t0):.2f}-{local(ctx, video, t1):.2f} s)"
    during, recent, rest, later, away = {}, {}, {}, {}, []
    for e in cands + sorted(others or {}):
        trs = [tr for tr in ctx.tracks_of[e] if tr.assoc.video == video]
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
            why = put_away(ctx, last)
            if why:
                if t0 - last.end <= LOOKBACK:
                    away.append(f"{e} {why} at {local(ctx, video, last.end):.2f} s")
            elif t0 - last.end > LOOKBACK:
                rest[e] = last
            elif other_steps and other_step(ctx, last, win):
                away.append(f"{e} ({other_step(ctx, last, win)})")
            else:
                recent[e] = last
            continue
        first = min(trs, key=lambda x: (x.start, x.track_id))
        if not put_away(ctx, first, "src"):
            later[e] = first

    def span(tr):
        return f"{local(ctx, video, tr.start):.2f}-{local(ctx, video, tr.end):.2f} s"

    def put(e, tr):
        return f"{e} put down at {local(ctx, video, tr.end):.2f} s"

    excl = f"; not counted: {', '.join(away)}" if away else ""
    if during:
        if len(during) == 1 and not recent:
            e, tr = next(iter(during.items()))
            return e, {"how": f"step text names '{named}'; the only {noun} of the video tracked during "
                              f"{seg} (track {span(tr)}), and no other {noun} put down in the "
                              f"{LOOKBACK:.0f} s before it{excl}", "evidence": "step_text", **track_ref(ctx, tr)}, ""
        qual = [f"{e} tracked {span(tr)}" for e, tr in sorted(during.items())] + \
               [put(e, tr) for e, tr in sorted(recent.items())]
        return None, None, (f"step text '{named}': ambiguous {role}, {len(qual)} {noun} instances tracked "
                            f"during {seg} or put down in the {LOOKBACK:.0f} s before it ({'; '.join(qual)})")
    # a candidate put down just outside the window, in the same minute as the recent one,
    # is no less likely (two bowls set out together): the window's edge decides nothing
    near = {e: tr for e, tr in rest.items() for r in recent.values() if r.end - tr.end <= LOOKBACK}
    if len(recent) == 1 and not near:
        e, tr = next(iter(recent.items()))
        return e, {"how": f"step text names '{named}'; no {noun} of the video is tracked during {seg}; "
                          f"the only {noun} of the video put down in the {LOOKBACK:.0f} s before it: "
                          f"put down at {local(ctx, video, tr.end):.2f} s ({t0 - tr.end:.1f} s before it), "
                          f"not picked up again before it ends{excl}", "evidence": "step_text",
                   **track_ref(ctx, tr)}, ""
    if near:
        return None, None, (f"step text '{named}': ambiguous {role}, {put(*next(iter(recent.items())))} in the "
                            f"{LOOKBACK:.0f} s before {seg}, and in the {LOOKBACK:.0f} s before that "
                            f"{'; '.join(put(e, tr) for e, tr in sorted(near.items()))} (not picked up again)")
    if recent:
        return None, None, (f"step text '{named}': ambiguous {role}, {len(recent)} {noun} instances put down "
                            f"in the {LOOKBACK:.0f} s before {seg} and not tracked during it "
                            f"({'; '.join(put(e, tr) for e, tr in sorted(recent.items()))})")
    if rest or later:
        return None, None, (f"step text names '{named}'; no {noun} tracked during {seg} or put down in the "
                            f"{LOOKBACK:.0f} s before it ("
                            + "; ".join([put(e, tr) for e, tr in sorted(rest.items())]
                                        + [f"{e} first picked up at {local(ctx, video, tr.start):.2f} s"
                                           for e, tr in sorted(later.items())]) + f"){excl}")
    return None, None, (f"step text names '{named}'; no {noun} of the video is tracked during {seg} "
                        f"or put down before it{excl}")


def kitchen_vessel(ctx, ent: str, named: str, noun: str, t0: float, t1: float, video: str,
                   ev: str, win: StepWindow | None) -> tuple[str | None, dict | None, str]:
    """The text's vessel noun resolves to ``ent``, the only instance of that noun
    tracked in the event's video (or, with none there, in the whole episode), though
    it is neither tracked during the event nor put down in the ``LOOKBACK`` before it
    (it stands where it was left: the pan on the hob; one tracked only in another
    video must have been left there by an earlier one). Not when its last track before the
    event put it away (storage, an enclosed appliance, a sink), nor when it is first
    taken out of storage after the event: then it is not where the food goes."""
    # the only one of its noun is not the only one of its kind when the event's video
    # tracks another vessel the vocabulary types alike under another noun (a "wok" is a
    # pan: "Preheat pan with olive oil" while the wok is handled, the "small pan" 22
    # minutes before, P08-20240618-163547): which one the text means is not decided
    kind = ctx.w.objects.get(ent)
    mates = sorted(e for e in ctx.tracks_of if e != ent and ctx.w.objects.get(e) == kind and target_ok(ctx, e)
                   and any(tr.assoc.video == video for tr in ctx.tracks_of[e]))
    if mates:
        return None, None, (f"step text names '{named}'; {ent} is the only {noun} by name, but {video} also "
                            f"tracks {', '.join(mates)}, typed {kind} too: which one is meant is not decided")
    trs = sorted(ctx.tracks_of[ent], key=lambda x: (x.start, x.track_id))
    # the event's video's own tracks when it has any (an entity merged by name across
    # videos is not this video's evidence)
    trs = [tr for tr in trs if tr.assoc.video == video] or trs
    before = [tr for tr in trs if tr.end <= t0]
    seg = f"{ev} ({local(ctx, video, t0):.2f}-{local(ctx, video, t1):.2f} s)" if video else ev
    if before:
        tr = max(before, key=lambda x: (x.end, x.track_id))
        why = put_away(ctx, tr)
        if why:
            return None, None, (f"step text names '{named}'; the kitchen's only {noun}, {ent}, was "
                                f"{why} before {seg}")
        where = (f"last put down at {local(ctx, tr.assoc.video, tr.end):.2f} s in {tr.assoc.video}, "
                 f"not handled again before {seg} ends")
    elif trs[0].assoc.video != video:
        # tracked only in a later video: where it stood at the event is not observed
        return None, None, (f"step text names '{named}'; the episode's only {noun}, {ent}, is tracked only "
                            f"in a later video ({trs[0].assoc.video}): not evidence of where {seg} happens")
    else:
        tr = trs[0]
        why = put_away(ctx, tr, "src")
        if why:
            return None, None, (f"step text names '{named}'; the kitchen's only {noun}, {ent}, is "
                                f"{why} only after {seg}")
        where = f"first handled at {local(ctx, tr.assoc.video, tr.start):.2f} s in {tr.assoc.video}, after it"
    scope = "video" if tr.assoc.video == video else "episode"
    return ent, {"how": f"step text names '{named}'; {ent} is the only {noun} tracked in the {scope} "
                        f"(the kitchen's one {noun} there); {where}",
                 "evidence": "step_text", **track_ref(ctx, tr)}, ""


def text_vessel(ctx, nouns: list[str], text: str, t0: float, t1: float, win: StepWindow | None,
                exclude: dict, video: str | None, ev: str) -> tuple[str | None, dict | None, str]:
    """The vessel the step text names when no object of the episode has that noun: an
    untracked vessel ("add the flowers into a pot": no pot is tracked) becomes a world
    entity of the noun's type, its place curated (``TEXT_VESSEL_RULE``: the work
    counter, where the agent starts), its identity observed from the step text. One
    entity per noun and episode: a later add naming the noun binds the same one. Not
    when the text names several ("in separate pots"), the alternatives are of two
    types, or a vessel of another noun is tracked during the event (it may be the
    one the text means), nor when a tracked vessel of the noun's kind (its type; a pot and
    a pan are one kind: a "red saucepan" is the "pot" of "add water to the third pot") is
    handled in the step's segments (every one of the video: the unit) or in the ``LOOKBACK``
    before one (the text's vessel may be that one under another name: none is invented)."""
    # vessel types one cooking vessel is called by: "pot", "saucepan", "pan", "wok"
    hob_kinds = {"pot", "pan"}
    nt = ctx.vocab.data["noun_types"]
    leaves = {nt[n] for n in nouns}
    seg = f"{ev} ({local(ctx, video, t0):.2f}-{local(ctx, video, t1):.2f} s)" if video else ev
    named = "' or '".join(nouns)
    if len(leaves) != 1 or win is None:
        return None, None, f"step text names '{named}': no such vessel is tracked and the text does not name one type"
    low = text.lower()
    if any(re.search(rf"\b{re.escape(n)}(?:s|es)\b", low) for n in nouns):
        return None, None, f"step text names several '{named}' (plural): which one is not decided"
    held = sorted({tr.entity for tr in overlapping(ctx, t0, t1, 0.0) if target_ok(ctx, tr.entity)
                   and exclude.get(tr.entity) != "the event's own object"})
    if held:
        return None, None, (f"step text names '{named}', and no object of the episode has that noun; "
                            f"{', '.join(held)} tracked during {seg} may be the vessel it means")
    kinds = leaves | (hob_kinds if leaves & hob_kinds else set())
    # the unit: every segment of the step in the video (a step the person came back to)
    spans = [(a, b) for v, rid, sid, _, a, b in ctx.segments if (v, rid, sid) == (win.video, win.recipe, win.step)] \
        or win.spans or [(win.start, win.end)]
    alike = sorted((tr.start, tr.end, tr.entity) for e, trs in ctx.tracks_of.items()
                   if ctx.w.objects.get(e) in kinds and target_ok(ctx, e) for tr in trs
                   if tr.assoc.video == win.video and any(overlaps(tr.start, tr.end, a - LOOKBACK, b, 0.0)
                                                          for a, b in spans))
    if alike:
        got = handled_vessel(ctx, {x[2] for x in alike}, nouns, t0, t1, win, exclude)
        if got[0] is not None:
            return got
        # the handling nearest the event is named (the red saucepan just before the add)
        a, b, e = min(alike, key=lambda x: (max(0.0, x[0] - t1, t0 - x[1]), x))
        more = sorted({x[2] for x in alike} - {e})
        return None, None, (f"step text names '{named}', and no object of the episode has that noun; "
                            f"{e} (a {ctx.w.objects[e]}; handled {local(ctx, win.video, a):.2f}-"
                            f"{local(ctx, win.video, b):.2f} s){' and ' + ', '.join(more) if more else ''}, "
                            f"handled in the step's segments or the {LOOKBACK:.0f} s before one, may be the "
                            f"{nouns[0]} it means: no untracked {nouns[0]} is created ({got[2]})")
    noun = nouns[0]
    ent = ctx.text_vessels.get(noun)
    if ent is None:
        ent, n = noun, 1
        while ent in ctx.w.objects or ent in ctx.out.objects:
            n += 1
            ent = f"{noun}_{n}"
        ctx.text_vessels[noun] = ent
        ctx.out.objects[ent] = nt[noun]
        ctx.out.facts[("at", ent, ctx.w.work_counter)] = {"source": "curated", "refs": {
            "rule": TEXT_VESSEL_RULE, "recipe": win.recipe, "step": win.step,
            "how": f"no object of the episode is a {noun}: the {noun} the step text names is an "
                   "untracked vessel; its place is curated (the work counter)"}}
    return ent, {"how": f"step text names '{named}'; no object of the episode has that noun: the "
                        f"untracked {noun} it names ({ent}, place curated: {TEXT_VESSEL_RULE})",
                 "file": "complete_recipes.json", "recipe": win.recipe, "step": win.step,
                 "evidence": "step_text"}, ""


def _stems(text: str) -> set:
    return {_spelling(w).rstrip("s") for w in words(text)}


def handled_vessel(ctx, alike: set, nouns: list[str], t0: float, t1: float, win: StepWindow,
                   exclude: dict) -> tuple[str | None, dict | None, str]:
    """The tracked vessel an add's text means by a noun no object has (rule
    ``TEXT_VESSEL_HANDLED``; ``alike``: the vessels of its kind :func:`text_vessel` found
    handled near the step): the activity row of the add's recipe spanning the add, whose
    label names the food or a vessel noun (the text's, or the vessel's own), says what the
    person did then ("Pour oil into pot", "Adding hibiscus flowers and ginger to saucepan");
    the vessel is the only one of ``alike`` handled from ``LOOKBACK`` s before the add to
    the row's end (or from the row's start), once these are not counted: a vessel of
    another recipe (an add of that recipe went into it, or its tracks in the video lie in
    that recipe's segments and none of this one's), the food's source (the add's own
    object, or named for the food: "bowl of ginger"), one put away before the add or taken
    out of storage only after it (:func:`put_away`). No row, or two vessels: ``(None,
    None, why)``."""
    video, rid = win.video, win.recipe
    food = {e.name for r in [ctx.recipes.get(rid)] if r for cap in r.captures for e in cap.events
            if e.kind == "add" and e.span.video == video and abs(e.span.start - t0) < 1e-6}
    food_stems = set().union(*[_stems(f) for f in food]) if food else set()
    rows = [a for a in ctx.activities if a.video == video and rid in a.recipe_ids
            and a.start <= t0 + 1e-6 and a.end >= t1 - 1e-6]
    rows = [a for a in rows if _stems(a.label) & (food_stems | {n.rstrip("s") for n in nouns} | {
        h.rstrip("s") for e in alike for h in ctx.own_heads.get(e, ())})]
    if len(rows) != 1:
        return None, None, ("no activity row of the recipe spanning the add names the food or the vessel"
                            if not rows else f"{len(rows)} activity rows span the add")
    row = rows[0]
    a0, a1 = min(t0 - LOOKBACK, row.start), row.end
    mine = [(v, s0, s1) for v, r, _, _, s0, s1 in ctx.segments if v == video and r == rid]
    theirs = [(v, s0, s1) for v, r, _, _, s0, s1 in ctx.segments if v == video and r != rid]
    into = {p.roles.get("c") or p.roles.get("dst"): p.step.recipe for p in ctx.out.planned
            if p.kind == "add" and p.step is not None and p.step.recipe != rid}
    cands, skip = {}, []
    for e in sorted(alike):
        trs = sorted((tr for tr in ctx.tracks_of[e] if tr.assoc.video == video), key=lambda x: (x.start, x.track_id))
        near = [tr for tr in trs if overlaps(tr.start, tr.end, a0, a1, 0.0)]
        if not near:
            continue
        before = [tr for tr in trs if tr.end <= t0]
        after = [tr for tr in trs if tr.start >= t0]
        spans = [(tr.start, tr.end) for tr in trs]

        def meets(segs):
            return any(overlaps(a, b, s0, s1, 0.0) for a, b in spans for _, s0, s1 in segs)
        why = (f"an add of {into[e]} went into it" if e in into else
               "its tracks lie in another recipe's segments, none of this one's" if meets(theirs) and not meets(mine)
               else exclude[e] if e in exclude else
               "named for the food: its source" if ctx.contents.get(e, set()) and
               {w.rstrip("s") for w in ctx.contents[e]} & food_stems else
               put_away(ctx, before[-1]) if before else put_away(ctx, after[0], "src") if after else None)
        if why:
            skip.append(f"{e} ({why})")
        else:
            cands[e] = nearest(near, t0, t1)
    note = f"; not counted: {', '.join(skip)}" if skip else ""
    label = f"activity row {row.source_row} '{row.label}'"
    if len(cands) != 1:
        return None, None, (f"{len(cands)} vessels of its kind handled from {LOOKBACK:.0f} s before the add to "
                            f"the end of {label}{' (' + ', '.join(sorted(cands)) + ')' if cands else ''}{note}")
    e, tr = next(iter(cands.items()))
    said = "the food" if _stems(row.label) & food_stems else "the vessel"
    return e, {"how": f"step text names '{nouns[0]}', and no object of the episode has that noun; {e} "
                      f"(a {ctx.w.objects[e]}, one kind with a {nouns[0]}) is the only vessel of its kind "
                      f"handled from {LOOKBACK:.0f} s before the add to the end of {label} (spanning the add, "
                      f"naming {said}){note} (rule {TEXT_VESSEL_HANDLED})",
               "evidence": "step_text", "row": row.source_row, **track_ref(ctx, tr)}, ""


def windows_at(ctx, video, t0, t1, recipe):
    return [w for w in ctx.windows if w.video == video and w.recipe == recipe
            and overlaps(w.start, w.end, t0, t1, 0.0)]

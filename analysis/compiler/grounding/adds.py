"""Grounding (paper section 3, entity bindings; the Add Squash example): ingredient adds
bound to tracked foods, source containers and vessels."""
from __future__ import annotations

import dataclasses

from .text import (clause_of, fixture_named, COLOUR_WORDS, CONTAINER_WORDS, CUBE_WORDS, GENERIC_SOURCE_WORDS, MARGIN, PART_WORDS, _spelling, UNTRACKED_RULE, WHERE_IT_STANDS, ingredient_entity, ingredient_type, overlaps, title_of, words)
from ..fixtures import default_location
from .windows import Planned, prep_windows_at
from .named_food import tracked_food_named
from .open_adds import later_handled_vessel, open_add_vessel, overlapping_steps_vessel, same_step_target, step_adds_vessel
from .grounder import bind_target, drop, is_a, is_food, local, overlapping, track_ref, windows_at
from .sources import SOURCE_NOT_ADDED, instances_added, is_cover, main_words, source_role

#: a name holding several instances of a food together (entities.STACK_WORDS)
HEAP_WORDS = {"stack", "pile"}
#: vessels a measured-out spice is tipped from ("plate2" held through the fennel seeds' add)
SERVED_FROM_WORDS = {"bowl", "plate", "cup", "ramekin", "dish", "saucer"}

#: The closed set of reasons an add event of ``complete_recipes.json`` is not compiled
#: (``dropped.jsonl`` kind ``add``; docs/compiler.md "Adds not compiled"): reason prefix ->
#: class. Every add is either compiled or dropped with a reason that starts with one of
#: these (:func:`add_drop_class`); the reason goes on to say what was checked.
ADD_DROP_REASONS = {
    "weigh events are not compiled": "weigh",                       # no scale binding rule
    "source check add_time_matches_other_ingredient": "add_time_matches_other_ingredient",
    "source check overlapping_steps": "overlapping_steps",          # its step is not decided
    "source check add_without_track": "add_without_track",          # no track names the ingredient
    "several tracked objects match the ingredient": "ambiguous_ingredient",
    "several tracks of the ingredient overlap the add": "ambiguous_ingredient_track",
    "ingredient typed": "not_food",                                  # neither food nor substance
    "matching track": "not_food",                                    # the track is no food/supply/container
    SOURCE_NOT_ADDED: "source_not_added",                            # the squeezed fruit, the scooped jar
    "target not decided": "target_not_decided",                      # the vessel is not decided
    # compiled, but its in() is no condition of its step unit's task (tasks._adds_left_out)
    "not a condition of its unit's task": "not_a_condition",
}
#: the operation builder's refusal of a grounded add (``operations.OpBuilder.emit``): its
#: object is not in the hand (its track was dropped), or the rules reject the operation
NOT_EXECUTABLE = ("is not in the hand at", "rejected by the rules")


def add_drop_class(reason: str) -> str:
    """The class of an add's drop ``reason`` in the closed set (:data:`ADD_DROP_REASONS`,
    or ``not_executable`` for the operation builder's refusals); ``ValueError`` naming the
    reason for any other.

    >>> add_drop_class("target not decided: step text names 'cup'; ...")
    'target_not_decided'
    >>> add_drop_class("source check add_without_track: no track named for the ingredient ...")
    'add_without_track'
    >>> add_drop_class("jar is not in the hand at 2944.63s (its track was not selected or not executable)")
    'not_executable'
    """
    for prefix, cls in ADD_DROP_REASONS.items():
        if reason.startswith(prefix):
            return cls
    if any(x in reason for x in NOT_EXECUTABLE):
        return "not_executable"
    raise ValueError(f"add drop reason {reason!r} is not in the closed set ADD_DROP_REASONS "
                     "(analysis/compiler/grounding/adds.py); add it there and to docs/compiler.md")


def ground_adds(ctx):
    for rid in sorted(ctx.recipes):
        r = ctx.recipes[rid]
        for cap in r.captures:
            if not set(cap.videos) & set(ctx.w.videos):
                continue
            matches = {}
            for iid, name in sorted(cap.ingredients.items()):
                ws = set(words(name))
                matches[iid] = ws
            for ev in cap.events:
                if ev.span.video not in ctx.w.videos:
                    continue
                refs = {"file": "complete_recipes.json", "recipe": rid, "ingredient": ev.ingredient_id,
                        "name": ev.name, "video": ev.span.video,
                        "start": local(ctx, ev.span.video, ev.span.start),
                        "end": local(ctx, ev.span.video, ev.span.end)}
                if ev.kind == "weigh":
                    drop(ctx, "add", f"weigh {ev.ingredient_id} ({ev.name})",
                              "weigh events are not compiled (no scale binding rule)", ev.span.start,
                              **refs)
                    continue
                ground_add(ctx, rid, cap, ev, matches, refs)


def source_check(ctx, check: str, what: str, reason: str, t: float, refs: dict):
    """An add the source itself leaves inconsistent or open (not compiled): listed in
    ``dropped.jsonl`` as kind ``add`` (every add not compiled is), reason
    ``source check <check>: <reason>``, one of :data:`ADD_DROP_REASONS`."""
    drop(ctx, "add", what, f"source check {check}: {reason}", t, **refs)


def ingredient_tracks(ctx, ing_words: set, t0: float, t1: float):
    out = []
    members = kind_members(ctx, ing_words)
    for tr in overlapping(ctx, t0, t1):
        if is_cover(ctx, tr.entity):
            continue        # "lid curry powder" holds no curry powder: the jar does
        if any(names_ingredient(ws, ing_words) or names_member(ws, members)
               for ws in ctx.name_words.get(tr.entity, [])):
            out.append(tr)
    return out


def kind_members(ctx, ing_words: set) -> list[list[str]]:
    """The words of each curated member of the food kind an ingredient is named by alone
    (``food_kinds`` of the vocabulary: "cereal" -> wheat bixie, weetabix, ...); none for an
    ingredient named otherwise ("strawberry granola" is named by its own words)."""
    kinds = ctx.vocab.data.get("food_kinds", {})
    if len(ing_words) != 1 or next(iter(ing_words)) not in kinds:
        return []
    return [words(m) for m in kinds[next(iter(ing_words))]]


def names_member(ws: list, members: list) -> bool:
    """Whether a track name's words hold a kind member's words in a row ("rightmost stack
    of wheat bixies", "box of wheat bixies": the member or a container of it)."""
    return any(m and any(ws[i:i + len(m)] == m for i in range(len(ws) - len(m) + 1)) for m in members)


def is_heap(ctx, ent: str) -> bool:
    """A stack or pile of a food ("rightmost stack of wheat bixies"): several instances held
    together, from which one is taken."""
    return any(set(ws) & HEAP_WORDS for ws in main_words(ctx, ent))


def names_ingredient(ws: list, ing_words: set) -> bool:
    """A track name names an ingredient when its head noun is one of the ingredient's
    words ("garlic", "bottle of squash"), or when its head is a container word and
    it names the ingredient ("milk bottle"); "milk frother base" is not milk."""
    if not ws:
        return False
    # every word compared in one spelling ("chili" names green chillies, a "yogurt
    # container" fat free yoghurt: P04-20240413-151722, 153.94-176.80 s)
    spelt, ing = [_spelling(w) for w in ws], {_spelling(w) for w in ing_words}
    if spelt[-1] in ing:
        return True
    mods = {_spelling(w) for w in set(ws[:-1]) - COLOUR_WORDS}
    if ws[-1] in PART_WORDS and mods & ing:
        return True         # a part names its food: a "garlic clove" is garlic
    if len(ws) > 1 and ws[-1] in CUBE_WORDS and spelt[-2] in ing:
        return True         # a "butter cube" is butter (P01_R09's unsalted butter, 37.0-41.0 s)
    # a colour names the container, not its content: "black jar1" is not black pepper
    return ws[-1] in CONTAINER_WORDS and bool(mods & ing)


def ground_add(ctx, rid, cap, ev, matches, refs, swap=None):
    """Ground one add row ``ev``; ``swap``: the note of a clean swap (:func:`swapped_row`),
    ``ev`` then carrying the other row's span."""
    t0, t1 = ev.span.start, ev.span.end
    what = f"add {ev.ingredient_id} ({ev.name})"
    mine = ingredient_tracks(ctx, matches[ev.ingredient_id], t0, t1)
    generic = False
    if not mine:
        # a container whose name names no content ("bottle", "spice jar1", "black jar2")
        # held during the whole add of a substance, and no other container held then
        # (a lid taken off it is no container of food): it is the add's source
        held = [tr for tr in overlapping(ctx, t0, t1, 0.0) if is_a(ctx, tr.entity, "container")
                and not is_cover(ctx, tr.entity)]
        plain = [tr for tr in held if all(set(ws) <= GENERIC_SOURCE_WORDS | SERVED_FROM_WORDS
                                          for ws in main_words(ctx, tr.entity))
                 and tr.start <= t0 + MARGIN and tr.end >= t1 - MARGIN]
        leaf, _ = ingredient_type(ev.name, ctx.vocab)
        if (len({tr.entity for tr in held}) == 1 and len(plain) == 1
                and ctx.vocab.is_a(leaf, "substance")):
            # a bowl or plate (the spice measured out on it) is the source only when the
            # step text names the vessel it goes into (checked in ground_instance)
            mine = plain
            generic = "vessel" if any(set(ws) & SERVED_FROM_WORDS for ws in main_words(ctx, plain[0].entity)) \
                else True
    if not mine:
        others = sorted({iid for iid, ws in matches.items() if iid != ev.ingredient_id
                         and ingredient_tracks(ctx, ws, t0, t1)})
        partner = swapped_row(ctx, rid, cap, ev, matches) if others and swap is None else None
        if partner is not None:
            # a clean swap: this ingredient's own track lies in the other row's span
            sp = partner.span
            note = (f"the add times of {ev.ingredient_id} and {partner.ingredient_id} ({partner.name}) are "
                    f"swapped: each row's span holds only the other's tracks, so this add is timed by "
                    f"{partner.ingredient_id}'s row ({local(ctx, sp.video, sp.start):.2f}-"
                    f"{local(ctx, sp.video, sp.end):.2f} s; a curated timing label, the add is observed)")
            ground_add(ctx, rid, cap, dataclasses.replace(ev, span=sp), matches, refs, swap=note)
            return
        if others:
            source_check(ctx, "add_time_matches_other_ingredient", what,
                              f"the tracks overlapping this add are named for {others}, not for "
                              f"{ev.name!r}: add times swapped or mislabelled", t0, refs)
        else:
            add_untracked(ctx, rid, ev, matches, refs, what)
        return
    ents = sorted({tr.entity for tr in mine})
    if len(ents) > 1:
        # a track whose head is the ingredient's own head noun ("oil bottle", "bottle of
        # oil" for vegetable oil) names it; one named by a modifier word only ("basket
        # vegetable") names something else
        head = words(ev.name)[-1:]
        own = [tr for tr in mine if any(ws and (ws[-1:] == head or (ws[-1] in CONTAINER_WORDS and
                                                                   set(head) & set(ws[:-1])))
                                        for ws in ctx.name_words.get(tr.entity, []))]
        if own and len({tr.entity for tr in own}) < len(ents):
            mine, ents = own, sorted({tr.entity for tr in own})
    if len(ents) > 1:
        strict = [tr for tr in mine if overlaps(tr.start, tr.end, t0, t1, 0.0)]
        if len({tr.entity for tr in strict}) == 1:
            mine, ents = strict, [strict[0].entity]
    if len(ents) > 1:
        # a stack or pile of the food held over the add is where the single instances
        # tracked during it are taken from (a wheat bixie off the rightmost stack into the
        # bowl): they are what goes in, never the stack
        single = [tr for tr in mine if not is_heap(ctx, tr.entity)]
        if single and len(single) < len(mine) and all(
                is_food(ctx, tr.entity) and not is_a(ctx, tr.entity, "container") for tr in single):
            mine, ents = single, sorted({tr.entity for tr in single})
    if len(ents) > 1:
        added = instances_added(ctx, mine, t0, t1)
        one_source = len(added) == 1 and (is_a(ctx, added[0][0], "container") or not is_food(ctx, added[0][0]))
        if not added or len(added) == 1 and not one_source:
            drop(ctx, "add", what, f"several tracked objects match the ingredient: {ents}", t0, **refs)
            return
        if one_source:
            # the other containers of the ingredient are handled mostly outside the add: the
            # one handled during it is the source (a food instance at the add's edge may be
            # one it puts in too: that stays ambiguous)
            ent, tr = added[0]
            ground_instance(ctx, rid, ev, matches, refs, what, ent, [tr], generic, set(), swap,
                            f" (the only one of {ents} handled during the add; the others lie mostly "
                            "outside it)")
            return
        # one add row, several instances put in during it (the spinach leaves, the
        # eggs): each is added, from its own track
        for ent, tr in added:
            ground_instance(ctx, rid, ev, matches, refs, f"{what}: {ent}", ent, [tr], generic,
                                 {e for e, _ in added} - {ent}, swap)
        return
    ground_instance(ctx, rid, ev, matches, refs, what, ents[0], mine, generic, set(), swap)


def swapped_row(ctx, rid, cap, ev, matches):
    """The add row ``ev`` is cleanly swapped with (issue 34, the reviewer's P05_R01 tandoori
    masala and turmeric), else ``None``: the one other add row of the same capture and step
    such that every track in ``ev``'s span named for another ingredient names its
    ingredient, and every track in its span named for another ingredient names ``ev``'s;
    each ingredient has that one add row. Anything less clean stays dropped."""
    own = matches[ev.ingredient_id]

    def named(span, exclude):
        return {tr.track_id: {iid for iid, ws in matches.items() if iid != exclude
                              and any(names_ingredient(w, ws) for w in ctx.name_words.get(tr.entity, []))}
                for tr in ingredient_tracks(ctx, set().union(*[matches[i] for i in matches if i != exclude]),
                                            span.start, span.end)}

    def steps(e):
        sp = e.span
        return {w.step for w in windows_at(ctx, sp.video, sp.start, sp.end, rid)
                or prep_windows_at(ctx, sp.video, sp.start, sp.end, rid, matches[e.ingredient_id])}

    rows = [e for e in cap.events if e.kind == "add" and e.span.video == ev.span.video]
    mine_rows = [e for e in rows if e.ingredient_id == ev.ingredient_id]
    here = named(ev.span, ev.ingredient_id)
    cands = set.intersection(*here.values()) if here else set()
    out = []
    for j in sorted(cands):
        theirs = [e for e in rows if e.ingredient_id == j]
        if len(theirs) != 1 or len(mine_rows) != 1 or len(steps(ev)) != 1 or steps(theirs[0]) != steps(ev):
            continue
        there = named(theirs[0].span, j)
        if there and all(ev.ingredient_id in ids for ids in there.values()) \
                and ingredient_tracks(ctx, own, *[theirs[0].span.start, theirs[0].span.end]):
            out.append(theirs[0])
    return out[0] if len(out) == 1 else None


def ground_instance(ctx, rid, ev, matches, refs, what, ent, mine, generic, siblings, swap=None, src_note=""):
    """Ground the add of one tracked instance ``ent`` (its tracks ``mine``);
    ``siblings``: the other instances the same add row puts in (never its target)."""
    t0, t1 = ev.span.start, ev.span.end
    tr = sorted(mine, key=lambda x: (abs(x.start - t0), x.track_id))[0]
    several = 1
    if len([x for x in mine if x.entity == ent]) > 1:
        tr = [x for x in mine if x.entity == ent and overlaps(x.start, x.end, t0, t1, 0.0)]
        if not tr:
            drop(ctx, "add", what, "several tracks of the ingredient overlap the add", t0, **refs)
            return
        # the tracks of one object are one candidate (issue 34): what went in is decided;
        # the add is placed in the track that holds it longest during the add (the jar
        # put down and picked up again while the honey is spooned out)
        several = len(tr)
        tr = sorted(tr, key=lambda x: (-(min(x.end, t1) - max(x.start, t0)), x.start))[0]
    ok, win = step_of_add(ctx, rid, ev, matches, refs, what)
    if not ok:
        return
    text = win.text if win else ""
    ttext = clause_of(ctx, text, matches[ev.ingredient_id])
    # one of several instances goes in while its own track is held
    during = (max(t0, tr.start), min(t1, tr.end)) if siblings else None
    typ = ctx.w.objects[ent]
    leaf, _ = ingredient_type(ev.name, ctx.vocab)
    subst = ctx.vocab.is_a(leaf, "substance")
    container, why = source_role(ctx, ent, typ, ev.name, matches[ev.ingredient_id], subst, tr, t0, t1)
    if why:     # the squeezed lemon, the scooped jar: its source, never what goes in
        return drop(ctx, "add", what, why, t0, **refs)
    ev_ing = {"how": "ingredient of complete_recipes.json", **refs}
    if swap:
        ev_ing = {**ev_ing, "how": f"ingredient of complete_recipes.json; {swap}", "evidence": "swapped_add_times"}
    src_ev = {"how": ("the only container held during the whole add (its name names no content)"
                      if generic else "track named for the ingredient overlaps the add")
              + (f" (the one of {several} tracks of {ent} overlapping the add that holds it longest "
                 "during it)" if several > 1 else "") + src_note, **track_ref(ctx, tr)}
    if container:
        if not subst and not ctx.vocab.is_a(leaf, "food"):
            drop(ctx, "add", what, f"ingredient typed {leaf}", t0, **refs)
            return
        sub = ingredient_entity(ev.name, ctx.vocab)
        first, n = sub, 2           # the whole food is tracked too: what this holds is a portion
        while ctx.tracks_of.get(sub):
            sub, n = f"{first}_{n}", n + 1
        if generic == "vessel":
            # with no track of the spice, a bowl or plate held through its add is its
            # source or where it goes: its source only when the step text names another
            # vessel, of another noun, that the target rule binds
            target, tev = add_target(ctx, rid, ev, win, ttext, {ent} | siblings, what, refs,
                                          same_step=False)
            if target is None:
                return
            if tev.get("evidence") != "step_text" and not str(tev.get("how", "")).startswith("step text names") \
                    or ctx.own_heads.get(target, set()) & ctx.own_heads.get(ent, set()):
                drop(ctx, "add", what, f"target not decided: {ent} is held through the add of a substance "
                          "no track names: its source or its target (the step text names no other vessel "
                          f"the target rule binds; it bound {target}: {tev.get('how')})", t0, **refs)
                return
            src_ev = {**src_ev, "how": f"the only container held through the whole add, a {ent} with no "
                                       f"content in its name, while the step text names {target} as the target"}
        ctx.out.objects.setdefault(sub, leaf)
        seen = {**track_ref(ctx, tr), "ingredient": ev.ingredient_id, "recipe": rid,
                "how": ("the add row: the ingredient leaves it (held through the add)" if generic
                        else "the track's name names the ingredient it holds")}
        # a bowl, plate or cup is seen holding it only at the add (the spice measured out on
        # it during the video): since the start is curated; a jar or a named container observed
        ctx.out.facts.setdefault(("in", sub, ent), {"source": "curated", "refs": {
            "rule": "content_of_a_vessel_held_through_its_add", "seen": seen}} if generic == "vessel"
            else {"source": "observed", "refs": seen})
        if generic != "vessel":
            target, tev = add_target(ctx, rid, ev, win, ttext, {ent} | siblings, what, refs, during=during)
        if target is None:
            return
        action = "pour" if subst else "empty_into"
        roles = {"s": sub, "src": ent, "dst": target}
        evid = {"s": ev_ing, "src": src_ev, "dst": tev}
    else:
        if ctx.vocab.is_a(typ, "food"):
            action = "add_ingredient"
        elif ctx.vocab.is_a(typ, "supply"):
            action = "insert"
        else:
            drop(ctx, "add", what, f"matching track {ent} is typed {typ} (not food, supply or a container)",
                      t0, **refs)
            return
        fx = fixture_named(ctx, text) if action == "insert" else None
        if fx is not None:
            target, tev = fx, {"how": "step text names the appliance", "file": "complete_recipes.json",
                               "recipe": rid, "step": win.step if win else None}
        else:
            if action == "insert":
                action = "put_in_container"
            # a container an item is put into: the target rule alone, not another add's target
            target, tev = add_target(ctx, rid, ev, win, ttext, {ent} | siblings, what, refs,
                                          same_step=action != "put_in_container", during=during,
                                          step_adds=action != "put_in_container")
            if target is None:
                return
        roles = {"o": ent, "c": target}
        evid = {"o": src_ev, "c": tev}
    t = min(max(t0, tr.start + 0.01), tr.end - 0.01)
    if win is not None and action != "insert":
        ctx.step_targets.setdefault((rid, win.step, win.video), (roles.get("dst") or roles.get("c"),
                                                      evid.get("dst") or evid.get("c"), t))
    ctx.out.planned.append(Planned(
        "add", round(t, 3), action, roles, evid,
        {**refs, "step": win.step if win else None}, hold=ent, hold_track=tr.track_id, step=win,
        title=title_of(text) if text else f"Add {ev.name}", what=what))


def add_target(ctx, rid, ev, win, ttext, own, what, refs, same_step=True, during=None, step_adds=True):
    """``(target, evidence)`` of an add by the target rule (and, with ``same_step``,
    another add of the same step, or the step's vessel; with ``step_adds``, the one vessel
    the step's other adds went into, :func:`step_adds_vessel`); ``own``: the add's own
    objects (never its target); ``during``: the span the food went in, when narrower
    than the add row's (one of several instances, in its own track). ``(None, None)``
    with the reason dropped."""
    t0, t1 = ev.span.start, ev.span.end
    target, tev, why = bind_target(ctx, ttext, t0, t1, win, own, video=ev.span.video, event="the add",
                                        kitchen=True)
    target, tev, why = agreed_target(ctx, what, target, tev, why, own)
    agreed = what in ctx.agreed_vessels     # decided by the steps, or two candidates: no other rule
    if same_step and not agreed:
        target, tev = same_step_target(ctx, rid, win, target, tev, why, own)
        if target is None:
            target, tev = open_add_vessel(ctx, rid, win, ttext, own, why, *(during or (t0, t1)))
    if target is None and step_adds and not agreed:
        target, tev = step_adds_vessel(ctx, rid, win, ttext, own, why, *(during or (t0, t1)), what)
    if target is None and step_adds and not agreed:  # the vessel its segment handles after it
        target, tev = later_handled_vessel(ctx, win, ttext, own, why, *(during or (t0, t1)))
    if target is None:
        why = ctx.running_left.get((rid, *(during or (t0, t1))), why)     # its candidates, if named
        drop(ctx, "add", what, f"target not decided: {why}", t0, **refs)
        ctx.undecided_adds.append((ev.span.video, t0, t1))
        return None, None
    return target, tev


def agreed_target(ctx, what, target, tev, why, own):
    """The target rule's ``(target, evidence, why)`` for an add whose overlapping steps
    agree on one vessel (:func:`~.open_adds.overlapping_steps_vessel`): that vessel when
    the rule decided none; the rule's own target when it is the same one; neither when
    the rule binds another vessel (two candidates: the add stays open) or the agreed
    vessel is one of the add's own objects.

    >>> from types import SimpleNamespace as N
    >>> ctx = N(agreed_vessels={"add I1": ("pan", {"how": "steps agree"})})
    >>> agreed_target(ctx, "add I1", None, None, "no vessel named in the step text", set())[0]
    'pan'
    >>> agreed_target(ctx, "add I1", "bowl", {"how": "x"}, "", set())[:1]
    (None,)
    >>> agreed_target(ctx, "add I2", "bowl", {"how": "x"}, "", set())[0]
    'bowl'
    """
    got = ctx.agreed_vessels.get(what)
    if got is None or target == got[0]:
        return target, tev, why
    if target is not None or got[0] in own:
        return None, None, (f"the steps overlapping the add agree on {got[0]}, but "
                            + (f"the target rule binds {target}" if target is not None
                               else "it is one of the add's own objects"))
    return got[0], got[1], why


def step_of_add(ctx, rid, ev, matches, refs, what):
    """``(ok, window)``: the step window of an add (``ok`` False: the
    ``overlapping_steps`` source check was recorded)."""
    t0, t1 = ev.span.start, ev.span.end
    steps = windows_at(ctx, ev.span.video, t0, t1, rid)
    if len({w.step for w in steps}) > 1:
        named = [w for w in steps if set(words(w.text)) & matches[ev.ingredient_id]]
        if len({w.step for w in named}) != 1:
            def text_vessel(w):
                # a tracked vessel only: an untracked one the text names is not created for a
                # step the add may not belong to (what the rule added is taken back)
                before = (set(ctx.text_vessels), set(ctx.out.objects), set(ctx.out.facts))
                got = bind_target(ctx, clause_of(ctx, w.text, matches[ev.ingredient_id]), t0, t1, w, set(),
                                  fallback=False, video=ev.span.video, event="the add", kitchen=True)
                if got[0] in ctx.tracks_of:
                    return got[:2]
                for d, keep in zip((ctx.text_vessels, ctx.out.objects, ctx.out.facts), before):
                    for k in set(d) - keep:
                        del d[k]
                return None, None
            vessel, vev = overlapping_steps_vessel(ctx, rid, steps, set(), t0, t1, text_vessel)
            if vessel is not None:
                # the steps agree on where the food went: the add's unit is the step whose
                # text names most of the ingredient's words, else the one overlapping it longest
                def rank(w):
                    return (len(set(words(w.text)) & matches[ev.ingredient_id]),
                            min(w.end, t1) - max(w.start, t0), -w.start)
                win = max(steps, key=rank)
                ctx.agreed_vessels[what] = (vessel, vev)
                return True, win
            source_check(ctx, "overlapping_steps", what, f"steps {sorted({w.step for w in steps})} overlap "
                              "the add and the text does not decide", t0, refs)
            return False, None
        steps = named
    if not steps:
        steps = prep_windows_at(ctx, ev.span.video, t0, t1, rid, matches[ev.ingredient_id])
    return True, (steps[0] if steps else None)


def add_untracked(ctx, rid, ev, matches, refs, what):
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
        source_check(ctx, "add_without_track", what, f"{base}; {reason}", t0, refs)

    leaf, _ = ingredient_type(ev.name, ctx.vocab)
    if ctx.vocab.is_a(leaf, "substance"):
        check(f"a substance ({leaf}) is not held without a container, and no container of it is "
              "tracked during the add (none is invented): not compiled")
        return
    if not ctx.vocab.is_a(leaf, "food"):
        check(f"ingredient typed {leaf}: not compiled")
        return
    sub = ingredient_entity(ev.name, ctx.vocab)
    # the tracked food the name names ("sourdough baguette": the baguette; "garlic": the
    # tracked garlic), else a refusal: never a second, curated entity of an object the
    # world has, never one of several tracked foods by its id alone (named_food.py)
    pieces, why = tracked_food_named(ctx, ev, sub, t0)
    if why:
        return check(why)
    sub = pieces[0]
    portion = ""
    if sub in ctx.out.objects and sub not in ctx.w.objects:
        # an earlier add without a track already put a curated portion of it in (P04_R05's
        # instant dosa mix, poured on the dosa pan for each dosa): what this row puts in is
        # another portion, a new entity with its own curated place, never the one already
        # in a vessel (refusing it protected nothing: the add row observes this add too)
        n, first = 2, sub
        while sub in ctx.w.objects or sub in ctx.out.objects:
            sub, n = f"{first}_{n}", n + 1
        portion = f"; another portion of {first} (an earlier add without a track put one in)"
        pieces = [sub]
    # tracked under its own name (another video of the episode, the ginger chopped before it
    # is pounded): the one such food goes in from wherever the world has it then, by the
    # rule of a food tracked under another name (tracked_food_named: several named, or the
    # one tracked after the add, and the add is refused)
    tracked = sub in ctx.w.objects
    # a food tracked during the add under another name ("wheat bixie" for cereal) may
    # be the ingredient itself: a second, curated entity of it would duplicate it
    foods = sorted({tr.entity for tr in overlapping(ctx, t0, t1, 0.0) if is_food(ctx, tr.entity)})
    if foods:
        check(f"a food tracked during the add ({', '.join(foods)}) may be the ingredient under another "
              "name: not compiled")
        return
    ok, win = step_of_add(ctx, rid, ev, matches, refs, what)
    if not ok:
        return
    text = win.text if win else ""
    ttext = clause_of(ctx, text, matches[ev.ingredient_id])
    # only a vessel the step text names: with no track of the food, a vessel held
    # during the add is as likely its source (the bowl the onion is tipped out of),
    # and so is a named one in the hand through the whole add (the salad bowl held
    # from 281.98 to 328.87 s while the tabbouleh goes into the bowl beside it)
    held = {tr.entity: "in the hand through the whole add: with no track of the food, it may be "
                       "what the food is tipped out of"
            for tr in overlapping(ctx, t0, t1, 0.0) if tr.start <= t0 + 1e-6 and tr.end >= t1 - 1e-6}
    target, tev, why = bind_target(ctx, ttext, t0, t1, win, held, fallback=False, video=ev.span.video,
                                        event="the add", kitchen=True)
    target, tev, why = agreed_target(ctx, what, target, tev, why, set(held))
    if target is None and what not in ctx.agreed_vessels:
        target, tev = open_add_vessel(ctx, rid, win, ttext, set(), why, t0, t1)
    if target is None:
        check(f"target not decided: {ctx.running_left.get((rid, t0, t1), why)}")
        return
    if tracked:
        place = WHERE_IT_STANDS
    else:
        fixtures = [{"id": f, "type": ctx.w.objects[f]} for f in sorted(ctx.w.fixture_ids)
                    if f in ctx.w.objects]
        place, rule = default_location(leaf, fixtures, ctx.w.work_counter, ctx.vocab)
        ctx.out.objects[sub] = leaf
        ctx.out.facts[("at", sub, place)] = {"source": "curated", "refs": {
            "rule": f"{UNTRACKED_RULE}:{rule}", "recipe": rid, "ingredient": ev.ingredient_id,
            "how": f"no track names the ingredient: its place before the add is a curated default{portion}"}}
    ev_ing = {"how": "ingredient of complete_recipes.json (the add row: no track names it)", **refs}
    if win is not None:
        ctx.step_targets.setdefault((rid, win.step, win.video), (target, tev, t0))
    for i, ent in enumerate(pieces):
        # a plural ingredient's pieces (named_food.all_pieces): each goes in, in turn, from
        # where it stands, its evidence the rule and its own last track
        ev_o = ev_ing if len(pieces) == 1 else {
            **ev_ing, "evidence": "plural_ingredient_all_pieces", "how": (
                f"ingredient of complete_recipes.json (the add row: no track names it); {ev.name!r} is "
                f"plural and names {len(pieces)} tracked pieces ({', '.join(pieces)}), each last handled "
                "before the add in its video, never put away, never tracked again, named by no other add: "
                "all of them went in"),
            "last_track": track_ref(ctx, max(ctx.tracks_of[ent], key=lambda x: (x.end, x.track_id)))}
        ctx.out.planned.append(Planned(
            "add", round(t0 + 0.01 * i, 3), "add_ingredient", {"o": ent, "c": target}, {"o": ev_o, "c": tev},
            {**refs, "step": win.step if win else None}, hold=ent, hold_track=None, step=win,
            title=title_of(text) if text else f"Add {ev.name}", what=what if len(pieces) == 1 else f"{what}: {ent}",
            pickup=place))

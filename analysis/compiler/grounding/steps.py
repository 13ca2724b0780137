"""Grounding (paper section 3, entity bindings): step key actions (stir, chop, peel, wash, fill, press, transfer, ...) bound to tracked objects."""
from __future__ import annotations

import re
from functools import partial

from .text import (PART_WORDS, STIR_TOOLS, all_verbs, overlaps, target_groups, target_phrases, title_of, words)
from .windows import Planned
from .text import fixture_named
from .grounder import (bind_target, drop, has_head, is_a, is_food, local, overlapping, target_ok,
                       track_ref, vessel_at)


def ground_steps(ctx, add_steps: set):
    """Each timed step segment: the first verb of the step text (in text order) whose
    objects the tracks held in the segment bind; the add event itself when the step
    has one."""
    for win in ctx.windows:
        what = f"step {win.step} at {win.start:.1f}s"
        refs = {"file": "complete_recipes.json", "recipe": win.recipe, "step": win.step,
                "video": win.video, "start": local(ctx, win.video, win.start),
                "end": local(ctx, win.video, win.end)}
        if (win.recipe, win.step, win.video, win.start) in add_steps:
            continue       # the add event itself is the step's key action
        if add_inside(ctx, win):
            # the person did an add in this segment (its ingredient track is held)
            # but its target is not decided: the add is the segment's key action, and
            # another verb of the text is not what the person did then (the teaspoon
            # that spooned the sugar did not "mix" the bowl of the first clause)
            drop(ctx, "cue", what, "the segment's key action is an add whose target is not decided",
                      win.start, **refs)
            continue
        verbs = all_verbs(win.text)
        if not verbs:
            drop(ctx, "cue", what, "no key verb the rules compile in the step text", win.start, **refs)
            continue
        reasons = []
        for verb in verbs:
            handler = step_rule(ctx, f"step_{'transfer' if verb == 'add' else verb}")
            if handler is None:
                reasons.append(f"{verb}: no binding rule")
                continue
            n_drop, n_plan = len(ctx.out.dropped), len(ctx.out.planned)
            handler(win, what, refs)
            if len(ctx.out.planned) > n_plan:
                del ctx.out.dropped[n_drop:]
                break
            reasons += [f"{verb}: {d['reason']}" for d in ctx.out.dropped[n_drop:]]
            del ctx.out.dropped[n_drop:]
        else:
            drop(ctx, "cue", what, "; ".join(reasons), win.start, **refs)


def add_inside(ctx, win) -> bool:
    """An add of the recipe whose ingredient track was found (the person did the add
    in this segment) but whose target the evidence did not decide."""
    return any(v == win.video and overlaps(t0, t1, win.start, win.end, 0.0)
               for v, t0, t1 in ctx.undecided_adds)


def own_overlap(ctx, win, tr) -> float:
    """Seconds of ``tr`` inside the window's own time: the step segment, or an activity
    row's span outside the recipe steps inside it (those are other units)."""
    spans = win.own if win.row else ((win.start, win.end),)
    return sum(max(0.0, min(tr.end, b) - max(tr.start, a)) for a, b in spans)


def during(ctx, win):
    """The tracks held during the window's own time (no margin)."""
    return [tr for tr in overlapping(ctx, win.start, win.end, 0.0) if own_overlap(ctx, win, tr) > 0]


def tracks_in(ctx, win, pred):
    return [tr for tr in overlapping(ctx, win.win_start, win.end) if pred(tr.entity)]


def held_in(ctx, win, pred, what, refs, role, vessel=False):
    """The one tracked object satisfying ``pred`` held during the step segment itself
    (for at least half of it, or a second). A vessel must carry the vessel noun the
    step text names, when it names one ("Fill your glass": a glass, not a bowl)."""
    need = min(1.0, 0.5 * (win.end - win.start))
    trs = [tr for tr in during(ctx, win) if pred(tr.entity) and own_overlap(ctx, win, tr) >= need]
    if vessel:
        # a kettle named ("Fill kettle of water") is what is filled: no other vessel
        named = set(words(win.text)) & (ctx.vessel_heads | {"kettle"})
        if named:
            trs = [tr for tr in trs if has_head(ctx, tr.entity, named)]
    ents = sorted({tr.entity for tr in trs})
    if len(ents) != 1:
        drop(ctx, "cue", what, f"{role}: {len(ents)} candidate tracks in the step segment {ents}",
                  win.start, **refs)
        return None, None
    tr = sorted(trs, key=lambda x: (x.start, x.track_id))[0]
    return ents[0], tr


def plan_step(ctx, win, action, roles, evid, refs, hold=None, tr=None, t=None):
    if t is None:
        t = win.start if tr is None else max(win.start, tr.start + 0.01)
        if tr is not None:
            t = min(t, tr.end - 0.01)
    ctx.out.planned.append(Planned("step", round(t, 3), action, roles, evid, refs, hold=hold,
                                    hold_track=tr.track_id if tr else None, step=win,
                                    title=title_of(win.text), what=f"{action} {win.step}"))


def step_stir(ctx, win, what, refs, action="stir"):
    tools = {"whisk_tool"} if action == "whisk" else STIR_TOOLS
    tool, tr = held_in(ctx, win, lambda e: ctx.w.objects.get(e) in tools, what, refs, "tool")
    if tool is None:
        return
    # nothing is stirred on a plate or a tray, nor in a colander (it drains: "Stir in
    # the red lentils" happens in the pot, not in the colander that rinsed them)
    flat = {e: "nothing is stirred on a plate or a tray, nor in a colander"
            for e, t in ctx.w.objects.items() if t in ("plate", "tray", "colander")}
    text = win.text
    if win.row and not target_groups(text, ctx.vessel_heads):
        # a label names its vessel bare ("Stir pot"): that noun, never another vessel
        # handled somewhere in the row
        bare = [w for w in words(text) if w in ctx.vessel_heads]
        if bare:
            text = f"in the {bare[0]}"
    target, tev, why = bind_target(ctx, text, win.start, win.end, win, {**flat, tool: "the tool"})
    if target is None:
        drop(ctx, "cue", what, f"target not decided: {why}", win.start, **refs)
        return
    plan_step(ctx, win, action, {"t": tool, "c": target},
                   {"t": {"how": "utensil tracked during the step", **track_ref(ctx, tr)}, "c": tev},
                   refs, hold=tool, tr=tr)


def step_whisk(ctx, win, what, refs):
    step_stir(ctx, win, what, refs, "whisk")


def named_at(ctx, win, pred, what, refs, role, held=False, text=None):
    """The one object satisfying ``pred`` (a food, a switchable container) whose name
    carries a word of the step text and that the step segment acts on, by the vessel
    rule (:meth:`vessel_at`, the step segment as the event): tracked during the
    segment with no other such object put down in the ``LOOKBACK`` s before it, or,
    with none tracked during it, the only one put down in those 60 s and not picked
    up again before it ends. A track anywhere else in the prep window is not evidence
    (P05-20240425-173353: the bacon handled 314-316 s is not what S04's segment from
    343.95 s cuts). ``held``: the action needs the object in the hand (a food is
    grated while held), so one only put down before the segment does not bind.
    ``text``: the part of the step text that names the object (the verb's own clause),
    by default the whole text.
    ``(entity, evidence, track)``, or ``(None, None, None)`` with the reason dropped."""
    # a part word names no food: "slice of mango3" is mango, and "slice" in the text
    # is the verb ("Peel and slice mangoes")
    ws = set(words(win.text if text is None else text)) - PART_WORDS
    ents = sorted(e for e in ctx.tracks_of if pred(e) and ctx.tokens.get(e, set()) & ws
                  and any(tr.assoc.video == win.video for tr in ctx.tracks_of[e]))
    if not ents:
        drop(ctx, "cue", what, f"{role}: no {role} tracked in the video is named by the step text",
                  win.start, **refs)
        return None, None, None
    hit = sorted(set().union(*(ctx.tokens[e] & ws for e in ents)))
    nested = {}
    if win.row:
        # a row's own objects: one tracked in the row only inside the recipe steps
        # nested in it was handled for those steps (other units), not for the row
        for e in ents:
            inrow = [tr for tr in ctx.tracks_of[e] if tr.assoc.video == win.video
                     and overlaps(tr.start, tr.end, win.start, win.end, 0.0)]
            if inrow and not any(own_overlap(ctx, win, tr) > 0 for tr in inrow):
                nested[e] = "tracked in the row only inside the recipe steps nested in it"
        ents = [e for e in ents if e not in nested]
        if not ents:
            drop(ctx, "cue", what, f"{role}: every {role} the label names is tracked in the row only inside "
                                   f"the recipe steps nested in it ({', '.join(sorted(nested))})",
                      win.start, **refs)
            return None, None, None
    ent, ev, why = vessel_at(ctx, "' or '".join(hit), "/".join(hit), ents, win.start, win.end, win.video,
                                  "the step segment", win, others=nested, role=role, other_steps=False)
    if ent is None:
        drop(ctx, "cue", what, f"{role} not decided: {why}", win.start, **refs)
        return None, None, None
    tr = next(x for x in ctx.tracks_of[ent] if x.assoc.video == win.video and x.track_id == ev["track"])
    if held and not own_overlap(ctx, win, tr) > 0:
        drop(ctx, "cue", what, f"{role} not held: {ent} is not tracked during the step segment "
                               f"({local(ctx, win.video, win.start):.2f}-{local(ctx, win.video, win.end):.2f} s; "
                               f"put down at {local(ctx, win.video, tr.end):.2f} s)", win.start, **refs)
        return None, None, None
    return ent, ev, tr


def step_chop(ctx, win, what, refs):
    blade, tr = held_in(ctx, win, lambda e: is_a(ctx, e, "knife") or is_a(ctx, e, "scissors"),
                             what, refs, "blade")
    if blade is None:
        return
    food, fev, _ = named_at(ctx, win, partial(is_food, ctx), what, refs, "food")
    if food is None:
        return
    plan_step(ctx, win, "chop", {"o": food, "t": blade},
                   {"o": fev, "t": {"how": "blade tracked during the step", **track_ref(ctx, tr)}},
                   refs, hold=blade, tr=tr)


def step_peel(ctx, win, what, refs):
    food, fev, ftr = named_at(ctx, win, partial(is_food, ctx), what, refs, "food")
    if food is None:
        return
    ents = [food]
    blades = [tr for tr in during(ctx, win) if is_a(ctx, tr.entity, "blade")]
    if len({b.entity for b in blades}) == 1:
        b = blades[0]
        plan_step(ctx, win, "peel", {"o": ents[0], "t": b.entity},
                       {"o": fev, "t": {"how": "blade tracked during the step", **track_ref(ctx, b)}},
                       refs, hold=b.entity, tr=b)
    elif own_overlap(ctx, win, ftr) > 0:
        plan_step(ctx, win, "peel_by_hand", {"o": ents[0]}, {"o": fev}, refs, hold=ents[0], tr=ftr)
    else:
        drop(ctx, "cue", what, "food not held during the step and no blade tracked", win.start, **refs)


def step_grate(ctx, win, what, refs):
    # the food grated is the one the verb's own clause names ("beat the eggs in a
    # bowl, then finely grate in the Parmesan": Parmesan, not the eggs)
    m = re.search(r"\bgrat\w*\s+([^.;,]*)", win.text.lower())
    food, fev, ftr = named_at(ctx, win, partial(is_food, ctx), what, refs, "food", held=True,
                                   text=m.group(1) if m else None)
    if food is None:
        return
    ents = [food]
    target, tev, why = bind_target(ctx, win.text, win.start, win.end, win, {ents[0]})
    if target is None:
        drop(ctx, "cue", what, f"target not decided: {why}", win.start, **refs)
        return
    plan_step(ctx, win, "grate", {"o": ents[0], "c": target},
                   {"o": fev, "c": tev}, refs, hold=ents[0], tr=ftr)


def step_crack(ctx, win, what, refs):
    eggs = [tr for tr in during(ctx, win) if is_a(ctx, tr.entity, "egg")]
    ents = sorted({x.entity for x in eggs})
    if len(ents) != 1:
        drop(ctx, "cue", what, f"egg: {len(ents)} eggs tracked during the step {ents}", win.start, **refs)
        return
    target, tev, why = bind_target(ctx, win.text, win.start, win.end, win, {ents[0]})
    if target is None:
        drop(ctx, "cue", what, f"target not decided: {why}", win.start, **refs)
        return
    plan_step(ctx, win, "break_into", {"o": ents[0], "c": target},
                   {"o": {"how": "egg tracked during the step", **track_ref(ctx, eggs[0])}, "c": tev},
                   refs, hold=ents[0], tr=eggs[0])


def step_wash(ctx, win, what, refs):
    # the object washed is the one the verb's own clause names ("Wash the starch out of
    # the rice. Add to a pan with a lid": rice, not the lid)
    m = re.search(r"\b(?:wash|rinse)\w*\s+([^.;,]*)", win.text.lower())
    named = set(words(m.group(1))) if m else set()
    if m and re.match(r"up\b", m.group(1)):
        named = set()   # "Washing up and refilling dish soap bottle": washing up names no object
    # by the object's own head noun: a "box of chicken" is a box, not the chicken washed
    obj, tr = held_in(ctx, win, lambda e: is_a(ctx, e, "item") and not is_a(ctx, e, "supply")
                           and has_head(ctx, e, named), what, refs,
                           "object named by the text")
    if obj is None:
        return
    plan_step(ctx, win, "wash", {"o": obj},
                   {"o": {"how": "object held during the step", **track_ref(ctx, tr)}},
                   refs, hold=obj, tr=tr)


def step_fill(ctx, win, what, refs):
    # the fill's own clause says what fills it: "fill an empty glass with rice and wash
    # it ... in the fresh running water" fills the glass with rice, not water
    m = re.search(r"\bfill\w*\s+(.*?)(?:[.;,]|\band\b|\bthen\b|$)", win.text.lower())
    clause = set(words(m.group(1))) if m else set()
    if "water" not in clause:
        drop(ctx, "cue", what, "fill: only filling with water from the tap is compiled (the fill's own "
                  f"clause, {m.group(1).strip()!r}, names no water)" if m else
                  "fill: only filling with water from the tap is compiled", win.start, **refs)
        return
    obj, tr = held_in(ctx, win, partial(target_ok, ctx), what, refs, "vessel", vessel=True)
    if obj is None:
        return
    ctx.out.objects.setdefault("water", "water")
    plan_step(ctx, win, "fill_from_tap", {"c": obj},
                   {"c": {"how": "vessel held during the step", **track_ref(ctx, tr)}},
                   refs, hold=obj, tr=tr)


def appliance_named(ctx, win):
    low = win.text.lower()
    for phrase, (fid, _) in sorted(ctx.vocab.step_fixtures.items()):
        if re.search(rf"\b{re.escape(phrase)}\b", low) and fid in ctx.w.objects:
            return fid
    return None


def step_press(ctx, win, what, refs):
    fx = appliance_named(ctx, win)
    if fx is None:
        recipe_text = " ".join(ctx.recipes[win.recipe].steps.values())
        named = [f for p, (f, _) in sorted(ctx.vocab.step_fixtures.items())
                 if re.search(rf"\b{re.escape(p)}\b", recipe_text.lower()) and f in ctx.w.objects]
        if "button" in win.text.lower() and len(set(named)) == 1:
            fx = named[0]
    if fx is None:
        drop(ctx, "cue", what, "press: no appliance named by the step or its recipe", win.start, **refs)
        return
    plan_step(ctx, win, "press_button", {"a": fx},
                   {"a": {"how": "appliance named by the recipe's step text", **refs}}, refs)


def step_turn_on(ctx, win, what, refs):
    fx = appliance_named(ctx, win)
    if fx is not None:
        plan_step(ctx, win, "turn_on", {"a": fx}, {"a": {"how": "appliance named by the step text", **refs}},
                       refs)
        return
    step_boil(ctx, win, what, refs)


def step_boil(ctx, win, what, refs):
    app, aev, tr = named_at(ctx, win, lambda e: is_a(ctx, e, "electric_container"), what, refs, "appliance")
    if app is None:
        return
    # switched on once it is set down (on its base): after the bound track, or at the
    # segment's end when it is still held then
    plan_step(ctx, win, "turn_on_container", {"c": app}, {"c": aev}, refs,
                   t=max(win.start, tr.end + 0.01) if tr.end < win.end else win.end)


def step_transfer(ctx, win, what, refs):
    """An add/put/pour step without an add event. A container held during the step
    that holds a substance the text names (its name names it, or an earlier grounded
    pour filled it) is poured into the vessel the text names; else the one item held
    during the step whose name the text names is added / put / inserted into it."""
    held = overlapping(ctx, win.start, win.end, 0.0)
    named = set(words(win.text))
    holds = {}
    # a vessel an earlier add filled is a source only for a later step that pours
    # "into" something ("Add the frothed milk into the coffee"), never for the step
    # of that add itself ("Preheat the pan ... add olive oil": the pan is the target)
    into = re.search(r"\binto\b", win.text.lower()) is not None
    for q in ctx.out.planned:
        if (q.action == "pour" and q.time < win.start and set(words(q.roles["s"])) & named
                and into and (q.step is None or q.step.step != win.step)):
            holds.setdefault(q.roles["dst"], (q.roles["s"], q))
    for c, sub in holders_of(ctx, named).items():
        holds.setdefault(c, (sub, None))
    srcs = sorted({tr.entity for tr in held if tr.entity in holds and is_a(ctx, tr.entity, "container")})
    if len(srcs) > 1:
        drop(ctx, "cue", what, f"{len(srcs)} held containers hold a substance the text names {srcs}",
                  win.start, **refs)
        return
    if len(srcs) == 1:
        src = srcs[0]
        sub, q = holds[src]
        src_tr = sorted((tr for tr in held if tr.entity == src), key=lambda x: (x.start, x.track_id))[0]
        target, tev, why = bind_target(ctx, win.text, win.start, win.end, win, {src}, fallback=False)
        if target is None and why.startswith("no vessel named"):
            # the text names no vessel: the pour happens while its source is in the
            # hand, so only a vessel handled then decides it (a pot handled after the
            # milk bottle is put back, in a long step segment, is not where it went)
            s0, s1 = max(win.start, src_tr.start), min(win.end, src_tr.end)
            target, tev, why = bind_target(ctx, win.text, s0, s1, win, {src},
                                                event=f"the hold of {src}")
        if target is None:
            drop(ctx, "cue", what, f"pour target not decided: {why}", win.start, **refs)
            return
        s_ev = ({"how": f"{sub} was poured into {src} by the earlier grounded add", **q.refs} if q else
                {"how": f"{src}'s track name names {sub}", **track_ref(ctx, src_tr)})
        t = min(max(win.start, src_tr.start + 0.01), src_tr.end - 0.01)
        ctx.out.planned.append(Planned(
            "step", round(t, 3), "pour", {"s": sub, "src": src, "dst": target},
            {"s": s_ev, "src": {"how": "container holding the substance, held during the step",
                                **track_ref(ctx, src_tr)}, "dst": tev},
            refs, hold=src, hold_track=src_tr.track_id, step=win, title=title_of(win.text), what=what))
        return
    heads = {ph[-1] for ph in target_phrases(win.text, ctx.vessel_heads)}
    items = sorted({tr.entity for tr in held if (is_a(ctx, tr.entity, "food") or is_a(ctx, tr.entity, "supply"))
                    and (ctx.heads.get(tr.entity, set()) & named) - heads})
    if len(items) != 1:
        drop(ctx, "cue", what, f"{len(items)} held foods/supplies named by the text {items}",
                  win.start, **refs)
        return
    ent = items[0]
    tr = sorted((x for x in held if x.entity == ent), key=lambda x: (x.start, x.track_id))[0]
    fx = fixture_named(ctx, win.text) if is_a(ctx, ent, "supply") else None
    if fx is not None:
        action, target, tev = "insert", fx, {"how": "step text names the appliance", **refs}
    else:
        # no "only vessel handled" fallback: a vessel held while a food is added is as
        # likely the food's source (the bowl of sliced onion) as its target
        target, tev, why = bind_target(ctx, win.text, win.start, win.end, win, {ent}, fallback=False)
        if target is None:
            drop(ctx, "cue", what, f"target not decided: {why}", win.start, **refs)
            return
        action = "add_ingredient" if is_a(ctx, ent, "food") else "put_in_container"
    t = min(max(win.start, tr.start + 0.01), tr.end - 0.01)
    ctx.out.planned.append(Planned(
        "step", round(t, 3), action, {"o": ent, "c": target},
        {"o": {"how": "item the step text names, held during the step", **track_ref(ctx, tr)}, "c": tev},
        refs, hold=ent, hold_track=tr.track_id, step=win, title=title_of(win.text), what=what))


def holders_of(ctx, named: set) -> dict:
    """``container -> substance`` for every initial ``in(substance, container)`` fact
    (the world's, or one an add observed) whose substance a word of ``named`` names."""
    out = {}
    for pred, *xs in sorted(set(ctx.out.facts) | set(ctx.w.facts)):
        if pred == "in" and len(xs) == 2 and set(words(xs[0])) & named:
            out.setdefault(xs[1], xs[0])
    return out


def step_sprinkle(ctx, win, what, refs):
    """Sprinkle or season: the one container held during the step segment (for at
    least half of it, or a second) whose name names a seasoning the verb's own clause
    names ("Sprinkle with sea salt": the "bottle of salt"), sprinkled into the vessel
    the text names or, naming none, the only vessel handled during the segment. A
    "spice jar1" names no seasoning and binds nothing."""
    m = re.search(r"\b(?:sprinkl|season)\w*\s+(.*?)(?:[.;]|$)", win.text.lower())
    clause = set(words(m.group(1))) if m else set()
    if not clause:
        drop(ctx, "cue", what, "sprinkle: the verb's clause names no seasoning", win.start, **refs)
        return
    holds = holders_of(ctx, clause)
    need = min(1.0, 0.5 * (win.end - win.start))
    held = [tr for tr in during(ctx, win) if tr.entity in holds and is_a(ctx, tr.entity, "container")
            and own_overlap(ctx, win, tr) >= need]
    srcs = sorted({tr.entity for tr in held})
    if len(srcs) != 1:
        drop(ctx, "cue", what, f"sprinkle: {len(srcs)} containers held during the step segment hold a "
                               f"seasoning the verb's clause names {srcs}", win.start, **refs)
        return
    src, sub = srcs[0], holds[srcs[0]]
    src_tr = min((tr for tr in held if tr.entity == src), key=lambda x: (x.start, x.track_id))
    target, tev, why = bind_target(ctx, win.text, win.start, win.end, win, {src})
    if target is None:
        drop(ctx, "cue", what, f"sprinkle target not decided: {why}", win.start, **refs)
        return
    t = min(max(win.start, src_tr.start + 0.01), src_tr.end - 0.01)
    ctx.out.planned.append(Planned(
        "step", round(t, 3), "sprinkle", {"s": sub, "src": src, "dst": target},
        {"s": {"how": f"{src}'s track name names {sub}, a seasoning the step text names", **track_ref(ctx, src_tr)},
         "src": {"how": "container of the seasoning, held during the step segment", **track_ref(ctx, src_tr)},
         "dst": tev},
        refs, hold=src, hold_track=src_tr.track_id, step=win, title=title_of(win.text), what=what))


def step_knead(ctx, win, what, refs):
    food, fev, ftr = named_at(ctx, win, partial(is_food, ctx), what, refs, "food")
    if food is None:
        return
    # kneaded where it lies: after the bound track is put down (or at the segment's end)
    plan_step(ctx, win, "knead", {"o": food}, {"o": fev}, refs,
                   t=max(win.start, ftr.end + 0.01) if ftr.end < win.end else win.end)


def step_squeeze(ctx, win, what, refs):
    drop(ctx, "cue", what, "squeeze: no binding rule", win.start, **refs)


def step_weigh(ctx, win, what, refs):
    drop(ctx, "cue", what, "weigh: no binding rule for the scale", win.start, **refs)


#: the label verbs an activity row compiles: actions whose objects the tracks bind (never
#: add/put/pour: a row's placements are its observed put-downs; press needs a recipe;
#: turn_on only as "turn/switch ... on": "start timer", "start baking" switch on nothing named)


#: the step rules by name (``step_<verb>``): an activity row's or a step's verb picks one
STEP_RULES = {f.__name__: f for f in (step_boil, step_chop, step_crack, step_fill, step_grate, step_knead, step_peel, step_press, step_sprinkle, step_squeeze, step_stir, step_transfer, step_turn_on, step_wash, step_weigh, step_whisk)}


def step_rule(ctx, name: str):
    """The step rule ``name`` bound to ``ctx``, ``None`` when there is none."""
    f = STEP_RULES.get(name)
    return partial(f, ctx) if f is not None else None

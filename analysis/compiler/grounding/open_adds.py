"""Grounding (paper section 3, entity bindings; issue 34): the vessel of an add the
target rule leaves open: an earlier add of its step, the vessel its step's operations act
on (or the one vessel the text names that its segment handles after the add), or the vessel
of an earlier step of the same recipe when its own step text names none ("Heat the oil in a
pan" ... "Add the onions"; docs/compiler.md, Adds)."""
from __future__ import annotations

import re

from .bracketing_vessel import bracketing_vessel
from .running_vessel import running_vessel
from .grounder import has_head, local, put_away, target_ok, track_ref
from .text import overlaps, target_groups, words

#: operations that put a food or substance into a vessel (a stir only acts on one)
FILLING = {"add_ingredient", "pour", "empty_into", "put_in_container"}


def earlier_step_vessel(ctx, rid, win, why, t0, t1, text=""):
    """``(vessel, evidence)`` for an add the target rule and its step's operations left
    open because its step text names no vessel: the vessel that the texts of earlier steps
    of the same recipe name, bound in the same video before the add (by the target rule,
    evidence ``step_text``, to a tracked vessel), when it is one vessel and no track of it starts from that
    binding to the add's end (it stands where the earlier step left it, not moved since).
    Anything less (two vessels, a vessel handled since, another video) is ``(None, None)``:
    the add stays open.

    >>> from types import SimpleNamespace as N
    >>> w = N(step="S02", video="v", row=False)
    >>> ctx = N(step_targets={("R", "S01", "v"): ("pan", {"evidence": "step_text", "file": "assoc_info.json"}, 10.0)},
    ...         tracks_of={"pan": [N(start=5.0, end=9.0)]}, w=N(offsets={}))
    >>> earlier_step_vessel(ctx, "R", w, "no vessel named in the step text", 50.0, 52.0)[0]
    'pan'
    >>> ctx.tracks_of["pan"].append(N(start=30.0, end=31.0))      # picked up since: open
    >>> earlier_step_vessel(ctx, "R", w, "no vessel named in the step text", 50.0, 52.0)
    (None, None)
    """
    if win is None or win.row or not why.startswith("no vessel named"):
        return None, None
    prev = [(t, s, v, ev) for (r, s, vid), (v, ev, t) in ctx.step_targets.items()
            if r == rid and vid == win.video and s != win.step and t < t0 and ev.get("evidence") == "step_text"
            and ev.get("file") == "assoc_info.json"]      # a tracked vessel: an untracked one's stillness is not observed
    if len({v for _, _, v, _ in prev}) != 1:
        return None, None
    t, step, vessel, ev = max(prev, key=lambda x: x[0])
    # any vessel noun in the text (the target rule bound none of it: "add them to the
    # bowl") must be the vessel's
    named = set(words(text)) & ctx.vessel_heads if text else set()
    if named and not has_head(ctx, vessel, named):
        return None, None
    if any(t < tr.start <= t1 or tr.start <= t0 < tr.end for tr in ctx.tracks_of.get(vessel, [])):
        return None, None
    return vessel, {**ev, "evidence": "step_text",
                    "how": f"the vessel the text of earlier step {step} names ({ev.get('how')}), bound at "
                           f"{local(ctx, win.video, t):.1f} s; the text of step {win.step} names "
                           f"{'its noun (' + ', '.join(sorted(named)) + ')' if named else 'none'}, and "
                           f"{vessel} is not handled from then to the add (not moved since)"}


def same_step_target(ctx, rid, win, target, tev, why, exclude):
    """When the step text names no vessel and none is handled in the window, the
    vessel an earlier add *of the same recipe step* was bound to by evidence: one step
    text describes one target ("Add the tomatoes, mango chutney and salt")."""
    if target is not None or win is None or not why.startswith("no vessel named"):
        return target, tev
    prev = ctx.step_targets.get((rid, win.step, win.video))
    if prev is None or prev[0] in exclude:
        return None, None
    # the earlier add's reason is dated: what it says held at that add, not at this one
    return prev[0], {**prev[1], "how": f"target of an earlier add of the same step {win.step} "
                                        f"(one step text, one target), bound at {prev[2]:.1f} s "
                                        f"because, at that add: {prev[1].get('how')}"}


def open_add_vessel(ctx, rid, win, text, exclude, why, t0, t1):
    """The step's vessel (:func:`step_vessel`) or, agreeing with it or without it, the
    vessel of an earlier step (:func:`earlier_step_vessel`, provenance ``step_text``);
    with neither, for an add left between instances of the one noun its text names, the
    instance another add of the step went into (:func:`same_noun_vessel`); else, its text
    naming none, the recipe's running vessel (:func:`~.running_vessel.running_vessel`), else the
    recipe's named vessel that brackets the add (:func:`~.bracketing_vessel.bracketing_vessel`)."""
    sv = step_vessel(ctx, rid, win, text, exclude, why, t0, t1)
    ev = earlier_step_vessel(ctx, rid, win, why, t0, t1, text)
    got = ev if ev[0] is not None and ev[0] not in exclude and sv[0] in (None, ev[0]) else sv
    if got[0] is None:
        got = same_noun_vessel(ctx, rid, win, text, exclude, why, t0, t1)
    if got[0] is None:
        got = running_vessel(ctx, rid, win, exclude, why, t0, t1)
    return got if got[0] is not None else bracketing_vessel(ctx, rid, win, exclude, why, t0, t1)


#: the target rule's reason for an add left between instances of the noun the text names
_AMBIGUOUS = re.compile(r"^step text '([^']+)': ambiguous vessel, \d+ .*\(([^()]*)\)$")


def same_noun_vessel(ctx, rid, win, text, exclude, why, t0, t1):
    """``(vessel, evidence)`` for an add the target rule leaves ambiguous between instances
    of the one vessel noun its step text names for its adds, when the other adds of the
    step (``ctx.step_add_vessels``, the first pass) went into one instance of that noun and
    it is among the add's candidates: one text, one pan ("Place butter and pitted dates in
    a pan and heat": the butter in the saucepan, the dates ambiguous between saucepan and
    saucepan2). Not when the text names two vessel nouns, the other adds went into two
    vessels, the vessel is one of the add's own objects, or a track of it between the
    nearest such add and this one puts it away (storage, an enclosed appliance such as the
    dishwasher, a sink: emptied or cleared). Evidence ``step_text``.

    >>> from types import SimpleNamespace as N
    >>> tr = N(start=5.0, end=9.0, assoc=N(video="v"), dst=None, dst_ref=None, dst_file=None, conflict=None)
    >>> ctx = N(step_add_vessels={("R", "S01", "v"): [(20.0, "pan", {"how": "put down"}, "add R/I1")]},
    ...         tracks_of={"pan": [tr]}, own_heads={"pan": {"pan"}, "pan2": {"pan"}}, named_open=set(),
    ...         vocab=N(data={"noun_types": {"pan": "pan"}}), w=N(offsets={}, facts={}), vessel_heads={"pan", "bowl"})
    >>> w = N(recipe="R", step="S01", video="v", row=False)
    >>> why = ("step text 'pan': ambiguous vessel, 2 pan instances tracked during the add (50.00-52.00 s) "
    ...        "or put down in the 60 s before it (pan tracked 51.00-60.00 s; pan2 put down at 30.00 s)")
    >>> same_noun_vessel(ctx, "R", w, "Put butter and dates in a pan", set(), why, 50.0, 52.0)[0]
    'pan'
    >>> same_noun_vessel(ctx, "R", w, "Put butter in a pan, the dates in a bowl", set(), why, 50.0, 52.0)
    (None, None)
    """
    m = _AMBIGUOUS.match(why)
    if win is None or win.row or m is None:
        return None, None
    key = (rid, win.step, win.video)
    ctx.named_open.add(key)                 # the second pass has the step's other adds
    named = {ph[-1] for grp in target_groups(text, ctx.vessel_heads) for ph in grp if ph[-1] in ctx.vessel_heads}
    cands = [x.split(" ", 1)[0] for x in m.group(2).split("; ")]
    others = ctx.step_add_vessels.get(key, [])
    if len(named) != 1 or len({v for _, v, _, _ in others}) != 1:
        return None, None                   # two nouns, or no other add bound, or two vessels
    t, vessel, vev, what = min(others, key=lambda x: abs(x[0] - t0))
    if vessel not in cands or vessel in exclude or not has_head(ctx, vessel, named):
        return None, None
    lo, hi = min(t, t0), max(t, t0)
    gone = [tr for tr in ctx.tracks_of.get(vessel, []) if tr.assoc.video == win.video
            and lo < tr.end <= hi and put_away(ctx, tr)]
    if gone:
        return None, None                   # emptied or cleared between the two adds
    return vessel, {**vev, "evidence": "step_text",
                    "how": f"step text names one vessel noun for its adds ('{next(iter(named))}'); {what} of step "
                           f"{win.step} at {local(ctx, win.video, t):.1f} s went into {vessel} ({vev.get('how')}), "
                           f"one of this add's candidates ({', '.join(cands)}), and no track of {vessel} between "
                           f"the two adds puts it away (storage, an enclosed appliance, a sink); the target rule "
                           f"left this add open ({why})"}


def step_vessel(ctx, rid, win, text, exclude, why, t0, t1):
    """``(vessel, evidence)`` for an add whose target the target rule left open: the
    one vessel that every other bound operation of the add's own recipe step acts on,
    in the same video (:func:`~analysis.compiler.grounding.step_vessels`: its stirs,
    pours and adds), when the step text names no vessel or names that vessel's noun
    ("Add the minced beef and cook ... Stir often": the wok the step's stirs are bound
    to). An add the step's other operations do not settle (two vessels, or none)
    stays undecided, and so does one during which the vessel is in the hand (it may
    be the food's source). Never for an add whose vessel is tracked only in another
    video. ``(None, None)`` otherwise; the caller records the add as open."""
    if win is None or win.row:
        return None, None
    key = (rid, win.step, win.video)
    ctx.open_adds.add(key)
    got = ctx.step_vessels.get(key)
    if got is None or "another video" in why:
        return None, None
    vessel, vev, ops = got
    if vessel in exclude:
        return None, None
    named = {ph[-1] for grp in target_groups(text, ctx.vessel_heads) for ph in grp
             if ph[-1] in ctx.vessel_heads}
    if named and not has_head(ctx, vessel, named):
        return None, None
    # it stands still through the add: a vessel in the hand then may be the food's
    # source (the bowl the onion is tipped out of), never evidence of where it went;
    # unless the text names its noun and a later add of the step goes into it (P07_R07_S06
    # "Add the sweetcorn and beans to the bowl. Chop the rest of the avocado and add": bowl1
    # held through both adds, the avocado added into it after): the text's one bowl is
    # the one the step fills, so it is no source
    trs = [tr for tr in ctx.tracks_of.get(vessel, []) if tr.assoc.video == win.video]
    held = any(overlaps(tr.start, tr.end, t0, t1, 0.0) for tr in trs)
    later = [(a, t) for a, t in ops if a in FILLING and t > t1]
    if held and not (named and later):
        return None, None
    before = [tr.end for tr in trs if tr.end <= t0]
    after = [tr.start for tr in trs if tr.start >= t1]
    if not any(tr.end <= t0 for tr in ctx.tracks_of.get(vessel, [])) and any(
            a[0] == "at" and a[1] == vessel and ("enclosing", a[2]) in ctx.w.facts for a in ctx.w.facts):
        # never handled before the add and starting in storage (P05_R04_S04: the lettuce
        # added 88 s before the mixing bowl's first track): where it stood then is not
        # observed, so the add's vessel is not decided
        return None, None
    still = (f"{vessel} standing from {local(ctx, win.video, max(before)):.2f} s" if before else
             f"{vessel} standing from the start of the video") + (
             f" to {local(ctx, win.video, min(after)):.2f} s" if after else " on") + ", not handled during the add"
    if held:
        still = (f"{vessel} in the hand during the add, the vessel the text names ({', '.join(sorted(named))}) "
                 f"into which the step's later {later[0][0]} at {local(ctx, win.video, later[0][1]):.1f} s goes")
    said = ", ".join(f"{a} at {local(ctx, win.video, t):.1f} s" for a, t in ops)
    return vessel, {**vev, "evidence": "step_operation",
                    "how": f"the vessel every bound operation of step {win.step} acts on ({said}; "
                                  f"{vessel}: {vev.get('how')}); {still}; the target rule left this add open "
                                  f"({why})"}


def step_add_vessels(planned) -> dict:
    """``(recipe, step, video) -> [(time, vessel, evidence, what), ...]``: the vessel each
    bound add of a recipe step went into (the adds that fill a vessel, :data:`FILLING`).

    >>> from types import SimpleNamespace as N
    >>> p = N(kind="add", action="pour", roles={"s": "flour", "src": "bag", "dst": "bowl"},
    ...       evidence={"dst": {"how": "x"}}, time=3.0, what="add R/I1",
    ...       step=N(recipe="R", step="S01", video="v", row=False))
    >>> step_add_vessels([p])
    {('R', 'S01', 'v'): [(3.0, 'bowl', {'how': 'x'}, 'add R/I1')]}
    """
    out: dict = {}
    for p in planned:
        if p.kind != "add" or p.step is None or p.step.row or p.action not in FILLING:
            continue
        role = "dst" if "dst" in p.roles else "c"
        out.setdefault((p.step.recipe, p.step.step, p.step.video), []).append(
            (p.time, p.roles[role], p.evidence.get(role) or {}, p.what))
    return out


def step_adds_vessel(ctx, rid, win, text, exclude, why, t0, t1, what):
    """``(vessel, evidence)`` for an add whose step text names a vessel noun that the
    target rule finds neither handled during the add nor put down just before it, when
    every other add of the same step (``ctx.step_add_vessels``, the first pass) is bound
    to one entity with that head noun, which stands through the add: tracked in the
    add's video before it, no track of it overlapping the add (not in the hand holding
    the ingredient), its last put-down not into storage or a sink, and not excluded
    (evidence ``step_text``). P03_R05_I02: "Mix the flour with yeast, salt and water in a
    large bowl", the water poured from cup2 at 2190-2214 s while bowl_2, the bowl the
    step's flour and salt went into, stands from 1918.93 s to 2217.03 s. Two entities
    among the other adds, or none, is ``(None, None)``.

    >>> from types import SimpleNamespace as N
    >>> tr = N(start=5.0, end=9.0, assoc=N(video="v"), dst=None, dst_ref=None, dst_file=None, conflict=None)
    >>> ctx = N(step_add_vessels={("R", "S01", "v"): [(20.0, "bowl", {"track": "t1"}, "add R/I1")]},
    ...         tracks_of={"bowl": [tr]}, own_heads={"bowl": {"bowl"}}, named_open=set(),
    ...         vocab=N(data={"noun_types": {}}), w=N(offsets={}, facts={}), vessel_heads={"bowl"})
    >>> w = N(recipe="R", step="S01", video="v", row=False)
    >>> why = "step text names 'bowl'; no bowl tracked during the add (50.00-52.00 s) or put down in ..."
    >>> step_adds_vessel(ctx, "R", w, "Mix it in a bowl", set(), why, 50.0, 52.0, "add R/I2")[0]
    'bowl'
    >>> tr.end = 51.0                  # in the hand during the add: it may be the source
    >>> step_adds_vessel(ctx, "R", w, "Mix it in a bowl", set(), why, 50.0, 52.0, "add R/I2")
    (None, None)
    """
    if win is None or win.row or not why.startswith("step text names '") or " tracked during " not in why \
            or "; no " not in why.split(" tracked during ", 1)[0]:
        return None, None
    key = (rid, win.step, win.video)
    ctx.named_open.add(key)
    others = [x for x in ctx.step_add_vessels.get(key, []) if x[3] != what]
    if len({v for _, v, _, _ in others}) != 1:
        return None, None                   # no other add bound, or two vessels: not decided
    t, vessel, vev, _ = others[0]
    named = {ph[-1] for grp in target_groups(text, ctx.vessel_heads) for ph in grp
             if ph[-1] in ctx.vessel_heads}
    # the target rule set it aside (put away, handled for another step, the add's own)
    away = why.split("; not counted: ", 1)[1].split(", ") if "; not counted: " in why else []
    if vessel in exclude or any(x.startswith(vessel + " ") for x in away) or not named \
            or not has_head(ctx, vessel, named):
        return None, None
    trs = ctx.tracks_of.get(vessel, [])
    if any(overlaps(tr.start, tr.end, t0, t1, 0.0) for tr in trs):
        return None, None                   # handled during the add: its source or where it goes
    before = [tr for tr in trs if tr.end <= t0 and tr.assoc.video == win.video]
    if not before or put_away(ctx, max(before, key=lambda tr: tr.end)):
        return None, None                   # where it stands is not observed in this video
    last = max(before, key=lambda tr: tr.end).end
    after = [tr.start for tr in trs if tr.start >= t1]
    said = ", ".join(f"{w_} at {local(ctx, win.video, t_):.1f} s" for t_, _, _, w_ in others)
    return vessel, {**vev, "evidence": "step_text",
                    "how": f"step text names '{', '.join(sorted(named))}'; every other add of step {win.step} "
                           f"({said}) is bound to {vessel}, standing from {local(ctx, win.video, last):.2f} s"
                           + (f" to {local(ctx, win.video, min(after)):.2f} s" if after else " on")
                           + f", not handled during the add; the target rule left this add open ({why})"}


def overlapping_steps_vessel(ctx, rid, steps, own, t0, t1, text_vessel=None):
    """``(vessel, evidence)`` for an add that segments of several steps of its recipe
    overlap, their texts not deciding which step it belongs to (issue 34, P05_R01 finger
    chillies: "add the whole spices and chillies" and "Add ... finger chillies ... to the
    pan" both overlap the add): when every one of those steps has one vessel of its own
    (``ctx.step_vessels``, the first pass: its adds and the key actions its text places),
    and it is the *same* vessel, which step the add belongs to does not change where the
    food went, so it binds there. Not when a step has no vessel or two steps differ, when
    the vessel is one of the add's own objects, or when it is in the hand during the add
    (it may be the food's source). A step with no bound operation of its own has the
    vessel its text names for this add, when ``text_vessel(window)`` (the target rule on
    its text, no fallback, ``(vessel, evidence)``) binds one. ``(None, None)`` otherwise:
    the add stays open.

    >>> from types import SimpleNamespace as N
    >>> tr = N(start=5.0, end=9.0, assoc=N(video="v"))
    >>> ev = {"evidence": "step_text", "how": "step text names 'pan'"}
    >>> ctx = N(step_vessels={("R", "S02", "v"): ("pan", ev, [("add_ingredient", 8.0)]),
    ...                       ("R", "S03", "v"): ("pan", ev, [("stir", 60.0)])},
    ...         tracks_of={"pan": [tr]}, open_adds=set(), w=N(offsets={}))
    >>> steps = [N(step="S02", video="v"), N(step="S03", video="v")]
    >>> overlapping_steps_vessel(ctx, "R", steps, set(), 50.0, 52.0)[0]
    'pan'
    >>> ctx.step_vessels[("R", "S03", "v")] = ("bowl", ev, [("stir", 60.0)])   # two vessels: open
    >>> overlapping_steps_vessel(ctx, "R", steps, set(), 50.0, 52.0)
    (None, None)
    """
    keys = sorted({(rid, w.step, w.video) for w in steps})
    ctx.open_adds.update(keys)          # the second pass has the steps' vessels
    got = [ctx.step_vessels.get(k) for k in keys]
    for i, k in enumerate(keys):
        if got[i] is None and text_vessel is not None:
            v, vev = text_vessel([w for w in steps if (rid, w.step, w.video) == k][0])
            got[i] = (v, vev, []) if v is not None else None
    if len(keys) < 2 or any(g is None for g in got) or len({g[0] for g in got}) != 1:
        return None, None
    vessel = got[0][0]
    video = keys[0][2]
    if vessel in own or any(tr.assoc.video == video and overlaps(tr.start, tr.end, t0, t1, 0.0)
                            for tr in ctx.tracks_of.get(vessel, [])):
        return None, None
    said = "; ".join(f"{k[1]}: {', '.join(f'{a} at {local(ctx, video, t):.1f} s' for a, t in g[2]) or 'its text'}"
                     for k, g in zip(keys, got))
    return vessel, {**got[0][1], "evidence": "step_text",
                    "how": f"steps {', '.join(k[1] for k in keys)} overlap the add and their texts do not "
                           f"decide its step, but every one of them acts on {vessel} alone ({said}; "
                           f"{vessel}: {got[0][1].get('how')}), not handled during the add"}


def later_handled_vessel(ctx, win, text, exclude, why, t0, t1):
    """``(vessel, evidence)`` for an add whose step text names a vessel noun that the
    target rule finds neither handled during the add nor put down just before it: the one
    vessel of that noun that the add's own step segment handles after the add (evidence
    ``step_operation``), when it stood through the add (tracked in the add's video before
    it, not put away, no track of it overlapping the add: not the food's source) and is
    not one of the add's own objects. P07_R02_S03 "drizzle with the olive oil. Toss to
    coat ... Put the tray in the oven": the oil at 262.0-271.1 s, the rectangular tray
    standing from 126.3 s and taken up at 277.0 s, in the segment (262.9-280.4 s); the
    circular tray is not handled then. Two vessels of the noun handled, or none, is
    ``(None, None)``: the add stays open.

    >>> from types import SimpleNamespace as N
    >>> def tr(s, e, i):
    ...     return N(start=s, end=e, offset=0.0, track_id=i, assoc=N(video="v", assoc_id="a", name="tray"),
    ...              dst=None, dst_ref=None, dst_file=None, conflict=None)
    >>> ctx = N(tracks_of={"tray": [tr(1.0, 5.0, "t1"), tr(60.0, 62.0, "t2")], "tray2": [tr(1.0, 4.0, "t3")]},
    ...         w=N(offsets={}, facts={}, objects={"tray": "tray", "tray2": "tray"}),
    ...         own_heads={"tray": {"tray"}, "tray2": {"tray"}}, vessel_heads={"tray"},
    ...         vocab=N(data={"noun_types": {"tray": "tray"}}, is_a=lambda t, k: k == "vessel"))
    >>> w = N(step="S03", video="v", row=False, spans=((40.0, 65.0),))
    >>> why = "step text names 'tray'; no tray tracked during the add (45.00-50.00 s) or put down ..."
    >>> later_handled_vessel(ctx, w, "Drizzle on a baking sheet", set(), why, 45.0, 50.0)[0]
    'tray'
    >>> ctx.tracks_of["tray2"].append(tr(55.0, 58.0, "t4"))    # two trays handled after it: open
    >>> later_handled_vessel(ctx, w, "Drizzle on a baking sheet", set(), why, 45.0, 50.0)
    (None, None)
    """
    if win is None or win.row or not why.startswith("step text names '") or " tracked during " not in why \
            or "; no " not in why.split(" tracked during ", 1)[0]:
        return None, None
    named = {ph[-1] for grp in target_groups(text, ctx.vessel_heads) for ph in grp if ph[-1] in ctx.vessel_heads}
    seg = [(a, b) for a, b in win.spans if a <= t1 <= b]
    if not named or not seg:
        return None, None
    end = seg[0][1]
    # every track of a vessel of the named noun that the segment handles after the add
    later = sorted((tr.start, e, tr) for e, trs in ctx.tracks_of.items() if has_head(ctx, e, named)
                   for tr in trs if tr.assoc.video == win.video and t1 <= tr.start < end)
    if len({e for _, e, _ in later}) != 1:
        return None, None                   # none handled, or two candidates: not decided
    _, vessel, then = later[0]
    away = why.split("; not counted: ", 1)[1].split(", ") if "; not counted: " in why else []
    if vessel in exclude or any(x.startswith(vessel + " ") for x in away) or not target_ok(ctx, vessel):
        return None, None
    trs = [tr for tr in ctx.tracks_of[vessel] if tr.assoc.video == win.video]
    if any(overlaps(tr.start, tr.end, t0, t1, 0.0) for tr in trs):
        return None, None                   # in the hand during the add: it may be the source
    before = [tr for tr in trs if tr.end <= t0]
    if not before or put_away(ctx, max(before, key=lambda tr: tr.end)):
        return None, None                   # where it stood during the add is not observed
    last = max(tr.end for tr in before)
    return vessel, {**track_ref(ctx, then), "evidence": "step_operation",
                    "how": f"step text names '{', '.join(sorted(named))}'; {vessel} is the one so named that the "
                           f"step's own segment ({local(ctx, win.video, seg[0][0]):.2f}-{local(ctx, win.video, end):.2f} s) "
                           f"handles after the add (from {local(ctx, win.video, then.start):.2f} s), standing from "
                           f"{local(ctx, win.video, last):.2f} s, not handled during the add; the target rule left "
                           f"this add open ({why})"}

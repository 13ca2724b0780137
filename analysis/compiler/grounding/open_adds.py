"""Grounding (paper section 3, entity bindings; issue 34): the vessel of an add the
target rule leaves open: an earlier add of its step, the vessel its step's operations act
on, or the vessel of an earlier step of the same recipe when its own step text names none
("Heat the oil in a pan" ... "Add the onions"; docs/compiler.md, Adds)."""
from __future__ import annotations

from .grounder import has_head, local
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
    return prev[0], {**prev[1], "how": f"target of an earlier add of the same step {win.step} "
                                        f"at {prev[2]:.1f}s ({prev[1].get('how')})"}


def open_add_vessel(ctx, rid, win, text, exclude, why, t0, t1):
    """The step's vessel (:func:`step_vessel`) or, agreeing with it or without it, the
    vessel of an earlier step (:func:`earlier_step_vessel`, provenance ``step_text``)."""
    sv = step_vessel(ctx, rid, win, text, exclude, why, t0, t1)
    ev = earlier_step_vessel(ctx, rid, win, why, t0, t1, text)
    return ev if ev[0] is not None and ev[0] not in exclude and sv[0] in (None, ev[0]) else sv


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

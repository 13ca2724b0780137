"""Grounding (paper section 3, entity bindings; issue 34): the recipe's named vessel that
brackets an add. A recipe whose earlier steps name vessels of several types ("a large pan of
salted water", "pound in a pestle and mortar") goes on in one of them when a later step
names none ("Add most of the remaining cheese"): the add goes into the one vessel of its
video that the noun the recipe last named names, set down just before the add and picked up
next just after it, with no other vessel handled in between (P05_R03_S06: the video's one
mortar, standing from 753.14 s to 827.48 s, the cheese added at 772 and 822 s;
docs/compiler.md, Adds)."""
from __future__ import annotations

from .grounder import has_head, local, put_away, target_ok, track_ref, video_tracks
from .text import overlaps, words


def bracketing_vessel(ctx, rid, win, exclude, why, t0, t1):
    """``(vessel, evidence)`` for an add whose step text names no vessel (the target rule and
    the running vessel left it open) when

    * a vessel noun the text of the recipe's last step before the add's that names one
      (any word of it that is a vessel head: "mortar" in "pestle and mortar"), or with none
      before it the first step after it that names one, names exactly one vessel tracked in
      the add's video (:func:`~.grounder.has_head`): the recipe goes on in the vessel it last
      named (P05_R04_S04's salad, after S03's "beat the eggs in a bowl", is never the frying
      pan of S02 stirred before and after it);
    * that vessel is not in the hand during the add (it may be the food's source), has a track
      before the add, whose observed destination is not storage, an enclosed appliance or a
      sink, and a track after it, not taken from one (it stood out through the add);
    * between its last track before the add and its first after it, no other vessel of that
      video is handled, of any type, during the add or not (it is the last vessel handled
      before the add and the first after it: P01_R04_S03's spices are not bound to the soup
      pot of the recipe's "pot", stirred a minute later, when the stuffing's pan is handled
      between);
    * exactly one vessel qualifies, and it is not one of the add's own objects.

    Else ``(None, None)``; with one named vessel refused by a condition above, or two that
    qualify, ``ctx.running_left[(rid, t0, t1)]`` (unless the running vessel already says why)
    names them and why (the add's dropped reason). Bound only in ``ground``'s second pass
    (``ctx.second_pass``; the first pass notes the add in ``ctx.bracket_open``), so no
    binding of the other rules rests on it. Evidence ``step_text``, citing the vessel's last
    track before the add.

    >>> from types import SimpleNamespace as N
    >>> def tr(a, b, name="mortar"):
    ...     return N(start=a, end=b, offset=0.0, track_id=f"{name}@{a}", assoc=N(video="v", assoc_id=name, name=name),
    ...              dst=None, dst_ref=None, dst_file=None, src=None, src_ref=None, conflict=None)
    >>> ctx = N(recipes={"R": N(steps={"S01": "Boil a pan of water", "S02": "Pound in a pestle and mortar",
    ...                                "S03": "Add the cheese"})},
    ...         tracks_of={"mortar": [tr(40.0, 45.0), tr(60.0, 62.0)], "pan": [tr(90.0, 92.0, "pan")]},
    ...         w=N(objects={"mortar": "bowl", "pan": "pan"}, offsets={}, facts={}),
    ...         vocab=N(data={"noun_types": {"mortar": "bowl", "pan": "pan"}}, is_a=lambda t, k: k == "vessel"),
    ...         own_heads={"mortar": {"mortar"}, "pan": {"pan"}}, vessel_heads={"mortar", "pan"}, running_left={},
    ...         bracket_open=set(), second_pass=True)
    >>> w = N(recipe="R", step="S03", video="v", row=False)
    >>> bracketing_vessel(ctx, "R", w, set(), "no vessel named in the step text", 50.0, 52.0)[0]
    'mortar'
    >>> ctx.tracks_of["pan"].insert(0, tr(55.0, 56.0, "pan"))  # the pan, first seen after the add, handled in between
    >>> bracketing_vessel(ctx, "R", w, set(), "no vessel named in the step text", 50.0, 52.0)
    (None, None)
    >>> ctx.running_left[("R", 50.0, 52.0)].split(": ", 1)[1]
    'mortar (the one mortar of v) is refused: another vessel (pan) is handled between its tracks (45.00-60.00 s)'
    """
    if win is None or win.row or not why.startswith("no vessel named"):
        return None, None
    steps = ctx.recipes[rid].steps
    said = [(s, sorted({w for w in words(steps[s]) if w in ctx.vessel_heads})) for s in sorted(steps) if s != win.step]
    said = [(s, ws) for s, ws in said if ws]
    earlier = [x for x in said if x[0] < win.step]
    if not said:
        return None, None
    # the vessel the recipe last named; with none named yet, the one it names next ("Fry the
    # onion" goes on in the pan of "Add the paste to the pan")
    step, nouns = earlier[-1] if earlier else said[0]
    if not ctx.second_pass:
        ctx.bracket_open.add((rid, win.step, win.video))
        return None, None
    video = win.video

    here = [e for e in sorted(ctx.tracks_of) if target_ok(ctx, e) and video_tracks(ctx, e, video)]
    named = {}                              # the one vessel of the video a noun names
    for n in nouns:
        of_n = [e for e in here if has_head(ctx, e, n)]
        if len(of_n) == 1:
            named.setdefault(of_n[0], n)
    if not named:
        return None, None
    ok, refused = [], []
    for e, n in sorted(named.items()):
        trs = video_tracks(ctx, e, video)
        before = [tr for tr in trs if tr.end <= t0]
        after = [tr for tr in trs if tr.start >= t1]
        if e in exclude:
            refused.append(f"{e} is one of the add's own objects")
        elif any(overlaps(tr.start, tr.end, t0, t1, 0.0) for tr in trs):
            refused.append(f"{e} (the one {n} of {video}) is in the hand during the add: it may be the food's source")
        elif not before or not after:
            continue                        # not in use around the add: no candidate
        elif put_away(ctx, before[-1]) or put_away(ctx, after[0], "src"):
            refused.append(f"{e} (the one {n} of {video}) is put away between its tracks around the add")
        else:
            lo, hi = before[-1].end, after[0].start
            busy = sorted({o for o in here if o != e
                           for tr in video_tracks(ctx, o, video) if tr.end > lo and tr.start < hi})
            if busy:
                refused.append(f"{e} (the one {n} of {video}) is refused: another vessel ({', '.join(busy)}) is "
                               f"handled between its tracks "
                               f"({local(ctx, video, lo):.2f}-{local(ctx, video, hi):.2f} s)")
            else:
                ok.append((e, n, before[-1], after[0]))
    which = "last step naming one" if earlier else "first step naming one, after the add's"
    head = (f"the step text names no vessel; of the vessels the text of {step}, the recipe's {which}, "
            f"names ({', '.join(nouns)}), ")
    if len(ok) != 1:
        if ok or refused:
            said = [f"{e} ({n}) brackets the add" for e, n, _, _ in ok] + refused
            ctx.running_left.setdefault((rid, t0, t1), head + (
                f"{len(ok)} bracket the add, not decided: " if len(ok) > 1 else "one candidate: ") + "; ".join(said))
        return None, None
    vessel, n, last, nxt = ok[0]
    ctx.running_left.pop((rid, t0, t1), None)
    return vessel, {**track_ref(ctx, last), "evidence": "step_text",
                    "how": f"the recipe's named vessel bracketing the add: the text of {step}, the recipe's "
                           f"{which.replace('one', 'a vessel')}, names '{n}' ({', '.join(nouns)}), and {vessel} "
                           f"is the one {n} of {video}; it is put down "
                           f"at {local(ctx, video, last.end):.2f} s ({last.track_id}) and picked up next at "
                           f"{local(ctx, video, nxt.start):.2f} s ({nxt.track_id}), not handled during the add, "
                           f"not put away, and no other vessel of {video} is handled in between; the target rule "
                           f"left this add open ({why})"}

"""Grounding (paper section 3, entity bindings; issue 34): the recipe's running vessel. A
recipe that names one vessel in its first steps ("Heat the oil in a heavy bottomed pan",
"Add the garlic ... to the pan") goes on in it when a later step names none ("Add the
chickpeas and spinach"): the add goes into the one vessel of that type its video tracks,
standing there, never put away (docs/compiler.md, Adds)."""
from __future__ import annotations

from .grounder import local, put_away, target_ok, track_ref, video_tracks
from .text import MARGIN, overlaps, target_groups


def running_vessel(ctx, rid, win, exclude, why, t0, t1):
    """``(vessel, evidence)`` for an add whose step text names no vessel (the target rule
    left it open) when

    * the texts of the recipe's earlier steps name vessels of exactly one type (``pan``:
      "heavy bottomed pan", "the pan"), and an add of one of those steps went into a
      vessel of that type by its text (``ctx.step_add_vessels``, the first pass, evidence
      ``step_text``, any video of the episode), none into a vessel of another type;
    * the add's video tracks exactly one vessel of that type out of storage at the add (two
      pans: which one is not decided, never by recency; one observed in storage through the
      add, :func:`in_storage`, is not a candidate);
    * it is seen standing before the add in that video, is not in the hand during the add
      (it may be the food's source), and none of its tracks in the video up to the add is
      put away: into storage, an enclosed appliance (the dishwasher) or a sink, by its
      observed destination or the observed origin of its next track.

    Else ``(None, None)``: the add stays open; with two or more vessels of the type out of
    storage (an earlier add in one of them or none), ``ctx.running_left[(rid, t0, t1)]``
    says so, naming them (the add's dropped reason: the rows leave it open). Evidence ``step_text``, citing the vessel's last track
    before the add.

    >>> from types import SimpleNamespace as N
    >>> tr = N(start=5.0, end=9.0, offset=0.0, track_id="t1", assoc=N(video="v", assoc_id="a", name="pan"),
    ...        dst=None, dst_ref=None, dst_file=None, src=None, src_ref=None, conflict=None)
    >>> ctx = N(recipes={"R": N(steps={"S01": "Heat the oil in a pan", "S02": "Add the rice"})},
    ...         step_add_vessels={("R", "S01", "u"): [(3.0, "pan_u", {"evidence": "step_text"}, "add R/I1")]},
    ...         tracks_of={"pan": [tr]}, w=N(objects={"pan": "pan", "pan_u": "pan"}, offsets={}, facts={}),
    ...         vocab=N(data={"noun_types": {"pan": "pan"}}, is_a=lambda t, k: k == "vessel"),
    ...         own_heads={"pan": {"pan"}, "pan_u": {"pan"}}, vessel_heads={"pan"}, running_open=set(),
    ...         running_left={}, segments=[])
    >>> w = N(recipe="R", step="S02", video="v", row=False)
    >>> running_vessel(ctx, "R", w, set(), "no vessel named in the step text", 50.0, 52.0)[0]
    'pan'
    >>> tr.end = 51.0                         # in the hand during the add: it may be the source
    >>> running_vessel(ctx, "R", w, set(), "no vessel named in the step text", 50.0, 52.0)
    (None, None)
    >>> tr.end = 9.0; ctx.tracks_of["pan2"] = [tr]                  # a second pan out of storage
    >>> ctx.w.objects["pan2"] = "pan"; ctx.own_heads["pan2"] = {"pan"}
    >>> running_vessel(ctx, "R", w, set(), "no vessel named in the step text", 50.0, 52.0)
    (None, None)
    >>> ctx.running_left[("R", 50.0, 52.0)].endswith("ambiguous vessel, 2 pan instances of v out of storage at the add (pan, pan2)")
    True
    """
    if win is None or win.row or not why.startswith("no vessel named"):
        return None, None
    ctx.running_open.add((rid, win.step, win.video))    # the second pass has the earlier steps' adds
    steps = ctx.recipes[rid].steps
    earlier = [s for s in sorted(steps) if s < win.step]
    nt = ctx.vocab.data["noun_types"]
    nouns = {ph[-1] for s in earlier for g in target_groups(steps[s], ctx.vessel_heads) for ph in g
             if ph[-1] in ctx.vessel_heads}
    kinds = {nt[n] for n in nouns}
    if len(kinds) != 1:
        return None, None                   # none named, or vessels of two types
    kind = next(iter(kinds))

    def of_kind(e):
        return target_ok(ctx, e) and ctx.w.objects.get(e) == kind

    bound = sorted((t, s, v, vid) for (r, s, vid), adds in ctx.step_add_vessels.items() if r == rid and s in earlier
                   for t, v, ev, _ in adds if ev.get("evidence") == "step_text")
    if not all(of_kind(v) for _, _, v, _ in bound):
        return None, None                   # an earlier add into a vessel of another type
    here = [e for e in sorted(ctx.tracks_of) if of_kind(e)
            and any(tr.assoc.video == win.video for tr in ctx.tracks_of[e])]
    stored = {e: why_e for e in here if (why_e := in_storage(ctx, e, win.video, t0, t1))}
    here = [e for e in here if e not in stored]
    if len(here) >= 2:
        # the rows leave it open: its reason names the candidates (``ctx.running_left``, read
        # where the add is dropped), never one of them by recency or ID
        ctx.running_left[(rid, t0, t1)] = (
            f"the step text names no vessel; the recipe's running vessel ({kind}: the type the texts of its "
            f"earlier steps name, {', '.join(sorted(nouns))}) is not decided: ambiguous vessel, {len(here)} "
            f"{kind} instances of {win.video} out of storage at the add ({', '.join(here)})")
    own = None
    if bound and len(here) >= 2:
        own = handled_in_step(ctx, rid, win, here, t0, t1)
        if own is None:
            return None, None               # the step's segments do not single one out
        here = [own[0]]
    if not bound or len(here) != 1 or here[0] in exclude:
        return None, None                   # no earlier add in it by its text, or not one vessel
    vessel = here[0]
    trs = sorted((tr for tr in ctx.tracks_of[vessel] if tr.assoc.video == win.video), key=lambda x: x.start)
    if any(overlaps(tr.start, tr.end, t0, t1, 0.0) for tr in trs):
        return None, None                   # in the hand during the add: it may be the food's source
    before = [tr for tr in trs if tr.end <= t0]
    if not before:
        return None, None                   # where it stood during the add is not observed
    if any(put_away(ctx, tr) for tr in before) or any(put_away(ctx, tr, "src") for tr in before[1:]):
        return None, None                   # put away (emptied, cleared) at some point: not the running pot
    last = before[-1]
    t, step, v, vid = bound[-1]
    away = "".join(f"; {e} is in storage then ({w})" for e, w in sorted(stored.items()))
    if own is not None:
        ctx.running_left.pop((rid, t0, t1), None)       # decided: no longer the drop's reason
        away += f"; of the {kind}s out of storage then ({', '.join(own[1])}), {own[2]}"
    return vessel, {**track_ref(ctx, last), "evidence": "step_text",
                    "how": f"the recipe's running vessel: the texts of its earlier steps name vessels of one type "
                           f"({', '.join(sorted(nouns))}: {kind}), and the add of {step} at "
                           f"{local(ctx, vid, t):.1f} s in {vid} went into {v} by its text; {vessel} is the one "
                           f"{kind} of {win.video}{' its step handles' if own else ''}, standing from {local(ctx, win.video, last.end):.2f} s, not "
                           f"handled during the add, none of its {len(before)} tracks there before it put away; "
                           f"the target rule left this add open ({why}){away}"}


def in_storage(ctx, ent, video, t0, t1) -> str | None:
    """Why a vessel of ``video`` is in storage through the add ``[t0, t1]``, so it is no
    candidate for the running vessel (the small frying pan taken out of the cupboard only
    after the saute's first adds, P02-20240209-184316), by an observed place: its last
    track before the add put it away, or, with none before, its first track after the add
    takes it from storage, an enclosed appliance or a sink. ``None`` when it may be out
    (tracked during the add, or nothing observed)."""
    trs = video_tracks(ctx, ent, video)
    if any(overlaps(tr.start, tr.end, t0, t1, 0.0) for tr in trs):
        return None
    before = [tr for tr in trs if tr.end <= t0]
    if before:
        last = max(before, key=lambda x: (x.end, x.track_id))
        why = put_away(ctx, last)
        return f"{why} at {local(ctx, video, last.end):.2f} s" if why else None
    why = put_away(ctx, trs[0], "src") if trs else None
    return f"{why} at {local(ctx, video, trs[0].start):.2f} s, after the add" if why else None


def handled_in_step(ctx, rid, win, cands, t0, t1):
    """``(vessel, candidates, why)`` when, of two or more running-vessel candidates, the
    add's own step singles one out: it is the only one tracked during the step segments of
    the add's step in the add's video, among them the segment holding the add or the one
    just before or after it (the step the add belongs to handles the pan it cooks
    in: P02_R01_S05's mushrooms, its segments coinciding with the frying pan's tracks, the
    small frying pan not handled in them), it is seen before the add (a pan first seen
    after it was not in use then), and no add of another step or recipe went into it by
    its text (the saucepan boiling another step's potatoes). ``None`` otherwise: the add
    stays open, its candidates named."""
    segs = sorted((a, b) for v, r, s, k, a, b in ctx.segments
                  if v == win.video and r == rid and s == win.step and k == "step")
    if not segs or not overlaps(t0, t1, segs[0][0], max(b for _, b in segs), MARGIN):
        return None                         # the add lies outside its step's segments there
    hit = {}
    for e in cands:
        trs = sorted((tr for tr in ctx.tracks_of[e] if tr.assoc.video == win.video), key=lambda x: x.start)
        got = [(tr, a, b) for tr in trs for a, b in segs if overlaps(tr.start, tr.end, a, b, 0.0)]
        if got:
            hit[e] = got
    if len(hit) != 1:
        return None                         # none or several handled in the step: not decided
    vessel, got = next(iter(hit.items()))
    over = [x for x in segs if overlaps(x[0], x[1], t0, t1, MARGIN)]
    near = over + [y for y in segs if y[1] < t0 and y not in over][-1:] + [
        y for y in segs if y[0] > t1 and y not in over][:1]
    if not any((a, b) in near for _, a, b in got):
        return None                         # handled only in segments away from the add's
    if not any(tr.end <= t0 for tr in ctx.tracks_of[vessel] if tr.assoc.video == win.video):
        return None                         # first seen after the add: not in use then
    other = sorted(f"{r}/{s}" for (r, s, vid), adds in ctx.step_add_vessels.items()
                   if vid == win.video and (r, s) != (rid, win.step)
                   for _, v, ev, _ in adds if v == vessel and ev.get("evidence") == "step_text"
                   and (r != rid or s > win.step))
    earlier = {v for (r, s, vid), adds in ctx.step_add_vessels.items() if r == rid and vid == win.video
               and s < win.step for _, v, ev, _ in adds if ev.get("evidence") == "step_text"}
    if other or earlier & set(cands) - {vessel}:
        return None                         # another step's vessel by its text, or the recipe's is another
    segs_s = ", ".join(f"{local(ctx, win.video, a):.2f}-{local(ctx, win.video, b):.2f} s" for a, b in segs)
    trs_s = ", ".join(f"{tr.track_id} {local(ctx, win.video, tr.start):.2f}-{local(ctx, win.video, tr.end):.2f} s"
                      for tr, _, _ in got)
    return vessel, cands, (f"{vessel} is the only one tracked during the segments of the add's step "
                           f"{win.step} ({segs_s}: {trs_s}), seen before the add, and no add of another "
                           f"step went into it by its text")

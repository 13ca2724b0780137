"""Grounding (paper section 3, entity bindings): activity rows compiled as key actions, in the row's own time."""
from __future__ import annotations

import re

from .text import ROW_VERBS, all_verbs, overlaps, row_verbs, row_words, title_of
from .windows import StepWindow
from .grounder import drop, local
from .steps import step_rule


def ground_rows(ctx, activities):
    """Each activity row's label, compiled as key actions by the step machinery
    (:data:`ROW_VERBS`): the first verb of the label whose objects the tracks bind,
    with tools and foods held during the row's *own* time (its span outside the
    recipe steps and prep segments inside it, which are other units), vessels by the
    vessel rule over the row's span. The action's time lies in the row's own time
    (outside every activity row nested in it), so its group is the row's."""
    for a in activities:
        if a.video not in ctx.w.videos or a.end <= a.start:
            continue
        inner = sorted((x, y) for v, _, _, _, x, y in ctx.segments
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
                "video": a.video, "start": local(ctx, a.video, a.start), "end": local(ctx, a.video, a.end)}
        verbs = [v for v in row_verbs(a.label) if v in ROW_VERBS and (
            v != "turn_on" or re.search(r"\b(?:turn|switch)\w*\s+(?:\w+\s+)?on\b", a.label.lower()))]
        if not verbs:
            continue        # a placement or generic label ("Tidy", "Clean up"): nothing to bind
        if not own:
            drop(ctx, "cue", what, "the row's span lies inside recipe steps (other units)", a.start, **refs)
            continue
        # a verb a recipe step nested in the row asks for is that step's action (another
        # unit): "Fill glass with water and sip" around S02 "Fill Your Glass With Water"
        steps_in = {(rid, sid): ctx.recipes[rid].steps.get(sid, "") for v, rid, sid, _, x, y in ctx.segments
                    if v == a.video and overlaps(x, y, a.start, a.end, 0.0) and rid in ctx.recipes}
        reasons = []
        for verb in verbs:
            mine = sorted(sid for (rid, sid), text in steps_in.items() if verb in all_verbs(text))
            if mine:
                reasons.append(f"{verb}: a recipe step inside the row asks for it ({', '.join(mine)}: "
                               f"another unit)")
                continue
            n_drop, n_plan = len(ctx.out.dropped), len(ctx.out.planned)
            step_rule(ctx, f"step_{verb}")(win, what, refs)
            if len(ctx.out.planned) > n_plan:
                p = ctx.out.planned[-1]
                why = row_time(ctx, p, win, nested_rows)
                if why is None:
                    del ctx.out.dropped[n_drop:]
                    break
                del ctx.out.planned[n_plan:]
                ctx.out.dropped[n_drop:] = []
                reasons.append(f"{verb}: {why}")
                continue
            reasons += [f"{verb}: {row_words(d['reason'])}" for d in ctx.out.dropped[n_drop:]]
            del ctx.out.dropped[n_drop:]
        else:
            drop(ctx, "cue", what, "; ".join(reasons), a.start, **refs)


def row_time(ctx, p, win, nested_rows) -> str | None:
    """Place a row's key action in the row's own time (inside its held track when it
    has one) and word its evidence for the row; the reason when it cannot be."""
    tr = None
    if p.hold_track:
        tr = next(x for x in ctx.tracks_of[p.hold] if x.track_id == p.hold_track)
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
        # the handling belongs to the unit where most of it happened: a peeler held
        # 75 s, 4.6 s of them outside the prep segment nested in the row, peels for
        # that step, not for the row (draw 12: carrot10's 0.06 s sliver)
        own = sum(y - x for x, y in spans)
        in_row = max(0.0, min(tr.end, win.end) - max(tr.start, win.start))
        if own < 0.5 * in_row:
            return (f"its held track ({tr.entity}) lies in the row mostly inside recipe steps or activity "
                    f"rows nested in it (other units): {own:.2f} s of its {in_row:.2f} s in the row")
    if tr is not None:
        p.time = round(max(spans[0][0] + 0.01, min(p.time, spans[0][1] - 0.01))
                       if spans[0][0] <= p.time <= spans[0][1] else spans[0][0] + 0.01, 3)
    p.title = title_of(win.text)
    p.what = f"{p.action} {win.row}"
    for ev in p.evidence.values():
        if isinstance(ev, dict) and "how" in ev:
            ev["how"] = row_words(ev["how"])
    return None

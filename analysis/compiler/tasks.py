"""Goal-aligned tasks and their frozen contracts.

Terminal tier (a represented end state the evidence supports):
* each accepted ingredient add -> ``in(ingredient, target)`` (e.g. ``in(squash, glass)``);
* each track whose destination a VQA answer observes -> ``at(object, fixture)``.
Event tier (otherwise): the first occurrence of a recipe step whose group holds a
step-specific operation -> that accepted event (type and arguments).
A task spans the consecutive groups from the first group of its source segment up to the
group holding its witnessing operation.
"""
from __future__ import annotations

MOVE_TYPES = {"navigate", "open_storage", "close_storage", "open_appliance", "close_appliance"}


def _span_start(groups, gi: int) -> int:
    """First group of the run of groups sharing group ``gi``'s step (interleaving allowed)."""
    key = groups[gi]["seg"].steps, groups[gi]["seg"].kind
    j = gi
    while j > 0 and (groups[j - 1]["seg"].steps, groups[j - 1]["seg"].kind) == key and key[0]:
        j -= 1
    return j


def candidate_tasks(episode_id: str, world, groups, group_recs, builder, adds, op_group,
                    recipes) -> list[dict]:
    out = []
    gid = lambda i: group_recs[i]["group_id"]
    # terminal: ingredient adds
    for op_i, ing, target, rid, sid, ev in adds:
        gi = op_group[op_i]
        g0 = _span_start(groups, gi)
        title = recipes[rid].steps.get(sid, "").split(" - ")[0].split("-")[0].strip() if sid else ""
        out.append({
            "key": ("add", op_i),
            "tier": "terminal", "first": g0, "last": gi,
            "title": title[:60] or f"Add {ev.name}",
            "conditions": [{"id": "c1", "kind": "atom", "atom": ["in", ing, target]}],
            "provenance": {"source": "observed",
                           "refs": {"recipe": rid, "step": sid, "ingredient": ev.ingredient_id,
                                    "video": ev.span.video, "start": ev.span.start, "end": ev.span.end}},
        })
    # terminal: observed destinations
    for op_i, op in enumerate(builder.out.ops):
        refs = op.provenance["refs"]
        if (op.provenance["source"] == "observed" and op.action["type"] in
                ("put_on", "put_in_storage", "put_in_sink", "place_on_appliance", "put_in_appliance")
                and refs.get("vqa") and refs.get("track")):
            gi = op_group[op_i]
            ent, fx = op.action["args"]
            out.append({
                "key": ("put", op_i), "tier": "terminal", "first": gi, "last": gi,
                "title": f"Put {ent.replace('_', ' ')} at {fx.replace('_', ' ')}",
                "conditions": [{"id": "c1", "kind": "atom", "atom": ["at", ent, fx]}],
                "provenance": {"source": "observed", "refs": dict(refs)},
            })
    # event: first occurrence of each step with a step-specific operation
    seen = set()
    for gi, g in enumerate(groups):
        seg = g["seg"]
        if seg.kind != "step" or not seg.steps or seg.steps[0] in seen:
            continue
        key_ops = [op for op in g["ops"] if op.action["type"] not in MOVE_TYPES]
        if not key_ops:
            continue
        seen.add(seg.steps[0])
        op = key_ops[-1]
        out.append({
            "key": ("event", gi), "tier": "event", "first": _span_start(groups, gi), "last": gi,
            "title": seg.instruction.split(" - ")[0][:60],
            "conditions": [{"id": "c1", "kind": "event",
                            "event": {"type": op.action["type"], "args": list(op.action["args"])}}],
            "provenance": {"source": "observed",
                           "refs": {"recipe": seg.recipe, "step": seg.steps[0], "video": seg.video,
                                    "start": seg.start, "end": seg.end}},
        })
    for c in out:
        c["group_ids"] = [gid(i) for i in range(c["first"], c["last"] + 1)]
        types = sorted({op["type"] for i in range(c["first"], c["last"] + 1)
                        for op in group_recs[i]["operations"]})
        c["reference_action_types"] = types
    out.sort(key=lambda c: (c["first"], c["last"], c["tier"], c["key"]))
    for n, c in enumerate(out):
        c["task_id"] = f"{episode_id}/t{n:03d}"
        c["episode_id"] = episode_id
    return out

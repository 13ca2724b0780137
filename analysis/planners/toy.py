"""A tiny hand-made kitchen episode (the Add Squash example) for examples and tests.

Three groups: take a glass from the cupboard, pour squash into it from the bottle in
the fridge, stir it. Two tasks: "Add Squash" (terminal: squash in the glass) and
"Stir" (event: an accepted stir of the glass). The glass's placement in the cupboard
is curated (not in any anchor), so an agent that has not opened the cupboard does not
see it; the fridge's anchor shows the bottle and the milk.

>>> ep = toy_episode()
>>> [g["group_id"] for g in ep["groups"]]
['g0', 'g1', 'g2']
>>> sorted(ep["anchors"])
['counter', 'fridge']
"""
from __future__ import annotations

__all__ = ["toy_episode", "toy_tasks", "toy_suite"]


def _op(t, *args):
    return {"type": t, "args": list(args), "provenance": {"source": "curated",
                                                          "refs": {"rule": "toy"}}}


def toy_episode(episode_id: str = "toy-ep", hints_with_args: bool = False) -> dict:
    """The toy episode; ``hints_with_args`` renders hints as ``type(args)``."""
    objects = {
        "counter": "counter", "fridge": "fridge", "cupboard": "cupboard",
        "drawer": "drawer", "sink": "kitchen_sink",
        "glass": "glass", "squash_bottle": "bottle", "squash": "squash",
        "milk": "bottle", "spoon": "spoon", "mug": "mug",
    }
    facts = [
        ["agent-at", "counter"], ["hand-empty"],
        ["at", "glass", "cupboard"], ["at", "squash_bottle", "fridge"],
        ["in", "squash", "squash_bottle"], ["capped", "squash_bottle"],
        ["at", "milk", "fridge"], ["at", "spoon", "drawer"], ["at", "mug", "counter"],
    ]
    groups_ops = [
        ("Get a glass from the cupboard", ["glass", "cupboard"], [
            _op("navigate", "counter", "cupboard"), _op("open_storage", "cupboard"),
            _op("take_from_storage", "glass", "cupboard"),
            _op("navigate", "cupboard", "counter"), _op("put_on", "glass", "counter")]),
        ("Add squash to the glass", ["squash", "squash_bottle", "glass"], [
            _op("navigate", "counter", "fridge"), _op("open_storage", "fridge"),
            _op("take_from_storage", "squash_bottle", "fridge"),
            _op("open_container", "squash_bottle"), _op("navigate", "fridge", "counter"),
            _op("pour", "squash", "squash_bottle", "glass", "counter"),
            _op("put_on", "squash_bottle", "counter")]),
        ("Stir the squash with a spoon", ["spoon", "glass"], [
            _op("navigate", "counter", "drawer"), _op("open_storage", "drawer"),
            _op("take_from_storage", "spoon", "drawer"), _op("navigate", "drawer", "counter"),
            _op("stir", "spoon", "glass", "counter")]),
    ]
    groups = []
    for i, (text, objs, ops) in enumerate(groups_ops):
        if hints_with_args:
            hints = [f"{o['type']}({', '.join(o['args'])})" for o in ops]
        else:
            hints = list(dict.fromkeys(o["type"] for o in ops))
        groups.append({
            "group_id": f"g{i}", "index": i, "instruction": text, "objects": objs,
            "action_hints": hints,
            "source": {"recipe": "toy", "steps": [f"S{i}"], "video": "toy", "start": float(i),
                       "end": float(i) + 1.0, "refs": {}},
            "operations": ops,
        })
    return {
        "episode_id": episode_id, "scene_id": "P00", "videos": ["toy"],
        "initial_world": {"objects": objects, "facts": facts},
        "fact_provenance": [{"source": "curated", "refs": {"rule": "toy"}} for _ in facts],
        "anchors": {"fridge": ["squash_bottle", "milk"], "counter": ["mug"]},
        "groups": groups,
    }


def toy_tasks(episode_id: str = "toy-ep") -> list[dict]:
    prov = {"source": "curated", "refs": {"rule": "toy"}}
    return [
        {"task_id": f"{episode_id}-t0", "episode_id": episode_id, "group_ids": ["g0", "g1"],
         "tier": "terminal", "title": "Add Squash",
         "contract": {"tier": "terminal", "conditions": [
             {"id": "c1", "kind": "atom", "atom": ["in", "squash", "glass"]}]},
         "reference_action_types": ["take_from_storage", "pour"], "provenance": prov},
        {"task_id": f"{episode_id}-t1", "episode_id": episode_id, "group_ids": ["g2"],
         "tier": "event", "title": "Stir",
         "contract": {"tier": "event", "conditions": [
             {"id": "c1", "kind": "event", "event": {"type": "stir",
                                                     "args": [None, "glass", None]}}]},
         "reference_action_types": ["stir"], "provenance": prov},
    ]


def toy_suite(episode_ids=("toy-ep",)) -> dict:
    return {"suite": "planner", "task_ids": [f"{e}-t{i}" for e in episode_ids for i in (0, 1)],
            "episode_ids": list(episode_ids), "definition": "toy"}

"""The minimal planner of docs/planners.md, extracted from the doc and run as written.

The block under "### A complete minimal planner" is executed as a module and run through
the runtime loop on the toy Add Squash episode (analysis/planners/toy.py): its actions
must be well-typed (the executor's arity and type checks never fire on its own actions),
its first action of group g0 is the hand-checkable binding, and its name obeys the rule
the doc states.
"""
from __future__ import annotations

import re
import types as _types
from pathlib import Path

from analysis.executor import Rules
from analysis.executor.runtime import run_episode
from analysis.records.schemas import PLANNER_NAME
from analysis.planners.toy import toy_episode, toy_tasks

DOC = Path(__file__).resolve().parent.parent / "docs" / "planners.md"


def _doc_module():
    text = DOC.read_text()
    section = text.split("### A complete minimal planner", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    mod = _types.ModuleType("doc_planner")
    exec(compile(code, str(DOC), "exec"), mod.__dict__)
    return mod


def test_doc_planner_runs_through_the_runtime_loop():
    mod = _doc_module()
    planner = mod.TypedBinder(seed=0)
    assert PLANNER_NAME.match(planner.name) and planner.config() == {"seed": 0}
    ep = toy_episode()
    res = run_episode(ep, toy_tasks(), planner, Rules.load(), "persistent", run_id="doc")
    assert [g["group_id"] for g in res.group_records] == ["g0", "g1", "g2"]
    own = [a for g in res.group_records for a in g["attempts"] if a["source"] == "planner"]
    assert own, "the doc planner proposed nothing"
    for a in own:  # every argument bound from action_schema / object_types / types
        assert not any(c == "arity" or c.startswith(("type:", "known_object:"))
                       for c in a["failed_checks"]), a
    # group g0 hints navigate first; its params are [["from", "fixture"], ["to", "fixture"]]
    # and the group's objects are (glass, cupboard): the first fixture among the objects is
    # the cupboard, the next distinct fixture in object_types order is the counter.
    first = res.group_records[0]["attempts"][0]
    assert first["action"] == {"type": "navigate", "args": ["cupboard", "counter"]}
    assert any(a["status"] == "accepted" for a in own)


def test_doc_states_the_name_rule_of_the_code():
    text = DOC.read_text()
    assert PLANNER_NAME.pattern in text
    for ok in ("my_planner", "gpt4-mini", "v2"):
        assert PLANNER_NAME.match(ok) and f"`{ok}`" in text
    for bad in ("MyPlanner", "my__planner", "_x", "x-"):
        assert not PLANNER_NAME.match(bad) and f"`{bad}`" in text


def test_doc_shows_the_shapes_the_runtime_gives():
    """The documented shapes are the real ones (params as [[name, type], ...])."""
    seen = []

    class Spy:
        name = "spy"

        def config(self):
            return {}

        def propose(self, view):
            seen.append(view)
            return '{"actions": [], "query": null}'

    run_episode(toy_episode(), toy_tasks(), Spy(), Rules.load(), "persistent", run_id="s")
    v = seen[0]
    assert v.action_schema["navigate"]["params"] == [["from", "fixture"], ["to", "fixture"]]
    assert v.object_types["sink"] == "kitchen_sink" and v.types["fixture"] == "entity"
    assert v.types["glass"] == "vessel" and v.types["surface"] == "fixture"
    assert v.key == "toy-ep/g0/0" and v.objects == ("glass", "cupboard")
    text = DOC.read_text()
    assert '"params": [["from", "fixture"], ["to", "fixture"]]' in text
    assert "`[[name, type], ...]`" in text
    assert '`"glass": "vessel"`, `"surface": "fixture"`' in text

"""A planner that lives outside the package, for tests of import-path planners."""
import json


class FirstHintPlanner:
    """Proposes the group's first hinted action type with the group's objects as arguments
    (padded or cut to the schema's arity); deliberately naive."""

    name = "first_hint"

    def __init__(self, seed: int = 0):
        self.seed = seed

    def config(self) -> dict:
        return {"seed": self.seed}

    def propose(self, view) -> str:
        if not view.action_hints:
            return json.dumps({"actions": [], "query": None})
        kind = view.action_hints[0].split("(")[0]
        arity = len(view.action_schema.get(kind, {}).get("params", []))
        args = (list(view.objects) * arity)[:arity] if view.objects else []
        return json.dumps({"actions": [{"type": kind, "args": args}], "query": None})


class Unnamed:
    def propose(self, view):
        return "{}"

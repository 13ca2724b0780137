"""A fast STRIPS interpreter over ``rules.yaml``, used while *generating* operations.

The compiler simulates every candidate operation as it compiles (to insert navigation
and open/close steps, and to drop what cannot be grounded). It reads the executor's own
rules file, with the executor's check names, so what it accepts the executor accepts;
admission (``admission.py``) then replays everything through ``analysis.executor`` itself
when that is importable and records which engine was used.
"""
from __future__ import annotations

from .vocabulary import Vocabulary


class Sim:
    def __init__(self, vocab: Vocabulary):
        self.vocab = vocab
        self.actions = vocab.rules["actions"]

    def check(self, objects: dict, facts: frozenset, action: dict) -> list[str]:
        """Failed check names (empty when the action is applicable)."""
        rule = self.actions.get(action["type"])
        if rule is None:
            return ["known_action_type"]
        params, args = rule["params"], action["args"]
        if len(params) != len(args):
            return ["arity"]
        failed, binding = [], {}
        for (name, ptype), arg in zip(params, args):
            binding[name] = arg
            if arg not in objects:
                failed.append(f"known_object:{name}")
            elif not self.vocab.is_a(objects[arg], ptype):
                failed.append(f"type:{name}")
        if failed:
            return failed
        for cname, cond in (rule.get("pre") or {}).items():
            neg = cond[0] == "not"
            atom = cond[1] if neg else cond
            ground = (atom[0],) + tuple(binding.get(a, a) for a in atom[1:])
            if (ground in facts) == neg:
                failed.append(cname)
        return failed

    def apply(self, objects: dict, facts: frozenset, action: dict) -> tuple[bool, list[str], frozenset]:
        failed = self.check(objects, facts, action)
        if failed:
            return False, failed, facts
        rule = self.actions[action["type"]]
        binding = {p[0]: a for p, a in zip(rule["params"], action["args"])}
        g = lambda atom: (atom[0],) + tuple(binding.get(a, a) for a in atom[1:])
        dels = {g(a) for a in (rule.get("del") or [])}
        adds = {g(a) for a in (rule.get("add") or [])}
        return True, [], frozenset((set(facts) - dels) | adds)

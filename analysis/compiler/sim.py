"""The compiler's view of the executor while it *generates* operations (paper section 4.1:
one interpreter of the curated rules).

The compiler simulates every candidate operation as it compiles (to insert navigation
and open/close steps, and to drop what cannot be grounded). It works on plain
``(objects dict, facts frozenset)`` pairs, so this adapter wraps them as worlds and asks
:class:`analysis.executor.Executor` itself: there is one interpreter of the rules, and
what the compiler accepts the executor accepts by construction.
"""
from __future__ import annotations

from types import MappingProxyType

from analysis.executor import Executor, Rules, World

from .vocabulary import Vocabulary


class Sim:
    def __init__(self, vocab: Vocabulary):
        self.vocab = vocab
        self.actions = vocab.rules["actions"]
        self.executor = Executor(Rules.load())
        # One read-only view per objects dict: an episode's objects never change while it
        # is compiled, and World shares the mapping between successors.
        self._views: dict[int, tuple[dict, MappingProxyType]] = {}

    def world(self, objects: dict, facts: frozenset) -> World:
        cached = self._views.get(id(objects))
        if cached is None or cached[0] is not objects:
            cached = (objects, MappingProxyType(objects))
            self._views[id(objects)] = cached
        return World._trusted(cached[1], facts)

    def check(self, objects: dict, facts: frozenset, action: dict) -> list[str]:
        """Failed check names (empty when the action is applicable)."""
        return self.executor.check(self.world(objects, facts), action)

    def apply(self, objects: dict, facts: frozenset, action: dict) -> tuple[bool, list[str], frozenset]:
        out = self.executor.apply(self.world(objects, facts), action)
        return out.accepted, out.failed_checks, out.world.facts

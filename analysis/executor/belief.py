"""The agent's belief: its own store of where things are and which containers are open.

Separate from the hidden world state. Each fact keeps its evidence source
(``observation``, ``feedback`` or ``action`` = the agent's own accepted action) and the
index of the group in which it was stored. Memory condition ``persistent`` keeps facts
across group boundaries; ``reset`` clears them at every group boundary (the world
carries over either way).

Counters (per group, read and zeroed by :meth:`Belief.take_counters`):

* ``cross_group_hits``: lookups answered by a fact stored in an earlier group (each
  :meth:`Belief.location` / :meth:`Belief.is_open` call, and each such fact rendered by
  :meth:`Belief.as_dict` for a prompt). Always 0 under ``reset``.
* ``repeated_region_queries``: visual queries of a region already queried earlier in
  the same episode. This is an episode-level log that survives belief resets: it
  measures how often the agent had to look again, which is what forgetting costs.
* ``anchor_delta_conflicts``: integrations of an observation in which the anchor shows
  an item that the delta removes *and* the belief had no other location for that item
  (so the conflict had to be resolved in favour of the delta). When the agent moved the
  item itself and remembers it, there is nothing to resolve.

>>> b = Belief("reset")
>>> b.begin_group(0)
>>> b.set_location("glass", ("at", "counter"), "observation")
>>> b.location("glass")
('at', 'counter')
>>> b.begin_group(1); b.location("glass") is None
True
"""
from __future__ import annotations

from dataclasses import dataclass, asdict
from typing import Iterable, Mapping

from .observation import RegionObservation

__all__ = ["Belief", "BeliefFact", "BeliefCounters", "MEMORY_MODES", "SOURCES"]

MEMORY_MODES = ("persistent", "reset")
SOURCES = ("observation", "feedback", "action")


@dataclass(frozen=True)
class BeliefFact:
    """A believed value with its evidence ``source`` and the ``group`` that stored it."""

    value: object
    source: str
    group: int


@dataclass
class BeliefCounters:
    cross_group_hits: int = 0
    repeated_region_queries: int = 0
    anchor_delta_conflicts: int = 0

    def as_dict(self) -> dict:
        return asdict(self)


class Belief:
    """Estimated locations, known container states and their evidence sources.

    A location is a tuple: ``("at", fixture)``, ``("in", container)`` or
    ``("held",)``. Unknown is ``None``.
    """

    def __init__(self, memory: str):
        if memory not in MEMORY_MODES:
            raise ValueError(f"memory={memory!r}: expected one of {list(MEMORY_MODES)}")
        self.memory = memory
        self.group = -1
        self.locations: dict[str, BeliefFact] = {}
        self.open_states: dict[str, BeliefFact] = {}
        self.observed_regions: dict[str, int] = {}
        self._queried_in_episode: set[str] = set()
        self.counters = BeliefCounters()

    # -- group boundaries ---------------------------------------------------------
    def begin_group(self, index: int) -> None:
        """Enter group ``index``; under ``reset`` every stored fact is dropped."""
        self.group = index
        if self.memory == "reset":
            self.locations.clear()
            self.open_states.clear()
            self.observed_regions.clear()

    def take_counters(self) -> dict:
        """The counters accumulated since the last call, then zero them."""
        out = self.counters.as_dict()
        self.counters = BeliefCounters()
        return out

    # -- lookups (count cross-group hits) -----------------------------------------
    def _hit(self, fact: BeliefFact | None) -> None:
        if fact is not None and fact.group < self.group:
            self.counters.cross_group_hits += 1

    def location(self, item: str):
        fact = self.locations.get(item)
        self._hit(fact)
        return None if fact is None else fact.value

    def is_open(self, entity: str):
        """``True``/``False`` when known, else ``None``."""
        fact = self.open_states.get(entity)
        self._hit(fact)
        return None if fact is None else fact.value

    def knows_region(self, region: str) -> bool:
        return region in self.observed_regions

    def as_dict(self) -> dict:
        """JSON-ready snapshot for a prompt; every earlier-group fact rendered is a hit."""
        for fact in list(self.locations.values()) + list(self.open_states.values()):
            self._hit(fact)
        return {
            "locations": {k: {"where": list(f.value), "source": f.source}
                          for k, f in sorted(self.locations.items())},
            "open": {k: {"open": f.value, "source": f.source}
                     for k, f in sorted(self.open_states.items())},
            "observed_regions": sorted(self.observed_regions),
        }

    # -- updates ------------------------------------------------------------------
    def set_location(self, item: str, where, source: str) -> None:
        if source not in SOURCES:
            raise ValueError(f"source={source!r}: expected one of {list(SOURCES)}")
        if where is None:
            self.locations.pop(item, None)
        else:
            self.locations[item] = BeliefFact(tuple(where), source, self.group)

    def set_open(self, entity: str, value: bool, source: str) -> None:
        if source not in SOURCES:
            raise ValueError(f"source={source!r}: expected one of {list(SOURCES)}")
        self.open_states[entity] = BeliefFact(bool(value), source, self.group)

    def note_query(self, region: str) -> bool:
        """Log a visual query of ``region``; returns whether it is a repeated query."""
        repeated = region in self._queried_in_episode
        if repeated:
            self.counters.repeated_region_queries += 1
        self._queried_in_episode.add(region)
        return repeated

    def observe(self, obs: RegionObservation) -> None:
        """Integrate a region observation (delta wins over anchor; destinations unknown)."""
        for item in obs.conflicts:
            fact = self.locations.get(item)
            if fact is None or fact.value == ("at", obs.region):
                self.counters.anchor_delta_conflicts += 1
        for item in obs.removed:
            fact = self.locations.get(item)
            # The item left; where it went was not observed, so forget it unless the
            # belief already places it elsewhere (e.g. the agent moved it itself).
            if fact is not None and fact.value == ("at", obs.region):
                del self.locations[item]
        for item in obs.visible:
            self.set_location(item, ("at", obs.region), "observation")
        for container, inside in obs.contents.items():
            for item in inside:
                self.set_location(item, ("in", container), "observation")
        for ent, is_open in obs.open.items():
            self.set_open(ent, is_open, "observation")
        self.observed_regions[obs.region] = self.group

    def apply_transition(self, added: Iterable, removed: Iterable) -> None:
        """Update from the agent's own accepted action (its effects are known to it)."""
        for atom in removed:
            atom = tuple(atom)
            if atom[0] in ("at", "in") and len(atom) == 3:
                fact = self.locations.get(atom[1])
                if fact is not None and fact.value == (atom[0], atom[2]):
                    del self.locations[atom[1]]
            elif atom[0] == "open" and len(atom) == 2:
                self.set_open(atom[1], False, "action")
            elif atom[0] == "holding" and len(atom) == 2:
                fact = self.locations.get(atom[1])
                if fact is not None and fact.value == ("held",):
                    del self.locations[atom[1]]
        for atom in added:
            atom = tuple(atom)
            if atom[0] in ("at", "in") and len(atom) == 3:
                self.set_location(atom[1], (atom[0], atom[2]), "action")
            elif atom[0] == "holding" and len(atom) == 2:
                self.set_location(atom[1], ("held",), "action")
            elif atom[0] == "open" and len(atom) == 2:
                self.set_open(atom[1], True, "action")

    def apply_feedback(self, failed_atoms: Iterable[tuple[bool, tuple]]) -> None:
        """Update from rejection feedback: ``(expected_true, atom)`` per failed check.

        A failed positive check ``at(o, f)`` means ``o`` is not at ``f``; a failed
        ``open(c)`` means ``c`` is closed, a failed ``not open(c)`` means it is open.
        Other failed checks carry no location or storage information and are ignored
        (feedback is not a general attribute-by-attribute correction).
        """
        for expected, atom in failed_atoms:
            atom = tuple(atom)
            if atom[0] in ("at", "in") and len(atom) == 3 and expected:
                fact = self.locations.get(atom[1])
                if fact is not None and fact.value == (atom[0], atom[2]):
                    del self.locations[atom[1]]
            elif atom[0] == "open" and len(atom) == 2:
                self.set_open(atom[1], not expected, "feedback")

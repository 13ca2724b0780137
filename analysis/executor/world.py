"""The world: a typed graph stored as a set of ground atoms (ARCHITECTURE.md section 1).

>>> w = World({"glass": "glass", "counter": "counter"}, [("at", "glass", "counter")])
>>> w.holds(("at", "glass", "counter")), w.location_of("glass"), w.items_at("counter")
(True, 'counter', ['glass'])
>>> w2 = w.with_changes(added=[("dirty", "glass")])
>>> w2 is w, w.holds(("dirty", "glass")), w2.holds(("dirty", "glass"))
(False, False, True)
>>> World.from_json(w2.to_json()) == w2
True
"""
from __future__ import annotations

from types import MappingProxyType
from typing import Any, Iterable, Mapping

from analysis.records.hashing import canonical_json, sha256_record

__all__ = ["World", "Atom"]

Atom = tuple  # ("predicate", arg1, ...), all strings

_NONE = frozenset()

# A successor stores its change against a base fact set until it holds more than this
# many changed atoms; then it is materialised and becomes the base of its successors. A
# step's set operations copy the change: with 32 atoms they take about 1.4 us, against
# 1.9 us for copying a kitchen's 87 facts (0.75 us with no change; bench/executor.py's
# machine). Testing preconditions through the change costs the same whatever its size.
_MAX_CHANGE = 32


class World:
    """Immutable world: ``objects`` (id -> leaf type) and ``facts`` (frozenset of atoms).

    ``objects`` is a read-only mapping shared between a world and its successors: actions
    never create or delete objects, so copying it on every step would only cost time.

    A successor built by the executor does not copy its fact set either: it keeps
    ``_delta = (base, plus, minus)``, a materialised fact set ``base`` of an ancestor and
    the change against it, with ``facts == (base - minus) | plus``, ``plus`` disjoint from
    ``base`` and ``minus`` a subset of it. ``facts`` is built on first access (then the
    world is its own base). A materialised world has ``_delta == (facts, ∅, ∅)``.

    >>> w = World({"glass": "glass"}, [("dirty", "glass")])._successor(
    ...     {("dirty", "glass")}, {("wet", "glass")})
    >>> w._facts is None, w.holds(("wet", "glass")), w.holds(("dirty", "glass"))
    (True, True, False)
    >>> sorted(w.facts), w._delta[1:]
    ([('wet', 'glass')], (frozenset(), frozenset()))
    """

    __slots__ = ("_objects", "_facts", "_delta", "_hash")

    def __init__(self, objects: Mapping[str, str], facts: Iterable[Iterable[str]]):
        if not isinstance(objects, Mapping):
            raise TypeError(f"objects: expected a mapping id -> type, got {type(objects).__name__}")
        if isinstance(objects, MappingProxyType):
            obj = objects
        else:
            for k, v in objects.items():
                if not isinstance(k, str) or not isinstance(v, str):
                    raise TypeError(f"objects: ids and types must be str, got {k!r}: {v!r}")
            obj = MappingProxyType(dict(objects))
        fs = frozenset(facts) if isinstance(facts, frozenset) else frozenset(
            tuple(a) for a in facts)
        for a in fs:
            if not isinstance(a, tuple) or not a or not all(isinstance(x, str) for x in a):
                raise TypeError(f"facts: each atom must be a non-empty tuple of str, got {a!r}")
        self._objects = obj
        self._facts = fs
        self._delta = (fs, _NONE, _NONE)
        self._hash = None

    @classmethod
    def _trusted(cls, objects: MappingProxyType, facts: frozenset) -> "World":
        # The executor builds successors from already-validated parts: skip re-validation.
        w = cls.__new__(cls)
        w._objects = objects
        w._facts = facts
        w._delta = (facts, _NONE, _NONE)
        w._hash = None
        return w

    def _successor(self, deleted, added) -> "World":
        """``(facts - deleted) | added`` (STRIPS), stored as a change against the base.

        The caller vouches for the atoms (the executor's grounded effects)."""
        base, plus, minus = self._delta
        plus = (plus - deleted) | (added - base)
        minus = (minus | (deleted & base)) - added
        if len(plus) + len(minus) > _MAX_CHANGE:
            return World._trusted(self._objects, (base - minus) | plus)
        w = World.__new__(World)
        w._objects = self._objects
        w._facts = None
        w._delta = (base, plus, minus)
        w._hash = None
        return w

    def _has(self, atom: tuple) -> bool:
        base, plus, minus = self._delta
        return atom in plus or (atom in base and atom not in minus)

    def _holding(self, atoms: frozenset) -> frozenset:
        """The atoms of ``atoms`` that hold (``atoms & facts``, without building facts)."""
        base, plus, minus = self._delta
        return (atoms & plus) | ((atoms - minus) & base)

    # ------------------------------------------------------------- accessors
    @property
    def objects(self) -> Mapping[str, str]:
        return self._objects

    @property
    def facts(self) -> frozenset:
        if self._facts is None:
            base, plus, minus = self._delta
            facts = (base - minus) | plus
            # One assignment each, facts first: a reader of either sees a valid state.
            self._facts = facts
            self._delta = (facts, _NONE, _NONE)
        return self._facts

    def __eq__(self, other: object) -> bool:
        return isinstance(other, World) and self.facts == other.facts \
            and dict(self._objects) == dict(other._objects)

    def __hash__(self) -> int:
        return hash(self.facts)

    def __repr__(self) -> str:
        return f"World({len(self._objects)} objects, {len(self.facts)} facts)"

    # ------------------------------------------------------------ queries
    def holds(self, atom: Iterable[str]) -> bool:
        """True when ``atom`` (tuple or list) is a fact."""
        return self._has(tuple(atom))

    def location_of(self, item: str) -> str | None:
        """The fixture an item is at, following ``in`` through its holders; else None.

        >>> w = World({"egg": "egg", "bowl": "bowl", "counter": "counter"},
        ...           [("in", "egg", "bowl"), ("at", "bowl", "counter")])
        >>> w.location_of("egg")
        'counter'
        """
        seen = set()
        x = item
        while x not in seen:
            seen.add(x)
            at = sorted(a[2] for a in self.facts if a[0] == "at" and len(a) == 3 and a[1] == x)
            if at:
                return at[0]
            holders = sorted(a[2] for a in self.facts
                             if a[0] == "in" and len(a) == 3 and a[1] == x)
            if not holders:
                return None
            x = holders[0]
        return None

    def items_at(self, fixture: str) -> list[str]:
        """Sorted items directly ``at`` a fixture (not those inside containers there)."""
        return sorted(a[1] for a in self.facts
                      if a[0] == "at" and len(a) == 3 and a[2] == fixture)

    def with_changes(self, added: Iterable = (), removed: Iterable = ()) -> "World":
        """A new world with ``removed`` atoms deleted, then ``added`` atoms added (STRIPS)."""
        rem = frozenset(tuple(a) for a in removed)
        add = frozenset(tuple(a) for a in added)
        return World(self._objects, (self.facts - rem) | add)

    # ---------------------------------------------------------- canonical form
    def to_json(self) -> dict[str, Any]:
        """Canonical JSON form: ``{"objects": {...}, "facts": [sorted lists]}``."""
        return {"objects": dict(sorted(self._objects.items())),
                "facts": [list(a) for a in sorted(self.facts)]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "World":
        """Inverse of :meth:`to_json` (accepts the episode's ``initial_world``)."""
        if not isinstance(data, Mapping) or "objects" not in data or "facts" not in data:
            raise ValueError("world: expected a mapping with fields 'objects' and 'facts'")
        if not isinstance(data["facts"], list):
            raise ValueError("world.facts: expected a list of atoms (lists of str)")
        return cls(data["objects"], [tuple(a) for a in data["facts"]])

    def canonical(self) -> bytes:
        """Canonical JSON bytes of :meth:`to_json`."""
        return canonical_json(self.to_json())

    def sha256(self) -> str:
        """SHA-256 of the canonical JSON (cached: the world never changes)."""
        if self._hash is None:
            self._hash = sha256_record(self.to_json())
        return self._hash

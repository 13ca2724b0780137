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

from analysis.frozen.hashing import canonical_json, sha256_record

__all__ = ["World", "Atom"]

Atom = tuple  # ("predicate", arg1, ...), all strings


class World:
    """Immutable world: ``objects`` (id -> leaf type) and ``facts`` (frozenset of atoms).

    ``objects`` is a read-only mapping shared between a world and its successors: actions
    never create or delete objects, so copying it on every step would only cost time.
    """

    __slots__ = ("_objects", "_facts", "_hash")

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
        self._hash = None

    @classmethod
    def _trusted(cls, objects: MappingProxyType, facts: frozenset) -> "World":
        # The executor builds successors from already-validated parts: skip re-validation.
        w = cls.__new__(cls)
        w._objects = objects
        w._facts = facts
        w._hash = None
        return w

    # ------------------------------------------------------------- accessors
    @property
    def objects(self) -> Mapping[str, str]:
        return self._objects

    @property
    def facts(self) -> frozenset:
        return self._facts

    def __eq__(self, other: object) -> bool:
        return isinstance(other, World) and self._facts == other._facts \
            and dict(self._objects) == dict(other._objects)

    def __hash__(self) -> int:
        return hash(self._facts)

    def __repr__(self) -> str:
        return f"World({len(self._objects)} objects, {len(self._facts)} facts)"

    # ------------------------------------------------------------ queries
    def holds(self, atom: Iterable[str]) -> bool:
        """True when ``atom`` (tuple or list) is a fact."""
        return tuple(atom) in self._facts

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
            at = sorted(a[2] for a in self._facts if a[0] == "at" and len(a) == 3 and a[1] == x)
            if at:
                return at[0]
            holders = sorted(a[2] for a in self._facts
                             if a[0] == "in" and len(a) == 3 and a[1] == x)
            if not holders:
                return None
            x = holders[0]
        return None

    def items_at(self, fixture: str) -> list[str]:
        """Sorted items directly ``at`` a fixture (not those inside containers there)."""
        return sorted(a[1] for a in self._facts
                      if a[0] == "at" and len(a) == 3 and a[2] == fixture)

    def with_changes(self, added: Iterable = (), removed: Iterable = ()) -> "World":
        """A new world with ``removed`` atoms deleted, then ``added`` atoms added (STRIPS)."""
        rem = frozenset(tuple(a) for a in removed)
        add = frozenset(tuple(a) for a in added)
        return World(self._objects, (self._facts - rem) | add)

    # ---------------------------------------------------------- canonical form
    def to_json(self) -> dict[str, Any]:
        """Canonical JSON form: ``{"objects": {...}, "facts": [sorted lists]}``."""
        return {"objects": dict(sorted(self._objects.items())),
                "facts": [list(a) for a in sorted(self._facts)]}

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

"""Local region observations: the recorded anchor plus the symbolic delta.

A region is a fixture. Its *anchor* is what the source video recorded there
(``episode["anchors"][region]``: item IDs at source time). The *delta* is what changed
at the region since the episode's initial world: items now ``at`` it that were not
(``added``) and items that were at it but are not any more (``removed``, explicit
removals). The observation shows ``(anchor - removed) | added``: where the anchor and
the delta disagree, the delta wins and the overridden item is listed in ``conflicts``.
Where a removed item went is *not* reported (a never-observed destination stays
unknown). Querying the same region again reuses the same anchor with the then-current
delta, so an observation is a pure function of (anchor, initial world, current world).

Open/closed state is reported from the current world for the region itself and for
every visible entity whose type can take the ``open`` predicate; ``contents`` lists what
is ``in`` each visible item now.

>>> initial = {("at", "glass", "counter"), ("at", "cup", "counter")}
>>> now = {("at", "cup", "counter"), ("at", "jar", "counter"), ("holding", "glass")}
>>> obs = observe_region("counter", ["glass", "cup"], initial, now)
>>> obs.visible, obs.added, obs.removed, obs.conflicts
(('cup', 'jar'), ('jar',), ('glass',), ('glass',))
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping

from .rules import is_subtype

__all__ = ["RegionObservation", "observe_region", "Observer", "openable_types", "facts_of"]


def facts_of(world) -> frozenset:
    """The atoms of a world as a frozenset of tuples (``World`` objects or plain dicts)."""
    facts = world.facts if hasattr(world, "facts") else world["facts"]
    if isinstance(facts, frozenset):
        return facts  # a World's facts (tuples already): no copy, observing reads it often
    return frozenset(tuple(a) for a in facts)


def objects_of(world) -> Mapping[str, str]:
    return world.objects if hasattr(world, "objects") else world["objects"]


def openable_types(rules) -> Callable[[str], bool]:
    """A predicate ``type -> bool``: can an entity of this type be opened?

    Read from the rules: the parameter types of every action that adds ``open(x)``
    (storage, enclosed appliances), so that the observation reports storage state
    exactly for what the rules can open.
    """
    if hasattr(rules, "is_subtype"):  # an analysis.executor.Rules object
        types = rules.types
        actions = {n: a.to_json() for n, a in rules.actions.items()}
    else:  # the rules' JSON form
        types, actions = rules.get("types", {}), rules.get("actions", {})
    parents = set()
    for spec in actions.values():
        ptypes = {p[0]: p[1] for p in spec.get("params", [])}
        for atom in spec.get("add", []) or []:
            if atom[0] == "open" and len(atom) == 2 and atom[1] in ptypes:
                parents.add(ptypes[atom[1]])
    cache: dict[str, bool] = {}

    def check(t: str) -> bool:
        if t not in cache:
            cache[t] = any(is_subtype(types, t, p) for p in parents)
        return cache[t]

    return check


@dataclass(frozen=True)
class RegionObservation:
    """One local observation of ``region`` (see the module docstring).

    ``visible``: items the agent sees there now; ``anchor``: the recorded frame;
    ``added``/``removed``: the delta since the initial world; ``conflicts``: anchor items
    overridden by an explicit removal; ``open``: entity -> open now (region and visible
    openable entities); ``contents``: visible item -> items in it now.
    """

    region: str
    visible: tuple[str, ...]
    anchor: tuple[str, ...]
    added: tuple[str, ...]
    removed: tuple[str, ...]
    conflicts: tuple[str, ...]
    open: Mapping[str, bool] = field(default_factory=dict)
    contents: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def as_dict(self) -> dict:
        """Plain JSON-ready form (sorted) for prompts and records."""
        return {
            "region": self.region,
            "visible": list(self.visible),
            "anchor": list(self.anchor),
            "added": list(self.added),
            "removed": list(self.removed),
            "open": {k: self.open[k] for k in sorted(self.open)},
            "contents": {k: list(v) for k, v in sorted(self.contents.items())},
        }


def observe_region(
    region: str,
    anchor: Iterable[str],
    initial_facts: Iterable[tuple],
    current_facts: Iterable[tuple],
    openable: Callable[[str], bool] | None = None,
) -> RegionObservation:
    """Observe ``region``: ``anchor`` updated by the delta between the two fact sets.

    ``openable(entity) -> bool`` decides which entities get an open/closed entry.
    """
    # a frozenset is already atoms as tuples (facts_of): no copy of a whole world per call
    initial = initial_facts if isinstance(initial_facts, frozenset) else \
        frozenset(tuple(a) for a in initial_facts)
    return _observe(region, anchor, _at(initial, region), current_facts, openable)


def _at(facts, region: str) -> frozenset:
    """The entities ``facts`` put at ``region``."""
    return frozenset(a[1] for a in facts if len(a) == 3 and a[0] == "at" and a[2] == region)


def _observe(region, anchor, before, current_facts, openable) -> RegionObservation:
    """:func:`observe_region` given the entities ``before`` at ``region`` in the initial
    facts (an :class:`Observer` computes them once per region, not once per call)."""
    current = current_facts if isinstance(current_facts, frozenset) else \
        frozenset(tuple(a) for a in current_facts)
    anchor_set = set(anchor)
    # one pass over the world: what stands at the region, and every containment (the
    # visible containers are known only once the region's objects are)
    now: set = set()
    inside: list = []
    for a in current:
        if len(a) == 3:
            if a[0] == "at":
                if a[2] == region:
                    now.add(a[1])
            elif a[0] == "in":
                inside.append(a)
    added = now - before
    removed = before - now
    visible = (anchor_set - removed) | added
    conflicts = anchor_set & removed
    open_state: dict[str, bool] = {}
    if openable is not None:
        for ent in sorted({region} | visible):
            if openable(ent):
                open_state[ent] = ("open", ent) in current
    contents: dict[str, tuple[str, ...]] = {}
    for a in inside:
        if a[2] in visible:
            contents.setdefault(a[2], ())
            contents[a[2]] = tuple(sorted(contents[a[2]] + (a[1],)))
    return RegionObservation(
        region=region,
        visible=tuple(sorted(visible)),
        anchor=tuple(sorted(anchor_set)),
        added=tuple(sorted(added)),
        removed=tuple(sorted(removed)),
        conflicts=tuple(sorted(conflicts)),
        open=open_state,
        contents=contents,
    )


class Observer:
    """Observations for one episode: binds its anchors, initial world and the rules.

    >>> ep = {"anchors": {"counter": ["glass"]},
    ...       "initial_world": {"objects": {"glass": "glass", "counter": "counter"},
    ...                         "facts": [["at", "glass", "counter"]]}}
    >>> Observer(ep).observe("counter", {"objects": {}, "facts": []}).removed
    ('glass',)
    """

    def __init__(self, episode: Mapping, rules=None):
        self.anchors: Mapping[str, list] = episode.get("anchors", {})
        init = episode["initial_world"]
        self.initial_facts = facts_of(init)
        self.objects = dict(objects_of(init))
        is_open_type = openable_types(rules or {})
        self._openable = lambda ent: ent in self.objects and is_open_type(self.objects[ent])
        types = (rules.types if hasattr(rules, "types") else (rules or {}).get("types", {}))
        fixtures = {o for o, t in self.objects.items() if is_subtype(types, t, "fixture")}
        # Without rules, fall back on what the episode shows: fixtures things stand at.
        self.regions = frozenset(fixtures) | frozenset(
            a[2] for a in self.initial_facts if len(a) == 3 and a[0] == "at"
        ) | frozenset(self.anchors)
        self._before: dict[str, frozenset] = {}  # region -> entities at it initially

    def is_region(self, region: str) -> bool:
        """A region is a fixture of the world (or one with an anchor)."""
        return region in self.regions

    def observe(self, region: str, world) -> RegionObservation:
        before = self._before.get(region)
        if before is None:
            before = self._before[region] = _at(self.initial_facts, region)
        return _observe(region, self.anchors.get(region, ()), before, facts_of(world),
                        self._openable)

"""World: immutability, canonical form and hash, helpers."""
import hashlib
import json

import pytest

from analysis.executor import World

W = World({"glass": "glass", "counter": "counter", "bowl": "bowl", "egg": "egg"},
          [("at", "glass", "counter"), ("at", "bowl", "counter"), ("in", "egg", "bowl"),
           ("hand-empty",)])


def test_canonical_form_is_sorted_and_hash_is_sha256_of_it():
    d = W.to_json()
    assert list(d["objects"]) == ["bowl", "counter", "egg", "glass"]
    assert d["facts"] == [["at", "bowl", "counter"], ["at", "glass", "counter"],
                          ["hand-empty"], ["in", "egg", "bowl"]]
    expected = json.dumps(d, sort_keys=True, separators=(",", ":"),
                          ensure_ascii=False).encode()
    assert W.canonical() == expected
    assert W.sha256() == hashlib.sha256(expected).hexdigest()


def test_json_round_trip_and_order_independence():
    again = World.from_json(json.loads(json.dumps(W.to_json())))
    assert again == W and again.sha256() == W.sha256()
    shuffled = World(dict(reversed(list(W.objects.items()))), list(reversed(sorted(W.facts))))
    assert shuffled.sha256() == W.sha256()


def test_immutable():
    with pytest.raises(AttributeError):
        W.facts = frozenset()
    with pytest.raises(TypeError):
        W.objects["x"] = "glass"


def test_helpers():
    assert W.holds(["at", "glass", "counter"]) and not W.holds(("at", "egg", "counter"))
    assert W.location_of("egg") == "counter"  # through the bowl
    assert W.location_of("counter") is None
    assert W.items_at("counter") == ["bowl", "glass"]
    w2 = W.with_changes(added=[("dirty", "glass")], removed=[("hand-empty",)])
    assert w2.holds(("dirty", "glass")) and not w2.holds(("hand-empty",))
    assert W.holds(("hand-empty",)) and w2.sha256() != W.sha256()


def test_invalid_inputs_name_the_field():
    with pytest.raises(ValueError, match="objects"):
        World.from_json({"facts": []})
    with pytest.raises(TypeError, match="facts"):
        World({}, [("at", 3)])


def test_successors_stored_as_changes_behave_as_plain_fact_sets():
    # World._successor keeps the change against a base until the facts are read or the
    # change outgrows a bound: whatever the path, every query answers as on the frozenset.
    import random
    from analysis.executor.world import _MAX_CHANGE
    rng = random.Random(7)
    universe = [("p", str(i)) for i in range(400)]
    objects = {str(i): "glass" for i in range(400)}
    for _ in range(20):
        facts = frozenset(rng.sample(universe, 200))
        w = World(objects, facts)
        sizes, capped = set(), 0
        for _ in range(150):
            dels = set(rng.sample(universe, rng.randint(0, 3)))
            adds = set(rng.sample(universe, rng.randint(0, 3)))
            atoms = frozenset(rng.sample(universe, 5))
            assert w._holding(atoms) == atoms & facts
            w, facts = w._successor(dels, adds), (facts - dels) | adds
            capped += w._facts is not None  # materialised at once: the change outgrew the bound
            base, plus, minus = w._delta
            assert (base - minus) | plus == facts and not plus & base and minus <= base
            sizes.add(len(plus) + len(minus))
            assert all(w.holds(a) == (a in facts) for a in universe)
            if rng.random() < 0.03:
                assert w.facts == facts and w._delta == (facts, frozenset(), frozenset())
        assert capped and max(sizes) <= _MAX_CHANGE
        assert w == World(objects, facts) and hash(w) == hash(facts)
        assert w.sha256() == World(objects, facts).sha256()

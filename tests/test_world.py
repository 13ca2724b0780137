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

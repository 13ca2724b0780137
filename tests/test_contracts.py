"""Contracts: terminal and event tiers, UNKNOWN rules, validation."""
import pytest

from analysis.executor import FALSE, TRUE, UNKNOWN, World, evaluate_condition, evaluate_contract
from analysis.executor.contracts import ConditionError

W = World({"squash": "squash", "glass": "glass"}, [("in", "squash", "glass")])
ATOM = {"id": "c1", "kind": "atom", "atom": ["in", "squash", "glass"]}
EV = {"id": "e1", "kind": "event", "event": {"type": "stir", "args": ["spoon", None, None]}}
STIR = {"type": "stir", "args": ["spoon", "cup", "counter"]}


@pytest.mark.parametrize("cond,events,done,expected", [
    (ATOM, [], True, TRUE),
    (ATOM, [], False, UNKNOWN),                                   # no evidence of the end state
    ({**ATOM, "atom": ["filled", "glass"]}, [], True, FALSE),
    ({**ATOM, "atom": ["in", "squash", "mug"]}, [], True, UNKNOWN),  # mug not in world
    (EV, [STIR], True, TRUE),
    (EV, [STIR], False, TRUE),                                    # the event did happen
    (EV, [], True, FALSE),
    (EV, [], False, UNKNOWN),
    (EV, [{"type": "stir", "args": ["fork", "cup", "counter"]}], True, FALSE),
    (EV, [{"type": "stir", "args": ["spoon", "cup"]}], True, FALSE),  # arity differs
    (EV, [{"type": "whisk", "args": ["spoon", "cup", "counter"]}], True, FALSE),
])
def test_condition_truth(cond, events, done, expected):
    assert evaluate_condition(cond, W, events, done) is expected


def test_contract_counts():
    r = evaluate_contract({"tier": "terminal", "conditions": [
        ATOM, {**ATOM, "id": "c2", "atom": ["filled", "glass"]}]}, W, [], True)
    assert r.truths == {"c1": TRUE, "c2": FALSE} and r.n_true == 1 and not r.all_true
    r = evaluate_contract({"tier": "event", "conditions": [EV]}, W, iter([STIR]), True)
    assert r.all_true and r.n_true == 1
    assert not evaluate_contract({"conditions": []}, W, [], True).all_true


@pytest.mark.parametrize("bad,match", [
    ("c1", "expected a mapping"),
    ({"kind": "atom", "atom": ["x"]}, "condition.id"),
    ({"id": "c", "kind": "state"}, "not one of"),
    ({"id": "c", "kind": "atom", "atom": []}, "atom"),
    ({"id": "c", "kind": "atom", "atom": ["in", 1]}, "atom"),
    ({"id": "c", "kind": "event", "event": {"args": []}}, "type"),
    ({"id": "c", "kind": "event", "event": {"type": "stir", "args": [1]}}, "event.args"),
])
def test_malformed_conditions_raise_named_errors(bad, match):
    with pytest.raises(ConditionError, match=match):
        evaluate_condition(bad, W, [], True)


def test_duplicate_ids_rejected():
    with pytest.raises(ConditionError, match="duplicate"):
        evaluate_contract({"conditions": [ATOM, ATOM]}, W, [], True)


def test_truth_serialises_as_plain_string():
    import json
    assert json.dumps({"t": TRUE}) == '{"t": "TRUE"}'

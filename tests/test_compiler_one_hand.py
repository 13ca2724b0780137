"""The one-hand model (analysis.compiler.one_hand): tracks a row decides that end inside a
track whose pick-up was moved to a hand-over."""
from types import SimpleNamespace

from analysis.compiler.one_hand import select_tracks


def _tr(tid, start, end):
    return SimpleNamespace(track_id=tid, start=start, end=end, entity=tid)


def test_placed_track_nested_in_a_handed_over_track_is_kept():
    # washing up (P01-20240203-150506, 6790-6840 s): a sponge s (0-20 s), spoons p (5-40)
    # and q (6-42), each held from the moment the one before is put down (p from 20.001,
    # q from 40.001), and a knife k (15-35) whose move a row decides (``placed``). k starts
    # before p is held but ends inside it: it is held from p's pick-up to its own end,
    # nested in p (p set down for it, picked up again after: the other hand)
    s, p, q, k = _tr("s", 0, 20), _tr("p", 5, 40), _tr("q", 6, 42), _tr("k", 15, 35)
    chosen, blocked, pick, juggled = select_tracks([s, p, q, k], set(), placed={"s", "p", "q", "k"})
    assert not blocked and {t: o.track_id for t, o in juggled.items()} == {"k": "p"}
    assert pick == {"s": 0, "p": 20.001, "q": 40.001, "k": 20.001}
    # a track no row places gains nothing from the curated set-down: dropped, as before
    chosen, blocked, pick, juggled = select_tracks([s, p, q, k], set(), placed={"s", "p", "q"})
    assert not juggled and [(t.track_id, o.track_id) for t, o in blocked] == [("k", "p")]
    # a grounded event on p while k would be held: p cannot be set down, k is dropped
    chosen, blocked, _, juggled = select_tracks([s, p, q, k], set(), {"p": [30.0]},
                                                placed={"s", "p", "q", "k"})
    assert not juggled and [(t.track_id, o.track_id) for t, o in blocked] == [("k", "p")]
    # a third object over k's held time (r, 21-25): both hands are busy, r is dropped
    r = _tr("r", 21, 25)
    chosen, blocked, _, juggled = select_tracks([s, p, q, k, r], set(), placed={"s", "p", "q", "k", "r"})
    assert {t: o.track_id for t, o in juggled.items()} == {"k": "p"}
    assert [(t.track_id, o.track_id) for t, o in blocked] == [("r", "p")]


def test_a_placed_track_keeps_the_hand_from_one_no_row_places():
    # three bowls carried at once (P04-20240413-142619, 3720-3731 s): w (0-10) no row
    # places, l (1-10.02) and r (3-10.02) the rows place, put down a hair after w (so not
    # nested in it). l takes the hand from w (w is dropped, blocked by l), r is nested in l
    # (they are put down together)
    w, l, r = _tr("w", 0, 10), _tr("l", 1, 10.02), _tr("r", 3, 10.02)
    chosen, blocked, pick, juggled = select_tracks([w, l, r], set(), placed={"l", "r"})
    assert [t.track_id for t in chosen] == ["l", "r"] and pick == {"l": 1, "r": 3}
    assert [(t.track_id, o.track_id) for t, o in blocked] == [("w", "l")]
    assert {t: o.track_id for t, o in juggled.items()} == {"r": "l"}
    # w placed too: neither is less certain, l is dropped as before
    chosen, blocked, _, _ = select_tracks([w, l], set(), placed={"w", "l"})
    assert [t.track_id for t in chosen] == ["w"] and [(t.track_id, o.track_id) for t, o in blocked] == [("l", "w")]
    # w needed by a grounded event: it keeps the hand
    chosen, blocked, _, _ = select_tracks([w, l], {"w"}, {"w": [0.5]}, placed={"l"})
    assert [t.track_id for t in chosen] == ["w"] and [(t.track_id, o.track_id) for t, o in blocked] == [("l", "w")]
    # a needed track held over l's time too (h, 0.5-2): l cannot take the hand, it is dropped
    h = _tr("h", 0.5, 2)
    chosen, blocked, _, _ = select_tracks([w, l, h], {"h"}, {"h": [1.5]}, placed={"l"})
    assert "l" in [t.track_id for t, _ in blocked]
    # put down together with w (nested in it, the other hand): both kept, as before
    l2 = _tr("l", 1, 10)
    chosen, blocked, _, juggled = select_tracks([w, l2], set(), placed={"l"})
    assert not blocked and {t: o.track_id for t, o in juggled.items()} == {"l": "w"}


def test_a_needed_track_touching_the_end_of_a_held_one_is_picked_up_when_the_hand_is_free():
    # P04_R01 (video P04-20240413-151722): the salt jar s (251.12-259.61 s) and the black
    # pepper's jar j (259.57-267.10 s, its pour at 263 s) are both needed by adds; j starts
    # 0.04 s before s is put down (within OVERLAP_EPS: touching, not simultaneous). j is
    # picked up when the hand is free (259.611 s), not at its start while s is in the hand
    s, j = _tr("s", 251.12, 259.61), _tr("j", 259.57, 267.10)
    chosen, blocked, pick, juggled = select_tracks([s, j], {"s", "j"}, {"s": [257.0], "j": [263.0]})
    assert not blocked and not juggled and [t.track_id for t in chosen] == ["s", "j"]
    assert pick == {"s": 251.12, "j": 259.611}
    # a grounded event on j before the hand is free: its pick-up stays at its start
    _, _, pick, _ = select_tracks([s, j], {"s", "j"}, {"s": [257.0], "j": [259.6]})
    assert pick["j"] == 259.57
    # not touching (j starts after s ends): its own start
    _, _, pick, _ = select_tracks([s, _tr("j", 259.7, 267.1)], {"s", "j"}, {"j": [263.0]})
    assert pick["j"] == 259.7

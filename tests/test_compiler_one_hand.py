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

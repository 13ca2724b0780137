"""The one-hand model (paper section 3: executable operations under the curated rules, which
hold one item; docs/compiler.md, "Operations"): which object tracks can be compiled
as held, one at a time, with the other hand modelled by setting an object down; a glove
or mitt is worn, not held."""
from __future__ import annotations

import re

OVERLAP_EPS = 0.05     # seconds: tracks touching within this are not simultaneous
#: head nouns of what is worn on a hand, not held in it (a washing-up glove tracked for
#: five minutes while the hands wash a knife, a bowl and a sponge in it)
WORN_HEADS = {"glove", "gloves", "mitt", "mitts", "mitten", "mittens"}


def worn(name: str) -> bool:
    """Whether a track's object is worn on a hand (its name's head noun, or the noun
    before "of": "pair of gloves") rather than held in it.

    >>> worn("oven glove 2"), worn("pair of rubber gloves"), worn("glove box")
    (True, True, False)
    """
    low = re.sub(r"\s+", " ", re.sub(r"\d+", " ", name.lower())).strip()
    head = low.split(" of ")[-1] if low.startswith(("pair of", "set of")) else low.split(" of ")[0]
    ws = head.split()
    return bool(ws) and ws[-1] in WORN_HEADS


def _hand_to(t, cover, held, chosen, pick, blocked) -> None:
    """The row decides where ``t`` goes and nothing decides where the held ``cover``'s
    track went: ``t`` takes the hand from its own start, the other is dropped."""
    c = cover[2]
    held.remove(cover)
    chosen.remove(c)
    del pick[c.track_id]
    blocked.append((c, t))
    chosen.append(t)
    pick[t.track_id] = t.start
    held.append((t.start, t.end, t))


def select_tracks(tracks, needed: set, busy_times: dict | None = None, placed: set | None = None,
                  weak: set | None = None):
    """``(selected, [(track, blocking track), ...], pick_time, juggled)`` under the
    one-hand model of the rules, with the other hand modelled by setting down.

    Tracks a grounded event needs keep their whole interval. Every other track is held
    from the latest moment the hand is free inside its interval up to its own end, where
    its put-down is observed: its pick-up moves later within the track (``pick_time``),
    never outside it. A track held *inside* another one (picked up and put down while
    the other is held: the person's other hand) is kept when the outer track's object
    can be set down for it: nothing else is held then and no grounded event needs the
    outer object during it, and when the inner track is needed by a grounded event or its
    destination is observed (``placed``: nothing else would be gained from the curated
    set-down steps); a placed track that starts before the outer one's pick-up (moved to a
    hand-over) is held from that pick-up. ``juggled[track_id]`` is then the outer track; the builder
    sets the outer object down before the pick-up and picks it up again after the
    put-down (curated steps). Any other track whose end falls while another is held is
    dropped, unless it is placed and the held track is not (nor needed, nor holding a
    nested one): then the row-decided track keeps the hand and the other is dropped (three
    bowls carried at once, the rows deciding where two of them go).

    Tracks in ``weak`` are needed by a fine-grained snippet's action (a jar closed in the
    hand): they are reserved like the needed ones, but after all of them, so a snippet never
    takes the hand from an add or a step (the capsule box opened while the capsule the
    step inserts is taken out of it keeps the capsule's track)."""
    busy_times = busy_times or {}
    placed = set(tracks and [t.track_id for t in tracks]) if placed is None else placed
    weak = (weak or set()) - set(needed)

    def by_start(ids):
        return sorted(((t.start, t.end, t) for t in tracks if t.track_id in ids),
                      key=lambda x: (x[0], x[1], x[2].track_id))
    busy = by_start(needed) + by_start(weak)
    needed = set(needed) | weak
    chosen, blocked, pick, juggled = [], [], {}, {}

    def inside(t, c):
        """``t`` lies inside ``c``'s held interval and ``c``'s object is free. The two may
        start or end together (both hands take or leave things at once: the scissors and
        their guard put down at 1242.567 s); the builder then sets ``c`` down first and
        puts ``t`` down first."""
        return (pick[c.track_id] - OVERLAP_EPS <= t.start and round(t.end, 3) <= round(c.end, 3)
                and pick[c.track_id] < t.end - OVERLAP_EPS
                and not any(t.start - OVERLAP_EPS <= x <= t.end + OVERLAP_EPS
                            for x in busy_times.get(c.track_id, ()))
                and not any(o is not c and o.track_id not in juggled and o.start < t.end and t.start < o.end
                            for o in chosen)
                and not any(j.start < t.end and t.start < j.end for j in chosen
                            if j.track_id in juggled))

    def inside_late(t, c):
        """A placed ``t`` that starts before ``c`` is held (``c``'s pick-up moved later, to a
        hand-over) but ends inside it: held from ``c``'s pick-up to its own end, nested in
        ``c``, when nothing else is *held* then and no grounded event needs ``c`` (a knife
        washed among five spoons, each held from the moment the one before is put down,
        while itinerary 375 decides the knife's sink -> dishwasher move)."""
        s = max(t.start, pick[c.track_id])
        return (round(t.end, 3) <= round(c.end, 3) and s < t.end - OVERLAP_EPS
                and not any(s - OVERLAP_EPS <= x <= t.end + OVERLAP_EPS for x in busy_times.get(c.track_id, ()))
                and not any(o is not c and pick[o.track_id] < t.end and s < o.end for o in chosen))

    for s0, e0, t in busy:
        clash = next((c for c in chosen if s0 < c.end - OVERLAP_EPS and c.start < e0 - OVERLAP_EPS), None)
        if clash is None:
            chosen.append(t)
            # touching (it starts within OVERLAP_EPS before a held track ends: the jar of
            # black pepper taken 0.04 s before the salt jar is put down, P04_R01): picked up
            # when the hand is free, if every grounded event on it comes after that
            free = max([c.end + 0.001 for c in chosen if c is not t and c.start < s0 < c.end], default=s0)
            pick[t.track_id] = free if free < e0 - OVERLAP_EPS and all(
                x > free for x in busy_times.get(t.track_id, ())) else t.start
        elif clash.track_id not in juggled and inside(t, clash):
            chosen.append(t)
            pick[t.track_id] = max(t.start, pick[clash.track_id])
            juggled[t.track_id] = clash
        else:
            # a hand-over, not a nesting: the track starts while another is held but
            # outlasts it. Its pick-up moves to the moment the hand is free, when every
            # grounded event on it comes after that (e.g. one bottle put down at 482.8 s
            # while the next, tracked from 482.2 s, is poured at 485.1 s).
            over = [c for c in chosen if s0 < c.end - OVERLAP_EPS and c.start < e0 - OVERLAP_EPS]
            free = max(c.end for c in over) + 0.001
            if (all(c.end < e0 - OVERLAP_EPS for c in over) and free < e0 - OVERLAP_EPS
                    and all(x > free for x in busy_times.get(t.track_id, ()))):
                chosen.append(t)
                pick[t.track_id] = free
            else:
                blocked.append((t, clash))
    held = [(pick[c.track_id], c.end, c) for c in chosen if c.track_id not in juggled]
    for t in sorted((t for t in tracks if t.track_id not in needed),
                    key=lambda t: (t.start, t.end, t.entity, t.track_id)):
        cover = next((h for h in held if h[0] - OVERLAP_EPS < t.end <= h[1] + OVERLAP_EPS), None)
        if cover is not None:
            c = cover[2]
            if t.track_id in placed and (inside(t, c) or inside_late(t, c)):
                chosen.append(t)
                pick[t.track_id] = max(t.start, pick[c.track_id])
                juggled[t.track_id] = c
            elif (t.track_id in placed and c.track_id not in placed and c.track_id not in needed
                  and c not in juggled.values()
                  and not any(h[2] is not c and h[0] < t.end and h[1] > t.start - OVERLAP_EPS for h in held)):
                _hand_to(t, cover, held, chosen, pick, blocked)
            else:
                blocked.append((t, c))
            continue
        # every selected interval overlapping this one ends before its end (no cover):
        # the hand is free after the last of them
        lasts = [h for h in held if h[0] < t.end and h[1] > t.start - OVERLAP_EPS]
        lasts += [(pick[j.track_id], j.end, j) for j in chosen if j.track_id in juggled
                  and j.start < t.end and j.end > t.start - OVERLAP_EPS]
        free = max([t.start] + [h[1] + 0.001 for h in lasts])
        if free >= t.end - OVERLAP_EPS:
            blocked.append((t, max(lasts, key=lambda h: (h[1], h[2].track_id))[2] if lasts else None))
            continue
        chosen.append(t)
        pick[t.track_id] = round(free, 3)
        held.append((pick[t.track_id], t.end, t))
    chosen.sort(key=lambda t: (pick[t.track_id], t.end, t.entity, t.track_id))
    return chosen, blocked, pick, juggled

"""The exported audit (paper section 6.2 and appendix C.4: the same-task audit and the
12-task stress test; docs/compiler.md, "Tasks, admission, suites"; docs/FORMAT.md, audit.jsonl): per admitted task reference_pass,
initial_fail, nontrivial, per-predicate negative suites; and a 12-task stress test."""
from __future__ import annotations

from analysis.executor.executor import Executor
from analysis.executor.rules import Rules
from analysis.executor.world import World

from .admission import contract_holds, replay, state_holds, true_at_start, truth
from .sim import Sim


def _rec(check, task_id, passed, detail, condition_id=None):
    return {"check": check, "task_id": task_id, "condition_id": condition_id,
            "passed": bool(passed), "detail": detail}


def audit_episode(sim: Sim, objects, facts, group_recs, tasks, stress_ids: set) -> list[dict]:
    states, events, rejected = replay(sim, objects, facts, group_recs)
    out = []
    for t in tasks:
        tid = t["task_id"]
        ok = contract_holds(t, states, events, objects)
        out.append(_rec("reference_pass", tid, ok, f"replay of {t['last'] + 1} groups; "
                        f"{len(rejected)} rejected operations in episode"))
        init = state_holds(t, states[-1], objects)
        out.append(_rec("initial_fail", tid, not init,
                        f"initial world evaluated: {_n_true(t, states[-1], objects)}/"
                        f"{len(t['conditions'])} conditions TRUE"))
        start = states[t["first"] - 1]
        # per condition, not the whole contract: one condition TRUE at the start is free credit
        held = true_at_start(t, states, objects)
        out.append(_rec("nontrivial", tid, not held,
                        f"state at task start evaluated: {_n_true(t, start, objects)}/"
                        f"{len(t['conditions'])} conditions TRUE" + (f" ({', '.join(held)})" if held else "")))
        out.extend(negative_suites(t, states, events, objects))
        if tid in stress_ids:
            out.extend(stress(sim, objects, facts, group_recs, t, states, events))
    return out


def _n_true(t, facts, objects) -> int:
    return sum(truth(c, facts, [], objects) for c in t["conditions"])


def negative_suites(t, states, events, objects) -> list[dict]:
    """One ``negative_suite`` record per condition (docs/FORMAT.md, audit.jsonl): take the passing
    end of the reference replay (end state and the task's event log) and remove that
    condition's evidence alone (the atom from the state; the events matching it from the
    log). Passed when the contract rejects the result while every other condition is still
    TRUE, i.e. the case differs from a passing one in that predicate only.

    The audit record ID is ``(check, task_id)`` (``analysis.records.schemas``), so with
    several conditions per task these records name the condition in ``task_id`` the way
    group and task IDs nest: ``<task_id>/<condition id>``, e.g. ``P02-.../t017/c2``."""
    tid = t["task_id"]
    end = states[t["last"]]
    evs = [e for i in t.get("groups", range(t["first"], t["last"] + 1)) for e in events[i]]
    out = []
    for c in t["conditions"]:
        if c["kind"] == "atom":
            neg_state, neg_evs = end - {tuple(c["atom"])}, evs
            what = (f"{c['id']} {c['atom'][0]}({', '.join(c['atom'][1:])}): passing end state "
                    "minus that atom")
        else:
            neg_state = end
            neg_evs = [e for e in evs if not truth(c, end, [e], objects)]
            ev = c["event"]
            what = (f"{c['id']} event {ev['type']}({', '.join(a or '*' for a in ev['args'])}): task log without the "
                    f"{len(evs) - len(neg_evs)} matching event(s)")
        rejected = not all(truth(x, neg_state, neg_evs, objects) for x in t["conditions"])
        others = all(truth(x, neg_state, neg_evs, objects) for x in t["conditions"] if x is not c)
        out.append(_rec("negative_suite", tid, rejected and others,
                        f"{what}; contract {'rejected' if rejected else 'ACCEPTED'}, "
                        f"other conditions {'TRUE' if others else 'CHANGED'}",
                        condition_id=c["id"]))
    return out


def stress(sim, objects, facts, group_recs, t, states, events) -> list[dict]:
    tid = t["task_id"]
    out = []
    ok = contract_holds(t, states, events, objects)
    out.append(_rec("stress_replay", tid, ok, "reference replay satisfies the contract"))
    cond = t["conditions"][0]
    # witness: for every condition, an accepted operation inside the task adds the atom /
    # is the event
    witnessed = set()
    f = states[t["first"] - 1]
    for i in range(t["first"], t["last"] + 1):
        for op in group_recs[i]["operations"]:
            a = {"type": op["type"], "args": op["args"]}
            okk, _, nf = sim.apply(objects, f, a)
            for c in t["conditions"]:
                if okk and c["kind"] == "atom" and tuple(c["atom"]) in nf - f:
                    witnessed.add(c["id"])
                if okk and c["kind"] == "event" and truth(c, nf, [a], objects):
                    witnessed.add(c["id"])
            f = nf
    wit = len(witnessed) == len(t["conditions"])
    out.append(_rec("stress_witness", tid, wit,
                    f"accepted operations in the task establish {len(witnessed)}/"
                    f"{len(t['conditions'])} conditions"))
    s2, e2, _ = replay(sim, objects, facts, group_recs[: t["last"] + 1])
    same = all(s2[i] == states[i] for i in range(-1, t["last"] + 1))
    out.append(_rec("stress_repeat", tid, same, "second replay gives identical states"))
    bad = {"type": group_recs[t["last"]]["operations"][-1]["type"], "args": ["__no_such_entity__"]}
    okb, failed, nf = sim.apply(objects, states[t["last"]], bad)
    out.append(_rec("stress_immutability", tid, (not okb) and nf == states[t["last"]],
                    f"invalid action rejected ({', '.join(failed)}), world unchanged"))
    out.append(_rec("stress_initial_fails", tid, not contract_holds(
        {**t, "last": -1, "first": 0}, states, {**events, -1: []}, objects) if cond["kind"] == "atom"
        else not truth(cond, states[-1], [], objects), "initial state fails"))
    partial = states[t["first"] - 1]
    out.append(_rec("stress_partial_fails", tid, not state_holds(t, partial, objects),
                    f"state before the task's groups fails ({_n_true(t, partial, objects)}/"
                    f"{len(t['conditions'])} conditions TRUE)"))
    if cond["kind"] == "atom":
        atom = list(cond["atom"])
        alts = sorted(e for e in objects if objects[e] == objects[atom[-1]] and e != atom[-1]
                      and (atom[0], *atom[1:-1], e) not in states[t["last"]])
        if alts:
            wrong = {**cond, "atom": atom[:-1] + [alts[0]]}
            out.append(_rec("stress_wrong_binding_fails", tid,
                            not truth(wrong, states[t["last"]], [], objects),
                            f"{atom} rebound to {alts[0]}"))
        else:
            wrong = {**cond, "atom": atom[:-1] + ["__other__"]}
            out.append(_rec("stress_wrong_binding_fails", tid,
                            not truth(wrong, states[t["last"]], [], objects),
                            f"{atom} rebound to an absent entity (no same-type alternative)"))
        missing = {k: v for k, v in objects.items() if k != atom[1]}
        out.append(_rec("stress_missing_state_fails", tid,
                        not truth(cond, states[t["last"]], [], missing),
                        f"entity {atom[1]} removed from the world"))
    out.append(commute_check(sim, objects, group_recs, t, states))
    return out


# ----------------------------------------------------------------------- commute check
# Independent updates commute (docs/FORMAT.md, audit.jsonl). Two actions are independent when
# neither writes (adds or deletes) an atom the other reads (a precondition, negated or
# not) or writes; shared reads (both need ``agent-at f``) are allowed, because reading
# cannot change the other's outcome. Both must change the world, so that comparing the
# two orders is not vacuous. The pair is applied in both orders with
# ``analysis.executor.Executor`` itself and the canonical world hashes compared.

_EXECUTOR = []


def _executor():
    if not _EXECUTOR:
        _EXECUTOR.append(Executor(Rules.load()))
    return _EXECUTOR[0]


def touched(sim: Sim, action: dict) -> tuple[frozenset, frozenset, frozenset, frozenset]:
    """``(reads, writes, adds, dels)`` of a ground action (atoms as tuples)."""
    rule = sim.actions[action["type"]]
    b = {p[0]: a for p, a in zip(rule["params"], action["args"])}
    g = lambda atom: (atom[0],) + tuple(b.get(x, x) for x in atom[1:])
    reads = frozenset(g(c[1]) if c[0] == "not" else g(c) for c in (rule.get("pre") or {}).values())
    adds = frozenset(g(a) for a in (rule.get("add") or []))
    dels = frozenset(g(a) for a in (rule.get("del") or []))
    return reads, adds | dels, adds, dels


def independent(sim: Sim, facts: frozenset, a: dict, b: dict) -> bool:
    """Disjoint touched atoms (see above), and each action changes ``facts``."""
    ra, wa, adda, dela = touched(sim, a)
    rb, wb, addb, delb = touched(sim, b)
    if wa & (rb | wb) or wb & (ra | wa):
        return False
    return bool((adda - facts) | (dela & facts)) and bool((addb - facts) | (delb & facts))


def ground_applicable(sim: Sim, objects: dict, facts: frozenset) -> list[dict]:
    """Every ground action applicable in ``facts`` whose parameters are all bound by its
    positive preconditions (matched against the facts), sorted for determinism.
    Actions with a free parameter (``navigate``'s destination) are skipped: they are
    never independent of another agent action anyway (both touch ``agent-at``)."""
    by_pred: dict = {}
    for a in sorted(facts):
        by_pred.setdefault(a[0], []).append(a)
    out = set()
    for typ in sorted(sim.actions):
        rule = sim.actions[typ]
        params = [p[0] for p in rule["params"]]
        pos = [c for c in (rule.get("pre") or {}).values() if c[0] != "not"]

        def bind(i, b):
            if i == len(pos):
                if all(p in b for p in params):
                    yield b
                return
            atom = pos[i]
            for f in by_pred.get(atom[0], ()):
                if len(f) != len(atom):
                    continue
                nb, ok = dict(b), True
                for x, v in zip(atom[1:], f[1:]):
                    if x in params:
                        if nb.setdefault(x, v) != v:
                            ok = False
                            break
                    elif x != v:
                        ok = False
                        break
                if ok:
                    yield from bind(i + 1, nb)

        for b in bind(0, {}):
            args = tuple(b[p] for p in params)
            if not sim.check(objects, facts, {"type": typ, "args": list(args)}):
                out.add((typ, args))
    return [{"type": t, "args": list(a)} for t, a in sorted(out)]


def _fmt(a: dict) -> str:
    return f"{a['type']}({', '.join(x or '*' for x in a['args'])})"


def both_orders(objects: dict, facts: frozenset, a: dict, b: dict) -> tuple[bool, str]:
    """Apply a;b and b;a with the executor; ``(same accepted outcome, detail)``."""
    ex = _executor()
    w = World(objects, facts)
    hashes = []
    for x, y in ((a, b), (b, a)):
        o1 = ex.apply(w, x)
        o2 = ex.apply(o1.world, y) if o1.accepted else None
        if not (o1.accepted and o2.accepted):
            return False, f"{_fmt(x)} then {_fmt(y)} rejected by the executor"
        hashes.append(o2.world.sha256())
    same = hashes[0] == hashes[1]
    return same, (f"world sha256 {hashes[0][:12]} in both orders" if same else
                  f"world sha256 differs: {hashes[0][:12]} vs {hashes[1][:12]}")


def find_commute_pair(sim: Sim, objects, group_recs, t, states):
    """The first independent pair for a task, searched in this order (the detail names it):
    1. two adjacent accepted operations of the task's reference replay;
    2. two reference operations of the task applicable in the same replay state;
    3. two ground actions applicable in a state of the task's replay (constructed).
    Returns ``(facts, a, b, how)`` or ``None``."""
    ops = [(i, {"type": o["type"], "args": o["args"]}) for i in range(t["first"], t["last"] + 1)
           for o in group_recs[i]["operations"]]
    seq = []                   # (group index, state before, action) for accepted operations
    f = states[t["first"] - 1]
    for gi, a in ops:
        ok, _, nf = sim.apply(objects, f, a)
        if ok:
            seq.append((gi, f, a))
            f = nf
    for (gi, s, a), (_, sa, b) in zip(seq, seq[1:]):
        if not sim.check(objects, s, b) and independent(sim, s, a, b):
            return s, a, b, f"adjacent reference operations in {group_recs[gi]['group_id']}"
    for gi, s, _ in seq:
        app = [a for _, _, a in seq if not sim.check(objects, s, a)]
        for k, a in enumerate(app):
            for b in app[k + 1:]:
                if independent(sim, s, a, b):
                    return s, a, b, ("reference operations applicable in the same state "
                                     f"(before an operation of {group_recs[gi]['group_id']})")
    for gi, s, _ in seq:
        app = ground_applicable(sim, objects, s)
        for k, a in enumerate(app):
            for b in app[k + 1:]:
                if independent(sim, s, a, b):
                    return s, a, b, ("constructed from the replay state before an operation "
                                     f"of {group_recs[gi]['group_id']}")
    return None


def commute_check(sim: Sim, objects, group_recs, t, states) -> dict:
    """One record: ``stress_commute`` when an independent pair exists (passed = both
    orders accepted and equal hashes), else ``stress_commute_no_pair`` (informational,
    passed true: the search ran; it is not counted in the commute tally, see FORMAT.md)."""
    found = find_commute_pair(sim, objects, group_recs, t, states)
    if found is None:
        return _rec("stress_commute_no_pair", t["task_id"], True,
                    "no independent pair: no two independent state-changing actions are "
                    "applicable in any state of the task's reference replay; not counted")
    facts, a, b, how = found
    ok, detail = both_orders(objects, facts, a, b)
    return _rec("stress_commute", t["task_id"], ok, f"{_fmt(a)} and {_fmt(b)} ({how}): {detail}")

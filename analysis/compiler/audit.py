"""The exported audit (DESIGN.md section 7): per admitted task reference_pass,
initial_fail, nontrivial, per-predicate negative suites; and a 12-task stress test."""
from __future__ import annotations

from .admission import contract_holds, replay, truth
from .sim import Sim


def _rec(check, task_id, passed, detail):
    return {"check": check, "task_id": task_id, "passed": bool(passed), "detail": detail}


def audit_episode(sim: Sim, objects, facts, group_recs, tasks, stress_ids: set) -> list[dict]:
    states, events, rejected = replay(sim, objects, facts, group_recs)
    out = []
    for t in tasks:
        tid = t["task_id"]
        ok = contract_holds(t, states, events, objects)
        out.append(_rec("reference_pass", tid, ok, f"replay of {t['last'] + 1} groups; "
                        f"{len(rejected)} rejected operations in episode"))
        init = any(truth(c, states[-1], [], objects) for c in t["conditions"])
        out.append(_rec("initial_fail", tid, not init, "initial world evaluated"))
        start_true = t["tier"] == "terminal" and all(
            truth(c, states[t["first"] - 1], [], objects) for c in t["conditions"])
        out.append(_rec("nontrivial", tid, not start_true, "state at task start evaluated"))
        end = states[t["last"]]
        evs = [e for i in range(t["first"], t["last"] + 1) for e in events[i]]
        for c in t["conditions"]:
            if c["kind"] == "atom":
                neg = end - {tuple(c["atom"])}
                rejected_neg = not truth(c, neg, [], objects)
                out.append(_rec("negative_suite", tid, rejected_neg,
                                f"predicate {c['atom'][0]}: passing end state minus {c['atom']}"))
            else:
                ev = c["event"]
                neg = [e for e in evs if e["type"] != ev["type"]]
                out.append(_rec("negative_suite", tid, not truth(c, end, neg, objects),
                                f"event {ev['type']}: task log without that event type"))
        if tid in stress_ids:
            out.extend(stress(sim, objects, facts, group_recs, t, states, events))
    return out


def stress(sim, objects, facts, group_recs, t, states, events) -> list[dict]:
    tid = t["task_id"]
    out = []
    ok = contract_holds(t, states, events, objects)
    out.append(_rec("stress_replay", tid, ok, "reference replay satisfies the contract"))
    cond = t["conditions"][0]
    # witness: an accepted operation inside the task adds the atom / is the event
    wit = False
    f = states[t["first"] - 1]
    for i in range(t["first"], t["last"] + 1):
        for op in group_recs[i]["operations"]:
            a = {"type": op["type"], "args": op["args"]}
            okk, _, nf = sim.apply(objects, f, a)
            if okk and cond["kind"] == "atom" and tuple(cond["atom"]) in nf - f:
                wit = True
            if okk and cond["kind"] == "event" and truth(cond, nf, [a], objects):
                wit = True
            f = nf
    out.append(_rec("stress_witness", tid, wit, "an accepted operation in the task establishes the condition"))
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
    out.append(_rec("stress_partial_fails", tid, not truth(cond, partial, [], objects),
                    "state before the task's groups fails"))
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
    # commute: two consecutive accepted independent operations in the task, both orders
    f = states[t["first"] - 1]
    ops = [{"type": o["type"], "args": o["args"]} for i in range(t["first"], t["last"] + 1)
           for o in group_recs[i]["operations"]]
    for a, b in zip(ops, ops[1:]):
        if set(a["args"]) & set(b["args"]) or "navigate" in (a["type"], b["type"]):
            ok1, _, f1 = sim.apply(objects, f, a)
            f = f1 if ok1 else f
            continue
        ok1, _, fa = sim.apply(objects, f, a)
        ok2, _, fab = sim.apply(objects, fa, b)
        ok3, _, fb = sim.apply(objects, f, b)
        ok4, _, fba = sim.apply(objects, fb, a)
        if ok1 and ok2 and ok3 and ok4:
            out.append(_rec("stress_commute", tid, fab == fba, f"{a['type']} and {b['type']} in both orders"))
            break
        f = fa if ok1 else f
    return out

"""Executor throughput vs unified-planning's SequentialSimulator and pyperplan's grounded
successor function, on the same PDDL export and the same action sequences, in one run.

    python bench/executor.py [--sequences N]

Prints one line per reference, ours over theirs in attempts/s, e.g.
``unified-planning: 41.3x``. Ours always reports every failed check; the references
stop at the first (UP) or test a precomputed set (pyperplan).
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# This checkout's own package first (as bench/verify.py does): run from a worktree, the
# editable install would otherwise time another checkout's executor.
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from analysis.executor import Executor, Rules, World  # noqa: E402
from analysis.executor.pddl import decode_name, domain_pddl, encode_name, problem_pddl  # noqa: E402
from test_differential import (_up, random_action, random_world,  # noqa: E402
                               well_typed)

RULES = Rules.load()
EX = Executor(RULES)


def sequences(rng, n, length, world_fn):
    """(initial world, [well-typed actions]) pairs, generated once and shared."""
    out = []
    for _ in range(n):
        w0 = world_fn(rng)
        w, acts = w0, []
        for _ in range(length):
            a = random_action(rng, w, p_junk=0)
            if well_typed(w, a):
                acts.append(a)
                w = EX.apply(w, a).world
        out.append((w0, acts))
    return out


def time_ours(seqs, repeat=5):
    n = sum(len(a) for _, a in seqs) * repeat
    t = time.perf_counter()
    for _ in range(repeat):
        for w, acts in seqs:
            for a in acts:
                w = EX.apply(w, a).world
    return n / (time.perf_counter() - t)


def time_up(seqs):
    problem, sim, init, em, objs, actions, expr = _up()
    TRUE = em.TRUE()
    prepared = [(init.make_child({expr(x): TRUE for x in w.facts}),
                 [(actions[a["type"]], [em.ObjectExp(objs[x]) for x in a["args"]])
                  for a in acts]) for w, acts in seqs]
    n = sum(len(a) for _, a in prepared)
    t = time.perf_counter()
    for s, acts in prepared:
        for act, params in acts:
            if sim.is_applicable(s, act, params):
                s = sim.apply(s, act, params)
    return n / (time.perf_counter() - t)


SMALL = {"fridge": "fridge", "counter": "counter", "kitchen_sink": "kitchen_sink",
         "bottle": "bottle", "squash": "squash", "water": "water", "glass": "glass",
         "spoon": "spoon", "egg": "egg", "bowl": "bowl"}


def pyperplan_pair(rng, n_seq, length):
    """Sequences on a small grounded problem, as (our actions, pyperplan operators)."""
    from pyperplan.grounding import ground
    from pyperplan.pddl.parser import Parser
    import test_differential as td
    from types import MappingProxyType
    small = MappingProxyType(SMALL)
    w0 = td.random_world(rng, small)
    with tempfile.TemporaryDirectory() as d:
        dp, pp = Path(d, "d.pddl"), Path(d, "p.pddl")
        dp.write_text(domain_pddl(RULES, positive_only=True))
        pp.write_text(problem_pddl(RULES, w0, "small", positive_only=True))
        parser = Parser(str(dp), str(pp))
        # Keep every operator: the problem has no goal to be relevant to.
        task = ground(parser.parse_problem(parser.parse_domain()),
                      remove_irrelevant_operators=False)
    ops = {op.name: op for op in task.operators}

    def name(a):
        return "(" + " ".join([a["type"], *map(encode_name, a["args"])]) + ")"

    seqs = []
    for _ in range(n_seq):
        w, acts = w0, []
        for _ in range(length):
            a = random_action(rng, w, p_junk=0)
            # Only actions pyperplan grounded (it prunes statically impossible ones).
            if well_typed(w, a) and name(a) in ops:
                acts.append(a)
                w = EX.apply(w, a).world
        seqs.append((w0, acts))
    pp_seqs = [(task.initial_state, [ops[name(a)] for a in acts]) for _, acts in seqs]
    return seqs, pp_seqs


def time_pyperplan(pp_seqs, repeat=5):
    n = sum(len(a) for _, a in pp_seqs) * repeat
    t = time.perf_counter()
    for _ in range(repeat):
        for s, ops in pp_seqs:
            for op in ops:
                if op.applicable(s):
                    s = op.apply(s)
    return n / (time.perf_counter() - t)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sequences", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    rng = random.Random(1)
    seqs = sequences(rng, args.sequences, 10, random_world)
    small, pp = pyperplan_pair(rng, args.sequences, 10)
    n_attempts = sum(len(a) for _, a in seqs)
    # Interleave the measurements and take the median ratio over rounds: on a shared
    # machine the load drifts within a run, and alternating cancels most of the drift.
    up_ratios, pp_ratios = [], []
    for _ in range(args.rounds):
        ours, theirs = time_ours(seqs), time_up(seqs)
        ours_small, pyper = time_ours(small), time_pyperplan(pp)
        up_ratios.append(ours / theirs)
        pp_ratios.append(ours_small / pyper)
        print(f"# round: {n_attempts} attempts; ours {ours:,.0f}/s, unified-planning "
              f"{theirs:,.0f}/s; small grounded problem: ours {ours_small:,.0f}/s, "
              f"pyperplan {pyper:,.0f}/s")
    print(f"unified-planning: {statistics.median(up_ratios):.1f}x")
    print(f"pyperplan: {statistics.median(pp_ratios):.2f}x")


if __name__ == "__main__":
    main()

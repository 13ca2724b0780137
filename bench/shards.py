"""Throughput of sharded chat runs against a rate-limited loopback endpoint.

    python bench/shards.py [--groups 3441] [--calls-per-group 1] [--limit-rpm 3000]
        [--latency 0.1] [--threads 4] [--shards 1,2,4]

The server (``analysis.planners.llm.testserver`` on 127.0.0.1) answers every request
after ``--latency`` seconds and enforces the provider's limit itself: a token bucket of
``--limit-rpm`` per minute holding one second of requests (a provider's per-minute
window is far more lenient; one second absorbs a shard that wakes a little late on a
loaded machine); a request over the limit gets HTTP 429 with ``Retry-After: 1``, which
the client honours for every shard. The workload is the paper's scale in groups: ``--groups`` synthetic
groups (3,441 = one planner on the planner suite) in episodes of 12, each group making
``--calls-per-group`` sequential chat calls, so the calls of an episode are as
sequential as a real run's. Each shard is its own process (``shard=i/n`` splits the
episodes exactly as analysis.run does, :class:`analysis._runs.shards.Shard`) with
``--threads`` episodes at once, through the real client
(:class:`analysis.planners.llm.client.ChatClient`) with ``requests_per_minute`` set to
the provider's limit and one shared budget file (``rate_state``,
:mod:`analysis.planners.llm.ratelimit`).

Printed per shard count: calls/s achieved, its ratio to the limit over the whole run
(first to last accepted request: the shards' start-up and the last episodes' drain
included; the target, >= 0.9 once the shards saturate the limit, i.e. when shards x
threads / latency exceeds it, is checked on this one) and in the steady middle 80%,
429s received, and the check that no call was lost or duplicated: the server answered
every expected request exactly once with 200, and the merged records of the shards equal
those of a single process with the same replies (computed from the server's reply
function, no network). Then the projected wall time of the paper's full evaluation
(6 planners x 3,441 groups + 2 x 3,878 memory-study groups, ``--paper-calls-per-group``
calls each) at ``--project-rpm`` and ``--project-latency``, for 1 to 16 shards.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing as mp
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import socketserver  # noqa: E402

# http.server writes a reply's headers and body in two sends; with Nagle's algorithm and
# the client's delayed ACK every keep-alive reply then waits ~40 ms (measured: 47 ms per
# call at zero latency, 2 ms without). A real endpoint does not add that, so the bench's
# server sets TCP_NODELAY (the tests' server keeps its behaviour).
socketserver.StreamRequestHandler.disable_nagle_algorithm = True

from analysis.planners.llm.testserver import _PIECE, LoopbackServer, reply_for  # noqa: E402
from analysis._runs.shards import Shard  # noqa: E402

MODEL = "bench-model"
EPISODE = 12
PAPER_GROUPS = 6 * 3441 + 2 * 3878


def episodes(n_groups: int) -> list[list[int]]:
    """Group numbers per synthetic episode (12 groups each, the last one shorter)."""
    return [list(range(s, min(s + EPISODE, n_groups))) for s in range(0, n_groups, EPISODE)]


def messages(e: int, g: int, c: int) -> list[dict]:
    # the hint makes every reply distinct (reply_for answers with the first hint)
    return [{"role": "user", "content": f"Instruction: synthetic group {g} of episode {e}\n"
                                        f"Action hints: a{e}x{g}x{c}"}]


def body_of(e, g, c) -> dict:
    return {"model": MODEL, "messages": messages(e, g, c), "temperature": 0.0, "seed": 0,
            "max_tokens": 512}


def key_of(body) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def oracle(n_groups: int, calls: int) -> dict:
    """The records a single process gets with the server's replies (no network)."""
    out = {}
    for e, groups in enumerate(episodes(n_groups)):
        for g in groups:
            recs = []
            for c in range(calls):
                b = body_of(e, g, c)
                content = reply_for(b)
                prompt = " ".join(m["content"] for m in b["messages"])
                recs.append([content, len(_PIECE.findall(prompt)), len(_PIECE.findall(content))])
            out[str(g)] = recs
    return out


def shard_main(url, index, count, n_groups, calls, threads, rpm, rate_state, out_path):
    from analysis.planners.llm.client import ChatClient, ClientSettings
    client = ChatClient(ClientSettings(
        model=MODEL, base_url=url, cache_mode="off", timeout=30.0, max_retries=20,
        backoff_base=0.05, backoff_max=2.0, retry_budget=300.0, requests_per_minute=rpm,
        rate_state=rate_state))
    eps = episodes(n_groups)
    shard = Shard(index, count)
    records: dict = {}

    def run_episode(e):
        for g in eps[e]:
            recs = []
            for c in range(calls):
                done = client.complete(messages(e, g, c), tag=f"{e}/{g}/{c}")
                recs.append([done.text, done.prompt_tokens, done.completion_tokens])
            records[str(g)] = recs

    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(run_episode, shard.positions(len(eps))))
    Path(out_path).write_text(json.dumps(records))


class LimitedServer:
    """The loopback server with a token bucket (the provider's limit) and a tally of the
    200 replies per request body."""

    def __init__(self, rps: float, latency: float, burst: float | None = None):
        self.rps, self.burst = rps, max(2.0, rps if burst is None else burst)
        self.tokens, self.t = self.burst, time.monotonic()
        self.lock = threading.Lock()
        self.ok: dict[str, int] = {}
        self.rejected = 0
        self.times: list[float] = []
        self.srv = LoopbackServer(fault=self.fault, delay=latency, retry_after="1").start()

    def fault(self, body, attempt):
        with self.lock:
            now = time.monotonic()
            self.tokens = min(self.burst, self.tokens + (now - self.t) * self.rps)
            self.t = now
            if self.tokens < 1:
                self.rejected += 1
                return "429"
            self.tokens -= 1
            k = key_of(body)
            self.ok[k] = self.ok.get(k, 0) + 1
            self.times.append(now)
            return None


def measure(args, n_shards: int, want: dict) -> dict:
    rps = args.limit_rpm / 60.0
    server = LimitedServer(rps, args.latency)
    try:
        with tempfile.TemporaryDirectory(prefix="e2w_bench_shards_") as tmp:
            ctx = mp.get_context("spawn")
            outs = [Path(tmp) / f"shard{i}.json" for i in range(1, n_shards + 1)]
            procs = [ctx.Process(target=shard_main, args=(
                server.srv.url, i, n_shards, args.groups, args.calls_per_group, args.threads,
                args.limit_rpm, str(Path(tmp) / "rate"), str(outs[i - 1])))
                for i in range(1, n_shards + 1)]
            for p in procs:
                p.start()
            for p in procs:
                p.join()
            if any(p.exitcode for p in procs):
                raise SystemExit(f"a shard failed (exit codes {[p.exitcode for p in procs]})")
            merged: dict = {}
            duplicated_groups = 0
            for o in outs:
                part = json.loads(o.read_text())
                duplicated_groups += len(set(part) & set(merged))
                merged.update(part)
    finally:
        server.srv.stop()
    expected = {key_of(body_of(e, g, c))
                for e, gs in enumerate(episodes(args.groups)) for g in gs
                for c in range(args.calls_per_group)}
    n_ok = sum(server.ok.values())
    t = sorted(server.times)
    # the whole run: first to last accepted request (n_ok - 1 intervals), start-up of the
    # shard processes and the last episodes' drain included; steady: the middle 80% of
    # the accepted requests
    span = t[-1] - t[0]
    rate = (len(t) - 1) / span
    lo, hi = len(t) // 10, len(t) - 1 - len(t) // 10
    steady = (hi - lo) / (t[hi] - t[lo])
    return {"shards": n_shards, "calls": n_ok, "seconds": span, "calls_per_s": rate,
            "ratio": rate / rps, "steady_ratio": steady / rps,
            "rejected_429": server.rejected,
            "lost": len(expected - set(server.ok)),
            "duplicated": sum(1 for k, v in server.ok.items() if v > 1 or k not in expected)
            + duplicated_groups,
            "records_equal": merged == want,
            "saturating": n_shards * args.threads / args.latency > rps}


def fmt_hours(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="bench/shards.py", description=__doc__.split("\n")[0])
    ap.add_argument("--groups", type=int, default=3441)
    ap.add_argument("--calls-per-group", type=int, default=1)
    ap.add_argument("--limit-rpm", type=float, default=3000.0)
    ap.add_argument("--latency", type=float, default=0.1)
    ap.add_argument("--threads", type=int, default=4, help="episodes at once per shard (jobs=N)")
    ap.add_argument("--shards", default="1,2,4")
    ap.add_argument("--paper-calls-per-group", type=float, default=5.0)
    ap.add_argument("--project-rpm", type=float, default=500.0)
    ap.add_argument("--project-latency", type=float, default=5.0)
    args = ap.parse_args(argv)
    counts = [int(x) for x in args.shards.split(",")]
    want = oracle(args.groups, args.calls_per_group)
    print(f"{args.groups} groups x {args.calls_per_group} call(s) = "
          f"{args.groups * args.calls_per_group} calls per shard count; limit "
          f"{args.limit_rpm:g}/min ({args.limit_rpm / 60:g}/s), latency {args.latency:g} s, "
          f"{args.threads} threads per shard")
    print(f"{'shards':>6} {'calls/s':>8} {'ratio':>6} {'steady':>6} {'saturating':>10} {'429s':>5} "
          f"{'lost':>5} {'dup':>4} {'records':>8} {'seconds':>8}")
    results, ok = [], True
    for n in counts:
        r = measure(args, n, want)
        results.append(r)
        print(f"{r['shards']:>6} {r['calls_per_s']:>8.2f} {r['ratio']:>6.3f} "
              f"{r['steady_ratio']:>6.3f} "
              f"{str(r['saturating']):>10} {r['rejected_429']:>5} {r['lost']:>5} "
              f"{r['duplicated']:>4} {'equal' if r['records_equal'] else 'DIFFER':>8} "
              f"{r['seconds']:>8.1f}", flush=True)
        ok &= r["lost"] == 0 and r["duplicated"] == 0 and r["records_equal"]
        if r["saturating"]:
            ok &= r["ratio"] >= 0.9
    sat = [r["ratio"] for r in results if r["saturating"]]
    if sat:
        print(f"ratio to the limit once saturated: min {min(sat):.3f} over the whole run, "
              f"{min(r['steady_ratio'] for r in results if r['saturating']):.3f} steady "
              "(target >= 0.9)")
    calls = PAPER_GROUPS * args.paper_calls_per_group
    used = min(1.0, min(sat)) if sat else 1.0  # never project above the limit
    print(f"\nprojected wall time of the paper's evaluation ({PAPER_GROUPS:,} groups x "
          f"{args.paper_calls_per_group:g} calls = {calls:,.0f} calls) at "
          f"{args.project_rpm:g} requests/min and {args.project_latency:g} s per call, "
          f"{args.threads} threads per shard, using the measured saturated ratio "
          f"{used:.3f}:")
    for n in (1, 2, 4, 8, 16):
        limit = args.project_rpm / 60 * used
        rate = min(limit, n * args.threads / args.project_latency)
        print(f"  {n:>2} shard(s): {rate:7.2f} calls/s -> {fmt_hours(calls / rate)}"
              f"{' (limit-bound)' if rate == limit else ''}")
    print("OK" if ok else "FAILED: a lost or duplicated call, differing records, or a "
          "saturated ratio below 0.9")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""One requests-per-minute budget for every shard of a run (analysis/planners/llm/ratelimit.py).

Two limiters on one bucket file stand for two shard processes (they share nothing but
the file); a fake clock makes the spacing exact. Then two real processes: together they
cannot go faster than the limit, and a Retry-After seen by one pauses the other; and
the chat client defers its bucket on a 429. About 3 s.
"""
import multiprocessing as mp
import time

import pytest

from analysis.planners.llm.ratelimit import SharedRateLimiter, bucket_path


class Clock:
    def __init__(self):
        self.t = 1_000_000.0

    def __call__(self):
        return self.t

    def sleep(self, s):
        self.t += s


def test_two_shards_on_one_file_share_the_spacing_exactly(tmp_path):
    clock = Clock()
    a = SharedRateLimiter(tmp_path, "http://127.0.0.1:1/v1", "m", rpm=120, clock=clock)
    b = SharedRateLimiter(tmp_path, "http://127.0.0.1:1/v1", "m", rpm=120, clock=clock)
    waits = []
    for lim in (a, b, a, b):  # no sleeping between: each slot is 0.5 s after the last
        lim.acquire(sleep=waits.append)
    assert waits == [0.5, 1.0, 1.5]  # the first slot starts at once
    b.defer(10.0)  # a 429 with Retry-After: 10 seen by shard b ...
    a.acquire(sleep=waits.append)
    assert waits[-1] == 10.0  # ... holds shard a too
    other = SharedRateLimiter(tmp_path, "http://127.0.0.1:1/v1", "other-model", rpm=120,
                              clock=clock)
    got = []
    other.acquire(sleep=got.append)
    assert got == []  # another model has its own budget
    assert bucket_path(tmp_path, "http://127.0.0.1:1/v1", "m") != other.path


def test_a_damaged_or_planted_bucket_file(tmp_path):
    clock = Clock()
    lim = SharedRateLimiter(tmp_path, "u", "m", rpm=60, clock=clock)
    lim.path.write_bytes(b"\xff" * 8)  # NaN: forgotten, not a wait of forever
    waits = []
    lim.acquire(sleep=waits.append)
    assert waits == []
    lim.path.unlink()
    lim.path.symlink_to(tmp_path / "elsewhere")
    from analysis._fs.confine import ConfinementError
    with pytest.raises(ConfinementError, match="symlink"):
        lim.acquire()
    with pytest.raises(ValueError, match="requests_per_minute"):
        SharedRateLimiter(tmp_path, "u", "m", rpm=0)


def _shard(folder, n, rpm, out):
    lim = SharedRateLimiter(folder, "http://127.0.0.1:1/v1", "m", rpm=rpm)
    starts = []
    for _ in range(n):
        lim.acquire()
        starts.append(time.time())
    out.put(starts)


def _two_processes(tmp_path, n, rpm):
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_shard, args=(str(tmp_path), n, rpm, out)) for _ in (0, 1)]
    t0 = time.time()
    for p in procs:
        p.start()
    starts = sorted(out.get(timeout=60) + out.get(timeout=60))
    for p in procs:
        p.join(timeout=30)
    return t0, starts


def test_two_processes_together_stay_within_the_limit(tmp_path):
    n, rpm = 15, 3000  # 20 ms apart: 30 starts take >= 29 intervals together
    _, starts = _two_processes(tmp_path, n, rpm)
    assert starts[-1] - starts[0] >= (2 * n - 1) * 60 / rpm * 0.95
    # and each start has its own slot: no two closer than one interval less the sleep's
    # wake-up jitter
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    assert sum(g < 0.5 * 60 / rpm for g in gaps) <= 2


def test_retry_after_in_one_process_pauses_the_others(tmp_path):
    # this process saw a 429 with Retry-After: 1.5 just before two other shards start
    SharedRateLimiter(tmp_path, "http://127.0.0.1:1/v1", "m", rpm=6000).defer(1.5)
    t0, starts = _two_processes(tmp_path, 2, 6000)
    assert starts[0] - t0 >= 1.5 - 0.05  # neither started before the pause ended


def test_the_chat_client_defers_the_shared_bucket_on_retry_after(tmp_path):
    pytest.importorskip("openai")
    from analysis.planners.llm.client import ChatClient, ClientSettings
    from analysis.planners.llm.testserver import LoopbackServer
    srv = LoopbackServer(fault=lambda body, n: "429" if n == 0 else None,
                         retry_after="0.4").start()
    try:
        s = ClientSettings(model="toy", base_url=srv.url, cache_mode="off", timeout=5,
                           backoff_base=0.01, backoff_max=0.05, requests_per_minute=60000,
                           rate_state=str(tmp_path / "rate"))
        slept = []
        out = ChatClient(s, sleep=slept.append).complete(
            [{"role": "user", "content": "Action hints: stir"}])
        assert out.retries == 1 and slept and slept[0] >= 0.4
        # a sibling shard's next slot is now after the pause
        sib = SharedRateLimiter(tmp_path / "rate", srv.url, "toy", rpm=60000)
        waits = []
        sib.acquire(sleep=waits.append)
        assert waits and 0.2 < waits[0] <= 0.45
    finally:
        srv.stop()

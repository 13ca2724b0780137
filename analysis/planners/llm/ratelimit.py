"""A requests-per-minute budget shared by every process of a run (shards, nodes, threads).

The budget lives in one small file (``<rate_state>/<endpoint>.bucket``, one per endpoint
URL and model) that holds the earliest time the next request may start. Taking a slot is
a read-modify-write under an exclusive ``flock`` of that file: ``start = max(now,
next)``, ``next = start + 60 / rpm``; the caller then sleeps until ``start``. So however
many shards and threads share the file, request starts are at least ``60 / rpm``
seconds apart: N shards never exceed the provider's limit together, and once they
saturate it they use all of it (no shard idles while another has budget). A server's
``Retry-After`` pushes ``next`` forward for everyone (:meth:`SharedRateLimiter.defer`),
so one shard's 429 pauses all of them.

Times are wall-clock (``time.time``): processes on different nodes share no monotonic
clock, and cluster nodes keep their clocks in step (NTP). ``flock`` needs a filesystem
with working POSIX locks, as the export lock does (docs/llm.md "On a cluster").

>>> import tempfile
>>> lim = SharedRateLimiter(tempfile.mkdtemp(), "http://127.0.0.1:1/v1", "m", rpm=600)
>>> waits = []
>>> for _ in range(3):
...     lim.acquire(sleep=waits.append)
>>> len(waits), all(0.05 < w <= 0.2 for w in waits[1:])
(2, True)
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import stat
import struct
import time
from pathlib import Path
from typing import Callable

__all__ = ["SharedRateLimiter", "bucket_path"]

_FMT = "<d"  # the next allowed start, seconds since the epoch


def bucket_path(rate_state: str | os.PathLike, base_url: str, model: str) -> Path:
    """The bucket file of one endpoint and model."""
    digest = hashlib.sha256(f"{base_url}\0{model}".encode()).hexdigest()[:16]
    return Path(rate_state) / f"{digest}.bucket"


def _say(msg: str) -> None:
    import sys
    print(f"[chat] {msg}", file=sys.stderr, flush=True)


class SharedRateLimiter:
    """Request starts spaced ``60 / rpm`` seconds apart across processes.

    ``horizon`` (the client's ``retry_budget``): a budget file holding a start further
    ahead than that was not written by a client of this run (planted, or left by a
    server's absurd ``Retry-After`` before this check existed); it is reset, with a
    warning naming it (``say``), instead of stalling every shard.
    """

    def __init__(self, rate_state: str | os.PathLike, base_url: str, model: str, rpm: float,
                 clock: Callable[[], float] = time.time, horizon: float = 86400.0,
                 say: Callable[[str], None] = _say):
        if not rpm or rpm <= 0:
            raise ValueError(f"requests_per_minute={rpm!r}: expected > 0")
        self.path = bucket_path(rate_state, base_url, model)
        self.interval = 60.0 / float(rpm)
        self.clock = clock
        self.horizon = float(horizon)
        self.say = say

    def _update(self, fn: Callable[[float, float], tuple[float, float]]) -> float:
        """Under the lock: ``(next, now) -> (new next, result)``; returns the result."""
        from analysis._fs.confine import open_state, state_folder
        state_folder(self.path.parent, "the rate-limit folder")
        fd = open_state(self.path, os.O_RDWR | os.O_CREAT, "the rate-limit file")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                raw = os.pread(fd, 8, 0)
                nxt = struct.unpack(_FMT, raw)[0] if len(raw) == 8 else 0.0
                now = self.clock()
                if not (nxt == nxt):  # NaN: damaged
                    nxt = 0.0
                if nxt > now + self.horizon + self.interval:
                    self.say(f"the rate-limit file {self.path} holds a start "
                             f"{nxt - now:.0f} s ahead, more than retry_budget="
                             f"{self.horizon:g} s (planted or stale): reset")
                    nxt = 0.0
                new, result = fn(nxt, now)
                if new != nxt or len(raw) != 8:
                    os.pwrite(fd, struct.pack(_FMT, new), 0)
                return result
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def reserve(self, budget: float | None = None) -> float | None:
        """Take the next slot and return the wait until it starts, or ``None`` (no slot
        taken, the file unchanged) when that wait would exceed ``budget`` seconds."""
        def take(nxt, now):
            start = max(now, nxt)
            if budget is not None and start - now > budget:
                return nxt, None
            return start + self.interval, start - now
        return self._update(take)

    def acquire(self, sleep: Callable[[float], None] = time.sleep) -> None:
        """Take the next slot and sleep until it starts."""
        wait = self.reserve()
        if wait > 0:
            sleep(wait)

    def defer(self, seconds: float) -> None:
        """No request of any process starts before ``seconds`` from now (Retry-After)."""
        self._update(lambda nxt, now: (max(nxt, now + float(seconds)), 0.0))

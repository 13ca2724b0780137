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


class SharedRateLimiter:
    """Request starts spaced ``60 / rpm`` seconds apart across processes."""

    def __init__(self, rate_state: str | os.PathLike, base_url: str, model: str, rpm: float,
                 clock: Callable[[], float] = time.time):
        if not rpm or rpm <= 0:
            raise ValueError(f"requests_per_minute={rpm!r}: expected > 0")
        self.path = bucket_path(rate_state, base_url, model)
        self.interval = 60.0 / float(rpm)
        self.clock = clock

    def _update(self, fn: Callable[[float, float], tuple[float, float]]) -> float:
        """Under the lock: ``(next, now) -> (new next, result)``; returns the result."""
        from analysis.confine import ConfinementError, disk_error
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
                         | getattr(os, "O_CLOEXEC", 0), 0o644)
        except OSError as exc:
            if self.path.is_symlink():
                raise ConfinementError(f"{self.path}: the rate-limit file is a symlink; "
                                       "remove it") from None
            raise disk_error(self.path, exc, "the run stops (a local fault)") from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise ConfinementError(f"{self.path}: the rate-limit file is not a regular "
                                       "file; remove it")
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                raw = os.pread(fd, 8, 0)
                nxt = struct.unpack(_FMT, raw)[0] if len(raw) == 8 else 0.0
                now = self.clock()
                if not (nxt == nxt) or nxt > now + 86400:  # NaN or a day ahead: damaged
                    nxt = 0.0
                new, result = fn(nxt, now)
                os.pwrite(fd, struct.pack(_FMT, new), 0)
                return result
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def acquire(self, sleep: Callable[[float], None] = time.sleep) -> None:
        """Take the next slot and sleep until it starts."""
        def take(nxt, now):
            start = max(now, nxt)
            return start + self.interval, start - now
        wait = self._update(take)
        if wait > 0:
            sleep(wait)

    def defer(self, seconds: float) -> None:
        """No request of any process starts before ``seconds`` from now (Retry-After)."""
        self._update(lambda nxt, now: (max(nxt, now + float(seconds)), 0.0))

"""Kill a command at a chosen moment of its work (the crash-and-resume tests)."""
from __future__ import annotations

import os
import signal
import time


def kill_when(proc, ready, timeout: float = 120.0, poll: float = 0.01) -> None:
    """SIGKILL ``proc`` as soon as ``ready()`` is true, or when it has exited by itself or
    ``timeout`` seconds have passed (the caller's assertions then say which)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not ready():
        if proc.poll() is not None:
            break
        time.sleep(poll)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)

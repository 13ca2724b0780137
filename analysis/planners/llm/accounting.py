"""Per-call accounting of a chat run and its summary.

Every call (network or cache) appends one JSON line: ``call`` (the view key
``episode/group/call``), ``key`` (cache key prefix), ``model``, ``cached``, ``retries``,
``latency_s``, ``prompt_tokens`` / ``completion_tokens`` as the endpoint's ``usage``
reported them (the endpoint's own tokenizer: not comparable with the word-piece counts
of :func:`analysis.executor.protocol.count_tokens`), and ``error``. Latencies are
wall-clock and vary between runs, which is why they live here and not in the records.

``python -m analysis.planners.llm.accounting CALL_LOG [PRICES.yaml]`` prints the summary;
a price table maps model -> ``{prompt_per_1k, completion_per_1k}`` (any currency) and adds
a ``cost`` column.

>>> summarize([{"model": "m", "cached": False, "retries": 2, "latency_s": 1.5,
...             "prompt_tokens": 1000, "completion_tokens": 10, "error": None}],
...           {"m": {"prompt_per_1k": 0.5, "completion_per_1k": 2.0}})["cost"]
0.52
"""
from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path
from typing import Iterable, Mapping

__all__ = ["CallLog", "read_calls", "summarize", "read_price_table"]


#: A call log is one short line a call; more than this is not one we wrote.
MAX_CALL_LOG_BYTES = 1 << 30


class CallLog:
    """Append-only JSON lines, safe across threads (one lock) and processes (one
    ``O_APPEND`` write per line). The log and its folder are state: a symlink, FIFO or
    device in their place is refused naming it (:mod:`analysis._fs.confine`)."""

    _locks: dict = {}

    def __init__(self, path: str | os.PathLike):
        from analysis._fs.confine import state_folder
        self.path = Path(path)
        state_folder(self.path.parent, "the call-log folder")
        self.lock = CallLog._locks.setdefault(str(self.path), threading.Lock())

    def add(self, entry: Mapping) -> None:
        from analysis._fs.confine import DiskError, disk_error, open_state, state_folder
        line = (json.dumps(entry, sort_keys=True, separators=(",", ":")) + "\n").encode()
        with self.lock:
            state_folder(self.path.parent, "the call-log folder")
            # never through a symlink, never into a FIFO or device
            fd = open_state(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, "the call log")
            try:
                os.write(fd, line)
            except OSError as exc:
                if isinstance(exc, DiskError):
                    raise
                raise disk_error(self.path, exc, "the run stops (a local fault)") from None
            finally:
                os.close(fd)


def read_calls(path: str | os.PathLike) -> list[dict]:
    """The entries of a call log (none when it is absent); a symlink, FIFO, device or a
    file over :data:`MAX_CALL_LOG_BYTES` is refused naming it, never read."""
    from analysis._fs.confine import read_regular
    p = Path(path)
    if not os.path.lexists(p):
        return []
    raw = read_regular(p, f"the call log {p}", limit=MAX_CALL_LOG_BYTES)
    return [json.loads(line) for line in raw.decode("utf-8").splitlines() if line]


def summarize(calls: Iterable[Mapping], prices: Mapping | None = None) -> dict:
    """Totals over ``calls``; ``cost`` only with a price table covering every model."""
    calls = list(calls)
    net = [c for c in calls if not c.get("cached")]
    lat = sorted(c["latency_s"] for c in net if c.get("error") is None)
    out = {
        "calls": len(calls), "cache_hits": sum(1 for c in calls if c.get("cached")),
        "network_calls": len(net), "retries": sum(int(c.get("retries") or 0) for c in calls),
        "errors": sum(1 for c in calls if c.get("error")),
        "prompt_tokens_endpoint": sum(int(c.get("prompt_tokens") or 0) for c in calls),
        "completion_tokens_endpoint": sum(int(c.get("completion_tokens") or 0) for c in calls),
        "latency_s_total": round(sum(lat), 3),
        "latency_s_median": round(lat[len(lat) // 2], 3) if lat else None,
        "latency_s_max": round(lat[-1], 3) if lat else None,
    }
    if prices is not None:
        cost = 0.0
        for c in calls:
            p = prices.get(c.get("model"))
            if p is None:
                raise ValueError(f"price table: no entry for model {c.get('model')!r}")
            cost += (int(c.get("prompt_tokens") or 0) * float(p["prompt_per_1k"])
                     + int(c.get("completion_tokens") or 0) * float(p["completion_per_1k"])) / 1000
        out["cost"] = round(cost, 6)
    return out


def read_price_table(path) -> dict:
    """The price table at ``path`` (a small YAML file; a FIFO, device or a file over
    1 MB is refused naming it)."""
    import yaml

    from analysis._fs.confine import read_regular
    return yaml.safe_load(read_regular(Path(path), f"the price table {path}", limit=1 << 20))


def main(argv: list[str] | None = None) -> int:
    """``python -m analysis.planners.llm.accounting CALL_LOG [PRICES.yaml]`` (``--help``:
    the usage); a call log that does not exist is refused, never summarized as zeros."""
    import argparse
    ap = argparse.ArgumentParser(
        prog="python -m analysis.planners.llm.accounting",
        description="Summarize a chat run's call log (its planner.settings.call_log): calls, "
                    "cache hits, retries, errors, endpoint token counts and latencies; with a "
                    "price table, the cost.")
    ap.add_argument("call_log", metavar="CALL_LOG", help="the run's call log (JSON lines)")
    ap.add_argument("prices", metavar="PRICES.yaml", nargs="?", default=None,
                    help="model: {prompt_per_1k, completion_per_1k} (adds a cost)")
    args = ap.parse_args(sys.argv[1:] if argv is None else argv)
    for what, path in (("CALL_LOG", args.call_log), ("PRICES.yaml", args.prices)):
        if path is not None and not Path(path).is_file():
            print(f"analysis.planners.llm.accounting: {what} {path}: no such file (give the "
                  "run's planner.settings.call_log)" if what == "CALL_LOG" else
                  f"analysis.planners.llm.accounting: {what} {path}: no such file",
                  file=sys.stderr)
            return 2
    prices = None
    if args.prices is not None:
        prices = read_price_table(args.prices)
    print(json.dumps(summarize(read_calls(args.call_log), prices), indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())

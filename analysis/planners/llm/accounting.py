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

__all__ = ["CallLog", "read_calls", "summarize"]


class CallLog:
    """Append-only JSON lines, safe across threads (one lock) and processes (one
    ``O_APPEND`` write per line)."""

    _locks: dict = {}

    def __init__(self, path: str | os.PathLike):
        from analysis.confine import disk_error
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise disk_error(self.path, exc, "the run stops (a local fault)") from None
        self.lock = CallLog._locks.setdefault(str(self.path), threading.Lock())

    def add(self, entry: Mapping) -> None:
        from analysis.confine import disk_error
        line = (json.dumps(entry, sort_keys=True, separators=(",", ":")) + "\n").encode()
        with self.lock:
            try:  # never through a symlink, never into a FIFO or device
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW
                             | os.O_NONBLOCK, 0o644)
            except OSError as exc:
                raise disk_error(self.path, exc, "the run stops (a local fault)") from None
            try:
                import stat
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    raise disk_error(self.path, OSError(21, "not a regular file"),
                                     "the run stops (a local fault)")
                os.write(fd, line)
            except OSError as exc:
                if isinstance(exc, __import__("analysis.confine").confine.DiskError):
                    raise
                raise disk_error(self.path, exc, "the run stops (a local fault)") from None
            finally:
                os.close(fd)


def read_calls(path: str | os.PathLike) -> list[dict]:
    p = Path(path)
    if not p.exists():
        return []
    return [json.loads(line) for line in p.read_text(encoding="utf-8").splitlines() if line]


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
        import yaml
        prices = yaml.safe_load(Path(args.prices).read_text())
    print(json.dumps(summarize(read_calls(args.call_log), prices), indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Content-addressed record and replay of chat requests.

The key is the SHA-256 of the canonical JSON of what determines a reply: model,
messages and parameters (temperature, seed, max_tokens, response_format). The endpoint
URL and the API key are not part of it (the key is never written anywhere). A stored
entry holds the request and the reply's content and ``usage``; replaying it gives the
same records without the provider.

>>> k = request_key({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
>>> len(k), k == request_key({"messages": [{"role": "user", "content": "hi"}], "model": "m"})
(64, True)
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Mapping

__all__ = ["request_key", "ResponseCache", "CacheError", "CACHE_MODES"]

#: ``readwrite``: use hits, store misses; ``replay``: hits only, a miss is a provider
#: error (no network at all); ``off``: neither read nor write.
CACHE_MODES = ("readwrite", "replay", "off")


def _canonical(obj) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def request_key(request: Mapping) -> str:
    """SHA-256 hex of the canonical JSON of ``request``."""
    return hashlib.sha256(_canonical(request)).hexdigest()


from analysis._fs.atomic import atomic_write
from analysis._fs.confine import DiskError


class CacheError(DiskError):
    """The cache folder cannot be read or written (a file in its place, permissions, a
    full disk): a local fault that stops the run, never a planner failure."""


def _entry_sha(key: str, request, response) -> str:
    return hashlib.sha256(_canonical({"key": key, "request": request,
                                      "response": response})).hexdigest()


class ResponseCache:
    """``<dir>/<key[:2]>/<key>.json``; writes are atomic (temp file + rename), so
    concurrent writers of one key leave one whole entry (both hold the same request).
    Entries are not fsynced: one fsync per model call made chat runs disk-bound, and an
    entry torn by a power loss fails its own hash on read and is a miss (asked again).

    Entries are content-addressed and checked on read: the key is re-derived from the
    stored request, and the entry's ``sha256`` (over key, request and response) must
    match; anything else (another request's body, an edited reply, a truncated file) is
    a miss, never a reply. A symlink, FIFO or device in place of an entry is a miss too
    and is never opened for reading in a way that could block.
    """

    def __init__(self, directory: str | os.PathLike):
        self.dir = Path(directory)

    def _path(self, key: str) -> Path:
        return self.dir / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict | None:
        from analysis._fs.confine import ConfinementError, read_regular
        p = self._path(key)
        try:
            raw = read_regular(p, limit=64 << 20)
        except FileNotFoundError:
            return None
        except ConfinementError:
            return None  # a planted symlink / FIFO / device: a miss (replaced on put)
        except NotADirectoryError:
            return None
        except OSError as exc:
            raise CacheError(exc.errno, f"cannot read the cache entry {p}: "
                                        f"{exc.strerror}") from None
        try:
            entry = json.loads(raw.decode("utf-8"))
            request, response = entry["request"], entry["response"]
        except (ValueError, KeyError, TypeError):
            return None
        if (entry.get("key") != key or request_key(request) != key
                or entry.get("sha256") != _entry_sha(key, request, response)
                or not isinstance(response, dict)):
            return None
        return response

    def put(self, key: str, request: Mapping, response: Mapping) -> None:
        from analysis._fs.confine import disk_error
        p = self._path(key)
        if request_key(request) != key:
            raise ValueError(f"cache key {key[:12]} is not the key of the request")
        entry = {"key": key, "request": request, "response": response,
                 "sha256": _entry_sha(key, request, response)}
        try:
            if p.parent.is_symlink():
                raise NotADirectoryError(20, "a symlink in place of a cache folder")
            p.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(p, _canonical(entry), prefix=f".{key[:8]}.")
        except OSError as exc:
            err = disk_error(p, exc, "the run stops (a local fault, not a planner failure)")
            raise CacheError(err.errno, err.strerror) from None

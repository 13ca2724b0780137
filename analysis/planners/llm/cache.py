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
import tempfile
from pathlib import Path
from typing import Mapping

__all__ = ["request_key", "ResponseCache", "CACHE_MODES"]

#: ``readwrite``: use hits, store misses; ``replay``: hits only, a miss is a provider
#: error (no network at all); ``off``: neither read nor write.
CACHE_MODES = ("readwrite", "replay", "off")


def _canonical(obj) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def request_key(request: Mapping) -> str:
    """SHA-256 hex of the canonical JSON of ``request``."""
    return hashlib.sha256(_canonical(request)).hexdigest()


class ResponseCache:
    """``<dir>/<key[:2]>/<key>.json``; writes are atomic (temp file + rename)."""

    def __init__(self, directory: str | os.PathLike):
        self.dir = Path(directory)

    def _path(self, key: str) -> Path:
        return self.dir / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict | None:
        p = self._path(key)
        try:
            entry = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return entry.get("response") if entry.get("key") == key else None

    def put(self, key: str, request: Mapping, response: Mapping) -> None:
        p = self._path(key)
        p.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{key[:8]}.", dir=p.parent)
        with os.fdopen(fd, "wb") as fh:
            fh.write(_canonical({"key": key, "request": request, "response": response}))
        os.replace(tmp, p)

"""Canonical JSON and SHA-256 record hashes (docs/FORMAT.md, "Conventions").

A record's hash is over its canonical JSON: keys sorted, no insignificant whitespace,
UTF-8 with non-ASCII kept, integers exact, floats in Python's shortest round-trip form,
NaN and infinities rejected.

>>> canonical_json({"b": 1, "a": [1.5, "é"]})
b'{"a":[1.5,"\\xc3\\xa9"],"b":1}'
>>> sha256_record({"a": 1})[:12]
'015abd7f5cc5'
"""
from __future__ import annotations

import hashlib
import json
from typing import Any

__all__ = ["canonical_json", "sha256_bytes", "sha256_record", "sha256_file"]


def canonical_json(obj: Any) -> bytes:
    """Serialise ``obj`` as canonical JSON bytes; raises ``ValueError`` on NaN/inf."""
    return json.dumps(
        obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_record(obj: Any) -> str:
    """SHA-256 hex digest of the canonical JSON of ``obj``."""
    return hashlib.sha256(canonical_json(obj)).hexdigest()


def sha256_file(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()

"""Readers of HD-EPIC's noun and verb class tables (paper section 3: the source verb and
noun classes the vocabulary maps; narrations-and-action-segments)."""
from __future__ import annotations

import ast
import csv
from dataclasses import dataclass
from pathlib import Path

from .source import _names_record, NOUN_CLASSES, SourceError, VERB_CLASSES


@dataclass(frozen=True)
class ClassTable:
    """Noun or verb classes: ``key -> category`` and ``instance -> key`` (first class wins)."""
    category: dict
    instance_to_key: dict
    instances: dict            # key -> tuple of instances


@_names_record
def read_classes(root: Path, rel: str) -> ClassTable:
    path = Path(root) / rel
    category, inst, instances = {}, {}, {}
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
    except FileNotFoundError:
        raise SourceError(f"{path}: missing") from None
    # Sorted by numeric class id: lower ids are the more frequent classes, so an instance
    # listed under several classes resolves to the most common one (deterministically).
    for line, row in sorted(enumerate(rows, 2), key=lambda r: int(r[1].get("id") or 0)):
        key = (row.get("key") or "").strip()
        if not key:
            raise SourceError(f"{path}: line {line}: field key empty")
        category[key] = (row.get("category") or "").strip()
        try:
            items = ast.literal_eval(row.get("instances") or "[]")
        except (ValueError, SyntaxError):
            raise SourceError(f"{path}: line {line} ({key}): field instances unparseable") from None
        instances[key] = tuple(str(i) for i in items)
        for i in items:
            inst.setdefault(str(i).strip().lower(), key)
        inst.setdefault(key.lower(), key)
    return ClassTable(category, inst, instances)


def read_noun_classes(root: Path) -> ClassTable:
    return read_classes(root, NOUN_CLASSES)


def read_verb_classes(root: Path) -> ClassTable:
    return read_classes(root, VERB_CLASSES)

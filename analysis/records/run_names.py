"""Naming a run: one rule, and one resolution with "did you mean".

A run ID is ``<name>__<suite>__<memory>``, where ``<name>`` is the run's name: the
``run_name=`` it was given (``analysis.run``; ``name=`` of ``analysis.add_planner``), else
the planner's name: the name of its ``configs/planner/<name>.yaml`` for a built-in planner
(``planner=chat_schema`` runs as ``chat_schema__planner__persistent``), the class's
``name`` for an import path.
Wherever a command or the API takes a run (``reexecute run=...``,
:meth:`analysis.Export.group_records_of`), it takes a run ID or a run name (a planner's
name, for a run not named apart from its planner);
:func:`resolve_run` turns that into run IDs, or refuses with the closest names. It reads
only the manifest, so a misspelt name is refused before any verification.

>>> resolve_run("belief_search__memory__reset", ["belief_search__memory__reset"])
['belief_search__memory__reset']
>>> resolve_run("belief_serch", ["belief_search__memory__reset"])
Traceback (most recent call last):
...
ValueError: run='belief_serch': no such run ID or planner; did you mean belief_search? (runs: belief_search__memory__reset)
"""
from __future__ import annotations

import difflib
from pathlib import Path

from .manifest import read_manifest

__all__ = ["run_id", "resolve_run", "manifest_run_ids", "RunExists", "check_run_absent"]


def run_id(planner: str, suite: str, memory: str) -> str:
    """The run ID of ``planner`` on ``suite`` under ``memory``.

    >>> run_id("lexicon", "planner", "persistent")
    'lexicon__planner__persistent'
    """
    return f"{planner}__{suite}__{memory}"


def _planner_of(rid: str) -> str:
    return rid.split("__", 1)[0]


def resolve_run(name: str, run_ids, key: str = "run") -> list[str]:
    """The run IDs ``name`` denotes: itself if it is a run ID, else every run of the
    planner ``name``. Raises ``ValueError`` naming ``key``, the closest run ID or planner
    name, and every run."""
    ids = sorted(set(run_ids))
    if name in ids:
        return [name]
    of_planner = [r for r in ids if _planner_of(r) == name]
    if of_planner:
        return of_planner
    names = sorted(set(ids) | {_planner_of(r) for r in ids})
    # '-' and '_' are the usual slip between a file name and a planner name
    alt = name.replace("-", "_") if "-" in name else name.replace("_", "-")
    close = [alt] if alt in names else difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]}?" if close else ""
    shown = ", ".join(ids) if ids else "none"
    raise ValueError(f"{key}={name!r}: no such run ID or planner{hint} (runs: {shown})")


def manifest_run_ids(export_root) -> list[str]:
    """The run IDs an export's ``MANIFEST.json`` lists (no verification; an unreadable
    manifest gives ``[]``, and verification then names the problem)."""
    try:
        files = read_manifest(Path(export_root)).get("files", {})
    except (OSError, ValueError):
        return []
    return sorted({rel.split("/")[1] for rel, e in files.items()
                   if isinstance(e, dict) and e.get("record_type") == "run"
                   and rel.startswith("runs/") and rel.count("/") == 2})


class RunExists(ValueError):
    """The export already holds the run (replace it with ``overwrite=True``)."""


def check_run_absent(root: Path, rid: str) -> None:
    """Refuse to replace an existing run (raises :class:`RunExists`)."""
    prefix = f"runs/{rid}/"
    listed = any(k.startswith(prefix) for k in read_manifest(root).get("files", {}))
    if listed or (root / "runs" / rid).exists():
        raise RunExists(f"{root / 'runs' / rid} already exists; pass overwrite=true to "
                        "replace it")

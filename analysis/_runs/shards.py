"""Sharded runs: one run split by episode into ``n`` jobs, registered once when all are done.

``python -m analysis.run ... shard=i/n`` (``i`` from 1 to ``n``) runs only the episodes
whose position in the suite's episode list ``p`` has ``p % n == i - 1``; every other
setting is the run's own, so all shards of a run share one resume journal
(:class:`analysis._runs.journal.RunJournal`, keyed by everything that determines the records).
Each shard writes its finished episodes there (atomically, one file per episode) and,
when it has all of its own, a marker ``shards/<n>/<i>.json``. Episodes are the unit
because the world carries over between the groups of an episode.

Then the shard tries to register the run: it reads every other episode of the suite back
from the journal, each one *verified* by re-executing it from the cohort with its own
journaled planner replies (nothing in the journal is trusted, see
:class:`~analysis._runs.journal.RunJournal`). If any episode is missing, nothing is written
to the export and the shard says which shards have yet to finish (:class:`ShardOutcome`,
``waiting_for``); if all are there, it takes the export lock (:mod:`analysis._fs.locking`)
and registers the run in one journaled transaction, exactly as an unsharded run would:
the records are assembled in suite order from the same per-episode results, so the
export gets the same bytes as ``shard=null`` (tested byte for byte). So the last shard to
finish registers the run, once; a shard that failed (a provider error, a killed node)
leaves the export unchanged, and rerunning only that shard completes the run (its
finished episodes are resumed, the other shards' work is not touched). A shard rerun
after the run was registered by its siblings says so and exits 0 (a ``.registered.json``
stamp beside the journal, checked against the manifest).

Every path here is under the run's ``state_dir``, which must be one folder that all
shards see (a shared filesystem on a cluster; docs/llm.md "On a cluster").

>>> s = parse_shard("2/3"); (s.index, s.count, s.positions(7))
(2, 3, [1, 4])
>>> parse_shard(None) is None
True
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from .._fs.atomic import atomic_write

__all__ = ["Shard", "parse_shard", "ShardJournal", "ShardOutcome", "finish_shard",
           "registered_stamp", "shard_call_log", "launcher_environment", "prepare_launcher",
           "ray_token_path",
           "unregistered_runs"]

_SHARD = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")
#: More shards than this is a typo (a suite has a few hundred episodes at most).
MAX_SHARDS = 4096


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` (1-based) of ``count``."""

    index: int
    count: int

    def __post_init__(self):
        if not (1 <= self.count <= MAX_SHARDS and 1 <= self.index <= self.count):
            raise ValueError(f"shard={self.index}/{self.count}: expected i/n with "
                             f"1 <= i <= n <= {MAX_SHARDS}, e.g. shard=1/4")

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def positions(self, n_episodes: int) -> list[int]:
        """The positions (0-based, in the suite's episode order) this shard runs."""
        return [p for p in range(n_episodes) if p % self.count == self.index - 1]

    def owner(self, position: int) -> int:
        """The shard index (1-based) that runs episode ``position``."""
        return position % self.count + 1


def parse_shard(text) -> Shard | None:
    """``"i/n"`` -> :class:`Shard`; ``None`` (or ``"null"``) -> ``None``; anything else is
    a ``ValueError`` naming ``shard`` and the expected form."""
    if text is None or (isinstance(text, str) and text.strip().lower() in ("", "null", "none")):
        return None
    m = _SHARD.fullmatch(str(text))
    if not m:
        raise ValueError(f"shard={text!r}: expected i/n (shard i of n, 1 <= i <= n), "
                         "e.g. shard=1/4, or null for an unsharded run")
    return Shard(int(m.group(1)), int(m.group(2)))


def shard_call_log(call_log: str, shard: Shard) -> str:
    """A shard's own call log beside the run's (shards on several nodes must not rotate
    or interleave one file): ``calls/x.jsonl`` -> ``calls/x.shard-2-of-4.jsonl``.

    >>> shard_call_log("/s/calls/chat__planner__persistent.jsonl", Shard(2, 4))
    '/s/calls/chat__planner__persistent.shard-2-of-4.jsonl'
    """
    p = Path(call_log)
    return str(p.with_name(f"{p.stem}.shard-{shard.index}-of-{shard.count}{p.suffix}"))


class ShardJournal:
    """The run's journal seen through one shard: ``run_episodes`` numbers the shard's
    episodes 0..k-1, the journal keeps suite positions, so entries are interchangeable
    between shards, shard counts and unsharded reruns."""

    def __init__(self, journal, shard: Shard, positions: Sequence[int]):
        self.journal = journal
        self.shard = shard
        self.positions = list(positions)
        self.dir = journal.dir

    def load(self, i: int, episode_id: str):
        return self.journal.load(self.positions[i], episode_id)

    def save(self, i: int, episode_id: str, result) -> None:
        self.journal.save(self.positions[i], episode_id, result)

    def _folder(self) -> Path:
        """``shards/<n>`` under the journal, checked: neither it, ``shards`` nor the
        journal folder may be a symlink (markers would be written anywhere)."""
        from .._fs.confine import state_folder
        return state_folder(self.dir / "shards" / str(self.shard.count),
                            "the shard-marker folder", levels=3)

    def record_incomplete(self, failures: list[dict]) -> Path:
        from .journal import _atomic_write
        p = self._folder() / f"{self.shard.index}.incomplete.json"
        _atomic_write(p, json.dumps(failures, sort_keys=True, indent=1).encode("utf-8"))
        return p

    def marker_path(self) -> Path:
        return self.dir / "shards" / str(self.shard.count) / f"{self.shard.index}.json"

    def mark_done(self, episode_ids: Sequence[str]) -> Path:
        """Write this shard's marker: its episodes, all journaled."""
        from .journal import _atomic_write
        body = {"shard": str(self.shard), "positions": self.positions,
                "episode_ids": list(episode_ids)}
        body["sha256"] = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
        self._folder()
        p = self.marker_path()
        _atomic_write(p, json.dumps(body, sort_keys=True, indent=1).encode("utf-8"))
        (self.dir / "shards" / str(self.shard.count) / f"{self.shard.index}.incomplete.json"
         ).unlink(missing_ok=True)
        return p


@dataclass(frozen=True)
class ShardOutcome:
    """What a finished shard did: ``registered`` (this shard wrote the run), or
    ``already_registered`` (a sibling did), or neither and ``waiting_for`` lists the
    shards (``"i/n"``) whose episodes are not all journaled yet; ``size`` is the bytes
    written (0 unless registered); ``records`` the assembled records when registered."""

    shard: str
    registered: bool
    already_registered: bool
    waiting_for: tuple[str, ...]
    missing_episodes: int
    size: int = 0
    records: dict | None = field(default=None, repr=False, compare=False)
    #: why the missing shards may never come: siblings that ran with other settings
    note: str = ""

    def message(self, rid: str) -> str:
        if self.registered:
            return f"shard {self.shard}: every shard complete; registered {rid}"
        if self.already_registered:
            return (f"shard {self.shard}: {rid} is already registered (every shard was "
                    "complete); nothing to do")
        return (f"shard {self.shard} of {rid} complete; the run is registered when every "
                f"shard is: {self.missing_episodes} episode(s) still missing, run shard="
                + ", shard=".join(self.waiting_for)
                + " (the same command with that shard; finished episodes are kept)"
                + self.note)


def _flat(obj, prefix="") -> dict:
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            out.update(_flat(v, f"{prefix}{k}."))
        return out
    return {prefix[:-1]: obj}


def other_settings_note(journal_dir: Path, key: dict, count: int) -> str:
    """When shards of the same run ID and shard count journaled under other settings
    (another journal folder of the state folder), what differs: a shard run with other
    settings (a seed, a planner setting, another code version) never completes this
    run, and waiting for it says nothing. ``""`` when there is none.

    >>> import tempfile; d = Path(tempfile.mkdtemp())
    >>> (d / "r-2" / "shards" / "2").mkdir(parents=True)
    >>> _ = (d / "r-2" / "key.json").write_text('{"seed": 0, "model": "m"}')
    >>> print(other_settings_note(d / "r-1", {"seed": 1, "model": "m"}, 2))  # doctest: +ELLIPSIS
    ; shards of this run ID with other settings are in .../r-2 (seed: 1 here, 0 there): ...
    """
    from .._fs.confine import ConfinementError, read_regular
    journal_dir = Path(journal_dir)
    prefix = journal_dir.name.rsplit("-", 1)[0]
    here = _flat(dict(key))
    for other in sorted(journal_dir.parent.glob(f"{prefix}-*")):
        if (other == journal_dir or other.is_symlink() or not other.is_dir()
                or not (other / "shards" / str(count)).is_dir()):
            continue
        try:
            there = _flat(json.loads(read_regular(other / "key.json", limit=1 << 20)))
        except (OSError, ValueError, ConfinementError):
            continue
        diffs = [f"{k}: {here.get(k, '(unset)')!r} here, {there.get(k, '(unset)')!r} there"
                 .replace("'", "") for k in sorted(set(here) | set(there))
                 if here.get(k) != there.get(k)]
        if diffs:
            return (f"; shards of this run ID with other settings are in {other} "
                    f"({'; '.join(diffs[:4])}{'; ...' if len(diffs) > 4 else ''}): the shards "
                    "of one run share every setting, so rerun them with this command's "
                    "settings, or this shard with theirs")
    return ""


def registered_stamp(journal_dir: Path) -> Path:
    """The stamp a shard leaves when it registers the run (beside the journal, which is
    removed then)."""
    return Path(journal_dir).with_name(Path(journal_dir).name + ".registered.json")


def _run_hashes(root: Path, rid: str) -> dict:
    from ..records.manifest import read_manifest
    prefix = f"runs/{rid}/"
    return {k: v.get("sha256") for k, v in sorted(read_manifest(root).get("files", {}).items())
            if k.startswith(prefix)}


def already_registered(root: Path, rid: str, journal_dir: Path) -> bool:
    """True when this run configuration's shards registered ``rid`` and the export still
    holds exactly those files (the manifest's hashes equal the stamp's)."""
    from .._fs.confine import read_regular
    stamp = registered_stamp(journal_dir)
    try:  # a symlink, FIFO, device or oversized file is no stamp (never read)
        data = json.loads(read_regular(stamp, limit=1 << 20).decode("utf-8"))
    except (OSError, ValueError):
        return False
    have = _run_hashes(root, rid)
    return bool(have) and isinstance(data, dict) and data.get("files") == have


def finish_shard(shard: ShardJournal, root: Path, rid: str, episode_ids: Sequence[str],
                 own: dict, register: Callable[[list], tuple[dict, int]],
                 say: Callable[[str], None]) -> ShardOutcome:
    """After a shard ran all of its episodes (``own``: position -> result): mark it done,
    read every other episode back from the journal (verified by re-execution), and, if
    none is missing, register the run under the export lock with ``register(results)``
    (results in suite order; returns the records and the bytes written)."""
    from .journal import _atomic_write
    from ..records.store import ExportStore

    s = shard.shard
    shard.mark_done([episode_ids[p] for p in shard.positions])
    results: list = [None] * len(episode_ids)
    missing = []
    for p, eid in enumerate(episode_ids):
        got = own.get(p)
        if got is None:
            got = shard.journal.load(p, eid)
        if got is None:
            missing.append(p)
        else:
            results[p] = got
    if missing:
        waiting = tuple(f"{i}/{s.count}" for i in sorted({s.owner(p) for p in missing}))
        return ShardOutcome(str(s), False, False, waiting, len(missing),
                            note=other_settings_note(shard.dir, shard.journal.key, s.count))
    store = ExportStore(root)
    with store.lock(say=say):
        store.recover(say)
        if already_registered(root, rid, shard.dir):
            return ShardOutcome(str(s), False, True, (), 0)
        records, size = register(results)
        _atomic_write(registered_stamp(shard.dir),
                      json.dumps({"run_id": rid, "files": _run_hashes(root, rid)},
                                 sort_keys=True, indent=1).encode("utf-8"))
    shard.journal.finish()
    return ShardOutcome(str(s), True, False, (), 0, size, records)



def launcher_environment(launcher: str) -> dict[str, str]:
    """Environment defaults a multirun sets (unless already set) before a launcher
    starts: Ray's usage reporting off for both Ray launchers (the package sends nothing
    but the planner's own requests), and for ``ray_local`` (a Ray started for this
    command) Ray's single-machine mode, which keeps every Ray address on 127.0.0.1 (Ray
    otherwise replaces 127.0.0.1 by the machine's reachable address).

    >>> launcher_environment("ray_local")["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"]
    '0'
    >>> launcher_environment("slurm")
    {}
    """
    env = {}
    if launcher in ("ray_local", "ray_cluster"):
        env["RAY_USAGE_STATS_ENABLED"] = "0"
    if launcher == "ray_local":
        env["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
        # the Ray started for this command keeps its token under the user cache
        # directory: by default Ray writes ~/.ray/auth_token, outside every folder named
        env["RAY_AUTH_TOKEN_PATH"] = str(ray_token_path())
    return env


def ray_token_path() -> Path:
    """Where the Ray started by ``hydra/launcher=ray_local`` keeps its authentication
    token: ``<user cache directory>/ray/auth_token`` (:func:`analysis._fs.resources.user_cache_dir`).

    >>> ray_token_path().parts[-2:]
    ('ray', 'auth_token')
    """
    from .._fs.resources import user_cache_dir
    return user_cache_dir() / "ray" / "auth_token"


def prepare_launcher(launcher: str, environ=None) -> None:
    """Set :func:`launcher_environment`'s defaults in ``environ`` (default
    ``os.environ``; a value already set is kept) and, for ``ray_local`` with token
    authentication (Ray's default), write the token file it names when missing (mode
    0600, 256 random bits, as Ray's own): Ray then finds a token and writes none into
    the home folder."""
    import secrets
    env = os.environ if environ is None else environ
    ours = launcher_environment(launcher)
    for name, value in ours.items():
        env.setdefault(name, value)
    if launcher != "ray_local" or env.get("RAY_AUTH_MODE", "").lower() == "disabled" \
            or env.get("RAY_AUTH_TOKEN") or env.get("RAY_AUTH_TOKEN_PATH") != ours[
                "RAY_AUTH_TOKEN_PATH"]:
        return   # no token needed, or the user's own token
    path = Path(env["RAY_AUTH_TOKEN_PATH"])
    if path.is_file():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    # whole or absent (0600), also when two sweeps start at once
    atomic_write(path, secrets.token_hex(32).encode(), fsync=True)



def registered_runs(runs: dict) -> list[str]:
    """``{(export_root, run_id): state_dir or None}`` -> one line per run the export holds
    (every shard done): the sweep's outcome, which a process launcher's jobs print only
    into their own logs."""
    from ..records.manifest import read_manifest
    out = []
    for (root, rid) in sorted(runs):
        try:
            files = read_manifest(Path(root)).get("files", {})
        except (OSError, ValueError):
            continue
        if any(k.startswith(f"runs/{rid}/") for k in files):
            out.append(f"{rid}: every shard done; registered in {root}")
    return out


def unregistered_runs(runs: dict) -> list[str]:
    """``{(export_root, run_id): state_dir or None}`` -> one line per run the export does
    not hold, naming the shards without a marker in the run's newest journal."""
    from .journal import default_state_dir
    from ..records.manifest import read_manifest
    out = []
    for (root, rid), state in sorted(runs.items()):
        try:
            files = read_manifest(Path(root)).get("files", {})
        except (OSError, ValueError):
            files = {}
        if any(k.startswith(f"runs/{rid}/") for k in files):
            continue
        base = Path(state) if state else default_state_dir(root)
        journals = sorted((p for p in base.glob(f"{rid}-*") if p.is_dir()),
                          key=lambda p: p.stat().st_mtime)
        todo = []
        if journals:
            for counts in sorted((journals[-1] / "shards").glob("*")):
                if counts.is_dir() and counts.name.isdigit():
                    n = int(counts.name)
                    done = {int(p.stem) for p in counts.glob("*.json") if p.stem.isdigit()}
                    todo += [f"{i}/{n}" for i in range(1, n + 1) if i not in done]
        out.append(f"{rid} is not registered in {root}: "
                   + (f"rerun shard={', shard='.join(todo)}" if todo else
                      "no shard finished; rerun the command")
                   + " (finished episodes are kept)")
    return out

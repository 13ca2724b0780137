"""Where each suite unit's observed end states went: the strict count joined with the
compiled tasks and the completeness ledger.

    python bench/unit_gaps.py EXPORT_ROOT [SOURCE] [--list]

``EXPORT_ROOT`` holds ``cohort/``; ``SOURCE`` is the HD-EPIC copy (default ``$E2W_HDEPIC``,
else ``../shared/hd-epic`` beside the repository). Issue 34's targets count tasks; the
strict count (``bench/evidence_ceiling.py``) counts the end states each unit's rows
record. This script says, for every unit of a suite episode that the strict count credits
with an end state, what its compiled task holds and, for each strict end state the task
does not express, why: the ledger's reason code (``analysis.compiler.ledger.REASONS``,
``dropped.jsonl`` kind ``ledger``) of the rows behind it. A strict end state is one
ingredient (its add rows), one object put down for good (its placement rows), one object
closed or switched off (its snippet row), or a contents answer; it is *expressed* when a
row behind it is (a condition of the unit's exported task rests on it: the ledger lists
every other row). Two codes are not the ledger's: ``contents_answer`` (the compiler reads
no contents-retrieval answer, the ledger has no row for it) and ``no_ledger_row`` (the
strict count and the ledger's row rule differ on the item).

It prints, per suite, the units with an end state and with two or more, how many have a
task and a task of two or more conditions, and the unexpressed end states by code; the
*sound ceiling* leaves out the end states no task may hold (``NO_CREDIT``: they hold at
the task's start or in the initial world, so a planner doing nothing meets them); *under
the soundness rules* counts the end states a task may still gain by binding work only
(``SOUND_RULES`` left out) and names the units of two or more sound end states that those
rules keep below two (:func:`blocked`).
``--list`` adds one tab-separated line per unit (:data:`HEADER`).
"""
from __future__ import annotations

import gzip
import json
import os
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from evidence_ceiling import CLOSING, Source, _task_key, strict_counts  # noqa: E402

from analysis.compiler.episodes import offsets_of  # noqa: E402
from analysis.compiler.ledger import unit_rows  # noqa: E402
from analysis.compiler.readers import read_durations  # noqa: E402

#: Codes of end states no faithful task may hold as a condition (no free credit).
NO_CREDIT = ("true_at_task_start", "true_in_initial_world")
#: Codes of the soundness rules (docs/compiler.md, "Tasks, admission, suites"): an end state
#: they leave out stays out however the grounding improves; the other codes (a row set aside
#: while grounding, a contents answer, an operation in another unit's groups, ...) are
#: binding work a compiler may still do.
SOUND_RULES = NO_CREDIT + ("intermediate", "move_may_precede_unit", "argument_not_observed",
                           "evidence_before_unit", "duplicate_condition_set")
HEADER = "suite\tepisode\tunit\tstrict\tsound\ttask\tconditions\texpressed\tmissing"


@dataclass
class UnitGap:
    """One unit's strict end states against its compiled task."""
    suite: str
    episode: str
    unit: str
    task: str | None                                # the unit's task in the suite, else None
    conditions: int                                 # its conditions (events included)
    items: list = field(default_factory=list)       # (kind, what, "expressed" or a code)

    @property
    def strict(self) -> int:
        return len(self.items)

    @property
    def expressed(self) -> int:
        return sum(s == "expressed" for _, _, s in self.items)

    @property
    def sound(self) -> int:
        """End states a faithful task may hold (``NO_CREDIT`` ones left out)."""
        return sum(s not in NO_CREDIT for _, _, s in self.items)

    @property
    def reachable(self) -> int:
        """End states a task may hold if every binding left open were made: the expressed
        ones and those no soundness rule (``SOUND_RULES``) leaves out."""
        return sum(s not in SOUND_RULES for _, _, s in self.items)

    @property
    def missing(self) -> list:
        return [(k, w, s) for k, w, s in self.items if s != "expressed"]


def _status(rows, drops) -> str:
    """``expressed`` when a row is not in the ledger's drops, else its (last row's) code."""
    if not rows:
        return "no_ledger_row"
    codes = [drops.get((r.unit, r.kind, r.video, r.ids, round(r.time, 2))) for r in rows]
    return "expressed" if None in codes else codes[-1]


def episode_gaps(src, suite: str, episode: str, videos: list[str], offsets: dict, task_of: dict,
                 ledger: list[dict]) -> list[UnitGap]:
    """The :class:`UnitGap` of every unit of one episode with a strict end state.
    ``task_of``: unit key -> ``(task id, conditions)`` of the suite's tasks; ``ledger``:
    the episode's ``dropped.jsonl`` records of kind ``ledger``."""
    strict = strict_counts(src, videos)
    rows = unit_rows(src.recipes, src.activities, src.assocs, src.answers, src.itineraries, src.snippets,
                     videos)
    # a ledger record's time is the row's on the episode clock (5 decimals)
    drops = {(d["refs"]["unit"], d["refs"]["row"], d["refs"]["video"], tuple(d["refs"]["ids"]),
              round(d["time"] - offsets.get(d["refs"]["video"], 0.0), 2)): d["refs"]["code"] for d in ledger}
    out = []
    for unit, c in sorted(strict.items()):
        mine = [r for r in rows if r.unit == unit]
        items = []
        for iid in sorted(c.get("adds", ())):
            rs = [r for r in mine if r.kind == "add" and r.key[1] == iid]
            items.append(("add", rs[0].what if rs else iid, _status(rs, drops)))
        for aid in sorted(c.get("placements", ())):
            rs = [r for r in mine if r.kind == "placement" and r.key[0] == aid]
            items.append(("placement", rs[-1].what if rs else aid, _status(rs, drops)))
        for what in sorted(c.get("contents", ())):
            items.append(("contents", what, "contents_answer"))
        for vo in sorted(c.get("closes", ())):
            v, obj = vo.split(":", 1)
            rs = [r for r in mine if r.kind == "snippet" and r.video == v
                  and any(r.what.startswith(f"<{p} {obj}>") for p in CLOSING)]
            items.append(("close", f"<{obj}> in {v}", _status(rs, drops)))
        if items:
            task, n = task_of.get(unit, (None, 0))
            out.append(UnitGap(suite, episode, unit, task, n, items))
    return out


def _jsonl(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return [json.loads(x) for x in fh if x.strip()]


def unit_gaps(export_root, source) -> list[UnitGap]:
    """Every suite unit with a strict end state, both suites of the export."""
    cohort = Path(export_root) / "cohort"
    tasks = {t["task_id"]: t for t in _jsonl(cohort / "tasks.jsonl")}
    suites = _jsonl(cohort / "suites.jsonl")
    videos = {e["episode_id"]: e["videos"] for e in _jsonl(cohort / "episodes.jsonl.gz")}
    ledger: dict = {}
    for d in _jsonl(cohort / "dropped.jsonl"):
        if d["kind"] == "ledger":
            ledger.setdefault(d["episode_id"], []).append(d)
    src = Source(Path(source))
    durations = read_durations(Path(source))
    out = []
    for s in sorted(suites, key=lambda s: s["suite"] != "planner"):
        task_of: dict = {}
        for tid in s["task_ids"]:
            ep, key = _task_key(tasks[tid])
            task_of.setdefault(ep, {})[key] = (tid, len(tasks[tid]["contract"]["conditions"]))
        for ep in s["episode_ids"]:
            out += episode_gaps(src, s["suite"], ep, videos[ep], offsets_of(videos[ep], durations),
                                task_of.get(ep, {}), ledger.get(ep, []))
    return out


def summary(gaps: list[UnitGap]) -> list[str]:
    """Per suite: units by strict and sound count against their tasks, and the
    unexpressed end states by code."""
    lines = []
    for suite in dict.fromkeys(g.suite for g in gaps):
        us = [g for g in gaps if g.suite == suite]
        two = [g for g in us if g.strict >= 2]
        sound2 = [g for g in us if g.sound >= 2]
        codes = Counter(s for g in us for _, _, s in g.missing)
        lines.append(
            f"{suite}: {len(us)} units with a strict end state ({sum(g.task is not None for g in us)} with a "
            f"task), {len(two)} with two or more ({sum(g.conditions >= 2 for g in two)} with a task of two or "
            f"more conditions); sound ceiling {sum(g.sound >= 1 for g in us)} / {len(sound2)}; end states "
            f"expressed {sum(g.expressed for g in us)} of {sum(g.strict for g in us)}")
        lines.append(f"{suite} not expressed: " + "; ".join(f"{k} {v}" for k, v in
                                                              sorted(codes.items(), key=lambda kv: (-kv[1], kv[0]))))
        lines.append(f"{suite} under the soundness rules: {sum(g.reachable >= 1 for g in us)} units may have a "
                     f"task, {sum(g.reachable >= 2 for g in us)} one of two or more end states; blocked by them: "
                     + ", ".join(f"{g.episode} {g.unit}" for g in blocked(us)))
    return lines


def blocked(gaps: list[UnitGap]) -> list[UnitGap]:
    """Units whose sound end states are two or more but whose task cannot reach two
    conditions of them without loosening a soundness rule (fewer than two reachable)."""
    return [g for g in gaps if g.sound >= 2 > g.reachable and g.conditions < 2]


def unit_lines(gaps: list[UnitGap]) -> list[str]:
    """``--list``: one line per unit (:data:`HEADER`); ``missing`` is ``kind what = code``
    per unexpressed end state."""
    return [HEADER] + [f"{g.suite}\t{g.episode}\t{g.unit}\t{g.strict}\t{g.sound}\t{g.task or '-'}\t"
                       f"{g.conditions}\t{g.expressed}\t" + " | ".join(f"{k} {w} = {s}" for k, w, s in g.missing)
                       for g in gaps]


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    pos = [a for a in args if not a.startswith("--")]
    if not pos:
        print(__doc__.strip().splitlines()[3].strip(), file=sys.stderr)
        return 2
    source = Path(pos[1] if len(pos) > 1 else
                  os.environ.get("E2W_HDEPIC") or REPO.parent / "shared" / "hd-epic")
    gaps = unit_gaps(Path(pos[0]), source)
    print("\n".join(summary(gaps)))
    if "--list" in args:
        print("\n".join(unit_lines(gaps)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

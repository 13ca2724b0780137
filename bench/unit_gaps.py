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
rules keep below two (:func:`blocked`); *where the rows decide* also leaves out each end state
the grounding set aside because its rows do not decide it (:func:`rows_leave`: two or more
candidates, rows that disagree, no candidate, or a closed fixture, which no positive atom
states). That is an estimate, not a bound: the classes are the compiler's own reasons, and
a rule may still decide an add with two candidates from other rows (the pan another add of
the step went into); it credits every end state whose rows give one candidate that a rule
refuses, every add whose step text names no vessel, and every contents answer. Tasks of
units with no strict end state (an event, a switch-on) are counted apart.
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

from add_coverage import candidates  # noqa: E402
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
#: What the rows leave for a ``not_grounded`` placement or close, by its dropped record's reason
#: (adds: ``add_coverage.candidates``): first match wins; none matching is a gap of the compiler.
ROWS_LEAVE = [
    ("observed sources disagree", "conflict"),
    ("names a fixture (", "fixture"),        # a closed fixture: no positive atom states it
    ("no fixture of", "none"),
    ("unique binding: 0 tracked objects", "none"),
    ("unique binding: ", "open"),           # two or more tracked objects of the noun
    ("one-hand model", "one"), ("not a sealable_container", "one"), ("worn on the hand", "one"),
    ("rejected by the rules", "one"),
]
#: What the rows leave that no binding can decide (``one``: one candidate a rule refuses,
#: and gaps of the compiler stay binding work).
UNDECIDED = ("open", "conflict", "none", "fixture")


@dataclass
class UnitGap:
    """One unit's strict end states against its compiled task."""
    suite: str
    episode: str
    unit: str
    task: str | None                                # the unit's task in the suite, else None
    conditions: int                                 # its conditions (events included)
    items: list = field(default_factory=list)       # (kind, what, "expressed" or a code)
    left: list = field(default_factory=list)        # per item: :func:`rows_leave` of a not_grounded one

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
    def decided(self) -> int:
        """Reachable end states (:attr:`reachable`) whose rows decide them: a
        ``not_grounded`` one whose rows leave it undecided (:data:`UNDECIDED`) left out."""
        left = self.left or [None] * len(self.items)
        return sum(s not in SOUND_RULES and lv not in UNDECIDED for (_, _, s), lv in zip(self.items, left))

    @property
    def others(self) -> int:
        """Conditions of its task that express no strict end state (events, switch-ons,
        a transfer: they count toward a task's conditions, not its end states)."""
        return max(0, self.conditions - self.expressed)

    @property
    def missing(self) -> list:
        return [(k, w, s) for k, w, s in self.items if s != "expressed"]


def _status(rows, drops) -> str:
    """``expressed`` when a row is not in the ledger's drops, else its (last row's) code."""
    if not rows:
        return "no_ledger_row"
    codes = [drops.get((r.unit, r.kind, r.video, r.ids, round(r.time, 2))) for r in rows]
    return "expressed" if None in codes else codes[-1][0]


def rows_leave(kind: str, reason: str | None) -> str | None:
    """What the rows leave for an end state the grounding set aside, from the ``reason`` of
    the dropped record its ledger row cites: ``open`` (two or more candidates), ``conflict``
    (rows disagree), ``none`` (no candidate), ``fixture`` (a closed fixture), ``one`` (one
    candidate a rule refuses), or ``None`` (a gap of the compiler). Adds are classed as
    ``bench/add_coverage.py`` classes them.

    >>> rows_leave("close", "unique binding: 0 tracked objects named 'lid' are handled during the snippet []")
    'none'
    >>> rows_leave("add", "target not decided: step text 'pan': ambiguous vessel, 2 pan instances ...")
    'open'
    >>> rows_leave("placement", "ends while track 1 (fork, 2-3s) is held (nested in it: the other hand; one-hand model)")
    'one'
    """
    if reason is None:
        return None
    if kind == "add":
        # a step text naming no vessel leaves the add to the recipe's other steps and
        # operations (the running vessel): binding work, not a limit of the rows
        return None if "no vessel named" in reason else candidates(reason)
    return next((k for pat, k in ROWS_LEAVE if pat in reason), None)


def episode_gaps(src, suite: str, episode: str, videos: list[str], offsets: dict, task_of: dict,
                 ledger: list[dict], reasons: dict | None = None) -> list[UnitGap]:
    """The :class:`UnitGap` of every unit of one episode with a strict end state.
    ``task_of``: unit key -> ``(task id, conditions)`` of the suite's tasks; ``ledger``:
    the episode's ``dropped.jsonl`` records of kind ``ledger``; ``reasons``: dropped
    record ID -> reason (what a ``not_grounded`` ledger row's ``refs.dropped`` cites)."""
    strict = strict_counts(src, videos)
    rows = unit_rows(src.recipes, src.activities, src.assocs, src.answers, src.itineraries, src.snippets,
                     videos)
    # a ledger record's time is the row's on the episode clock (5 decimals)
    drops = {(d["refs"]["unit"], d["refs"]["row"], d["refs"]["video"], tuple(d["refs"]["ids"]),
              round(d["time"] - offsets.get(d["refs"]["video"], 0.0), 2)):
             (d["refs"]["code"], (reasons or {}).get(d["refs"].get("dropped"))) for d in ledger}

    def left(kind, rs):
        got = [drops.get((r.unit, r.kind, r.video, r.ids, round(r.time, 2))) for r in rs]
        return rows_leave(kind, got[-1][1]) if got and None not in got and got[-1][0] == "not_grounded" else None

    out = []
    for unit, c in sorted(strict.items()):
        mine = [r for r in rows if r.unit == unit]
        items, lefts = [], []
        for iid in sorted(c.get("adds", ())):
            rs = [r for r in mine if r.kind == "add" and r.key[1] == iid]
            items.append(("add", rs[0].what if rs else iid, _status(rs, drops)))
            lefts.append(left("add", rs))
        for aid in sorted(c.get("placements", ())):
            # the put-downs that last (one the unit moves again is no end state: the ledger's
            # ``intermediate``, never the strict count's)
            rs = [r for r in mine if r.kind == "placement" and r.key[0] == aid and r.moved is None]
            items.append(("placement", rs[-1].what if rs else aid, _status(rs, drops)))
            lefts.append(left("placement", rs))
        for what in sorted(c.get("contents", ())):
            items.append(("contents", what, "contents_answer"))
            lefts.append(None)
        for vo in sorted(c.get("closes", ())):
            v, obj = vo.split(":", 1)
            rs = [r for r in mine if r.kind == "snippet" and r.video == v
                  and any(r.what.startswith(f"<{p} {obj}>") for p in CLOSING)]
            items.append(("close", f"<{obj}> in {v}", _status(rs, drops)))
            lefts.append(left("close", rs))
        if items:
            task, n = task_of.get(unit, (None, 0))
            out.append(UnitGap(suite, episode, unit, task, n, items, lefts))
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
    reasons: dict = {}
    for d in _jsonl(cohort / "dropped.jsonl"):
        if d["kind"] == "ledger":
            ledger.setdefault(d["episode_id"], []).append(d)
        else:
            reasons[d["event_id"]] = d["reason"]
    src = Source(Path(source))
    durations = read_durations(Path(source))
    out = []
    for s in sorted(suites, key=lambda s: s["suite"] != "planner"):
        task_of: dict = {}
        for tid in s["task_ids"]:
            ep, key = _task_key(tasks[tid])
            task_of.setdefault(ep, {})[key] = (tid, len(tasks[tid]["contract"]["conditions"]))
        for ep in s["episode_ids"]:
            gaps = episode_gaps(src, s["suite"], ep, videos[ep], offsets_of(videos[ep], durations),
                                task_of.get(ep, {}), ledger.get(ep, []), reasons)
            # the suite's tasks of units with no strict end state (an event, a switch-on):
            # no end state to gain, but tasks all the same
            seen = {g.unit for g in gaps}
            out += gaps + [UnitGap(s["suite"], ep, k, tid, n) for k, (tid, n) in sorted(task_of.get(ep, {}).items())
                           if k not in seen]
    return out


def summary(gaps: list[UnitGap]) -> list[str]:
    """Per suite: units by strict and sound count against their tasks, and the
    unexpressed end states by code."""
    lines = []
    for suite in dict.fromkeys(g.suite for g in gaps):
        us = [g for g in gaps if g.suite == suite and g.items]
        bare = [g for g in gaps if g.suite == suite and not g.items]
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
        lines.append(f"{suite} if every end state the rows decide were bound: {sum(g.decided >= 1 for g in us)} "
                     f"units may have a task, {sum(g.decided >= 2 for g in us)} one of two or more end states, "
                     f"{sum(g.decided + g.others >= 2 for g in us)} of two or more conditions with its task's "
                     f"others; besides, {len(bare)} tasks of units with no strict end state "
                     f"({sum(g.conditions >= 2 for g in bare)} of two or more conditions)")
    return lines


def blocked(gaps: list[UnitGap]) -> list[UnitGap]:
    """Units whose sound end states are two or more but whose task cannot reach two
    conditions of them without loosening a soundness rule (fewer than two reachable)."""
    return [g for g in gaps if g.sound >= 2 > g.reachable and g.conditions < 2]


def unit_lines(gaps: list[UnitGap]) -> list[str]:
    """``--list``: one line per unit (:data:`HEADER`); ``missing`` is ``kind what = code``
    per unexpressed end state."""
    def code(s, lv):
        return f"{s} ({lv})" if lv else s
    return [HEADER] + [f"{g.suite}\t{g.episode}\t{g.unit}\t{g.strict}\t{g.sound}\t{g.task or '-'}\t"
                       f"{g.conditions}\t{g.expressed}\t" + " | ".join(
                           f"{k} {w} = {code(s, lv)}" for (k, w, s), lv in zip(g.items, g.left or [None] * len(g.items))
                           if s != "expressed") for g in gaps]


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

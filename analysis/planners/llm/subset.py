"""A scratch export holding the first N episodes of the suites, with the baselines beside
them (for a quick trial of a model that still compares).

``python -m analysis.planners.llm.subset SRC DST [episodes=2] [suites=planner,memory]``
writes a new export DST (never into SRC): SRC's cohort with each chosen suite cut to its
first N episodes and their tasks, and every run of SRC on those suites cut to the same
episodes. The cut runs are re-executed against DST's cohort before they are written
(zero divergences, else nothing is written), so they verify there like any other run;
their ``cohort_sha256`` is DST's (the cut cohort differs from SRC's, so runs made on DST
cannot be added to SRC). Run a model on DST, then ``python -m analysis.tables
export_root=DST out_dir=...`` gives every table with the baselines on the same episodes.
The full cohort's episode file stays (a run executes only its suite's episodes).

Every option is checked and SRC verified (hashes and schemas, as ``python -m
analysis.verify``) before anything is written; DST is built in a temporary folder
beside it and renamed into place, so a failure leaves no DST.

>>> import tempfile, pathlib
>>> dst = pathlib.Path(tempfile.mkdtemp()) / "x"
>>> cut = make_subset("frozen_exports", dst, episodes=1, suites=["planner"])
>>> cut["planner"]["episode_ids"]
['P01-20240202-110250']
>>> sorted(p.name for p in (dst / "runs").iterdir())[:2]
['belief_search__planner__persistent', 'greedy_hints__planner__persistent']
"""
from __future__ import annotations

import sys
from pathlib import Path

from analysis.records.io import encode_records, read_records
from analysis.records.store import ExportStore

__all__ = ["make_subset", "SubsetError", "SubsetRefused", "main"]

USAGE = ("usage: python -m analysis.planners.llm.subset SRC DST [episodes=2] "
         "[suites=planner,memory]")
OPTIONS = ("episodes", "suites")


class SubsetError(ValueError):
    """An option or a folder the subset tool refuses (nothing written)."""


class SubsetRefused(SubsetError):
    """A refusal during the work: a cut run that does not re-execute (nothing written;
    exit 1, as every command's refusal during its work)."""


def _check(src: Path, dst: Path, episodes, suites) -> tuple[list, list]:
    if not (src / "MANIFEST.json").is_file():
        from analysis._fs.resources import default_export_root
        raise SubsetError(f"SRC={src}: not an export (no MANIFEST.json); the export this "
                          f"package reads is {default_export_root()}: give that as SRC, or a "
                          "copy made with python -m analysis.verify copy_to=DIR (SRC=DIR)")
    if dst == src or src in dst.parents:
        raise SubsetError(f"DST={dst}: the subset must live outside SRC={src}")
    from analysis._fs.confine import export_holding
    holder = export_holding(dst.parent)
    if holder is not None:
        # an export holds only what its manifest lists: DST there would break it
        raise SubsetError(f"DST={dst}: is inside the export {holder}; choose a folder outside "
                          "every export")
    if dst.exists():
        raise SubsetError(f"DST={dst}: exists; choose a new folder")
    probe = dst.parent
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        raise SubsetError(f"DST={dst}: {probe} is not a folder")
    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 1:
        raise SubsetError(f"episodes={episodes!r}: expected a positive integer")
    all_suites = read_records(src / "cohort/suites.jsonl")
    names = [s["suite"] for s in all_suites]
    chosen = names if suites is None else list(suites)
    if not chosen:
        raise SubsetError(f"suites=: expected one or more of {names}")
    for s in chosen:
        if s not in names:
            import difflib
            close = difflib.get_close_matches(s, names, n=1)
            raise SubsetError(f"suites: {s!r} is not a suite of {src}"
                              f"{'; did you mean ' + close[0] + '?' if close else ''} "
                              f"(suites: {names})")
    for s in all_suites:
        if s["suite"] in chosen and episodes > len(s["episode_ids"]):
            raise SubsetError(f"episodes={episodes}: suite {s['suite']} has only "
                              f"{len(s['episode_ids'])} episodes")
    return all_suites, chosen


def make_subset(src, dst, episodes: int = 2, suites=None, say=None) -> dict:
    """Write the subset export ``dst`` of ``src`` (see the module docstring); returns the
    cut suite records by suite name. Raises :class:`SubsetError` before writing anything
    for a bad option, and when a cut run does not re-execute."""
    from analysis.executor.replay import replay_run
    from analysis.executor.rules import Rules
    from analysis.records import verify

    say = say or (lambda msg: None)
    src, dst = Path(src).resolve(), Path(dst).resolve()
    if isinstance(suites, str):
        suites = [suites]
    all_suites, chosen = _check(src, dst, episodes, suites)
    # SRC verified first, as every command that reads an export: a run record is copied
    # as it is (re-execution checks what the attempts give, not the run's metadata), so
    # an edited byte would otherwise reach a subset that verifies clean
    verify(src)
    tasks = {t["task_id"]: t for t in read_records(src / "cohort/tasks.jsonl")}
    cut = {}
    for s in all_suites:
        if s["suite"] not in chosen:
            continue
        eps = s["episode_ids"][:episodes]
        cut[s["suite"]] = dict(
            s, episode_ids=eps,
            task_ids=[t for t in s["task_ids"] if tasks[t]["episode_id"] in eps],
            definition=s.get("definition", "") + f" (first {episodes} episodes only)")
    store = ExportStore(src)
    run_files = sorted(rel for rel, e in store.manifest()["files"].items()
                       if e["record_type"] == "run")

    def cut_runs(out: Path, fingerprint: str) -> dict:
        """The cut runs (``{run_id: {name: bytes}}``), each re-executed against the cut
        cohort staged at ``out``."""
        rules = Rules.from_dict(read_records(out / "cohort/rules.json")[0])
        episodes_by_id = {e["episode_id"]: e
                          for e in read_records(out / "cohort/episodes.jsonl.gz")}
        runs = {}
        for rel in run_files:
            run = read_records(src / rel)[0]
            if run["suite"] not in cut:
                continue
            suite = cut[run["suite"]]
            keep_eps, keep_tasks = set(suite["episode_ids"]), set(suite["task_ids"])
            base = rel.rsplit("/", 1)[0]
            groups = [g for g in read_records(src / base / "groups.jsonl.gz")
                      if g["episode_id"] in keep_eps]
            trecs = [t for t in read_records(src / base / "tasks.jsonl")
                     if t["task_id"] in keep_tasks]
            run = dict(run, cohort_sha256=fingerprint)
            rep = replay_run(run["run_id"], groups, trecs, episodes_by_id, tasks, rules,
                             groups_file=f"{base}/groups.jsonl.gz",
                             tasks_file=f"{base}/tasks.jsonl", run=run, suite=suite,
                             run_file=rel)
            if not rep.ok:
                raise SubsetRefused(f"{rel}: the cut run does not re-execute on the subset: "
                                  f"{rep.divergences[0].message()}; nothing written")
            say(rep.summary())
            runs[base.split("/", 1)[1]] = {
                "run.json": encode_records("run.json", [run]),
                "groups.jsonl.gz": encode_records("groups.jsonl.gz", groups),
                "tasks.jsonl": encode_records("tasks.jsonl", trecs)}
        return runs

    store.subset(dst, encode_records("suites.jsonl", [cut[s] for s in chosen]), cut_runs)
    return cut


def main(argv=None) -> int:
    from analysis.records import IntegrityError
    argv = sys.argv[1:] if argv is None else argv
    if "--help" in argv or "-h" in argv:
        print(USAGE + "\n\n" + __doc__.split("\n\n")[1])
        return 0
    pos = [a for a in argv if "=" not in a]
    kw = dict(a.split("=", 1) for a in argv if "=" in a)
    bad = sorted(set(kw) - set(OPTIONS))
    if bad:
        import difflib
        close = difflib.get_close_matches(bad[0], OPTIONS, n=1)
        print(f"subset: unknown option {bad[0]!r}"
              f"{'; did you mean ' + close[0] + '?' if close else ''} (options: "
              f"{', '.join(OPTIONS)}); {USAGE} (nothing was done)", file=sys.stderr)
        return 2
    if len(pos) != 2:
        print(f"subset: expected SRC and DST; {USAGE} (nothing was done)", file=sys.stderr)
        return 2
    try:
        n = int(kw.get("episodes", 2))
    except ValueError:
        print(f"subset: episodes={kw['episodes']!r}: expected a positive integer "
              "(nothing was done)", file=sys.stderr)
        return 2
    suites = [s for s in kw["suites"].split(",") if s] if "suites" in kw else None
    try:
        cut = make_subset(pos[0], pos[1], n, suites,
                          say=lambda m: print(f"[subset] {m}", file=sys.stderr, flush=True))
    except SubsetRefused as exc:
        print(f"subset: {exc}", file=sys.stderr)
        return 1
    except SubsetError as exc:
        print(f"subset: {exc}", file=sys.stderr)
        return 2
    except IntegrityError as exc:
        print(f"subset: SRC={pos[0]}: verification FAILED, nothing written: {exc}", file=sys.stderr)
        return 1
    except (ValueError, OSError) as exc:
        print(f"subset FAILED, nothing written: {exc}", file=sys.stderr)
        return 1
    runs = sorted(p.name for p in (Path(pos[1]) / "runs").iterdir()) \
        if (Path(pos[1]) / "runs").is_dir() else []
    print(f"{pos[1]}: " + "; ".join(f"suite {s} with {len(c['episode_ids'])} episodes, "
                                    f"{len(c['task_ids'])} tasks"
                                    for s, c in cut.items())
          + f"; {len(runs)} baseline runs re-executed and added")
    return 0


if __name__ == "__main__":
    sys.exit(main())

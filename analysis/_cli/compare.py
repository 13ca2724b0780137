"""``python -m analysis.compare a=RUN b=RUN``: print two runs' comparison, task by task.

The command around :func:`analysis.report.compare.compare_runs` (the comparison itself,
docs/api.md ``Results.compare``): a misspelt run is refused from the manifest before any
verification, then the comparison is printed task by task.
"""
from __future__ import annotations

import pandas as pd

from ..api import load
from ..records import IntegrityError
from ..records.run_names import manifest_run_ids, resolve_run
from ..report.compare import ComparisonResult, compare_runs
from .config_check import ConfigError
from .hydra_glue import UserError, command_main, resolve_path

__all__ = ["main"]


def _print(res: ComparisonResult) -> None:
    print(res.summary())
    if res.tasks.empty:
        print("no task is solved by one run and not by the other")
        return
    for r in res.tasks.itertuples():
        print(f"\n{r.task_id} ({r.title}): solved by {r.solved_by} only")
        print(f"  conditions met: A {len(r.met_a)}/{r.n_conditions} "
              f"[{', '.join(r.met_a) or '-'}]; B {len(r.met_b)}/{r.n_conditions} "
              f"[{', '.join(r.met_b) or '-'}]")
        if r.divergence_group is None:
            print("  no divergence in the attempts and group statuses")
        else:
            where = ("group status" if pd.isna(r.divergence_attempt)
                     else f"attempt {int(r.divergence_attempt)}")
            print(f"  first divergence: group {r.divergence_group}, {where}: "
                  f"A {r.attempt_a}; B {r.attempt_b}")


def _body(cfg) -> int:
    root = resolve_path(cfg.export_root)
    # a misspelt run is refused from the manifest, before seconds of verification
    listed = manifest_run_ids(root)
    if listed:
        for key in ("a", "b"):
            try:
                resolve_run(str(cfg[key]), listed, key=key)
            except ValueError as exc:
                raise ConfigError(key, f"{exc} (nothing was done)") from None
    s = cfg.stats
    try:
        # the comparison's own statistic only: not every table's (seconds, not a minute)
        out = compare_runs(load(root), str(cfg.a), str(cfg.b), metric=str(cfg.metric),
                           n_resamples=int(s.n_resamples),
                           confidence_level=float(s.confidence_level), seed=int(s.seed),
                           method=str(s.method))
    except IntegrityError as exc:
        raise UserError(f"verification FAILED: {exc}") from None
    except ValueError as exc:
        raise UserError(str(exc).replace("run_a=", "a=").replace("run_b=", "b=")) from None
    _print(out)
    return 0


def main(argv=None) -> None:
    command_main("compare", _body, argv)


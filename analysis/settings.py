"""The settings a user gives, and their checks (paper appendix C.5, bootstrap and paired
comparisons: the statistics' resamples, level, seed and methods): the :class:`Key`
vocabulary, every check's one-line :class:`ConfigError` naming the key, and the
``stats.*`` keys that both ``python -m analysis.tables`` and
:meth:`analysis.Export.results` take.

The commands' own keys are :mod:`analysis._cli.config_check`; this module is what the
public API needs of them, without the command line (docs/ARCHITECTURE.md, "Layers").

>>> check_stats({"n_resamples": 0})
Traceback (most recent call last):
...
analysis.settings.ConfigError: stats.n_resamples=0: expected an integer from 20 to 200000
"""
from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from typing import Any, Callable

__all__ = ["ConfigError", "Key", "STATS", "check_stats", "suggest", "MIN_RESAMPLES",
           "MAX_RESAMPLES", "MAX_SEED"]

#: Fewer resamples than this cannot place a 95% bootstrap quantile between replicates
#: (1-3 resamples used to crash inside a figure); more than this exceeds the 400 MiB
#: memory budget of the replicate matrices at the paper's scale.
MIN_RESAMPLES = 20
MAX_RESAMPLES = 200_000
MAX_SEED = 2**32 - 1


class ConfigError(ValueError):
    """A configuration value (or key) a command refuses; the message names the key."""

    def __init__(self, key: str, message: str):
        super().__init__(message)
        self.key = key


def suggest(word: str, choices) -> str:
    """``"; did you mean X?"`` for the closest choice, or ``""``.

    >>> suggest("n_resample", ["n_resamples", "seed"])
    '; did you mean n_resamples?'
    """
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.6)
    return f"; did you mean {close[0]}?" if close else ""


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def int_range(lo: int, hi: int) -> Callable:
    def check(key, v):
        if not _is_int(v) or not lo <= v <= hi:
            raise ConfigError(key, f"{key}={v!r}: expected an integer from {lo} to {hi}")
    return check


def open_unit(key, v):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < 1:
        raise ConfigError(key, f"{key}={v!r}: expected a number strictly between 0 and 1 "
                               "(e.g. 0.95)")


def unit(key, v):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
        raise ConfigError(key, f"{key}={v!r}: expected a probability from 0 to 1")


def positive_number(key, v):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
        raise ConfigError(key, f"{key}={v!r}: expected a positive number")


def boolean(key, v):
    if not isinstance(v, bool):
        raise ConfigError(key, f"{key}={v!r}: expected true or false")


def one_of(choices: Callable[[], list] | list) -> Callable:
    def check(key, v):
        allowed = list(choices() if callable(choices) else choices)
        if v not in allowed:
            raise ConfigError(key, f"{key}={v!r}: expected one of {allowed}"
                                   f"{suggest(v, allowed)}")
    return check


def list_of(choices: Callable[[], list]) -> Callable:
    def check(key, v):
        allowed = list(choices())
        if not isinstance(v, (list, tuple)) or not v:
            raise ConfigError(key, f"{key}={v!r}: expected a non-empty list such as "
                                   f"[{allowed[0]}] of {allowed}")
        for item in v:
            if item not in allowed:
                raise ConfigError(key, f"{key}: {item!r} is not one of {allowed}"
                                       f"{suggest(item, allowed)}")
        dup = sorted({x for x in v if list(v).count(x) > 1})
        if dup:
            raise ConfigError(key, f"{key}: {dup[0]!r} is listed twice")
    return check


@dataclass(frozen=True)
class Key:
    """One configuration key: ``type`` and ``meaning`` for the help, ``check`` enforced."""

    name: str
    type: str
    meaning: str
    check: Callable[[str, Any], None]
    allowed: Callable[[], list] | None = None  # shown by --help


def _bootstrap_methods():
    from .stats import BOOTSTRAP_METHODS
    return list(BOOTSTRAP_METHODS)


def _pairwise_methods():
    from .stats import PAIRWISE_METHODS
    return ["default", *PAIRWISE_METHODS]


def _contrast_metrics():
    from .report.context import PLANNER_METRICS
    return [c for c, _ in PLANNER_METRICS]


STATS = (
    Key("stats.n_resamples", "int", f"bootstrap resamples ({MIN_RESAMPLES}-{MAX_RESAMPLES}, and at "
        "least 2/(1 - confidence_level), 40 at the 0.95 level; unused by method=cr1_t)",
        int_range(MIN_RESAMPLES, MAX_RESAMPLES)),
    Key("stats.confidence_level", "float", "interval level, strictly between 0 and 1",
        open_unit),
    Key("stats.seed", "int", f"seed of every resampling (0-{MAX_SEED})", int_range(0, MAX_SEED)),
    Key("stats.method", "str", "single-mean interval method: one of analysis.stats."
        "BOOTSTRAP_METHODS", one_of(_bootstrap_methods), _bootstrap_methods),
    Key("stats.pairwise_method", "str", "simultaneous contrast method: default or one of "
        "analysis.stats.PAIRWISE_METHODS", one_of(_pairwise_methods), _pairwise_methods),
    Key("stats.contrast_metrics", "list[str]", "metrics compared between planners (Table 6), "
        "from the Table 4 metrics", list_of(_contrast_metrics), _contrast_metrics),
)


def check_stats(stats: dict) -> None:
    """Check each ``stats.*`` value given, then the rule that ties resamples to the level
    (each tail of the interval needs a replicate); raises :class:`ConfigError`."""
    checks = {k.name: k.check for k in STATS}
    for k, v in stats.items():
        key = f"stats.{k}"
        if key not in checks:
            raise ConfigError(key, f"unknown key {key!r}")
        checks[key](key, v)
    check_resamples_for_level(stats)


def check_resamples_for_level(s: dict) -> None:
    """``n_resamples`` at least ``2 / (1 - confidence_level)`` (unless ``method=cr1_t``,
    which does not resample)."""
    level, n = s.get("confidence_level"), s.get("n_resamples")
    if s.get("method") != "cr1_t" and n is not None and level is not None:
        need = math.ceil(2 / (1 - level) - 1e-9)
        if n < need:
            raise ConfigError("stats.n_resamples",
                              f"stats.n_resamples={n}: too few for stats.confidence_level="
                              f"{level:g}; need at least {need} so that each tail holds "
                              "a replicate")

"""Resource profiles by episode quarter (pointwise episode-cluster intervals)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ._core import Provenance, check_columns, check_values
from .bootstrap import DEFAULT_METHOD, cluster_bootstrap

PROFILE_ESTIMAND = ("rate per group: sum over episodes of the value sums of the groups in the "
                    "quarter / number of those groups")


@dataclass(frozen=True)
class QuarterProfileResult(Provenance):
    """Result of :func:`quarter_profiles`: ``table`` has one row per (condition,
    quarter, metric) with ``estimate, low, high, se, n_records (groups),
    n_clusters``; the intervals are pointwise, not simultaneous."""

    table: pd.DataFrame
    estimand: str = PROFILE_ESTIMAND
    note: str = "pointwise intervals (not simultaneous across quarters or conditions)"
    warnings: tuple = ()


def assign_quarters(group_df: pd.DataFrame, index_col: str = "group_index",
                    size_col: str = "n_groups_in_episode") -> np.ndarray:
    """Quarter 0..3 of each group: ``floor(4 * index / n)`` for a 0-based index.

    >>> assign_quarters(pd.DataFrame({"group_index": [0, 1, 2, 3, 4], "n_groups_in_episode": [5] * 5}))
    array([0, 0, 1, 2, 3])
    """
    check_columns(group_df, [index_col, size_col], "group_df")
    i = group_df[index_col].to_numpy(np.int64)
    n = group_df[size_col].to_numpy(np.int64)
    if np.any(n < 1) or np.any(i < 0) or np.any(i >= n):
        raise ValueError(f"{index_col} must be 0-based and below {size_col} (0 <= index < n)")
    return (4 * i) // n


def quarter_profiles(
    group_df: pd.DataFrame,
    value_cols,
    condition_col: str,
    cluster_col: str = "episode_id",
    index_col: str = "group_index",
    size_col: str = "n_groups_in_episode",
    n_resamples: int = 10_000,
    method: str = DEFAULT_METHOD,
    confidence_level: float = 0.95,
    seed: int | np.random.Generator | None = 0,
    too_few: str = "error",
) -> QuarterProfileResult:
    """Per quarter of relative episode progress and condition: rate = sum / n groups.

    ``group_df`` has one row per (run, group), e.g. ``export.group_records`` joined
    with the run's ``memory``. Intervals resample episodes (see
    :func:`cluster_bootstrap`); (condition, quarter) cells with different episode
    sets are resampled separately. ``too_few`` as in :func:`cluster_bootstrap`.

    Example
    -------
    >>> import pandas as pd
    >>> g = pd.DataFrame({"memory": ["p"] * 12, "episode_id": [1] * 4 + [2] * 4 + [3] * 4,
    ...     "group_index": [0, 1, 2, 3] * 3, "n_groups_in_episode": [4] * 12,
    ...     "query_attempts": [4, 2, 2, 0, 2, 2, 0, 0, 3, 2, 1, 0]})
    >>> r = quarter_profiles(g, ["query_attempts"], "memory", n_resamples=200)
    >>> r.table.estimate.tolist()
    [3.0, 2.0, 1.0, 0.0]
    >>> len(r.warnings)  # 3 episodes: allowed, with a visible warning
    1
    """
    value_cols = [value_cols] if isinstance(value_cols, str) else list(value_cols)
    check_columns(group_df, [condition_col, cluster_col, *value_cols], "group_df")
    check_values(group_df, value_cols, "group_df")
    df = group_df[[condition_col, cluster_col, *value_cols]].copy()
    df["quarter"] = assign_quarters(group_df, index_col, size_col)
    r = cluster_bootstrap(df, value_cols, cluster_col=cluster_col, by=(condition_col, "quarter"),
                          n_resamples=n_resamples, method=method,
                          confidence_level=confidence_level, seed=seed, too_few=too_few)
    return QuarterProfileResult(
        table=r.table.rename(columns={"n_records": "n_groups"}),
        method=r.method,
        n_resamples=r.n_resamples,
        confidence_level=r.confidence_level,
        seed=r.seed,
        warnings=r.warnings,
    )

"""Episode-cluster statistics for Ego2World (docs/statistics.md).

Tidy DataFrames in, result objects out; every result records ``method``,
``resampling_unit``, ``n_resamples``, ``confidence_level``, ``seed`` and the
``estimand``. Array convention: see :mod:`analysis.stats._core` (per-episode
arrays are (G, J), replicate weight matrices (B, G)).

One module per concept: ``bootstrap`` (single means), ``intervals`` (Korn-Graubard,
MOVER, Satterthwaite formulas), ``pairwise`` (the contrast table), ``mover`` (its
default family, in named stages), ``multiplicity`` (max-|z| and stepdown p-values),
``paired``, ``profiles``, ``tiers``; ``experimental`` holds the pairwise methods that
lost the validation (still reachable through ``pairwise_simultaneous(method=...)``).
"""

from ._core import ESTIMAND, MIN_CLUSTERS, RESAMPLING_UNIT, WARN_CLUSTERS, FewClustersWarning
from .bootstrap import DEFAULT_METHOD as BOOTSTRAP_DEFAULT_METHOD
from .bootstrap import METHODS as BOOTSTRAP_METHODS
from .bootstrap import ClusterBootstrapResult, cluster_bootstrap
from .paired import PairedConditionsResult, mcnemar_exact, paired_conditions, sign_flip_p
from .pairwise import DEFAULT_METHOD as PAIRWISE_DEFAULT_METHOD
from .pairwise import METHODS as PAIRWISE_METHODS
from .pairwise import PairwiseResult, pairwise_simultaneous
from .profiles import QuarterProfileResult, assign_quarters, quarter_profiles
from .tiers import LeaderboardTiersResult, leaderboard_tiers

__all__ = [
    "ESTIMAND",
    "RESAMPLING_UNIT",
    "MIN_CLUSTERS",
    "WARN_CLUSTERS",
    "FewClustersWarning",
    "BOOTSTRAP_METHODS",
    "BOOTSTRAP_DEFAULT_METHOD",
    "ClusterBootstrapResult",
    "cluster_bootstrap",
    "PAIRWISE_METHODS",
    "PAIRWISE_DEFAULT_METHOD",
    "PairwiseResult",
    "pairwise_simultaneous",
    "PairedConditionsResult",
    "paired_conditions",
    "mcnemar_exact",
    "sign_flip_p",
    "QuarterProfileResult",
    "quarter_profiles",
    "assign_quarters",
    "LeaderboardTiersResult",
    "leaderboard_tiers",
]

"""Episode-cluster statistics for Ego2World (DESIGN.md section 9).

Tidy DataFrames in, result objects out; every result records ``method``,
``resampling_unit``, ``n_resamples``, ``confidence_level``, ``seed`` and the
``estimand``. Array convention: see :mod:`analysis.stats._core`.
"""

from ._core import ESTIMAND, RESAMPLING_UNIT
from .bootstrap import ClusterBootstrapResult, cluster_bootstrap
from .pairwise import DEFAULT_METHOD as PAIRWISE_DEFAULT_METHOD
from .pairwise import PairwiseResult, pairwise_simultaneous

__all__ = [
    "ESTIMAND",
    "RESAMPLING_UNIT",
    "ClusterBootstrapResult",
    "cluster_bootstrap",
    "PairwiseResult",
    "pairwise_simultaneous",
    "PAIRWISE_DEFAULT_METHOD",
]

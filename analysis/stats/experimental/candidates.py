"""Issue 11's power-round candidate ``cr2bm_mover_maxz`` (docs/statistics.md, "Power
round"): the default's MOVER intervals, except that a contrast whose two means are
away from 0 and 1 gets ``d +- t_nu se_CR2`` (bias-reduced linearisation, Bell and
McCaffrey 2002; Bell-McCaffrey df under independent tasks, Pustejovsky and Tipton
2018). It failed the 0.93 family-wise coverage requirement (0.910-0.926 in the
GCR-like fraction and extreme-size designs), hence :mod:`analysis.stats.experimental`.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
from scipy import special

from ..intervals import bell_mccaffrey_df, cr2_se

#: cr2bm_mover_maxz: a contrast uses MOVER when one of its means has fewer than this
#: many effective successes or failures (theta n_eff or (1 - theta) n_eff)
NEAR_BOUND_COUNT = 10.0


def cr2bm_bounds(mover_bounds: Callable, means, con) -> Callable:
    """``bounds(z)`` of ``cr2bm_mover_maxz``: ``mover_bounds(z)`` for contrasts with a
    mean near 0 or 1 (fewer than ``NEAR_BOUND_COUNT`` effective successes or failures)
    or a zero SE, ``theta +- t_nu(z) se_CR2`` for the others.

    ``means``, ``con``: stages 1 and 2 of :func:`analysis.stats.mover.mover_family`
    (:class:`~analysis.stats.mover.SingleMeans`, :class:`~analysis.stats.mover.Contrasts`).
    """
    th1, se1, s2, n1 = means.theta, means.se, means.s2, means.n
    with np.errstate(invalid="ignore", divide="ignore"):
        v1 = np.maximum(se1 * se1, s2 / np.maximum(n1, 1))
        neff1 = np.where(v1 > 0, th1 * (1 - th1) / np.where(v1 > 0, v1, 1), 0.0)
    few = means.bounded & (np.minimum(th1, 1 - th1) * neff1 < NEAR_BOUND_COUNT)
    use_t = ~(few[con.ia] | few[con.ib] | con.zero)
    theta = con.theta
    se2 = cr2_se(con.D - theta * con.N, means.N[:, 0])
    nu = bell_mccaffrey_df(means.N[:, 0])

    def bounds(z):  # t with CR2 / Bell-McCaffrey where no mean is near 0 or 1
        lo_m, hi_m = mover_bounds(z)
        q = -special.stdtrit(nu, special.ndtr(-np.asarray(z, float)))
        return (np.where(use_t, theta - q * se2, lo_m), np.where(use_t, theta + q * se2, hi_m))

    return bounds

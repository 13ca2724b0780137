"""The default pairwise family ``mover_kg_maxz`` (paper C.5; docs/statistics.md,
"Pairwise planner contrasts"): MOVER intervals of Korn-Graubard means at a Gaussian
max-|z| family level, with p-values by inverting the intervals.

:func:`mover_family` runs on per-episode arrays (:class:`EpisodeSums`) in named stages:
single means (:func:`single_means`), contrasts (:func:`contrasts`), family level
(:func:`family_level`), interval bounds (:func:`contrast_bounds`) and inverted p-values
(:func:`inverted_pvalues`). :func:`analysis.stats.pairwise_simultaneous` builds the
sums from a tidy frame and calls it; the benches call it directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np
from scipy import special

from ._core import WARN_CLUSTERS, check_choice, cr1_se, quantile
from .experimental.candidates import cr2bm_bounds
from .intervals import column_df, kg_interval, kg_wilson_interval, mover_difference, satterthwaite_df
from .multiplicity import _stepdown, contrast_matrix, sidak_and_holm_sidak, sidak_z

#: replicates per block of the multiplier null (mover_family): 1,000 x 828 contrasts is
#: 6.6 MiB
NULL_BLOCK = 1000

#: how each planner mean's degrees of freedom are found (MoverOptions.df_mode)
DF_MODES = ("satt", "pooled", "metric", "contrast", "g1")


@dataclass(frozen=True, eq=False)
class EpisodeSums:
    """Per-episode arrays of a planner family, the input of :func:`mover_family`.

    ``S``, ``Q`` (G, P*M): per-episode sums and sums of squares of the task values,
    planner-major columns (p0m0, p0m1, ...); ``n_g`` (G,) tasks per episode;
    ``bounded`` (M,) which metrics lie in [0, 1] (Korn-Graubard intervals; t otherwise).
    """

    S: np.ndarray
    Q: np.ndarray
    n_g: np.ndarray
    n_planners: int
    n_metrics: int
    bounded: np.ndarray


@dataclass(frozen=True)
class MoverOptions:
    """How :func:`mover_family` builds the family (defaults: ``mover_kg_maxz``).

    ``df_mode``: each mean's degrees of freedom: ``"satt"`` its own Satterthwaite df
    (default, as for single means); ``"pooled"`` one df fitted to the whole family
    (more power, family-wise coverage 0.90-0.92 in the extreme-size, near-1 and
    fraction designs of ``bench/coverage.py``); ``"contrast"`` one df fitted to the
    contrasts' scores; ``"metric"`` one per metric over the planners; ``"g1"`` G - 1
    (undercovers with unequal episodes).
    ``floor``: ``"g1"`` (default) every half-width at least ``t_{G-1} se_j``; ``None``
    no floor. ``few_sidak``: with fewer than 8 episodes the family level is at least
    Sidak's. ``floor=None, few_sidak=False`` is issue 11's first-round default.
    ``single``: ``"cp"`` (Korn-Graubard Clopper-Pearson, default) or ``"wilson"``
    (Korn-Graubard Wilson, the ``mover_wilson_maxz`` candidate). ``contrast``:
    ``"mover"`` (default) or ``"cr2bm"`` (the ``cr2bm_mover_maxz`` candidate,
    :mod:`analysis.stats.experimental.candidates`). ``pvalues``: invert the intervals
    for p-values (40 bisection steps; the coverage and tier benches need the
    intervals only).

    >>> MoverOptions(floor=None).few_sidak
    True
    >>> MoverOptions(df_mode="G-1")
    Traceback (most recent call last):
    ...
    ValueError: df_mode='G-1' is not allowed; choose one of ['contrast', 'g1', 'metric', 'pooled', 'satt']
    """

    df_mode: str = "satt"
    floor: str | None = "g1"
    few_sidak: bool = True
    single: str = "cp"
    contrast: str = "mover"
    pvalues: bool = True

    def __post_init__(self):
        check_choice("df_mode", self.df_mode, DF_MODES)
        if self.floor not in ("g1", None):  # None cannot be sorted with str by check_choice
            raise ValueError(f"floor={self.floor!r} is not allowed; choose one of ['g1', None]")
        check_choice("single", self.single, ("cp", "wilson"))
        check_choice("contrast", self.contrast, ("mover", "cr2bm"))


#: family methods computed by :func:`mover_family`, with their options
MOVER_METHODS = {
    "mover_kg_maxz": MoverOptions(),
    "mover_wilson_maxz": MoverOptions(single="wilson"),
    "cr2bm_mover_maxz": MoverOptions(contrast="cr2bm"),
}


@dataclass(frozen=True, eq=False)
class MoverFamily:
    """Result of :func:`mover_family`: one entry per contrast (pairs outer, metrics
    inner), whatever the options.

    ``estimate`` (mean a - mean b), ``se`` (CR1), ``zero_se``; ``low``, ``high`` the
    simultaneous interval; ``critical_value`` the family's max-|z| ``cz`` and
    ``per_contrast_level`` = ``1 - 2 Phi(-cz)``; ``p_single_step``, ``p_stepdown``
    (NaN when ``MoverOptions.pvalues`` is False); ``pairs`` the (a, b) planner index
    pairs; ``bounds(z)`` the (low, high) arrays at per-contrast normal quantile(s) ``z``
    (the coverage bench calibrates with it).
    """

    estimate: np.ndarray
    se: np.ndarray
    zero_se: np.ndarray
    low: np.ndarray
    high: np.ndarray
    critical_value: float
    per_contrast_level: float
    p_single_step: np.ndarray
    p_stepdown: np.ndarray
    pairs: list
    bounds: Callable = field(repr=False)


@dataclass(frozen=True, eq=False)
class SingleMeans:
    """Stage 1 of :func:`mover_family`: every planner mean (P*M columns)."""

    theta: np.ndarray   # ratio estimate
    se: np.ndarray      # CR1 standard error
    s2: np.ndarray      # task-level variance (the Korn-Graubard floor)
    n: np.ndarray       # tasks
    scores: np.ndarray  # (G, P*M) episode scores S - theta N
    N: np.ndarray       # (G, P*M) tasks per episode
    df: np.ndarray      # degrees of freedom (MoverOptions.df_mode)
    bounded: np.ndarray  # [0, 1] metric (Korn-Graubard) or not (t)


@dataclass(frozen=True, eq=False)
class Contrasts:
    """Stage 2 of :func:`mover_family`: every contrast (pairs outer, metrics inner)."""

    pairs: list
    D: np.ndarray       # (G, C) per-episode sums of task differences
    N: np.ndarray       # (G, C) tasks per episode
    theta: np.ndarray
    se: np.ndarray
    zero: np.ndarray    # zero CR1 SE
    ia: np.ndarray      # column of each contrast's planner a in SingleMeans
    ib: np.ndarray      # ... and of its planner b
    r: np.ndarray       # correlation of the two means' episode scores (0 at zero SE)


@dataclass(frozen=True, eq=False)
class FamilyLevel:
    """Stage 3 of :func:`mover_family`: the family's per-contrast normal quantile."""

    cz: float
    max_null: np.ndarray        # (B,) max-|z| of the multiplier null
    null_blocks: Callable       # () -> iterator of (block, C) |z| null matrices
    sidak: bool                 # G < 8: Sidak floor on the level, Holm-Sidak stepdown


def mover_family(sums: EpisodeSums, confidence_level: float, n_resamples: int,
                 rng: np.random.Generator, options: MoverOptions = MoverOptions()) -> MoverFamily:
    """The default family inference (``mover_kg_maxz``) on per-episode arrays.

    1. Family level: a Gaussian multiplier on the episode scores of the contrasts with
       nonzero SE gives the max-|z| quantile ``cz`` of the family (their joint CR1
       correlation), i.e. a per-contrast level ``1 - 2 Phi(-cz)`` (Sidak when the
       contrasts are independent, the single level when they coincide).
    2. Each planner's mean gets its Korn-Graubard Clopper-Pearson interval at that level
       (:func:`analysis.stats.intervals.kg_interval`; t for unbounded metrics), with its
       own Satterthwaite df (``MoverOptions.df_mode``), and each contrast the MOVER
       interval of the two (correlation of the two means' episode scores; 0 where the
       contrast's SE is zero, so two planners with no success get the honest interval
       [-U_b, U_a], never [0, 0]). The intervals are asymmetric where the rates are near
       0 or 1, which is where the CR1 t of a binary contrast is skewed.
    3. Contrast floor (``floor="g1"``, default): each half-width is at least
       ``t_{G-1} se_j`` at the same per-contrast level (``se_j`` the contrast's own CR1
       SE). MOVER recovers the contrast's variance from the two single intervals and
       their correlation; when the correlation is high and the single intervals are
       cut by 0 or 1 (few episodes, skewed fractions), ``a^2 + b^2 - 2 r a b`` falls far
       below the contrast's own variance (two planners with intervals [0.0, 1.0] and
       r = 0.95 gave a half-width of 1.4 SE at a 99.97% level, 4 episodes). Issue 11's
       study (``bench/coverage.py``, same datasets): family-wise 0.924 -> 0.939-0.940
       for GCR-like fractions, 0.922 -> 0.941 with 1-12-task episodes; with step 4,
       0.724 -> 0.976 with 4 episodes. A zero-SE contrast has no floor (its MOVER
       interval stands). The candidates of issue 11's power round (``single="wilson"``,
       ``contrast="cr2bm"``) keep it.
    4. Few episodes (G < 8): the multiplier's max-|z| comes from a correlation of rank
       at most G - 1, far below the family size, and understates the family's maximum
       (4 episodes: 45 contrasts behave like 3); the family level is then at least
       Sidak's, ``Phi^-1(1 - a_C / 2)`` with ``a_C = 1 - (1 - alpha)^(1/C)``.
    5. p-values by inverting the intervals: ``z_j`` is the level (as a normal quantile)
       at which contrast j's interval touches 0 (bisection); single-step
       ``p = P(max|Z| >= z_j)`` (with G < 8 the larger of that and the Sidak p) is
       below the level iff the interval excludes 0; stepdown: Romano-Wolf on the same
       ``z_j`` (Holm-Sidak with G < 8), never above the single-step p.

    Example
    -------
    Two planners, one binary metric, 8 episodes of 4 tasks (``Q = S`` for 0/1 values):
    9 and 27 successes of 32, a difference of (9 - 27) / 32.

    >>> import numpy as np
    >>> S = np.array([[1., 3.], [2., 4.], [0., 2.], [1., 4.], [2., 3.], [1., 4.], [0., 3.], [2., 4.]])
    >>> sums = EpisodeSums(S=S, Q=S, n_g=np.full(8, 4.0), n_planners=2, n_metrics=1,
    ...                    bounded=np.array([True]))
    >>> f = mover_family(sums, 0.95, 1000, np.random.default_rng(0))
    >>> f.pairs, float(f.estimate[0]), bool(f.high[0] < 0), bool(f.p_single_step[0] < 0.05)
    ([(0, 1)], -0.5625, True, True)
    """
    G = sums.S.shape[0]
    means = single_means(sums, options.df_mode)
    con = contrasts(sums, means)
    if options.df_mode == "contrast":  # the df fitted to the contrasts' scores
        df1 = np.full(len(means.theta), satterthwaite_df(con.D - con.theta * con.N, means.N[:, 0]))
        means = replace(means, df=df1)
    level = family_level(con, confidence_level, n_resamples, rng, options.few_sidak)
    bounds = contrast_bounds(means, con, options, G)
    C = len(con.theta)
    low, high = bounds(np.full(C, level.cz))
    if options.pvalues:
        p1, psd = inverted_pvalues(bounds, con.theta, level)
    else:  # the coverage study needs the intervals only (and the bounds at any z)
        p1, psd = np.full(C, np.nan), np.full(C, np.nan)
    return MoverFamily(estimate=con.theta, se=con.se, zero_se=con.zero, low=low, high=high,
                       critical_value=level.cz,
                       per_contrast_level=float(1 - 2 * special.ndtr(-level.cz)),
                       p_single_step=p1, p_stepdown=psd, pairs=con.pairs, bounds=bounds)


def single_means(sums: EpisodeSums, df_mode: str) -> SingleMeans:
    """Stage 1: every planner mean with its CR1 SE, task-level variance and degrees of
    freedom (``df_mode`` of :class:`MoverOptions`; ``"contrast"`` is set after stage 2)."""
    G = sums.S.shape[0]
    P, M = sums.n_planners, sums.n_metrics
    N1 = np.repeat(np.asarray(sums.n_g, float)[:, None], P * M, axis=1)
    th1, se1, _ = cr1_se(sums.S, N1)
    n1 = N1.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        s2 = np.maximum(sums.Q.sum(axis=0) - n1 * th1 * th1, 0) / np.maximum(n1 - 1, 1)
    e1 = sums.S - th1 * N1
    if df_mode == "satt":
        df1 = column_df(e1, N1)
    elif df_mode == "pooled":
        df1 = np.full(P * M, satterthwaite_df(e1, N1[:, 0]))
    elif df_mode == "metric":  # one df per metric, pooled over the planners
        df1 = np.tile([satterthwaite_df(e1[:, m::M], N1[:, 0]) for m in range(M)], P)
    else:  # "g1" (and "contrast" until stage 2 gives its df)
        df1 = np.full(P * M, G - 1.0)
    return SingleMeans(theta=th1, se=se1, s2=s2, n=n1, scores=e1, N=N1, df=df1,
                       bounded=np.tile(np.asarray(sums.bounded, bool), P))


def contrasts(sums: EpisodeSums, means: SingleMeans) -> Contrasts:
    """Stage 2: every contrast's estimate and CR1 SE (integer sums stay exact, so a zero
    SE is found exactly), and the correlation of its two means' episode scores."""
    P, M = sums.n_planners, sums.n_metrics
    pairs, Cm = contrast_matrix(P, M)
    D = sums.S @ Cm
    if _is_int(sums.S):
        D = np.round(D)
    C = D.shape[1]
    N = np.repeat(means.N[:, :1], C, axis=1)
    theta, se, zero = cr1_se(D, N)
    ia = np.array([a * M + m for a, b in pairs for m in range(M)])
    ib = np.array([b * M + m for a, b in pairs for m in range(M)])
    e1 = means.scores
    with np.errstate(invalid="ignore", divide="ignore"):
        den = np.sqrt((e1[:, ia] ** 2).sum(axis=0) * (e1[:, ib] ** 2).sum(axis=0))
        r = np.where((den > 0) & ~zero, (e1[:, ia] * e1[:, ib]).sum(axis=0) / np.where(den > 0, den, 1), 0.0)
    return Contrasts(pairs=pairs, D=D, N=N, theta=theta, se=se, zero=zero, ia=ia, ib=ib, r=r)


def family_level(con: Contrasts, confidence_level: float, n_resamples: int,
                 rng: np.random.Generator, few_sidak: bool) -> FamilyLevel:
    """Stage 3: the max-|z| quantile of a Gaussian multiplier on the episode scores of
    the contrasts with nonzero SE (Bonferroni's z when every SE is zero), at least
    Sidak's with fewer than 8 episodes (``few_sidak``)."""
    G, C = con.D.shape
    active = ~con.zero
    alpha = 1 - confidence_level
    if active.any():
        dev = con.D[:, active] - con.theta[active] * con.N[:, active]
        xi = rng.standard_normal((n_resamples, G))
        scale = np.sqrt((dev * dev).sum(axis=0))
    else:
        xi = np.zeros((n_resamples, 0))

    def null_blocks():
        """|z| of every contrast under the multipliers (0 where inactive), in blocks of
        replicates: with 24 planners the whole (B, C) matrix and its temporaries would
        take several hundred MiB."""
        for b0 in range(0, n_resamples, NULL_BLOCK):
            Z = np.zeros((len(xi[b0:b0 + NULL_BLOCK]), C))
            if active.any():
                Z[:, active] = np.abs((xi[b0:b0 + NULL_BLOCK] @ dev) / scale)
            yield Z

    if active.any():
        mxz = np.concatenate([Z.max(axis=1) for Z in null_blocks()])
        cz = float(quantile(mxz, confidence_level))
    else:
        cz = float(-special.ndtri(alpha / (2 * C)))
        mxz = np.full(n_resamples, cz)
    sidak = few_sidak and G < WARN_CLUSTERS
    if sidak:
        cz = max(cz, sidak_z(alpha, C))
    return FamilyLevel(cz=cz, max_null=mxz, null_blocks=null_blocks, sidak=sidak)


def _single_limits(theta, se, s2, n, df, bounded, a, single="cp"):
    """Per-column bounds at one-sided level ``a``: Korn-Graubard CP (``single="cp"``) or
    Korn-Graubard Wilson (``"wilson"``) for [0, 1] columns, ``theta +- t_df se``
    otherwise."""
    fn = kg_interval if single == "cp" else kg_wilson_interval
    lo, hi, _ = fn(np.clip(theta, 0, 1), se * se, s2, n, df, a)
    q = -special.stdtrit(df, a)
    return np.where(bounded, lo, theta - q * se), np.where(bounded, hi, theta + q * se)


def contrast_bounds(means: SingleMeans, con: Contrasts, options: MoverOptions, G: int) -> Callable:
    """Stage 4: ``bounds(z)``, the (low, high) of every contrast at per-contrast normal
    quantile(s) ``z``: the MOVER combination of the two means' single limits (the
    ``cr2bm`` candidate's symmetric CR2 intervals where it applies), then the contrast
    floor (``options.floor``)."""
    ia, ib, m = con.ia, con.ib, means

    def mover_bounds(z):
        """MOVER bounds of every contrast at per-contrast normal quantile(s) ``z``."""
        a1 = special.ndtr(-np.asarray(z, float))
        la, ua = _single_limits(m.theta[ia], m.se[ia], m.s2[ia], m.n[ia], m.df[ia], m.bounded[ia], a1,
                                options.single)
        lb, ub = _single_limits(m.theta[ib], m.se[ib], m.s2[ib], m.n[ib], m.df[ib], m.bounded[ib], a1,
                                options.single)
        return mover_difference(m.theta[ia], la, ua, m.theta[ib], lb, ub, con.r)

    unfloored = cr2bm_bounds(mover_bounds, means, con) if options.contrast == "cr2bm" else mover_bounds
    if options.floor is None:
        return unfloored
    theta, se = con.theta, con.se

    def bounds(z):
        """The floored bounds: each half-width at least ``t_{G-1}`` times the CR1 SE."""
        lo, hi = unfloored(z)
        q = -special.stdtrit(G - 1.0, special.ndtr(-np.asarray(z, float)))
        return np.minimum(lo, theta - q * se), np.maximum(hi, theta + q * se)

    return bounds


def inverted_pvalues(bounds: Callable, theta: np.ndarray, level: FamilyLevel):
    """Stage 5: ``(p_single_step, p_stepdown)`` by inverting the intervals: ``z_j`` is
    the normal quantile at which contrast j's interval touches 0 (the bounds are
    monotone in z; 40 bisection steps from [0, 37] give z to 1e-10)."""
    C = len(theta)
    lo_z, hi_z = np.zeros(C), np.full(C, 37.0)
    sign = np.sign(theta)
    for _ in range(40):
        mid = (lo_z + hi_z) / 2
        lo, hi = bounds(mid)
        excl = np.where(sign > 0, lo > 0, np.where(sign < 0, hi < 0, False))
        lo_z = np.where(excl, mid, lo_z)
        hi_z = np.where(excl, hi_z, mid)
    zj = np.where(sign == 0, 0.0, (lo_z + hi_z) / 2)
    p1 = (level.max_null[:, None] >= zj[None, :]).mean(axis=0)
    if level.sidak:
        return sidak_and_holm_sidak(zj, p1)
    return p1, np.minimum(_stepdown(level.null_blocks(), zj), p1)


def _is_int(X) -> bool:
    return bool(np.all(np.isfinite(X)) and np.all(X == np.round(X)))

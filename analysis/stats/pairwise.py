"""Simultaneous pairwise planner contrasts with episode-cluster resampling."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd
from scipy import special, stats

from ._core import (
    WARN_CLUSTERS,
    one_blas_thread,
    Provenance,
    check_cluster_count,
    check_cluster_ids,
    emit_warnings,
    recorded_seed,
    ESTIMAND,
    check_choice,
    check_columns,
    check_values,
    check_confidence,
    check_resamples,
    cr1_se,
    pairs_weights,
    quantile,
    replicate_ratio_se,
    studentize,
)
from .intervals import (bell_mccaffrey_df, column_df, cr2_se, kg_interval, kg_wilson_interval,
                        mover_difference)
from .intervals import satterthwaite_df  # noqa: F401  (public here since the first release)

METHODS = (
    "mover_kg_maxz",
    "mover_wilson_maxz",
    "cr2bm_mover_maxz",
    "satt_maxt_tcal",
    "pairs_maxt_studentized",
    "gauss_maxt_tcal",
    "cr3_maxt_tcal",
    "geff_maxt_tcal",
    "bonferroni_t",
    "wild_maxt",
)
DEFAULT_METHOD = "mover_kg_maxz"
#: Why a stepdown p-value below the level can sit beside a tie (printed in table notes).
STEPDOWN_NOTE = ("Verdicts come from the simultaneous intervals; the single-step p-value "
                 "is below the level exactly when the interval excludes 0. Romano-Wolf "
                 "stepdown p-values are never larger than single-step ones (each step drops "
                 "the contrasts already rejected), so a tie can have a stepdown p below the "
                 "level: the stepdown test rejects, the simultaneous interval does not.")

#: Added to the note of the default with fewer than 8 episodes (mover_family step 4).
FEW_EPISODES_NOTE = (" With fewer than 8 episodes the family level is at least Sidak's and the "
                     "stepdown p-values are Holm-Sidak (the multiplier's correlation has rank "
                     "below G).")


@dataclass(frozen=True)
class PairwiseResult(Provenance):
    """Result of :func:`pairwise_simultaneous`.

    ``table``: one row per (planner_a, planner_b, metric) with ``estimate`` (a - b),
    ``se`` (CR1), ``t``, ``low``, ``high`` (simultaneous), ``p_single_step``,
    ``p_stepdown`` (Romano-Wolf; Holm for ``bonferroni_t``), ``verdict`` in
    {``a>b``, ``b>a``, ``tie``}, ``zero_se`` and ``set_aside``. ``critical_value`` is
    the family-wise threshold (|z| for ``mover_kg_maxz``, whose intervals are each at
    ``per_contrast_level``; |t| otherwise). Under ``mover_kg_maxz`` a zero-SE contrast
    keeps an honest interval (from the exact bounds of its two means) and is not set
    aside; under the t methods ``set_aside`` lists zero-SE contrasts (kept out of the
    family, never divided by zero; their interval is the point estimate).
    ``warnings`` holds the few-episode warning, ``note`` how p-values and verdicts relate.
    """

    table: pd.DataFrame
    critical_value: float
    set_aside: pd.DataFrame
    n_clusters: int
    family_size: int
    estimand: str = ESTIMAND
    per_contrast_level: float = float("nan")
    warnings: tuple = ()
    note: str = ""


def contrast_matrix(n_planners: int, n_metrics: int):
    """(P*M, C) matrix of +1/-1 columns, pairs (a<b) outer, metrics inner.

    Columns of the per-cluster matrix are ordered planner-major (p0m0, p0m1, ...).
    """
    pairs = list(combinations(range(n_planners), 2))
    C = np.zeros((n_planners * n_metrics, len(pairs) * n_metrics))
    k = 0
    for a, b in pairs:
        for m in range(n_metrics):
            C[a * n_metrics + m, k] = 1
            C[b * n_metrics + m, k] = -1
            k += 1
    return pairs, C


def _stepdown(null_abs, obs_abs: np.ndarray) -> np.ndarray:
    """Romano-Wolf stepdown p-values from a (B, m) null matrix of |statistics|, or from
    an iterable of row blocks of it (the same p-values, exactly: counts are summed)."""
    if obs_abs.size == 0:
        return obs_abs.copy()
    order = np.argsort(-obs_abs, kind="stable")
    hits, n = np.zeros(obs_abs.size), 0
    for block in ([null_abs] if isinstance(null_abs, np.ndarray) else null_abs):
        srt = block[:, order]
        rev = np.maximum.accumulate(srt[:, ::-1], axis=1)[:, ::-1]
        hits += np.count_nonzero(rev >= obs_abs[order][None, :], axis=0)
        n += block.shape[0]
    p = hits / n
    p = np.maximum.accumulate(p)
    out = np.empty_like(p)
    out[order] = p
    return out


def _single_step(null_abs, obs_abs):
    mx = null_abs.max(axis=1)
    return (mx[:, None] >= obs_abs[None, :]).mean(axis=0), mx


def _t_to_z(tabs, df):
    """Map |t| (t with df d.o.f.) to the normal |z| with the same two-sided tail."""
    return -special.ndtri(np.clip(stats.t.sf(tabs, df), 1e-300, None))


def effective_clusters(sizes) -> float:
    """Effective number of clusters ``(sum n_g)^2 / sum n_g^2`` (= G for equal sizes).

    The degrees of freedom of a cluster-robust t with unequal cluster sizes are
    closer to ``G_eff - 1`` than to ``G - 1`` (Carter, Schnepel and Steigerwald 2017,
    with a working model of independent tasks).
    """
    n = np.asarray(sizes, dtype=float)
    return float(n.sum() ** 2 / (n * n).sum())


def jackknife_se(D, N):
    """CR3-type (leave-one-cluster-out jackknife) SE of the ratio and the deviations.

    ``se_j = sqrt((G-1)/G * sum_g (theta_(g)j - mean_g theta_(g)j)^2)``; returns
    ``(se, dev)`` with ``dev`` the (G, C) centred leave-one-out estimates.
    """
    G = D.shape[0]
    with np.errstate(invalid="ignore", divide="ignore"):
        loo = (D.sum(axis=0) - D) / (N.sum(axis=0) - N)
    dev = loo - loo.mean(axis=0)
    return np.sqrt((G - 1) / G * (dev * dev).sum(axis=0)), dev


def family_inference(method, D, N, theta, se, active, alpha_fw, B, rng):
    """Critical value, p-values and SEs for the active contrasts.

    ``D`` (G, C) per-cluster contrast sums, ``N`` (G, C) counts, ``se`` the CR1 SEs.
    Returns ``(crit, p_single, p_stepdown, se_used)`` for the active columns
    (``se_used`` is the CR1 SE except for ``cr3_maxt_tcal``, which uses the
    jackknife SE).
    """
    G = D.shape[0]
    Da, Na = D[:, active], N[:, active]
    th, sa = theta[active], se[active]
    m = int(active.sum())
    if m == 0:
        return np.nan, np.array([]), np.array([]), sa
    if method in ("cr3_maxt_tcal", "geff_maxt_tcal", "satt_maxt_tcal"):
        if method == "cr3_maxt_tcal":
            s_used, dev = jackknife_se(Da, Na)
            df = G - 1
        elif method == "satt_maxt_tcal":
            s_used, dev = sa, Da - th * Na
            df = satterthwaite_df(dev, Na[:, 0])
        else:
            s_used, dev = sa, Da - th * Na
            df = effective_clusters(Na[:, 0]) - 1
        t_obs = np.abs(th / s_used)
        xi = rng.standard_normal((B, G))
        Z = np.abs((xi @ dev) / np.sqrt((dev * dev).sum(axis=0)))
        z_obs = _t_to_z(t_obs, df)
        p1, mxz = _single_step(Z, z_obs)
        cz = float(quantile(mxz, 1 - alpha_fw))
        crit = float(stats.t.isf(special.ndtr(-cz), df))
        return crit, p1, _stepdown(Z, z_obs), s_used
    t_obs = np.abs(th / sa)

    def pairs_t():
        W = pairs_weights(rng, B, G)
        tb, seb, zb = replicate_ratio_se(W, Da, Na, G)
        T = np.abs(studentize(tb, th, seb, zb, sa))
        return np.where(np.isnan(T), 0.0, T)

    def gauss_z():
        # Gaussian multiplier on the cluster scores: Z has the contrasts' CR1 correlation
        xi = rng.standard_normal((B, G))
        e = Da - th * Na
        scale = np.sqrt((e * e).sum(axis=0))
        return np.abs((xi @ e) / scale)

    if method == "bonferroni_t":
        crit = stats.t.ppf(1 - alpha_fw / (2 * m), G - 1)
        praw = 2 * stats.t.sf(t_obs, G - 1)
        p1 = np.minimum(1.0, m * praw)
        order = np.argsort(praw, kind="stable")
        holm = np.minimum(1.0, (m - np.arange(m)) * praw[order])
        holm = np.maximum.accumulate(holm)
        psd = np.empty(m)
        psd[order] = holm
        return crit, p1, psd, sa
    if method == "pairs_maxt_studentized":
        T = pairs_t()
        p1, mx = _single_step(T, t_obs)
        return float(quantile(mx, 1 - alpha_fw)), p1, _stepdown(T, t_obs), sa
    if method == "wild_maxt":
        xi = rng.choice(np.array([-1.0, 1.0]), size=(B, G))
        e = Da - th * Na
        T = np.abs((xi @ e) / np.sqrt(G / (G - 1) * (e * e).sum(axis=0)))
        p1, mx = _single_step(T, t_obs)
        return float(quantile(mx, 1 - alpha_fw)), p1, _stepdown(T, t_obs), sa
    if method == "gauss_maxt_tcal":
        Z = gauss_z()
        z_obs = _t_to_z(t_obs, G - 1)
        p1g, mxz = _single_step(Z, z_obs)
        cz = float(quantile(mxz, 1 - alpha_fw))
        crit_g = float(stats.t.isf(special.ndtr(-cz), G - 1))
        return crit_g, p1g, _stepdown(Z, z_obs), sa
    raise AssertionError(method)


#: family methods computed by :func:`mover_family`, with its options
MOVER_METHODS = {
    "mover_kg_maxz": dict(single="cp", contrast="mover"),
    "mover_wilson_maxz": dict(single="wilson", contrast="mover"),
    "cr2bm_mover_maxz": dict(single="cp", contrast="cr2bm"),
}
#: cr2bm_mover_maxz: a contrast uses MOVER when one of its means has fewer than this
#: many effective successes or failures (theta n_eff or (1 - theta) n_eff)
NEAR_BOUND_COUNT = 10.0


def _single_limits(theta, se, s2, n, df, bounded, a, single="cp"):
    """Per-column bounds at one-sided level ``a``: Korn-Graubard CP (``single="cp"``) or
    Korn-Graubard Wilson (``"wilson"``) for [0, 1] columns, ``theta +- t_df se``
    otherwise."""
    fn = kg_interval if single == "cp" else kg_wilson_interval
    lo, hi, _ = fn(np.clip(theta, 0, 1), se * se, s2, n, df, a)
    q = -special.stdtrit(df, a)
    return np.where(bounded, lo, theta - q * se), np.where(bounded, hi, theta + q * se)


def mover_family(S, Q, n_g, n_planners, n_metrics, bounded, confidence_level, n_resamples, rng,
                 df_mode: str = "satt", pvalues: bool = True, floor: str | None = "g1",
                 few_sidak: bool = True, single: str = "cp", contrast: str = "mover"):
    """The default family inference (``mover_kg_maxz``) on per-episode arrays.

    ``S``, ``Q`` (G, P*M): per-episode sums and sums of squares, planner-major columns
    (p0m0, p0m1, ...); ``n_g`` (G,) tasks per episode; ``bounded`` (M,) metrics in [0, 1].

    1. Family level: a Gaussian multiplier on the episode scores of the contrasts with
       nonzero SE gives the max-|z| quantile ``cz`` of the family (their joint CR1
       correlation), i.e. a per-contrast level ``1 - 2 Phi(-cz)`` (Sidak when the
       contrasts are independent, the single level when they coincide).
    2. Each planner's mean gets its Korn-Graubard Clopper-Pearson interval at that level
       (:func:`analysis.stats.intervals.kg_interval`; t for unbounded metrics), with its
       own Satterthwaite df (``df_mode="satt"``, as for single means; ``"pooled"`` fits
       one df to the whole family: more power, but family-wise coverage 0.90-0.92 in
       the extreme-size, near-1 and fraction designs of ``bench/coverage.py``;
       ``"contrast"`` fits it to the contrasts' scores; ``"metric"`` one per metric
       over the planners; ``"g1"`` uses G - 1, which
       undercovers with unequal episodes), and each contrast the MOVER
       interval of the two (correlation
       of the two means' episode scores; 0 where the contrast's SE is zero, so two
       planners with no success get the honest interval [-U_b, U_a], never [0, 0]).
       The intervals are asymmetric where the rates are near 0 or 1, which is where the
       CR1 t of a binary contrast is skewed.
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
       interval stands).
       ``floor=None, few_sidak=False`` is the first-round default.
       Candidates of issue 11's power round (non-default): ``single="wilson"``
       (``mover_wilson_maxz``) takes each mean's Korn-Graubard *Wilson* score interval
       (:func:`analysis.stats.intervals.kg_wilson_interval`, same n_eff and df) in
       place of Clopper-Pearson (Newcombe's hybrid score method, 1998, with the
       cluster design effect); ``contrast="cr2bm"`` (``cr2bm_mover_maxz``) gives every
       contrast whose two means each have at least ``NEAR_BOUND_COUNT`` effective
       successes and failures the symmetric interval ``d +- t_nu se_CR2`` (CR2 SE,
       Bell-McCaffrey df ``nu`` under independent tasks, Pustejovsky and Tipton 2018)
       at the same per-contrast level, and the MOVER interval to the others (rates at or
       near 0 or 1, zero SE); the floor of step 3 applies to both.
    4. Few episodes (G < 8): the multiplier's max-|z| comes from a correlation of rank
       at most G - 1, far below the family size, and understates the family's maximum
       (4 episodes: 45 contrasts behave like 3); the family level is then at least
       Sidak's, ``Phi^-1(1 - a_C / 2)`` with ``a_C = 1 - (1 - alpha)^(1/C)``.
    5. p-values by inverting the intervals: ``z_j`` is the level (as a normal quantile)
       at which contrast j's interval touches 0 (bisection); single-step
       ``p = P(max|Z| >= z_j)`` (with G < 8 the larger of that and the Sidak p) is
       below the level iff the interval excludes 0; stepdown: Romano-Wolf on the same
       ``z_j`` (Holm-Sidak with G < 8), never above the single-step p.

    Returns a dict with ``theta, se, zero, low, high, p1, psd, cz, level``.
    """
    G = S.shape[0]
    P, M = n_planners, n_metrics
    N1 = np.repeat(np.asarray(n_g, float)[:, None], P * M, axis=1)
    th1, se1, _ = cr1_se(S, N1)
    n1 = N1.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        s2 = np.maximum(Q.sum(axis=0) - n1 * th1 * th1, 0) / np.maximum(n1 - 1, 1)
    e1 = S - th1 * N1
    if df_mode == "satt":
        df1 = column_df(e1, N1)
    elif df_mode == "pooled":
        df1 = np.full(P * M, satterthwaite_df(e1, N1[:, 0]))
    elif df_mode == "metric":  # one df per metric, pooled over the planners
        df1 = np.tile([satterthwaite_df(e1[:, m::M], N1[:, 0]) for m in range(M)], P)
    else:
        df1 = np.full(P * M, G - 1.0)
    bnd1 = np.tile(np.asarray(bounded, bool), P)
    pairs, Cm = contrast_matrix(P, M)
    D = S @ Cm
    if _is_int(S):
        D = np.round(D)
    C = D.shape[1]
    N = np.repeat(N1[:, :1], C, axis=1)
    theta, se, zero = cr1_se(D, N)
    if df_mode == "contrast":
        df1 = np.full(P * M, satterthwaite_df(D - theta * N, N1[:, 0]))
    ia = np.array([a * M + m for a, b in pairs for m in range(M)])
    ib = np.array([b * M + m for a, b in pairs for m in range(M)])
    with np.errstate(invalid="ignore", divide="ignore"):
        den = np.sqrt((e1[:, ia] ** 2).sum(axis=0) * (e1[:, ib] ** 2).sum(axis=0))
        r = np.where((den > 0) & ~zero, (e1[:, ia] * e1[:, ib]).sum(axis=0) / np.where(den > 0, den, 1), 0.0)
    active = ~zero
    alpha = 1 - confidence_level
    if active.any():
        dev = D[:, active] - theta[active] * N[:, active]
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

    def bounds(z):
        """MOVER bounds of every contrast at per-contrast normal quantile(s) ``z``."""
        a1 = special.ndtr(-np.asarray(z, float))
        la, ua = _single_limits(th1[ia], se1[ia], s2[ia], n1[ia], df1[ia], bnd1[ia], a1, single)
        lb, ub = _single_limits(th1[ib], se1[ib], s2[ib], n1[ib], df1[ib], bnd1[ib], a1, single)
        return mover_difference(th1[ia], la, ua, th1[ib], lb, ub, r)

    if contrast == "cr2bm":
        with np.errstate(invalid="ignore", divide="ignore"):
            v1 = np.maximum(se1 * se1, s2 / np.maximum(n1, 1))
            neff1 = np.where(v1 > 0, th1 * (1 - th1) / np.where(v1 > 0, v1, 1), 0.0)
        few = bnd1 & (np.minimum(th1, 1 - th1) * neff1 < NEAR_BOUND_COUNT)
        use_t = ~(few[ia] | few[ib] | zero)
        se2 = cr2_se(D - theta * N, N1[:, 0])
        nu = bell_mccaffrey_df(N1[:, 0])
        mover_only = bounds

        def bounds(z):  # noqa: F811  (t with CR2 / Bell-McCaffrey where no mean is near 0 or 1)
            lo_m, hi_m = mover_only(z)
            q = -special.stdtrit(nu, special.ndtr(-np.asarray(z, float)))
            return (np.where(use_t, theta - q * se2, lo_m), np.where(use_t, theta + q * se2, hi_m))
    elif contrast != "mover":
        raise ValueError(f"contrast={contrast!r}; valid: 'mover', 'cr2bm'")

    sidak = few_sidak and G < WARN_CLUSTERS
    if sidak:
        # Sidak: per-contrast two-sided level 1 - (1 - alpha)^(1/C)
        cz = max(cz, float(-special.ndtri(-np.expm1(np.log1p(-alpha) / C) / 2)))
    if floor == "g1":
        def floored(z, lo_hi):
            q = -special.stdtrit(G - 1.0, special.ndtr(-np.asarray(z, float)))
            return np.minimum(lo_hi[0], theta - q * se), np.maximum(lo_hi[1], theta + q * se)
    elif floor is None:
        def floored(z, lo_hi):
            return lo_hi
    else:
        raise ValueError(f"floor={floor!r}; valid: 'g1', None")
    mover_bounds = bounds

    def bounds(z):  # noqa: F811  (the floored MOVER bounds)
        return floored(z, mover_bounds(z))

    low, high = bounds(np.full(C, cz))
    if not pvalues:  # the coverage study needs the intervals only (and the bounds at any z)
        return dict(theta=theta, se=se, zero=zero, low=low, high=high, cz=cz, pairs=pairs,
                    bounds=bounds)
    # invert: the z at which the interval touches 0 (monotone in z)
    lo_z, hi_z = np.zeros(C), np.full(C, 37.0)
    sign = np.sign(theta)
    for _ in range(40):  # 37 / 2^40: z exact to 1e-10
        mid = (lo_z + hi_z) / 2
        l, h = bounds(mid)
        excl = np.where(sign > 0, l > 0, np.where(sign < 0, h < 0, False))
        lo_z = np.where(excl, mid, lo_z)
        hi_z = np.where(excl, hi_z, mid)
    zj = np.where(sign == 0, 0.0, (lo_z + hi_z) / 2)
    p1 = (mxz[:, None] >= zj[None, :]).mean(axis=0)
    if sidak:
        praw = 2 * special.ndtr(-zj)
        p1 = np.maximum(p1, -np.expm1(C * np.log1p(-np.minimum(praw, 1 - 1e-16))))
        # Holm-Sidak: the k-th smallest raw p against the C - k + 1 still in the family
        order = np.argsort(praw, kind="stable")
        k = np.arange(C)
        adj = -np.expm1((C - k) * np.log1p(-np.minimum(praw[order], 1 - 1e-16)))
        psd = np.empty(C)
        psd[order] = np.maximum.accumulate(adj)
        psd = np.minimum(psd, p1)
    else:
        psd = np.minimum(_stepdown(null_blocks(), zj), p1)
    return dict(theta=theta, se=se, zero=zero, low=low, high=high, p1=p1, psd=psd, cz=cz,
                level=float(1 - 2 * special.ndtr(-cz)), pairs=pairs)


#: replicates per block of the multiplier null (mover_family): 1,000 x 828 contrasts is
#: 6.6 MiB
NULL_BLOCK = 1000


def _is_int(X) -> bool:
    return bool(np.all(np.isfinite(X)) and np.all(X == np.round(X)))


@one_blas_thread
def pairwise_simultaneous(
    df: pd.DataFrame,
    metrics,
    planner_col: str = "planner",
    task_col: str = "task_id",
    cluster_col: str = "episode_id",
    method: str = DEFAULT_METHOD,
    n_resamples: int = 10_000,
    confidence_level: float = 0.95,
    seed: int | np.random.Generator | None = 0,
    planners=None,
) -> PairwiseResult:
    """All planner pairs x metrics with simultaneous intervals (episode clusters).

    ``df`` has one row per (planner, task); every planner must cover the same tasks.
    Each contrast is ``mean_a - mean_b`` over all tasks (a ratio of per-episode
    sums of task differences); its CR1 SE uses G/(G-1). Methods:

    * ``mover_kg_maxz`` (default, :func:`mover_family`): the family's max-|z| level
      from a Gaussian multiplier on the episode scores; each contrast the MOVER
      interval of its two means' Korn-Graubard Clopper-Pearson intervals at that level
      (asymmetric near 0 and 1; a zero-SE contrast keeps an honest interval, never a
      point; every other half-width at least ``t_{G-1}`` times the contrast's CR1 SE;
      family level at least Sidak's with fewer than 8 episodes); p-values by inverting
      the intervals, so single-step p < level exactly
      when the interval excludes 0. Holds family-wise coverage under true differences
      and rare success in ``bench/coverage.py`` (docs/statistics.md).
    * ``mover_wilson_maxz``, ``cr2bm_mover_maxz`` (issue 11's power round, not the
      default; :func:`mover_family`): as the default with each mean's Korn-Graubard
      Wilson interval in place of Clopper-Pearson, or with ``d +- t_nu se_CR2``
      (Bell-McCaffrey df) for contrasts whose means are away from 0 and 1. Neither both
      covers 0.93 in every design and matches Bonferroni-t's power (docs/statistics.md).
    * ``satt_maxt_tcal`` (the previous default): CR1 SEs; the contrasts' joint correlation from a
      Gaussian multiplier on the episode scores gives a max-|z| quantile, whose
      per-contrast tail probability is converted to a t quantile with Satterthwaite
      degrees of freedom (cluster score variances modelled as ``b1 n_g + b2 n_g^2``,
      fitted on the family; ``G - 1`` for equal episodes). Exact at both ends
      (perfectly correlated contrasts -> t, independent -> Sidak-t); covers under the
      null but not under true differences of binary rates or at zero SE.
    * ``pairs_maxt_studentized``: episode pairs bootstrap of max-|t|, re-studentised
      with CR1 SEs in every replicate (conservative with 18 episodes).
    * ``gauss_maxt_tcal``: as the default with t(G-1) (undercovers with unequal episodes).
    * ``cr3_maxt_tcal``: jackknife (CR3) SEs, jackknife correlation, t(G-1).
    * ``geff_maxt_tcal``: t(G_eff - 1), ``G_eff = (sum n_g)^2 / sum n_g^2``.
    * ``bonferroni_t``: CR1 SE with t(G-1) at alpha/(2m); Holm stepdown.
    * ``wild_maxt``: Rademacher weights per episode on the cluster scores.

    p-values are family-wise: ``p_single_step`` against the max over all active
    contrasts, ``p_stepdown`` Romano-Wolf. A contrast whose interval contains 0 is a
    ``tie`` (a stepdown p below the level can sit beside a tie: ``.note``). Under the t
    methods, contrasts with zero SE are set aside (flagged, interval = point).
    A missing episode ID, a task in different episodes across planners, an unknown
    planner or metric, or fewer than 3 episodes is an error; fewer than 8 a warning.

    Example
    -------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"planner": np.repeat(["a", "b", "c"], 40),
    ...                    "task_id": np.tile(np.arange(40), 3),
    ...                    "episode_id": np.tile(np.arange(40) // 4, 3),
    ...                    "success": rng.integers(0, 2, 120)})
    >>> r = pairwise_simultaneous(df, ["success"], n_resamples=1000)
    >>> len(r.table), r.method
    (3, 'mover_kg_maxz')
    """
    check_choice("method", method, METHODS)
    conf = check_confidence(confidence_level)
    B = check_resamples(n_resamples)
    metrics = [metrics] if isinstance(metrics, str) else list(metrics)
    if not metrics:
        raise ValueError("metrics must name at least one column")
    missing = [m for m in metrics if m not in df.columns]
    if missing:
        raise ValueError(f"unknown metric(s) {missing}; valid columns: {sorted(map(str, df.columns))}")
    check_columns(df, [planner_col, task_col, cluster_col, *metrics])
    check_values(df, metrics)
    check_cluster_ids(df, cluster_col)
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    known = list(pd.unique(df[planner_col]))
    if planners is not None:
        unknown = [p for p in planners if p not in set(known)]
        if unknown:
            raise ValueError(f"unknown planner(s) {unknown} in planners=; valid: {sorted(map(str, known))}")
        df = df[df[planner_col].isin(list(planners))]
    if df.duplicated([planner_col, task_col]).any():
        raise ValueError(f"df must have one row per ({planner_col}, {task_col}); found duplicates")
    nan_m = [m for m in metrics if df[m].isna().any()]
    if nan_m:
        raise ValueError(f"metrics {nan_m} contain missing values; every task needs a value")
    plist = known if planners is None else list(planners)
    if len(plist) < 2:
        raise ValueError(f"{planner_col} must have at least two planners; found {plist}")
    P, M = len(plist), len(metrics)
    eps = df.groupby(task_col)[cluster_col].nunique()
    if (eps > 1).any():
        t0 = eps[eps > 1].index[0]
        found = sorted(map(str, df.loc[df[task_col] == t0, cluster_col].unique()))
        raise ValueError(f"{task_col} {t0!r} is mapped to different {cluster_col}s across "
                         f"planners: {found}; a task belongs to one episode")
    wide = df.pivot(index=task_col, columns=planner_col, values=metrics)
    if wide.isna().any().any():
        raise ValueError(f"every planner must cover the same {task_col} set")
    tasks = df.drop_duplicates(task_col).set_index(task_col)[cluster_col]
    ep = tasks.loc[wide.index]
    clusters, cl_idx = np.unique(ep.to_numpy(), return_inverse=True)
    G = len(clusters)
    warn = emit_warnings([check_cluster_count(G, f"pairwise contrasts ({', '.join(metrics)})")])
    # per-cluster sums, planner-major columns (p0m0, p0m1, ...)
    X = np.column_stack([wide[(m, p)].to_numpy(float) for p in plist for m in metrics])
    S = np.zeros((G, P * M))
    np.add.at(S, cl_idx, X)
    n_g = np.bincount(cl_idx, minlength=G).astype(float)
    pairs, Cm = contrast_matrix(P, M)
    alpha_fw = 1 - conf
    if method in MOVER_METHODS:
        Q = np.zeros((G, P * M))
        np.add.at(Q, cl_idx, X * X)
        bounded = np.array([bool(np.all((X[:, k::M] >= 0) & (X[:, k::M] <= 1))) for k in range(M)])
        f = mover_family(S, Q, n_g, P, M, bounded, conf, B, rng, **MOVER_METHODS[method])
        theta, se, zero = f["theta"], f["se"], f["zero"]
        low, high, p1, psd = f["low"], f["high"], f["p1"], f["psd"]
        crit, set_aside = f["cz"], np.zeros(len(theta), bool)
        family_size, level = len(theta), f["level"]
    else:
        D = S @ Cm
        if np.all(X == np.round(X)):
            D = np.round(D)
        N = np.repeat(n_g[:, None], D.shape[1], axis=1)
        theta, se, zero = cr1_se(D, N)
        active = ~zero
        crit, p1a, psda, se_used = family_inference(method, D, N, theta, se, active, alpha_fw, B, rng)
        se = se.copy()
        se[active] = se_used
        C = D.shape[1]
        p1 = np.full(C, np.nan)
        psd = np.full(C, np.nan)
        p1[active], psd[active] = p1a, psda
        low = np.where(active, theta - crit * se, theta)
        high = np.where(active, theta + crit * se, theta)
        set_aside, family_size = zero, int(active.sum())
        level = float(2 * stats.t.cdf(crit, G - 1) - 1) if np.isfinite(crit) else float("nan")
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.where(~zero, theta / np.where(~zero, se, 1.0), np.nan)
    verdict = np.where(low > 0, "a>b", np.where(high < 0, "b>a", "tie"))
    table = pd.DataFrame({
        "planner_a": [plist[a] for a, b in pairs for _ in metrics],
        "planner_b": [plist[b] for a, b in pairs for _ in metrics],
        "metric": [m for _ in pairs for m in metrics],
        "estimate": theta, "se": se, "t": t, "low": low, "high": high,
        "p_single_step": p1, "p_stepdown": psd, "verdict": verdict, "zero_se": zero,
        "set_aside": set_aside,
    })
    return PairwiseResult(
        table=table,
        critical_value=float(crit),
        set_aside=table.loc[set_aside, ["planner_a", "planner_b", "metric", "estimate"]].reset_index(drop=True),
        method=method,
        n_resamples=0 if method == "bonferroni_t" else B,
        confidence_level=conf,
        seed=recorded_seed(seed),
        n_clusters=G,
        family_size=family_size,
        per_contrast_level=level,
        warnings=warn,
        note=STEPDOWN_NOTE + (FEW_EPISODES_NOTE if method in MOVER_METHODS and G < WARN_CLUSTERS
                              else ""),
    )

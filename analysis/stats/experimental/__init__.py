"""Pairwise methods that lost the validation (docs/statistics.md, "Coverage study" and
"Power round"); kept for comparison, the coverage bench and the Bonferroni-t
cross-check of Table 6, not for verdicts.

Why they are here and not beside the default (:mod:`analysis.stats.mover`): each one
fails issue 11's requirement in some design of ``bench/coverage.py`` (1,000 datasets
per design), so a reader should not take one for an alternative default.

* :mod:`.maxt`: the symmetric ``estimate +- critical value x SE`` families
  ``satt_maxt_tcal`` (the previous default), ``gauss_maxt_tcal``, ``cr3_maxt_tcal``,
  ``geff_maxt_tcal``, ``pairs_maxt_studentized``, ``wild_maxt`` and ``bonferroni_t``.
  A contrast with zero SE is a point, and the t calibrations undercover under true
  differences: ``satt_maxt_tcal`` and ``bonferroni_t`` cover 0.73-0.86 family-wise
  under large effects, 0.001-0.49 with rare rates of 0.01-0.05 and 0.11-0.61 with 4-8
  episodes. ``bonferroni_t`` is still computed for Table 6 as the textbook
  cross-check; verdicts come from the default.
* :mod:`.candidates`: the power-round candidate ``cr2bm_mover_maxz`` (CR2 SE with
  Bell-McCaffrey df away from 0 and 1: family-wise coverage 0.910-0.926 in the
  fraction and extreme-size designs). The other candidate, ``mover_wilson_maxz``
  (covers, but is less powerful than Bonferroni-t in 25 of 26 designs with effects), is the
  default with :func:`analysis.stats.intervals.kg_wilson_interval` in place of
  Clopper-Pearson (``MoverOptions(single="wilson")``).

All of them stay reachable by name through
:func:`analysis.stats.pairwise_simultaneous` (``method=``), as before.
"""

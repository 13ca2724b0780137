"""``python -m analysis.compare``: entry point of the command (:mod:`analysis._cli.compare`).

Also the public names docs/api.md gives here: :func:`compare_runs` and
:class:`ComparisonResult` (the comparison itself is :mod:`analysis.report.compare`).
"""
from analysis.report.compare import COMPARE_METRICS, ComparisonResult, compare_runs

__all__ = ["ComparisonResult", "compare_runs", "COMPARE_METRICS"]

if __name__ == "__main__":
    from analysis._cli.compare import main
    main()

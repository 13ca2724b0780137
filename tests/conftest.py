"""Every test writes its caches and journals into a temporary user cache directory
(``$E2W_CACHE_DIR``, analysis/resources.py), never into the real one or the repository.

The suite runs on two pytest-xdist workers (``-n 2 --dist worksteal`` in pyproject.toml).
No test writes into the checkout (the tests that run documented commands with their
default paths run them in a copy: tests/checkout_copy.py), so the workers need no lock;
``$E2W_CACHE_DIR`` comes from ``tmp_path_factory``, whose base folder is the worker's own.
The files holding a test marked ``slow`` are queued first, the file with the most slow
seconds (``slow(seconds=N)``, else 10 s a test) first, each file kept whole so its module
fixtures are built once per worker: the long tests start at once, the longest
(the sections of tests/test_documented_commands.py, up to about 3 minutes each) at the very start, and the short ones
fill the end of both workers' queues, where work stealing balances them.

The tests marked ``e2e`` (pyproject.toml: another process, or a whole command on the
committed export) hold most of the suite's time; ``python -m pytest -m "not e2e"`` is the
README's quick check without them (tests/test_quick_check.py keeps it at 70% or more of
the tests).
"""
import os
from pathlib import Path

import pytest


@pytest.fixture(autouse=True, scope="session")
def _user_cache_dir(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("E2W_CACHE_DIR", str(tmp_path_factory.mktemp("user_cache")))
    yield
    mp.undo()


@pytest.fixture(scope="session")
def compiled_cohort(tmp_path_factory):
    """``(folder, report)`` of the HD-EPIC cohort compiled into a temporary export, once per
    worker (session scope: work stealing may split the files that read it); read only.
    Skipped where the HD-EPIC files are absent."""
    source = Path(os.environ.get("E2W_HDEPIC",
                                 Path(__file__).resolve().parents[2] / "shared" / "hd-epic"))
    if not (source / "SHA256SUMS").is_file():
        pytest.skip(f"HD-EPIC source files absent at {source} (set E2W_HDEPIC)")
    from analysis.compiler.cohort import compile_cohort
    folder = tmp_path_factory.mktemp("compiled_cohort")
    return folder, compile_cohort(source, folder, progress=lambda m: None)


#: The estimate of a test marked ``slow`` without ``seconds=``.
SLOW_SECONDS = 10


#: Docstring examples that run a whole command on the committed export (pyproject's
#: ``e2e``): no decorator can mark a doctest, so they are marked here by name.
E2E_DOCTESTS = {
    # the subset command: verifies the export, re-executes every cut run
    "analysis.planners.llm.subset",
    # every statistic of the committed export with the re-execution of its planner runs
    # (the computation behind python -m analysis.tables)
    "analysis.report.compare", "analysis.api.Export.results",
    # python -m analysis.reexecute of the committed export's lexicon runs
    "analysis._cli.reexecute",
}


@pytest.hookimpl(tryfirst=True)  # before -m selects on the markers
def pytest_collection_modifyitems(config, items):
    """The doctests of :data:`E2E_DOCTESTS` marked ``e2e``; then files with ``slow`` tests
    first, the most slow seconds first; otherwise the collection order (a stable sort on
    collected data: the same on every worker, as xdist requires)."""
    for item in items:
        if item.name in E2E_DOCTESTS and type(item).__name__ == "DoctestItem":
            item.add_marker(pytest.mark.e2e)
    slow_seconds: dict = {}
    for item in items:
        mark = item.get_closest_marker("slow")
        if mark is not None:
            slow_seconds[item.path] = slow_seconds.get(item.path, 0) + \
                mark.kwargs.get("seconds", SLOW_SECONDS)
    items.sort(key=lambda item: -slow_seconds.get(item.path, 0))

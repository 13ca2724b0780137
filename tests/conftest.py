"""Every test writes its caches and journals into a temporary user cache directory
(``$E2W_CACHE_DIR``, analysis/resources.py), never into the real one or the repository.

The suite runs on two pytest-xdist workers (``-n 2 --dist worksteal`` in pyproject.toml).
No test writes into the checkout (the tests that run documented commands with their
default paths run them in a copy: tests/checkout_copy.py), so the workers need no lock;
``$E2W_CACHE_DIR`` comes from ``tmp_path_factory``, whose base folder is the worker's own.
The files holding a test marked ``slow`` are queued first, each file kept whole so its
module fixtures are built once per worker (the expensive read-only ones are session
fixtures: tests/shared_build.py builds a folder once for both workers). ``worksteal``
first sends each worker a contiguous chunk of the queue, then an idle worker steals the
tail half of another's: so the slow files are spread over the chunks, the most slow seconds
(``slow(seconds=N)``, else 10 s a test) first, each to the chunk with the fewest so far
(:class:`_Queue`). Every worker starts on long tests (the sections of
tests/test_documented_commands.py on one, the wheel, the viewer's and the README's
commands on the other) and ends on the short ones, which stealing balances.

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
    """The doctests of :data:`E2E_DOCTESTS` marked ``e2e`` and ``slow`` (each 8 to 12 s
    on 2 cores: queued with the long tests, not left at the end of a worker's queue); the
    order is set after the selection, by :class:`_Queue`."""
    for item in items:
        if item.name in E2E_DOCTESTS and type(item).__name__ == "DoctestItem":
            item.add_marker(pytest.mark.e2e)
            item.add_marker(pytest.mark.slow)


def pytest_configure(config):
    config.pluginmanager.register(_Queue(), "e2w_queue")


def worksteal_chunks(n: int, workers: int) -> list[int]:
    """How many of ``n`` queued tests pytest-xdist's ``worksteal`` first sends to each of
    ``workers`` workers: contiguous chunks, in queue order (its ``check_schedule``).

    >>> worksteal_chunks(11, 2), worksteal_chunks(10, 3)
    ([5, 6], [3, 3, 4])
    """
    sizes = []
    for i in range(workers):
        sizes.append(n // (workers - i))
        n -= sizes[-1]
    return sizes


def queue_order(files: list[tuple[object, float, int]], workers: int) -> list[list] | None:
    """The files of each worker's first chunk, the slow ones spread: ``files`` are
    ``(file, slow seconds, number of tests)`` in collection order; the files with slow
    seconds go, longest first, each to the worker with the fewest slow seconds so far
    (longest processing time first), and the files without fill each chunk up to its
    size (:func:`worksteal_chunks`), in collection order. ``None`` when a worker's slow
    files alone hold more tests than its chunk.

    >>> queue_order([("a", 0, 3), ("b", 50, 1), ("c", 30, 1), ("d", 0, 2), ("e", 25, 1)], 2)
    [['b', 'a'], ['c', 'e', 'd']]
    """
    slow = sorted((f for f in files if f[1] > 0), key=lambda f: -f[1])  # stable
    groups: list[list] = [[] for _ in range(workers)]
    load = [0.0] * workers
    count = [0] * workers
    for name, seconds, n in slow:
        w = load.index(min(load))
        groups[w].append(name)
        load[w] += seconds
        count[w] += n
    sizes = worksteal_chunks(sum(f[2] for f in files), workers)
    if any(c > size for c, size in zip(count, sizes)):
        return None
    fast = [f for f in files if f[1] <= 0]
    for w in range(workers):
        while count[w] < sizes[w] and fast:
            name, _, n = fast.pop(0)
            groups[w].append(name)
            count[w] += n
    return groups


class _Queue:
    @pytest.hookimpl(trylast=True)  # after -m and -k: the tests that will run
    def pytest_collection_modifyitems(self, config, items):
        """The files with ``slow`` tests first, each file kept whole so its module
        fixtures are built once per worker. On xdist workers (``worksteal``: each worker
        first gets a contiguous chunk of the queue and then steals from the tail of the
        others'), the slow files are spread over the chunks by :func:`queue_order`, so
        every worker starts on long tests and ends on short ones that stealing balances;
        a chunk boundary that falls inside a file splits it, which costs the module
        fixtures of that file once more. Otherwise the most slow seconds first. A stable
        sort on collected data: the same on every worker, as xdist requires."""
        slow_seconds: dict = {}
        n_tests: dict = {}
        for item in items:
            n_tests[item.path] = n_tests.get(item.path, 0) + 1
            mark = item.get_closest_marker("slow")
            if mark is not None:
                slow_seconds[item.path] = slow_seconds.get(item.path, 0) + \
                    mark.kwargs.get("seconds", SLOW_SECONDS)
        workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
        groups = queue_order([(p, slow_seconds.get(p, 0), n) for p, n in n_tests.items()],
                             workers) if workers > 1 else None
        if groups is None:
            items.sort(key=lambda item: -slow_seconds.get(item.path, 0))
            return
        rank = {path: i for i, path in enumerate(p for g in groups for p in g)}
        items.sort(key=lambda item: rank[item.path])

"""Every test writes its caches and journals into a temporary user cache directory
(``$E2W_CACHE_DIR``, analysis/resources.py), never into the real one or the repository."""
import pytest


@pytest.fixture(autouse=True, scope="session")
def _user_cache_dir(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("E2W_CACHE_DIR", str(tmp_path_factory.mktemp("user_cache")))
    yield
    mp.undo()

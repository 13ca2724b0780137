"""Build step of the wheel (named in pyproject.toml, ``[tool.setuptools.cmdclass]``):
the wheel carries the Hydra configs and the committed export.

``configs/`` and ``frozen_exports/`` stay at the top of the repository (a clone uses them
in place, :mod:`analysis._fs.resources`); ``build_py`` copies them into the built package as
``analysis/_data/configs`` and ``analysis/_data/frozen_exports``, where an installed
package finds them with :mod:`importlib.resources`. Not used at run time.
"""
import shutil
from pathlib import Path

from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent.parent
SHIPPED = ("configs", "frozen_exports")


class BuildWithData(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):  # an editable install reads the repository's own folders
            return
        for name in SHIPPED:
            dest = Path(self.build_lib) / "analysis" / "_data" / name
            shutil.rmtree(dest, ignore_errors=True)
            shutil.copytree(HERE / name, dest,
                            ignore=shutil.ignore_patterns("__pycache__", ".*"))

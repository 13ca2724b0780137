"""pytest's settings for the package's own modules (``--doctest-modules`` over analysis/).

``analysis/verify.py`` is only the entry point of ``python -m analysis.verify`` (no
examples): importing it would bind ``analysis.verify`` to that module instead of the
public function ``analysis.verify(root)`` for the rest of the test process.
"""
collect_ignore = ["analysis/verify.py"]

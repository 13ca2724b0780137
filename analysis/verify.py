"""``python -m analysis.verify``: entry point only; the command is :mod:`analysis._cli.verify`.

``analysis.verify`` is the public function (docs/api.md: ``analysis.verify(root=None)``,
:func:`analysis.records.verify`). Run this file with ``-m``; do not import it: Python
binds an imported submodule to its package's attribute of the same name, which would
hide the function (pyproject's pytest addopts ``--ignore=analysis/verify.py`` keep the doctest collection from
importing it).
"""
if __name__ == "__main__":
    from analysis._cli.verify import main
    main()

"""The former name of :mod:`analysis.records` (docs/api.md once named
``analysis.frozen.FrozenExport``): every name resolves to the one in
:mod:`analysis.records`, so code written against the old name keeps working.

>>> from analysis.frozen import FrozenExport
>>> FrozenExport.__module__
'analysis.records.loader'
"""


def __getattr__(name):
    from . import records
    return getattr(records, name)

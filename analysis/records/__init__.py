"""The frozen records (paper appendix A.3, frozen task admission, and the reproducibility
statement): canonical hashing, the manifest, verification by trust layer and loading.

>>> from analysis import records
>>> records.verify("frozen_exports").summary()  # doctest: +SKIP
"""
from .hashing import canonical_json, sha256_record
from .integrity import IntegrityError, VerificationReport, verify
from .io import read_records, write_record, write_records
from .manifest import cohort_fingerprint, update_manifest
from .schemas import SchemaError, validate

__all__ = [
    "Export", "FrozenExport", "IntegrityError", "SchemaError", "VerificationReport", "canonical_json",
    "cohort_fingerprint", "load", "read_records", "sha256_record", "update_manifest",
    "validate", "verify", "write_record", "write_records",
]


def __getattr__(name):
    # The loader needs pandas (a quarter second to import); verification alone does not.
    if name in ("Export", "FrozenExport", "load"):
        from . import loader
        return getattr(loader, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

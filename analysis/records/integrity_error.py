"""The error of a frozen export that fails verification (:class:`IntegrityError`: it names
the file, the line and the record) and the helpers every trust layer words it with
(docs/FORMAT.md, "MANIFEST.json").
"""
from __future__ import annotations

from .schemas import ID_FIELDS


class IntegrityError(Exception):
    """The export differs from its manifest or breaks a format rule.

    Attributes ``file``, ``line`` (1-based, or ``None``) and ``record_id`` locate it.
    """

    def __init__(self, file: str, message: str, line: int | None = None,
                 record_id: str | None = None):
        where = file
        if line is not None:
            where += f", line {line}"
        if record_id is not None:
            where += f" (record {record_id})"
        # one line, whatever a message quotes
        super().__init__(f"{where}: {message}".replace("\n", "\\n").replace("\r", "\\r"))
        self.file, self.line, self.record_id = file, line, record_id
        self.message = message

    def __reduce__(self):  # sent whole from a verifying child process
        return type(self), (self.file, self.message, self.line, self.record_id)


def _record_id(record_type: str, record) -> str | None:
    keys = ID_FIELDS.get(record_type)
    if not keys or not isinstance(record, dict):
        return None
    return "/".join(str(record.get(k)) for k in keys)


def _short(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 200 else text[:200] + "..."


def _msg(text: str) -> str:
    """msgspec's "Expected `bool`, got `str`" as "expected bool, got str"."""
    text = text.replace("`", "")
    return text[:1].lower() + text[1:]

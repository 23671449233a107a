"""Errors of the data-file index layer."""

from __future__ import annotations

from impl.errors import PaimonError
from impl.table.errors import InvalidPredicateError


class CorruptFileIndexError(PaimonError):
    """A file index (embedded bytes or a ``.index`` file) fails its checks: wrong magic, an
    unknown version, truncated, or an index type this library does not know. Readers never
    trust such an index: the data file is read. ``where`` names the index."""

    def __init__(self, where: str, reason: str):
        self.where = where
        self.reason = reason
        super().__init__(f"file index {where}: {reason}")


class UnsupportedFileIndexError(PaimonError, NotImplementedError):
    """A ``file-index.<type>.columns`` option this library cannot write (an index type or a
    column type Paimon's writer refuses too, or one not implemented here)."""


class FileIndexLiteralError(InvalidPredicateError):
    """A filter on an indexed column whose literal does not have the column's type: asking the
    index would answer "no rows" for a value the column cannot even hold."""

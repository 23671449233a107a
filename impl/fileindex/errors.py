"""Errors of the data-file index layer (they live in the library's error homes)."""

from impl.errors import CorruptFileIndexError, FileIndexLiteralError, UnsupportedFileIndexError

__all__ = ["CorruptFileIndexError", "FileIndexLiteralError", "UnsupportedFileIndexError"]

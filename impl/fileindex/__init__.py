"""Data-file indexes (Paimon's ``file-index.*``): bloom filters and bitmaps over chosen columns,
written with each data file and used by scans to skip files an equality / IN / IS NULL filter
cannot match. See ``specs/file_index.md`` for the format facts.

- :mod:`impl.fileindex.format`: the container (magic, version, header) and Java's HashMap order;
- :mod:`impl.fileindex.bloom`, :mod:`impl.fileindex.bitmap`: the index types;
- :mod:`impl.fileindex.evaluate`: predicates against indexes (pure functions);
- :mod:`impl.fileindex.writer`: the blob of a file being written (embedded or ``.index``);
- :mod:`impl.fileindex.reader`: scans reading and testing files' indexes.
"""

from impl.fileindex.errors import CorruptFileIndexError, FileIndexLiteralError, UnsupportedFileIndexError
from impl.fileindex.options import FileIndexSpec

__all__ = ["CorruptFileIndexError", "FileIndexLiteralError", "FileIndexSpec", "UnsupportedFileIndexError"]

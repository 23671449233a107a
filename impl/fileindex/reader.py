"""Reading data files' indexes during a scan (the I/O edge of the package): the embedded blob of
a manifest entry or the ``.index`` file its ``_EXTRA_FILES`` list, parsed and evaluated.

An index that fails its checks is never trusted: the file is kept (read), the failure is
logged as a warning and counted (``index_failures``).
"""

from __future__ import annotations

import logging
import posixpath
from typing import Callable, Mapping

from impl.data.types import DataType
from impl.datafile.meta import DataFileMeta
from impl.errors import FileIOError
from impl.fileindex.errors import CorruptFileIndexError
from impl.fileindex.evaluate import FileIndex, evaluate, parse_file_index, remains
from impl.fileindex.writer import INDEX_FILE_SUFFIX
from impl.fs.file_io import FileIO
from impl.predicate.predicate import Predicate

log = logging.getLogger(__name__)


class FileIndexFilter:
    """Tests data files against one predicate through their indexes.

    ``types_of(schema_id)``: the column types of the schema a file was written under, keyed by
    the current column names (columns renamed or retyped since are left out: their index is
    not used). ``embedded_only``: as Paimon's scan of primary-key tables, ignore ``.index`` files.
    """

    def __init__(self, file_io: FileIO, predicate: Predicate, types_of: Callable[[int], Mapping[str, DataType]],
                 *, embedded_only: bool = False):
        self.file_io = file_io
        self.predicate = predicate
        self.types_of = types_of
        self.embedded_only = embedded_only
        self.index_failures = 0  # indexes that failed their checks (the file was kept)

    def _load(self, meta: DataFileMeta, bucket_dir: str) -> FileIndex | None:
        if meta.embedded_file_index is not None:
            where = f"embedded in the entry of {meta.file_name}"
            data = bytes(meta.embedded_file_index)
        else:
            if self.embedded_only:
                return None
            names = [x for x in meta.extra_files if x.endswith(INDEX_FILE_SUFFIX)]
            if not names:
                return None
            if len(names) > 1:
                raise CorruptFileIndexError(meta.file_name, f"more than one index file: {names}")
            base = posixpath.dirname(meta.external_path) if meta.external_path else bucket_dir
            where = posixpath.join(base, names[0])
            data = self.file_io.read_bytes(where)
        return parse_file_index(data, self.types_of(meta.schema_id), where)

    def may_match(self, meta: DataFileMeta, bucket_dir: str) -> bool:
        """False only when the file's index shows no row can match."""
        try:
            index = self._load(meta, bucket_dir)
            if index is None:
                return True
            return remains(evaluate(self.predicate, index))
        except (CorruptFileIndexError, FileIOError, OSError) as e:
            self.index_failures += 1
            log.warning("file index of %s not used (the file is read): %s", meta.file_name, e)
            return True

"""The index blob of one data file, collected while the file is written (Paimon's
``DataFileIndexWriter``): every configured (column, index type) index over the file's rows in
file order, then embedded in the manifest entry (``_EMBEDDED_FILE_INDEX``) when the blob is at
most ``file-index.in-manifest-threshold`` bytes, else written as ``<data-file>.index`` beside
the data file and listed in ``_EXTRA_FILES``.

Index types this library does not write (``bsi``, ``range-bitmap``, map-key indexes
``col[key]``) are left out with a warning: a file without one of its indexes is read whole,
by Paimon Java too, so leaving it out is never a wrong answer.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Sequence

import pyarrow as pa

from impl.data.types import DataField
from impl.datafile.meta import DataFileMeta
from impl.errors import InvalidOptionError
from impl.fileindex import bitmap, bloom
from impl.fileindex.errors import UnsupportedFileIndexError
from impl.fileindex.format import encode_file_index, java_hash_order, java_string_hash
from impl.fileindex.keys import column_keys, key_kind
from impl.fileindex.options import FileIndexSpec
from impl.fs.file_io import FileIO
from impl.options.values import parse_memory_size

log = logging.getLogger(__name__)

INDEX_FILE_SUFFIX = ".index"

_warned: set[tuple[str, str]] = set()


def index_file_name(data_file_name: str) -> str:
    """The separate index file of a data file (Paimon's ``dataFileToFileIndexPath``)."""
    return data_file_name + INDEX_FILE_SUFFIX


def _number(index_type: str, column: str, opts: dict[str, str], key: str, default, parse):
    value = opts.get(key)
    if value is None:
        return default
    try:
        return parse(value)
    except ValueError as e:
        raise InvalidOptionError(f"option 'file-index.{index_type}.{column}.{key}': {value!r} is not a number") from e


def _builder(index_type: str, field: DataField, opts: dict[str, str]):
    kind = key_kind(field.type)
    if index_type == bloom.INDEX_TYPE:
        bloom.check_supported(kind, field.name)
        return bloom.BloomFilterBuilder(_number(index_type, field.name, opts, "items", bloom.DEFAULT_ITEMS, int),
                                        _number(index_type, field.name, opts, "fpp", bloom.DEFAULT_FPP, float))
    if index_type == bitmap.INDEX_TYPE:
        bitmap.check_supported(kind, field.name)
        assert kind is not None  # check_supported refused the rest
        block = opts.get("index-block-size")
        return bitmap.BitmapIndexBuilder(
            kind, _number(index_type, field.name, opts, "version", bitmap.VERSION_2, int),
            bitmap.DEFAULT_BLOCK_SIZE_BYTES if block is None else parse_memory_size(
                f"file-index.{index_type}.{field.name}.index-block-size", block))
    return None


class FileIndexCollector:
    """Builds one data file's index blob from the batches written into it."""

    def __init__(self, spec: FileIndexSpec, fields: Sequence[DataField]):
        by_name = {f.name: f for f in fields}
        self.spec = spec
        self._builders: dict[tuple[str, str], object] = {}
        self._fields: dict[str, DataField] = {}
        for column, types in spec.columns.items():
            for index_type, opts in types.items():
                if column not in by_name:
                    if "[" in column and column.endswith("]"):
                        self._skip(column, index_type, "map-key indexes are not written by this library")
                        continue
                    raise UnsupportedFileIndexError(
                        f"file-index.{index_type}.columns: {column!r} is not a column of the table")
                b = _builder(index_type, by_name[column], opts)
                if b is None:
                    self._skip(column, index_type, "this index type is not written by this library")
                    continue
                self._builders[(column, index_type)] = b
                self._fields[column] = by_name[column]

    @staticmethod
    def _skip(column: str, index_type: str, why: str) -> None:
        if (column, index_type) not in _warned:
            _warned.add((column, index_type))
            log.warning("file index %s on %r left out of written files: %s", index_type, column, why)

    @property
    def active(self) -> bool:
        return bool(self._builders)

    def update(self, table: pa.Table) -> None:
        """Fold in a batch of the file's rows (columns by name, in file order)."""
        keys = {c: column_keys(table.column(c), f.type) for c, f in self._fields.items()}
        for (column, _), b in self._builders.items():
            b.add(keys[column])  # type: ignore[attr-defined]

    def blob(self) -> bytes:
        """The container bytes, columns and index types in Paimon Java's ``HashMap`` orders
        (``DataFileIndexWriter.serializeMaintainers``: types, then each type's columns, collected
        into a map of columns by ``computeIfAbsent``)."""
        types = java_hash_order(dict.fromkeys(t for _, t in self._builders), java_string_hash, head_insert=True)
        inserted: list[str] = []
        for t in types:
            inserted.extend(java_hash_order([c for c, tt in self._builders if tt == t], java_string_hash))
        columns = java_hash_order(dict.fromkeys(inserted), java_string_hash, head_insert=True,
                                  called_after_last_insert=_called_after_last_insert(inserted))
        indexes: dict[str, dict[str, bytes | None]] = {}
        for c in columns:
            present = [t for t in types if (c, t) in self._builders]
            indexes[c] = {t: self._builders[(c, t)].payload()  # type: ignore[attr-defined]
                          for t in java_hash_order(present, java_string_hash)}
        return encode_file_index(indexes)

    def finish(self, file_io: FileIO, data_path: str) -> tuple[bytes | None, tuple[str, ...]]:
        """(embedded bytes, extra files) of the finished data file at ``data_path``; writes the
        ``.index`` file when the blob is over the in-manifest threshold."""
        data = self.blob()
        if len(data) > self.spec.in_manifest_threshold_bytes:
            file_io.write_bytes(index_file_name(data_path), data)
            return None, (index_file_name(data_path.rsplit("/", 1)[-1]),)
        return data, ()


def _called_after_last_insert(calls: list[str]) -> bool:
    """Whether ``computeIfAbsent`` calls with ``calls`` as keys go on after the last new key."""
    first = {c: i for i, c in reversed(list(enumerate(calls)))}
    return bool(calls) and max(first.values()) < len(calls) - 1


def collector_for(spec: FileIndexSpec | None, fields: Sequence[DataField]) -> FileIndexCollector | None:
    """A collector when the table configures indexes this library writes, else None."""
    if spec is None or spec.empty:
        return None
    c = FileIndexCollector(spec, fields)
    return c if c.active else None


def copy_index_file(file_io: FileIO, bucket_dir: str, copy: DataFileMeta, original: DataFileMeta) -> DataFileMeta:
    """``copy`` (a file written as a byte copy of ``original`` under a new name) with its own
    ``.index`` file: each data file owns its index file, so expiring one never removes the
    other's."""
    if not original.extra_files:
        return copy
    extra = []
    for name in original.extra_files:
        if name == index_file_name(original.file_name):
            file_io.write_bytes(f"{bucket_dir}/{index_file_name(copy.file_name)}",
                                file_io.read_bytes(f"{bucket_dir}/{name}"))
            extra.append(index_file_name(copy.file_name))
        else:
            extra.append(name)
    return replace(copy, extra_files=tuple(extra))

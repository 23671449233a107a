"""SchemaManager: the ``schema/schema-<id>`` files of one table.

Schema files are written once with an atomic create-if-absent (as snapshots are): two
concurrent ``alter_table`` calls both build ``schema-(N+1)`` from ``schema-N``; one creates it,
the other sees the id taken and rebuilds its changes on the new latest schema (and is refused
then if its change no longer applies). A schema file never changes once written, so schemas
read by id are cached for the life of the manager.
"""

from __future__ import annotations

import threading
from typing import Callable, Sequence

from impl.errors import CorruptMetadataError, SchemaChangeError, TableError
from impl.fs.file_io import FileIO
from impl.fs.paths import SCHEMA_PREFIX, TablePaths
from impl.schema.records import TableSchema

# An alter that keeps losing the race for the next schema id gives up after this many tries.
MAX_ALTER_RETRIES = 100


def schema_ids_in(file_io: FileIO, schema_dir: str) -> list[int]:
    """The ids of the ``schema-<id>`` files in ``schema_dir``, ascending (the one home of this
    listing: tables, branches and the catalog use it). Other names (a temp file, ``schema-1a``,
    non-ASCII digits) are not schemas."""
    ids = []
    for name in file_io.list_names(schema_dir):
        tail = name[len(SCHEMA_PREFIX):]
        if name.startswith(SCHEMA_PREFIX) and tail.isascii() and tail.isdigit():
            ids.append(int(tail))
    return sorted(ids)


class SchemaManager:
    """Reads schemas by id (cached), finds the latest, and publishes new ones atomically."""

    def __init__(self, file_io: FileIO, paths: TablePaths):
        self.file_io = file_io
        self.paths = paths
        self._cache: dict[int, TableSchema] = {}
        self._lock = threading.Lock()

    def list_ids(self) -> list[int]:
        return schema_ids_in(self.file_io, self.paths.schema_dir)

    def schema(self, schema_id: int) -> TableSchema:
        """Schema ``schema_id``; :class:`CorruptMetadataError` if it is missing or unreadable
        (a data file or snapshot that names it cannot be read without it)."""
        with self._lock:
            cached = self._cache.get(schema_id)
        if cached is not None:
            return cached
        path = self.paths.schema_path(schema_id)
        try:
            data = self.file_io.read_bytes(path)
        except FileNotFoundError:
            raise CorruptMetadataError(path, f"schema {schema_id} is referenced but missing") from None
        schema = TableSchema.from_json_bytes(data, path)
        if schema.id != schema_id:
            raise CorruptMetadataError(path, f"file holds schema id {schema.id}")
        with self._lock:
            self._cache[schema_id] = schema
        return schema

    def remember(self, schema: TableSchema) -> None:
        """Cache a schema known to be on storage (the table's own, read at load time)."""
        with self._lock:
            self._cache.setdefault(schema.id, schema)

    def latest(self) -> TableSchema | None:
        ids = self.list_ids()
        return self.schema(ids[-1]) if ids else None

    def latest_from(self, known: TableSchema) -> TableSchema:
        """The newest schema at or after ``known``, found by probing ``schema-(id+1)``, ... with
        one HEAD each (no listing: the commit path needs no list permission)."""
        current = known
        while self.file_io.file_exists(self.paths.schema_path(current.id + 1)):
            current = self.schema(current.id + 1)
        return current

    def commit_changes(self, build: Callable[[TableSchema], TableSchema], identifier: str) -> TableSchema:
        """Publish ``build(latest)`` as the next schema, rebuilding on the new latest after a lost race."""
        for _ in range(MAX_ALTER_RETRIES):
            latest = self.latest()
            if latest is None:
                raise TableError(f"table {identifier!r} has no schema (dropped meanwhile?)")
            new = build(latest)
            if new.id != latest.id + 1:
                raise SchemaChangeError(f"next schema of {identifier!r} must have id {latest.id + 1}, not {new.id}")
            if self.file_io.try_write_atomic(self.paths.schema_path(new.id), new.to_json_bytes()):
                self.remember(new)
                return new
        raise SchemaChangeError(f"alter of {identifier!r} lost the race for a new schema id {MAX_ALTER_RETRIES} "
                                "times in a row; try again", None, "schema ids are taken by concurrent alters")

    def schemas(self, ids: Sequence[int]) -> list[TableSchema]:
        return [self.schema(i) for i in ids]


__all__ = ["SchemaManager", "MAX_ALTER_RETRIES"]

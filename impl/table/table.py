"""FileStoreTable: one table directory, its schema and options, and everything done to it."""

from __future__ import annotations

import datetime as _dt
import time
from functools import cached_property
from typing import Mapping, Sequence

import pyarrow as pa

from impl.errors import CorruptMetadataError
from impl.format.json_records import Snapshot, TableSchema
from impl.fs.file_io import FileIO
from impl.fs.paths import SCHEMA_PREFIX, TablePaths
from impl.manifest.manifest_file import ManifestFile, ManifestList
from impl.schema.manager import SchemaManager
from impl.snapshot.manager import SnapshotManager
from impl.table.bucket import BucketMode, bucket_mode
from impl.table.builders import BatchWriteBuilder, ReadBuilder, StreamWriteBuilder
from impl.table.errors import TableNotExistError
from impl.table.options import TableOptions, warn_unknown_keys
from impl.table.predicate import Predicate
from impl.table.scan import PartitionCache
from impl.table.schema import arrow_schema, bucket_key_names, validate_options

ONE_DAY_MS = 86_400_000


def schema_ids(file_io: FileIO, paths: TablePaths) -> list[int]:
    ids = []
    for name in file_io.list_names(paths.schema_dir):
        if name.startswith(SCHEMA_PREFIX) and name[len(SCHEMA_PREFIX):].isdigit():
            ids.append(int(name[len(SCHEMA_PREFIX):]))
    return sorted(ids)


def load_latest_schema(file_io: FileIO, paths: TablePaths, identifier: str) -> TableSchema:
    """The newest ``schema/schema-<id>`` of the table; TableNotExistError if there is none."""
    ids = schema_ids(file_io, paths)
    if not ids:
        raise TableNotExistError(identifier)
    path = paths.schema_path(ids[-1])
    try:
        data = file_io.read_bytes(path)
    except FileNotFoundError:
        raise TableNotExistError(identifier) from None
    schema = TableSchema.from_json_bytes(data, path)
    if schema.id != ids[-1]:
        raise CorruptMetadataError(path, f"file holds schema id {schema.id}")
    return schema


class FileStoreTable:
    """A Paimon table: append-only (no primary key) or primary-key (LSM merge tree per bucket).

    Obtain one from :meth:`impl.Catalog.get_table`. ``copy(options)`` gives a view with extra
    dynamic options (time travel, incremental reads, tuning) without changing the table.
    """

    def __init__(self, file_io: FileIO, path: str, schema: TableSchema, identifier: str | None = None,
                 dynamic_options: Mapping[str, str] | None = None, schema_manager: SchemaManager | None = None):
        self.file_io = file_io
        self.path = path.rstrip("/")
        self.paths = TablePaths(self.path)
        self.schema = schema
        # reads the schemas older data files were written under (cached; shared by copies)
        self.schema_manager = schema_manager or SchemaManager(file_io, self.paths)
        self.schema_manager.remember(schema)
        self.identifier = identifier or self.path
        self.dynamic_options = {str(k): str(v) for k, v in (dynamic_options or {}).items()}
        merged = {**schema.options, **self.dynamic_options}
        self.options = TableOptions.from_options(merged, warn_unknown=False)
        if self.dynamic_options:
            validate_options(schema, self.options)
            if schema.primary_keys:
                self.merge_tree_options  # noqa: B018 - validates the merged options now
        self.snapshot_manager = SnapshotManager(file_io, self.paths)
        self.manifest_list = ManifestList(file_io, self.paths)
        self.partition_cache = PartitionCache(
            schema.partition_keys, [schema.field(k).type for k in schema.partition_keys],
            self.options.partition_default_name)

    # ------------------------------------------------------------------ properties

    @cached_property
    def manifest_file(self) -> ManifestFile:
        return ManifestFile(self.file_io, self.paths, self.partition_cache.types, schema_id=self.schema.id,
                            target_file_size_bytes=self.options.commit.merge.target_file_size_bytes)

    @cached_property
    def merge_tree_options(self):
        """Parsed ``impl.mergetree.MergeTreeOptions`` (primary-key tables)."""
        from impl.table.pk import merge_tree_options
        return merge_tree_options(self.options.raw, self.schema)

    @cached_property
    def arrow_schema(self) -> pa.Schema:
        return arrow_schema(self.schema)

    @property
    def name(self) -> str:
        return self.identifier

    @property
    def primary_keys(self) -> list[str]:
        return list(self.schema.primary_keys)

    @property
    def partition_keys(self) -> list[str]:
        return list(self.schema.partition_keys)

    @property
    def is_primary_key_table(self) -> bool:
        return bool(self.schema.primary_keys)

    @property
    def bucket_keys(self) -> tuple[str, ...]:
        return bucket_key_names(self.schema, self.options)

    @property
    def bucket_mode(self) -> BucketMode:
        """How rows go to buckets: HASH_FIXED (bucket >= 1), BUCKET_UNAWARE (append, bucket -1),
        HASH_DYNAMIC (primary key, bucket -1, keys in the bucket the HASH index gives them),
        CROSS_PARTITION (primary key without every partition key, bucket -1; refused)."""
        return bucket_mode(self.options.bucket, self.schema.primary_keys, self.schema.partition_keys)

    def __repr__(self) -> str:
        kind = "primary-key" if self.is_primary_key_table else "append"
        return f"FileStoreTable({self.identifier!r}, {kind}, bucket={self.options.bucket})"

    # ------------------------------------------------------------------ views

    def copy(self, dynamic_options: Mapping[str, str]) -> "FileStoreTable":
        """The same table with extra options, e.g. ``{"scan.snapshot-id": "3"}`` (time travel)."""
        extra = {str(k): str(v) for k, v in dynamic_options.items()}
        warn_unknown_keys(extra)
        merged = {**self.dynamic_options, **extra}
        return FileStoreTable(self.file_io, self.path, self.schema, self.identifier, merged, self.schema_manager)

    # ------------------------------------------------------------------ builders

    def new_read_builder(self) -> ReadBuilder:
        return ReadBuilder(self)

    def new_batch_write_builder(self) -> BatchWriteBuilder:
        return BatchWriteBuilder(self)

    def new_stream_write_builder(self) -> StreamWriteBuilder:
        return StreamWriteBuilder(self)

    # ------------------------------------------------------------------ conveniences

    def to_arrow(self, predicate: Predicate | None = None, projection: Sequence[str] | None = None) -> pa.Table:
        """Every row of the snapshot this view reads (latest unless time travel is set)."""
        rb = self.new_read_builder().with_filter(predicate).with_projection(projection)
        return rb.new_read().to_arrow(rb.new_scan().plan().splits())

    def write_arrow(self, data, *, overwrite: Mapping | None | bool = False) -> None:
        """Write and commit ``data`` in one batch commit (``overwrite=True`` or a partition spec to overwrite)."""
        wb = self.new_batch_write_builder()
        if overwrite is not False:
            wb.overwrite(None if overwrite is True else overwrite)
        w = wb.new_write()
        c = wb.new_commit()
        try:
            w.write_arrow(data)
            c.commit(w.prepare_commit())
        finally:
            w.close()
            c.close()

    def latest_snapshot(self) -> Snapshot | None:
        return self.snapshot_manager.latest_snapshot()

    def snapshot(self, snapshot_id: int) -> Snapshot:
        return self.snapshot_manager.snapshot(snapshot_id)

    def snapshots(self) -> list[Snapshot]:
        return list(self.snapshot_manager.snapshots())

    # ------------------------------------------------------------------ maintenance

    def compact(self, full: bool = False):
        """Compact the latest snapshot in one COMPACT commit; the CommitStats, or None if nothing to do.

        Append tables: per (partition, bucket), rewrite the files smaller than
        ``target-file-size`` into target-size files once there are ``compaction.min.file-num``
        of them (``full``: all files of a bucket that has more than one). Primary-key tables:
        a dedicated compaction job, each bucket's merge tree compacts (``full``: into one sorted run).
        """
        from impl.table.compact import compact_table
        return compact_table(self, full)

    def expire_snapshots(self, *, retain_min: int | None = None, retain_max: int | None = None,
                         time_retained_ms: int | None = None, max_deletes: int | None = None,
                         now_millis: int | None = None):
        """Expire old snapshots by the ``snapshot.*`` options (arguments override them).

        Returns an :class:`impl.snapshot.expire.ExpireResult` listing what was removed.
        """
        from impl.snapshot.expire import ExpireConfig, SnapshotExpiration
        o = self.options
        now = int(time.time() * 1000) if now_millis is None else now_millis
        config = ExpireConfig(
            retain_min=o.snapshot_num_retained_min if retain_min is None else retain_min,
            retain_max=o.snapshot_num_retained_max if retain_max is None else retain_max,
            older_than_millis=now - (o.snapshot_time_retained_ms if time_retained_ms is None else time_retained_ms),
            max_deletes=o.snapshot_expire_limit if max_deletes is None else max_deletes,
            clean_empty_directories=o.snapshot_clean_empty_directories,
        )
        return SnapshotExpiration(self.file_io, self.paths, self.manifest_file, self.partition_cache.path).expire(config)

    def remove_orphan_files(self, older_than: int | _dt.datetime | None = None, *,
                            older_than_millis: int | None = None) -> list[str]:
        """Delete files under the table directory that no snapshot references and that are older
        than ``older_than`` (epoch millis or datetime; default: one day ago). Returns their paths."""
        from impl.table.maintenance import remove_orphan_files
        if older_than_millis is None:
            if older_than is None:
                older_than_millis = int(time.time() * 1000) - ONE_DAY_MS
            elif isinstance(older_than, _dt.datetime):
                ts = older_than if older_than.tzinfo else older_than.astimezone()
                older_than_millis = int(ts.timestamp() * 1000)
            else:
                older_than_millis = int(older_than)
        return remove_orphan_files(self, older_than_millis)

    def rollback_to(self, snapshot_id: int) -> list[str]:
        """Make ``snapshot_id`` the latest snapshot: drop newer snapshots and the files only they used."""
        from impl.table.maintenance import rollback_to
        return rollback_to(self, snapshot_id)

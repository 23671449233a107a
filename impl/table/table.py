"""FileStoreTable: one table directory, its schema and options, and everything done to it."""

from __future__ import annotations

import datetime as _dt
import time
from functools import cached_property
from typing import Mapping, Sequence

import pyarrow as pa

from impl.branch.manager import BranchInfo, BranchManager
from impl.errors import BranchNotExistError, CorruptMetadataError, InvalidOptionError
from impl.format.json_records import Snapshot, TableSchema
from impl.fs.file_io import FileIO
from impl.fs.paths import MAIN_BRANCH, TablePaths
from impl.manifest.manifest_file import ManifestFile, ManifestList, manifest_format_option
from impl.schema.manager import SchemaManager, schema_ids_in
from impl.snapshot.manager import SnapshotManager
from impl.table.bucket import BucketMode, bucket_mode
from impl.table.builders import BatchWriteBuilder, ReadBuilder, StreamWriteBuilder
from impl.table.errors import TableNotExistError
from impl.table.options import TableOptions, warn_unknown_keys
from impl.table.predicate import Predicate
from impl.table.scan import PartitionCache
from impl.table.schema import arrow_schema, bucket_key_names, validate_options
from impl.tag.manager import TagManager
from impl.tag.tag import Tag, TagInfo

ONE_DAY_MS = 86_400_000


def schema_ids(file_io: FileIO, paths: TablePaths) -> list[int]:
    """The table's schema ids, ascending (listed by :func:`impl.schema.manager.schema_ids_in`)."""
    return schema_ids_in(file_io, paths.schema_dir)


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

    The option ``branch`` (or ``catalog.get_table("db.t$branch_<name>")``) gives a view of a
    branch: its snapshots, schemas and tags are read from and committed to
    ``branch/branch-<name>/``; data files and manifests are shared with main.
    """

    def __init__(self, file_io: FileIO, path: str, schema: TableSchema, identifier: str | None = None,
                 dynamic_options: Mapping[str, str] | None = None, schema_manager: SchemaManager | None = None):
        self.file_io = file_io
        self.path = path.rstrip("/")
        self.schema = schema
        self.identifier = identifier or self.path
        self.dynamic_options = {str(k): str(v) for k, v in (dynamic_options or {}).items()}
        merged = {**schema.options, **self.dynamic_options}
        self.options = TableOptions.from_options(merged, warn_unknown=False)
        self.branch = self.options.branch or MAIN_BRANCH
        self.paths = TablePaths(self.path, branch=self.branch)
        # reads the schemas older data files were written under (the branch's schema directory;
        # cached; shared by copies of the same branch)
        self.schema_manager = schema_manager or SchemaManager(file_io, self.paths)
        self.schema_manager.remember(schema)
        if self.dynamic_options:
            validate_options(schema, self.options)
            if schema.primary_keys:
                self.merge_tree_options  # noqa: B018 - validates the merged options now
        self.snapshot_manager = SnapshotManager(file_io, self.paths)
        self.manifest_list = ManifestList(file_io, self.paths, manifest_format=manifest_format_option(merged))
        self.partition_cache = PartitionCache(
            schema.partition_keys, [schema.field(k).type for k in schema.partition_keys],
            self.options.partition_default_name)

    # ------------------------------------------------------------------ properties

    @cached_property
    def manifest_file(self) -> ManifestFile:
        return ManifestFile(self.file_io, self.paths, self.partition_cache.types, schema_id=self.schema.id,
                            target_file_size_bytes=self.options.commit.merge.target_file_size_bytes,
                            manifest_format=self.manifest_list.manifest_format)

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
        branch = merged.get("branch") or MAIN_BRANCH
        if branch == self.branch:
            return FileStoreTable(self.file_io, self.path, self.schema, self.identifier, merged, self.schema_manager)
        # another branch: its own latest schema
        return open_branch(self.file_io, self.path, self.identifier, branch, merged)

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
        from impl.table.maintenance import protected_names
        return SnapshotExpiration(self.file_io, self.paths, self.manifest_file,
                                  self.partition_cache.path).expire(config, protected_names(self))

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

    def rollback_to(self, target: int | str) -> list[str]:
        """Make snapshot ``target`` (an id) or tag ``target`` (a name) the latest snapshot: drop
        newer snapshots and tags and the files only they used (Paimon's RollbackHelper).

        SnapshotNotExistError for an id neither a snapshot nor a tag holds, TagNotExistError
        for an unknown tag. Returns the deleted file paths.
        """
        from impl.table.maintenance import rollback_to
        if isinstance(target, bool) or not isinstance(target, (int, str)):
            raise InvalidOptionError(f"rollback_to target {target!r} is neither a snapshot id (int) nor a tag name (str)")
        return rollback_to(self, target)

    # ------------------------------------------------------------------ tags

    @property
    def tag_manager(self) -> TagManager:
        """The tags of this view's branch."""
        return TagManager(self.file_io, self.paths, self.identifier)

    def create_tag(self, tag_name: str, snapshot_id: int | None = None,
                   time_retained: _dt.timedelta | str | None = None, ignore_if_exists: bool = False) -> Tag:
        """Tag snapshot ``snapshot_id`` (default: the latest) as ``tag_name``, atomically.

        ``time_retained`` (a timedelta or a duration such as ``"1 d"``) is recorded in the tag.
        TagAlreadyExistError if the name is taken (unless ``ignore_if_exists``: the existing
        tag is returned); SnapshotNotExistError if the snapshot does not exist (an expired
        snapshot can be tagged only while another tag still holds it, as in Paimon);
        InvalidTagNameError for a blank or path-unsafe name. A refused call writes nothing.
        """
        from impl.table.tags import create_tag
        return create_tag(self, tag_name, snapshot_id, time_retained, ignore_if_exists)

    def delete_tag(self, tag_name: str) -> list[str]:
        """Delete the tag and the files only it kept (TagNotExistError if there is none);
        returns the deleted file paths."""
        from impl.table.maintenance import delete_tag
        return delete_tag(self, tag_name)

    def tags(self) -> list[Tag]:
        """Every tag of this view's branch, by name."""
        return list(self.tag_manager.tags())

    def list_tags(self) -> list[TagInfo]:
        """The rows of Paimon's ``$tags`` table for this view's branch, by name."""
        from impl.table.tags import tag_infos
        return tag_infos(self)

    # ------------------------------------------------------------------ branches

    @property
    def branch_manager(self) -> BranchManager:
        return BranchManager(self.file_io, self.path, self.branch, self.identifier)

    def create_branch(self, branch_name: str, tag: str | None = None, ignore_if_exists: bool = False) -> None:
        """Create a branch: from tag ``tag`` (it starts at the tag's snapshot) or, without one,
        empty with the current schema (Paimon's semantics). InvalidBranchNameError,
        BranchAlreadyExistError, TagNotExistError on bad input; nothing is written then."""
        self.branch_manager.create_branch(branch_name, tag, ignore_if_exists)

    def delete_branch(self, branch_name: str) -> None:
        """Delete a branch's snapshots, schemas and tags (BranchNotExistError if there is none).
        Files only it used are left for :meth:`remove_orphan_files`."""
        self.branch_manager.delete_branch(branch_name)

    def list_branches(self) -> list[BranchInfo]:
        """The rows of Paimon's ``$branches`` table (``main`` not included), by name."""
        return self.branch_manager.branch_infos()

    def branches(self) -> list[str]:
        return self.branch_manager.branches()

    def fast_forward(self, branch_name: str) -> None:
        """Replace this view's branch (main) from the branch's earliest snapshot on with the
        branch's snapshots, schemas and tags (Paimon's fastForward)."""
        self.branch_manager.fast_forward(branch_name)


def open_branch(file_io: FileIO, path: str, identifier: str, branch: str,
                dynamic_options: Mapping[str, str] | None = None) -> FileStoreTable:
    """A view of branch ``branch`` of the table at ``path`` (its latest schema); BranchNotExistError if absent."""
    paths = TablePaths(path.rstrip("/"), branch=branch)
    if branch != MAIN_BRANCH and not schema_ids(file_io, paths):
        raise BranchNotExistError(identifier, branch)
    schema = load_latest_schema(file_io, paths, identifier)
    return FileStoreTable(file_io, path, schema, identifier, {**(dynamic_options or {}), "branch": branch})

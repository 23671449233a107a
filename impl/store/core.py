"""The table core: one table view's plumbing, shared by every operation (Paimon's FileStore).

:class:`TableCore` is a frozen context holding what scans, reads, writes, commits,
compaction, maintenance, tags, branches and system tables need: the paths, the file IO, the
schema and its manager, the option views, the snapshot / manifest / index / tag / branch
managers, the partition cache, and the :class:`impl.environment.Environment` (clock, ids,
randomness). Operations take a core, never the :class:`impl.table.FileStoreTable` API object,
so this module imports no operation and the operations import no API: the table package has
no import circle.

A core is one view: a table, a branch and a set of dynamic options. ``with_options`` gives
another view of the same branch (sharing the schema manager, whose cache is per branch).
"""

from __future__ import annotations

import datetime as _dt
import enum
from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable, Mapping, Sequence

import pyarrow as pa

from impl.branch.manager import BranchManager
from impl.bucket.routing import BucketMode, bucket_mode
from impl.data.binary_row import decode_row
from impl.data.partition_names import PartitionNaming
from impl.data.types import DataType
from impl.environment import PRODUCTION, Environment
from impl.errors import (
    CorruptMetadataError,
    InvalidTagNameError,
    SnapshotNotExistError,
    TableNotExistError,
    TagNotExistError,
    UnsupportedTableFeatureError,
)
from impl.format.dictionary_choice import DictionaryChoice
from impl.fs.file_io import FileIO
from impl.fs.names import BranchName
from impl.fs.paths import TablePaths
from impl.manifest.manifest_file import (
    IndexManifestFile,
    ManifestFile,
    ManifestList,
    manifest_avro_codec,
    manifest_format_option,
)
from impl.manifest.records import IndexFileMeta
from impl.options.parsed import ParsedOptions
from impl.options.registry import check_dynamic_keys
from impl.schema.manager import SchemaManager, schema_ids_in
from impl.schema.records import TableSchema
from impl.snapshot.manager import SnapshotCommit, SnapshotManager
from impl.snapshot.records import Snapshot
from impl.store.options import TableOptions
from impl.store.schema import (
    arrow_schema,
    bucket_key_names,
    check_index_file_layout,
    check_table_kind_kept,
    merge_tree_options,
    validate_options,
)
from impl.tag.manager import TagManager
from impl.tag.tag import check_tag_name


class PartitionCache:
    """Decoded partition values and path of each serialized partition, computed once."""

    def __init__(self, names: Sequence[str], types: Sequence[DataType], default_name: str, legacy_name: bool = True):
        self.names = list(names)
        self.types = list(types)
        self.default_name = default_name
        self.naming = PartitionNaming(tuple(names), tuple(types), default_name, legacy_name)
        self._values: dict[bytes, tuple] = {}
        self._paths: dict[bytes, str] = {}

    def values(self, partition: bytes, path: str = "<manifest>") -> tuple:
        v = self._values.get(partition)
        if v is None:
            v = decode_row(partition, self.types, path=path) if self.types else ()
            self._values[partition] = v
        return v

    def path(self, partition: bytes) -> str:
        p = self._paths.get(partition)
        if p is None:
            p = self.naming.path_of_row(partition)
            self._paths[partition] = p
        return p

    def as_dict(self, partition: bytes) -> dict:
        return dict(zip(self.names, self.values(partition), strict=True))


@dataclass(frozen=True, eq=False)
class TableCore:
    """One table view's plumbing (see the module docstring). Build with :meth:`open`."""

    file_io: FileIO
    path: str
    schema: TableSchema
    identifier: str
    dynamic_options: Mapping[str, str]
    options: TableOptions
    paths: TablePaths
    schema_manager: SchemaManager
    snapshot_manager: SnapshotManager
    manifest_list: ManifestList
    partition_cache: PartitionCache
    env: Environment = field(default=PRODUCTION)
    # who publishes snapshots: None = an atomic create on file_io; a REST catalog's server
    snapshot_commit: SnapshotCommit | None = None
    # the schema this view was opened with when time travel chose another one (``schema`` is
    # then the travelled snapshot's): another view of these options starts from it again
    opened_schema: TableSchema | None = None

    @classmethod
    def open(cls, file_io: FileIO, path: str, schema: TableSchema, identifier: str | None = None,
             dynamic_options: Mapping[str, str] | None = None, schema_manager: SchemaManager | None = None,
             env: Environment | None = None, snapshot_commit: SnapshotCommit | None = None) -> "TableCore":
        """The core of the view of ``path`` under ``schema`` with ``dynamic_options`` (option
        ``branch`` selects the branch). InvalidOptionError if the merged options are invalid.
        ``snapshot_commit``: who publishes snapshots (default: the file system).

        Time travel (``scan.snapshot-id`` / ``scan.timestamp-millis`` / ``scan.tag-name``) gives
        the view the schema of the snapshot it travels to, as Paimon does (``schemaId`` of the
        snapshot): its rows come back with the columns as they were named and typed then."""
        core = cls._open(file_io, path, schema, identifier, dynamic_options, schema_manager, env, snapshot_commit)
        travelled = _travel_schema(core)
        if travelled is None:
            return core
        return cls._open(file_io, path, travelled, identifier, dynamic_options, core.schema_manager, env,
                         snapshot_commit, opened_schema=schema)

    @classmethod
    def _open(cls, file_io: FileIO, path: str, schema: TableSchema, identifier: str | None,
              dynamic_options: Mapping[str, str] | None, schema_manager: SchemaManager | None,
              env: Environment | None, snapshot_commit: SnapshotCommit | None, *,
              opened_schema: TableSchema | None = None) -> "TableCore":
        env = env or PRODUCTION
        path = path.rstrip("/")
        dynamic = {str(k): str(v) for k, v in (dynamic_options or {}).items()}
        # a misspelt Paimon key (scan.snapshot-idd) in a view's options is refused, not ignored
        check_dynamic_keys(dynamic)
        # the one typed object of this view's options: every view below is derived from it
        parsed = ParsedOptions({str(k): str(v) for k, v in {**schema.options, **dynamic}.items()})
        options = TableOptions.from_parsed(parsed, warn_unknown=False)
        # a checked name: see impl.fs.names
        paths = TablePaths(path, id_factory=env.new_id, branch=options.branch, layout=options.commit.layout)
        # reads the schemas older data files were written under (the branch's schema directory;
        # cached; shared by views of the same branch)
        schema_manager = schema_manager or SchemaManager(file_io, paths)
        schema_manager.remember(schema)
        core = cls(
            file_io=file_io, path=path, schema=schema, identifier=identifier or path, dynamic_options=dynamic,
            options=options, paths=paths, schema_manager=schema_manager,
            snapshot_manager=SnapshotManager(file_io, paths, snapshot_commit=snapshot_commit,
                                             table_name=identifier or path),
            manifest_list=ManifestList(file_io, paths, manifest_format=manifest_format_option(parsed),
                                       codec=manifest_avro_codec(parsed)),
            partition_cache=PartitionCache(schema.partition_keys, [schema.field(k).type for k in schema.partition_keys],
                                           options.partition_default_name, options.commit.partition_legacy_name),
            env=env, snapshot_commit=snapshot_commit, opened_schema=opened_schema)
        check_index_file_layout(schema, options)
        if dynamic:
            check_table_kind_kept(schema, dynamic)
            validate_options(schema, options)
            if schema.primary_keys:
                core.merge_tree_options  # noqa: B018 - validates the merged options now
        return core

    def with_options(self, dynamic_options: Mapping[str, str]) -> "TableCore":
        """The same branch with ``dynamic_options`` instead of this view's (schema manager shared)."""
        return TableCore.open(self.file_io, self.path, self.opened_schema or self.schema, self.identifier,
                              dynamic_options, self.schema_manager, self.env, self.snapshot_commit)

    @property
    def time_travel(self) -> bool:
        """One of ``scan.snapshot-id`` / ``scan.timestamp-millis`` / ``scan.tag-name`` /
        ``scan.version`` is set."""
        o = self.options
        return (o.scan_snapshot_id is not None or o.scan_timestamp_millis is not None or o.scan_tag_name is not None
                or o.scan_version is not None)

    def travel_snapshot(self) -> Snapshot | None:
        """The snapshot ``scan.snapshot-id`` / ``scan.timestamp-millis`` / ``scan.tag-name`` /
        ``scan.version`` names (a tag's own copy: it stays readable after the snapshot
        expired), or None when none is set or no snapshot is that old. SnapshotNotExistError /
        TagNotExistError when the one named is missing."""
        opts = self.options
        if opts.scan_snapshot_id is not None:
            return self.snapshot_manager.snapshot(opts.scan_snapshot_id)
        if opts.scan_timestamp_millis is not None:
            return self.snapshot_manager.earlier_or_equal_time_millis(opts.scan_timestamp_millis)
        if opts.scan_tag_name is not None:
            return self.tag_manager.get(opts.scan_tag_name).snapshot
        if opts.scan_version is not None:
            tags = self.tag_manager
            kind, target = version_target(opts.scan_version, tags.tag_exists)
            return tags.get(target).snapshot if kind is VersionKind.TAG else self.snapshot_manager.snapshot(int(target))
        return None

    # ------------------------------------------------------------------ derived views

    @property
    def branch(self) -> BranchName:
        return self.paths.branch

    @cached_property
    def manifest_file(self) -> ManifestFile:
        return ManifestFile(self.file_io, self.paths, self.partition_cache.types, schema_id=self.schema.id,
                            target_file_size_bytes=self.options.commit.merge.target_file_size_bytes,
                            manifest_format=self.manifest_list.manifest_format, codec=self.manifest_list.codec)

    @cached_property
    def index_manifest_file(self) -> IndexManifestFile:
        return IndexManifestFile(self.file_io, self.paths, manifest_format=self.manifest_list.manifest_format,
                                 codec=self.manifest_list.codec)

    @cached_property
    def merge_tree_options(self):
        """Parsed ``impl.mergetree.MergeTreeOptions`` (primary-key tables)."""
        return merge_tree_options(self.options, self.schema)

    @cached_property
    def dictionary_choice(self) -> DictionaryChoice:
        """The Parquet dictionary-encoding choice this view's writers share (one sample per
        ``DictionaryChoice.REUSE_FILES`` files instead of one per file)."""
        return DictionaryChoice()

    @cached_property
    def arrow_schema(self) -> pa.Schema:
        return arrow_schema(self.schema)

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
        return bucket_mode(self.options.bucket, self.schema.primary_keys, self.schema.partition_keys)

    @property
    def tag_manager(self) -> TagManager:
        """The tags of this view's branch."""
        return TagManager(self.file_io, self.paths, self.identifier)

    @property
    def branch_manager(self) -> BranchManager:
        return BranchManager(self.file_io, self.path, self.branch, self.identifier)

    # ------------------------------------------------------------------ environment

    def now_millis(self) -> int:
        """The environment's wall clock, epoch millis."""
        return self.env.clock_millis()

    def now_local(self) -> _dt.datetime:
        """The environment's wall clock as a naive local datetime (Java's LocalDateTime.now())."""
        return _dt.datetime.fromtimestamp(self.env.clock_millis() / 1000)


class VersionKind(enum.Enum):
    """What a ``scan.version`` names."""

    TAG = "tag"
    SNAPSHOT = "snapshot"


def version_target(version: str, tag_exists: Callable[[str], bool]) -> tuple[VersionKind, str]:
    """What ``scan.version`` (Spark's ``VERSION AS OF``) reads, by Paimon 1.4.2's
    ``TimeTravelUtil.adaptScanVersion``: a tag of that name when one exists (a tag wins over a
    snapshot of the same number), else the snapshot of that id when it is all digits. A
    ``watermark-<n>`` version (Paimon's scan.watermark) is refused by name; any other version
    names a tag that does not exist (TagNotExistError, as Java's "Cannot find a time travel
    version")."""
    if _is_tag_name(version) and tag_exists(version):
        return VersionKind.TAG, version
    if version.startswith("watermark-"):
        raise UnsupportedTableFeatureError(f"option 'scan.version' = {version!r}: time travel by watermark "
                                           "(scan.watermark) is not supported")
    if version.isascii() and version.isdigit():
        return VersionKind.SNAPSHOT, version
    return VersionKind.TAG, version  # the tag's lookup raises TagNotExistError (or InvalidTagNameError)


def _is_tag_name(name: str) -> bool:
    """Whether ``name`` could name a tag file (a version such as '../x' names none)."""
    try:
        check_tag_name(name)
    except InvalidTagNameError:
        return False
    return True



def _travel_schema(core: TableCore) -> TableSchema | None:
    """The schema of the snapshot ``core``'s time-travel options name when it is not
    ``core.schema``, else None. The snapshot schema keeps its own options (those naming columns
    name that schema's columns), the view's dynamic options apply over them. A missing snapshot
    or tag leaves the schema as it is: the scan raises the error naming it. An incremental read
    (``incremental-between``) does not travel."""
    if core.options.incremental_between is not None or not core.time_travel:
        return None
    try:
        snapshot = core.travel_snapshot()
    except (SnapshotNotExistError, TagNotExistError):
        return None
    if snapshot is None or snapshot.schema_id == core.schema.id:
        return None
    return core.schema_manager.schema(snapshot.schema_id)


def load_latest_schema(file_io: FileIO, paths: TablePaths, identifier: str) -> TableSchema:
    """The newest ``schema/schema-<id>`` of the table; TableNotExistError if there is none."""
    ids = schema_ids_in(file_io, paths.schema_dir)
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


def bucket_index_files(core: TableCore, snapshot: Snapshot | None
                       ) -> dict[tuple[bytes, int], list[IndexFileMeta]]:
    """The live index files of ``snapshot`` by (partition, bucket)."""
    if snapshot is None or not snapshot.index_manifest:
        return {}
    out: dict[tuple[bytes, int], list[IndexFileMeta]] = {}
    for e in core.index_manifest_file.read(snapshot.index_manifest):
        out.setdefault((e.partition, e.bucket), []).append(e.index_file)
    return out

"""FileStoreTable: the public API of one table view, a thin layer over its :class:`TableCore`.

Every operation (scans, reads, writes, commits, compaction, maintenance, tags, branches) lives
in its own module and takes the view's :class:`impl.store.core.TableCore`; this class names
them and converts arguments.
"""

from __future__ import annotations

import datetime as _dt
from typing import Mapping, Sequence

import pyarrow as pa

from impl._optional import require
from impl.branch.manager import BranchInfo, BranchManager
from impl.bucket.routing import BucketMode
from impl.environment import Environment
from impl.errors import BranchNotExistError, InvalidOptionError
from impl.fs.file_io import FileIO
from impl.fs.names import check_branch
from impl.fs.paths import MAIN_BRANCH, TablePaths
from impl.maintenance.cleanup import delete_tag, protected_names, remove_orphan_files, rollback_to
from impl.maintenance.compact import compact_table
from impl.maintenance.doctor import doctor, repair
from impl.maintenance.repair import RepairPlan, TableHealth
from impl.maintenance.tags import create_tag, tags_with_branches
from impl.manifest.manifest_file import ManifestFile, ManifestList
from impl.options import core_options as co
from impl.options.registry import check_dynamic_keys
from impl.predicate.predicate import Predicate
from impl.read.arrow_stream import TableReads
from impl.schema.manager import SchemaManager, schema_ids_in
from impl.schema.records import TableSchema
from impl.snapshot.expire import ExpireConfig, ExpireResult, SnapshotExpiration
from impl.snapshot.manager import SnapshotCommit, SnapshotManager
from impl.snapshot.records import Snapshot
from impl.store.core import PartitionCache, TableCore, load_latest_schema
from impl.store.options import TableOptions, warn_unknown_keys
from impl.table.builders import BatchWriteBuilder, ReadBuilder, StreamWriteBuilder
from impl.tag.manager import TagManager
from impl.tag.tag import Tag
from impl.write.table_commit import CommitStats

ONE_DAY_MS = 86_400_000


class FileStoreTable(TableReads):
    """A Paimon table: append-only (no primary key) or primary-key (LSM merge tree per bucket).

    Obtain one from :meth:`impl.Catalog.get_table`. ``copy(options)`` gives a view with extra
    dynamic options (time travel, incremental reads, tuning) without changing the table.

    The option ``branch`` (or ``catalog.get_table("db.t$branch_<name>")``) gives a view of a
    branch: its snapshots, schemas and tags are read from and committed to
    ``branch/branch-<name>/``; data files and manifests are shared with main.
    """

    def __init__(self, file_io: FileIO, path: str, schema: TableSchema, identifier: str | None = None,
                 dynamic_options: Mapping[str, str] | None = None, schema_manager: SchemaManager | None = None,
                 *, env: Environment | None = None, snapshot_commit: SnapshotCommit | None = None):
        """``env``: where time, ids and randomness come from (default: the real ones);
        ``snapshot_commit``: who publishes snapshots (default: the file system; a REST catalog
        passes its server's)."""
        self.core = TableCore.open(file_io, path, schema, identifier, dynamic_options, schema_manager, env,
                                   snapshot_commit)

    @classmethod
    def of(cls, core: TableCore) -> "FileStoreTable":
        """The API over an existing core."""
        table = cls.__new__(cls)
        table.core = core
        return table

    # ------------------------------------------------------------------ the core's parts

    @property
    def file_io(self) -> FileIO:
        return self.core.file_io

    @property
    def path(self) -> str:
        return self.core.path

    @property
    def schema(self) -> TableSchema:
        return self.core.schema

    @property
    def identifier(self) -> str:
        return self.core.identifier

    @property
    def dynamic_options(self) -> Mapping[str, str]:
        return self.core.dynamic_options

    @property
    def options(self) -> TableOptions:
        return self.core.options

    @property
    def branch(self) -> str:
        return self.core.branch

    def current_branch(self) -> str:
        """The branch this view reads and writes (pypaimon's ``table.current_branch()``; ``branch`` here)."""
        return self.core.branch

    def comment(self) -> str | None:
        """The table's comment, None without one (pypaimon's ``table.comment()``)."""
        return self.schema.comment

    @property
    def paths(self) -> TablePaths:
        return self.core.paths

    @property
    def env(self) -> Environment:
        return self.core.env

    @property
    def schema_manager(self) -> SchemaManager:
        return self.core.schema_manager

    def snapshot_manager(self) -> SnapshotManager:
        """The snapshots of this view's branch (a method, as pypaimon's ``table.snapshot_manager()``)."""
        return self.core.snapshot_manager

    @property
    def manifest_list(self) -> ManifestList:
        return self.core.manifest_list

    @property
    def manifest_file(self) -> ManifestFile:
        return self.core.manifest_file

    @property
    def partition_cache(self) -> PartitionCache:
        return self.core.partition_cache

    @property
    def merge_tree_options(self):
        """Parsed ``impl.mergetree.MergeTreeOptions`` (primary-key tables)."""
        return self.core.merge_tree_options

    @property
    def arrow_schema(self) -> pa.Schema:
        return self.core.arrow_schema

    @property
    def name(self) -> str:
        return self.identifier

    @property
    def primary_keys(self) -> list[str]:
        return self.core.primary_keys

    @property
    def partition_keys(self) -> list[str]:
        return self.core.partition_keys

    @property
    def is_primary_key_table(self) -> bool:
        return self.core.is_primary_key_table

    @property
    def bucket_keys(self) -> tuple[str, ...]:
        return self.core.bucket_keys

    def bucket_mode(self) -> BucketMode:
        """How rows go to buckets: HASH_FIXED (bucket >= 1), BUCKET_UNAWARE (append, bucket -1),
        HASH_DYNAMIC (primary key, bucket -1, keys in the bucket the HASH index gives them),
        CROSS_PARTITION (primary key without every partition key, bucket -1: a key moves between
        partitions, :mod:`impl.write.cross_partition`)."""
        return self.core.bucket_mode

    def __repr__(self) -> str:
        kind = "primary-key" if self.is_primary_key_table else "append"
        return f"FileStoreTable({self.identifier!r}, {kind}, bucket={self.options.bucket})"

    # ------------------------------------------------------------------ views

    def copy(self, dynamic_options: Mapping[str, str]) -> "FileStoreTable":
        """The same table with extra options, e.g. ``{"scan.snapshot-id": "3"}`` (time travel)."""
        extra = {str(k): str(v) for k, v in dynamic_options.items()}
        check_dynamic_keys(extra)  # a misspelt Paimon key is refused (not warned about, then refused)
        warn_unknown_keys(extra)
        merged = {**self.dynamic_options, **extra}
        branch = co.BRANCH.get(merged)  # InvalidBranchNameError for a name that breaks the rule
        if branch == self.branch:
            return FileStoreTable.of(self.core.with_options(merged))
        # another branch: its own latest schema
        return open_branch(self.file_io, self.path, self.identifier, branch, merged, env=self.env,
                           snapshot_commit=self.core.snapshot_commit)

    # ------------------------------------------------------------------ builders

    def new_read_builder(self) -> ReadBuilder:
        return ReadBuilder(self.core)

    def new_batch_write_builder(self) -> BatchWriteBuilder:
        return BatchWriteBuilder(self.core)

    def new_stream_write_builder(self) -> StreamWriteBuilder:
        return StreamWriteBuilder(self.core)

    # ------------------------------------------------------------------ conveniences
    def to_ray(self, filter: Predicate | None = None, columns: Sequence[str] | None = None, *,  # noqa: A002
               limit: int | None = None, parallelism: int = -1, ray_remote_args: dict | None = None,
               concurrency: int | None = None):
        """The rows of this view as a Ray Dataset, planned now and read in parallel Ray tasks
        (needs the ray extra): see :func:`impl.ray.read_table`."""
        ray_source = require("impl.ray.source", "to_ray()", extra="ray")  # impl.ray sits above the table layer: resolved when called, as an optional library is
        return ray_source.read_table(self, filter=filter, columns=columns, limit=limit, parallelism=parallelism,
                          ray_remote_args=ray_remote_args, concurrency=concurrency)


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

    def to_polars(self):
        """A lazy ``polars.LazyFrame`` of the rows, with filters, projections and row limits
        pushed into the read (:mod:`impl.polars`; needs the polars extra)."""
        source = require("impl.polars.source", "to_polars()", extra="polars")  # the polars adapter, on use

        return source.PolarsSource(self).lazy()

    def to_duckdb(self, connection=None, name: str | None = None):
        """The table registered on DuckDB ``connection`` (default: a new in-memory database) as
        ``name`` (default: the table's name without its database), filters and projections
        pushed into the read (:mod:`impl.duckdb`; needs the duckdb extra); returns the connection."""
        dataset = require("impl.duckdb.dataset", "to_duckdb()", extra="duckdb")  # the DuckDB adapter, on use
        duckdb = require("duckdb", "to_duckdb()")
        con = connection if connection is not None else duckdb.connect(database=":memory:")
        con.register(name or self.identifier.rsplit(".", 1)[-1], dataset.TableDataset(self))
        return con

    def latest_snapshot(self) -> Snapshot | None:
        return self.core.snapshot_manager.latest_snapshot()

    def snapshot(self, snapshot_id: int) -> Snapshot:
        return self.core.snapshot_manager.snapshot(snapshot_id)

    def snapshots(self) -> list[Snapshot]:
        return list(self.core.snapshot_manager.snapshots())

    # ------------------------------------------------------------------ maintenance

    def compact(self, full: bool = False) -> CommitStats | None:
        """Compact the latest snapshot in one COMPACT commit; the CommitStats, or None if nothing to do.

        Append tables: per (partition, bucket), rewrite the files smaller than
        ``target-file-size`` into target-size files once there are ``compaction.min.file-num``
        of them (``full``: all files of a bucket that has more than one). Primary-key tables:
        a dedicated compaction job, each bucket's merge tree compacts (``full``: into one sorted run).
        Postpone-bucket tables (``bucket`` = -2): every partition's postponed rows move into real
        buckets (its bucket count, else ``postpone.default-bucket-num``), see :mod:`impl.write.postpone`.
        """
        return compact_table(self.core, full)

    def expire_snapshots(self, *, retain_min: int | None = None, retain_max: int | None = None,
                         time_retained_ms: int | None = None, max_deletes: int | None = None,
                         now_millis: int | None = None) -> ExpireResult:
        """Expire old snapshots by the ``snapshot.*`` options (arguments override them).

        Returns an :class:`impl.snapshot.expire.ExpireResult` listing what was removed.
        """
        o = self.options
        now = self.core.now_millis() if now_millis is None else now_millis
        config = ExpireConfig(
            retain_min=o.snapshot_num_retained_min if retain_min is None else retain_min,
            retain_max=o.snapshot_num_retained_max if retain_max is None else retain_max,
            older_than_millis=now - (o.snapshot_time_retained_ms if time_retained_ms is None else time_retained_ms),
            max_deletes=o.snapshot_expire_limit if max_deletes is None else max_deletes,
            clean_empty_directories=o.snapshot_clean_empty_directories,
        )
        return SnapshotExpiration(self.file_io, self.paths, self.manifest_file,
                                  self.partition_cache.path).expire(config, protected_names(self.core))

    def remove_orphan_files(self, older_than: int | _dt.datetime | None = None, *,
                            older_than_millis: int | None = None, dry_run: bool = False) -> list[str]:
        """Delete files under the table directory that no snapshot references and that are older
        than ``older_than`` (epoch millis or datetime; default: one day ago). Returns their paths
        (``dry_run``: the paths of what would be deleted; nothing is)."""
        if older_than_millis is None:
            if older_than is None:
                older_than_millis = self.core.now_millis() - ONE_DAY_MS
            elif isinstance(older_than, _dt.datetime):
                ts = older_than if older_than.tzinfo else older_than.astimezone()
                older_than_millis = int(ts.timestamp() * 1000)
            else:
                older_than_millis = int(older_than)
        return remove_orphan_files(self.core, older_than_millis, dry_run)

    def rollback_to(self, target: int | str) -> list[str]:
        """Make snapshot ``target`` (an id) or tag ``target`` (a name) the latest snapshot: drop
        newer snapshots and tags and the files only they used (Paimon's RollbackHelper).

        SnapshotNotExistError for an id neither a snapshot nor a tag holds, TagNotExistError
        for an unknown tag. Returns the deleted file paths.
        """
        if isinstance(target, bool) or not isinstance(target, (int, str)):
            raise InvalidOptionError(f"rollback_to target {target!r} is neither a snapshot id (int) nor a tag name (str)")
        return rollback_to(self.core, target)

    def doctor(self) -> TableHealth:
        """Check every metadata file this branch's snapshots, tags and hints refer to; the
        :class:`impl.maintenance.repair.TableHealth` names each damaged file and what it breaks
        (``healthy`` when none is). Reads only."""
        return doctor(self.core)

    def repair(self, dry_run: bool = False) -> RepairPlan:
        """Move the table back to its newest readable snapshot when the latest cannot be read:
        the damaged newer snapshot files are set aside as ``snapshot/damaged-snapshot-<id>-<hash>``
        and the hints rewritten; no manifest or data file is deleted (``remove_orphan_files``
        can do that later). Crash-safe and idempotent; ``dry_run`` changes nothing.
        TableNotRepairableError when no snapshot is readable. Returns the
        :class:`impl.maintenance.repair.RepairPlan` (target id, files set aside)."""
        return repair(self.core, dry_run)

    # ------------------------------------------------------------------ tags

    def tag_manager(self) -> TagManager:
        """The tags of this view's branch (a method, as pypaimon's ``table.tag_manager()``)."""
        return self.core.tag_manager

    def create_tag(self, tag_name: str, snapshot_id: int | None = None,
                   time_retained: _dt.timedelta | str | None = None, ignore_if_exists: bool = False) -> Tag:
        """Tag snapshot ``snapshot_id`` (default: the latest) as ``tag_name``, atomically.

        ``time_retained`` (a timedelta or a duration such as ``"1 d"``) is recorded in the tag.
        TagAlreadyExistError if the name is taken (unless ``ignore_if_exists``: the existing
        tag is returned); SnapshotNotExistError if the snapshot does not exist (an expired
        snapshot can be tagged only while another tag still holds it, as in Paimon);
        InvalidTagNameError for a blank or path-unsafe name. A refused call writes nothing.
        """
        return create_tag(self.core, tag_name, snapshot_id, time_retained, ignore_if_exists)

    def delete_tag(self, tag_name: str) -> list[str]:
        """Delete the tag and the files only it kept (TagNotExistError if there is none);
        returns the deleted file paths."""
        return delete_tag(self.core, tag_name)

    def tags(self) -> list[Tag]:
        """Every tag of this view's branch, by name: the rows of Paimon's ``$tags`` table
        (``tag_name``, ``snapshot_id``, ``commit_time``, ``branches`` ...), each a :class:`Tag`."""
        return tags_with_branches(self.core)

    def list_tags(self) -> list[Tag]:
        """Alias of :meth:`tags` (pypaimon's name)."""
        return self.tags()

    # ------------------------------------------------------------------ branches

    def branch_manager(self) -> BranchManager:
        """The table's branches (a method, as pypaimon's ``table.branch_manager()``)."""
        return self.core.branch_manager

    def create_branch(self, branch_name: str, tag: str | None = None, ignore_if_exists: bool = False) -> None:
        """Create a branch: from tag ``tag`` (it starts at the tag's snapshot) or, without one,
        empty with the current schema (Paimon's semantics). InvalidBranchNameError,
        BranchAlreadyExistError, TagNotExistError on bad input; nothing is written then."""
        self.core.branch_manager.create_branch(branch_name, tag, ignore_if_exists)

    def delete_branch(self, branch_name: str) -> None:
        """Delete a branch's snapshots, schemas and tags (BranchNotExistError if there is none).
        Files only it used are left for :meth:`remove_orphan_files`."""
        self.core.branch_manager.delete_branch(branch_name)

    def branches(self) -> list[BranchInfo]:
        """The branches of the table (``main`` not included), by name: the rows of Paimon's
        ``$branches`` table (``branch_name``, ``create_time``)."""
        return self.core.branch_manager.branch_infos()

    def list_branches(self) -> list[BranchInfo]:
        """Alias of :meth:`branches` (pypaimon's name)."""
        return self.branches()

    def fast_forward(self, branch_name: str) -> None:
        """Replace this view's branch (main) from the branch's earliest snapshot on with the
        branch's snapshots, schemas and tags (Paimon's fastForward)."""
        self.core.branch_manager.fast_forward(branch_name)


def open_branch(file_io: FileIO, path: str, identifier: str, branch: str,
                dynamic_options: Mapping[str, str] | None = None, *, env: Environment | None = None,
                snapshot_commit: SnapshotCommit | None = None) -> FileStoreTable:
    """A view of branch ``branch`` of the table at ``path`` (its latest schema); BranchNotExistError if
    absent, InvalidBranchNameError for a name no branch can have."""
    branch = check_branch(branch)
    paths = TablePaths(path.rstrip("/"), branch=branch)
    if branch != MAIN_BRANCH and not schema_ids_in(file_io, paths.schema_dir):
        raise BranchNotExistError(identifier, branch)
    schema = load_latest_schema(file_io, paths, identifier)
    return FileStoreTable(file_io, path, schema, identifier, {**(dynamic_options or {}), "branch": branch}, env=env,
                          snapshot_commit=snapshot_commit)

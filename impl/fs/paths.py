"""Where each file of a table lives (Paimon's FileStorePathFactory).

```
<table>/schema/schema-<id>
<table>/snapshot/snapshot-<id>, LATEST, EARLIEST
<table>/manifest/manifest-<uuid>-<n>, manifest-list-<uuid>-<n>, index-manifest-<uuid>-<n>
<table>/[<dir>/]<k1>=<v1>/.../bucket-<b>/data-<uuid>-<n>[.<codec>].<format>, changelog-<uuid>-<n>...
<table>/index/index-<uuid>-<n>
<table>/tag/tag-<name>                                   a tag: the snapshot JSON (+ tag fields)
<table>/branch/branch-<name>/{schema,snapshot,tag}/      a branch's own metadata
```

A branch keeps its own schema, snapshot and tag directories under ``branch/branch-<name>/``;
manifests, index files and data files live at the table root for every branch (Paimon's
FileStorePathFactory does the same), so a branch made from a tag shares the tag's files.

Branch and tag names enter these paths only as checked names (:class:`impl.fs.names.BranchName`,
:class:`impl.fs.names.TagName`, made by the one name rule of :mod:`impl.fs.names`): mypy refuses
a plain ``str`` and the builders check the type at run time, so no unchecked name (``../x``)
can reach a path.

Data files follow the table's :class:`DataLayout`: ``data-file.path-directory`` (``<dir>``),
``data-file.prefix`` / ``changelog-file.prefix`` (``data-`` / ``changelog-``), and with
``file.suffix.include.compression`` the codec's extension before the format's
(``data-<uuid>-0.zst.parquet``, Paimon's DataFilePathFactory). Partition directory names are
:mod:`impl.data.partition_names`'s.
"""

from __future__ import annotations

import itertools
import posixpath
import threading
import uuid
from dataclasses import dataclass
from typing import Callable

from impl.fs.names import MAIN_BRANCH, BranchName, TagName, require

SNAPSHOT_PREFIX = "snapshot-"
SCHEMA_PREFIX = "schema-"
LATEST_HINT = "LATEST"
EARLIEST_HINT = "EARLIEST"
DATA_FILE_PREFIX = "data-"
CHANGELOG_FILE_PREFIX = "changelog-"
TAG_PREFIX = "tag-"
# a tag being created: written before its snapshot is confirmed, so an expiration keeps the
# snapshot's files meanwhile; Paimon lists "tag-*" only (impl.tag.manager.TagManager.create)
PENDING_TAG_PREFIX = "pending-tag-"
TAG_DIR_NAME = "tag"  # a branch's tag directory
BRANCH_PREFIX = "branch-"
# MAIN_BRANCH, the checked name "main", is impl.fs.names'; importable from here as before


IdFactory = Callable[[], str]


# bucket id of postponed rows (impl.bucket.routing.POSTPONE_BUCKET; the file system layer sits below it)
POSTPONE_BUCKET_ID = -2


def random_id() -> str:
    """The default id source of file names: a random uuid4."""
    return str(uuid.uuid4())


class FileNamer:
    """``<prefix><uuid>-<n><suffix>``: one uuid per namer, a counter per file, as Paimon does.

    ``id_factory`` supplies the uuid part (default :func:`random_id`); the deterministic
    simulation passes a seeded source so that a schedule replays with the same file names.
    """

    def __init__(self, prefix: str, suffix: str = "", id_factory: IdFactory | None = None):
        self._prefix = prefix
        self._suffix = suffix
        self._uuid = (id_factory or random_id)()
        self._counter = itertools.count()
        self._lock = threading.Lock()

    def next(self) -> str:
        return self._next_with(self._prefix)

    def _next_with(self, prefix: str) -> str:
        with self._lock:
            n = next(self._counter)
        return f"{prefix}{self._uuid}-{n}{self._suffix}"


class DataFileNamer(FileNamer):
    """Names of one writer's data and changelog files (``data-<uuid>-<n>``,
    ``changelog-<uuid>-<n>``), without the format's extension: the file writer appends the
    extension of the format it writes (``impl.format.formats.named_for``).

    Both kinds share the uuid and the counter, as in Paimon's DataFilePathFactory, so a data
    file and a changelog file of one writer never share a number.
    """

    def __init__(self, suffix: str = "", id_factory: IdFactory | None = None, prefix: str = DATA_FILE_PREFIX,
                 changelog_prefix: str = CHANGELOG_FILE_PREFIX):
        super().__init__(prefix, suffix, id_factory)
        self._changelog_prefix = changelog_prefix

    def data_file(self) -> str:
        return self.next()

    def changelog_file(self) -> str:
        return self._next_with(self._changelog_prefix)


# HadoopCompressionType's file extensions (the name part file.suffix.include.compression adds)
_COMPRESSION_EXTENSIONS = {"none": None, "gzip": "gz", "bzip2": "bz2", "deflate": "deflate", "snappy": "snappy",
                           "lz4": "lz4", "zstd": "zst"}


def compression_extension(compression: str | None) -> str | None:
    """``DataFilePathFactory.compressFileExtension``: the extension of a Hadoop codec name (any
    case), ``file.compression`` itself for other names, None for none or unset."""
    if not compression:
        return None
    lowered = compression.lower()
    return _COMPRESSION_EXTENSIONS[lowered] if lowered in _COMPRESSION_EXTENSIONS else compression


@dataclass(frozen=True)
class DataLayout:
    """Where a table's data files go and how they are named (see the module docstring).

    ``directory``: ``data-file.path-directory`` (a checked relative path, None for the table
    directory); ``compression_infix``: the codec extension put before the format's (None unless
    ``file.suffix.include.compression``)."""

    directory: str | None = None
    data_prefix: str = DATA_FILE_PREFIX
    changelog_prefix: str = CHANGELOG_FILE_PREFIX
    compression_infix: str | None = None

    def namer(self, id_factory: IdFactory | None = None) -> DataFileNamer:
        """A new writer's namer of data and changelog files."""
        suffix = f".{self.compression_infix}" if self.compression_infix else ""
        return DataFileNamer(suffix, id_factory, self.data_prefix, self.changelog_prefix)


DEFAULT_LAYOUT = DataLayout()


def branch_root(table_path: str, branch: BranchName) -> str:
    """Directory holding a branch's schema/, snapshot/ and tag/ (the table directory for main)."""
    require(BranchName, branch)
    if branch == MAIN_BRANCH:
        return table_path
    return posixpath.join(table_path, "branch", BRANCH_PREFIX + branch)


class TablePaths:
    def __init__(self, table_path: str, id_factory: IdFactory | None = None, branch: BranchName = MAIN_BRANCH,
                 layout: DataLayout = DEFAULT_LAYOUT):
        """``id_factory``: the uuid source of new manifest and list names (see :class:`FileNamer`).
        ``branch``: whose schema / snapshot / tag directories these are (data is shared); a
        checked name (:func:`impl.fs.names.check_branch`). ``layout``: where data files go and
        how new ones are named."""
        self.table_path = table_path.rstrip("/")
        self.layout = layout
        self.data_root = posixpath.join(self.table_path, layout.directory) if layout.directory else self.table_path
        self.branch = branch
        self.branch_dir = branch_root(self.table_path, branch)
        self.snapshot_dir = posixpath.join(self.branch_dir, "snapshot")
        self.schema_dir = posixpath.join(self.branch_dir, "schema")
        self.tag_dir = posixpath.join(self.branch_dir, TAG_DIR_NAME)
        self.branches_dir = posixpath.join(self.table_path, "branch")
        self.manifest_dir = posixpath.join(self.table_path, "manifest")
        self.index_dir = posixpath.join(self.table_path, "index")
        self._manifest = FileNamer("manifest-", id_factory=id_factory)
        self._manifest_list = FileNamer("manifest-list-", id_factory=id_factory)
        self._index_manifest = FileNamer("index-manifest-", id_factory=id_factory)

    # metadata -------------------------------------------------------------------
    def snapshot_path(self, snapshot_id: int) -> str:
        return posixpath.join(self.snapshot_dir, f"{SNAPSHOT_PREFIX}{snapshot_id}")

    def hint_path(self, name: str) -> str:
        return posixpath.join(self.snapshot_dir, name)

    def schema_path(self, schema_id: int) -> str:
        return posixpath.join(self.schema_dir, f"{SCHEMA_PREFIX}{schema_id}")

    def tag_path(self, tag_name: TagName) -> str:
        require(TagName, tag_name)
        return posixpath.join(self.tag_dir, f"{TAG_PREFIX}{tag_name}")

    def pending_tag_path(self, token: str) -> str:
        return posixpath.join(self.tag_dir, f"{PENDING_TAG_PREFIX}{token}")

    def with_branch(self, branch: BranchName) -> "TablePaths":
        """The same table's paths for another branch."""
        return TablePaths(self.table_path, branch=branch, layout=self.layout)

    def manifest_path(self, file_name: str) -> str:
        return posixpath.join(self.manifest_dir, file_name)

    def new_manifest_name(self) -> str:
        return self._manifest.next()

    def new_manifest_list_name(self) -> str:
        return self._manifest_list.next()

    def new_index_manifest_name(self) -> str:
        return self._index_manifest.next()

    def index_file_path(self, file_name: str) -> str:
        return posixpath.join(self.index_dir, file_name)

    # data -------------------------------------------------------------------------
    def bucket_dir(self, partition_path: str, bucket: int) -> str:
        """``partition_path`` is ``k1=v1/k2=v2`` (empty for unpartitioned tables), under
        ``data-file.path-directory`` if set. Bucket -2 holds a postpone-mode table's unassigned
        rows, in ``bucket-postpone`` (Paimon's FileStorePathFactory)."""
        name = "bucket-postpone" if bucket == POSTPONE_BUCKET_ID else f"bucket-{bucket}"
        if partition_path:
            return posixpath.join(self.data_root, partition_path, name)
        return posixpath.join(self.data_root, name)

    def data_file_path(self, partition_path: str, bucket: int, file_name: str, external_path: str | None = None) -> str:
        if external_path:
            return external_path
        return posixpath.join(self.bucket_dir(partition_path, bucket), file_name)

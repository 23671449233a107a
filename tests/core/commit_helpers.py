"""Builders and table checks for the FileStoreCommit tests."""

from __future__ import annotations

from impl.commit.file_store_commit import FileStoreCommit
from impl.commit.messages import CommitMessage
from impl.data.binary_row import decode_row, encode_row
from impl.data.types import BIGINT, STRING, DataField
from impl.datafile.meta import DataFileMeta
from impl.fs.file_io import FileIO
from impl.fs.paths import TablePaths
from impl.manifest.entries import merge_entries
from impl.manifest.manifest_file import IndexManifestFile, ManifestFile, ManifestList
from impl.manifest.records import FileKind, IndexFileMeta
from impl.schema.records import TableSchema
from impl.snapshot.manager import SnapshotManager

PK_SCHEMA = TableSchema(
    0,
    (DataField(0, "dt", STRING(False)), DataField(1, "id", BIGINT(False)), DataField(2, "v", STRING())),
    partition_keys=("dt",),
    primary_keys=("dt", "id"),
    options={"bucket": "2"},
)
APPEND_SCHEMA = TableSchema(0, (DataField(0, "id", BIGINT()), DataField(1, "v", STRING())), options={})

PT = [STRING(False)]
KT = [BIGINT(False)]
NO_SLEEP = {"sleep": lambda seconds: None}


def part(dt: str) -> bytes:
    return encode_row([dt], PT)


def key(i: int) -> bytes:
    return encode_row([i], KT)


def dfile(name: str, rows: int = 1, lo: int = 0, hi: int = 0, level: int = 0) -> DataFileMeta:
    return DataFileMeta(name, 100 + rows, rows, key(lo), key(hi), min_sequence_number=0,
                        max_sequence_number=rows, level=level)


def msg(dt: str = "p1", bucket: int = 0, total_buckets: int = 2, **kw) -> CommitMessage:
    return CommitMessage(part(dt), bucket, total_buckets, **kw)


def append_msg(bucket: int = 0, **kw) -> CommitMessage:
    return CommitMessage(encode_row([], []), bucket, -1, **kw)


def index_file(name: str) -> IndexFileMeta:
    return IndexFileMeta("HASH", name, 16, 4)


def new_commit(fio: FileIO, root: str, schema: TableSchema = PK_SCHEMA, user: str = "writer", **kw) -> FileStoreCommit:
    kw = {**NO_SLEEP, **kw}
    return FileStoreCommit(fio, root, schema, commit_user=user, **kw)


# ----------------------------------------------------------------------------- observing a table


class TableView:
    """Reads a table back from storage with fresh readers (no caches shared with the writers)."""

    def __init__(self, fio: FileIO, root: str, schema: TableSchema = PK_SCHEMA):
        self.fio, self.root, self.schema = fio, root, schema
        self.paths = TablePaths(root)
        self.sm = SnapshotManager(fio, self.paths)
        self.ptype = [schema.field(k).type for k in schema.partition_keys]

    def mf(self) -> ManifestFile:
        return ManifestFile(self.fio, self.paths, self.ptype)

    def ml(self) -> ManifestList:
        return ManifestList(self.fio, self.paths)

    def snapshot_ids(self) -> list[int]:
        return self.sm.snapshot_ids()

    def latest(self):
        return self.sm.latest_snapshot()

    def delta_entries(self, snapshot):
        return self.mf().read_all(self.ml().read(snapshot.delta_manifest_list))

    def all_entries(self, snapshot):
        ml = self.ml()
        return self.mf().read_all([*ml.read(snapshot.base_manifest_list), *ml.read(snapshot.delta_manifest_list)])

    def live(self, snapshot=None) -> set[tuple]:
        """(partition values, bucket, level, file name) of the live files of a snapshot."""
        snapshot = snapshot if snapshot is not None else self.latest()
        if snapshot is None:
            return set()
        merged = merge_entries(self.all_entries(snapshot))
        assert all(e.kind is FileKind.ADD for e in merged.values()), "a DELETE survives the full fold"
        return {(decode_row(e.partition, self.ptype), e.bucket, e.file.level, e.file.file_name)
                for e in merged.values()}

    def live_names(self, snapshot=None) -> set[str]:
        return {t[3] for t in self.live(snapshot)}

    def manifest_dir(self) -> set[str]:
        return set(self.fio.list_names(self.paths.manifest_dir))

    def referenced(self) -> set[str]:
        """Every manifest-dir file some snapshot references."""
        out = set()
        ml, imf = self.ml(), IndexManifestFile(self.fio, self.paths)
        for sid in self.snapshot_ids():
            s = self.sm.snapshot(sid)
            for lst in (s.base_manifest_list, s.delta_manifest_list, s.changelog_manifest_list):
                if lst:
                    out.add(lst)
                    out.update(m.file_name for m in ml.read(lst))
            if s.index_manifest:
                out.add(s.index_manifest)
                imf.read(s.index_manifest)
        return out

    def check(self) -> None:
        """Invariants: contiguous ids; live set of N = fold of every delta of 1..N; every referenced
        manifest exists; record counts add up; no orphan manifest."""
        ids = self.snapshot_ids()
        assert ids == list(range(1, len(ids) + 1)), ids
        history = []
        total = 0
        for sid in ids:
            s = self.sm.snapshot(sid)
            delta = self.delta_entries(s)
            history.extend(delta)
            folded = merge_entries(history)
            assert all(e.kind is FileKind.ADD for e in folded.values()), f"snapshot {sid}: orphan DELETE"
            assert {e.identity for e in folded.values()} == {e.identity for e in
                                                             merge_entries(self.all_entries(s)).values()}
            d = sum(e.file.row_count if e.kind is FileKind.ADD else -e.file.row_count for e in delta)
            total += d
            assert s.delta_record_count == d and s.total_record_count == total, sid
        assert self.referenced() <= self.manifest_dir()
        assert self.manifest_dir() == self.referenced(), "orphan manifests: " + str(
            self.manifest_dir() - self.referenced())

    def state(self) -> tuple:
        return (tuple(self.snapshot_ids()), frozenset(self.manifest_dir()))


def process_committer(root: str, worker: int, n_commits: int, queue) -> None:
    """Spawned process: commit ``n_commits`` snapshots, one new file each, to an append table."""
    from fsspec.implementations.local import LocalFileSystem

    from impl.commit.options import CommitOptions

    c = new_commit(FileIO(LocalFileSystem()), root, APPEND_SCHEMA, user=f"proc-{worker}",
                   options=CommitOptions(max_retries=500, min_retry_wait_ms=1, max_retry_wait_ms=20))
    ids = []
    for i in range(n_commits):
        ids += c.commit([append_msg(bucket=worker, new_files=[dfile(f"proc-{worker}-{i}", 1)])], i + 1).snapshot_ids
    queue.put((worker, ids))

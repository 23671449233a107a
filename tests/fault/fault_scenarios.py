"""Commit-level crash scenarios and the checks run after every crash (helper for tests/fault).

A *scenario* is a table with history (built once, healthy, then copied into every fresh
storage by ``setup``) plus the work under test: write the new data files (real Parquet
bytes, so "no snapshot references a missing file" is checkable), then commit through
``FileStoreCommit`` over a FaultyFileSystem. The table has a partition (``dt``) and a
primary key (``dt, id``), two buckets, so the LSM rules (key ranges of level >= 1 files)
apply.

Every commit is described once, as a :class:`CommitSpec`, and drives both sides: impl
(CommitMessages of DataFileMeta) and the executable model (FileFacts). After a crash the
table is reopened through a healthy FileIO over the same storage; the snapshots it holds
beyond the history say which *parts* ((user, identifier, kind)) were published, and the
model applies exactly those parts: every impl snapshot must then read what the model
snapshot of the same id reads. That is "before, after, or (APPEND + COMPACT) between".

Assertions here carry their own messages (this is not a test module, so pytest does not
rewrite them).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import posixpath
import threading
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from fault_injection import fresh_memory_storage, remove_storage
from fault_injection.listed_reads import checker_file_io
from fault_injection.orphans import find_orphans, is_table_metadata
from fault_injection.table_audit import TableAudit, audit_table
from impl.commit import CommitMessage, FileStoreCommit, ManifestCommittable
from impl.data.binary_row import decode_row, encode_row
from impl.data.partition_names import PartitionNaming
from impl.data.types import BIGINT, STRING, DataField
from impl.datafile.meta import DataFileMeta, FileSource
from impl.fs.file_io import FileIO
from impl.fs.paths import TablePaths
from impl.manifest.manifest_file import IndexManifestFile
from impl.manifest.records import IndexFileMeta, IndexType, ManifestEntry
from impl.mergetree.deletion_vectors import as_positions, encode_index_file, read_deletion_vectors
from impl.schema.records import TableSchema
from model import Model
from model.rules import FileFacts

TOTAL_BUCKETS = 2
KEY_TYPE = [BIGINT(False)]
PARTITION_TYPE = [STRING()]
TABLE_SUBPATH = "default.db/t"


def table_path(root: str) -> str:
    return posixpath.join(root, TABLE_SUBPATH)


def make_schema(options: dict[str, str] | None = None) -> TableSchema:
    return TableSchema(
        id=0,
        fields=(DataField(0, "dt", STRING(False)), DataField(1, "id", BIGINT(False)), DataField(2, "v", STRING())),
        partition_keys=("dt",),
        primary_keys=("dt", "id"),
        options={"bucket": str(TOTAL_BUCKETS), **(options or {})},
    )


def no_sleep(_seconds: float) -> None:
    """Retry backoff without waiting (tests assert outcomes, never timing)."""


# =============================================================================== files


@dataclass(frozen=True)
class F:
    """One data file: partition ``dt``, bucket, LSM level, name, key range [lo, hi] (one row per key)."""

    dt: str
    bucket: int
    level: int
    name: str
    lo: int
    hi: int

    @property
    def rows(self) -> int:
        return self.hi - self.lo + 1

    @property
    def partition(self) -> bytes:
        return encode_row([self.dt], PARTITION_TYPE)

    def relpath(self) -> str:
        return posixpath.join(PartitionNaming(("dt",), tuple(PARTITION_TYPE)).path([self.dt]), f"bucket-{self.bucket}",
                              self.name)

    def path(self, root: str) -> str:
        return posixpath.join(table_path(root), self.relpath())

    def data(self) -> bytes:
        return _parquet_bytes(self)

    def meta(self) -> DataFileMeta:
        return DataFileMeta(
            file_name=self.name,
            file_size=len(self.data()),
            row_count=self.rows,
            min_key=encode_row([self.lo], KEY_TYPE),
            max_key=encode_row([self.hi], KEY_TYPE),
            min_sequence_number=self.lo,
            max_sequence_number=self.hi,
            schema_id=0,
            level=self.level,
            creation_time_millis=1_700_000_000_000,
            file_source=FileSource.APPEND if self.level == 0 else FileSource.COMPACT,
        )

    def facts(self) -> FileFacts:
        return FileFacts((self.dt,), self.bucket, TOTAL_BUCKETS, self.level, self.name, self.lo, self.hi, self.rows)


@dataclass(frozen=True)
class IX:
    """One deletion-vector index file of bucket (``dt``, ``bucket``): data file name -> deleted positions."""

    dt: str
    bucket: int
    name: str
    vectors: tuple[tuple[str, tuple[int, ...]], ...]

    def encoded(self) -> tuple[bytes, tuple]:
        return encode_index_file({n: as_positions(p) for n, p in self.vectors})

    def data(self) -> bytes:
        return self.encoded()[0]

    def meta(self) -> IndexFileMeta:
        data, ranges = self.encoded()
        return IndexFileMeta(IndexType.DELETION_VECTORS, self.name, len(data), len(ranges), ranges)

    def path(self, root: str) -> str:
        return TablePaths(table_path(root)).index_file_path(self.name)


_PARQUET_CACHE: dict[F, bytes] = {}
_PARQUET_LOCK = threading.Lock()


def _parquet_bytes(f: F) -> bytes:
    with _PARQUET_LOCK:
        cached = _PARQUET_CACHE.get(f)
    if cached is not None:
        return cached
    keys = list(range(f.lo, f.hi + 1))
    table = pa.table({
        "_KEY_id": pa.array(keys, pa.int64()),
        "_SEQUENCE_NUMBER": pa.array(keys, pa.int64()),
        "_VALUE_KIND": pa.array([0] * len(keys), pa.int8()),
        "dt": pa.array([f.dt] * len(keys), pa.string()),
        "id": pa.array(keys, pa.int64()),
        "v": pa.array([f"{f.name}:{k}" for k in keys], pa.string()),
    })
    buf = io.BytesIO()
    pq.write_table(table, buf)
    data = buf.getvalue()
    with _PARQUET_LOCK:
        _PARQUET_CACHE[f] = data
    return data


_ROWS_BY_CONTENT: dict[bytes, Any] = {}


def parquet_check(data: bytes, entry: ManifestEntry) -> str | None:
    """audit_table data_check: the file parses as Parquet and holds ``row_count`` rows."""
    key = hashlib.blake2b(data, digest_size=16).digest()
    n = _ROWS_BY_CONTENT.get(key)
    if n is None:
        try:
            n = pq.read_metadata(io.BytesIO(data)).num_rows
        except Exception as e:  # noqa: BLE001 - a torn or emptied file
            n = f"not a Parquet file ({type(e).__name__}: {e})"
        _ROWS_BY_CONTENT[key] = n
    if isinstance(n, str):
        return n
    if n != entry.file.row_count:
        return f"holds {n} rows, its metadata says {entry.file.row_count}"
    return None


# =============================================================================== commits

Part = tuple  # (commit_user, commit_identifier, kind)


@dataclass(frozen=True)
class CommitSpec:
    """One commit (APPEND + optional COMPACT), or an overwrite of ``overwrite`` (a partition spec)."""

    user: str
    identifier: int
    new_files: tuple[F, ...] = ()
    compact_before: tuple[F, ...] = ()
    compact_after: tuple[F, ...] = ()
    overwrite: dict | None = None
    # deletion-vector index files the COMPACT part adds and removes (it always changes data too)
    compact_new_index: tuple[IX, ...] = ()
    compact_deleted_index: tuple[IX, ...] = ()

    @property
    def parts(self) -> list[Part]:
        compact = self.compact_before or self.compact_after or self.compact_new_index or self.compact_deleted_index
        if self.overwrite is not None:
            kinds = ["OVERWRITE"] + (["COMPACT"] if compact else [])
        else:
            kinds = (["APPEND"] if self.new_files else []) + (["COMPACT"] if compact else [])
        return [(self.user, self.identifier, k) for k in kinds]

    @property
    def written_files(self) -> tuple[F, ...]:
        return self.new_files + self.compact_after

    def messages(self) -> tuple[CommitMessage, ...]:
        groups: dict[tuple[str, int], dict[str, list]] = {}
        attrs = ("new_files", "compact_before", "compact_after", "compact_new_index", "compact_deleted_index")
        for attr in attrs:
            for f in getattr(self, attr):
                groups.setdefault((f.dt, f.bucket), {a: [] for a in attrs})
                groups[(f.dt, f.bucket)][attr].append(f.meta())
        return tuple(
            CommitMessage(encode_row([dt], PARTITION_TYPE), bucket, TOTAL_BUCKETS,
                          new_files=tuple(g["new_files"]), compact_before=tuple(g["compact_before"]),
                          compact_after=tuple(g["compact_after"]),
                          compact_new_index_files=tuple(g["compact_new_index"]),
                          compact_deleted_index_files=tuple(g["compact_deleted_index"]))
            for (dt, bucket), g in sorted(groups.items())
        )

    def committable(self) -> ManifestCommittable:
        return ManifestCommittable(self.identifier, self.messages())

    def apply_part(self, model: Model, kind: str) -> None:
        """Publish one part of this commit on the model (raises the model's conflict errors)."""
        if kind == "APPEND":
            model.commit(self.user, self.identifier, new_files=[f.facts() for f in self.new_files])
        elif kind == "COMPACT":
            model.commit(self.user, self.identifier, compact_before=[f.facts() for f in self.compact_before],
                         compact_after=[f.facts() for f in self.compact_after])
        elif kind == "OVERWRITE":
            parts = None if not self.overwrite else {(self.overwrite["dt"],)}
            model.overwrite(self.user, self.identifier, parts, [f.facts() for f in self.new_files])
        else:  # pragma: no cover
            raise ValueError(kind)


def write_data_files(file_io: FileIO, root: str, files: Sequence[F], *, only_missing: bool = False) -> None:
    for f in files:
        p = f.path(root)
        if only_missing and file_io.exists(p) and file_io.file_size(p) == len(f.data()):
            continue
        file_io.write_bytes(p, f.data())


def new_committer(file_io: FileIO, root: str, schema: TableSchema, user: str) -> FileStoreCommit:
    return FileStoreCommit(file_io, table_path(root), schema, commit_user=user, sleep=no_sleep)


def run_commit(file_io: FileIO, root: str, schema: TableSchema, spec: CommitSpec, *, recover: bool = False,
               committer: FileStoreCommit | None = None) -> list[int]:
    """Write the spec's data files, then commit it. With ``recover``: a restarted writer, which
    rewrites data files that are missing (its own, never referenced) and commits only what
    ``filter_committed`` says is not published yet. Returns the snapshot ids published."""
    write_data_files(file_io, root, spec.written_files, only_missing=recover)
    for ix in spec.compact_new_index:
        if not (recover and file_io.exists(ix.path(root)) and file_io.file_size(ix.path(root)) == len(ix.data())):
            file_io.write_bytes(ix.path(root), ix.data())
    commit = committer or new_committer(file_io, root, schema, spec.user)
    todo = [spec.committable()]
    if recover:
        todo = commit.filter_committed(todo)
    ids: list[int] = []
    for c in todo:
        if spec.overwrite is not None:
            ids += commit.overwrite(spec.overwrite, c).snapshot_ids
        else:
            ids += commit.commit(c).snapshot_ids
    return ids


# =============================================================================== scenarios


def d(n: int) -> str:
    return f"2024-01-{n:02d}"


H1 = F(d(1), 0, 0, "data-h1-0.parquet", 1, 10)
H2 = F(d(1), 1, 0, "data-h2-0.parquet", 1, 5)
H3 = F(d(2), 0, 0, "data-h3-0.parquet", 1, 3)
H4 = F(d(1), 0, 0, "data-h4-0.parquet", 5, 20)
H5 = F(d(1), 0, 1, "data-h5-0.parquet", 1, 20)
H6 = F(d(2), 1, 0, "data-h6-0.parquet", 7, 9)
H7 = F(d(1), 1, 0, "data-h7-0.parquet", 6, 8)
H8 = F(d(2), 0, 0, "data-h8-0.parquet", 10, 12)
H9 = F(d(2), 0, 1, "data-h9-0.parquet", 1, 12)
H10 = F(d(1), 0, 0, "data-h10-0.parquet", 21, 25)
H11 = F(d(2), 1, 0, "data-h11-0.parquet", 1, 2)

#: Healthy history shared by the scenarios: 7 commits, 9 snapshots (so the scenario's
#: snapshots are 10 and 11 and a torn LATEST hint "10" -> "1" is a real stale hint).
HISTORY: tuple[CommitSpec, ...] = (
    CommitSpec("writer", 1, new_files=(H1, H2, H3)),
    CommitSpec("writer", 2, new_files=(H4,), compact_before=(H1, H4), compact_after=(H5,)),
    CommitSpec("writer", 3, new_files=(H6,)),
    CommitSpec("writer", 4, new_files=(H7,)),
    CommitSpec("writer", 5, new_files=(H8,), compact_before=(H3, H8), compact_after=(H9,)),
    CommitSpec("writer", 6, new_files=(H10,)),
    CommitSpec("writer", 7, new_files=(H11,)),
)

N1 = F(d(1), 0, 0, "data-n1-0.parquet", 26, 30)
N2 = F(d(3), 0, 0, "data-n2-0.parquet", 1, 2)
N3 = F(d(1), 1, 0, "data-n3-0.parquet", 30, 33)
C1 = F(d(1), 0, 1, "data-c1-0.parquet", 1, 30)
O1 = F(d(1), 0, 0, "data-o1-0.parquet", 1, 50)
O2 = F(d(1), 1, 0, "data-o2-0.parquet", 1, 50)
R1 = F(d(3), 0, 0, "data-r1-0.parquet", 1, 5)
R2 = F(d(3), 1, 0, "data-r2-0.parquet", 1, 5)

#: Manifest options small enough that a commit folds every manifest into new ones (a full
#: merge) while the previous commits of the history did not.
TINY_MANIFEST_OPTIONS = {
    "manifest.target-file-size": "1 kb",
    "manifest.full-compaction-threshold-size": "24 kb",
    "manifest.merge-min-count": "1000",
}


@dataclass
class Scenario:
    """A table history (healthy) plus the commits under test.

    ``commits`` are run in order by :meth:`run` (``race``: the second one is the competitor,
    run inside the first one's publication). ``orders`` are the part sequences allowed
    after the history; a crashed table must show a prefix of one of them, a recovered table
    all of one.
    """

    name: str
    schema: TableSchema
    history: tuple[CommitSpec, ...]
    commits: tuple[CommitSpec, ...]
    race: bool = False
    last_competitor_errors: list = field(default_factory=list, repr=False)  # of the last run (race)
    _history_files: dict[str, bytes] | None = field(default=None, repr=False)
    _history_model: Model | None = field(default=None, repr=False)

    # ------------------------------------------------------------------ orders
    @property
    def orders(self) -> list[list[Part]]:
        first = [p for c in self.commits for p in c.parts]
        if not self.race:
            return [first]
        ours, theirs = self.commits
        # the competitor publishes first (the race); if its commit failed on a transient
        # error, ours publishes first and the competitor's recovery follows
        return [theirs.parts + ours.parts, ours.parts + theirs.parts]

    @property
    def own_parts(self) -> list[Part]:
        """What must be published when the scenario returns normally (the competitor of
        ``race`` may fail on its own without failing the scenario)."""
        return list(self.commits[0].parts) if self.race else [p for c in self.commits for p in c.parts]

    def spec_of(self, part: Part) -> CommitSpec:
        for c in (*self.history, *self.commits):
            if (c.user, c.identifier) == part[:2]:
                return c
        raise KeyError(part)

    # ------------------------------------------------------------------ history
    def history_files(self) -> dict[str, bytes]:
        """Relative path -> bytes of the table after the history (built once, healthy)."""
        if self._history_files is None:
            inner, root = fresh_memory_storage("history")
            try:
                fio = FileIO(inner)
                tp = table_path(root)
                fio.write_bytes(TablePaths(tp).schema_path(0), self.schema.to_json_bytes())
                for spec in self.history:
                    run_commit(fio, root, self.schema, spec)
                self._history_files = {
                    posixpath.relpath(p, tp): inner.cat_file(p) for p in sorted(inner.find(tp))
                }
            finally:
                remove_storage(inner, root)
        return self._history_files

    def history_snapshots(self) -> int:
        return sum(len(c.parts) for c in self.history)

    def history_model(self) -> Model:
        if self._history_model is None:
            m = Model(primary_key=True)
            for spec in self.history:
                for part in spec.parts:
                    spec.apply_part(m, part[2])
            self._history_model = m
        return self._history_model

    def setup(self, fs, root: str) -> None:
        """enumerate_crash_points setup: copy the history into the fresh storage."""
        tp = table_path(root)
        for rel, data in self.history_files().items():
            fs.pipe_file(posixpath.join(tp, rel), data)

    # ------------------------------------------------------------------ the work
    def run(self, fs, root: str, *, sync_on_write: bool = False) -> list[int]:
        """The scenario: write data files and commit, through ``fs`` (a FaultyFileSystem)."""
        if not self.race:
            ids: list[int] = []
            fio = FileIO(fs, sync_on_write=sync_on_write)
            for spec in self.commits:
                ids += run_commit(fio, root, self.schema, spec)
            return ids
        ours, theirs = self.commits
        competitor_errors: list[BaseException] = []
        self.last_competitor_errors = competitor_errors

        def competitor() -> None:
            try:
                run_commit(FileIO(fs, sync_on_write=sync_on_write), root, self.schema, theirs)
            except Exception as e:  # noqa: BLE001 - a transient error fails only the competitor
                competitor_errors.append(e)

        fio = RacingFileIO(fs, before_first_publish=competitor, sync_on_write=sync_on_write)
        return run_commit(fio, root, self.schema, ours)

    def recover(self, file_io: FileIO, root: str) -> None:
        """A restarted process completes every commit of the scenario via filter_committed."""
        specs = self.commits if not self.race else (self.commits[1], self.commits[0])
        for spec in specs:
            run_commit(file_io, root, self.schema, spec, recover=True)


class RacingFileIO(FileIO):
    """A FileIO that runs ``before_first_publish()`` right before its first atomic create:
    a competing committer publishes the snapshot id this one is about to take."""

    def __init__(self, fs, *, before_first_publish: Callable[[], None], sync_on_write: bool = False):
        super().__init__(fs, sync_on_write=sync_on_write)
        self._hook: Callable[[], None] | None = before_first_publish

    def try_write_atomic(self, path: str, data: bytes) -> bool:
        hook, self._hook = self._hook, None
        if hook is not None:
            hook()
        return super().try_write_atomic(path, data)


def _append_compact(user_id: int) -> CommitSpec:
    # APPEND a level-0 file, then COMPACT bucket (d1, 0) fully: the new file, an older
    # level-0 file and the level-1 file of the history become one level-1 file.
    return CommitSpec("writer", user_id, new_files=(N1,), compact_before=(H10, N1, H5), compact_after=(C1,))


X1 = F(d(2), 1, 1, "data-x1-0.parquet", 1, 9)
IX1 = IX(d(2), 1, "index-dv1-0", (("data-x1-0.parquet", (3, 4)),))
IX2 = IX(d(1), 0, "index-dv2-0", (("data-c1-0.parquet", (0, 1, 29)),))
IX3 = IX(d(2), 1, "index-dv3-0", (("data-x1-0.parquet", (3, 4, 5)),))

#: The history plus a compaction of bucket (d2, 1) that writes a deletion vector for its output.
DV_HISTORY = HISTORY + (
    CommitSpec("writer", 8, compact_before=(H6, H11), compact_after=(X1,), compact_new_index=(IX1,)),)


def _append_compact_dv(user_id: int) -> CommitSpec:
    # append_compact whose COMPACT part also adds a deletion-vector index file for the new
    # level-1 file and replaces the index file of bucket (d2, 1) (one DELETE, two ADDs)
    return replace(_append_compact(user_id), compact_new_index=(IX2, IX3), compact_deleted_index=(IX1,))


def expected_index(specs_and_parts) -> set[str]:
    """Live index file names after the COMPACT parts among ``specs_and_parts`` (spec, kind)."""
    live: set[str] = set()
    for spec, kind in specs_and_parts:
        if kind == "COMPACT":
            live -= {ix.name for ix in spec.compact_deleted_index}
            live |= {ix.name for ix in spec.compact_new_index}
    return live


def check_deletion_vectors(inner, root: str, a: TableAudit, scn: Scenario, parts: list, where: str) -> None:
    """Every snapshot's deletion vectors parse (CRC checked) and name live files of their
    bucket; the latest snapshot holds exactly the index files of the published parts."""
    fio = FileIO(inner)
    paths = TablePaths(table_path(root))
    index_manifests = IndexManifestFile(fio, paths)
    for sid, view in a.views.items():
        name = view.snapshot.index_manifest
        if not name:
            continue
        live = {}
        for e in view.live:
            live.setdefault((e.partition, e.bucket), set()).add(e.file.file_name)
        for ie in index_manifests.read(name):
            vectors = read_deletion_vectors(fio, paths, [ie.index_file])
            dangling = set(vectors) - live.get((ie.partition, ie.bucket), set())
            assert not dangling, f"{where}: snapshot {sid}: deletion vectors of files not live: {dangling}"
    history = [(spec, part[2]) for spec in scn.history for part in spec.parts]
    want = expected_index(history + [(scn.spec_of(p), p[2]) for p in parts])
    latest = a.views[max(a.views)].snapshot if a.views else None
    got = {ie.index_file.file_name for ie in index_manifests.read(latest.index_manifest)} \
        if latest is not None and latest.index_manifest else set()
    assert got == want, f"{where}: live index files {sorted(got)}, expected {sorted(want)}"


def scenarios() -> dict[str, Scenario]:
    plain = make_schema()
    return {
        "first_commit": Scenario(
            "first_commit", plain, (), (CommitSpec("writer", 1, new_files=(N2, N3)),)),
        "append": Scenario(
            "append", plain, HISTORY, (CommitSpec("writer", 8, new_files=(N3, N2)),)),
        "append_compact": Scenario(
            "append_compact", plain, HISTORY, (_append_compact(8),)),
        "manifest_full_merge": Scenario(
            "manifest_full_merge", make_schema(TINY_MANIFEST_OPTIONS), HISTORY, (_append_compact(8),)),
        "overwrite": Scenario(
            "overwrite", plain, HISTORY, (CommitSpec("writer", 8, new_files=(O1, O2), overwrite={"dt": d(1)}),)),
        "deletion_vectors": Scenario(
            "deletion_vectors", plain, DV_HISTORY, (_append_compact_dv(9),)),
        "race": Scenario(
            "race", plain, HISTORY,
            (CommitSpec("writer", 8, new_files=(R1,)), CommitSpec("competitor", 1, new_files=(R2,))),
            race=True),
    }


SCENARIOS = scenarios()
SCENARIO_NAMES = list(SCENARIOS)


# =============================================================================== checks


def model_facts(entries: Sequence[ManifestEntry]) -> dict[tuple, FileFacts]:
    """impl live entries in the model's terms: {identity: FileFacts}."""
    out = {}
    for e in entries:
        p = decode_row(e.partition, PARTITION_TYPE)
        lo = decode_row(e.file.min_key, KEY_TYPE)[0]
        hi = decode_row(e.file.max_key, KEY_TYPE)[0]
        facts = FileFacts(p, e.bucket, e.total_buckets, e.file.level, e.file.file_name, lo, hi, e.file.row_count)
        out[(p, e.bucket, e.file.level, e.file.file_name)] = facts
    return out


def published_parts(audit: TableAudit, skip: int) -> list[Part]:
    """(user, identifier, kind) of every snapshot after the first ``skip`` ones."""
    return [
        (v.snapshot.commit_user, v.snapshot.commit_identifier, v.snapshot.commit_kind.value)
        for sid, v in sorted(audit.views.items()) if sid > skip
    ]


def audit(inner, root: str) -> TableAudit:
    return audit_table(checker_file_io(inner, table_path(root)), table_path(root), data_check=parquet_check)


def check_table(inner, root: str, scn: Scenario, where: str, *, complete: bool = False) -> tuple[TableAudit, Model]:
    """The table is intact and reads what the model reads, snapshot by snapshot.

    Every snapshot file parses, ids are contiguous, the hint resolution agrees with the
    listing, every reachable file exists and is whole; the parts published after the
    history are a prefix of an allowed order (all of one if ``complete``), none twice; the
    model, applying exactly those parts, reads the same live files in every snapshot.
    Returns the audit and the model.
    """
    a = audit(inner, root)
    assert a.ok, f"{where}: table damaged: {a.problems}"
    base = scn.history_snapshots()
    assert a.snapshot_ids[:base] == list(range(1, base + 1)), f"{where}: history snapshots {a.snapshot_ids}"
    parts = published_parts(a, base)
    assert len(set(parts)) == len(parts), f"{where}: a part was published twice: {parts}"
    fits = [o for o in scn.orders if o[:len(parts)] == parts]
    assert fits, f"{where}: published parts {parts} are no prefix of an allowed order {scn.orders}"
    if complete:
        assert any(o == parts for o in scn.orders), f"{where}: incomplete after recovery: {parts}"
    model = Model(primary_key=True)
    model.snapshots = list(scn.history_model().snapshots)
    for part in parts:
        scn.spec_of(part).apply_part(model, part[2])
    assert [s.id for s in model.snapshots] == a.snapshot_ids, (
        f"{where}: snapshot ids {a.snapshot_ids} vs model {[s.id for s in model.snapshots]}")
    for s in model.snapshots:
        got = model_facts(a.views[s.id].live)
        assert got == dict(s.live), (
            f"{where}: snapshot {s.id} reads {sorted(k[3] for k in got)}, "
            f"the model reads {sorted(k[3] for k in s.live)}")
        assert a.views[s.id].snapshot.total_record_count == s.total_record_count, (
            f"{where}: snapshot {s.id} totalRecordCount {a.views[s.id].snapshot.total_record_count} "
            f"vs model {s.total_record_count}")
    check_deletion_vectors(inner, root, a, scn, parts, where)
    return a, model


def reads(a: TableAudit) -> dict[int, dict]:
    return {sid: model_facts(v.live) for sid, v in a.views.items()}


WRITE_OP_KINDS = {"pipe_file", "open_write", "copy", "mv.copy", "link_if_absent", "touch"}


def written_paths(ops) -> set[str]:
    return {str(o.path).rstrip("/") for o in ops if o.kind in WRITE_OP_KINDS}


def open_table(inner, root: str, schema: TableSchema, file_io: FileIO | None = None):
    """The table layer's view of the table (a restarted process)."""
    from impl.table.table import FileStoreTable

    return FileStoreTable(file_io or FileIO(inner), table_path(root), schema)


FAR_FUTURE_MILLIS = 2**62  # "older than" everything: remove every orphan, whatever its age


def check_orphans_and_remove(inner, root: str, scn: Scenario, where: str, run_ops,
                             before: TableAudit | None = None) -> list[str]:
    """Orphans are only files the faulty run wrote, the finder misses none of the run's
    leftovers, the table layer's ``remove_orphan_files`` removes exactly what the harness
    finder finds (and nothing younger than its ``older_than``), and removing changes no read."""
    tp = table_path(root)
    fio = checker_file_io(inner, tp)
    if before is None:
        before = audit(inner, root)
    found = find_orphans(fio, tp, audit=before)
    orphans = [s.path for s in found]
    mine = written_paths(run_ops)
    foreign = [p for p in orphans if p not in mine]
    assert not foreign, f"{where}: orphan finder flags files the crashed run never wrote: {foreign}"
    referenced = before.referenced_paths()
    assert not [p for p in orphans if p in referenced], f"{where}: an orphan is referenced"
    # every file the run wrote that survives is either referenced, table metadata or an orphan
    present = {s.path.rstrip("/") for s in fio.walk_files(tp)}
    unaccounted = [p for p in mine & present
                   if p not in referenced and p not in orphans and not is_table_metadata(tp, p)]
    assert not unaccounted, f"{where}: leftovers the orphan finder missed: {unaccounted}"
    table = open_table(inner, root, scn.schema, fio)
    times = [s.modified_millis for s in found if s.modified_millis is not None]
    if times:
        # the grace period: with older_than at the oldest orphan's time, none is strictly older
        kept = table.remove_orphan_files(older_than_millis=min(times))
        assert kept == [], f"{where}: remove_orphan_files removed files not older than older_than: {kept}"
    removed = table.remove_orphan_files(older_than_millis=FAR_FUTURE_MILLIS)
    assert sorted(p.rstrip("/") for p in removed) == sorted(orphans), (
        f"{where}: table.remove_orphan_files removed {sorted(removed)}, the harness finds {orphans}")
    if removed:
        after = audit(inner, root)
        assert after.ok, f"{where}: removing orphans {removed} damaged the table: {after.problems}"
        assert reads(after) == reads(before), f"{where}: removing orphans {removed} changed a read"
        assert find_orphans(fio, tp, audit=after) == [], f"{where}: orphans left after removal"
    return removed


def recover_and_check(inner, root: str, scn: Scenario, where: str, *, sync_on_write: bool = False,
                      expect_no_orphans: bool = True) -> TableAudit:
    """Re-run every commit of the scenario through filter_committed (same users and
    identifiers): each completes exactly once, the table equals the model's after-state,
    and (``expect_no_orphans``, when earlier leftovers were already removed) the
    successful recovery leaves no orphan."""
    scn.recover(checker_file_io(inner, table_path(root), sync_on_write=sync_on_write), root)
    a, _ = check_table(inner, root, scn, where + " [after recovery]", complete=True)
    fio = checker_file_io(inner, table_path(root))
    if expect_no_orphans:
        left = find_orphans(fio, table_path(root), audit=a)
        assert left == [], f"{where}: recovery left orphans: {[s.path for s in left]}"
    # recovering again is a no-op: filter_committed finds everything published
    for spec in scn.commits:
        left = new_committer(fio, root, scn.schema, spec.user).filter_committed([spec.committable()])
        assert left == [], f"{where}: after recovery filter_committed still returns {left}"
    return a


def full_check(outcome, scn: Scenario, *, sync_on_write: bool = False) -> dict:
    """All post-crash checks of one crash point; returns facts for the summary."""
    where = f"{scn.name} {outcome.describe()}"
    assert not outcome.diverged, f"{where}: the faulty run diverged from the recording run"
    if outcome.crashed or outcome.fs.crashed:
        assert outcome.crashed, f"{where}: the crash was swallowed: {outcome.error!r}"
    else:
        assert outcome.error is None, f"{where}: the scenario failed: {outcome.error!r}"
    a, _ = check_table(outcome.inner_fs, outcome.root, scn, where)
    parts = published_parts(a, scn.history_snapshots())
    if not outcome.crashed:
        assert all(p in parts for p in scn.own_parts), f"{where}: returned but published only {parts}"
    removed = check_orphans_and_remove(outcome.inner_fs, outcome.root, scn, where, outcome.ops, before=a)
    recover_and_check(outcome.inner_fs, outcome.root, scn, where, sync_on_write=sync_on_write)
    return {"published": len(parts), "orphans": len(removed)}


# =============================================================================== summary

SUMMARY_DIR = os.environ.get("PAIMON_FAULT_SUMMARY_DIR", "/tmp/paimon-fault-summary")


def record_summary(test: str, scenario: str, mode: str, crash_points: int, **extra: Any) -> None:
    """Append one line to the crash-point summary (aggregated by tests/fault/conftest.py)."""
    os.makedirs(SUMMARY_DIR, exist_ok=True)
    line = json.dumps({"test": test, "scenario": scenario, "mode": mode, "crash_points": crash_points, **extra})
    with open(os.path.join(SUMMARY_DIR, f"{os.getpid()}.jsonl"), "a") as fh:
        fh.write(line + "\n")

"""Stateful test of row tracking's commit rules: impl's commit core against ``model.row_ids``.

One machine is one ``row-tracking.enabled`` append table in fsspec's memory file system with
three committers (``FileStoreCommit``, each with its own cached view). Rules: a committer
appends files; a committer loses the race for its snapshot id to another one (which publishes
right before its create, so its first try was built on a stale latest and must re-assign on the
retry); a file is deleted; an overwrite replaces everything; a column-update file (first row id
and write columns set by its writer, as pypaimon's ``update_by_row_id`` writes it) lands on a live
file's range; a column update read at one snapshot meets another update, an overwrite or an
append before it commits, and is refused exactly when ``model.row_ids.column_update_conflict`` says.

After every step every published snapshot is replayed through the model: its delta must hold
exactly the first row ids and sequence numbers ``model.row_ids.assign`` gives from the previous
snapshot's ``nextRowId``, its ``nextRowId`` must be the model's, and the whole history must pass
``model.row_ids.row_id_problems`` (ids never reused, live ranges never overlapping, nextRowId
monotone and above every live range).
"""

from __future__ import annotations

import itertools
import threading
import uuid

import fsspec
from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test

from impl.commit.file_store_commit import FileStoreCommit
from impl.commit.messages import CommitMessage
from impl.data.binary_row import encode_row
from impl.data.types import BIGINT, STRING, DataField
from impl.datafile.meta import DataFileMeta, FileSource
from impl.errors import RowIdConflictError
from impl.fs.file_io import FileIO
from impl.fs.paths import TablePaths
from impl.manifest.entries import merge_entries
from impl.manifest.manifest_file import ManifestFile, ManifestList
from impl.manifest.records import FileKind
from impl.schema.records import TableSchema
from impl.snapshot.manager import SnapshotManager
from impl.snapshot.records import CommitKind
from model.row_ids import PublishedRows, RowFile, assign, column_update_conflict, row_id_problems

SCHEMA = TableSchema(0, (DataField(0, "id", BIGINT()), DataField(1, "v", STRING())),
                     options={"row-tracking.enabled": "true", "data-evolution.enabled": "true"})
EMPTY = encode_row([], [])
committers = st.integers(0, 2)
row_counts = st.lists(st.integers(1, 40), min_size=1, max_size=3)


class _RacingFileIO(FileIO):
    """Runs ``before_publish`` (once, then cleared) right before the next snapshot create."""

    def __init__(self, fs):
        super().__init__(fs)
        self.before_publish = None

    def try_write_atomic(self, path: str, data: bytes) -> bool:
        hook, self.before_publish = self.before_publish, None
        if hook is not None:
            hook()
        return super().try_write_atomic(path, data)


def _row_file_of(f: DataFileMeta, added: bool) -> RowFile:
    return RowFile(f.file_name, f.row_count, f.file_source.name if f.file_source is not None else "APPEND",
                   f.first_row_id, f.min_sequence_number, f.max_sequence_number, f.write_cols, added=added)


def _row_file(e) -> RowFile:
    return _row_file_of(e.file, e.kind is FileKind.ADD)


class RowIdMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.fs = fsspec.filesystem("memory")
        self.root = f"/rowids-{uuid.uuid4().hex}/db.db/t"
        self.fios = [_RacingFileIO(self.fs) for _ in range(3)]
        self.commits = [FileStoreCommit(fio, self.root, SCHEMA, commit_user=f"w{i}", sleep=lambda s: None)
                        for i, fio in enumerate(self.fios)]
        self.names = itertools.count()
        self.submitted: dict[str, RowFile] = {}  # every file as its writer handed it to the commit
        self.identifiers = itertools.count(1)
        self.paths = TablePaths(self.root)

    def teardown(self):
        try:
            self.fs.rm(self.root.rsplit("/db.db", 1)[0], recursive=True)
        except FileNotFoundError:
            pass

    # ------------------------------------------------------------------ storage

    def _snapshots(self):
        sm = SnapshotManager(FileIO(self.fs), self.paths)
        return [sm.snapshot(i) for i in sm.snapshot_ids()]

    def _entries(self, list_name):
        fio = FileIO(self.fs)
        return ManifestFile(fio, self.paths, []).read_all(ManifestList(fio, self.paths).read(list_name))

    def _live(self):
        snaps = self._snapshots()
        if not snaps:
            return []
        s = snaps[-1]
        return [e for e in merge_entries([*self._entries(s.base_manifest_list),
                                          *self._entries(s.delta_manifest_list)]).values()]

    def _new_files(self, counts, **kw) -> list[DataFileMeta]:
        return [self._submit(DataFileMeta(f"data-{next(self.names)}.parquet", 100, n, file_source=FileSource.APPEND,
                                          **kw)) for n in counts]

    def _submit(self, f: DataFileMeta) -> DataFileMeta:
        self.submitted[f.file_name] = _row_file_of(f, added=True)
        return f

    def _compact_group(self, c, first_row_id) -> bool:
        """Merge the row-id group at ``first_row_id`` (a file and its column updates) into one file
        of every column, as the table layer's data-evolution compaction does; False if it is alone."""
        group = [e.file for e in self._live() if e.file.first_row_id == first_row_id]
        if len(group) < 2:
            return False
        out = self._submit(DataFileMeta(
            f"data-{next(self.names)}.parquet", 100, group[0].row_count, file_source=FileSource.APPEND,
            first_row_id=first_row_id, min_sequence_number=min(f.min_sequence_number for f in group),
            max_sequence_number=max(f.max_sequence_number for f in group)))
        self.commits[c].commit([CommitMessage(EMPTY, 0, -1, compact_before=tuple(group), compact_after=(out,))],
                               next(self.identifiers))
        return True

    # ------------------------------------------------------------------ rules

    @rule(c=committers, counts=row_counts)
    def append(self, c, counts):
        self.commits[c].commit([CommitMessage(EMPTY, 0, -1, new_files=tuple(self._new_files(counts)))],
                               next(self.identifiers))

    @rule(c=committers, other=committers, counts=row_counts, theirs=row_counts)
    def lose_a_race(self, c, other, counts, theirs):
        """``other`` publishes right before ``c``'s create: ``c``'s first try assigned ids from a
        stale latest and must assign again from the winner's nextRowId."""
        if c == other:
            other = (c + 1) % 3
        winner_files = self._new_files(theirs)
        ident = next(self.identifiers)

        def win():
            self.commits[other].commit([CommitMessage(EMPTY, 0, -1, new_files=tuple(winner_files))], ident)
        self.fios[c].before_publish = win
        stats = self.commits[c].commit([CommitMessage(EMPTY, 0, -1, new_files=tuple(self._new_files(counts)))],
                                       next(self.identifiers))
        assert stats.lost_races == 1

    @precondition(lambda self: self._snapshots())
    @rule(c=committers, data=st.data())
    def delete_a_file(self, c, data):
        live = self._live()
        if not live:
            return
        e = data.draw(st.sampled_from(sorted(live, key=lambda e: e.file.file_name)))
        # a file goes with the column updates of its range (they cover rows of that file only)
        gone = tuple(x.file for x in live if x.file.first_row_id is not None
                     and x.file.first_row_id == e.file.first_row_id) or (e.file,)
        self.commits[c].commit([CommitMessage(EMPTY, 0, -1, deleted_files=gone)], next(self.identifiers))

    @rule(c=committers, counts=row_counts)
    def overwrite(self, c, counts):
        self.commits[c].overwrite(None, [CommitMessage(EMPTY, 0, -1, new_files=tuple(self._new_files(counts)))],
                                  next(self.identifiers))

    @precondition(lambda self: self._snapshots())
    @rule(c=committers, data=st.data())
    def update_columns(self, c, data):
        """A column update keeps the first row id its writer gave it (the range it rewrites)."""
        bases = [e.file for e in self._live() if e.file.write_cols is None and e.file.first_row_id is not None]
        if not bases:
            return
        base = data.draw(st.sampled_from(sorted(bases, key=lambda f: f.file_name)))
        update = self._new_files([base.row_count], first_row_id=base.first_row_id, write_cols=("v",))
        self.commits[c].commit([CommitMessage(EMPTY, 0, -1, new_files=tuple(update))], next(self.identifiers))

    @precondition(lambda self: self._snapshots())
    @rule(c=committers, other=committers, data=st.data(), interloper=st.sampled_from(["update-same", "update", "overwrite", "append", "compact"]))
    def stale_column_update(self, c, other, data, interloper):
        """A column update read at snapshot S; before it commits, ``other`` commits an update of
        a random live range, an overwrite or an append. impl refuses it with RowIdConflictError
        exactly when ``model.row_ids.column_update_conflict`` does, publishing nothing."""
        bases = sorted((e.file for e in self._live() if e.file.write_cols is None and e.file.first_row_id is not None),
                       key=lambda f: f.file_name)
        if not bases:
            return
        read_at = self._snapshots()[-1]
        base = data.draw(st.sampled_from(bases))
        mine = self._new_files([base.row_count], first_row_id=base.first_row_id, write_cols=("v",))
        if interloper.startswith("update"):
            theirs = base if interloper == "update-same" else data.draw(st.sampled_from(bases))
            self.commits[other].commit([CommitMessage(EMPTY, 0, -1, new_files=tuple(self._new_files(
                [theirs.row_count], first_row_id=theirs.first_row_id, write_cols=("v",))),
                row_id_check_from=read_at.id)], next(self.identifiers))
        elif interloper == "overwrite":
            self.overwrite(other, [1])
        elif interloper == "compact":
            if not self._compact_group(other, base.first_row_id):
                self.append(other, [2])
        else:
            self.append(other, [2])
        # what later snapshots added; a compaction rewrites values, never changes them
        later = [_row_file(e) for s in self._snapshots() if s.id > read_at.id and s.commit_kind is not CommitKind.COMPACT
                 for e in self._entries(s.delta_manifest_list) if e.kind is FileKind.ADD]
        live = [_row_file(e) for e in self._live()]
        expected = column_update_conflict((base.first_row_id, base.first_row_id + base.row_count - 1), live,
                                          read_at.next_row_id or 0, later)
        before = [s.id for s in self._snapshots()]
        try:
            self.commits[c].commit([CommitMessage(EMPTY, 0, -1, new_files=tuple(mine), row_id_check_from=read_at.id)],
                                   next(self.identifiers))
        except RowIdConflictError as e:
            assert expected is not None, f"impl refused an update the model accepts: {e}"
            assert [s.id for s in self._snapshots()] == before
            event(f"stale column update after {interloper}: refused")
            return
        assert expected is None, f"impl published an update the model refuses: {expected}"
        event(f"stale column update after {interloper}: published")

    @precondition(lambda self: self._snapshots())
    @rule(c=committers, data=st.data())
    def compact_a_group(self, c, data):
        """Data evolution's compaction: a file and its column updates become one file that keeps
        the group's ids (source APPEND with a first row id: the commit assigns nothing)."""
        firsts = sorted({e.file.first_row_id for e in self._live() if e.file.write_cols is not None})
        if firsts:
            self._compact_group(c, data.draw(st.sampled_from(firsts)))

    @precondition(lambda self: self._snapshots())
    @rule(c=committers)
    def compact_without_ids(self, c):
        """A compaction output (source COMPACT; Paimon keeps the ids in its _ROW_ID column) takes
        no ids, and the ids of what it replaced stay used. Only without column updates: the
        table layer refuses to compact data-evolution tables, whose updates name file ranges."""
        live = [e.file for e in self._live()]
        if not live or any(f.write_cols is not None for f in live):
            return
        out = self._submit(DataFileMeta(f"data-{next(self.names)}.parquet", 100, sum(f.row_count for f in live),
                                        file_source=FileSource.COMPACT, min_sequence_number=1, max_sequence_number=1))
        self.commits[c].commit([CommitMessage(EMPTY, 0, -1, compact_before=tuple(live), compact_after=(out,))],
                               next(self.identifiers))

    # ------------------------------------------------------------------ invariants

    @invariant()
    def history_matches_the_model(self):
        history = []
        previous_next: int | None = None
        live: dict[str, RowFile] = {}
        for s in self._snapshots():
            delta = [_row_file(e) for e in self._entries(s.delta_manifest_list)]
            # a DELETE names a live file as it is: replay only the ADDs, as their writers handed them over
            expected, expected_next = assign([self.submitted[f.name] for f in delta if f.added], s.id, previous_next)
            assert [f for f in delta if f.added] == expected, f"snapshot {s.id}: {delta} != {expected}"
            assert s.next_row_id == expected_next, f"snapshot {s.id}: nextRowId {s.next_row_id} != {expected_next}"
            for f in delta:
                if f.added:
                    live[f.name] = f
                else:
                    live.pop(f.name, None)
            history.append(PublishedRows(s.id, s.next_row_id, tuple(delta), tuple(live.values())))
            previous_next = s.next_row_id
        problems = row_id_problems(history)
        assert not problems, problems


def test_row_ids_match_the_model():
    profile = settings.get_profile("stateful-ci")
    run_state_machine_as_test(RowIdMachine, settings=settings(
        profile, max_examples=min(profile.max_examples, 30), stateful_step_count=12))


def test_racing_threads_never_share_row_ids(tmp_path):
    """Four committers in threads, five appends each, on one table on local disk: every id from
    0 to the total row count is handed out exactly once and the history passes the model."""
    fs = fsspec.filesystem("file")
    root = str(tmp_path / "db.db" / "t")
    counts = {(w, i): 1 + (7 * w + 3 * i) % 11 for w in range(4) for i in range(5)}

    def run(w):
        commit = FileStoreCommit(FileIO(fs), root, SCHEMA, commit_user=f"t{w}")
        for i in range(5):
            f = DataFileMeta(f"data-{w}-{i}.parquet", 100, counts[(w, i)], file_source=FileSource.APPEND)
            commit.commit([CommitMessage(EMPTY, 0, -1, new_files=(f,))], i + 1)

    threads = [threading.Thread(target=run, args=(w,)) for w in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    paths, fio = TablePaths(root), FileIO(fs)
    sm = SnapshotManager(fio, paths)
    history, live = [], {}
    for sid in sm.snapshot_ids():
        s = sm.snapshot(sid)
        delta = [_row_file(e) for e in ManifestFile(fio, paths, []).read_all(ManifestList(fio, paths).read(s.delta_manifest_list))]
        live.update((f.name, f) for f in delta)
        history.append(PublishedRows(s.id, s.next_row_id, tuple(delta), tuple(live.values())))
    assert row_id_problems(history) == []
    ranges = sorted(f.row_range for f in live.values())
    total = sum(counts.values())
    assert len(ranges) == 20 and ranges[0][0] == 0 and ranges[-1][1] == total - 1
    assert all(b[0] == a[1] + 1 for a, b in itertools.pairwise(ranges))
    assert history[-1].next_row_id == total

"""Stateful test: separate file-index files follow their data files, impl against the model.

One machine is one table in fsspec's memory file system with ``file-index.bloom-filter.columns``
= id and ``file-index.in-manifest-threshold`` = 1 byte, so every data file gets its index as a
separate ``<data-file>.index`` listed in its ``_EXTRA_FILES``. The table is drawn: an append
table (bucket -1, compacted by rewriting small files) or a primary-key table (bucket 1, merge
tree: a compaction both rewrites files and moves files to another level under the same name).

Steps: write (committed), write left uncommitted (its files are orphans), write aborted, compact, expire,
create / delete a tag, roll back, remove orphan files (inside or past the grace period). Every published
snapshot is fed to ``model.Model`` with the files' extra files (``FileFacts.extra_files``).

Invariants after every step: the files in the bucket directories are exactly the model's
``file_names_needed`` (each kept file and its ``.index``) plus the files of uncommitted writes
that orphan removal has not yet removed; every live file has its own ``.index``; an index file
never changes owner (``model.check_extra_file_owners``).
"""

from __future__ import annotations

import os
import posixpath
import uuid

import fsspec
import pyarrow as pa
from hypothesis import event, note, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

import impl
from impl.read.scan import SnapshotReader
from impl.snapshot.records import CommitKind
from impl.store.schema import mergetree
from model import ADD, DELETE, FileFacts, Model, check_extra_file_owners

PROFILE = settings.get_profile("stateful-" + os.environ.get("HYPOTHESIS_PROFILE", "ci"))
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.int64())])
TAG_NAMES = ["t0", "t1"]
LATER_MS = 10**9  # a "now" past every file's modification time: the grace period is over
OPTIONS = {
    "file-index.bloom-filter.columns": "id",
    "file-index.bloom-filter.id.items": "64",  # small blobs; still > 1 byte, so never embedded
    "file-index.in-manifest-threshold": "1",
    "compaction.min.file-num": "2",
}
keys_st = st.lists(st.integers(0, 9), min_size=1, max_size=5)


class FileIndexMachine(RuleBasedStateMachine):
    examples = 0
    steps = 0

    def __init__(self) -> None:
        super().__init__()
        type(self).examples += 1
        self.fs = fsspec.filesystem("memory")
        self.root = f"/file-index-{uuid.uuid4().hex}"
        self.unpublished: set[str] = set()  # names written by uncommitted writes, still on storage
        self.owners: dict[str, str] = {}  # extra file -> its data file, over the whole history
        self.counter = 0

    @initialize(pk=st.booleans())
    def create(self, pk):
        cat = impl.Catalog(self.root, filesystem=self.fs)
        cat.create_database("db")
        options = {**OPTIONS, "bucket": "1"} if pk else {**OPTIONS, "bucket": "-1"}
        self.table = cat.create_table("db.t", schema=SCHEMA, primary_keys=["id"] if pk else None, options=options)
        self.codec = mergetree().KeyCodec([self.table.schema.field("id").type]) if pk else None
        self.model = Model(primary_key=pk)
        note(f"{'primary-key' if pk else 'append'} table")

    def teardown(self) -> None:
        try:
            self.fs.rm(self.root, recursive=True)
        except FileNotFoundError:
            pass

    # ------------------------------------------------------------------ helpers

    def _facts(self, e) -> FileFacts:
        f = e.file
        lo = hi = None
        if self.codec is not None:
            lo, hi = self.codec.sort_key(f.min_key), self.codec.sort_key(f.max_key)
        return FileFacts(e.partition, e.bucket, e.total_buckets, f.level, f.file_name, lo, hi, f.row_count,
                         extra_files=f.extra_files)

    def _sync(self, user: str) -> None:
        """Feed every snapshot impl published since the model's latest to the model, as the
        same kind of commit, and check the new files' index files."""
        core = self.table.core
        latest = core.snapshot_manager.latest_snapshot_id() or 0
        first = (self.model.latest().id if self.model.latest() else 0) + 1
        reader = SnapshotReader(core)
        for sid in range(first, latest + 1):
            snap = core.snapshot_manager.snapshot(sid)
            entries = reader.read_entries(reader.manifest_list.read_delta_manifests(snap))
            added = [self._facts(e) for e in entries if e.kind.name == ADD]
            deleted = [self._facts(e) for e in entries if e.kind.name == DELETE]
            check_extra_file_owners(self.owners, added)
            self.counter += 1
            if snap.commit_kind is CommitKind.COMPACT:
                ids = self.model.commit(user, self.counter, compact_before=deleted, compact_after=added)
                upgraded = {f.file_name for f in added} & {f.file_name for f in deleted}
                event(f"compaction: {'moved a file to another level' if upgraded else 'rewrote files only'}")
            else:
                ids = self.model.commit(user, self.counter, new_files=added, deleted_files=deleted)
            assert ids == [sid], f"impl published snapshot {sid} ({snap.commit_kind}), the model {ids}"

    def _write(self, keys: list[int]):
        builder = self.table.new_batch_write_builder()
        w = builder.new_write()
        values = list(range(self.counter * 10, self.counter * 10 + len(keys)))
        self.counter += 1
        try:
            w.write_arrow(pa.table({"id": pa.array(keys, pa.int64()), "v": pa.array(values, pa.int64())},
                                   schema=SCHEMA))
            messages = w.prepare_commit()
        finally:
            w.close()
        return builder, messages

    # ------------------------------------------------------------------ rules

    @rule(batches=st.lists(keys_st, min_size=1, max_size=3))
    def write(self, batches):
        """Commit each batch (several, so that compactions find files to merge)."""
        type(self).steps += 1
        for keys in batches:
            builder, messages = self._write(keys)
            commit = builder.new_commit()
            try:
                commit.commit(messages)
            finally:
                commit.close()
            self._sync(builder.commit_user)
            note(f"write {keys}")

    @rule(keys=keys_st)
    def write_uncommitted(self, keys):
        """A writer that prepared its commit and died: its files (data and index) are orphans."""
        type(self).steps += 1
        _, messages = self._write(keys)
        # a primary-key writer may also have compacted on the way (compact_after, unpublished too)
        names = {n for m in messages for f in (*m.new_files, *m.compact_after, *m.changelog_files, *m.compact_changelog)
                 for n in (f.file_name, *f.extra_files)}
        assert any(n.endswith(".index") for n in names), f"an uncommitted write left no index file: {names}"
        self.unpublished |= names
        note(f"write {keys}, not committed: {sorted(names)}")

    @rule(keys=keys_st)
    def write_aborted(self, keys):
        """A commit given up (TableCommit.abort): the writer's files and their index files go."""
        type(self).steps += 1
        builder, messages = self._write(keys)
        commit = builder.new_commit()
        try:
            commit.abort(messages)
        finally:
            commit.close()
        note(f"write {keys}, aborted")

    @rule(full=st.booleans())
    def compact(self, full):
        type(self).steps += 1
        stats = self.table.compact(full=full)
        note(f"compact full={full} -> {stats.snapshot_ids if stats else 'nothing'}")
        self._sync(f"compact-{self.counter}")

    @rule(keep=st.integers(1, 3))
    def expire(self, keep):
        type(self).steps += 1
        result = self.table.expire_snapshots(retain_min=keep, retain_max=keep, time_retained_ms=0,
                                             max_deletes=1000, now_millis=LATER_MS * 10**4)
        removed = self.model.expire(keep, keep) if self.model.snapshots else []
        note(f"expire keep={keep} -> {list(result.expired_snapshot_ids)}, "
             f"deleted {sorted(posixpath.basename(p) for p in result.deleted_data_files)}")
        assert list(result.expired_snapshot_ids) == removed
        event("expired snapshots, deleted index files" if any(p.endswith(".index") for p in result.deleted_data_files)
              else "expired without deleting an index file")

    @precondition(lambda self: self.model.snapshots)
    @rule(name=st.sampled_from(TAG_NAMES), pick=st.integers(0, 10))
    def create_tag(self, name, pick):
        type(self).steps += 1
        if name in self.model.tags:
            return
        snap = self.model.snapshots[pick % len(self.model.snapshots)]
        self.table.create_tag(name, snap.id)
        self.model.create_tag(name, snap.id)
        note(f"tag {name} -> snapshot {snap.id}")

    @precondition(lambda self: self.model.tags)
    @rule(pick=st.integers(0, 10))
    def delete_tag(self, pick):
        type(self).steps += 1
        name = sorted(self.model.tags)[pick % len(self.model.tags)]
        expired = self.model.tags[name].id not in {s.id for s in self.model.snapshots}
        deleted = self.table.delete_tag(name)
        self.model.delete_tag(name)
        note(f"delete tag {name} -> {sorted(posixpath.basename(p) for p in deleted)}")
        event(f"delete tag of {'an expired' if expired else 'a retained'} snapshot")

    @precondition(lambda self: self.model.snapshots)
    @rule(pick=st.integers(0, 10), by_tag=st.booleans())
    def rollback(self, pick, by_tag):
        """Roll back to a retained snapshot, or to a tag (whose snapshot may have expired):
        the files only newer snapshots held go, with their index files."""
        type(self).steps += 1
        if by_tag and self.model.tags:
            target: int | str = sorted(self.model.tags)[pick % len(self.model.tags)]
            sid = self.model.tags[target].id
        else:
            target = sid = self.model.snapshots[pick % len(self.model.snapshots)].id
        deleted = self.table.rollback_to(target)
        self.model.rollback_to(sid)
        note(f"rollback to {target!r} -> deleted {sorted(posixpath.basename(p) for p in deleted)}")
        event(f"rollback to a {'tag' if isinstance(target, str) else 'snapshot'}"
              f"{', deleted index files' if any(p.endswith('.index') for p in deleted) else ''}")

    @rule(past_grace=st.booleans())
    def remove_orphan_files(self, past_grace):
        type(self).steps += 1
        older_than = self.table.core.now_millis() + LATER_MS if past_grace else 0
        removed = {posixpath.basename(p) for p in self.table.remove_orphan_files(older_than_millis=older_than)}
        data_removed = {n for n in removed if not n.startswith("manifest")}
        note(f"remove orphans past_grace={past_grace} -> {sorted(data_removed)}")
        assert data_removed == (self.unpublished if past_grace else set()), \
            f"orphan removal took {sorted(data_removed)}, the uncommitted writes left {sorted(self.unpublished)}"
        if past_grace:
            event("orphan removal deleted index files" if any(n.endswith(".index") for n in data_removed)
                  else "orphan removal deleted nothing")
            self.unpublished = set()

    # ------------------------------------------------------------------ invariants

    @invariant()
    def storage_holds_the_kept_files_and_their_index_files(self):
        if not hasattr(self, "model"):
            return
        stored = {posixpath.basename(p) for p in self.fs.find(self.root)
                  if posixpath.basename(posixpath.dirname(p)).startswith("bucket-")}
        needed = self.model.file_names_needed()
        expected = needed | self.unpublished
        index_missing = sorted(n for n in expected - stored if n.endswith(".index"))
        index_left = sorted(n for n in stored - expected if n.endswith(".index"))
        assert not index_missing, f"index files of kept data files are missing: {index_missing}"
        assert not index_left, f"index files no kept data file owns are still on storage: {index_left}"
        assert stored == expected, f"only on storage {sorted(stored - expected)}, missing {sorted(expected - stored)}"

    @invariant()
    def every_live_file_has_its_own_index_file(self):
        if not hasattr(self, "model"):
            return
        for f in self.model.live().values():
            assert f.extra_files == (f.file_name + ".index",), f"{f.file_name}: extra files {f.extra_files}"


def test_index_files_follow_their_data_files(request):
    FileIndexMachine.examples = FileIndexMachine.steps = 0
    try:
        run_state_machine_as_test(FileIndexMachine, settings=settings(
            PROFILE, max_examples=max(1, PROFILE.max_examples // 4), stateful_step_count=min(PROFILE.stateful_step_count, 25)))
    finally:
        request.node.user_properties.append(("hypothesis_examples", FileIndexMachine.examples))
        request.node.user_properties.append(("hypothesis_steps", FileIndexMachine.steps))
    assert FileIndexMachine.examples > 0

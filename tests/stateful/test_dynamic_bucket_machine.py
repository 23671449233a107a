"""Stateful test of dynamic bucket mode: the model's index rules and impl's table, step by step.

One machine is one dynamic-bucket primary-key table (``bucket`` -1, ``dynamic-bucket.target-row-num``
3, partitions ``a`` / ``b``) in fsspec's memory file system, with up to three writers open at
once. A writer sees the index of the latest snapshot when it first assigns (its *view*, stale
once others commit; each partition read when the writer first writes to it), so concurrent
writers race on the same buckets.

Each step runs through impl and through ``model``:

- write: the model assigns the writer's keys from its view with ``model.assign_buckets``;
- commit: the writer's new HASH index files must hold exactly the model's key hashes of each
  changed bucket and DELETE the view's file of that bucket; the model publishes the same index
  changes (rules 5 and 6) and impl must reach the same outcome (published, or
  IndexFileConflictError and nothing published);
- overwrite of a partition (its index rebuilt from nothing), full compaction, expiration.

Invariants after every step: impl's live index files equal the model's (names and hashes); one
HASH file per bucket and no key hash in two buckets; the rows equal the model's; every live key
is in exactly one bucket, whose index holds its hash; every index file any retained snapshot
lists exists and decodes.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

import fsspec
import pyarrow as pa
from hypothesis import event, note, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test

import impl
import impl.errors as impl_errors
from impl.bucket.routing import row_hashes
from impl.data.types import DataType
from impl.manifest.records import IndexFileMeta
from impl.write.dynamic_bucket import HashIndexFile, hash_index_entries
from impl.write.table_write import TableWrite
from model import (
    HASH,
    IndexFacts,
    IndexFileConflictError,
    Model,
    assign_buckets,
    check_index_invariant,
    index_identity,
)

TARGET = 3
PARTITIONS = ["a", "b"]
SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("id", pa.int64(), nullable=False),
                    pa.field("v", pa.int64())])
ids = st.lists(st.integers(0, 9), min_size=1, max_size=6)
writer_ids = st.integers(0, 2)
# Each writer (and the overwrite) owns its keys: concurrent writers of one key would race on
# sequence numbers, a separate matter from the index (the main commit machine covers files).
KEY_SPACE = 20
OVERWRITE_KEYS = 3 * KEY_SPACE


def key_hashes(keys: list[int]) -> list[int]:
    return row_hashes([pa.array(keys, pa.int64())], [DataType("BIGINT", False)]).tolist()


@dataclass
class Writer:
    builder: object
    write: TableWrite
    views: dict[bytes, dict] = field(default_factory=dict)  # partition -> model's live index at first write
    owners: dict[bytes, dict[int, int]] = field(default_factory=dict)  # partition -> hash -> bucket
    rows: dict[tuple[str, int], int] = field(default_factory=dict)


class DynamicBucketMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.fs = fsspec.filesystem("memory")
        self.root = f"/dynbucket-{uuid.uuid4().hex}"
        cat = impl.Catalog(self.root, filesystem=self.fs)
        cat.create_database("db")
        self.table = cat.create_table(
            "db.t", schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
            options={"dynamic-bucket.target-row-num": str(TARGET), "write-only": "true"})
        self.part = {p: _encode_partition(self.table, p) for p in PARTITIONS}
        self.model = Model(primary_key=True)
        self.rows: dict[tuple[str, int], int] = {}
        self.writers: dict[int, Writer] = {}
        self.files = HashIndexFile(self.table.file_io, self.table.core.paths)
        self.counter = 0

    def teardown(self) -> None:
        for w in self.writers.values():
            w.write.close()
        try:
            self.fs.rm(self.root, recursive=True)
        except FileNotFoundError:
            pass

    # ------------------------------------------------------------------ helpers

    def _value(self) -> int:
        self.counter += 1
        return self.counter

    def _facts(self, partition: bytes, bucket: int, meta: IndexFileMeta) -> IndexFacts:
        return IndexFacts(partition, bucket, meta.index_type, meta.file_name, frozenset(self.files.read(meta).tolist()))

    def _assign(self, w: Writer, p: str, keys: list[int]) -> None:
        """The model's side of a write: buckets from the writer's view."""
        part = self.part[p]
        owner = w.owners.get(part)
        if owner is None:
            # impl reads a partition's index from the latest snapshot when first writing to it
            view = w.views[part] = {k: f for k, f in self.model.live_index().items()
                                    if f.partition == part and f.index_type == HASH}
            owner = w.owners[part] = {h: f.bucket for f in view.values() for h in f.hashes}
        assign_buckets(owner, key_hashes(keys), TARGET)

    def _expected_index(self, w: Writer) -> dict[tuple[bytes, int], frozenset[int]]:
        """Per bucket the writer changed, the key hashes its new index file must hold."""
        out = {}
        for part, owner in w.owners.items():
            before = {(f.bucket, h) for f in w.views[part].values() for h in f.hashes}
            changed = {b for h, b in owner.items() if (b, h) not in before}
            for b in changed:
                out[(part, b)] = frozenset(h for h, bb in owner.items() if bb == b)
        return out

    # ------------------------------------------------------------------ rules

    @rule(w=writer_ids, p=st.sampled_from(PARTITIONS), keys=ids)
    def write(self, w, p, keys):
        keys = [w * KEY_SPACE + k for k in keys]
        writer = self.writers.get(w)
        if writer is None:
            builder = self.table.new_batch_write_builder()
            writer = self.writers[w] = Writer(builder, builder.new_write())
        values = [self._value() for _ in keys]
        writer.write.write_arrow(pa.table({"dt": [p] * len(keys), "id": pa.array(keys, pa.int64()),
                                           "v": pa.array(values, pa.int64())}, schema=SCHEMA))
        self._assign(writer, p, keys)
        for k, v in zip(keys, values, strict=True):
            writer.rows[(p, k)] = v
        note(f"w{w} writes {p} {keys}")

    @precondition(lambda self: bool(self.writers))
    @rule(pick=st.integers(0, 2))
    def commit(self, pick):
        w = sorted(self.writers)[pick % len(self.writers)]
        writer = self.writers.pop(w)
        try:
            messages = writer.write.prepare_commit()
        finally:
            writer.write.close()
        new = [self._facts(m.partition, m.bucket, f) for m in messages for f in m.new_index_files]
        # impl's assigner agreed with the model's: the same buckets hold the same keys
        assert {(f.partition, f.bucket): f.hashes for f in new} == self._expected_index(writer)
        view = {k: f for v in writer.views.values() for k, f in v.items()}
        # the files it replaces are the view's (maybe expired since: taken from the view, not storage)
        by_name = {f.file_name: f for f in view.values()}
        deleted = [by_name[f.file_name] for m in messages for f in m.deleted_index_files]
        assert {index_identity(f) for f in deleted} == {
            k for k, f in view.items() if f.index_type == HASH and (f.partition, f.bucket) in
            {(n.partition, n.bucket) for n in new}}
        views = {part: frozenset(f.file_name for f in v.values()) for part, v in writer.views.items()}
        assert {m.partition: m.hash_index_view for m in messages} == views
        user = writer.builder.commit_user  # type: ignore[attr-defined]
        model_error = impl_error = None
        try:
            self.model.commit(user, 1, new_index_files=new, deleted_index_files=deleted, index_views=views)
        except IndexFileConflictError as e:
            model_error = type(e).__name__
        latest = self.table.latest_snapshot()
        commit = writer.builder.new_commit()  # type: ignore[attr-defined]
        try:
            commit.commit(messages)
        except impl_errors.CommitConflictError as e:
            impl_error = type(e).__name__
            assert self.table.latest_snapshot() == latest  # the loser publishes nothing
        finally:
            commit.close()
        note(f"w{w} commits {len(new)} index files -> {impl_error or 'ok'}")
        event(f"commit -> {impl_error or 'published'}")
        assert impl_error == model_error
        if impl_error is None:
            self.rows.update(writer.rows)

    @rule(p=st.sampled_from(PARTITIONS), keys=ids)
    def overwrite(self, p, keys):
        keys = [OVERWRITE_KEYS + k for k in keys]
        builder = self.table.new_batch_write_builder().overwrite({"dt": p})
        w = builder.new_write()
        values = [self._value() for _ in keys]
        try:
            w.write_arrow(pa.table({"dt": [p] * len(keys), "id": pa.array(keys, pa.int64()),
                                    "v": pa.array(values, pa.int64())}, schema=SCHEMA))
            messages = w.prepare_commit()
        finally:
            w.close()
        new = [self._facts(m.partition, m.bucket, f) for m in messages for f in m.new_index_files]
        owner: dict[int, int] = {}
        assign_buckets(owner, key_hashes(keys), TARGET)  # an overwrite assigns from nothing
        want = {}
        for h, b in owner.items():
            want.setdefault((self.part[p], b), set()).add(h)
        assert {(f.partition, f.bucket): set(f.hashes) for f in new} == want
        assert not [f for m in messages for f in m.deleted_index_files]
        commit = builder.new_commit()
        try:
            commit.commit(messages)
        finally:
            commit.close()
        self.model.overwrite(builder.commit_user, 1, partitions={self.part[p]}, new_index_files=new)
        self.rows = {k: v for k, v in self.rows.items() if k[0] != p}
        self.rows.update({(p, k): v for k, v in zip(keys, values, strict=True)})
        note(f"overwrite {p} {keys}")

    @rule()
    def compact(self):
        self.table.compact(full=True)  # data files only: the index stays (the invariants check it)

    @rule(keep=st.integers(1, 3))
    def expire(self, keep):
        self.table.expire_snapshots(retain_min=keep, retain_max=keep, time_retained_ms=0)

    # ------------------------------------------------------------------ invariants

    def _impl_index(self, snapshot=None) -> dict:
        snap = snapshot or self.table.latest_snapshot()
        return {index_identity(f): f for f in (self._facts(e.partition, e.bucket, e.index_file)
                                               for e in hash_index_entries(self.table.core, snap))}

    @invariant()
    def index_matches_model(self):
        impl_index = self._impl_index()
        assert impl_index == dict(self.model.live_index())
        check_index_invariant(impl_index)

    @invariant()
    def rows_match_model_and_keys_sit_in_one_indexed_bucket(self):
        rb = self.table.new_read_builder()
        got = {}
        index = {(f.partition, f.bucket): f.hashes for f in self._impl_index().values()}
        for split in rb.new_scan().plan().splits():
            t = rb.new_read().to_arrow([split])
            keys = t.column("id").to_pylist()
            for h in key_hashes(keys) if keys else []:
                assert h in index[(split.partition, split.bucket)]
            for dt, k, v in zip(t.column("dt").to_pylist(), keys, t.column("v").to_pylist(), strict=True):
                assert (dt, k) not in got, f"key {(dt, k)} in two buckets"
                got[(dt, k)] = v
        assert got == self.rows

    @invariant()
    def retained_snapshots_index_files_are_readable(self):
        for snap in self.table.snapshots():
            for e in hash_index_entries(self.table.core, snap):
                self.files.read(e.index_file)  # exists, whole int32s, row count as listed


def _encode_partition(table, p: str) -> bytes:
    from impl.bucket.routing import encode_partition
    return encode_partition((p,), [table.schema.field("dt").type])


def test_dynamic_bucket_table_matches_model():
    profile = settings.get_profile("stateful-ci")
    run_state_machine_as_test(DynamicBucketMachine, settings=settings(
        profile, max_examples=min(profile.max_examples, 40), stateful_step_count=20))

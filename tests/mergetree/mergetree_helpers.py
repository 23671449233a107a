"""Helpers of the merge-tree tests: schemas, executors, message folding, reference models."""

from __future__ import annotations

from concurrent.futures import Executor
from typing import Mapping, Sequence

import pyarrow as pa

from impl.commit.messages import CommitMessage
from impl.data.binary_row import EMPTY_ROW
from impl.data.types import BIGINT, BOOLEAN, DOUBLE, INT, STRING, DataField
from impl.datafile.meta import DataFileMeta
from impl.fs.file_io import FileIO
from impl.fs.paths import TablePaths
from impl.mergetree import MergeTreeOptions, MergeTreeWriter, merge_read
from impl.mergetree.writer import InlineExecutor
from impl.schema.records import TableSchema


def make_schema(options: Mapping[str, str] | None = None, *, partitioned: bool = False) -> TableSchema:
    """id BIGINT pk, k STRING, v DOUBLE, ts BIGINT (+ dt STRING partition when ``partitioned``)."""
    fields = [DataField(1, "id", BIGINT(False)), DataField(2, "k", STRING()), DataField(3, "v", DOUBLE()),
              DataField(4, "ts", BIGINT())]
    if partitioned:
        fields.insert(0, DataField(0, "dt", STRING(False)))
        return TableSchema(0, tuple(fields), partition_keys=("dt",), primary_keys=("dt", "id"),
                           options=dict(options or {}))
    return TableSchema(0, tuple(fields), primary_keys=("id",), options=dict(options or {}))


def agg_schema(options: Mapping[str, str] | None = None) -> TableSchema:
    """id pk + one column per aggregate function family."""
    fields = [DataField(0, "id", BIGINT(False)), DataField(1, "s", BIGINT()), DataField(2, "c", BIGINT()),
              DataField(3, "mn", INT()), DataField(4, "mx", DOUBLE()), DataField(5, "lv", STRING()),
              DataField(6, "lnn", STRING()), DataField(7, "fv", INT()), DataField(8, "fnn", INT()),
              DataField(9, "la", STRING()), DataField(10, "ba", BOOLEAN()), DataField(11, "bo", BOOLEAN())]
    return TableSchema(0, tuple(fields), primary_keys=("id",), options=dict(options or {}))


AGG_OPTIONS = {
    "merge-engine": "aggregation",
    "fields.s.aggregate-function": "sum",
    "fields.c.aggregate-function": "count",
    "fields.mn.aggregate-function": "min",
    "fields.mx.aggregate-function": "max",
    "fields.lv.aggregate-function": "last_value",
    "fields.lnn.aggregate-function": "last_non_null_value",
    "fields.fv.aggregate-function": "first_value",
    "fields.fnn.aggregate-function": "first_non_null_value",
    "fields.la.aggregate-function": "listagg",
    "fields.ba.aggregate-function": "bool_and",
    "fields.bo.aggregate-function": "bool_or",
}


class DirectExecutor(InlineExecutor):
    """impl's synchronous executor, counting what was submitted."""

    def __init__(self):
        self.submitted = 0

    def submit(self, fn, /, *args, **kwargs):
        self.submitted += 1
        return super().submit(fn, *args, **kwargs)


class Table:
    """One bucket of a test table on local disk, with the live file set folded from messages."""

    def __init__(self, root, schema: TableSchema, options: Mapping[str, str], *, executor: Executor | None = None,
                 partition: bytes = EMPTY_ROW, partition_path: str = ""):
        self.io = FileIO()
        self.paths = TablePaths(str(root))
        self.schema = schema
        self.options = MergeTreeOptions.from_options(options)
        self.executor = executor
        self.partition = partition
        self.partition_path = partition_path
        self.live: dict[tuple[int, str], DataFileMeta] = {}
        self.messages: list[CommitMessage] = []

    def writer(self, restored: Sequence[DataFileMeta] | None = None) -> MergeTreeWriter:
        files = list(self.live.values()) if restored is None else list(restored)
        return MergeTreeWriter(self.io, self.paths, self.schema, self.options, self.partition, self.partition_path,
                               0, 1, files, self.executor)

    def apply(self, msg: CommitMessage) -> None:
        """Fold a message into the live set the way a commit does: APPEND part, then COMPACT part."""
        self.messages.append(msg)
        for f in msg.new_files:
            key = (f.level, f.file_name)
            assert key not in self.live, f"{key} added twice"
            self.live[key] = f
        for f in msg.compact_before:
            key = (f.level, f.file_name)
            assert key in self.live, f"compact_before {key} is not live"
            del self.live[key]
        for f in msg.compact_after:
            key = (f.level, f.file_name)
            assert key not in self.live, f"{key} added twice"
            self.live[key] = f

    def read(self, projection=None, predicate=None) -> pa.Table:
        return merge_read(self.io, self.paths, self.schema, self.options, self.partition_path, 0,
                          list(self.live.values()), projection, predicate)

    def bucket_dir(self) -> str:
        return self.paths.bucket_dir(self.partition_path, 0)

    def files_on_disk(self) -> set[str]:
        import os
        d = self.bucket_dir()
        return set(os.listdir(d)) if os.path.isdir(d) else set()

    def files_in_messages(self) -> set[str]:
        names = set()
        for m in self.messages:
            for f in (*m.new_files, *m.changelog_files, *m.compact_after, *m.compact_changelog, *m.compact_before):
                names.add(f.file_name)
        return names


# ---------------------------------------------------------------------------- row-by-row reference models
# Rows are dicts of user columns plus '_kind' (0 +I, 1 -U, 2 +U, 3 -D), in sequence order.

UB, D = 1, 3


def _order_key(seq_field_desc):
    def key(pair):
        i, r = pair
        ts = r.get("ts")
        tsk = (ts is not None, (-ts if seq_field_desc else ts) if ts is not None else 0)
        return (r["id"], tsk, i)
    return key


def ref_dedup(rows, ignore_delete=False, seq_field=False):
    order = sorted(enumerate(rows), key=_order_key(False)) if seq_field else list(enumerate(rows))
    state = {}
    for _, r in order:
        if r["_kind"] in (UB, D):
            if not ignore_delete:
                state[r["id"]] = None
        else:
            state[r["id"]] = r
    return {k: v for k, v in state.items() if v is not None}


def ref_first_row(rows):
    state = {}
    for r in rows:
        if r["_kind"] not in (UB, D):
            state.setdefault(r["id"], r)
    return state


def ref_partial_update(rows, cols, groups=()):
    """groups: [(seq_field, [fields])]; other columns: last non-null of +I/+U rows. A key of one
    row is that row (a retraction: no row), and with groups a key of retractions alone has no row."""
    state: dict = {}
    grouped = {c for s, fs in groups for c in (s, *fs)}
    count: dict = {}
    inserted: set = set()
    for r in rows:
        count[r["id"]] = count.get(r["id"], 0) + 1
        if r["_kind"] not in (UB, D):
            inserted.add(r["id"])
    for r in sorted(rows, key=lambda r: r["id"]):  # stable: keeps sequence order per key
        if count[r["id"]] == 1:
            if r["_kind"] not in (UB, D):
                state[r["id"]] = {c: r[c] for c in cols} | {"id": r["id"]}
            continue
        if groups and r["id"] not in inserted:
            continue
        cur = state.setdefault(r["id"], {c: None for c in cols} | {"id": r["id"]})
        retract = r["_kind"] in (UB, D)
        if not retract:
            for c in cols:
                if c not in grouped and r[c] is not None:
                    cur[c] = r[c]
        for s, fs in groups:
            if r[s] is None:
                continue
            if cur[s] is None or r[s] >= cur[s]:
                cur[s] = r[s]
                for f in fs:
                    cur[f] = None if retract else r[f]
    return state


def ref_aggregate(rows, ignore_retract):
    def agg(fn, acc, v, retract, first):
        if fn == "sum":
            if retract:
                return (-v if v is not None else None) if acc is None else (acc if v is None else acc - v)
            return v if acc is None else (acc if v is None else acc + v)
        if fn == "count":
            d = 0 if v is None else (-1 if retract else 1)
            return d if acc is None else acc + d
        if fn in ("min", "max"):
            if v is None:
                return acc
            return v if acc is None else (min(acc, v) if fn == "min" else max(acc, v))
        if fn == "last_value":
            return None if retract else v
        if fn == "last_non_null_value":
            if retract:
                return None if v is not None else acc
            return v if v is not None else acc
        if fn == "first_value":
            return v if first else acc
        if fn == "first_non_null_value":
            return v if acc is None else acc
        if fn == "listagg":
            if v is None or not v.strip():
                return acc
            return v if acc is None else acc + "," + v
        if fn == "bool_and":
            return acc if v is None else (v if acc is None else acc and v)
        if fn == "bool_or":
            return acc if v is None else (v if acc is None else acc or v)
        raise AssertionError(fn)

    fns = {k.split(".")[1]: v for k, v in AGG_OPTIONS.items() if k.startswith("fields.")}
    state: dict = {}
    seen: dict = {}
    for r in sorted(rows, key=lambda r: r["id"]):
        cur = state.setdefault(r["id"], {"id": r["id"], **{c: None for c in fns}})
        retract = r["_kind"] in (UB, D)
        for c, fn in fns.items():
            if retract and c in ignore_retract:
                continue
            first = (r["id"], c) not in seen
            seen[(r["id"], c)] = True
            cur[c] = agg(fn, cur[c], r[c], retract, first)
    return state


def merge_runs(runs, spec, drop_delete: bool, *, final: bool = False):
    """Merge several sorted runs (KV tables with one schema) into one run, as the merge-tree
    read does over the runs of a bucket (concatenate, then one merge_kv)."""
    import pyarrow as pa

    from impl.mergetree import merge_kv

    tables = [r for r in runs if r.num_rows]
    if not tables:
        return runs[0] if runs else pa.table({})
    kv = tables[0] if len(tables) == 1 else pa.concat_tables(tables)
    return merge_kv(kv, spec, drop_delete, final=final)

"""Where data files live and which bucket a row goes to, both ways with Paimon Java (issue 45).

- Partition directories: Java writes a table partitioned by DATE, TIMESTAMP, DECIMAL, BOOLEAN
  and a string of escaped characters (``partition.legacy-name`` true, Java's default, and
  false); impl reads exactly Java's rows, appends, and Java reads every row; both sides' files
  share each partition's directory.
- ``data-file.path-directory``, ``data-file.prefix``, ``changelog-file.prefix`` and
  ``file.suffix.include.compression``: the same, and impl's new files have Java's shape.
- ``bucket-function.type`` = mod: Java writes keys, impl upserts the same keys (Java reads no
  duplicate and every delete took effect); impl writes, Java upserts, impl reads.
"""

from __future__ import annotations

import datetime as dt
import decimal
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import impl
from impl.bucket.routing import compute_buckets
from impl.data.types import parse_type
from impl.errors import InvalidOptionError
from impl.options.values import BucketFunctionType

pytestmark = pytest.mark.paimon_java

TABLE = "db.t"


class Side:
    """Both writers of one warehouse's table ``db.t``."""

    def __init__(self, java, wh: Path, tmp: Path):
        self.java, self.wh, self.tmp, self.n = java, wh, tmp, 0

    def create_java(self, fields, primary_keys, partition_keys, options) -> None:
        self.java.call("create_table", warehouse=str(self.wh), table=TABLE, fields=fields, primary_keys=primary_keys,
                       partition_keys=partition_keys, table_options=options)

    def java_write(self, data: pa.Table, kinds: list[str] | None = None) -> None:
        self.n += 1
        path = self.tmp / f"in-{self.n}.parquet"
        pq.write_table(data, path)
        args = {"row_kinds": kinds} if kinds else {}
        self.java.call("write", warehouse=str(self.wh), table=TABLE, parquet=str(path), commit_user="java",
                       identifier=self.n, **args)

    def java_read(self) -> list[dict]:
        out = self.tmp / "java-read.parquet"
        self.java.call("read", warehouse=str(self.wh), table=TABLE, out=str(out))
        return pq.read_table(out).to_pylist()

    def table(self):
        return impl.Catalog(str(self.wh)).get_table(TABLE)

    def impl_write(self, data: pa.Table, kinds: list[str] | None = None) -> None:
        t = self.table()
        builder = t.new_batch_write_builder()
        w, c = builder.new_write(), builder.new_commit()
        try:
            if kinds:
                w.write_arrow(data, row_kinds=[{"+I": 0, "-U": 1, "+U": 2, "-D": 3}[k] for k in kinds])
            else:
                w.write_arrow(data)
            c.commit(w.prepare_commit())
        finally:
            w.close()
            c.close()

    def impl_read(self) -> list[dict]:
        return self.table().to_arrow().to_pylist()

    def data_files(self) -> list[str]:
        """Paths (relative to the table) of every data file on disk."""
        root = self.wh / "db.db" / "t"
        return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs
                      if f.endswith((".parquet", ".orc", ".avro")) and "/manifest" not in d)


def _sorted(rows: list[dict]) -> list[dict]:
    return sorted(rows, key=lambda r: r["id"])


# ---------------------------------------------------------------------------- partition directories

PART_FIELDS = [["id", "BIGINT"], ["d", "DATE"], ["ts", "TIMESTAMP(3)"], ["dec", "DECIMAL(5, 2)"], ["b", "BOOLEAN"],
               ["s", "STRING"], ["v", "STRING"]]
PART_SCHEMA = pa.schema([("id", pa.int64()), ("d", pa.date32()), ("ts", pa.timestamp("ms")),
                         ("dec", pa.decimal128(5, 2)), ("b", pa.bool_()), ("s", pa.string()), ("v", pa.string())])
PART_KEYS = ["d", "ts", "dec", "b", "s"]


def _part_rows(ids: range, tag: str) -> pa.Table:
    days = [dt.date(2024, 1, 2), dt.date(1969, 12, 31)]
    stamps = [dt.datetime(2024, 1, 2, 10, 0), dt.datetime(2024, 1, 2, 10, 0, 5, 120000)]
    strings = ["a/b:c=d", "x y%{}", " ", None]
    rows = [{"id": i, "d": days[i % 2], "ts": stamps[i // 2 % 2], "dec": decimal.Decimal(i % 3) / 4,
             "b": i % 5 == 0, "s": strings[i % 4], "v": f"{tag}{i}"} for i in ids]
    return pa.Table.from_pylist(rows, schema=PART_SCHEMA)


@pytest.mark.parametrize("legacy", ["true", "false"])
def test_java_partition_directories_both_ways(java, tmp_path, legacy):
    side = Side(java, tmp_path / "wh", tmp_path)
    side.create_java(PART_FIELDS, [], PART_KEYS, {"bucket": "-1", "partition.legacy-name": legacy})
    java_rows = _part_rows(range(0, 16), "j")
    side.java_write(java_rows)
    # impl reads exactly Java's rows (it finds every file by its partition's directory)
    assert _sorted(side.impl_read()) == _sorted(java_rows.to_pylist())
    # the same partitions, other ids: each partition directory then holds both sides' files
    impl_rows = java_rows.set_column(0, "id", pa.array([i + 100 for i in range(16)], pa.int64())).set_column(
        6, "v", pa.array([f"i{i}" for i in range(16)]))
    side.impl_write(impl_rows)
    want = _sorted(java_rows.to_pylist() + impl_rows.to_pylist())
    assert _sorted(side.java_read()) == want
    assert _sorted(side.impl_read()) == want
    # impl's files went into Java's partition directories: no directory holds one side's files only
    dirs: dict[str, set[str]] = {}
    for f in side.data_files():
        dirs.setdefault(os.path.dirname(f), set()).add("impl" if f in impl_files(side, java_rows) else "java")
    assert all(len(who) == 2 for who in dirs.values()), dirs
    if legacy == "true":
        assert any(d.startswith("d=19724/") for d in dirs), dirs  # DATE as epoch days
    else:
        assert any(d.startswith("d=2024-01-02/ts=2024-01-02 10%3A00%3A00.000/") for d in dirs), dirs


def impl_files(side: Side, java_rows: pa.Table) -> set[str]:
    """The data files impl wrote: those the first snapshot (Java's) does not list."""
    first = side.table().copy({"scan.snapshot-id": "1"})
    java = {f.file_name for s in first.new_read_builder().new_scan().plan().splits() for f in s.files}
    return {f for f in side.data_files() if os.path.basename(f) not in java}


# ---------------------------------------------------------------------------- data file layout options

LAYOUT = {"data-file.path-directory": "data/files", "data-file.prefix": "dat-", "changelog-file.prefix": "chg-",
          "file.suffix.include.compression": "true", "changelog-producer": "input"}


def test_data_file_layout_options_both_ways(java, tmp_path):
    side = Side(java, tmp_path / "wh", tmp_path)
    side.create_java([["id", "INT"], ["dt", "STRING"], ["v", "STRING"]], ["id", "dt"], ["dt"],
                     {"bucket": "2", **LAYOUT})
    schema = pa.schema([("id", pa.int32()), ("dt", pa.string()), ("v", pa.string())])
    side.java_write(pa.Table.from_pylist([{"id": i, "dt": "p1", "v": f"j{i}"} for i in range(10)], schema=schema))
    java_files = set(side.data_files())
    assert _sorted(side.impl_read()) == [{"id": i, "dt": "p1", "v": f"j{i}"} for i in range(10)]
    side.impl_write(pa.Table.from_pylist([{"id": i, "dt": "p1", "v": f"i{i}"} for i in range(5, 15)], schema=schema))
    want = [{"id": i, "dt": "p1", "v": f"{'j' if i < 5 else 'i'}{i}"} for i in range(15)]
    assert _sorted(side.java_read()) == want
    assert _sorted(side.impl_read()) == want
    new = set(side.data_files()) - java_files
    assert new and all(f.startswith("data/files/dt=p1/bucket-") for f in new), new
    names = sorted(os.path.basename(f) for f in new)
    # Java's shape: <prefix><uuid>-<n>.zst.parquet, data and changelog files of one writer
    assert any(n.startswith("dat-") for n in names) and any(n.startswith("chg-") for n in names), names
    assert all(n.endswith(".zst.parquet") and n.startswith(("dat-", "chg-")) for n in names), names
    # nothing was written where a reader without the options would look
    assert not (tmp_path / "wh" / "db.db" / "t" / "dt=p1").exists()


@pytest.mark.parametrize("key, value", [("data-file.path-directory", "../outside"),
                                        ("data-file.path-directory", "/abs"),
                                        ("data-file.prefix", "a/b-")])
def test_layout_options_that_leave_the_table_are_refused(tmp_path, key, value):
    cat = impl.Catalog(str(tmp_path / "wh"))
    cat.create_database("db", ignore_if_exists=True)
    with pytest.raises(InvalidOptionError, match=key):
        cat.create_table(TABLE, schema=pa.schema([("id", pa.int32())]), options={key: value})


# ---------------------------------------------------------------------------- bucket-function.type = mod

MOD = {"bucket": "4", "bucket-function.type": "mod"}
KV_SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])


def _kv(keys, tag: str) -> pa.Table:
    return pa.Table.from_pylist([{"k": k, "v": f"{tag}{k}"} for k in keys], schema=KV_SCHEMA)


KEYS = list(range(-41, 42))


def test_mod_bucket_java_writes_impl_upserts(java, tmp_path):
    side = Side(java, tmp_path / "wh", tmp_path)
    side.create_java([["k", "BIGINT"], ["v", "STRING"]], ["k"], [], MOD)
    side.java_write(_kv(KEYS, "j"))
    side.impl_write(_kv(KEYS, "i"))
    side.impl_write(_kv([-41, 0, 7], "d"), kinds=["-D"] * 3)
    want = [{"k": k, "v": f"i{k}"} for k in KEYS if k not in (-41, 0, 7)]
    got = sorted(side.java_read(), key=lambda r: r["k"])
    assert got == want  # no duplicate key, every delete took effect
    assert sorted(side.impl_read(), key=lambda r: r["k"]) == want
    # each file lies in floorMod(key, 4)'s bucket, as Java's own files do
    for s in side.table().new_read_builder().new_scan().plan().splits():
        keys = [r["k"] for r in side.table().new_read_builder().new_read().to_arrow([s]).to_pylist()]
        assert all(k % 4 == s.bucket for k in keys), (s.bucket, keys)


def test_mod_bucket_impl_writes_java_upserts(java, tmp_path):
    side = Side(java, tmp_path / "wh", tmp_path)
    cat = impl.Catalog(str(tmp_path / "wh"))
    cat.create_database("db", ignore_if_exists=True)
    cat.create_table(TABLE, schema=KV_SCHEMA, primary_keys=["k"], options=MOD)
    side.impl_write(_kv(KEYS, "i"))
    side.java_write(_kv(KEYS[::2], "j"))
    want = sorted([{"k": k, "v": f"{'j' if (k + 41) % 2 == 0 else 'i'}{k}"} for k in KEYS], key=lambda r: r["k"])
    assert sorted(side.impl_read(), key=lambda r: r["k"]) == want
    assert sorted(side.java_read(), key=lambda r: r["k"]) == want
    # a key predicate prunes to the key's bucket by the same rule
    t = side.table()
    rb = t.new_read_builder().with_filter(t.new_read_builder().new_predicate_builder().equal("k", -7))
    assert rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist() == [{"k": -7, "v": "j-7"}]


def test_mod_bucket_matches_java_function(java):
    keys = [[k] for k in (-(2 ** 63), -(2 ** 31) - 1, -7, -1, 0, 1, 7, 2 ** 31, 2 ** 63 - 1)]
    for n in (1, 3, 4, 7):
        want = java.call("buckets", fields=[["k", "BIGINT"]], rows=keys, num_buckets=n, function="mod")
        got = compute_buckets([pa.array([k[0] for k in keys], pa.int64())], [parse_type("BIGINT")], n,
                              BucketFunctionType.MOD)
        assert got.tolist() == want


@pytest.mark.parametrize("options, match", [({"bucket-function.type": "hive", "bucket-key": "k"}, "hive"),
                                            ({"bucket-function.type": "mod", "bucket-key": "v"}, "INT or BIGINT")])
def test_unsupported_bucket_functions_are_refused_on_write(tmp_path, options, match):
    cat = impl.Catalog(str(tmp_path / "wh"))
    cat.create_database("db", ignore_if_exists=True)
    cat.create_table(TABLE, schema=KV_SCHEMA, options={"bucket": "2", **options})
    t = cat.get_table(TABLE)
    w = t.new_batch_write_builder().new_write()
    try:
        with pytest.raises(InvalidOptionError, match=match):
            w.write_arrow(_kv([1], "x"))
    finally:
        w.close()


def test_index_files_in_data_directories_are_refused(tmp_path):
    """index-file-in-data-file-dir = true puts deletion vectors and hash indexes in the bucket
    directories, where impl does not look: refused by name on tables that have index files."""
    cat = impl.Catalog(str(tmp_path / "wh"))
    cat.create_database("db", ignore_if_exists=True)
    with pytest.raises(impl.UnsupportedTableFeatureError, match="index-file-in-data-file-dir"):
        cat.create_table(TABLE, schema=KV_SCHEMA, primary_keys=["k"],
                         options={"bucket": "1", "deletion-vectors.enabled": "true",
                                  "index-file-in-data-file-dir": "true"})
    cat.create_table("db.append", schema=KV_SCHEMA, options={"index-file-in-data-file-dir": "true"})  # no index files

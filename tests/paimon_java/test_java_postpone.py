"""Postpone bucket mode (bucket = -2) against Paimon Java 1.4.2, both ways, in one test.

Two partitioned tables get the same batches from Java: impl compacts one, Java's postpone
compaction (the harness's ``postpone_compact``: Flink's compact action with core APIs) the other.
Both must put every row in the same (partition, bucket). Then impl writes into both (into
bucket-postpone, as Java's writer would), the other side compacts each, and both sides read the
same rows. The postponed files impl writes have Java's manifest shape (checked on the entries).
"""

from __future__ import annotations

import io
from collections import Counter
from pathlib import Path

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import impl

pytestmark = pytest.mark.paimon_java

OPTIONS = {"bucket": "-2", "postpone.default-bucket-num": "3"}
FIELDS = [["dt", "STRING NOT NULL"], ["id", "INT NOT NULL"], ["v", "BIGINT"]]


def batch(ids, base: int) -> pa.Table:
    ids = list(ids)
    return pa.table({"dt": [f"p{i % 2}" for i in ids], "id": pa.array(ids, pa.int32()),
                     "v": pa.array([base + i for i in ids], pa.int64())})


def rows_of(t: pa.Table) -> list[tuple]:
    return sorted((r["dt"], r["id"], r["v"]) for r in t.to_pylist())


def postponed_entries(table_dir: Path) -> list[dict]:
    """The bucket -2 ADD entries of every manifest, without the fields that differ per file."""
    out = []
    for f in sorted((table_dir / "manifest").glob("manifest-*")):
        if f.name.startswith(("manifest-list-", "index-manifest-")):
            continue
        for r in fastavro.reader(io.BytesIO(f.read_bytes())):
            if r["_BUCKET"] == -2 and r["_KIND"] == 0:
                file = r["_FILE"]
                out.append({"total": r["_TOTAL_BUCKETS"], "level": file["_LEVEL"],
                            "seq": (file["_MIN_SEQUENCE_NUMBER"], file["_MAX_SEQUENCE_NUMBER"]),
                            "key_stats_nulls": file["_KEY_STATS"]["_NULL_COUNTS"],
                            "value_stats": file["_VALUE_STATS"], "cols": file["_VALUE_STATS_COLS"],
                            "source": file["_FILE_SOURCE"], "avro": file["_FILE_NAME"].endswith(".avro"),
                            "prefix": file["_FILE_NAME"].startswith("data--u-")})
    return out


def test_postpone_tables_compacted_by_each_side(java, tmp_path):
    wh = tmp_path / "wh"
    names = ("db.by_impl", "db.by_java")
    for i, name in enumerate(names):
        java.call("create_table", warehouse=str(wh), table=name, fields=FIELDS, primary_keys=["dt", "id"],
                  partition_keys=["dt"], table_options=OPTIONS)
        for n, b in enumerate((batch(range(0, 30), 0), batch(range(20, 40), 100))):
            path = tmp_path / f"in-{i}-{n}.parquet"
            pq.write_table(b, path)
            java.call("write", warehouse=str(wh), table=name, parquet=str(path), commit_user="java", identifier=n)

    def java_rows(name: str) -> list[tuple]:
        out = tmp_path / "read.parquet"
        java.call("read", warehouse=str(wh), table=name, out=str(out))
        return rows_of(pq.read_table(out))

    def placement(name: str) -> Counter:
        files = java.call("metadata", warehouse=str(wh), table=name)["files"]
        latest = files[max(files, key=int)]
        return Counter((tuple(f["partition"]), f["bucket"]) for f in latest for _ in range(f["row_count"]))

    by_impl, by_java = (impl.Catalog(str(wh)).get_table(n) for n in names)
    assert by_impl.to_arrow().num_rows == 0 and java_rows("db.by_impl") == []  # postponed: unread by both

    want = {(f"p{i % 2}", i): (100 + i if i >= 20 else i) for i in range(40)}
    assert by_impl.compact().snapshot_kinds[0].value == "COMPACT"
    java.call("postpone_compact", warehouse=str(wh), table="db.by_java")
    expected = sorted((dt, i, v) for (dt, i), v in want.items())
    assert rows_of(by_impl.to_arrow()) == java_rows("db.by_impl") == expected
    assert rows_of(by_java.to_arrow()) == java_rows("db.by_java") == expected
    # the same bucket for every row, and 3 buckets per partition (postpone.default-bucket-num)
    assert placement("db.by_impl") == placement("db.by_java")
    assert {b for _, b in placement("db.by_impl")} == {0, 1, 2}

    # impl writes into both; the other side compacts (onto the existing 3 buckets)
    for t in (by_impl, by_java):
        t.write_arrow(batch(range(35, 45), 1000))
    impl_postponed = postponed_entries(wh / "db.db" / "by_impl")
    java_postponed = postponed_entries(wh / "db.db" / "by_java")
    assert impl_postponed[-1] == java_postponed[0]  # impl's postponed file has Java's shape
    java.call("postpone_compact", warehouse=str(wh), table="db.by_impl")
    by_java.compact()
    want.update({(f"p{i % 2}", i): 1000 + i for i in range(35, 45)})
    expected = sorted((dt, i, v) for (dt, i), v in want.items())
    for name, t in zip(names, (by_impl, by_java), strict=True):
        assert rows_of(t.to_arrow()) == java_rows(name) == expected
    assert placement("db.by_impl") == placement("db.by_java")

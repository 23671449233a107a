"""Every Paimon 1.4.2 table option is honoured or refused by name (issue 45 item 1).

The registry (``impl.options.registry``) against the generated list of Paimon's keys, and the
places that consult it: reads, writes, compaction, create/alter, view options, Spark options. A
Java table carrying an option impl does not implement is made by writing its schema file by hand
(Paimon writes options into the schema JSON as given).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow as pa
import pytest

import impl
from impl.errors import InvalidOptionError, UnsupportedOptionError
from impl.options import core_options
from impl.options.paimon_1_4_2 import DECLARED
from impl.options.registry import (
    CLASSIFIED,
    DECLARED_KEYS,
    IMPL_ONLY,
    OptionKind,
    check_read,
    classify,
    counts,
    refused,
)

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def _table_with_options(catalog, name: str, stored: dict[str, str], **kwargs):
    """A table whose schema carries ``stored`` options as a Java writer would have stored them (impl
    refuses to create some of them itself): created by impl, then its schema file rewritten."""
    catalog.create_table(f"db.{name}", schema=SCHEMA, **kwargs)
    path = Path(catalog.table_path(("db", name))) / "schema" / "schema-0"
    doc = json.loads(path.read_text())
    doc["options"] = {**doc["options"], **stored}
    path.write_text(json.dumps(doc))
    return catalog.get_table(f"db.{name}")


def _rows(table) -> pa.Table:
    return table.to_arrow().sort_by("id")


def _write(table, ids) -> None:
    wb = table.new_batch_write_builder()
    w = wb.new_write()
    w.write_arrow(pa.table({"id": pa.array(ids, pa.int64()), "v": [str(i) for i in ids]}))
    wb.new_commit().commit(w.prepare_commit())
    w.close()


# ---------------------------------------------------------------------------- the registry


def test_every_declared_key_is_classified_once():
    assert len(DECLARED_KEYS) == len(DECLARED) == 303
    assert [k for k in DECLARED_KEYS if classify(k) is None] == []
    assert sorted(set(CLASSIFIED) - DECLARED_KEYS) == []  # no key Paimon 1.4.2 lacks, but IMPL_ONLY
    assert not set(IMPL_ONLY) & DECLARED_KEYS
    assert list(CLASSIFIED) == sorted(CLASSIFIED)  # one line per key, sorted: parallel edits merge


def test_every_key_impl_declares_is_honoured_or_impl_only():
    # the audit's other half: a key impl parses is one it implements, unless refused on purpose
    for option in core_options.CORE_OPTIONS:
        c = classify(option.key)
        assert c is not None, option.key
        assert c.kind is OptionKind.HONOURED, (option.key, c.kind)


def test_refusal_only_off_paimons_default():
    assert refused({"chain-table.enabled": "false"}, write=True) == []
    assert refused({"chain-table.enabled": " FALSE "}, write=True) == []
    assert [(c.key, v) for c, v in refused({"chain-table.enabled": "true"}, write=True)] == [
        ("chain-table.enabled", "true")]
    # no default: any value is refused; write-only refusals are not refused on read
    assert [c.key for c, _ in refused({"scan.file-creation-time-millis": "3"}, write=False)] == [
        "scan.file-creation-time-millis"]
    assert refused({"ignore-update-before": "true"}, write=False) == []
    assert [c.key for c, _ in refused({"ignore-update-before": "true"}, write=True)] == ["ignore-update-before"]
    # a user's own key, a no-storage-effect key and an honoured key are never refused
    assert refused({"my.own": "x", "sink.watermark-time-zone": "PST", "bucket": "4"}, write=True) == []
    # families by pattern: fallback keys count as their main key
    assert classify("fields.v.aggregate-function").kind is OptionKind.HONOURED
    assert classify("fields.v.distinct").kind is OptionKind.REFUSED_READ
    assert classify("write.compaction-skip").key == "write-only"


def test_typed_error_names_key_and_value():
    with pytest.raises(UnsupportedOptionError) as e:
        check_read({"scan.watermark": "7", "scan.primary-branch": "b"}, "db.t")
    assert (e.value.key, e.value.value, e.value.kind) == ("scan.primary-branch", "b", "refused read")
    assert e.value.others == ["scan.watermark"]
    assert "'scan.primary-branch' = 'b'" in str(e.value) and "db.t" in str(e.value)


def test_doc_counts_match_the_registry():
    text = (ROOT / "docs" / "corpus.md").read_text()
    found = dict(re.findall(r"^\| (honoured|no storage effect|refused read|refused write) \| (\d+) \|$", text, re.M))
    assert {kind.value: n for kind, n in counts().items()} == {k: int(v) for k, v in found.items()}
    total = re.search(r"^\| declared by Paimon 1\.4\.2 \| (\d+) \|$", text, re.M)
    assert total is not None and int(total.group(1)) == len(DECLARED_KEYS) == sum(counts().values())


# ---------------------------------------------------------------------------- consulted by the table layer


def test_java_table_with_a_read_refused_key_is_refused_by_name(local_catalog):
    # a chain table reads partitions from other branches: impl does not, so it refuses the table
    t = _table_with_options(local_catalog, "chain", {"bucket": "4", "chain-table.enabled": "true"},
                            primary_keys=["id"], options={"bucket": "4"})
    with pytest.raises(UnsupportedOptionError, match="chain-table.enabled") as e:
        t.new_batch_write_builder().new_write()
    assert (e.value.key, e.value.value) == ("chain-table.enabled", "true")
    with pytest.raises(UnsupportedOptionError, match="'chain-table.enabled' = 'true'"):
        t.to_arrow()
    assert t.snapshot_manager().latest_snapshot_id() is None  # nothing was written
    with pytest.raises(UnsupportedOptionError, match="chain-table.enabled"):
        t.compact()


def test_java_table_with_default_values_written_out_opens_reads_and_writes(local_catalog):
    t = _table_with_options(local_catalog, "dflt", {"bucket-function.type": "default", "data-file.prefix": "data-",
                                                    "partition.legacy-name": "true", "my.own.key": "kept"},
                            primary_keys=["id"], options={"bucket": "2"})
    _write(t, [1, 2, 3])
    assert _rows(t)["id"].to_pylist() == [1, 2, 3]
    assert t.schema.options["my.own.key"] == "kept"  # a key Paimon does not declare stays, as in Java


def test_write_refused_key_lets_reads_through(local_catalog):
    local_catalog.create_table("db.pre", schema=SCHEMA, options={"bucket": "1", "bucket-key": "id"})
    t = local_catalog.get_table("db.pre")
    _write(t, [1, 2])
    path = Path(local_catalog.table_path(("db", "pre"))) / "schema" / "schema-0"
    doc = json.loads(path.read_text())
    doc["options"]["ignore-update-before"] = "true"
    path.write_text(json.dumps(doc))
    t = local_catalog.get_table("db.pre")
    assert _rows(t)["id"].to_pylist() == [1, 2]  # what was written reads as it is
    with pytest.raises(UnsupportedOptionError, match="ignore-update-before"):
        _write(t, [3])
    assert _rows(t)["id"].to_pylist() == [1, 2]


def test_dynamic_options_refused_on_read(local_catalog):
    local_catalog.create_table("db.dyn", schema=SCHEMA)
    t = local_catalog.get_table("db.dyn")
    _write(t, [1])
    _write(t, [2])
    with pytest.raises(UnsupportedOptionError, match="scan.file-creation-time-millis"):
        t.copy({"scan.file-creation-time-millis": "1"}).to_arrow()
    # a misspelt key read the latest snapshot; now refused with the key meant
    with pytest.raises(InvalidOptionError, match="did you mean 'scan.snapshot-id'"):
        t.copy({"scan.snapshot-idd": "1"})
    assert t.copy({"scan.snapshot-id": "1"}).to_arrow()["id"].to_pylist() == [1]


def test_create_and_alter_refuse_keys_they_set(local_catalog):
    with pytest.raises(UnsupportedOptionError, match="chain-table.enabled"):
        local_catalog.create_table("db.c", schema=SCHEMA, primary_keys=["id"],
                                   options={"bucket": "2", "chain-table.enabled": "true"})
    assert not local_catalog.table_exists("db.c")
    local_catalog.create_table("db.c", schema=SCHEMA, primary_keys=["id"],
                               options={"bucket": "2", "chain-table.enabled": "false"})
    with pytest.raises(UnsupportedOptionError, match="tag.automatic-creation"):
        local_catalog.alter_table("db.c", [impl.SchemaChange.set_option("tag.automatic-creation", "process-time")])
    # a table that already carries a refused key can still be altered otherwise
    _table_with_options(local_catalog, "carries", {"ignore-update-before": "true"})
    local_catalog.alter_table("db.carries", [impl.SchemaChange.set_option("snapshot.num-retained.min", "5")])
    assert local_catalog.get_table("db.carries").schema.options["ignore-update-before"] == "true"


def test_spark_read_options_refuse_unknown_paimon_keys_with_the_nearest():
    spark_options = pytest.importorskip("impl.spark.options", reason="pyspark is not installed (the spark extra)")
    parse_options, SparkConnectorError = spark_options.parse_options, spark_options.SparkConnectorError
    with pytest.raises(SparkConnectorError, match=r"'scan\.snapshot-idd' \(did you mean 'scan\.snapshot-id'\?\)"):
        parse_options({"path": "/w/db.db/t", "scan.snapshot-idd": "1"})
    with pytest.raises(SparkConnectorError, match="scan.foo"):
        parse_options({"path": "/w/db.db/t", "scan.foo": "1"})  # any scan.* was accepted
    opts = parse_options({"path": "/w/db.db/t", "scan.version": "1", "fields.v.aggregate-function": "sum"})
    assert opts.table == {"scan.version": "1", "fields.v.aggregate-function": "sum"}


def test_unimplemented_values_of_honoured_keys_are_refused_on_read(local_catalog):
    local_catalog.create_table("db.modes", schema=SCHEMA)
    t = local_catalog.get_table("db.modes")
    _write(t, [1])
    # a batch read with scan.mode = compacted-full starts at the latest COMPACT snapshot in Paimon
    with pytest.raises(UnsupportedOptionError, match="'scan.mode' = 'compacted-full'"):
        t.copy({"scan.mode": "compacted-full"}).to_arrow()
    assert t.copy({"scan.mode": "latest-full"}).to_arrow()["id"].to_pylist() == [1]

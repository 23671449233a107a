"""Options parsed once per table core (issue 47 item 3): :class:`impl.options.parsed.ParsedOptions`
and the views derived from it, with explicit expected values for defaults, fallback keys and
wrong values (which keep their typed errors)."""

from __future__ import annotations

import pyarrow as pa
import pytest

import impl
from impl.commit.options import CommitOptions
from impl.errors import InvalidOptionError
from impl.fileindex.options import FileIndexSpec
from impl.manifest.manifest_file import manifest_avro_codec, manifest_format_option
from impl.mergetree.options import MergeTreeOptions
from impl.options import core_options as co
from impl.options.config_option import ConfigOption
from impl.options.parsed import ParsedOptions
from impl.options.values import ChangelogProducer, MergeEngine, parse_int
from impl.options.write_formats import WriteFormats
from impl.store.options import TableOptions

MiB = 1024 * 1024


def test_each_option_is_parsed_once_and_a_wrong_value_raises_every_time():
    calls: list[object] = []

    def counting(key: str, value: object) -> int:
        calls.append(value)
        return parse_int(key, value)

    option = ConfigOption("x.count", counting, 3, "test option")
    parsed = ParsedOptions.of({"x.count": 7, "x.none": None})
    assert parsed[option] == 7 and parsed.get(option) == 7
    assert calls == ["7"]  # values are text, as schema options are
    assert "x.none" not in parsed.raw
    # an option with a different identity is parsed on its own, even if it looks the same
    assert parsed[ConfigOption("x.count", counting, 3, "test option")] == 7
    assert len(calls) == 2

    bad = ParsedOptions.of({"x.count": "seven"})
    for _ in range(2):
        with pytest.raises(InvalidOptionError, match="'x.count'.*'seven'"):
            bad[option]


def test_a_core_derives_every_view_from_one_parsed_object(tmp_path):
    catalog = impl.Catalog(str(tmp_path / "warehouse"))
    catalog.create_database("db")
    schema = pa.schema([("id", pa.int32()), ("v", pa.int64())])
    table = catalog.create_table("db.t", schema=schema, primary_keys=["id"], options={
        "bucket": "2", "file.format": "orc", "file-index.bloom-filter.columns": "v",
        "write.compaction-skip": "true", "manifest.format": "parquet", "num-sorted-run.compaction-trigger": "3"})
    core = table.core
    options = core.options
    mt = core.merge_tree_options
    # one parse: the merge tree's view shares the table's write formats and file indexes
    assert mt.write_formats is options.write_formats
    assert mt.file_index is options.file_index
    assert options.file_index.columns == {"v": {"bloom-filter": {}}}
    assert (mt.write_only, options.write_only) == (True, True)  # the fallback key write.compaction-skip
    assert (mt.num_sorted_run_compaction_trigger, mt.num_levels, mt.num_sorted_run_stop_trigger) == (3, 4, 6)
    assert options.write_formats.default_format == "orc"
    assert core.manifest_list.manifest_format == "parquet"
    # a view with other dynamic options parses its own
    view = core.with_options({"write-only": "false"})
    assert view.options.parsed is not options.parsed
    assert view.merge_tree_options.write_only is False


def test_defaults_of_every_view():
    parsed = ParsedOptions.of({})
    table = TableOptions.from_parsed(parsed)
    assert (table.bucket, table.file_format, table.file_compression, table.zstd_level) == (-1, "parquet", "zstd", 1)
    assert table.write_formats == WriteFormats()
    assert table.file_index == FileIndexSpec() and table.file_index.in_manifest_threshold_bytes == 500
    assert table.file_index.read_enabled is True
    assert table.commit == CommitOptions()
    assert MergeTreeOptions.from_parsed(parsed) == MergeTreeOptions()
    assert manifest_format_option(parsed) == "avro"
    codec = manifest_avro_codec(parsed)
    assert (codec.name, codec.level) == ("zstd", 1)
    assert (co.MANIFEST_FORMAT.default, co.MANIFEST_COMPRESSION.default, co.AVRO_CODEC.default) == ("avro", "zstd", None)


def test_explicit_values_and_fallback_keys_reach_every_view():
    parsed = ParsedOptions.of({
        "file.format": "AVRO", "file.compression": "uncompressed", "file.compression.zstd-level": "3",
        "file.format.per.level": "0:Parquet,2:orc", "file.compression.per.level": "0:LZ4",
        "partial-update.ignore-delete": "true", "merge-engine": "partial-update",
        "commit.min-retry-wait": "1 s", "commit.max-retry-wait": "2 s", "manifest.target-file-size": "1 mb",
        "file-index.in-manifest-threshold": "1 kb", "file-index.read.enabled": "false",
        "manifest.compression": "snappy", "fields.v.sequence-group": "name", "target-file-size": "64 mb"})
    table = TableOptions.from_parsed(parsed)
    formats = table.write_formats
    assert (formats.default_format, formats.compression, formats.zstd_level) == ("avro", "none", 3)
    assert (dict(formats.format_per_level), dict(formats.compression_per_level)) == ({0: "parquet", 2: "orc"},
                                                                                     {0: "lz4"})
    assert (table.commit.min_retry_wait_ms, table.commit.max_retry_wait_ms) == (1000, 2000)
    assert table.commit.merge.target_file_size_bytes == MiB
    assert (table.file_index.in_manifest_threshold_bytes, table.file_index.read_enabled) == (1024, False)
    mt = MergeTreeOptions.from_parsed(parsed)
    assert (mt.merge_engine, mt.ignore_delete, mt.target_file_size) == (MergeEngine.PARTIAL_UPDATE, True, 64 * MiB)
    assert mt.field_sequence_groups == ((("v",), ("name",)),)
    assert mt.write_formats == formats and mt.changelog_producer is ChangelogProducer.NONE
    assert manifest_avro_codec(parsed).name == "snappy"
    assert manifest_avro_codec({"manifest.compression": "snappy", "avro.codec": "null"}).name == "null"


@pytest.mark.parametrize(("options", "named"), [
    ({"file.compression.zstd-level": "high"}, "'file.compression.zstd-level': 'high' is not an integer"),
    ({"file.compression.zstd-level": "0"}, "'file.compression.zstd-level': 0 is below the minimum 1"),
    ({"file.format.per.level": "0:csv"}, "'file.format.per.level'"),
    ({"file.compression.per.level": "zero:lz4"}, "'file.compression.per.level': 'zero:lz4' is not <level>:<value>"),
    ({"file-index.in-manifest-threshold": "big"}, "'file-index.in-manifest-threshold': 'big' is not a memory size"),
    ({"file-index.read.enabled": "yes"}, "'file-index.read.enabled': 'yes' is not a boolean"),
    ({"write.compaction-skip": "maybe"}, "'write.compaction-skip': 'maybe' is not a boolean"),
])
def test_wrong_values_keep_their_typed_errors(options, named):
    parsed = ParsedOptions.of(options)
    with pytest.raises(InvalidOptionError) as e:
        TableOptions.from_parsed(parsed).file_index  # noqa: B018 - the file index view parses on first use
    assert named in str(e.value)
    # the standalone view of the key's own concept raises the same error
    with pytest.raises(InvalidOptionError, match=named.split(":")[0]):
        if "file-index" in named:
            FileIndexSpec.from_options(options)
        elif "write.compaction-skip" in named:
            MergeTreeOptions.from_options(options)
        else:
            WriteFormats.from_options(options)


def test_orc_options_are_declared_and_parsed_when_a_table_writes_orc():
    from impl.format.file_format import OrcSettings
    from impl.options.write_formats import ORC_OPTIONS

    assert {o.key for o in co.CORE_OPTIONS if o.key.startswith("orc.")} <= ORC_OPTIONS
    assert WriteFormats.from_options({"file.format": "orc"}).orc == OrcSettings(
        stripe_size=64 * MiB, compress_size=256 * 1024, row_index_stride=10_000, dictionary_key_threshold=0.8,
        bloom_filter_columns=(), bloom_filter_fpp=0.05, compress=None)
    formats = WriteFormats.from_options({"file.format.per.level": "3:orc", "orc.bloom.filter.columns": " a, ,b ",
                                         "orc.bloom.filter.fpp": "0.1", "orc.stripe.size": "4096",
                                         "orc.compress": "zlib"})
    assert formats.orc is not None
    assert (formats.orc.bloom_filter_columns, formats.orc.bloom_filter_fpp, formats.orc.stripe_size,
            formats.orc.compress) == (("a", "b"), 0.1, 4096, "zlib")
    fmt, write_options = formats.for_level(3, 1 << 20)
    assert fmt.name == "orc" and write_options.orc is formats.orc
    assert formats.for_level(0)[1].orc is formats.orc  # the same settings; parquet ignores them
    # a table writing no ORC does not parse them (as before: only the key names are checked)
    assert WriteFormats.from_options({"orc.stripe.size": "big"}).orc is None
    # a malformed value is a typed error naming the key (it was a ValueError at the first ORC write)
    for key, value in (("orc.stripe.size", "1 mb"), ("orc.bloom.filter.fpp", "low"),
                       ("orc.dictionary.key.threshold", "most")):
        with pytest.raises(InvalidOptionError, match=f"'{key}': '{value}' is not"):
            WriteFormats.from_options({"file.format": "orc", key: value})
    with pytest.raises(InvalidOptionError, match="'orc.compress'"):
        WriteFormats.from_options({"file.format": "orc", "orc.compress": "lzo"})


def test_spark_connector_options_are_declared():
    spark_options = pytest.importorskip("impl.spark.options", reason="pyspark is not installed (the spark extra)")
    declared = {k for option in spark_options.CONNECTOR_OPTIONS for k in option.keys}
    assert declared | {spark_options.ONLY_FILES_KEY} == spark_options._CONNECTOR_KEYS
    assert all(option.description for option in spark_options.CONNECTOR_OPTIONS)
    parsed = spark_options.parse_options({"path": "/w/db.db/t", "Read.Parallelism": "2", "snapshot-id": "3",
                                          "primary-keys": "a, b", "bucket": "2"})
    assert parsed.connector == {"path": "/w/db.db/t", "read.parallelism": "2", "snapshot-id": "3",
                                "primary-keys": "a, b"}
    assert parsed.table == {"bucket": "2", "scan.snapshot-id": "3"}
    assert spark_options.READ_PARALLELISM.get(parsed.connector) == 2
    assert spark_options.READ_SPLIT_SIZE.get(parsed.connector) == 64 * MiB
    assert (spark_options.PUSHDOWN.get({}), spark_options.READ_CHANGELOG.get({"read.changelog": "TRUE"})) == (
        False, True)
    # the first of primary-key / primary-keys with a value names the keys (an empty one is skipped)
    assert spark_options.connector_names({"primary-key": "", "primary-keys": "a, b"}, spark_options.PRIMARY_KEY) == [
        "a", "b"]
    assert spark_options.connector_names({"partition-keys": "dt"}, spark_options.PARTITION) == ["dt"]
    assert spark_options.connector_names({}, spark_options.PARTITION) == []
    # a malformed number is a typed error naming the option (it was a ValueError of int())
    with pytest.raises(InvalidOptionError, match="'read.split-size': '64 mb' is not an integer"):
        spark_options.READ_SPLIT_SIZE.get({"read.split-size": "64 mb"})

"""The options layer: every declared option, its parser and default, fallback keys, unknown keys."""

from __future__ import annotations

import enum
import warnings

import pytest

from impl.commit.options import CommitOptions
from impl.errors import InvalidOptionError
from impl.mergetree.options import MergeTreeOptions
from impl.options import CORE_OPTIONS, FIELD_OPTIONS, KNOWN_KEYS, ConfigOption, is_known_key, warn_unknown_keys
from impl.options import core_options as co
from impl.options.values import (
    ChangelogProducer,
    MergeEngine,
    StatsMode,
    StatsModeKind,
    at_least,
    one_of,
    parse_duration_millis,
    parse_memory_size,
)
from impl.store.options import TableOptions

MiB = 1024 * 1024


def test_every_key_is_declared_once():
    keys = [k for option in CORE_OPTIONS for k in option.keys]
    assert len(keys) == len(set(keys))
    assert {f.suffix for f in FIELD_OPTIONS} == {
        "aggregate-function", "ignore-retract", "list-agg-delimiter", "sequence-group"}
    assert all(option.description for option in CORE_OPTIONS)


@pytest.mark.parametrize("option", CORE_OPTIONS, ids=lambda o: o.key)
def test_an_unset_option_is_its_default_and_the_default_parses_to_itself(option: ConfigOption):
    assert option.get({}) == option.default
    assert option.get({option.key: None}) == option.default
    if isinstance(option.default, (bool, int, str)):
        text = option.default.value if isinstance(option.default, enum.Enum) else str(option.default)
        assert option.get({option.key: text}) == option.default


def test_paimon_defaults():
    assert co.BUCKET.default == -1
    assert co.MERGE_ENGINE.default is MergeEngine.DEDUPLICATE
    assert co.CHANGELOG_PRODUCER.default is ChangelogProducer.NONE
    assert co.WRITE_BUFFER_SIZE.default == 256 * MiB and co.TARGET_FILE_SIZE.default is None
    assert co.NUM_SORTED_RUN_COMPACTION_TRIGGER.default == 5
    assert co.METADATA_STATS_MODE.default == StatsMode(StatsModeKind.TRUNCATE, 16)
    assert (co.COMMIT_MAX_RETRIES.default, co.COMMIT_MIN_RETRY_WAIT.default, co.COMMIT_MAX_RETRY_WAIT.default) == (
        10, 10, 10_000)
    assert (co.MANIFEST_TARGET_FILE_SIZE.default, co.MANIFEST_FULL_COMPACTION_THRESHOLD_SIZE.default,
            co.MANIFEST_MERGE_MIN_COUNT.default) == (8 * MiB, 16 * MiB, 30)
    assert co.WRITE_ONLY.fallback_keys == ("write.compaction-skip",)
    assert co.IGNORE_DELETE.fallback_keys == (
        "first-row.ignore-delete", "deduplicate.ignore-delete", "partial-update.ignore-delete")


def test_fallback_keys_are_read_in_order_and_name_themselves_in_errors():
    assert co.IGNORE_DELETE.key_in({"partial-update.ignore-delete": "true", "first-row.ignore-delete": "x"}) == (
        "first-row.ignore-delete")
    assert co.IGNORE_DELETE.get({"partial-update.ignore-delete": "true"}) is True
    assert co.IGNORE_DELETE.get({"ignore-delete": "false", "partial-update.ignore-delete": "true"}) is False
    with pytest.raises(InvalidOptionError, match="'write.compaction-skip'.*'maybe'"):
        co.WRITE_ONLY.get({"write.compaction-skip": "maybe"})


def test_field_options():
    options = {"fields.a.aggregate-function": " SUM ", "fields.b.c.aggregate-function": "max",
               "fields.aggregate-function": "min", "fields..aggregate-function": "min",
               "fields.a.ignore-retract": "true", "fields.x,y.sequence-group": "a, b"}
    assert co.FIELD_AGGREGATE_FUNCTION.get_all(options) == {"a": "sum", "b.c": "max"}
    assert co.FIELD_IGNORE_RETRACT.get_all(options) == {"a": True}
    assert co.FIELD_SEQUENCE_GROUP.get_all(options) == {"x,y": ("a", "b")}
    assert co.FIELD_AGGREGATE_FUNCTION.key("a") == "fields.a.aggregate-function"
    with pytest.raises(InvalidOptionError, match="fields.a.ignore-retract"):
        co.FIELD_IGNORE_RETRACT.get_all({"fields.a.ignore-retract": "often"})


@pytest.mark.parametrize("text, size", [("8 mb", 8 * MiB), ("64kb", 64 * 1024), ("1 G", 1024 * MiB), ("12", 12),
                                        (" 3 bytes ", 3)])
def test_memory_sizes(text, size):
    assert parse_memory_size("k", text) == size


@pytest.mark.parametrize("text, millis", [("10 s", 10_000), ("1 min", 60_000), ("5", 5), ("2 h", 7_200_000),
                                          ("1 d", 86_400_000)])
def test_durations(text, millis):
    assert parse_duration_millis("k", text) == millis


def test_choices_and_bounds():
    parse = one_of(MergeEngine)
    assert parse("merge-engine", " First-Row ") is MergeEngine.FIRST_ROW
    with pytest.raises(InvalidOptionError, match="'merge-engine': 'latest' is not one of deduplicate, partial-update"):
        parse("merge-engine", "latest")
    assert at_least(2)("num-levels", "2") == 2
    with pytest.raises(InvalidOptionError, match="'num-levels': 1 is below the minimum 2"):
        at_least(2)("num-levels", "1")


def test_views_read_the_same_declarations():
    options = {"bucket": "3", "merge-engine": "aggregation", "changelog-producer": "input",
               "file.compression": "uncompressed", "file.compression.zstd-level": "4", "write-only": "true",
               "rowkind.field": "op", "sequence.field": "a,b", "commit.max-retries": "2"}
    table, tree = TableOptions.from_options(options), MergeTreeOptions.from_options(options)
    assert (table.bucket, table.merge_engine, table.changelog_producer, table.file_compression, table.zstd_level,
            table.write_only, table.rowkind_field, table.sequence_field) == (
        tree.bucket, tree.merge_engine, tree.changelog_producer, tree.file_compression,
        tree.file_compression_zstd_level, tree.write_only, tree.rowkind_field, tree.sequence_fields)
    assert table.commit == CommitOptions.from_options(options) and table.commit.max_retries == 2
    assert TableOptions.from_options({}) == TableOptions(raw={})


def test_postpone_bucket_options():
    assert MergeTreeOptions.from_options({"bucket": "-2"}).bucket == -2
    parsed = TableOptions.from_options({"bucket": "-2", "postpone.default-bucket-num": "4"})
    assert (parsed.bucket, parsed.postpone_default_bucket_num) == (-2, 4)
    assert TableOptions.from_options({}).postpone_default_bucket_num == 1  # Paimon's default
    with pytest.raises(InvalidOptionError, match="'postpone.default-bucket-num'"):
        TableOptions.from_options({"bucket": "-2", "postpone.default-bucket-num": "0"})
    with pytest.raises(InvalidOptionError, match="'bucket'"):
        TableOptions.from_options({"bucket": "-3"})


def test_known_and_unknown_keys():
    for option in CORE_OPTIONS:
        assert all(is_known_key(k) for k in option.keys)
    assert "write.compaction-skip" in KNOWN_KEYS and is_known_key("fields.x.aggregate-function")
    assert is_known_key("parquet.block.size") and not is_known_key("buckets")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warn_unknown_keys(["bucket", "buckets", "merge_engine"])
    assert [str(w.message) for w in caught] == ["unknown table options (ignored): buckets, merge_engine"]

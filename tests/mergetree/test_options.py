import pytest
from mergetree_helpers import agg_schema, make_schema

from impl.errors import InvalidOptionError
from impl.mergetree import MergeSpec, MergeTreeOptions
from impl.mergetree.options import (
    lookup_write_problem,
    reads_top_level_row,
    resolve_num_levels,
    resolve_stop_trigger,
    supported_changelog_producer,
)
from impl.options import ChangelogProducer, MergeEngine

MB = 1024 * 1024


def test_defaults_are_paimons():
    o = MergeTreeOptions.from_options({})
    assert o.target_file_size == 128 * MB
    assert o.write_buffer_size == 256 * MB
    assert o.num_sorted_run_compaction_trigger == 5
    assert o.num_sorted_run_stop_trigger == 8
    assert o.num_levels == 6
    assert o.max_size_amplification_percent == 200
    assert o.size_ratio == 1
    assert o.merge_engine == "deduplicate" and o.merge_engine is MergeEngine.DEDUPLICATE
    assert o.changelog_producer == "none" and o.changelog_producer is ChangelogProducer.NONE
    assert o.file_compression == "zstd"
    assert not o.write_only and not o.ignore_delete
    assert o.compaction_file_size == 128 * MB // 10 * 7
    assert o == MergeTreeOptions()  # the dataclass defaults are the declared defaults


def test_parsed_values_and_derived_defaults():
    o = MergeTreeOptions.from_options({
        "bucket": "4", "target-file-size": "8 mb", "write-buffer-size": "64kb",
        "num-sorted-run.compaction-trigger": "3", "merge-engine": "Partial-Update",
        "sequence.field": "ts, v", "rowkind.field": "op", "changelog-producer": "input",
        "write.compaction-skip": "true", "fields.v.aggregate-function": "SUM",
        "fields.v.ignore-retract": "true", "fields.k.list-agg-delimiter": ";",
        "fields.ts.sequence-group": "k,v", "partial-update.ignore-delete": "true",
    })
    assert o.bucket == 4
    assert o.target_file_size == 8 * MB and o.write_buffer_size == 64 * 1024
    assert o.num_sorted_run_stop_trigger == 6  # trigger + 3
    assert o.num_levels == 4  # trigger + 1 when unset
    assert o.merge_engine == "partial-update" and o.merge_engine is MergeEngine.PARTIAL_UPDATE
    assert o.sequence_fields == ("ts", "v")
    assert o.rowkind_field == "op"
    assert o.changelog_producer == "input"
    assert o.write_only  # fallback key
    assert o.ignore_delete  # fallback key
    assert o.field_aggregate_functions == {"v": "sum"}
    assert o.field_ignore_retract == frozenset({"v"})
    assert o.list_agg_delimiter("k") == ";" and o.list_agg_delimiter("v") == ","
    assert o.field_sequence_groups == ((("ts",), ("k", "v")),)


def test_fallback_keys_answer_only_when_the_key_is_unset():
    o = MergeTreeOptions.from_options({"write-only": "false", "write.compaction-skip": "true",
                                       "ignore-delete": "false", "first-row.ignore-delete": "true"})
    assert not o.write_only and not o.ignore_delete
    with pytest.raises(InvalidOptionError, match="deduplicate.ignore-delete"):  # the key actually set
        MergeTreeOptions.from_options({"deduplicate.ignore-delete": "maybe"})


def test_none_values_count_as_unset():
    assert MergeTreeOptions.from_options({"bucket": None, "merge-engine": None}) == MergeTreeOptions()


def test_stop_trigger_never_below_compaction_trigger():
    o = MergeTreeOptions.from_options({"num-sorted-run.compaction-trigger": "7", "num-sorted-run.stop-trigger": "2"})
    assert o.num_sorted_run_stop_trigger == 7


def test_cross_option_rules():
    assert resolve_stop_trigger(5, None) == 8 and resolve_stop_trigger(5, 2) == 5 and resolve_stop_trigger(5, 9) == 9
    assert resolve_num_levels(3, None) == 4 and resolve_num_levels(3, 2) == 2
    assert supported_changelog_producer(ChangelogProducer.INPUT) is ChangelogProducer.INPUT
    for producer in (ChangelogProducer.FULL_COMPACTION, ChangelogProducer.LOOKUP):
        assert MergeTreeOptions.from_options({"changelog-producer": producer.value}).changelog_producer is producer
    # lookup with an engine that merges a key's rows needs deletion vectors (Paimon reads such
    # tables with its LookupMergeFunction otherwise); full-compaction does not. Partial-update is
    # read so (only a key's topmost level >= 1 row), its writer refuses it
    pu = MergeTreeOptions.from_options({"changelog-producer": "lookup", "merge-engine": "partial-update"})
    assert reads_top_level_row(pu, False) and not reads_top_level_row(pu, True)
    assert "deletion-vectors.enabled" in lookup_write_problem(pu, False) and lookup_write_problem(pu, True) is None
    for extra in ({"merge-engine": "aggregation"}, {"sequence.field": "ts"}):
        with pytest.raises(InvalidOptionError, match="changelog-producer.*lookup.*deletion-vectors.enabled"):
            MergeTreeOptions.from_options({"changelog-producer": "lookup", **extra})
        assert MergeTreeOptions.from_options({"changelog-producer": "lookup", "deletion-vectors.enabled": "true",
                                              **extra}).changelog_producer is ChangelogProducer.LOOKUP
        assert MergeTreeOptions.from_options({"changelog-producer": "full-compaction",
                                              **extra}).changelog_producer is ChangelogProducer.FULL_COMPACTION
    # first-row: 'none' and 'lookup' only, as Paimon
    assert MergeTreeOptions.from_options({"changelog-producer": "lookup", "merge-engine": "first-row"})
    for producer in ("input", "full-compaction"):
        with pytest.raises(InvalidOptionError, match="first-row"):
            MergeTreeOptions.from_options({"changelog-producer": producer, "merge-engine": "first-row"})


@pytest.mark.parametrize("key,value", [
    ("target-file-size", "lots"), ("write-buffer-size", "12 parsecs"), ("num-levels", "1"),
    ("num-sorted-run.compaction-trigger", "0"), ("merge-engine", "last-one-wins"),
    ("changelog-producer", "sometimes"), ("write-only", "maybe"),
    ("file.compression", "middle-out"), ("file.format", "lance"), ("bucket", "0"),
    ("compaction.size-ratio", "-1"), ("ignore-delete", "perhaps"), ("bucket", "-3"),
    ("write-buffer-size", "0"), ("target-file-size", "0"), ("fields.v.ignore-retract", "maybe"),
    ("fields.ts.sequence-group", " , "), ("fields.,.sequence-group", "k"), ("sequence.field.sort-order", "up"),
])
def test_bad_values_raise_invalid_option(key, value):
    with pytest.raises(InvalidOptionError) as e:
        MergeTreeOptions.from_options({key: value})
    assert key in str(e.value)


def test_schema_dependent_validation():
    with pytest.raises(InvalidOptionError, match="sequence.field"):
        MergeSpec.from_schema(make_schema(), MergeTreeOptions.from_options({"sequence.field": "nope"}))
    with pytest.raises(InvalidOptionError, match="rowkind.field"):
        MergeSpec.from_schema(make_schema(), MergeTreeOptions.from_options({"rowkind.field": "nope"}))
    agg = {"merge-engine": "aggregation"}
    with pytest.raises(InvalidOptionError, match="median"):
        MergeSpec.from_schema(agg_schema(), MergeTreeOptions.from_options({**agg, "fields.s.aggregate-function": "median"}))
    with pytest.raises(InvalidOptionError, match="bool_and"):
        MergeSpec.from_schema(agg_schema(), MergeTreeOptions.from_options({**agg, "fields.s.aggregate-function": "bool_and"}))
    with pytest.raises(InvalidOptionError, match="listagg"):
        MergeSpec.from_schema(agg_schema(), MergeTreeOptions.from_options({**agg, "fields.mn.aggregate-function": "listagg"}))
    with pytest.raises(InvalidOptionError, match="primary key"):
        MergeSpec.from_schema(make_schema(), MergeTreeOptions.from_options(
            {"merge-engine": "partial-update", "fields.ts.sequence-group": "id"}))


def test_aggregation_defaults_to_last_non_null_value_and_keeps_keys():
    spec = MergeSpec.from_schema(agg_schema(), MergeTreeOptions.from_options({"merge-engine": "aggregation"}))
    assert "id" not in spec.aggregators
    assert {a.function for a in spec.aggregators.values()} == {"last_non_null_value"}
    spec = MergeSpec.from_schema(agg_schema(), MergeTreeOptions.from_options(
        {"merge-engine": "aggregation", "fields.default-aggregate-function": "first_value"}))
    assert {a.function for a in spec.aggregators.values()} == {"first_value"}

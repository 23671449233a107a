"""The merge tree's view of a primary-key table's options, with Apache Paimon's keys and defaults.

The keys are declared (parsed, defaulted, with fallback keys) once in
:mod:`impl.options.core_options`; this module reads them and adds the rules that relate several
options or that the merge tree alone imposes. Every wrong value raises
:class:`impl.errors.InvalidOptionError` naming the option. Options that need the schema to be
checked (field names in ``sequence.field``, aggregate functions against column types) are
validated by :meth:`impl.mergetree.merge_engine.MergeSpec.from_schema`.

Choices that differ from, or pin down, Paimon's behaviour:

- ``num-levels``: when unset it is ``num-sorted-run.compaction-trigger + 1`` as in Paimon
  (6 with the default trigger of 5), so compaction output never has to fall to level 0.
- ``num-sorted-run.stop-trigger``: default ``compaction-trigger + 3``, and never below the
  compaction trigger (Paimon clamps it the same way).
- ``changelog-producer``: ``lookup`` and ``full-compaction`` are implemented for the engines
  :func:`check_changelog_producer` names and raise for the others (a silently missing
  changelog would be worse than an error); first-row allows only ``none`` and ``lookup``, as
  Paimon.
- ``write-buffer-spillable``: when the shared write buffer is full, a writer's buffer is merged
  and spilled as a sorted run to local temp disk (:mod:`impl.mergetree.spill`) instead of being
  written as a level-0 file; the runs are merged into level-0 files at the next flush, or when
  ``sort-spill-threshold`` runs (default: stop trigger + 1) or
  ``write-buffer-spill.max-disk-size`` bytes piled up. Unset, the table layer decides (Paimon:
  on for batch writes and object stores). Not with ``changelog-producer=input``, whose
  changelog needs the raw rows of a flush: there a full buffer is always flushed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from impl.errors import InvalidOptionError
from impl.fileindex.options import FileIndexSpec
from impl.options import core_options as co
from impl.options.config_option import ConfigOption
from impl.options.parsed import ParsedOptions
from impl.options.values import ChangelogProducer, MergeEngine, SortOrder, split_names
from impl.options.write_formats import WriteFormats

__all__ = ["MergeTreeOptions", "MergeEngine", "ChangelogProducer", "SUPPORTED_CHANGELOG_PRODUCERS",
           "PRIMARY_KEY_TARGET_FILE_SIZE"]


PRIMARY_KEY_TARGET_FILE_SIZE = co.PRIMARY_KEY_TARGET_FILE_SIZE

SUPPORTED_CHANGELOG_PRODUCERS = frozenset(ChangelogProducer)
# producers that compare a key's previous and new version: deduplicate without sequence.field only
COMPARING_CHANGELOG_PRODUCERS = frozenset({ChangelogProducer.LOOKUP, ChangelogProducer.FULL_COMPACTION})

SequenceGroups = tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]


# ---------------------------------------------------------------------------- rules


def resolve_stop_trigger(compaction_trigger: int, configured: int | None) -> int:
    """Sorted runs at which writes wait: default trigger + 3, never below the trigger (as Paimon)."""
    stop = compaction_trigger + 3 if configured is None else configured
    return max(stop, compaction_trigger)


def resolve_num_levels(compaction_trigger: int, configured: int | None) -> int:
    """Levels of the tree: default trigger + 1, so compaction output never has to fall to level 0."""
    return compaction_trigger + 1 if configured is None else configured


def supported_changelog_producer(producer: ChangelogProducer) -> ChangelogProducer:
    """The producer, if this library implements it (a silently missing changelog would be worse)."""
    if producer not in SUPPORTED_CHANGELOG_PRODUCERS:
        raise InvalidOptionError(f"option 'changelog-producer': {producer.value!r} is not supported")
    return producer


def check_changelog_producer(opts: "MergeTreeOptions", deletion_vectors: bool = False) -> "MergeTreeOptions":
    """``full-compaction`` is implemented for every engine but first-row; ``lookup`` for
    deduplicate without sequence.field, first-row (Paimon allows only ``none`` and ``lookup``
    there), and, with ``deletion-vectors.enabled``, for the others: without deletion vectors
    Paimon writes lookup-merged rows to every level and reads them with its LookupMergeFunction
    (only a key's topmost level >= 1 row). This library's merge-on-read does that for
    partial-update (:func:`reads_top_level_row`), so such tables are read; its writer refuses
    them (:func:`lookup_write_problem`)."""
    if opts.merge_engine is MergeEngine.FIRST_ROW:
        if opts.changelog_producer not in (ChangelogProducer.NONE, ChangelogProducer.LOOKUP):
            raise InvalidOptionError(
                f"option 'changelog-producer' = {opts.changelog_producer.value!r} is not allowed with merge-engine "
                "'first-row': Paimon supports only 'none' and 'lookup' there")
        return opts
    if opts.changelog_producer is ChangelogProducer.LOOKUP and not deletion_vectors and (
            opts.merge_engine not in (MergeEngine.DEDUPLICATE, MergeEngine.PARTIAL_UPDATE) or opts.sequence_fields):
        raise InvalidOptionError(
            f"option 'changelog-producer' = 'lookup' is implemented for merge-engine {opts.merge_engine.value!r}"
            f"{' with sequence.field' if opts.sequence_fields else ''} only together with "
            "'deletion-vectors.enabled' = true; set it, or use 'full-compaction', 'input' or 'none'")
    return opts


# Paimon 1.4.2's option (not declared in impl.options: this library does not implement it)
REMOVE_RECORD_ON_SEQUENCE_GROUP = "partial-update.remove-record-on-sequence-group"


def reads_top_level_row(opts: "MergeTreeOptions", deletion_vectors: bool) -> bool:
    """Whether a merge-on-read takes, of a key's rows in levels >= 1, only the one in its
    topmost level (Paimon's ``LookupMergeFunction``): so on a lookup table without deletion
    vectors, whose lookup compaction writes each key's merge with its looked-up row to a level
    while older rows of the key stay below. Only partial-update needs it here (deduplicate
    picks the newest row either way; the other engines are refused with lookup)."""
    return (opts.changelog_producer is ChangelogProducer.LOOKUP and not deletion_vectors
            and opts.merge_engine is MergeEngine.PARTIAL_UPDATE)


def lookup_write_problem(opts: "MergeTreeOptions", deletion_vectors: bool) -> str | None:
    """Why this library cannot write a table with these options, though it reads it: the
    lookup changelog producer of partial-update without deletion vectors (its writer would
    have to produce Paimon's lookup compaction and changelog, which it does only with vectors)."""
    if reads_top_level_row(opts, deletion_vectors):
        return ("writing merge-engine 'partial-update' with changelog-producer 'lookup' needs "
                "'deletion-vectors.enabled' = true in this library (tables Paimon wrote so are read)")
    return None


def require_positive(option: ConfigOption[int], value: int) -> int:
    """A buffer of 0 bytes could never hold a row: the merge tree refuses it (append tables do not read it)."""
    if value <= 0:
        raise InvalidOptionError(f"option {option.key!r}: {value} must be positive")
    return value


def sequence_groups(options: ParsedOptions) -> SequenceGroups:
    """``fields.<sequence fields>.sequence-group = <fields>``, as (sequence fields, fields), in option order."""
    groups = []
    for name, members in options.fields(co.FIELD_SEQUENCE_GROUP).items():
        sequence_fields = split_names(name)
        if not sequence_fields:
            key = co.FIELD_SEQUENCE_GROUP.key(name)
            raise InvalidOptionError(f"option {key!r}: {options.raw[key]!r} names no fields")
        groups.append((sequence_fields, members))
    return tuple(groups)


# ---------------------------------------------------------------------------- view


@dataclass(frozen=True)
class MergeTreeOptions:
    """Parsed merge-tree options of one primary-key table (all sizes in bytes)."""

    bucket: int = co.BUCKET.default
    target_file_size: int = PRIMARY_KEY_TARGET_FILE_SIZE
    write_buffer_size: int = co.WRITE_BUFFER_SIZE.default
    num_sorted_run_compaction_trigger: int = co.NUM_SORTED_RUN_COMPACTION_TRIGGER.default
    num_sorted_run_stop_trigger: int = resolve_stop_trigger(co.NUM_SORTED_RUN_COMPACTION_TRIGGER.default, None)
    num_levels: int = resolve_num_levels(co.NUM_SORTED_RUN_COMPACTION_TRIGGER.default, None)
    max_size_amplification_percent: int = co.COMPACTION_MAX_SIZE_AMPLIFICATION_PERCENT.default
    size_ratio: int = co.COMPACTION_SIZE_RATIO.default
    merge_engine: MergeEngine = co.MERGE_ENGINE.default
    ignore_delete: bool = co.IGNORE_DELETE.default
    sequence_fields: tuple[str, ...] = ()
    sequence_field_descending: bool = False
    rowkind_field: str | None = co.ROWKIND_FIELD.default
    changelog_producer: ChangelogProducer = co.CHANGELOG_PRODUCER.default
    write_only: bool = co.WRITE_ONLY.default
    data_file_thin_mode: bool = co.DATA_FILE_THIN_MODE.default
    default_aggregate_function: str | None = co.FIELDS_DEFAULT_AGGREGATE_FUNCTION.default
    field_aggregate_functions: Mapping[str, str] = field(default_factory=dict)
    field_ignore_retract: frozenset[str] = frozenset()
    field_list_agg_delimiters: Mapping[str, str] = field(default_factory=dict)
    # sequence-group: (sequence fields, fields they order), in option order
    field_sequence_groups: SequenceGroups = ()
    partial_update_remove_record_on_delete: bool = co.PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE.default
    # partial-update.remove-record-on-sequence-group: not implemented, refused by the merge spec
    partial_update_remove_record_on_sequence_group: str | None = None
    file_compression: str = co.FILE_COMPRESSION.default
    write_formats: WriteFormats = field(default_factory=WriteFormats)
    file_compression_zstd_level: int = co.FILE_COMPRESSION_ZSTD_LEVEL.default
    write_buffer_spillable: bool | None = co.WRITE_BUFFER_SPILLABLE.default
    spill_max_disk_size: int | None = co.WRITE_BUFFER_SPILL_MAX_DISK_SIZE.default
    sort_spill_threshold: int | None = co.SORT_SPILL_THRESHOLD.default
    sort_spill_buffer_size: int = co.SORT_SPILL_BUFFER_SIZE.default
    spill_compression: str = co.SPILL_COMPRESSION.default
    spill_compression_zstd_level: int = co.SPILL_COMPRESSION_ZSTD_LEVEL.default
    file_index: FileIndexSpec = field(default_factory=FileIndexSpec)  # file-index.*: each KV file's index blob

    @property
    def max_spilled_runs(self) -> int:
        """Spilled runs that make a writer merge them (Paimon's sortSpillThreshold)."""
        if self.sort_spill_threshold is not None:
            return self.sort_spill_threshold
        return self.num_sorted_run_stop_trigger + 1

    @property
    def compaction_file_size(self) -> int:
        """Files at least this large are upgraded (moved to another level) instead of rewritten.

        Paimon uses 70% of the target size: a rolled file may come out a bit smaller than the
        target, and such a file should not be rewritten again at the next compaction.
        """
        return self.target_file_size // 10 * 7

    def list_agg_delimiter(self, field_name: str) -> str:
        return self.field_list_agg_delimiters.get(field_name, ",")

    @staticmethod
    def from_options(options: Mapping[str, object]) -> "MergeTreeOptions":
        """Read Paimon's option keys from an option map (see :meth:`from_parsed`)."""
        return MergeTreeOptions.from_parsed(ParsedOptions.of(options))

    @staticmethod
    def from_parsed(o: ParsedOptions, *, write_formats: WriteFormats | None = None,
                    file_index: FileIndexSpec | None = None) -> "MergeTreeOptions":
        """The merge-tree view of a table's parsed options; InvalidOptionError on a malformed or
        unsupported value. ``write_formats`` / ``file_index``: the table's views of the same
        options when it has them (else derived here)."""
        trigger = o[co.NUM_SORTED_RUN_COMPACTION_TRIGGER]
        target_file_size = o[co.TARGET_FILE_SIZE]
        sequence_fields: tuple[str, ...] | None = o[co.SEQUENCE_FIELD]
        return check_changelog_producer(MergeTreeOptions(
            bucket=o[co.BUCKET],
            target_file_size=PRIMARY_KEY_TARGET_FILE_SIZE if target_file_size is None else target_file_size,
            write_buffer_size=require_positive(co.WRITE_BUFFER_SIZE, o[co.WRITE_BUFFER_SIZE]),
            num_sorted_run_compaction_trigger=trigger,
            num_sorted_run_stop_trigger=resolve_stop_trigger(trigger, o[co.NUM_SORTED_RUN_STOP_TRIGGER]),
            num_levels=resolve_num_levels(trigger, o[co.NUM_LEVELS]),
            max_size_amplification_percent=o[co.COMPACTION_MAX_SIZE_AMPLIFICATION_PERCENT],
            size_ratio=o[co.COMPACTION_SIZE_RATIO],
            merge_engine=o[co.MERGE_ENGINE],
            ignore_delete=o[co.IGNORE_DELETE],
            sequence_fields=sequence_fields or (),
            sequence_field_descending=o[co.SEQUENCE_FIELD_SORT_ORDER] is SortOrder.DESCENDING,
            rowkind_field=o[co.ROWKIND_FIELD],
            changelog_producer=supported_changelog_producer(o[co.CHANGELOG_PRODUCER]),
            write_only=o[co.WRITE_ONLY],
            data_file_thin_mode=o[co.DATA_FILE_THIN_MODE],
            default_aggregate_function=o[co.FIELDS_DEFAULT_AGGREGATE_FUNCTION],
            field_aggregate_functions=o.fields(co.FIELD_AGGREGATE_FUNCTION),
            field_ignore_retract=frozenset(
                name for name, ignore in o.fields(co.FIELD_IGNORE_RETRACT).items() if ignore),
            field_list_agg_delimiters=o.fields(co.FIELD_LIST_AGG_DELIMITER),
            file_index=FileIndexSpec.from_parsed(o) if file_index is None else file_index,
            field_sequence_groups=sequence_groups(o),
            partial_update_remove_record_on_delete=o[co.PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE],
            partial_update_remove_record_on_sequence_group=o.raw.get(REMOVE_RECORD_ON_SEQUENCE_GROUP),
            file_compression=o[co.FILE_COMPRESSION],
            write_formats=WriteFormats.from_parsed(o) if write_formats is None else write_formats,
            file_compression_zstd_level=o[co.FILE_COMPRESSION_ZSTD_LEVEL],
            write_buffer_spillable=o[co.WRITE_BUFFER_SPILLABLE],
            spill_max_disk_size=o[co.WRITE_BUFFER_SPILL_MAX_DISK_SIZE],
            sort_spill_threshold=o[co.SORT_SPILL_THRESHOLD],
            sort_spill_buffer_size=o[co.SORT_SPILL_BUFFER_SIZE],
            spill_compression=o[co.SPILL_COMPRESSION],
            spill_compression_zstd_level=o[co.SPILL_COMPRESSION_ZSTD_LEVEL],
        ), o[co.DELETION_VECTORS_ENABLED])

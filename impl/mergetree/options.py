"""Options of primary-key tables that the merge tree reads, with Apache Paimon's keys and defaults.

``MergeTreeOptions.from_options`` parses a table's option map once; every wrong value raises
:class:`impl.errors.InvalidOptionError` naming the option. Options that need the schema to be
checked (field names in ``sequence.field``, aggregate functions against column types) are
validated by :meth:`impl.mergetree.merge_engine.MergeSpec.from_schema`.

Choices that differ from, or pin down, Paimon's behaviour:

- ``num-levels``: when unset it is ``num-sorted-run.compaction-trigger + 1`` as in Paimon
  (6 with the default trigger of 5), so compaction output never has to fall to level 0.
- ``num-sorted-run.stop-trigger``: default ``compaction-trigger + 3``, and never below the
  compaction trigger (Paimon clamps it the same way).
- ``changelog-producer``: ``none`` and ``input`` are implemented; ``full-compaction`` and
  ``lookup`` raise (a silently missing changelog would be worse than an error).
- ``write-buffer-spillable`` is parsed but a full buffer is always flushed to level-0 files
  (that flush is the spill that bounds memory); there is no local spill directory.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Mapping

from impl.errors import InvalidOptionError
from impl.options import get, parse_bool, parse_int, parse_memory_size

MB = 1024 * 1024

MERGE_ENGINES = ("deduplicate", "partial-update", "aggregation", "first-row")
CHANGELOG_PRODUCERS = ("none", "input")
UNSUPPORTED_CHANGELOG_PRODUCERS = ("full-compaction", "lookup")

# Paimon's file.compression names -> pyarrow's codec names.
_COMPRESSIONS = {
    "zstd": "zstd", "snappy": "snappy", "gzip": "gzip", "lz4": "lz4", "brotli": "brotli",
    "none": "none", "uncompressed": "none",
}

_FIELD_OPTION = re.compile(r"^fields\.(.+)\.(aggregate-function|ignore-retract|list-agg-delimiter|sequence-group)$")


def _first_present(options: Mapping[str, str], keys: tuple[str, ...]) -> str | None:
    for k in keys:
        if k in options and options[k] is not None:
            return k
    return None


def _bool_with_fallbacks(options: Mapping[str, str], keys: tuple[str, ...], default: bool) -> bool:
    key = _first_present(options, keys)
    return default if key is None else parse_bool(key, options[key])


def _split_names(text: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in str(text).split(",") if p.strip())


@dataclass(frozen=True)
class MergeTreeOptions:
    """Parsed merge-tree options of one primary-key table (all sizes in bytes)."""

    bucket: int = -1
    target_file_size: int = 128 * MB
    write_buffer_size: int = 256 * MB
    write_buffer_spillable: bool | None = None
    num_sorted_run_compaction_trigger: int = 5
    num_sorted_run_stop_trigger: int = 8
    num_levels: int = 6
    max_size_amplification_percent: int = 200
    size_ratio: int = 1
    merge_engine: str = "deduplicate"
    ignore_delete: bool = False
    sequence_fields: tuple[str, ...] = ()
    sequence_field_descending: bool = False
    rowkind_field: str | None = None
    changelog_producer: str = "none"
    write_only: bool = False
    default_aggregate_function: str | None = None
    field_aggregate_functions: Mapping[str, str] = field(default_factory=dict)
    field_ignore_retract: frozenset[str] = frozenset()
    field_list_agg_delimiters: Mapping[str, str] = field(default_factory=dict)
    # sequence-group: (sequence fields, fields they order), in option order
    field_sequence_groups: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = ()
    partial_update_remove_record_on_delete: bool = False
    file_format: str = "parquet"
    file_compression: str = "zstd"
    file_compression_zstd_level: int = 1

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
    def from_options(options: Mapping[str, str]) -> "MergeTreeOptions":
        """Parse Paimon's option keys; raise InvalidOptionError on a malformed or unsupported value."""
        o = {str(k): v for k, v in options.items() if v is not None}

        bucket = get(o, "bucket", -1, parse_int)
        if bucket == 0 or bucket < -2:
            raise InvalidOptionError(f"option 'bucket': {bucket} is not a valid bucket count (use >= 1, or -1)")
        target = get(o, "target-file-size", 128 * MB, parse_memory_size)
        buffer = get(o, "write-buffer-size", 256 * MB, parse_memory_size)
        if target <= 0:
            raise InvalidOptionError(f"option 'target-file-size': {target} must be positive")
        if buffer <= 0:
            raise InvalidOptionError(f"option 'write-buffer-size': {buffer} must be positive")
        spillable = get(o, "write-buffer-spillable", None, parse_bool)

        trigger = get(o, "num-sorted-run.compaction-trigger", 5, parse_int, minimum=1)
        stop = get(o, "num-sorted-run.stop-trigger", trigger + 3, parse_int, minimum=1)
        stop = max(stop, trigger)
        num_levels = get(o, "num-levels", trigger + 1, parse_int, minimum=2)
        amp = get(o, "compaction.max-size-amplification-percent", 200, parse_int, minimum=0)
        ratio = get(o, "compaction.size-ratio", 1, parse_int, minimum=0)

        engine = str(o.get("merge-engine", "deduplicate")).strip().lower()
        if engine not in MERGE_ENGINES:
            raise InvalidOptionError(
                f"option 'merge-engine': {o['merge-engine']!r} is not one of {', '.join(MERGE_ENGINES)}")

        ignore_delete = _bool_with_fallbacks(
            o, ("ignore-delete", "first-row.ignore-delete", "deduplicate.ignore-delete", "partial-update.ignore-delete"),
            False)
        seq_fields = _split_names(o["sequence.field"]) if "sequence.field" in o else ()
        order = str(o.get("sequence.field.sort-order", "ascending")).strip().lower()
        if order not in ("ascending", "descending"):
            raise InvalidOptionError(f"option 'sequence.field.sort-order': {order!r} is not ascending or descending")
        rowkind = o.get("rowkind.field")
        rowkind = str(rowkind).strip() if rowkind is not None and str(rowkind).strip() else None

        producer = str(o.get("changelog-producer", "none")).strip().lower()
        if producer in UNSUPPORTED_CHANGELOG_PRODUCERS:
            raise InvalidOptionError(f"option 'changelog-producer': {producer!r} is not supported (none, input)")
        if producer not in CHANGELOG_PRODUCERS:
            raise InvalidOptionError(f"option 'changelog-producer': {producer!r} is not one of none, input")

        write_only = _bool_with_fallbacks(o, ("write-only", "write.compaction-skip"), False)

        aggs: dict[str, str] = {}
        ignore_retract: set[str] = set()
        delimiters: dict[str, str] = {}
        groups: list[tuple[tuple[str, ...], tuple[str, ...]]] = []
        for key, value in o.items():
            m = _FIELD_OPTION.match(key)
            if not m:
                continue
            name, what = m.group(1), m.group(2)
            if what == "aggregate-function":
                aggs[name] = str(value).strip().lower()
            elif what == "ignore-retract":
                if parse_bool(key, value):
                    ignore_retract.add(name)
            elif what == "list-agg-delimiter":
                delimiters[name] = str(value)
            else:
                seq = _split_names(name)
                members = _split_names(value)
                if not seq or not members:
                    raise InvalidOptionError(f"option {key!r}: {value!r} names no fields")
                groups.append((seq, members))
        default_agg = o.get("fields.default-aggregate-function")
        default_agg = str(default_agg).strip().lower() if default_agg is not None else None

        remove_on_delete = get(o, "partial-update.remove-record-on-delete", False, parse_bool)

        fmt = str(o.get("file.format", "parquet")).strip().lower()
        if fmt != "parquet":
            raise InvalidOptionError(f"option 'file.format': {fmt!r} is not supported for primary-key tables (parquet)")
        compression_text = str(o.get("file.compression", "zstd")).strip().lower()
        if compression_text not in _COMPRESSIONS:
            raise InvalidOptionError(
                f"option 'file.compression': {compression_text!r} is not one of {', '.join(sorted(_COMPRESSIONS))}")
        zstd_level = get(o, "file.compression.zstd-level", 1, parse_int)

        return MergeTreeOptions(
            bucket=bucket,
            target_file_size=target,
            write_buffer_size=buffer,
            write_buffer_spillable=spillable,
            num_sorted_run_compaction_trigger=trigger,
            num_sorted_run_stop_trigger=stop,
            num_levels=num_levels,
            max_size_amplification_percent=amp,
            size_ratio=ratio,
            merge_engine=engine,
            ignore_delete=ignore_delete,
            sequence_fields=seq_fields,
            sequence_field_descending=order == "descending",
            rowkind_field=rowkind,
            changelog_producer=producer,
            write_only=write_only,
            default_aggregate_function=default_agg,
            field_aggregate_functions=aggs,
            field_ignore_retract=frozenset(ignore_retract),
            field_list_agg_delimiters=delimiters,
            field_sequence_groups=tuple(groups),
            partial_update_remove_record_on_delete=remove_on_delete,
            file_format=fmt,
            file_compression=_COMPRESSIONS[compression_text],
            file_compression_zstd_level=zstd_level,
        )

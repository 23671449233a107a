"""The LSM merge tree of primary-key tables (one tree per partition and bucket, in fixed and
dynamic bucket mode): write buffer with spilling, level-0 flushes, levels and universal
compaction, merge engines, sorted-run merge and merged reads, deletion vectors and the changelog
of the lookup and full-compaction producers."""

from impl.errors import LevelsError, MergeEngineError
from impl.mergetree.compact_strategy import CompactUnit, UniversalCompaction, pick_full_compaction
from impl.mergetree.compact_task import CompactResult, plan_compaction
from impl.mergetree.deletion_vectors import DeletionVectorsMaintainer, read_deletion_vectors
from impl.mergetree.interval_partition import interval_partition
from impl.mergetree.kv import KEY_PREFIX, SEQUENCE_NUMBER, VALUE_KIND, KeyCodec, KVLayout, RowKind
from impl.mergetree.levels import Levels, LevelSortedRun, SortedRun
from impl.mergetree.merge_engine import (
    FieldAgg,
    MergeSpec,
    SequenceGroup,
    merge_kv,
    merge_sorted,
    sort_kv,
)
from impl.mergetree.options import MergeTreeOptions
from impl.mergetree.read import (
    CorruptDataFileError,
    deletion_vector_read,
    iter_merge_read,
    merge_read,
    read_kv_files,
)
from impl.mergetree.writer import MergeTreeWriter, WriteBufferPool, WriterClosedError, spill_config

__all__ = [
    "CompactUnit", "UniversalCompaction", "pick_full_compaction", "CompactResult", "plan_compaction",
    "interval_partition", "KEY_PREFIX", "SEQUENCE_NUMBER", "VALUE_KIND", "KeyCodec", "KVLayout", "RowKind",
    "Levels", "LevelsError", "LevelSortedRun", "SortedRun", "FieldAgg", "MergeEngineError", "MergeSpec",
    "SequenceGroup", "merge_kv", "merge_sorted", "sort_kv", "MergeTreeOptions",
    "CorruptDataFileError", "iter_merge_read", "merge_read", "deletion_vector_read", "read_kv_files", "MergeTreeWriter", "WriterClosedError",
    "DeletionVectorsMaintainer", "read_deletion_vectors", "WriteBufferPool", "spill_config",
]

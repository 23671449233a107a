"""The corpus's configurations: one table per option, and combinations (issue 25 item 5).

Each :class:`Config` is one table: its columns, keys, options and the steps its writer performs
(writes and schema changes, in the Paimon Java harness's change shape). A writer that cannot
produce a configuration says so with ``cannot_produce`` (writer -> reason, found by trying);
``impl_refuses`` names the typed error and the option impl must refuse it with. The second part of
issue 25 (postpone buckets, file indexes, row tracking) adds rows here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from corpus_table import JAVA, PYPAIMON, RUST

BASE_COLS = (("id", "INT"), ("name", "STRING"), ("v", "BIGINT"), ("d", "DOUBLE"), ("flag", "BOOLEAN"),
             ("day", "DATE"), ("dec", "DECIMAL(10, 2)"), ("ts", "TIMESTAMP(6)"))
NARROW_COLS = BASE_COLS[:3]
EVOLVED = [{"op": "rename_column", "name": "name", "new_name": "label"},
           {"op": "add_column", "name": "extra", "type": "BIGINT"}]


@dataclass(frozen=True)
class Config:
    """One corpus table. ``merge`` is the merge rule of the reference (append / deduplicate /
    partial-update / aggregation / first-row); ``steps`` run after creation, in order:
    ``("write", batch)`` with batch one of "a" / "b", ``("alter", changes)``, ``("compact",)`` (a
    dedicated full compaction), ``("update", row ids)`` (column updates of name and v by row id,
    on data-evolution tables), ``("upsert", batch)`` (upsert by id on data-evolution tables: every row
    of an id replaced, a new id appended; Paimon Java 1.4.2 has no such API, so the harness has no
    such op), and last ``("compact_impl",)``: impl compacts the table (before it reads, and after
    its write-back)."""

    name: str
    options: dict = field(default_factory=dict)
    primary_keys: tuple = ("id",)
    partition_keys: tuple = ()
    merge: str = "deduplicate"
    steps: tuple = (("write", "a"), ("write", "b"))
    impl_refuses: tuple | None = None  # (error class name, option named in its message)
    cannot_produce: dict = field(default_factory=dict)  # writer label -> text of its refusal
    # writer label -> why the writer's own read is not the reference (impl must read what it reads)
    writer_read_differs: dict = field(default_factory=dict)
    cannot_read_back: dict = field(default_factory=dict)  # writer label -> text of its read error
    # writer label -> why the writer's read of impl's write-back is not the reference (it must
    # still equal impl's own read: the two agree on a table the writer laid out wrongly)
    write_back_differs: dict = field(default_factory=dict)
    narrow: bool = False  # id, name, v only (for a writer that lacks the other types in a format)
    # (column, value, absent value): impl also reads ``column = value`` and ``column = absent``
    # with the data-file index and without it (file-index.read.enabled = false): each must return
    # the reference's matching rows (the absent value lies inside a file's min / max, so only an
    # index can rule that file out)
    index_probe: tuple | None = None
    # data evolution: row ids whose name and v impl updates after its write-back batch
    write_back_update: tuple = ()
    write_back_compact: bool = False  # impl fully compacts the table after its write-back batch
    # (error class name, option named in its message): impl reads the table but must refuse its
    # write-back by name (so no writer reads a write-back of it)
    write_refused: tuple | None = None
    part_type: str = "STRING"  # the type of the partition column "dt"

    @property
    def cols(self) -> tuple:
        if self.narrow:
            return NARROW_COLS
        return (("dt", self.part_type), *BASE_COLS) if self.partition_keys else BASE_COLS


PK1 = {"bucket": "1"}
# pypaimon-rust 0.4.0 writes ORC only uncompressed (Paimon's default ORC compression is zstd).
RUST_NO_ORC = {RUST: "ORC compression 'zstd' is not supported by the current writer"}
# ... and without DATE columns
RUST_NO_ORC_DATE = {RUST: "ORC writer does not support column 'day' (Date32)"}
# pypaimon 2.1.0 passes file.compression = none to pyarrow's ORC writer, which does not know it.
PYPAIMON_NO_ORC_NONE = {PYPAIMON: "Unknown CompressionKind: NONE"}
UNCOMPRESSED_ORC = {**PYPAIMON_NO_ORC_NONE, **RUST_NO_ORC_DATE}
# pypaimon 2.1.0 and pypaimon-rust 0.4.0 leave these commits on level 0, which Paimon's batch scan
# of a first-row / deletion-vector table skips (Java's writer compacts level 0 away in the commit):
# the writer reads none of its rows, and neither do impl nor Java.
LEVEL0 = "the writer leaves its commits on level 0, which batch scans of this table kind skip"
# Both Python writers write Avro manifests whatever manifest.format says; impl writes ORC ones, as
# Java does, which they cannot read.
ORC_MANIFESTS = {PYPAIMON: "KeyError: 'avro.schema'", RUST: "avro ocf: invalid magic bytes"}
RT = {"row-tracking.enabled": "true"}
DE = {**RT, "data-evolution.enabled": "true"}
# Neither Python writer has a compaction (pypaimon 2.1.0 has no compaction API, pypaimon-rust's
# SQL has no compact procedure).
NO_COMPACTION = {PYPAIMON: "object has no attribute 'new_compact'", RUST: "Unknown procedure: compact"}
# Compacted row-tracking files carry their ids in _ROW_ID columns and no first row id (Paimon
# Java's layout, which impl's compaction writes too); pypaimon-rust 0.4.0 reads no such file (also
# refuses a table Java compacted, with the same message).
RUST_NO_COMPACTED_ROW_TRACKING = {RUST: "is missing first_row_id"}
CONFIGS = [
    Config("parquet-append", {"file.format": "parquet"}, primary_keys=(), merge="append"),
    Config("orc-append", {"file.format": "orc"}, primary_keys=(), merge="append", cannot_produce=RUST_NO_ORC),
    Config("orc-uncompressed-append", {"file.format": "orc", "file.compression": "none"}, primary_keys=(),
           merge="append", cannot_produce=UNCOMPRESSED_ORC),
    Config("avro-append", {"file.format": "avro"}, primary_keys=(), merge="append"),
    Config("parquet-pk", {**PK1, "file.format": "parquet"}),
    Config("orc-pk", {**PK1, "file.format": "orc"}, cannot_produce=RUST_NO_ORC),
    Config("orc-uncompressed-pk", {**PK1, "file.format": "orc", "file.compression": "none"},
           cannot_produce=UNCOMPRESSED_ORC),
    Config("orc-uncompressed-narrow-pk", {**PK1, "file.format": "orc", "file.compression": "none"}, narrow=True,
           cannot_produce=PYPAIMON_NO_ORC_NONE),
    Config("avro-pk", {**PK1, "file.format": "avro"}),
    Config("orc-deletion-vectors", {**PK1, "file.format": "orc", "deletion-vectors.enabled": "true"},
           cannot_produce=RUST_NO_ORC, writer_read_differs={PYPAIMON: LEVEL0}),
    Config("deletion-vectors", {**PK1, "deletion-vectors.enabled": "true"},
           writer_read_differs={PYPAIMON: LEVEL0, RUST: LEVEL0}),
    Config("avro-schema-evolution", {**PK1, "file.format": "avro"},
           steps=(("write", "a"), ("alter", EVOLVED), ("write", "b"))),
    Config("orc-dynamic-bucket", {"bucket": "-1", "file.format": "orc"}, cannot_produce=RUST_NO_ORC),
    Config("format-altered-parquet-to-orc", {**PK1, "file.format": "parquet"},
           steps=(("write", "a"), ("alter", [{"op": "set_option", "key": "file.format", "value": "orc"}]),
                  ("write", "b")), cannot_produce=RUST_NO_ORC),
    Config("manifest-orc", {**PK1, "manifest.format": "orc"}, cannot_read_back=ORC_MANIFESTS),
    Config("stats-mode-none", {**PK1, "metadata.stats-mode": "none"}),
    Config("partitioned", {"bucket": "2"}, primary_keys=("dt", "id"), partition_keys=("dt",)),
    Config("partial-update", {**PK1, "merge-engine": "partial-update"}, merge="partial-update"),
    Config("aggregation", {**PK1, "merge-engine": "aggregation", "fields.v.aggregate-function": "sum"},
           merge="aggregation"),
    Config("first-row", {**PK1, "merge-engine": "first-row"}, merge="first-row",
           writer_read_differs={PYPAIMON: LEVEL0, RUST: LEVEL0}),
    Config("changelog-producer-input", {**PK1, "changelog-producer": "input"}),
    # combinations
    Config("orc-first-row", {**PK1, "file.format": "orc", "merge-engine": "first-row"}, merge="first-row",
           cannot_produce=RUST_NO_ORC, writer_read_differs={PYPAIMON: LEVEL0}),
    Config("avro-partial-update", {**PK1, "file.format": "avro", "merge-engine": "partial-update"},
           merge="partial-update"),
    Config("orc-partitioned-aggregation-stats-none",
           {"bucket": "2", "file.format": "orc", "merge-engine": "aggregation", "fields.v.aggregate-function": "sum",
            "metadata.stats-mode": "none"}, primary_keys=("dt", "id"), partition_keys=("dt",), merge="aggregation",
           cannot_produce=RUST_NO_ORC),
    Config("avro-manifest-orc-changelog-input",
           {**PK1, "file.format": "avro", "manifest.format": "orc", "changelog-producer": "input"},
           cannot_read_back=ORC_MANIFESTS),
    # file indexes (issue 28 item 2): read with and without the index, written back with impl's index
    Config("bloom-filter-append", {"file-index.bloom-filter.columns": "name,v", "file-index.bloom-filter.v.items": "100"},
           primary_keys=(), merge="append", index_probe=("name", "b115", "a55")),
    Config("bitmap-pk", {**PK1, "file-index.bitmap.columns": "name"}, index_probe=("name", "b115", "a55")),
    # --- row tracking and data evolution (issue 28 item 3) ---
    Config("row-tracking", RT, primary_keys=(), merge="append", write_back_compact=True,
           cannot_read_back=RUST_NO_COMPACTED_ROW_TRACKING),
    Config("row-tracking-compacted", {**RT, "compaction.min.file-num": "2"}, primary_keys=(), merge="append",
           steps=(("write", "a"), ("write", "b"), ("compact",)), cannot_produce=NO_COMPACTION),
    Config("data-evolution", DE, primary_keys=(), merge="append",
           steps=(("write", "a"), ("write", "b"), ("update", (3, 4, 5, 25, 26, 39))), write_back_update=(4, 30, 45),
           write_back_compact=True),
    Config("data-evolution-upsert", DE, primary_keys=(), merge="append",
           steps=(("write", "a"), ("write", "b"), ("upsert", "u")), write_back_update=(22, 40),
           cannot_produce={JAVA: "unknown op 'upsert_by_key'"}),
]

# Postpone bucket mode (issue 28 item 1): every writer leaves its rows in bucket-postpone, which
# batch reads skip until a compaction assigns buckets; ("compact_impl",) is impl's compaction,
# run before impl reads and again after impl's write-back, so the writer then reads real buckets.
POSTPONE = {"bucket": "-2", "postpone.default-bucket-num": "2"}
CONFIGS += [
    Config("postpone-partitioned", POSTPONE, primary_keys=("dt", "id"), partition_keys=("dt",)),
    Config("postpone-compacted-by-impl", POSTPONE, primary_keys=("dt", "id"), partition_keys=("dt",),
           steps=(("write", "a"), ("write", "b"), ("compact_impl",))),
]

# Issue 45 item 4: every configuration impl honours newly this round. Partition columns of other
# types than STRING, with Java's partition directory names (partition.legacy-name true, the
# default, and false), file name prefixes / suffixes and the data-file directory, the mod bucket
# function, 64-bit deletion vectors, every manifest compression, deletion vectors after a rename
# and a drop-and-re-add, partial-update sequence groups and partial-update with a lookup changelog.
PART = {"primary_keys": ("dt", "id"), "partition_keys": ("dt",)}
DV = {**PK1, "deletion-vectors.enabled": "true"}
DV_EVOLVED = [{"op": "rename_column", "name": "name", "new_name": "label"},
              {"op": "drop_column", "name": "d"}, {"op": "add_column", "name": "d", "type": "DOUBLE"}]
# v orders the group (name, d); d sums inside the group
# pypaimon 2.1.0 ignores bucket-function.type = mod: it puts rows in the default (hash) buckets,
# so impl's write-back, in the mod buckets, leaves an updated key in two buckets; both read both.
PYPAIMON_HASHES = {PYPAIMON: "the writer put its rows in hash buckets, impl's updates go to the mod buckets"}
SEQ_GROUP = {**PK1, "merge-engine": "partial-update", "fields.v.sequence-group": "name,d",
             "fields.d.aggregate-function": "sum"}
CONFIGS += [
    Config("date-partition-prefixes", {"bucket": "2", "data-file.prefix": "corpus-data-",
                                       "file.suffix.include.compression": "true", "changelog-producer": "input",
                                       "changelog-file.prefix": "corpus-changelog-"}, part_type="DATE", **PART),
    Config("date-partition-not-legacy", {"bucket": "2", "partition.legacy-name": "false",
                                         "data-file.path-directory": "data"}, part_type="DATE", **PART),
    Config("timestamp-partition", {"bucket": "2"}, part_type="TIMESTAMP(6)", **PART),
    Config("timestamp-partition-not-legacy", {"bucket": "2", "partition.legacy-name": "false"},
           part_type="TIMESTAMP(6)", **PART),
    Config("decimal-partition-not-legacy", {"bucket": "2", "partition.legacy-name": "false"},
           part_type="DECIMAL(10, 2)", **PART),
    Config("boolean-partition-append", {"bucket": "-1", "file.format": "avro"}, primary_keys=(),
           partition_keys=("dt",), merge="append", part_type="BOOLEAN"),
    Config("bucket-function-mod", {"bucket": "3", "bucket-function.type": "mod"},
           write_back_differs=PYPAIMON_HASHES),
    Config("deletion-vectors-bitmap64", {**DV, "deletion-vectors.bitmap64": "true"},
           writer_read_differs={PYPAIMON: LEVEL0, RUST: LEVEL0}),
    Config("manifest-snappy", {**PK1, "manifest.compression": "snappy"}),
    Config("manifest-deflate", {**PK1, "manifest.compression": "deflate"}),
    Config("manifest-bzip2-append", {"manifest.compression": "bzip2"}, primary_keys=(), merge="append",
           cannot_produce={RUST: "Unsupported Avro compression: bzip2"}),
    Config("manifest-uncompressed", {**PK1, "manifest.compression": "null"}),
    Config("deletion-vectors-evolved", DV, steps=(("write", "a"), ("alter", DV_EVOLVED), ("write", "b")),
           writer_read_differs={PYPAIMON: LEVEL0, RUST: LEVEL0}),
    Config("partial-update-sequence-group", SEQ_GROUP, merge="partial-update-group",
           cannot_produce={PYPAIMON: "pypaimon does not yet implement: fields.d.aggregate-function"}),
    Config("partial-update-lookup", {**PK1, "merge-engine": "partial-update", "changelog-producer": "lookup"},
           merge="partial-update", write_refused=("InvalidOptionError", "changelog-producer")),
]

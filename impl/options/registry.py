"""Every table option Paimon 1.4.2 declares, classified by what impl does with it (issue 45).

An option impl does not implement must never be silently ignored: a Java table with
``bucket-function.type`` = mod read or written as if it hashed gives rows in the wrong bucket.
Each key Paimon declares (:mod:`impl.options.paimon_1_4_2`, generated from Java by
``tests/paimon_java/gen_option_registry.py``) has one line in :data:`CLASSIFIED`:

- ``HONOURED``: impl implements it (its declaration is in :mod:`impl.options.core_options` or
  the module named in the comment);
- ``NO_STORAGE_EFFECT``: an engine or runtime knob that changes neither what is stored nor what
  a read returns (the string says why);
- ``REFUSED_READ``: changes what a read returns and impl does not implement it: refused on read
  and on write (a write reads too: merges, compaction, bucket assignment);
- ``REFUSED_WRITE``: changes what or where a write puts data and impl does not implement it:
  refused on write and on create; reads are fine.

A refused key is refused only when its value differs from Paimon's default (a Java table may
carry ``bucket-function.type`` = default explicitly). Keys of a family (``fields.<f>.<suffix>``,
``file-index.*``, ``orc.*``, ...) are classified by :data:`PATTERNS`. A key Paimon does not
declare (a user's own key) is kept on a table, as Java keeps it; in read options (dynamic
options, Spark ``.option``) a key that looks like a Paimon key and is not one is refused with
the nearest declared key (:func:`check_dynamic_keys`). A few values of honoured keys are
refused the same way (:data:`REFUSED_VALUES`).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from enum import Enum
from typing import Iterable, Mapping

from impl.errors import InvalidOptionError, UnsupportedOptionError
from impl.options.paimon_1_4_2 import DECLARED, PAIMON_VERSION


class OptionKind(Enum):
    """What impl does with a Paimon table option."""

    HONOURED = "honoured"
    NO_STORAGE_EFFECT = "no storage effect"
    REFUSED_READ = "refused read"
    REFUSED_WRITE = "refused write"


H = OptionKind.HONOURED
N = OptionKind.NO_STORAGE_EFFECT
R = OptionKind.REFUSED_READ
W = OptionKind.REFUSED_WRITE

_ENGINE = "an engine's runtime setting"
_MAINTENANCE = "maintenance Paimon's engines run (impl does not run it; reads are not changed)"
_COMPACTION = "which files a compaction picks (the rows a read returns do not change)"
_FLINK_LOOKUP = "Flink's lookup join / lookup compaction cache"
_ICEBERG_OFF = "only with metadata.iceberg.storage = hive-catalog / rest-catalog, which is refused"
_ICEBERG = "impl.options.iceberg (refuses by name what impl's Iceberg metadata cannot describe)"
_ICEBERG_MANIFESTS = "when small Iceberg manifests are merged (impl.iceberg.commit, as Java)"

# key -> (kind, why). One line per key, sorted, so parallel edits merge cleanly.
CLASSIFIED: dict[str, tuple[OptionKind, str]] = {
    "add-column-before-partition": (W, "alter places a new column before the partition columns"),
    "aggregation.remove-record-on-delete": (R, "aggregation: a -D row removes the whole row"),
    "alter-column-null-to-not-null.disabled": (N, "a schema-change guard"),
    "async-file-write": (N, _ENGINE),
    "auto-create": (N, _ENGINE),
    "batch-scan-mode": (R, "forces a scan kind (Paimon-internal)"),
    "blob-as-descriptor": (R, "blob columns as descriptors"),
    "blob-descriptor-field": (R, "blob columns stored as descriptors"),
    "blob-external-storage-field": (R, "blob data in external storage"),
    "blob-external-storage-path": (R, "blob data in external storage"),
    "blob-field": (R, "blob columns in separate blob files"),
    "blob.split-by-file-size": (N, "split planning of blob tables"),
    "blob.target-file-size": (N, "file sizes of blob tables"),
    "branch": (H, ""),
    "bucket": (H, ""),
    "bucket-append-ordered": (N, "row order of an append read only"),
    "bucket-function.type": (H, ""),
    "bucket-key": (H, ""),
    "cache-page-size": (N, _ENGINE),
    "chain-table.chain-partition-keys": (R, "chain tables"),
    "chain-table.enabled": (R, "chain tables read partitions from other branches"),
    "changelog-file.compression": (N, "readers take the codec from the file"),
    "changelog-file.format": (N, "readers take the format from the file name's extension"),
    "changelog-file.prefix": (H, ""),
    "changelog-file.stats-mode": (N, "column statistics of changelog files only"),
    "changelog-producer": (H, ""),
    "changelog-producer.row-deduplicate": (W, "the changelog a write produces"),
    "changelog-producer.row-deduplicate-ignore-fields": (W, "the changelog a write produces"),
    "changelog.num-retained.max": (W, "expiration keeps changelog files past their snapshots"),
    "changelog.num-retained.min": (W, "expiration keeps changelog files past their snapshots"),
    "changelog.time-retained": (W, "expiration keeps changelog files past their snapshots"),
    "clustering.columns": (N, "row order inside files only"),
    "clustering.history-partition.idle-to-full-sort": (N, "row order inside files only"),
    "clustering.history-partition.limit": (N, "row order inside files only"),
    "clustering.incremental": (N, "row order inside files only"),
    "clustering.incremental.mode": (N, "row order inside files only"),
    "clustering.incremental.optimize-write": (N, "row order inside files only"),
    "clustering.strategy": (N, "row order inside files only"),
    "commit.callback.#.param": (N, "Java callbacks after a commit"),
    "commit.callbacks": (N, "Java callbacks after a commit"),
    "commit.discard-duplicate-files": (N, "a commit's duplicate-file check"),
    "commit.force-compact": (N, _COMPACTION),
    "commit.force-create-snapshot": (N, "empty streaming commits"),
    "commit.max-retries": (H, ""),
    "commit.max-retry-wait": (H, ""),
    "commit.min-retry-wait": (H, ""),
    "commit.strict-mode.last-safe-snapshot": (W, "a commit refuses when other writers committed"),
    "commit.timeout": (H, ""),
    "commit.user-prefix": (N, "names of commit users"),
    "compaction.delete-ratio-threshold": (N, _COMPACTION),
    "compaction.file-num-limit": (N, _COMPACTION),
    "compaction.force-rewrite-all-files": (N, _COMPACTION),
    "compaction.force-up-level-0": (N, _COMPACTION),
    "compaction.incremental-size-threshold": (N, _COMPACTION),
    "compaction.max-size-amplification-percent": (H, ""),
    "compaction.min.file-num": (H, ""),
    "compaction.offpeak-ratio": (N, _COMPACTION),
    "compaction.offpeak.end.hour": (N, _COMPACTION),
    "compaction.offpeak.start.hour": (N, _COMPACTION),
    "compaction.optimization-interval": (N, _COMPACTION),
    "compaction.size-ratio": (H, ""),
    "compaction.total-size-threshold": (N, _COMPACTION),
    "consumer-id": (R, "a read records its progress in a consumer file"),
    "consumer.changelog-only": (N, "only with consumer-id"),
    "consumer.expiration-time": (N, "only with consumer-id"),
    "consumer.ignore-progress": (N, "only with consumer-id"),
    "consumer.mode": (N, "only with consumer-id"),
    "continuous.discovery-interval": (N, _ENGINE),
    "cross-partition-upsert.bootstrap-parallelism": (N, _ENGINE),
    "cross-partition-upsert.index-ttl": (W, "the key index forgets keys: a key moving later is not deleted from its old partition"),
    "data-evolution.enabled": (H, ""),
    "data-file.external-paths": (W, "data files under external paths"),
    "data-file.external-paths.specific-fs": (N, "only with data-file.external-paths"),
    "data-file.external-paths.strategy": (W, "data files under external paths"),
    "data-file.external-paths.weights": (N, "only with data-file.external-paths"),
    "data-file.path-directory": (H, ""),
    "data-file.prefix": (H, ""),
    "data-file.thin-mode": (H, ""),
    "delete.force-produce-changelog": (N, "Flink's DELETE statement"),
    "deletion-vector.index-file.target-size": (N, "sizes of deletion-vector index files"),
    "deletion-vectors.bitmap64": (H, ""),
    "deletion-vectors.enabled": (H, ""),
    "deletion-vectors.modifiable": (W, "modifiable deletion vectors"),
    "disable-explicit-type-casting": (N, "a schema-change guard"),
    "dynamic-bucket.assigner-parallelism": (N, _ENGINE),
    "dynamic-bucket.initial-buckets": (H, ""),
    "dynamic-bucket.max-buckets": (H, ""),
    "dynamic-bucket.target-row-num": (H, ""),
    "dynamic-partition-overwrite": (H, ""),
    "end-input.check-partition-expire": (N, _MAINTENANCE),
    "fields.default-aggregate-function": (H, ""),
    "file-index.in-manifest-threshold": (H, "impl.fileindex.options"),
    "file-index.read.enabled": (H, "impl.fileindex.options"),
    "file-operation.thread-num": (N, _ENGINE),
    "file-reader-async-threshold": (N, _ENGINE),
    "file.block-size": (N, "row group / stripe sizes inside files"),
    "file.compression": (H, ""),
    "file.compression.per.level": (H, "impl.options.write_formats"),
    "file.compression.zstd-level": (H, ""),
    "file.format": (H, ""),
    "file.format.per.level": (H, "impl.options.write_formats"),
    "file.suffix.include.compression": (H, ""),
    "force-lookup": (N, _COMPACTION),
    "format-table.commit-hive-sync-url": (N, "format tables (type format-table, refused)"),
    "format-table.file.compression": (N, "format tables (type format-table, refused)"),
    "format-table.implementation": (N, "format tables (type format-table, refused)"),
    "format-table.partition-path-only-value": (N, "format tables (type format-table, refused)"),
    "full-compaction.delta-commits": (N, _COMPACTION),
    "global-index.build.max-parallelism": (N, _ENGINE),
    "global-index.build.max-shard": (N, _ENGINE),
    "global-index.column-update-action": (W, "updates of globally indexed columns"),
    "global-index.enabled": (N, "scans may use global indexes (impl reads without them)"),
    "global-index.external-path": (W, "global index files under another path"),
    "global-index.row-count-per-shard": (N, _ENGINE),
    "global-index.thread-num": (N, _ENGINE),
    "ignore-delete": (H, ""),
    "ignore-update-before": (W, "a write drops -U rows"),
    "incremental-between": (H, ""),
    "incremental-between-scan-mode": (R, "what an incremental read returns (impl: auto only)"),
    "incremental-between-tag-to-snapshot": (R, "incremental reads between tags"),
    "incremental-between-timestamp": (R, "incremental reads between times"),
    "incremental-to-auto-tag": (R, "incremental reads to an auto tag"),
    "index-file-in-data-file-dir": (H, ""),  # true refused on tables with index files (impl.store.core)
    "key-value.sequence_number.enabled": (R, "reads add _SEQUENCE_NUMBER"),
    "local-merge-buffer-size": (N, _ENGINE),
    "local-sort.max-num-file-handles": (N, _ENGINE),
    "lookup-compact": (N, _FLINK_LOOKUP),
    "lookup-compact.max-interval": (N, _FLINK_LOOKUP),
    "lookup-wait": (N, _FLINK_LOOKUP),
    "lookup.cache-file-retention": (N, _FLINK_LOOKUP),
    "lookup.cache-max-disk-size": (N, _FLINK_LOOKUP),
    "lookup.cache-max-memory-size": (N, _FLINK_LOOKUP),
    "lookup.cache-spill-compression": (N, _FLINK_LOOKUP),
    "lookup.cache.bloom.filter.enabled": (N, _FLINK_LOOKUP),
    "lookup.cache.bloom.filter.fpp": (N, _FLINK_LOOKUP),
    "lookup.cache.high-priority-pool-ratio": (N, _FLINK_LOOKUP),
    "lookup.hash-load-factor": (N, _FLINK_LOOKUP),
    "lookup.merge-buffer-size": (N, _FLINK_LOOKUP),
    "lookup.merge-records-threshold": (N, _FLINK_LOOKUP),
    "lookup.remote-file.enabled": (N, _FLINK_LOOKUP),
    "lookup.remote-file.level-threshold": (N, _FLINK_LOOKUP),
    "manifest.compression": (H, "impl.manifest.manifest_file (codec of the metadata files written; readers take "
                                "it from the Avro file header)"),
    "manifest.delete-file-drop-stats": (N, "statistics of DELETE manifest entries only"),
    "manifest.format": (H, "impl.manifest.manifest_file"),
    "manifest.full-compaction-threshold-size": (H, ""),
    "manifest.merge-min-count": (H, ""),
    "manifest.target-file-size": (H, ""),
    "materialized-table.definition-query": (N, "Flink materialized-table metadata"),
    "materialized-table.interval-freshness": (N, "Flink materialized-table metadata"),
    "materialized-table.interval-freshness.time-unit": (N, "Flink materialized-table metadata"),
    "materialized-table.logical-refresh-mode": (N, "Flink materialized-table metadata"),
    "materialized-table.refresh-handler-bytes": (N, "Flink materialized-table metadata"),
    "materialized-table.refresh-handler-description": (N, "Flink materialized-table metadata"),
    "materialized-table.refresh-mode": (N, "Flink materialized-table metadata"),
    "materialized-table.refresh-status": (N, "Flink materialized-table metadata"),
    "merge-engine": (H, ""),
    "metadata.iceberg.compaction.max.file-num": (H, _ICEBERG_MANIFESTS),
    "metadata.iceberg.compaction.min.file-num": (H, _ICEBERG_MANIFESTS),
    "metadata.iceberg.database": (N, _ICEBERG_OFF),
    "metadata.iceberg.delete-after-commit.enabled": (H, _ICEBERG),
    "metadata.iceberg.format-version": (H, _ICEBERG),
    "metadata.iceberg.glue.skip-archive": (N, _ICEBERG_OFF),
    "metadata.iceberg.hadoop-conf-dir": (N, _ICEBERG_OFF),
    "metadata.iceberg.hive-client-class": (N, _ICEBERG_OFF),
    "metadata.iceberg.hive-conf-dir": (N, _ICEBERG_OFF),
    "metadata.iceberg.hive-skip-update-stats": (N, _ICEBERG_OFF),
    "metadata.iceberg.manifest-compression": (H, _ICEBERG),
    "metadata.iceberg.manifest-legacy-version": (H, _ICEBERG),
    "metadata.iceberg.previous-versions-max": (H, _ICEBERG),
    "metadata.iceberg.storage": (H, _ICEBERG),
    "metadata.iceberg.storage-location": (H, _ICEBERG),
    "metadata.iceberg.table": (N, _ICEBERG_OFF),
    "metadata.iceberg.uri": (N, _ICEBERG_OFF),
    "metadata.stats-dense-store": (N, "readers take either form of manifest statistics"),
    "metadata.stats-keep-first-n-columns": (N, "column statistics only (readers handle missing ones)"),
    "metadata.stats-mode": (H, ""),
    "metadata.stats-mode.per.level": (N, "column statistics only (readers handle missing ones)"),
    "metastore.partitioned-table": (N, "Hive metastore metadata"),
    "metastore.tag-to-partition": (N, "Hive metastore metadata"),
    "metastore.tag-to-partition.preview": (N, "Hive metastore metadata"),
    "num-levels": (H, ""),
    "num-sorted-run.compaction-trigger": (H, ""),
    "num-sorted-run.stop-trigger": (H, ""),
    "orc.column.encoding.direct": (H, "impl.options.write_formats"),
    "orc.dictionary.key.threshold": (H, "impl.options.write_formats"),
    "orc.timestamp-ltz.legacy.type": (H, "impl.options.write_formats"),
    "overwrite-upgrade": (N, "levels of files after an overwrite"),
    "page-size": (N, _ENGINE),
    "parquet.enable.dictionary": (N, "encoding inside Parquet files"),
    "partial-update.remove-record-on-delete": (H, ""),
    "partial-update.remove-record-on-sequence-group": (R, "partial-update: a -D of a group removes the row"),
    "partition": (W, "partition keys given as an option at create (impl takes them as arguments)"),
    "partition.default-name": (H, ""),
    "partition.end-input-to-done": (N, _MAINTENANCE),
    "partition.expiration-batch-size": (N, _MAINTENANCE),
    "partition.expiration-check-interval": (N, _MAINTENANCE),
    "partition.expiration-max-num": (N, _MAINTENANCE),
    "partition.expiration-strategy": (N, _MAINTENANCE),
    "partition.expiration-time": (N, _MAINTENANCE),
    "partition.idle-time-to-report-statistic": (N, _MAINTENANCE),
    "partition.legacy-name": (H, ""),
    "partition.mark-done-action": (N, _MAINTENANCE),
    "partition.mark-done-action.custom.class": (N, _MAINTENANCE),
    "partition.mark-done-action.http.params": (N, _MAINTENANCE),
    "partition.mark-done-action.http.url": (N, _MAINTENANCE),
    "partition.sink-strategy": (N, _ENGINE),
    "partition.timestamp-format.strict": (N, _MAINTENANCE),
    "partition.timestamp-formatter": (N, _MAINTENANCE),
    "partition.timestamp-pattern": (N, _MAINTENANCE),
    "path": (N, "the table's location, given by the catalog"),
    "pk-clustering-override": (R, "primary-key files sorted by other columns"),
    "postpone.batch-write-fixed-bucket": (N, "impl's writes land in bucket-postpone, which Paimon reads"),
    "postpone.batch-write-fixed-bucket.max-parallelism": (N, _ENGINE),
    "postpone.default-bucket-num": (H, ""),
    "primary-key": (W, "primary keys given as an option at create (impl takes them as arguments)"),
    "query-auth.enabled": (N, "a catalog's permission check"),
    "read.batch-size": (N, _ENGINE),
    "record-level.expire-time": (R, "expired records are dropped"),
    "record-level.time-field": (R, "expired records are dropped"),
    "row-tracking.enabled": (H, ""),
    "rowkind.field": (H, ""),
    "scan.bounded.watermark": (R, "where a bounded stream read ends"),
    "scan.creation-time-millis": (R, "where a read starts"),
    "scan.fallback-branch": (H, ""),
    "scan.fallback-delta-branch": (R, "chain tables"),
    "scan.fallback-snapshot-branch": (R, "chain tables"),
    "scan.file-creation-time-millis": (R, "a read skips older files"),
    "scan.ignore-corrupt-files": (N, "impl raises on a corrupt file (never a wrong answer)"),
    "scan.ignore-lost-files": (N, "impl raises on a lost file (never a wrong answer)"),
    "scan.manifest.parallelism": (N, _ENGINE),
    "scan.max-splits-per-task": (N, _ENGINE),
    "scan.mode": (H, ""),
    "scan.plan-sort-partition": (N, "order of splits only"),
    "scan.primary-branch": (R, "partitions are read from another branch"),
    "scan.snapshot-id": (H, ""),
    "scan.tag-name": (H, ""),
    "scan.timestamp": (R, "where a read starts"),
    "scan.timestamp-millis": (H, ""),
    "scan.version": (H, ""),
    "scan.watermark": (R, "where a read starts"),
    "sequence.field": (H, ""),
    "sequence.field.sort-order": (H, ""),
    "sink.process-time-zone": (N, _ENGINE),
    "sink.watermark-time-zone": (N, _ENGINE),
    "snapshot.clean-empty-directories": (H, ""),
    "snapshot.expire.execution-mode": (N, _ENGINE),
    "snapshot.expire.limit": (H, ""),
    "snapshot.ignore-empty-commit": (N, "empty commits"),
    "snapshot.num-retained.max": (H, ""),
    "snapshot.num-retained.min": (H, ""),
    "snapshot.time-retained": (H, ""),
    "snapshot.watermark-idle-timeout": (N, _ENGINE),
    "sort-compaction.local-sample.magnification": (N, _ENGINE),
    "sort-compaction.range-strategy": (N, _ENGINE),
    "sort-engine": (N, _ENGINE),
    "sort-spill-buffer-size": (H, ""),
    "sort-spill-threshold": (H, ""),
    "source.split.open-file-cost": (H, ""),
    "source.split.target-size": (H, ""),
    "spill-compression": (H, ""),
    "spill-compression.zstd-level": (H, ""),
    "stream-scan-mode": (R, "forces a scan kind (Paimon-internal)"),
    "streaming-read-append-overwrite": (H, ""),
    "streaming-read-overwrite": (H, ""),
    "streaming.read.snapshot.delay": (N, _ENGINE),
    "table-read.sequence-number.enabled": (R, "reads add _SEQUENCE_NUMBER"),
    "tag.automatic-completion": (N, "only with tag.automatic-creation"),
    "tag.automatic-creation": (W, "commits create tags"),
    "tag.batch.customized-name": (W, "batch writes create a tag"),
    "tag.callback.#.param": (N, "Java callbacks after a tag"),
    "tag.callbacks": (N, "Java callbacks after a tag"),
    "tag.create-success-file": (N, "only with tag.automatic-creation"),
    "tag.creation-delay": (N, "only with tag.automatic-creation"),
    "tag.creation-period": (N, "only with tag.automatic-creation"),
    "tag.creation-period-duration": (N, "only with tag.automatic-creation"),
    "tag.default-time-retained": (W, "new tags carry a retention time"),
    "tag.num-retained-max": (N, "only with tag.automatic-creation"),
    "tag.period-formatter": (N, "only with tag.automatic-creation"),
    "tag.time-expire-enabled": (N, "only with tag retention times"),
    "target-file-size": (H, ""),
    "type": (R, "format and object tables"),
    "upsert-key": (W, "writes of an append table upsert"),
    "variant.inferShreddingSchema": (R, "shredded variant columns"),
    "variant.shredding.maxInferBufferRow": (N, "only with variant.inferShreddingSchema"),
    "variant.shredding.maxSchemaDepth": (N, "only with variant.inferShreddingSchema"),
    "variant.shredding.maxSchemaWidth": (N, "only with variant.inferShreddingSchema"),
    "variant.shredding.minFieldCardinalityRatio": (N, "only with variant.inferShreddingSchema"),
    "variant.shreddingSchema": (R, "shredded variant columns"),
    "vector-field": (R, "vector columns in separate files"),
    "vector.file.format": (R, "vector columns in separate files"),
    "vector.target-file-size": (N, "only with vector-field"),
    "visibility-callback.check-interval": (N, _ENGINE),
    "visibility-callback.enabled": (N, _ENGINE),
    "visibility-callback.timeout": (N, _ENGINE),
    "write-buffer-for-append": (N, _ENGINE),
    "write-buffer-size": (H, ""),
    "write-buffer-spill.max-disk-size": (H, ""),
    "write-buffer-spillable": (H, ""),
    "write-max-writers-to-spill": (N, _ENGINE),
    "write-only": (H, ""),
    "write.batch-memory": (N, _ENGINE),
    "write.batch-size": (N, _ENGINE),
    "zorder.var-length-contribution": (N, _ENGINE),
}

# Keys impl reads that Paimon 1.4.2 does not declare.
IMPL_ONLY: dict[str, tuple[OptionKind, str]] = {
    "comment": (N, "a table comment engines keep in the options"),
    "compaction.max.file-num": (H, "declared by older Paimon releases"),
    "owner": (N, "a table owner engines keep in the options"),
}

# Values of honoured keys that impl does not implement: refused like a key of that kind. A batch
# read ignores scan.mode for the modes that equal an option impl reads (from-snapshot with
# scan.snapshot-id, ...); these start elsewhere (the latest COMPACT snapshot, a creation time).
REFUSED_VALUES: dict[str, tuple[frozenset[str], OptionKind, str]] = {
    "scan.mode": (frozenset({"compacted-full", "from-creation-timestamp", "from-file-creation-time", "latest-delta"}),
                  R, "a batch read from this start"),
}

# Families of keys, by full-key pattern; the first match classifies.
PATTERNS: tuple[tuple[re.Pattern[str], OptionKind, str], ...] = (
    (re.compile(r"fields\..+\.(aggregate-function|ignore-retract|list-agg-delimiter|sequence-group)"), H,
     "impl.options.core_options FIELD_OPTIONS"),
    (re.compile(r"fields\..+\.stats-mode"), N, "column statistics only (readers handle missing ones)"),
    (re.compile(r"fields\..+\.[^.]+"), R, "a per-field option impl does not implement"),
    (re.compile(r"file-index\..+"), H, "impl.fileindex.options"),
    (re.compile(r"(orc|avro)\..+"), H, "impl.options.write_formats (refuses the keys it does not implement)"),
    (re.compile(r"parquet\..+"), N, "encoding inside Parquet files"),
    (re.compile(r"(commit|tag)\.callback\..+\.param"), N, "Java callbacks"),
    (re.compile(r"metadata\.iceberg\..+"), N, _ICEBERG_OFF),
    (re.compile(r"lookup\..+"), N, _FLINK_LOOKUP),
)

_DEFAULTS: dict[str, str | None] = {key: default for key, default, _fb, _cls, _desc in DECLARED}
DECLARED_KEYS = frozenset(_DEFAULTS)
# fallback key -> the key it stands for (``write.compaction-skip`` -> ``write-only``); a fallback
# that is itself declared (``file.compression`` of ``format-table.file.compression``) keeps its own
_FALLBACKS: dict[str, str] = {fb: key for key, _d, fallbacks, _cls, _desc in DECLARED for fb in fallbacks
                              if fb not in DECLARED_KEYS}
# first segments of declared keys with a dot ("scan", "snapshot", ...): a key in one of these
# families that Paimon does not declare is most likely a misspelling
_FAMILIES = frozenset(k.split(".", 1)[0] for k in DECLARED_KEYS if "." in k)


@dataclass(frozen=True)
class Classification:
    """What impl does with one key: its kind, why, and Paimon's default (None: no default)."""

    key: str
    kind: OptionKind
    reason: str
    default: str | None


def classify(key: str) -> Classification | None:
    """The classification of ``key`` (a fallback key as its main key), or None for a key Paimon
    does not declare (a user's own key: kept, as Java keeps it)."""
    main = _FALLBACKS.get(key, key)
    if main in CLASSIFIED:
        kind, reason = CLASSIFIED[main]
        return Classification(main, kind, reason, _DEFAULTS.get(main))
    if main in IMPL_ONLY:
        kind, reason = IMPL_ONLY[main]
        return Classification(main, kind, reason, None)
    for pattern, kind, reason in PATTERNS:
        if pattern.fullmatch(key):
            return Classification(key, kind, reason, None)
    return None


def _normal(value: object) -> str:
    return "".join(str(value).split()).lower()


def _differs_from_default(c: Classification, value: object) -> bool:
    return c.default is None or _normal(value) != _normal(c.default)


def refused(options: Mapping[str, object], *, write: bool) -> list[tuple[Classification, str]]:
    """The refused keys of ``options`` set to a value other than Paimon's default, with their
    values, sorted by key: REFUSED_READ keys, and with ``write`` REFUSED_WRITE keys too."""
    kinds = (R, W) if write else (R,)
    found = []
    for key in sorted(options):
        c = classify(key)
        value = options[key]
        if c is None or value is None:
            continue
        if c.kind in kinds and _differs_from_default(c, value):
            found.append((c, str(value)))
        elif c.key in REFUSED_VALUES:
            values, kind, reason = REFUSED_VALUES[c.key]
            if kind in kinds and _normal(value) in values:
                found.append((Classification(c.key, kind, reason, c.default), str(value)))
    return found


def _raise(found: list[tuple[Classification, str]], what: str) -> None:
    if found:
        c, value = found[0]
        raise UnsupportedOptionError(c.key, value, c.kind.value, f"{what}: {c.reason}",
                                     others=[f[0].key for f in found[1:]])


def check_read(options: Mapping[str, object], table: str) -> None:
    """UnsupportedOptionError if a read of ``table`` with these options could return wrong rows."""
    _raise(refused(options, write=False), f"read of {table}")


def check_write(options: Mapping[str, object], table: str) -> None:
    """UnsupportedOptionError if a write of ``table`` with these options could put wrong data
    (called before anything is written)."""
    _raise(refused(options, write=True), f"write of {table}")


def check_create(options: Mapping[str, object], table: str,
                 previous: Mapping[str, object] | None = None) -> None:
    """UnsupportedOptionError for a refused key a new schema sets (create) or changes (alter:
    keys whose value equals ``previous``'s are the table's own and are not refused here)."""
    before = previous or {}
    changed = {k: v for k, v in options.items() if k not in before or str(before[k]) != str(v)}
    _raise(refused(changed, write=True), f"schema of {table}")


def nearest_key(key: str) -> str | None:
    """The declared key closest to ``key`` (a misspelling's intended key), or None."""
    close = difflib.get_close_matches(key, sorted(DECLARED_KEYS | IMPL_ONLY.keys()), n=1, cutoff=0.75)
    return close[0] if close else None


def looks_like_paimon_key(key: str) -> bool:
    """An undeclared ``key`` that is probably a misspelt Paimon key: in a family of declared keys
    (``scan.snapshot-idd``) or close to one (``buckets``)."""
    if classify(key) is not None:
        return False
    return ("." in key and key.split(".", 1)[0] in _FAMILIES) or nearest_key(key) is not None


def check_dynamic_keys(keys: Iterable[str]) -> None:
    """InvalidOptionError naming the first read/dynamic option key that looks like a Paimon key
    but is not one, with the nearest declared key (a misspelt ``scan.snapshot-idd`` must not
    read the latest snapshot)."""
    for key in sorted(keys):
        if looks_like_paimon_key(key):
            near = nearest_key(key)
            hint = f"; did you mean {near!r}?" if near else ""
            raise InvalidOptionError(f"unknown option {key!r}: Paimon {PAIMON_VERSION} declares no such key{hint}")


def counts() -> dict[OptionKind, int]:
    """How many declared keys (of :data:`DECLARED_KEYS`) each kind has."""
    out = dict.fromkeys(OptionKind, 0)
    for key in DECLARED_KEYS:
        c = classify(key)
        if c is not None:
            out[c.kind] += 1
    return out

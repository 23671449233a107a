"""The ``metadata.iceberg.*`` options: which Iceberg metadata a commit writes, and what impl
refuses by name (issue 48, first landing).

impl writes Paimon's Iceberg-compatible metadata (Paimon Java's ``IcebergCommitCallback``) for
``metadata.iceberg.storage`` = ``table-location`` and ``hadoop-catalog``, Iceberg format version
2, on append tables and primary-key tables (as of their compacted files: the files at the
highest level, Java's rule) whose data files are Parquet and whose column types map to Iceberg
primitive types. Everything else that would make the Iceberg view differ from Paimon's rows is
refused by name at create / alter and at commit (:func:`check_iceberg_table`): deletion vectors
(Java exposes them only as Iceberg v3 Puffin deletion vectors, which impl does not write), data
evolution, a Hive or REST catalog, format version 3, legacy (Iceberg 1.4)
manifests, ORC / Avro data files, nested and other types.

Pure rules only (no I/O), so both table creation (``impl.store``) and the commit callback
(``impl.iceberg``) use this one home.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Mapping, Sequence

from impl.data.types import DataField, DataType
from impl.errors import InvalidOptionError, UnsupportedOptionError

STORAGE = "metadata.iceberg.storage"
STORAGE_LOCATION = "metadata.iceberg.storage-location"
FORMAT_VERSION = "metadata.iceberg.format-version"
MANIFEST_COMPRESSION = "metadata.iceberg.manifest-compression"
MANIFEST_LEGACY_VERSION = "metadata.iceberg.manifest-legacy-version"
DELETE_AFTER_COMMIT = "metadata.iceberg.delete-after-commit.enabled"
PREVIOUS_VERSIONS_MAX = "metadata.iceberg.previous-versions-max"
COMPACT_MIN_FILE_NUM = "metadata.iceberg.compaction.min.file-num"
COMPACT_MAX_FILE_NUM = "metadata.iceberg.compaction.max.file-num"

_REFUSED = "refused write"


class IcebergStorage(enum.Enum):
    """Where Paimon keeps Iceberg metadata (``metadata.iceberg.storage``)."""

    DISABLED = "disabled"
    TABLE_LOCATION = "table-location"
    HADOOP_CATALOG = "hadoop-catalog"
    HIVE_CATALOG = "hive-catalog"
    REST_CATALOG = "rest-catalog"


class StorageLocation(enum.Enum):
    """``metadata.iceberg.storage-location``: beside the table (``<table>/metadata``) or in the
    warehouse's ``iceberg/<db>/<table>/metadata`` (Java's default for catalog storages)."""

    TABLE_LOCATION = "table-location"
    CATALOG_STORAGE = "catalog-location"


# Java's inferDefaultMetadataLocation
_DEFAULT_LOCATION = {IcebergStorage.TABLE_LOCATION: StorageLocation.TABLE_LOCATION,
                     IcebergStorage.HADOOP_CATALOG: StorageLocation.CATALOG_STORAGE}

# Iceberg's manifest codec names (Java passes them to Iceberg's Avro writer) -> Avro codec names
_CODECS = {"snappy": "snappy", "gzip": "deflate", "deflate": "deflate", "zstd": "zstandard",
           "uncompressed": "null", "none": "null", "null": "null"}


@dataclass(frozen=True)
class IcebergSettings:
    """The parsed ``metadata.iceberg.*`` options of a table whose commits write Iceberg metadata."""

    storage: IcebergStorage
    location: StorageLocation
    avro_codec: str
    delete_after_commit: bool
    previous_versions_max: int
    # Java's manifest merging: small manifests are merged once there are this many (min), or
    # once they reach the manifest target size together, or this many (max)
    compact_min_file_num: int = 10
    compact_max_file_num: int = 50


def _bool(options: Mapping[str, str], key: str, default: bool) -> bool:
    raw = str(options.get(key, str(default))).strip().lower()
    if raw not in ("true", "false"):
        raise InvalidOptionError(f"option {key!r} = {options.get(key)!r}: expected true or false")
    return raw == "true"


def iceberg_settings(options: Mapping[str, str]) -> IcebergSettings | None:
    """The Iceberg settings of ``options``, or None when ``metadata.iceberg.storage`` is
    disabled (the default). UnsupportedOptionError names a value impl does not write;
    InvalidOptionError a value Paimon does not know."""
    raw = str(options.get(STORAGE, "disabled")).strip().lower()
    try:
        storage = IcebergStorage(raw)
    except ValueError:
        raise InvalidOptionError(f"option {STORAGE!r} = {options.get(STORAGE)!r}: expected one of "
                                 f"{[s.value for s in IcebergStorage]}") from None
    if storage is IcebergStorage.DISABLED:
        return None
    if storage in (IcebergStorage.HIVE_CATALOG, IcebergStorage.REST_CATALOG):
        raise UnsupportedOptionError(STORAGE, raw, _REFUSED, "Iceberg metadata kept in a Hive or REST catalog "
                                     "(impl writes table-location and hadoop-catalog)")
    version = str(options.get(FORMAT_VERSION, "2")).strip()
    if version != "2":
        raise UnsupportedOptionError(FORMAT_VERSION, version, _REFUSED, "Iceberg format versions other than 2")
    if _bool(options, MANIFEST_LEGACY_VERSION, False):
        raise UnsupportedOptionError(MANIFEST_LEGACY_VERSION, "true", _REFUSED, "Iceberg 1.4 (legacy) manifests")
    loc_raw = options.get(STORAGE_LOCATION)
    if loc_raw is None:
        location = _DEFAULT_LOCATION[storage]
    else:
        try:
            location = StorageLocation(str(loc_raw).strip().lower())
        except ValueError:
            raise InvalidOptionError(f"option {STORAGE_LOCATION!r} = {loc_raw!r}: expected one of "
                                     f"{[s.value for s in StorageLocation]}") from None
    codec_raw = str(options.get(MANIFEST_COMPRESSION, "snappy")).strip().lower()
    if codec_raw not in _CODECS:
        raise UnsupportedOptionError(MANIFEST_COMPRESSION, codec_raw, _REFUSED,
                                     f"Iceberg manifest codecs other than {sorted(_CODECS)}")
    return IcebergSettings(storage, location, _CODECS[codec_raw], _bool(options, DELETE_AFTER_COMMIT, True),
                           _count(options, PREVIOUS_VERSIONS_MAX, 0, 0), _count(options, COMPACT_MIN_FILE_NUM, 10, 1),
                           _count(options, COMPACT_MAX_FILE_NUM, 50, 1))


def _count(options: Mapping[str, str], key: str, default: int, least: int) -> int:
    try:
        value = int(str(options.get(key, str(default))).strip())
    except ValueError:
        raise InvalidOptionError(f"option {key!r} = {options.get(key)!r}: expected an integer") from None
    if value < least:
        raise InvalidOptionError(f"option {key!r} = {value}: must be at least {least}")
    return value


_PRIMITIVE = {"BOOLEAN": "boolean", "INT": "int", "BIGINT": "long", "FLOAT": "float", "DOUBLE": "double",
              "DATE": "date", "VARCHAR": "string", "CHAR": "string", "VARBINARY": "binary", "BINARY": "binary"}
# partition values go into Iceberg manifests: only the types whose conversion impl writes
_PARTITION_ROOTS = frozenset({"BOOLEAN", "INT", "BIGINT", "DATE", "VARCHAR", "CHAR"})


def iceberg_type(t: DataType) -> str | None:
    """Iceberg's type string of a Paimon type, or None where impl does not map it. TIMESTAMP
    precisions 4-6 only: Iceberg's timestamps are microseconds (Java refuses the others too)."""
    if t.root in _PRIMITIVE:
        return _PRIMITIVE[t.root]
    if t.root == "DECIMAL":
        return f"decimal({t.precision}, {t.scale})"
    if t.root in ("TIMESTAMP", "TIMESTAMP_LTZ") and t.precision is not None and 4 <= t.precision <= 6:
        return "timestamp" if t.root == "TIMESTAMP" else "timestamptz"
    return None


def check_iceberg_table(options: Mapping[str, str], primary_keys: Sequence[str], fields: Sequence[DataField],
                        partition_keys: Sequence[str], table: str) -> IcebergSettings | None:
    """The Iceberg settings of a table, after refusing by name what impl's Iceberg metadata
    cannot describe truthfully (UnsupportedOptionError on ``metadata.iceberg.storage``).
    A primary-key table (``primary_keys``) is accepted: its view is its highest-level files,
    which hold merged rows whatever the merge engine; with deletion vectors it is refused."""
    settings = iceberg_settings(options)
    if settings is None:
        return None
    value = settings.storage.value

    def refuse(why: str) -> UnsupportedOptionError:
        return UnsupportedOptionError(STORAGE, value, _REFUSED, f"{table}: Iceberg metadata of {why}")

    if _bool(options, "deletion-vectors.enabled", False):
        # Java exposes deletion vectors only with deletion-vectors.bitmap64 and Iceberg format
        # version 3 (Puffin deletion vectors); without them its view of such a table is not its rows
        raise refuse("a table with deletion vectors (Java's Iceberg v3 Puffin deletion vectors are not written "
                     "by impl)")
    if _bool(options, "data-evolution.enabled", False):
        raise refuse("a data-evolution table (its files hold some columns only)")
    fmt = str(options.get("file.format", "parquet")).strip().lower()
    if fmt != "parquet":
        raise refuse(f"{fmt} data files (impl writes it for Parquet data files)")
    for f in fields:
        if iceberg_type(f.type) is None:
            raise refuse(f"column {f.name!r} of type {f.type} (no Iceberg type impl maps it to)")
        if f.name in partition_keys and f.type.root not in _PARTITION_ROOTS:
            raise refuse(f"partition column {f.name!r} of type {f.type} (partition types impl writes: "
                         f"{sorted(_PARTITION_ROOTS)})")
    return settings

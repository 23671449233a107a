"""The ``file-index.*`` table options (Paimon's ``FileIndexOptions``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from impl.options.values import parse_bool, parse_memory_size

PREFIX = "file-index."
COLUMNS_SUFFIX = ".columns"
IN_MANIFEST_THRESHOLD_KEY = "file-index.in-manifest-threshold"
READ_ENABLED_KEY = "file-index.read.enabled"
DEFAULT_IN_MANIFEST_THRESHOLD_BYTES = 500


@dataclass(frozen=True)
class FileIndexSpec:
    """Which indexes a table's data files carry and where they go.

    ``columns``: column -> index type -> that index's options (``file-index.<type>.<column>.<key>``),
    in option order. ``in_manifest_threshold_bytes``: an index blob up to this size is embedded in
    the manifest entry, a larger one written as ``<data-file>.index``. ``read_enabled``: whether
    scans use indexes to skip files.
    """

    columns: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)
    in_manifest_threshold_bytes: int = DEFAULT_IN_MANIFEST_THRESHOLD_BYTES
    read_enabled: bool = True

    @property
    def empty(self) -> bool:
        return not self.columns

    @staticmethod
    def from_options(raw: Mapping[str, str]) -> "FileIndexSpec":
        columns: dict[str, dict[str, dict[str, str]]] = {}
        for key, value in raw.items():
            if key.startswith(PREFIX) and key.endswith(COLUMNS_SUFFIX):
                index_type = key[len(PREFIX):-len(COLUMNS_SUFFIX)]
                for name in str(value).split(","):
                    if name.strip():
                        columns.setdefault(name.strip(), {}).setdefault(index_type, {})
        for key, value in raw.items():
            if not key.startswith(PREFIX) or key.endswith(COLUMNS_SUFFIX):
                continue
            parts = key[len(PREFIX):].split(".")
            if len(parts) == 3 and parts[1] in columns and parts[0] in columns[parts[1]]:
                columns[parts[1]][parts[0]][parts[2]] = str(value)
        threshold = raw.get(IN_MANIFEST_THRESHOLD_KEY)
        enabled = raw.get(READ_ENABLED_KEY)
        return FileIndexSpec(
            columns=columns,
            in_manifest_threshold_bytes=(DEFAULT_IN_MANIFEST_THRESHOLD_BYTES if threshold is None
                                         else parse_memory_size(IN_MANIFEST_THRESHOLD_KEY, threshold)),
            read_enabled=True if enabled is None else parse_bool(READ_ENABLED_KEY, enabled),
        )

"""The ``file-index.*`` table options (Paimon's ``FileIndexOptions``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from impl.options import core_options as co
from impl.options.parsed import ParsedOptions

PREFIX = "file-index."
COLUMNS_SUFFIX = ".columns"


@dataclass(frozen=True)
class FileIndexSpec:
    """Which indexes a table's data files carry and where they go.

    ``columns``: column -> index type -> that index's options (``file-index.<type>.<column>.<key>``),
    in option order. ``in_manifest_threshold_bytes``: an index blob up to this size is embedded in
    the manifest entry, a larger one written as ``<data-file>.index``. ``read_enabled``: whether
    scans use indexes to skip files.
    """

    columns: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)
    in_manifest_threshold_bytes: int = co.FILE_INDEX_IN_MANIFEST_THRESHOLD.default
    read_enabled: bool = co.FILE_INDEX_READ_ENABLED.default

    @property
    def empty(self) -> bool:
        return not self.columns

    @staticmethod
    def from_options(options: Mapping[str, object]) -> "FileIndexSpec":
        """The file indexes an option map asks for (see :meth:`from_parsed`)."""
        return FileIndexSpec.from_parsed(ParsedOptions.of(options))

    @staticmethod
    def from_parsed(options: ParsedOptions) -> "FileIndexSpec":
        """The file indexes of a table's parsed options (InvalidOptionError on a malformed
        threshold or read switch)."""
        raw = options.with_prefix(PREFIX)
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
        return FileIndexSpec(
            columns=columns,
            in_manifest_threshold_bytes=options[co.FILE_INDEX_IN_MANIFEST_THRESHOLD],
            read_enabled=options[co.FILE_INDEX_READ_ENABLED],
        )

"""Names of the data files a table writes (``data-<uuid>-<n>.parquet``, ``changelog-<uuid>-<n>.parquet``)."""

from __future__ import annotations

from impl.fs.paths import FileNamer


class DataFileNamer(FileNamer):
    """One uuid per writer, a counter per file, as Paimon's DataFilePathFactory names them."""

    def __init__(self, prefix: str = "data-", suffix: str = ".parquet"):
        super().__init__(prefix, suffix)

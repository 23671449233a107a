"""Names of the data files a table writes (``data-<uuid>-<n>.parquet``, ``changelog-<uuid>-<n>.parquet``)."""

from __future__ import annotations

import itertools
import threading
import uuid


class DataFileNamer:
    """One uuid per writer, a counter per file, as Paimon's DataFilePathFactory names them."""

    def __init__(self, prefix: str = "data-", suffix: str = ".parquet"):
        self._prefix = prefix
        self._suffix = suffix
        self._uuid = str(uuid.uuid4())
        self._counter = itertools.count()
        self._lock = threading.Lock()

    def next(self) -> str:
        with self._lock:
            n = next(self._counter)
        return f"{self._prefix}{self._uuid}-{n}{self._suffix}"

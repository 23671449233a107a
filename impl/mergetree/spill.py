"""Spilled sorted runs of a merge-tree writer: Arrow IPC files on local temp disk.

With ``write-buffer-spillable``, a writer whose buffer the shared pool preempts does not write
a level-0 file: it merges its buffer (one row per key, retractions kept, exactly what a level-0
file would hold) and spills it to local disk as a *sorted run*. At the next flush the spilled
runs and the buffer are merged with the bounded k-way merge of compaction
(:func:`impl.mergetree.read.iter_merged_runs`) into level-0 files rolling at
``target-file-size``: fewer, larger level-0 files than one per preemption, with memory bounded
by the merge's budget (one spilled batch per run; the batches are sized to share it).

Spill files live in a directory of their own (``paimon-spill-*``) under the spill directory
(default :func:`tempfile.gettempdir`), never in the table directory; a run's file is deleted
once merged, and the directory when the writer closes, aborts or fails. Files are Arrow IPC
with ``spill-compression`` (zstd by default, as Paimon), written and read back in batches of
about ``sort-spill-buffer-size`` / ``sort-spill-threshold`` bytes, through plain file reads
(no memory map, whose touched pages would count against the process's resident memory).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from typing import Iterable, Iterator

import pyarrow as pa
import pyarrow.ipc as ipc

from impl.errors import FileIOError

SPILL_DIR_PREFIX = "paimon-spill-"


@dataclass(frozen=True)
class SpillConfig:
    """How and where the writers of one table write spill sorted runs.

    ``directory``: the local directory spill directories are made in (None: the system temp
    directory). ``max_runs``: spilled runs that make a writer merge them into level-0 files;
    ``max_disk_bytes``: the same by their bytes on disk (None: no limit). ``batch_bytes``: bytes
    of rows per IPC batch (what the merge holds per run).
    """

    max_runs: int
    batch_bytes: int
    compression: str = "zstd"
    zstd_level: int = 1
    max_disk_bytes: int | None = None
    directory: str | None = None

    def __post_init__(self) -> None:
        if self.max_runs < 2:
            raise ValueError(f"max_runs must be >= 2, got {self.max_runs}")
        if self.batch_bytes <= 0:
            raise ValueError(f"batch_bytes must be > 0, got {self.batch_bytes}")

    def write_options(self) -> ipc.IpcWriteOptions:
        if self.compression == "none":
            return ipc.IpcWriteOptions()
        codec = "lz4" if self.compression == "lz4" else "zstd"
        level = self.zstd_level if codec == "zstd" else None
        return ipc.IpcWriteOptions(compression=pa.Codec(codec, compression_level=level))


@dataclass(frozen=True)
class SpilledRun:
    """One spilled sorted run: its file, rows and bytes on disk."""

    path: str
    rows: int
    size: int

    def batches(self) -> Iterator[pa.Table]:
        """The run's rows in key order, one IPC batch at a time."""
        with pa.OSFile(self.path, "rb") as source:
            reader = ipc.open_file(source)
            for i in range(reader.num_record_batches):
                yield pa.Table.from_batches([reader.get_batch(i)])


class SpillDirectory:
    """The spill files of one writer: a private directory made on first use, removed by :meth:`clear`."""

    def __init__(self, config: SpillConfig):
        self.config = config
        self._dir: str | None = None
        self.runs: list[SpilledRun] = []

    @property
    def path(self) -> str | None:
        """The directory, once made."""
        return self._dir

    @property
    def disk_bytes(self) -> int:
        return sum(r.size for r in self.runs)

    def full(self) -> bool:
        """True when the runs should be merged now (``sort-spill-threshold`` or disk size reached)."""
        limit = self.config.max_disk_bytes
        return len(self.runs) >= self.config.max_runs or (limit is not None and self.disk_bytes >= limit)

    def spill(self, pieces: Iterable[pa.Table], schema: pa.Schema, row_bytes: float) -> SpilledRun | None:
        """Write ``pieces`` (one sorted run, in order) as a spill file; None if they hold no rows.

        On any failure the partial file is removed and :class:`FileIOError` (for OS errors) raised.
        """
        if self._dir is None:
            base = self.config.directory or tempfile.gettempdir()
            try:
                os.makedirs(base, exist_ok=True)
                self._dir = tempfile.mkdtemp(prefix=SPILL_DIR_PREFIX, dir=base)
            except OSError as e:
                raise FileIOError(f"cannot make a spill directory under {base}: {e}") from e
        batch_rows = max(1, int(self.config.batch_bytes / max(row_bytes, 1.0)))
        fd, path = tempfile.mkstemp(prefix="run-", suffix=".arrow", dir=self._dir)
        os.close(fd)
        rows = 0
        try:
            with pa.OSFile(path, "wb") as sink:
                with ipc.new_file(sink, schema, options=self.config.write_options()) as writer:
                    for piece in pieces:
                        if piece.schema != schema:
                            piece = piece.cast(schema)
                        writer.write_table(piece, max_chunksize=batch_rows)
                        rows += piece.num_rows
            size = os.path.getsize(path)
        except OSError as e:
            _remove(path)
            raise FileIOError(f"cannot spill a sorted run to {path}: {e}") from e
        except BaseException:
            _remove(path)
            raise
        if rows == 0:
            _remove(path)
            return None
        run = SpilledRun(path, rows, size)
        self.runs.append(run)
        return run

    def take_runs(self) -> list[SpilledRun]:
        """The spilled runs, oldest first; they are no longer this directory's to track."""
        runs, self.runs = self.runs, []
        return runs

    @staticmethod
    def delete(runs: Iterable[SpilledRun]) -> None:
        for r in runs:
            _remove(r.path)

    def clear(self) -> None:
        """Delete every spill file and the directory (never raises)."""
        self.runs = []
        d, self._dir = self._dir, None
        if d is not None:
            shutil.rmtree(d, ignore_errors=True)


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass

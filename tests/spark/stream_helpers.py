"""Helpers for the streaming sink tests: input files that replay, and a committer that dies.

Registered pickle-by-value by the tests, so Spark's Python workers get the classes without
importing this module.
"""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq
from fsspec.implementations.local import LocalFileSystem

from impl.spark.source import PaimonDataSource
from impl.spark.stream_writer import PaimonStreamWriter, make_stream_sink

# where the committer dies (the storage operation of a micro-batch's commit it dies at)
CRASH_POINTS = {
    "before_commit": "at its first write of a manifest: the batch's files are written, nothing of its commit is",
    "before_publish": "after writing the manifests and lists, before the snapshot is published",
    "after_publish": "right after its snapshot was published, before Spark recorded the batch as done",
}


def rows_of_file(i: int, n: int = 10) -> pa.Table:
    """Input file ``i`` of a stream: ids ``i * n`` to ``(i + 1) * n - 1``, a value and a day each."""
    ids = list(range(i * n, (i + 1) * n))
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [f"v{k}" for k in ids], "dt": [f"d{k % 2}" for k in ids]})


def user_snapshots(warehouse: str, query_id: str) -> list[tuple[int, str]]:
    """(commit identifier, commit kind) of each snapshot of ``db.t`` the query committed."""
    import impl
    from impl.spark.stream_writer import stream_commit_user

    user = stream_commit_user(query_id)
    t = impl.Catalog(warehouse).get_table("db.t")
    return [(s.commit_identifier, s.commit_kind.value) for s in t.snapshots() if s.commit_user == user]


def add_input_file(directory: str, seq: int, table: pa.Table) -> None:
    """Input file ``seq`` of a stream (written, then renamed in as a file source expects). Its
    modification time is ``seq`` seconds after a fixed instant: Spark's file source takes files in
    modification time order, and files written within one millisecond would tie."""
    os.makedirs(directory, exist_ok=True)
    tmp, path = os.path.join(directory, f".{seq}.tmp"), os.path.join(directory, f"f{seq:04d}.parquet")
    pq.write_table(table, tmp)
    os.utime(tmp, (1_700_000_000 + seq, 1_700_000_000 + seq))
    os.rename(tmp, path)


def crash_fs_factory(arm_path: str, point: str):
    """A factory of local file systems that kill their process (``os._exit``) at ``point`` of a
    commit (see :data:`CRASH_POINTS`) while the file ``arm_path`` exists, removing it first, so
    exactly one commit dies and the restarted query runs normally."""
    if point not in CRASH_POINTS:
        raise ValueError(f"unknown crash point {point!r}")

    def factory():
        class CrashingCommitFS(LocalFileSystem):
            cachable = False

            def _fire(self) -> None:
                try:
                    os.remove(arm_path)
                except FileNotFoundError:
                    return  # disarmed: another process fired already
                os._exit(7)

            def pipe_file(self, path, value, *args, **kwargs):
                if point == "before_commit" and "/manifest/" in str(path) and os.path.exists(arm_path):
                    self._fire()
                return super().pipe_file(path, value, *args, **kwargs)

            def link_if_absent(self, src, dst) -> bool:
                is_snapshot = "/snapshot/snapshot-" in str(dst)
                if is_snapshot and point == "before_publish" and os.path.exists(arm_path):
                    self._fire()
                try:
                    os.link(self._strip_protocol(src), self._strip_protocol(dst))
                except FileExistsError:
                    return False
                if is_snapshot and point == "after_publish" and os.path.exists(arm_path):
                    self._fire()
                return True

        return CrashingCommitFS()

    return factory


class CrashingSinkSource(PaimonDataSource):
    """``paimon_py`` whose streaming sink opens the table through :func:`crash_fs_factory`
    (options ``crash.arm`` and ``crash.point``)."""

    @classmethod
    def name(cls) -> str:
        return "paimon_py_crashing"

    def streamWriter(self, schema, overwrite: bool):
        opts = dict(self.options)
        factory = crash_fs_factory(opts.pop("crash.arm"), opts.pop("crash.point"))
        return PaimonStreamWriter(make_stream_sink(opts, schema, overwrite, fs_factory=factory))

"""Helpers for the Spark tests (file listings, orphan checks)."""

from __future__ import annotations

import os

from fsspec.implementations.local import LocalFileSystem


def table_files(table_path: str) -> set[str]:
    """Every file under the table directory (relative paths)."""
    out = set()
    for d, _, files in os.walk(table_path):
        for f in files:
            out.add(os.path.relpath(os.path.join(d, f), table_path))
    return out


def data_files(table_path: str) -> set[str]:
    return {f for f in table_files(table_path) if f.endswith(".parquet")}


def orphans(table_path: str) -> list[str]:
    """Files no retained snapshot references (the test bed's own orphan finder)."""
    from fault_injection.orphans import find_orphans
    from impl.fs.file_io import FileIO

    return [s.path for s in find_orphans(FileIO(), table_path)]


def intents_left(warehouse: str) -> list[str]:
    """What is left of the write logs: intents and task attempts' start/end records."""
    roots = [os.path.join(warehouse, ".paimon_py_spark", d) for d in ("writes", "attempts")]
    return [os.path.join(d, f) for root in roots for d, _, fs in os.walk(root) for f in fs]


def crash_first_attempt_fs():
    """Local disk where a Spark task's first attempt dies (``os._exit``) right after its first
    data file lands: the file stays, nobody reports it, the retried attempt writes its own.

    A factory (the class is built on call) so that it pickles by value into Spark workers.
    """

    class CrashFirstAttemptFS(LocalFileSystem):
        cachable = False

        def pipe_file(self, path, value, *args, **kwargs):
            out = super().pipe_file(path, value, *args, **kwargs)
            if str(path).endswith(".parquet") and "/bucket-" in str(path):
                from pyspark import TaskContext

                tc = TaskContext.get()
                if tc is not None and tc.attemptNumber() == 0 and tc.partitionId() == 0:
                    os._exit(3)
            return out

    return CrashFirstAttemptFS()


# ---------------------------------------------------------------------- object stores


def store_io(options: dict[str, str]):
    """A FileIO on the S3 server of ``options`` (the test's own client, not the connector's)."""
    from impl.fs.file_io import FileIO
    from impl.fs.object_store import S3Config

    return FileIO(S3Config.from_options(options).filesystem())


def store_files(options: dict[str, str], prefix: str) -> set[str]:
    """Every object under ``prefix`` (``bucket/path``), relative to it; directory markers excluded."""
    return {s.path[len(prefix.rstrip("/")) + 1:] for s in store_io(options).walk_files(prefix)}


def crash_first_attempt_s3_fs(options: dict[str, str]):
    """A factory of S3 clients (built from ``options`` in whichever process calls it) where a Spark
    task's first attempt dies (``os._exit``) right after its first data file landed in the store.

    The client is a real s3fs one; only its blocking ``pipe_file`` is wrapped to crash after the PUT.
    """

    def factory():
        from impl.fs.object_store import S3Config

        fs = S3Config.from_options(options).filesystem()
        put = fs.pipe_file  # fsspec binds it on the instance (async file systems)

        def pipe_file(path, value, *args, **kwargs):
            out = put(path, value, *args, **kwargs)
            if str(path).endswith(".parquet") and "/bucket-" in str(path):
                from pyspark import TaskContext

                tc = TaskContext.get()
                if tc is not None and tc.attemptNumber() == 0 and tc.partitionId() == 0:
                    os._exit(3)
            return out

        fs.pipe_file = pipe_file
        return fs

    return factory


def explode_on_13(v):
    """A UDF body that fails every attempt of the task holding the row whose value is 13 (a
    job that cannot succeed)."""
    if v == 13:
        raise ValueError("bad row 13")
    return v

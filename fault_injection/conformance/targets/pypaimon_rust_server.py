"""The pypaimon-rust 0.4.0 side of the conformance adapter: a JSON-lines server over stdin/stdout.

Runs under the pypaimon-rust venv's interpreter (``pypaimon_env.peer_python`` builds it), never
under this project's. It imports nothing from this repository but peer_protocol.py (the
protocol, beside this file).

The pypaimon-rust 0.4.0 calls each op uses (read from its installed ``datafusion.pyi`` stubs):

* create table: ``SQLContext.register_catalog`` + ``CREATE TABLE ... PARTITIONED BY ... WITH
  (...)`` (the Python API has no catalog ``create_table``). Every table gets
  ``dynamic-partition-overwrite = false`` (see overwrite).
* prepare: ``StreamWriteBuilder.new_write()``, ``write_arrow``, ``prepare_commit(False, 0)``;
  the messages are kept serialized under a handle (``CommitMessage.serialize``, Java's v14
  body): a live message carries the writer's commit user, which its committer must share, and
  one decoded by ``CommitMessage.deserialize`` takes the committer's.
* commit under a given user and identifier: ``StreamWriteBuilder.with_commit_user(user)``, then
  ``StreamTableCommit.commit(identifier, messages)``; the recovery path is
  ``StreamTableCommit.filter_and_commit({identifier: messages})``.
* overwrite: ``BatchWriteBuilder._with_commit_user(user).with_overwrite(static_partition)``. The
  batch commit has no identifier parameter: pypaimon-rust publishes every batch commit under
  ``BATCH_COMMIT_IDENTIFIER`` (i64::MAX, table/table_commit.rs), so the requested identifier is
  not used. Its dynamic partition overwrite (on by default for partitioned tables) replaces
  only the partitions written, whatever the spec; the table option turns it off so that
  ``partition=None`` replaces the whole table, as the adapter means.
* read at a snapshot: ``Table.new_read_builder({"scan.snapshot-id": id})``.
* no compaction and no snapshot expiration are exposed to Python in 0.4.0 (the Rust crate has
  ``expire_snapshots.rs``, the bindings do not reach it): those ops answer ``Unsupported``.

S3: the storage options ``fs.s3.*`` (Paimon Java's names, which the suites use) are given to
pypaimon-rust under its own names (``s3.endpoint``, ``s3.access-key``, ``s3.secret-key``,
``s3.region``, ``s3.path-style-access``: io/storage_s3.rs).
"""

from __future__ import annotations

import re
import uuid

from peer_protocol import UnsupportedOp, protect_stdout, serve  # type: ignore[import-not-found]  # beside this script

PROTOCOL_OUT = protect_stdout()

import pyarrow as pa  # noqa: E402  (after the stdout swap, in case an import prints)
from pypaimon_rust.datafusion import CommitMessage, PaimonCatalog, SQLContext  # type: ignore[import-not-found]  # noqa: E402  (only in its venv)

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.int64())])
_S3_NAMES = {"fs.s3.endpoint": "s3.endpoint", "fs.s3.accessKeyId": "s3.access-key",
             "fs.s3.accessKeySecret": "s3.secret-key", "fs.s3.region": "s3.region",
             "fs.s3.path-style-access": "s3.path-style-access"}
# a data file's name inside a serialized CommitMessage (Java CommitMessageSerializer v14 body)
_DATA_FILE = re.compile(rb"data-[0-9a-f-]{36}-[0-9]+\.(?:parquet|orc|avro)")


def is_conflict(error: BaseException) -> bool:
    """Whether pypaimon-rust refused a commit because of a conflict it detected: its errors all
    arrive as one Python class, so the message decides ("... conflict ..." from the conflict
    checks of table/table_commit.rs, or the retries running out: "Commit failed for snapshot N
    ... there may exist commit conflicts between multiple jobs")."""
    return "conflict" in str(error).lower()


def catalog_options(table: dict) -> dict:
    """Catalog options for pypaimon-rust: the warehouse, and the S3 options under its names."""
    options: dict[str, str] = {"warehouse": table["warehouse"]}
    storage: dict[str, str] = dict(table.get("storage_options") or {})
    for name, value in storage.items():
        options[_S3_NAMES.get(name, name)] = value
    if "fs.s3.endpoint" in storage:
        # A custom endpoint (moto, MinIO) serves buckets by path, not by virtual host.
        options.setdefault("s3.path-style-access", "true")
    return options


class Server:
    def __init__(self) -> None:
        self._catalogs: dict = {}
        self._prepared: dict = {}  # handle -> list of CommitMessage (kept until close: re-commits are allowed)

    def _table(self, table: dict):
        options = catalog_options(table)
        key = tuple(sorted(options.items()))
        if key not in self._catalogs:
            self._catalogs[key] = PaimonCatalog(options)
        return self._catalogs[key].get_table(table["identifier"])

    @staticmethod
    def _batch(rows: list) -> pa.RecordBatch:
        return pa.RecordBatch.from_pylist(rows, schema=SCHEMA)

    def create_table(self, table: dict, primary_keys: list, partition_keys: list, bucket: int,
                     options: dict) -> None:
        ctx = SQLContext()
        ctx.register_catalog("paimon", catalog_options(table))
        db, name = table["identifier"].split(".", 1)
        ctx.sql(f"CREATE SCHEMA IF NOT EXISTS paimon.{db}")
        key = f", PRIMARY KEY ({', '.join(primary_keys)})" if primary_keys else ""
        parts = f" PARTITIONED BY ({', '.join(partition_keys)})" if partition_keys else ""
        opts = {"bucket": str(bucket), "dynamic-partition-overwrite": "false", **options}
        with_ = ", ".join(f"'{k}'='{v}'" for k, v in opts.items())
        ctx.sql(f"CREATE TABLE paimon.{db}.{name} (dt STRING, id BIGINT, v BIGINT{key}){parts} WITH ({with_})")

    def prepare(self, table: dict, rows: list) -> dict:
        write = self._table(table).new_stream_write_builder().new_write()
        try:
            write.write_arrow(self._batch(rows))
            # The identifier given here only tags the writer's checkpoint; the commit names its own.
            messages = write.prepare_commit(False, 0)
        finally:
            write.close()
        handle = uuid.uuid4().hex
        # Kept serialized: a message carries its writer's commit user, which the committer must
        # share; a deserialized one takes the committer's (CommitMessage.deserialize).
        self._prepared[handle] = [m.serialize() for m in messages]
        # CommitMessage exposes no file list; its serialized form names the files
        names = sorted({m.decode() for body in self._prepared[handle] for m in _DATA_FILE.findall(body)})
        return {"handle": handle, "file_names": names}

    def commit(self, table: dict, handle: str, commit_user: str, identifier: int,
               filter_committed: bool = False) -> None:
        messages = [CommitMessage.deserialize(body) for body in self._prepared[handle]]
        commit = self._table(table).new_stream_write_builder().with_commit_user(commit_user).new_commit()
        try:
            if filter_committed:
                commit.filter_and_commit({identifier: messages})
            else:
                commit.commit(identifier, messages)
        finally:
            commit.close()

    def overwrite(self, table: dict, rows: list, partition: dict | None, commit_user: str, identifier: int) -> None:
        builder = self._table(table).new_batch_write_builder()._with_commit_user(commit_user) \
            .with_overwrite(partition or {})
        write = builder.new_write()
        commit = builder.new_commit()
        try:
            write.write_arrow(self._batch(rows))
            commit.commit(write.prepare_commit())
        finally:
            write.close()
            commit.close()

    def compact(self, **_) -> None:
        raise UnsupportedOp("pypaimon-rust 0.4.0 has no compaction API (prepare_commit: \"Rust currently flushes "
                            "synchronously without background compaction\")")

    def expire(self, **_) -> None:
        raise UnsupportedOp("pypaimon-rust 0.4.0 exposes no snapshot expiration to Python")

    def read_rows(self, table: dict, snapshot_id: int | None = None) -> list:
        t = self._table(table)
        builder = t.new_read_builder({"scan.snapshot-id": str(snapshot_id)}) if snapshot_id is not None \
            else t.new_read_builder()
        batches = builder.new_read().read(builder.new_scan().plan().splits())
        return pa.Table.from_batches(batches).select(["dt", "id", "v"]).to_pylist() if batches else []


def main() -> None:
    serve(Server(), PROTOCOL_OUT, is_conflict)


if __name__ == "__main__":
    main()

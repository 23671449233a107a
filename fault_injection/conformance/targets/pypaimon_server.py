"""The pypaimon 2.1.0 side of the conformance adapter: a JSON-lines server over stdin/stdout.

Runs under the pypaimon venv's interpreter (fault_injection/conformance/pypaimon_env.py builds it), never
under this project's: pypaimon 2.1.0 pins pyarrow < 20. It imports nothing from this repository.

The protocol (JSON lines over stdin/stdout, logs on stderr) is peer_protocol.py's, which sits
beside this file.

The pypaimon 2.1.0 calls each op uses (read from its installed source):

* commit with a given user and identifier: ``StreamWriteBuilder._with_commit_user(user)``
  (write/write_builder.py; the only way to set the user: the public builder draws a uuid, or
  ``commit.user-prefix`` + uuid), then ``StreamTableCommit.commit(messages, identifier)``
  (write/table_commit.py).
* overwrite: ``BatchWriteBuilder.overwrite(static_partition)``; pypaimon's public batch commit
  always uses ``BATCH_COMMIT_IDENTIFIER``, so the requested identifier goes through the shared
  ``TableCommit._commit(messages, identifier)`` that ``BatchTableCommit.commit`` itself calls.
  ``dynamic-partition-overwrite`` (default true in 2.1.0, FileStoreCommit.overwrite) is turned
  off for the call, so ``partition=None`` replaces the whole table and a static partition is
  replaced even by an empty write.
* read at a snapshot: ``table.copy({"scan.snapshot-id": id})`` (snapshot/time_travel_util.py).
* no compaction, no snapshot expiration and no filter-committed/recovery API exist in 2.1.0:
  those ops answer ``Unsupported``.
"""

from __future__ import annotations

import uuid

from peer_protocol import UnsupportedOp, protect_stdout, serve  # type: ignore[import-not-found]  # beside this script

PROTOCOL_OUT = protect_stdout()

import pyarrow as pa  # noqa: E402  (after the stdout swap, in case an import prints)
from pypaimon import CatalogFactory, Schema  # type: ignore[import-not-found]  # noqa: E402  (pypaimon lives only in its venv)

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.int64())])


def is_conflict(error: BaseException) -> bool:
    """Whether pypaimon refused a commit because of a conflict it detected.

    pypaimon 2.1.0 raises plain ``RuntimeError`` for conflicts (write/commit/conflict_detection.py
    builds them: "File deletion conflicts detected! Give up committing.", "Overwrite conflict
    detected: ...", "HASH index conflict detected: ...", ``RowIdExistenceConflict``), so the
    message decides. When the retries run out, FileStoreCommit._try_commit raises "Commit failed
    ... there maybe exist commit conflicts" chained to the last attempt's error: a conflict only
    if that cause is one (else the outcome is unknown).
    """
    message = str(error)
    if message.startswith("Commit failed") and "retries" in message:
        cause = error.__cause__
        return cause is not None and is_conflict(cause)
    return isinstance(error, RuntimeError) and "conflict" in message.lower()


class Server:
    def __init__(self) -> None:
        self._catalogs: dict = {}
        self._prepared: dict = {}  # handle -> list of CommitMessage (kept until close: re-commits are allowed)

    # ------------------------------------------------------------------ helpers

    def _catalog(self, table: dict):
        options = dict(table.get("storage_options") or {})
        if "fs.s3.endpoint" in options:
            # A custom endpoint (moto, MinIO) serves buckets by path, not by virtual host.
            options.setdefault("fs.s3.path-style-access", "true")
        key = (table["warehouse"], tuple(sorted(options.items())))
        if key not in self._catalogs:
            self._catalogs[key] = CatalogFactory.create({"warehouse": table["warehouse"], **options})
        return self._catalogs[key]

    def _table(self, table: dict):
        return self._catalog(table).get_table(table["identifier"])

    @staticmethod
    def _arrow(rows: list) -> pa.Table:
        return pa.Table.from_pylist(rows, schema=SCHEMA)

    # ------------------------------------------------------------------ ops

    def create_table(self, table: dict, primary_keys: list, partition_keys: list, bucket: int,
                     options: dict) -> None:
        catalog = self._catalog(table)
        catalog.create_database(table["identifier"].split(".")[0], True)
        schema = Schema.from_pyarrow_schema(SCHEMA, partition_keys=partition_keys, primary_keys=primary_keys,
                                            options={"bucket": str(bucket), **options})
        catalog.create_table(table["identifier"], schema, False)

    def prepare(self, table: dict, rows: list) -> dict:
        write = self._table(table).new_stream_write_builder().new_write()
        try:
            write.write_arrow(self._arrow(rows))
            # The identifier given here only tags the writer's state; the commit names its own.
            messages = write.prepare_commit(0)
        finally:
            write.close()
        handle = uuid.uuid4().hex
        self._prepared[handle] = messages
        names = [f.file_name for m in messages for f in m.new_files]
        return {"handle": handle, "file_names": names}

    def commit(self, table: dict, handle: str, commit_user: str, identifier: int,
               filter_committed: bool = False) -> None:
        if filter_committed:
            raise UnsupportedOp("pypaimon 2.1.0 has no filter-committed (recovery) API")
        messages = self._prepared[handle]
        commit = self._table(table).new_stream_write_builder()._with_commit_user(commit_user).new_commit()
        try:
            commit.commit(messages, identifier)
        finally:
            commit.close()

    def overwrite(self, table: dict, rows: list, partition: dict | None, commit_user: str, identifier: int) -> None:
        t = self._table(table).copy({"dynamic-partition-overwrite": "false"})
        builder = t.new_batch_write_builder()._with_commit_user(commit_user).overwrite(partition or {})
        write = builder.new_write()
        commit = builder.new_commit()
        try:
            write.write_arrow(self._arrow(rows))
            commit._commit(write.prepare_commit(), identifier)
        finally:
            write.close()
            commit.close()

    def compact(self, **_) -> None:
        raise UnsupportedOp("pypaimon 2.1.0 has no compaction API "
                            "(FileStoreCommit rejects compact increments: _reject_compact_increment)")

    def expire(self, **_) -> None:
        raise UnsupportedOp("pypaimon 2.1.0 has no snapshot expiration")

    def read_rows(self, table: dict, snapshot_id: int | None = None) -> list:
        t = self._table(table)
        if snapshot_id is not None:
            t = t.copy({"scan.snapshot-id": str(snapshot_id)})
        builder = t.new_read_builder()
        splits = builder.new_scan().plan().splits()
        arrow = builder.new_read().to_arrow(splits)
        return [] if arrow is None else arrow.select(["dt", "id", "v"]).to_pylist()


def main() -> None:
    serve(Server(), PROTOCOL_OUT, is_conflict)


if __name__ == "__main__":
    main()

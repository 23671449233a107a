"""FileIO and tables on a real HDFS (Hadoop's MiniDFSCluster on 127.0.0.1, through WebHDFS):
opening ``webhdfs://`` with Hadoop's option names, publication by rename-if-absent (a refused
rename, a lost response to a rename that landed), request counts, and refusals by name."""

from __future__ import annotations

import pyarrow as pa
import pytest
import requests

import impl
from impl.errors import UnsupportedFileSystemError
from impl.fs import FileIO
from impl.fs.webhdfs import HdfsWebFileSystem


def _io(hdfs_server, **extra) -> tuple[FileIO, str]:
    return FileIO.for_path(hdfs_server.webhdfs_url(hdfs_server.new_root()), options={**hdfs_server.options(), **extra})


def test_webhdfs_url_opens_with_hadoop_option_names(hdfs_server):
    io, root = _io(hdfs_server)
    assert isinstance(io.fs, HdfsWebFileSystem) and io.fs.user == "paimon" and not io.is_object_store
    io.write_bytes(f"{root}/a/b.txt", b"hello")
    io.write_bytes(f"{root}/a/b.txt", b"hello again")  # a plain write overwrites (LATEST hints)
    assert io.read_bytes(f"{root}/a/b.txt") == b"hello again"
    with io.open_input(f"{root}/a/b.txt") as f:
        f.seek(6)
        assert f.read(5) == b"again"
    assert io.file_exists(f"{root}/a/b.txt") and not io.file_exists(f"{root}/a/c.txt")
    io.mkdirs(f"{root}/empty.db")
    assert sorted(io.list_names(root)) == ["a", "empty.db"] and io.list_names(f"{root}/empty.db") == []
    [status] = io.list_status(f"{root}/a")
    assert status.size_bytes == 11 and status.modified_millis is not None and status.modified_millis > 1_600_000_000_000
    with pytest.raises(FileNotFoundError):
        io.read_bytes(f"{root}/a/missing")
    with pytest.raises(FileNotFoundError):
        io.delete(f"{root}/a/missing", missing_ok=False)
    io.delete(f"{root}/a/b.txt")
    assert io.list_names(f"{root}/a") == []


def test_publication_is_a_rename_that_refuses_an_existing_target(hdfs_server):
    io, root = _io(hdfs_server)
    path = f"{root}/db.db/t/snapshot/snapshot-1"
    io.mkdirs(f"{root}/db.db/t/snapshot")
    before = io.requests.snapshot()
    assert io.try_write_atomic(path, b"first") is True
    assert io.requests.since(before) == {"PUT": 1, "RENAME": 1}  # temp file, rename: no read, no list
    before = io.requests.snapshot()
    assert io.try_write_atomic(path, b"second") is False
    assert io.requests.since(before) == {"PUT": 1, "RENAME": 1, "GET": 1, "DELETE": 1}  # + read-back, drop temp
    assert io.read_bytes(path) == b"first"
    assert io.list_names(f"{root}/db.db/t/snapshot") == ["snapshot-1"]  # no temp file left


class _LosesFirstRenameResponse(HdfsWebFileSystem):
    """Real HDFS; the first rename lands on the NameNode, then its answer is lost on the way back."""

    lost = 0

    def rename_if_absent(self, src, dst):
        landed = super().rename_if_absent(src, dst)
        if self.lost == 0:
            self.lost += 1
            raise requests.ConnectionError("connection reset by peer (response lost)")
        return landed


def test_lost_response_of_a_landed_rename_is_ours(hdfs_server):
    """The rename lands, its answer is lost, the retry is refused: read back, the bytes are ours."""
    root = hdfs_server.new_root()
    fs = _LosesFirstRenameResponse("127.0.0.1", hdfs_server.http_port, user="paimon", timeouts_seconds=(5.0, 60.0))
    io = FileIO(fs)
    io.mkdirs(f"{root}/snapshot")
    assert io.try_write_atomic(f"{root}/snapshot/snapshot-7", b"mine") is True
    assert fs.lost == 1  # the fault really happened
    assert io.read_bytes(f"{root}/snapshot/snapshot-7") == b"mine"
    # the same lost answer while another writer holds the name: refused, not ours
    fs.lost = 0
    assert io.try_write_atomic(f"{root}/snapshot/snapshot-7", b"theirs") is False
    assert io.read_bytes(f"{root}/snapshot/snapshot-7") == b"mine"
    assert io.list_names(f"{root}/snapshot") == ["snapshot-7"]


def test_hdfs_scheme_and_unknown_schemes_are_refused_by_name(hdfs_server):
    with pytest.raises(UnsupportedFileSystemError, match=r"hdfs://.*webhdfs://127\.0\.0\.1:9870/wh"):
        FileIO.for_path(hdfs_server.hdfs_url("/wh"))
    with pytest.raises(UnsupportedFileSystemError, match="unknown scheme 'nosuchfs'"):
        FileIO.for_path("nosuchfs://host/wh")
    with pytest.raises(UnsupportedFileSystemError, match="kerberos"):
        FileIO.for_path(hdfs_server.webhdfs_url("/wh"), options={"hadoop.security.authentication": "kerberos"})


SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])


def test_table_on_hdfs_commits_and_reads_with_counted_requests(hdfs_server):
    cat = impl.Catalog(hdfs_server.webhdfs_url(hdfs_server.new_root()), options=hdfs_server.options())
    cat.create_database("db", ignore_if_exists=True)
    t = cat.create_table("db.t", schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                         options={"bucket": "2"})
    io = t.core.file_io
    counts = []
    for i in range(3):
        before = io.requests.snapshot()
        t.write_arrow(pa.table({"dt": ["a", "b"], "id": [1, 10 + i], "v": [f"v{i}", "x"]}, schema=SCHEMA))
        counts.append(io.requests.since(before))
    assert all(c.get("RENAME") == 1 for c in counts), counts  # one publication each, no retry
    assert all("LIST" not in c for c in counts[1:]), counts  # only the first commit lists (an empty table)
    print(f"requests per commit on HDFS (WebHDFS): {counts}")
    got = {(r["dt"], r["id"]): r["v"] for r in cat.get_table("db.t").to_arrow().to_pylist()}
    assert got == {("a", 1): "v2", ("b", 10): "x", ("b", 11): "x", ("b", 12): "x"}
    assert t.snapshot_manager().snapshot_ids() == [1, 2, 3]

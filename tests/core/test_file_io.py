"""FileIO on local disk and on the memory file system: bytes, listing, deletion, hints, and the
atomic create-if-absent that snapshot publication relies on (threads and OS processes)."""

from __future__ import annotations

import multiprocessing
import os
import posixpath
import threading

import pytest
from core_helpers import DictFS as _DictFS
from core_helpers import expected_race_payload, race_worker
from fsspec.implementations.local import LocalFileSystem
from fsspec.implementations.memory import MemoryFileSystem

from impl.errors import FileIOError, UnsupportedFileSystemError
from impl.fs.file_io import FileIO, link_if_absent, supports_atomic_create


def _names(io: FileIO, directory: str) -> set[str]:
    return set(io.list_names(directory))


# ----------------------------------------------------------------------------- plain bytes


def test_write_read_exists_delete(io_root):
    io, root = io_root
    path = posixpath.join(root, "a", "b", "file.bin")
    assert not io.exists(path)
    payload = bytes(range(256)) * 3
    io.write_bytes(path, payload)
    assert io.exists(path)
    assert io.read_bytes(path) == payload
    assert io.file_size(path) == len(payload)
    io.write_bytes(path, b"second")  # data files are never rewritten, but a write must replace bytes
    assert io.read_bytes(path) == b"second"
    io.delete(path)
    assert not io.exists(path)
    io.delete(path)  # missing_ok by default
    with pytest.raises(FileNotFoundError):
        io.delete(path, missing_ok=False)
    with pytest.raises(FileNotFoundError):
        io.read_bytes(path)


def test_empty_file_round_trips(io_root):
    io, root = io_root
    path = posixpath.join(root, "empty")
    io.write_bytes(path, b"")
    assert io.exists(path)
    assert io.read_bytes(path) == b""


def test_list_names_status_and_walk(io_root):
    io, root = io_root
    d = posixpath.join(root, "dir")
    assert io.list_names(d) == []  # missing directory lists as empty
    assert io.list_status(d) == []
    io.mkdirs(d)
    io.mkdirs(d)  # idempotent
    assert io.exists(d)
    assert io.list_names(d) == []
    io.write_bytes(posixpath.join(d, "x"), b"12345")
    io.write_bytes(posixpath.join(d, "y"), b"1")
    io.write_bytes(posixpath.join(d, "sub", "z"), b"123")
    assert _names(io, d) == {"x", "y", "sub"}
    status = {posixpath.basename(s.path): s.size_bytes for s in io.list_status(d)}
    assert status == {"x": 5, "y": 1}  # files only, not the sub directory
    walked = {posixpath.relpath(io.fs._strip_protocol(s.path), io.fs._strip_protocol(d)): s.size_bytes
              for s in io.walk_files(d)}
    assert walked == {"x": 5, "y": 1, "sub/z": 3}
    assert io.walk_files(posixpath.join(root, "nope")) == []


def test_delete_quietly_never_raises(io_root):
    io, root = io_root
    a = posixpath.join(root, "a")
    io.write_bytes(a, b"a")
    io.delete_quietly([posixpath.join(root, "missing"), a, posixpath.join(root, "missing2")])
    assert not io.exists(a)


def test_local_os_error_is_wrapped_and_names_the_path(tmp_path):
    io = FileIO(LocalFileSystem())
    d = str(tmp_path / "adir")
    io.mkdirs(d)
    with pytest.raises(FileIOError) as ei:
        io.read_bytes(d)  # reading a directory is an OSError other than FileNotFoundError
    assert d in str(ei.value)


def test_sync_on_write(io_root):
    io, root = io_root
    synced = FileIO(io.fs, sync_on_write=True)
    path = posixpath.join(root, "deep", "dir", "f")
    synced.write_bytes(path, b"durable")
    assert io.read_bytes(path) == b"durable"
    assert synced.try_write_atomic(posixpath.join(root, "deep", "s-1"), b"one")
    assert not synced.try_write_atomic(posixpath.join(root, "deep", "s-1"), b"two")
    assert io.read_bytes(posixpath.join(root, "deep", "s-1")) == b"one"
    assert _names(io, posixpath.join(root, "deep")) == {"dir", "s-1"}


# ----------------------------------------------------------------------------- hints


def test_hint_writes_are_plain_overwrites(io_root):
    io, root = io_root
    hint = posixpath.join(root, "snapshot", "LATEST")
    io.overwrite_hint(hint, "12")
    assert io.read_bytes(hint) == b"12"
    io.overwrite_hint(hint, "3")  # shorter: no stale tail may remain
    assert io.read_bytes(hint) == b"3"
    io.overwrite_hint(hint, "4")
    assert io.read_bytes(hint) == b"4"
    # a hint is not published with the no-replace primitive: no temp files either
    assert _names(io, posixpath.join(root, "snapshot")) == {"LATEST"}


# ----------------------------------------------------------------------------- try_write_atomic


def test_try_write_atomic_creates_once_and_never_replaces(io_root):
    io, root = io_root
    path = posixpath.join(root, "snapshot", "snapshot-1")
    assert io.try_write_atomic(path, b"first") is True
    assert io.read_bytes(path) == b"first"
    assert io.try_write_atomic(path, b"second, longer content") is False
    assert io.read_bytes(path) == b"first"
    # a file created by a plain write is not replaced either
    other = posixpath.join(root, "snapshot", "snapshot-2")
    io.write_bytes(other, b"plain")
    assert io.try_write_atomic(other, b"atomic") is False
    assert io.read_bytes(other) == b"plain"
    # no temp file (dot-prefixed) is left in the directory
    assert _names(io, posixpath.join(root, "snapshot")) == {"snapshot-1", "snapshot-2"}


def test_try_write_atomic_large_payload_is_whole(io_root):
    io, root = io_root
    path = posixpath.join(root, "big")
    payload = os.urandom(3 * 1024 * 1024 + 17)
    assert io.try_write_atomic(path, payload)
    assert io.read_bytes(path) == payload
    assert _names(io, root) == {"big"}


def test_try_write_atomic_threads_race(io_root):
    """Many threads race for the same paths: exactly one winner per path, its whole content."""
    io, root = io_root
    n_threads, rounds = 6, 40
    results: dict[int, list[int]] = {r: [] for r in range(rounds)}
    lock = threading.Lock()
    barrier = threading.Barrier(n_threads)

    def run(tid: int):
        for r in range(rounds):
            barrier.wait()
            if io.try_write_atomic(posixpath.join(root, f"r-{r}"), f"thread-{tid}-round-{r}".encode() * 50):
                with lock:
                    results[r].append(tid)

    threads = [threading.Thread(target=run, args=(t,)) for t in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in range(rounds):
        assert len(results[r]) == 1, f"round {r}: winners {results[r]}"
        (winner,) = results[r]
        assert io.read_bytes(posixpath.join(root, f"r-{r}")) == f"thread-{winner}-round-{r}".encode() * 50
    assert _names(io, root) == {f"r-{r}" for r in range(rounds)}


def test_try_write_atomic_across_os_processes(tmp_path):
    """Spawned OS processes race many rounds for one path each: one True per round, winner's bytes."""
    n_procs, rounds, size = 3, 120, 64 * 1024
    root = str(tmp_path / "race")
    os.makedirs(root)
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(n_procs)
    queue = ctx.Queue()
    procs = [ctx.Process(target=race_worker, args=(root, rounds, w, size, barrier, queue)) for w in range(n_procs)]
    for p in procs:
        p.start()
    reports = [queue.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    winners: dict[int, list[int]] = {r: [] for r in range(rounds)}
    for report in reports:
        assert len(report) == rounds
        for r, w, won in report:
            if won:
                winners[r].append(w)
    io = FileIO(LocalFileSystem())
    for r in range(rounds):
        assert len(winners[r]) == 1, f"round {r}: winners {winners[r]}"
        assert io.read_bytes(posixpath.join(root, f"round-{r}")) == expected_race_payload(winners[r][0], r, size)
    assert sorted(os.listdir(root)) == sorted(f"round-{r}" for r in range(rounds))  # no temp files


# ----------------------------------------------------------------------------- failure paths


class _TornTempLocal(LocalFileSystem):
    """Writes of dot-prefixed (temp) files land half and then fail, like a full disk."""

    cachable = False

    def pipe_file(self, path, value, **kwargs):
        if posixpath.basename(path).startswith("."):
            super().pipe_file(path, value[: len(value) // 2], **kwargs)
            raise OSError(28, "No space left on device (injected)")
        return super().pipe_file(path, value, **kwargs)


class _TornTempMemory(MemoryFileSystem):
    cachable = False

    def pipe_file(self, path, value, **kwargs):
        if posixpath.basename(path).startswith("."):
            super().pipe_file(path, value[: len(value) // 2], **kwargs)
            raise OSError(28, "No space left on device (injected)")
        return super().pipe_file(path, value, **kwargs)


@pytest.mark.parametrize("kind", ["memory", "local"])
def test_try_write_atomic_failed_temp_write_leaves_nothing(kind, tmp_path):
    """A temp write that fails half way raises FileIOError and leaves neither target nor temp file."""
    if kind == "local":
        fs, root = _TornTempLocal(), str(tmp_path / "t")
    else:
        fs, root = _TornTempMemory(), f"/core-torn-{os.urandom(6).hex()}"
    io = FileIO(fs)
    io.mkdirs(root)
    target = posixpath.join(root, "snapshot-1")
    with pytest.raises(FileIOError):
        io.try_write_atomic(target, b"x" * 1000)
    assert not io.exists(target)
    assert io.list_names(root) == [], "a torn temp file was left behind"


def test_unsupported_file_system_refuses_to_publish():
    fs = _DictFS()
    assert not supports_atomic_create(fs)
    assert not FileIO(fs).supports_atomic_create()
    with pytest.raises(UnsupportedFileSystemError):
        FileIO(fs).try_write_atomic("/t/snapshot-1", b"{}")
    assert fs.files == {}, "the temp file must be removed"
    with pytest.raises(UnsupportedFileSystemError):
        link_if_absent(fs, "/a", "/b")


def test_file_system_with_own_link_if_absent_decides():
    calls = []

    class Conditional(_DictFS):
        def link_if_absent(self, src, dst):
            calls.append((src, dst))
            if dst in self.files:
                return False
            self.files[dst] = self.files[src]
            return True

    fs = Conditional()
    io = FileIO(fs)
    assert io.supports_atomic_create()
    assert io.try_write_atomic("/t/s-1", b"one") is True
    assert io.try_write_atomic("/t/s-1", b"two") is False
    assert fs.files == {"/t/s-1": b"one"}
    assert len(calls) == 2 and all(dst == "/t/s-1" and posixpath.basename(src).startswith(".") for src, dst in calls)


def test_for_path_resolves_memory_urls():
    io, path = FileIO.for_path("memory://core-for-path/x/y")
    assert isinstance(io.fs, MemoryFileSystem)
    io.write_bytes(path, b"v")
    assert FileIO(MemoryFileSystem()).read_bytes("/core-for-path/x/y") == b"v"
    io.delete(path)


# ----------------------------------------------------------------------------- streamed output


def test_open_output_streams_a_file_of_exact_size(io_root):
    io, root = io_root
    path = posixpath.join(root, "bucket-0", "data-0.parquet")
    out = io.open_output(path)
    parts = [bytes([i]) * (1000 * (i + 1)) for i in range(3)]
    for p in parts:
        out.stream.write(p)
    assert out.tell() == sum(map(len, parts))
    assert out.close() == sum(map(len, parts))
    assert io.read_bytes(path) == b"".join(parts)
    with pytest.raises(FileIOError, match="already closed"):
        out.close()


def test_aborted_output_leaves_no_file(io_root):
    io, root = io_root
    path = posixpath.join(root, "bucket-0", "data-1.parquet")
    out = io.open_output(path)
    out.stream.write(b"x" * 5000)
    out.abort()
    out.abort()  # idempotent
    assert not io.exists(path)


def test_synced_output_is_durable_on_local_disk(tmp_path):
    io = FileIO(LocalFileSystem(), sync_on_write=True)
    path = str(tmp_path / "b" / "data.parquet")
    out = io.open_output(path)
    out.stream.write(b"abc")
    assert out.close() == 3 and io.read_bytes(path) == b"abc"

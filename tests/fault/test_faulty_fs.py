"""Tests of the fault-injecting file system itself (fault_injection), on memory and local disk."""

from __future__ import annotations

import errno
import threading
import time

import pytest

from fault_injection import (
    WRITE_KINDS,
    Crash,
    CrashAfter,
    FaultyFileSystem,
    IOErrorAt,
    Latency,
    LoseUnsynced,
    NonAtomicRename,
    OpRecord,
    SimulatedCrash,
    TornWrite,
    crash_after,
    enumerate_crash_points,
    fresh_memory_storage,
    io_error_at,
    local_storage,
    record_operations,
    remove_storage,
    torn_writes,
)
from impl.errors import FileIOError, PaimonError, UnsupportedFileSystemError
from impl.fs import FileIO, supports_atomic_create

# ----------------------------------------------------------------------------- fixtures


@pytest.fixture(params=["memory", "local"])
def storage(request, tmp_path):
    """(inner healthy fs, fresh root) on memory or on local disk."""
    if request.param == "memory":
        inner, root = fresh_memory_storage("test-faulty")
        yield inner, root
        remove_storage(inner, root)
    else:
        inner, root = local_storage(tmp_path)()
        yield inner, root


@pytest.fixture(params=["memory", "local"])
def storage_factory(request, tmp_path):
    """A make_storage factory that also remembers every (fs, root) it handed out."""
    made = []
    base = local_storage(tmp_path) if request.param == "local" else fresh_memory_storage

    def make():
        inner, root = base()
        made.append((inner, root))
        return inner, root

    make.made = made
    yield make
    for inner, root in made:
        remove_storage(inner, root)


def files_under(inner, root) -> dict[str, bytes]:
    """Every file under root with its bytes, read through the healthy inner fs."""
    try:
        found = inner.find(root)
    except FileNotFoundError:
        return {}
    return {p: inner.cat_file(p) for p in found}


# ----------------------------------------------------------------------------- numbering


def test_every_fileio_operation_is_one_numbered_recorded_op(storage):
    inner, root = storage
    fs = FaultyFileSystem(inner)
    io = FileIO(fs)
    d = f"{root}/t/bucket-0"
    io.mkdirs(d)  # 0 makedirs
    io.write_bytes(f"{d}/data-1.parquet", b"abc")  # 1 pipe_file
    assert io.exists(f"{d}/data-1.parquet")  # 2 exists
    assert io.read_bytes(f"{d}/data-1.parquet") == b"abc"  # 3 cat_file
    assert io.list_names(d) == ["data-1.parquet"]  # 4 ls
    assert [s.size_bytes for s in io.list_status(d)] == [3]  # 5 ls
    assert [s.path.endswith("data-1.parquet") for s in io.walk_files(root)] == [True]  # 6 find
    assert io.file_size(f"{d}/data-1.parquet") == 3  # 7 size
    assert fs.info(f"{d}/data-1.parquet")["size"] == 3  # 8 info
    io.delete(f"{d}/data-1.parquet")  # 9 rm_file
    assert io.try_write_atomic(f"{root}/t/snapshot/snapshot-1", b"{}")  # 10 pipe, 11 link, 12 rm

    ops = fs.recorder.ops
    assert [r.op for r in ops] == list(range(13))
    assert [r.kind for r in ops] == [
        "makedirs", "pipe_file", "exists", "cat_file", "ls", "ls", "find", "size", "info",
        "rm_file", "pipe_file", "link_if_absent", "rm_file",
    ]
    assert ops[1] == (1, "pipe_file", f"{d}/data-1.parquet")
    assert ops[1].nbytes == 3
    assert ops[11].path == f"{root}/t/snapshot/snapshot-1"
    assert ops[11].src == ops[10].path and "/.snapshot-1." in ops[11].src
    assert ops[12].path == ops[10].path  # the temp name is dropped after the link
    assert fs.op_count == 13
    assert fs.recorder.kinds().count("ls") == 2
    assert fs.recorder.select(kind="link_if_absent") == [ops[11]]


def test_open_for_write_and_read_are_one_op_each(storage):
    inner, root = storage
    fs = FaultyFileSystem(inner)
    with fs.open(f"{root}/dir/notes.txt", "w") as f:
        f.write("hello ")
        f.write("world")
    with fs.open(f"{root}/dir/notes.txt", "ab") as f:
        f.write(b"!")
    assert inner.cat_file(f"{root}/dir/notes.txt") == b"hello world!"
    with fs.open(f"{root}/dir/notes.txt", "r") as f:
        assert f.read() == "hello world!"
    assert fs.recorder.kinds() == ["open_write", "open_write", "open_read"]


def test_op_counter_is_thread_safe(storage):
    inner, root = storage
    fs = FaultyFileSystem(inner)
    barrier = threading.Barrier(8)

    def work():
        barrier.wait()
        for _ in range(50):
            fs.exists(f"{root}/x")

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert fs.op_count == 400
    assert sorted(r.op for r in fs.recorder.ops) == list(range(400))


def test_wrapper_instances_are_not_cached_and_keep_inner_paths(storage):
    inner, root = storage
    a, b = FaultyFileSystem(inner), FaultyFileSystem(inner)
    assert a is not b and a != b
    a.exists(root)
    assert a.op_count == 1 and b.op_count == 0
    assert a._strip_protocol(f"{root}/t/x") == inner._strip_protocol(f"{root}/t/x") == f"{root}/t/x"
    io, path = FileIO.for_path(f"{root}/t", a)
    assert path == f"{root}/t" and io.fs is a


def test_plan_with_two_faults_at_one_op_is_rejected(storage):
    inner, _ = storage
    with pytest.raises(ValueError):
        FaultyFileSystem(inner, [Crash(3), IOErrorAt(3)])
    with pytest.raises(ValueError):
        FaultyFileSystem(inner, [TornWrite(1, -1)])
    with pytest.raises(TypeError):
        FaultyFileSystem(inner, ["crash"])


# ----------------------------------------------------------------------------- crash


def test_simulated_crash_is_not_an_ordinary_error():
    assert issubclass(SimulatedCrash, BaseException)
    assert not issubclass(SimulatedCrash, Exception)
    assert not issubclass(SimulatedCrash, (OSError, PaimonError))


def test_crash_stops_everything_from_op_n(storage):
    inner, root = storage
    fs = FaultyFileSystem(inner, [Crash(at_op=2)])
    fs.pipe_file(f"{root}/a", b"A")  # 0
    fs.pipe_file(f"{root}/b", b"B")  # 1
    before = files_under(inner, root)
    with pytest.raises(SimulatedCrash) as info:
        fs.pipe_file(f"{root}/c", b"C")  # 2: crash, does not land
    assert (info.value.op, info.value.kind, info.value.crash_op) == (2, "pipe_file", 2)
    for later in (
        lambda: fs.pipe_file(f"{root}/d", b"D"),
        lambda: fs.cat_file(f"{root}/a"),
        lambda: fs.rm_file(f"{root}/a"),
        lambda: fs.mv(f"{root}/a", f"{root}/e"),
        lambda: fs.makedirs(f"{root}/newdir", exist_ok=True),
        lambda: fs.link_if_absent(f"{root}/a", f"{root}/f"),
        lambda: fs.open(f"{root}/a", "rb"),
    ):
        with pytest.raises(SimulatedCrash) as later_info:
            later()
        assert later_info.value.crash_op == 2 and later_info.value.op > 2
    assert fs.crashed and fs.crash_info.op == 2
    assert files_under(inner, root) == before == {f"{root}/a": b"A", f"{root}/b": b"B"}
    assert not inner.exists(f"{root}/newdir")
    assert len(fs.recorder.ops) == 10  # later attempts are still numbered and recorded


def test_crash_is_not_swallowed_by_best_effort_cleanup(storage):
    inner, root = storage
    inner.pipe_file(f"{root}/old-1", b"x")
    fs = FaultyFileSystem(inner, [Crash(at_op=0)])
    io = FileIO(fs)
    swallowed = False
    with pytest.raises(SimulatedCrash):
        try:
            io.delete_quietly([f"{root}/old-1"])  # catches Exception inside
            fs.rm_file(f"{root}/old-1")
        except Exception:  # noqa: BLE001 - the pattern under test
            swallowed = True
    assert not swallowed
    assert inner.cat_file(f"{root}/old-1") == b"x"


def test_crash_at_publish_propagates_through_finally_cleanup(storage):
    inner, root = storage
    fs = FaultyFileSystem(inner, [Crash(at_op=1)])  # 0 temp write, 1 link (crash)
    with pytest.raises(SimulatedCrash):
        FileIO(fs).try_write_atomic(f"{root}/snapshot/snapshot-1", b"{}")
    # the finally-block cleanup (delete_quietly of the temp file) did not reach storage
    names = [p.rsplit("/", 1)[-1] for p in files_under(inner, root)]
    assert len(names) == 1 and names[0].startswith(".snapshot-1.") and names[0].endswith(".tmp")
    assert [r.kind for r in fs.recorder.ops] == ["pipe_file", "link_if_absent", "rm_file"]


def test_crash_after_lands_the_operation_then_crashes(storage):
    inner, root = storage
    fs = FaultyFileSystem(inner, [CrashAfter(1)])
    with pytest.raises(SimulatedCrash) as info:
        FileIO(fs).try_write_atomic(f"{root}/snapshot/snapshot-1", b"{\"id\": 1}")
    # what propagates is the crash of the finally-cleanup (op 2), caused by the one at op 1
    assert info.value.crash_op == 1 and fs.crash_info.kind == "link_if_absent"
    assert inner.cat_file(f"{root}/snapshot/snapshot-1") == b"{\"id\": 1}"
    assert len(files_under(inner, root)) == 2  # the temp file was not cleaned up


def test_manual_crash_between_operations(storage):
    inner, root = storage
    fs = FaultyFileSystem(inner)
    fs.pipe_file(f"{root}/a", b"A")
    fs.crash()
    with pytest.raises(SimulatedCrash):
        fs.exists(f"{root}/a")
    assert inner.cat_file(f"{root}/a") == b"A"


def test_crash_in_one_thread_stops_the_others(storage):
    inner, root = storage
    fs = FaultyFileSystem(inner, [Crash(at_op=20)])
    outcomes: list[str] = []
    lock = threading.Lock()

    def work(i):
        try:
            for j in range(50):
                fs.pipe_file(f"{root}/w{i}/f{j}", b"x")
            res = "finished"
        except SimulatedCrash:
            res = "crashed"
        with lock:
            outcomes.append(res)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert outcomes == ["crashed"] * 4
    assert len(files_under(inner, root)) == 20  # exactly ops 0..19 landed
    assert fs.crash_info.op == 20


def test_crash_waits_for_lower_numbered_ops_still_in_flight(storage):
    inner, root = storage
    slow_inner = FaultyFileSystem(inner, [Latency("pipe_file", 0.3)])  # slow storage underneath
    fs = FaultyFileSystem(slow_inner, [LoseUnsynced(mode="vanish"), Crash(at_op=1)])
    writer = threading.Thread(target=lambda: fs.pipe_file(f"{root}/slow", b"S"))  # op 0
    writer.start()
    deadline = time.monotonic() + 10
    while fs.op_count < 1 and time.monotonic() < deadline:
        time.sleep(0.001)
    with pytest.raises(SimulatedCrash):
        fs.exists(root)  # op 1 crashes while op 0 is still in flight
    writer.join()
    # op 0 landed before the crash took effect, so it was unsynced when the loss was applied
    assert fs.lost_files == [(inner._strip_protocol(f"{root}/slow"), "vanished")]
    assert not inner.exists(f"{root}/slow")


# ----------------------------------------------------------------------------- I/O errors


def test_io_error_is_transient(storage):
    inner, root = storage
    fs = FaultyFileSystem(inner, [IOErrorAt(1), IOErrorAt(3)])
    io = FileIO(fs)
    io.write_bytes(f"{root}/m/manifest-1", b"M")  # 0
    with pytest.raises(FileIOError) as info:
        io.read_bytes(f"{root}/m/manifest-1")  # 1: EIO
    assert isinstance(info.value.__cause__, OSError) and info.value.__cause__.errno == errno.EIO
    assert io.read_bytes(f"{root}/m/manifest-1") == b"M"  # 2
    with pytest.raises(FileIOError):
        io.write_bytes(f"{root}/m/manifest-2", b"N")  # 3: EIO, does not land
    assert not inner.exists(f"{root}/m/manifest-2")
    io.write_bytes(f"{root}/m/manifest-2", b"N")  # 4: the retry lands
    assert inner.cat_file(f"{root}/m/manifest-2") == b"N"
    assert not fs.crashed


def test_io_error_after_landing_reports_failure_of_a_write_that_happened(storage):
    inner, root = storage
    fs = FaultyFileSystem(inner, [IOErrorAt(1, landed=True)])
    io = FileIO(fs)
    with pytest.raises(FileIOError):
        io.try_write_atomic(f"{root}/snapshot/snapshot-7", b"{}")
    assert inner.cat_file(f"{root}/snapshot/snapshot-7") == b"{}"
    assert len(files_under(inner, root)) == 1  # cleanup (op 2) still ran: transient


# ----------------------------------------------------------------------------- torn writes


def test_torn_write_lands_exactly_the_prefix_then_crashes(storage):
    inner, root = storage
    data = bytes(range(100))
    fs = FaultyFileSystem(inner, [TornWrite(1, keep_bytes=37)])
    fs.pipe_file(f"{root}/a", data)
    with pytest.raises(SimulatedCrash):
        fs.pipe_file(f"{root}/sub/b", data)
    assert inner.cat_file(f"{root}/sub/b") == data[:37]
    with pytest.raises(SimulatedCrash):
        fs.pipe_file(f"{root}/c", data)
    assert files_under(inner, root) == {f"{root}/a": data, f"{root}/sub/b": data[:37]}


def test_torn_write_through_open_for_write(storage):
    inner, root = storage
    fs = FaultyFileSystem(inner, [TornWrite(0, keep_bytes=4)])
    with pytest.raises(SimulatedCrash):
        with fs.open(f"{root}/x", "wb") as f:
            f.write(b"0123456789")
    assert inner.cat_file(f"{root}/x") == b"0123"


def test_torn_link_if_absent_leaves_a_prefix_of_the_source_at_the_target(storage):
    inner, root = storage
    body = b'{"id": 3, "schemaId": 0, "commitUser": "u"}'
    fs = FaultyFileSystem(inner, [TornWrite(1, keep_bytes=10)])
    with pytest.raises(SimulatedCrash):
        FileIO(fs).try_write_atomic(f"{root}/snapshot/snapshot-3", body)
    assert inner.cat_file(f"{root}/snapshot/snapshot-3") == body[:10]


def test_torn_link_never_replaces_an_existing_target(storage):
    inner, root = storage
    healthy = FaultyFileSystem(inner)
    healthy.pipe_file(f"{root}/snapshot/snapshot-1", b"WINNER")
    healthy.pipe_file(f"{root}/snapshot/tmp", b"LOSER-LOSER")
    fs = FaultyFileSystem(inner, [TornWrite(0, keep_bytes=3)])
    with pytest.raises(SimulatedCrash):
        fs.link_if_absent(f"{root}/snapshot/tmp", f"{root}/snapshot/snapshot-1")
    assert inner.cat_file(f"{root}/snapshot/snapshot-1") == b"WINNER"


def test_torn_write_at_an_operation_without_bytes_is_a_plain_crash(storage):
    inner, root = storage
    FaultyFileSystem(inner).pipe_file(f"{root}/keep", b"K")
    fs = FaultyFileSystem(inner, [TornWrite(0, keep_bytes=1)])
    with pytest.raises(SimulatedCrash):
        fs.rm_file(f"{root}/keep")
    assert inner.cat_file(f"{root}/keep") == b"K"


# ----------------------------------------------------------------------------- renames


def test_atomic_rename_is_one_op(storage):
    inner, root = storage
    fs = FaultyFileSystem(inner)
    fs.pipe_file(f"{root}/a", b"A")
    fs.mv(f"{root}/a", f"{root}/b")
    assert fs.recorder.kinds() == ["pipe_file", "mv"]
    assert fs.recorder.ops[1].src == f"{root}/a"
    assert files_under(inner, root) == {f"{root}/b": b"A"}
    crash = FaultyFileSystem(inner, [Crash(0)])
    with pytest.raises(SimulatedCrash):
        crash.rename(f"{root}/b", f"{root}/c")
    assert files_under(inner, root) == {f"{root}/b": b"A"}


def test_non_atomic_rename_is_copy_then_delete(storage):
    inner, root = storage
    fs = FaultyFileSystem(inner, [NonAtomicRename()])
    fs.pipe_file(f"{root}/a", b"A")
    fs.mv(f"{root}/a", f"{root}/b")
    assert fs.recorder.ops[1:] == [(1, "mv.copy", f"{root}/b"), (2, "mv.delete", f"{root}/a")]
    assert files_under(inner, root) == {f"{root}/b": b"A"}


def test_crash_between_copy_and_delete_leaves_both_files(storage):
    inner, root = storage
    FaultyFileSystem(inner).pipe_file(f"{root}/a", b"AAAA")
    fs = FaultyFileSystem(inner, [NonAtomicRename(), Crash(at_op=1)])
    with pytest.raises(SimulatedCrash):
        fs.rename(f"{root}/a", f"{root}/b")
    assert files_under(inner, root) == {f"{root}/a": b"AAAA", f"{root}/b": b"AAAA"}


def test_non_atomic_rename_of_a_directory_copies_every_file_first(storage):
    inner, root = storage
    setup = FaultyFileSystem(inner)
    setup.pipe_file(f"{root}/d/x", b"X")
    setup.pipe_file(f"{root}/d/sub/y", b"Y")
    fs = FaultyFileSystem(inner, [NonAtomicRename(), Crash(at_op=2)])
    with pytest.raises(SimulatedCrash):
        fs.mv(f"{root}/d", f"{root}/e", recursive=True)
    assert [r.kind for r in fs.recorder.ops] == ["mv.copy", "mv.copy", "mv.delete"]
    assert files_under(inner, root) == {
        f"{root}/d/x": b"X", f"{root}/d/sub/y": b"Y", f"{root}/e/x": b"X", f"{root}/e/sub/y": b"Y",
    }


# ----------------------------------------------------------------------------- lost unsynced data


def test_unsynced_files_are_lost_on_crash_but_durable_ones_survive(storage):
    inner, root = storage
    FaultyFileSystem(inner).pipe_file(f"{root}/history", b"H")  # written before: durable
    fs = FaultyFileSystem(inner, [LoseUnsynced(seed=7)])
    fs.pipe_file(f"{root}/synced", b"S")
    fs.sync(f"{root}/synced")
    fs.pipe_file(f"{root}/dir/u1", b"U1")
    fs.pipe_file(f"{root}/dir/u2", b"U2")
    fs.pipe_file(f"{root}/history", b"H2")  # overwrite of a durable file: unsynced again
    assert sorted(fs.unsynced_paths()) == sorted(
        inner._strip_protocol(p) for p in (f"{root}/dir/u1", f"{root}/dir/u2", f"{root}/history")
    )
    fs.crash()
    after = files_under(inner, root)
    assert after[f"{root}/synced"] == b"S"
    lost = dict(fs.lost_files)
    assert set(lost) == {inner._strip_protocol(p) for p in (f"{root}/dir/u1", f"{root}/dir/u2", f"{root}/history")}
    for path, fate in lost.items():
        assert fate == LoseUnsynced(seed=7).fate(path)
        if fate == "vanished":
            assert path not in after
        else:
            assert after[path] == b""


def test_lose_unsynced_fates_are_deterministic_and_mixed():
    names = [f"/t/data-{i}.parquet" for i in range(64)]
    fates = [LoseUnsynced(seed=1).fate(n) for n in names]
    assert fates == [LoseUnsynced(seed=1).fate(n) for n in names]
    assert set(fates) == {"vanished", "emptied"}
    assert fates != [LoseUnsynced(seed=2).fate(n) for n in names]
    assert {LoseUnsynced(mode="vanish").fate(n) for n in names} == {"vanished"}
    assert {LoseUnsynced(mode="empty").fate(n) for n in names} == {"emptied"}
    with pytest.raises(ValueError):
        LoseUnsynced(mode="sometimes")


@pytest.mark.parametrize("mode,expect", [("vanish", None), ("empty", b"")])
def test_lose_unsynced_on_an_injected_crash(storage, mode, expect):
    inner, root = storage
    fs = FaultyFileSystem(inner, [LoseUnsynced(mode=mode), Crash(at_op=2)])
    fs.pipe_file(f"{root}/m/manifest-a", b"M" * 10)
    fs.pipe_file(f"{root}/m/manifest-b", b"N" * 10)
    with pytest.raises(SimulatedCrash):
        fs.pipe_file(f"{root}/m/manifest-c", b"O")
    after = files_under(inner, root)
    for name in ("manifest-a", "manifest-b"):
        assert after.get(f"{root}/m/{name}") == expect
    assert f"{root}/m/manifest-c" not in after


def test_link_if_absent_is_a_global_durability_barrier(storage):
    inner, root = storage
    fs = FaultyFileSystem(inner, [LoseUnsynced(mode="vanish")])
    io = FileIO(fs)
    io.write_bytes(f"{root}/manifest/manifest-1", b"M1")
    io.write_bytes(f"{root}/manifest/manifest-list-1", b"L1")
    assert io.try_write_atomic(f"{root}/snapshot/snapshot-1", b"S1")
    io.write_bytes(f"{root}/snapshot/LATEST", b"1")  # after the barrier: unsynced
    fs.crash()
    assert files_under(inner, root) == {
        f"{root}/manifest/manifest-1": b"M1",
        f"{root}/manifest/manifest-list-1": b"L1",
        f"{root}/snapshot/snapshot-1": b"S1",
    }
    assert [p for p, _ in fs.lost_files] == [inner._strip_protocol(f"{root}/snapshot/LATEST")]


def test_source_barrier_syncs_only_the_linked_file(storage):
    inner, root = storage
    fs = FaultyFileSystem(inner, [LoseUnsynced(mode="vanish", barrier="source")])
    fs.pipe_file(f"{root}/manifest-1", b"M1")  # never synced
    fs.pipe_file(f"{root}/tmp", b"S1")
    assert fs.link_if_absent(f"{root}/tmp", f"{root}/snapshot-1")
    fs.crash()
    assert files_under(inner, root) == {f"{root}/tmp": b"S1", f"{root}/snapshot-1": b"S1"}


def test_rename_carries_unsynced_state_and_delete_forgets_it(storage):
    inner, root = storage
    fs = FaultyFileSystem(inner, [LoseUnsynced(mode="empty")])
    fs.pipe_file(f"{root}/a", b"A")
    fs.mv(f"{root}/a", f"{root}/b")
    fs.pipe_file(f"{root}/gone", b"G")
    fs.rm_file(f"{root}/gone")
    fs.crash()
    assert files_under(inner, root) == {f"{root}/b": b""}
    assert [p for p, _ in fs.lost_files] == [inner._strip_protocol(f"{root}/b")]


def test_torn_prefix_is_what_survives(storage):
    inner, root = storage
    fs = FaultyFileSystem(inner, [LoseUnsynced(mode="vanish"), TornWrite(1, keep_bytes=2)])
    fs.pipe_file(f"{root}/a", b"AAAA")
    with pytest.raises(SimulatedCrash):
        fs.pipe_file(f"{root}/b", b"BBBB")
    assert files_under(inner, root) == {f"{root}/b": b"BB"}


# ----------------------------------------------------------------------------- link_if_absent


def test_link_if_absent_never_replaces_and_is_one_op(storage):
    inner, root = storage
    fs = FaultyFileSystem(inner)
    fs.pipe_file(f"{root}/src-1", b"first")
    fs.pipe_file(f"{root}/src-2", b"second")
    assert fs.link_if_absent(f"{root}/src-1", f"{root}/dst") is True
    assert fs.link_if_absent(f"{root}/src-2", f"{root}/dst") is False
    assert inner.cat_file(f"{root}/dst") == b"first"
    assert [r.kind for r in fs.recorder.ops] == ["pipe_file", "pipe_file", "link_if_absent", "link_if_absent"]
    assert fs.recorder.ops[3] == (3, "link_if_absent", f"{root}/dst")
    assert fs.recorder.ops[3].src == f"{root}/src-2"
    assert supports_atomic_create(fs) and FileIO(fs).supports_atomic_create()


def test_racing_publishers_through_the_wrapper_have_exactly_one_winner(storage):
    inner, root = storage
    fs = FaultyFileSystem(inner, [Latency("link_if_absent", 0.01)])
    io = FileIO(fs)
    start = threading.Barrier(8)
    results: dict[int, bool] = {}

    def publish(i):
        start.wait()
        results[i] = io.try_write_atomic(f"{root}/snapshot/snapshot-5", f"writer-{i}".encode())

    threads = [threading.Thread(target=publish, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [i for i, won in results.items() if won]
    assert len(results) == 8 and len(winners) == 1
    assert inner.cat_file(f"{root}/snapshot/snapshot-5") == f"writer-{winners[0]}".encode()
    assert len(files_under(inner, root)) == 1  # every temp file was dropped


def test_without_atomic_create_impl_refuses_to_publish(storage):
    inner, root = storage
    fs = FaultyFileSystem(inner, atomic_create=False)
    assert fs.link_if_absent is None
    assert not supports_atomic_create(fs)
    with pytest.raises(UnsupportedFileSystemError):
        FileIO(fs).try_write_atomic(f"{root}/snapshot/snapshot-1", b"{}")
    assert files_under(inner, root) == {}  # no snapshot, and the temp file was cleaned up


# ----------------------------------------------------------------------------- latency


def test_latency_delays_matching_operations(storage):
    inner, root = storage
    calls = []

    def slow_snapshots(kind, path):
        calls.append((kind, path))
        return "/snapshot/" in path

    fs = FaultyFileSystem(inner, [Latency(slow_snapshots, 0.05), Latency("cat_file", 0.05)])
    t0 = time.monotonic()
    fs.pipe_file(f"{root}/snapshot/snapshot-1", b"x")
    assert time.monotonic() - t0 >= 0.05
    t1 = time.monotonic()
    fs.pipe_file(f"{root}/data/f", b"y")
    fs.cat_file(f"{root}/data/f")  # matches by kind substring
    assert time.monotonic() - t1 >= 0.05
    assert calls[:2] == [("pipe_file", f"{root}/snapshot/snapshot-1"), ("pipe_file", f"{root}/data/f")]


# ----------------------------------------------------------------------------- crash-point enumeration


def _commit_like_scenario(fs, root):
    """Data file, manifest, manifest list, snapshot (temp+link+cleanup), LATEST hint: 7 ops."""
    io = FileIO(fs)
    io.write_bytes(f"{root}/t/bucket-0/data-1.parquet", b"D" * 20)
    io.write_bytes(f"{root}/t/manifest/manifest-1", b"M" * 10)
    io.write_bytes(f"{root}/t/manifest/manifest-list-1", b"L" * 5)
    assert io.try_write_atomic(f"{root}/t/snapshot/snapshot-2", b'{"id": 2}')
    io.overwrite_hint(f"{root}/t/snapshot/LATEST", "2")
    return "committed"


_CONTENTS = {
    "data-1.parquet": b"D" * 20,
    "manifest-1": b"M" * 10,
    "manifest-list-1": b"L" * 5,
    "snapshot-2": b'{"id": 2}',
    "LATEST": b"2",
}


def _history(fs, root):
    io = FileIO(fs)
    io.write_bytes(f"{root}/t/manifest/manifest-0", b"old")
    assert io.try_write_atomic(f"{root}/t/snapshot/snapshot-1", b'{"id": 1}')


def test_enumerate_yields_one_outcome_per_operation_on_fresh_storage(storage_factory):
    reference = record_operations(_commit_like_scenario, storage_factory, setup=_history)
    assert [r.kind for r in reference] == [
        "pipe_file", "pipe_file", "pipe_file", "pipe_file", "link_if_absent", "rm_file", "pipe_file",
    ]
    n = len(reference)
    storage_factory.made.clear()
    seen = []
    for outcome in enumerate_crash_points(_commit_like_scenario, storage_factory, setup=_history):
        inner, root = outcome.inner_fs, outcome.root
        seen.append(outcome.op)
        assert outcome.crashed and isinstance(outcome.error, SimulatedCrash)
        assert not outcome.diverged and not outcome.crash_swallowed
        assert outcome.kind == reference[outcome.op].kind and outcome.total_ops == n
        assert outcome.faults == (Crash(outcome.op),)
        assert outcome.error.crash_op == outcome.op == outcome.fs.crash_info.op
        files = files_under(inner, root)
        # history from setup is always there, untouched
        assert files[f"{root}/t/snapshot/snapshot-1"] == b'{"id": 1}'
        assert files[f"{root}/t/manifest/manifest-0"] == b"old"
        # exactly the effects of ops before the crash point landed
        assert (f"{root}/t/bucket-0/data-1.parquet" in files) == (outcome.op > 0)
        assert (f"{root}/t/manifest/manifest-list-1" in files) == (outcome.op > 2)
        assert (f"{root}/t/snapshot/snapshot-2" in files) == (outcome.op > 4)
        assert (f"{root}/t/snapshot/LATEST" in files) == (outcome.op > 6)
        temp_left = any("/.snapshot-2." in p for p in files)
        assert temp_left == (outcome.op in (4, 5))
        # a healthy reopen sees the same storage
        assert outcome.healthy_fs().cat_file(f"{root}/t/snapshot/snapshot-1") == b'{"id": 1}'
    assert seen == list(range(n))
    roots = [r for _, r in storage_factory.made]
    assert len(roots) == n + 1 and len(set(roots)) == n + 1  # recording run + one per point
    for inner, root in storage_factory.made:  # cleaned up as the generator moved on
        assert files_under(inner, root) == {}


def test_enumerate_with_torn_writes_tears_only_write_ops(storage_factory):
    outcomes = []
    for outcome in enumerate_crash_points(_commit_like_scenario, storage_factory, fault_at=torn_writes()):
        torn = outcome.faults[0]
        assert isinstance(torn, TornWrite) and outcome.kind in WRITE_KINDS
        files = files_under(outcome.inner_fs, outcome.root)
        full = _CONTENTS.get(outcome.path.rsplit("/", 1)[-1], b'{"id": 2}')  # else: the temp snapshot
        assert torn.keep_bytes == len(full) // 2
        assert files[outcome.path] == full[: torn.keep_bytes]
        later = [r for r in outcome.ops if r.op > outcome.op]
        assert not later or all(r.kind == "rm_file" for r in later)  # only the finally-cleanup tried
        outcomes.append(outcome.op)
    assert outcomes == [0, 1, 2, 3, 4, 6]  # op 5 (rm_file of the temp) writes nothing


def test_enumerate_reports_errors_and_results_instead_of_raising(storage_factory):
    by_op = {o.op: o for o in enumerate_crash_points(
        _commit_like_scenario, storage_factory, fault_at=io_error_at, cleanup=False)}
    assert len(by_op) == 7
    assert isinstance(by_op[0].error, FileIOError) and not by_op[0].crashed
    assert by_op[5].error is None and by_op[5].result == "committed"  # quiet cleanup ate the EIO
    after = {o.op: o for o in enumerate_crash_points(
        _commit_like_scenario, storage_factory, fault_at=crash_after)}
    assert all(o.crashed for o in after.values())


def test_enumerate_flags_a_scenario_that_swallows_the_crash(storage_factory):
    def swallowing(fs, root):
        try:
            fs.pipe_file(f"{root}/a", b"a")
            fs.pipe_file(f"{root}/b", b"b")
        except BaseException:  # noqa: BLE001 - the bug under test
            return "survived?"

    outcomes = list(enumerate_crash_points(swallowing, storage_factory, cleanup=False))
    assert len(outcomes) == 2
    assert all(o.crash_swallowed and not o.crashed and o.result == "survived?" for o in outcomes)


def test_enumerate_with_base_faults_counts_the_split_rename(storage_factory):
    def rename_scenario(fs, root):
        fs.pipe_file(f"{root}/a", b"A")
        fs.mv(f"{root}/a", f"{root}/b")

    reference = record_operations(rename_scenario, storage_factory, base_faults=[NonAtomicRename()])
    assert [r.kind for r in reference] == ["pipe_file", "mv.copy", "mv.delete"]
    states = {}
    for o in enumerate_crash_points(rename_scenario, storage_factory, base_faults=[NonAtomicRename()]):
        states[o.op] = sorted(p.rsplit("/", 1)[-1] for p in files_under(o.inner_fs, o.root))
    assert states == {0: [], 1: ["a"], 2: ["a", "b"]}


def test_op_record_is_a_plain_triple():
    r = OpRecord(3, "pipe_file", "/x", nbytes=5)
    op, kind, path = r
    assert (op, kind, path) == (3, "pipe_file", "/x") and r == (3, "pipe_file", "/x")
    assert r.is_write and r.nbytes == 5 and r.src is None

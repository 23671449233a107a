"""ManifestFileMerger: never changes the live set, full merge drops DELETEs, minor merge needs
merge_min_count files, defaults and per-table options, cleanup when a merge fails midway."""

from __future__ import annotations

import pytest
from core_helpers import HookedFileIO, InjectedIOError, fail_on_write, memory_root
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from impl.commit.file_store_commit import FileStoreCommit
from impl.commit.options import CommitOptions
from impl.data.binary_row import encode_row
from impl.data.types import BIGINT, STRING, DataField
from impl.datafile.meta import DataFileMeta
from impl.errors import InvalidOptionError
from impl.fs.paths import TablePaths
from impl.manifest.entries import live_entries, merge_entries
from impl.manifest.manifest_file import ManifestFile
from impl.manifest.merger import ManifestFileMerger, ManifestMergeKind, MergeOptions
from impl.manifest.records import FileKind, ManifestEntry
from impl.schema.records import TableSchema

PT = [STRING()]
PARTS = [encode_row(["a"], PT), encode_row(["b"], PT), encode_row(["c"], PT), encode_row([None], PT)]
BIG = 1 << 40


def entry(kind, name, partition=PARTS[0], bucket=0, level=0):
    return ManifestEntry(kind, partition, bucket, 2, DataFileMeta(name, 100, 1, level=level))


def write_manifests(mf: ManifestFile, chunks) -> list:
    metas = []
    for chunk in chunks:
        if chunk:
            metas.extend(mf.write(chunk))
    return metas


def manifest_names(fio, root) -> set[str]:
    return set(fio.list_names(TablePaths(root).manifest_dir))


def setup(target=BIG):
    fio, root = memory_root()
    paths = TablePaths(root)
    return fio, root, ManifestFile(fio, paths, PT, target_file_size_bytes=target)


# ----------------------------------------------------------------------------- histories


@st.composite
def complete_histories(draw):
    """A table's whole history (every DELETE after its ADD), cut into small manifests."""
    n = draw(st.integers(1, 40))
    files = [(f"data-{i}.parquet", draw(st.sampled_from(PARTS)), draw(st.integers(0, 2)), draw(st.integers(0, 1)))
             for i in range(n)]
    lifecycles = []
    for name, part, bucket, level in files:
        lc = [entry(FileKind.ADD, name, part, bucket, level)]
        if draw(st.booleans()):
            lc.append(entry(FileKind.DELETE, name, part, bucket, level))
        lifecycles.append(lc)
    history, pending = [], [list(lc) for lc in lifecycles]
    while any(pending):
        i = draw(st.sampled_from([i for i, lc in enumerate(pending) if lc]))
        history.append(pending[i].pop(0))
    cuts = sorted(set(draw(st.lists(st.integers(1, len(history)), max_size=len(history)))))
    chunks, prev = [], 0
    for c in cuts + [len(history)]:
        chunks.append(history[prev:c])
        prev = c
    return history, chunks


_options = st.builds(
    MergeOptions,
    target_file_size_bytes=st.sampled_from([1, 2500, 6000, 20000]),
    full_compaction_threshold_bytes=st.sampled_from([1, 5000, 30000, BIG]),
    merge_min_count=st.sampled_from([1, 2, 3, 5, 30]),
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(complete_histories(), _options, st.sampled_from([1, 3000, BIG]))
def test_merge_never_changes_the_live_set(hc, options, write_target):
    history, chunks = hc
    fio, root, mf = setup(write_target)
    metas = write_manifests(mf, chunks)
    before_files = manifest_names(fio, root)
    result = ManifestFileMerger(mf, options).merge(metas)
    event(f"merge kind {result.kind}")

    fresh = ManifestFile(fio, TablePaths(root), PT)  # read what is on storage, not the cache
    merged_entries = fresh.read_all(result.manifests)
    assert merge_entries(merged_entries) == merge_entries(history)
    assert sorted(e.file_name for e in live_entries(merged_entries)) == sorted(
        e.file_name for e in live_entries(history))
    if result.kind is ManifestMergeKind.FULL:
        assert all(e.kind is FileKind.ADD for e in merged_entries)
    if result.kind is ManifestMergeKind.NONE:
        assert result.manifests == metas and not result.written
    # written manifests are in the result and on storage; inputs are never deleted
    assert {m.file_name for m in result.written} <= {m.file_name for m in result.manifests}
    assert manifest_names(fio, root) == before_files | {m.file_name for m in result.written}
    for m in result.written:
        assert m.num_added_files + m.num_deleted_files == len(fresh.read(m.file_name)) > 0


def test_full_merge_drops_deletes_and_keeps_big_clean_base():
    fio, root, mf = setup()
    base_metas = mf.write([entry(FileKind.ADD, f"base-{i}", PARTS[i % 2]) for i in range(20)])
    deltas = [mf.write([entry(FileKind.ADD, f"new-{i}", PARTS[2])]) for i in range(3)]
    deletes = mf.write([entry(FileKind.DELETE, "base-3", PARTS[1]), entry(FileKind.DELETE, "new-1", PARTS[2])])
    metas = base_metas + [m for d in deltas for m in d] + deletes
    options = MergeOptions(target_file_size_bytes=base_metas[0].file_size,
                           full_compaction_threshold_bytes=1, merge_min_count=30)
    result = ManifestFileMerger(mf, options).merge(metas)
    assert result.kind is ManifestMergeKind.FULL
    got = ManifestFile(fio, TablePaths(root), PT).read_all(result.manifests)
    assert all(e.kind is FileKind.ADD for e in got)
    names = sorted(e.file_name for e in got)
    assert names == sorted([f"base-{i}" for i in range(20) if i != 3] + ["new-0", "new-2"])


def test_full_merge_leaves_clean_base_manifests_untouched():
    fio, root, mf = setup()
    base = mf.write([entry(FileKind.ADD, f"base-{i}", PARTS[0]) for i in range(30)])
    delta = mf.write([entry(FileKind.ADD, "n1", PARTS[1])]) + mf.write([entry(FileKind.DELETE, "n1", PARTS[1])])
    options = MergeOptions(target_file_size_bytes=base[0].file_size, full_compaction_threshold_bytes=1,
                           merge_min_count=30)
    result = ManifestFileMerger(mf, options).merge(base + delta)
    assert result.kind is ManifestMergeKind.FULL
    assert result.manifests == base  # nothing survives the delta; the clean base is reused as is
    assert result.written == []


def test_full_merge_rewrites_only_from_the_first_base_manifest_with_a_deleted_file():
    fio, root, mf = setup()
    b0 = mf.write([entry(FileKind.ADD, f"a-{i}", PARTS[0]) for i in range(30)])
    b1 = mf.write([entry(FileKind.ADD, f"b-{i}", PARTS[1]) for i in range(30)])
    b2 = mf.write([entry(FileKind.ADD, f"c-{i}", PARTS[2]) for i in range(30)])
    d = mf.write([entry(FileKind.DELETE, "b-7", PARTS[1])])
    target = min(m.file_size for m in b0 + b1 + b2)
    result = ManifestFileMerger(mf, MergeOptions(target, 1, 30)).merge(b0 + b1 + b2 + d)
    assert result.kind is ManifestMergeKind.FULL
    assert result.manifests[0] == b0[0]  # partition 'a' cannot hold the deleted file: kept
    got = ManifestFile(fio, TablePaths(root), PT).read_all(result.manifests)
    assert len(got) == 89 and "b-7" not in {e.file_name for e in got}


def test_minor_merge_only_with_merge_min_count_files():
    for min_count, expect in [(6, ManifestMergeKind.NONE), (5, ManifestMergeKind.MINOR), (2, ManifestMergeKind.MINOR)]:
        fio, root, mf = setup()
        metas = [m for i in range(5) for m in mf.write([entry(FileKind.ADD, f"f{i}")])]
        result = ManifestFileMerger(mf, MergeOptions(BIG, BIG, min_count)).merge(metas)
        assert result.kind is expect, min_count
        if expect is ManifestMergeKind.NONE:
            assert result.manifests == metas
        else:
            assert len(result.manifests) == 1
            assert [e.file_name for e in ManifestFile(fio, TablePaths(root), PT).read_all(result.manifests)] == [
                f"f{i}" for i in range(5)]


def test_minor_merge_groups_reaching_target_and_keeps_order_and_deletes():
    fio, root, mf = setup()
    metas = [m for i in range(6) for m in mf.write([entry(FileKind.ADD, f"f{i}")])]
    metas += mf.write([entry(FileKind.DELETE, "f0")])  # its ADD is in the first group
    size = metas[0].file_size
    # groups of two reach the target; the trailing single DELETE manifest is left alone
    result = ManifestFileMerger(mf, MergeOptions(2 * size, BIG, 30)).merge(metas)
    assert result.kind is ManifestMergeKind.MINOR
    assert len(result.manifests) == 4 and result.manifests[-1] == metas[-1]
    got = ManifestFile(fio, TablePaths(root), PT).read_all(result.manifests)
    assert [(e.kind, e.file_name) for e in got] == [(FileKind.ADD, f"f{i}") for i in range(6)] + [
        (FileKind.DELETE, "f0")]
    assert [e.file_name for e in live_entries(got)] == [f"f{i}" for i in range(1, 6)]


# ----------------------------------------------------------------------------- options


def test_defaults():
    assert MergeOptions() == MergeOptions(8 * 1024 * 1024, 16 * 1024 * 1024, 30)
    assert CommitOptions.from_options({}).merge == MergeOptions(8 << 20, 16 << 20, 30)
    assert CommitOptions.from_options({}).max_retries == 10


def test_options_are_configurable_per_table():
    opts = {"manifest.target-file-size": "2 mb", "manifest.full-compaction-threshold-size": "3MB",
            "manifest.merge-min-count": "7"}
    assert CommitOptions.from_options(opts).merge == MergeOptions(2 << 20, 3 << 20, 7)
    assert CommitOptions.from_options({"manifest.target-file-size": "512kb"}).merge.target_file_size_bytes == 512 << 10
    fio, root = memory_root()
    schema = TableSchema(0, (DataField(0, "id", BIGINT(False)),), (), ("id",), dict(opts, bucket="1"))
    commit = FileStoreCommit(fio, root, schema)
    assert commit.merger.options == MergeOptions(2 << 20, 3 << 20, 7)
    assert commit.manifest_file.target_file_size_bytes == 2 << 20


@pytest.mark.parametrize("key, value", [("manifest.target-file-size", "lots"), ("manifest.merge-min-count", "0"),
                                        ("manifest.merge-min-count", "x"),
                                        ("manifest.full-compaction-threshold-size", "1 parsec")])
def test_bad_options_name_the_option(key, value):
    with pytest.raises(InvalidOptionError) as ei:
        CommitOptions.from_options({key: value})
    assert key in str(ei.value)


# ----------------------------------------------------------------------------- failure midway


def _failing_setup(k: int):
    """Manifests written on a healthy FileIO; the merger writes through one failing on the k-th manifest."""
    healthy, root = memory_root()
    paths = TablePaths(root)
    mf = ManifestFile(healthy, paths, PT, target_file_size_bytes=BIG)
    metas = [m for i in range(12) for m in mf.write([entry(FileKind.ADD, f"f{i}", PARTS[i % 3])])]
    metas += mf.write([entry(FileKind.DELETE, "f4", PARTS[1])])
    hooked = HookedFileIO(healthy.fs, write_prefix="manifest-", on_write=fail_on_write(k))
    # a target of one byte: every merged entry rolls into a manifest of its own
    small = ManifestFile(hooked, paths, PT, target_file_size_bytes=1)
    return healthy, root, metas, hooked, small


@pytest.mark.parametrize("kind", ["minor", "full"])
def test_merge_failing_midway_deletes_what_it_wrote(kind):
    opts = {"minor": MergeOptions(2 * 2300, BIG, 30), "full": MergeOptions(BIG, 1, 30)}[kind]
    # how many manifests does a healthy merge write?
    healthy, root, metas, hooked, small = _failing_setup(k=10**6)
    result = ManifestFileMerger(small, opts).merge(metas)
    assert result.kind is ManifestMergeKind(kind)
    total_writes = len(hooked.writes)
    assert total_writes >= 2
    for k in range(total_writes):
        healthy, root, metas, hooked, small = _failing_setup(k)
        before = manifest_names(healthy, root)
        with pytest.raises(InjectedIOError):
            ManifestFileMerger(small, opts).merge(metas)
        assert len(hooked.writes) == k + 1
        assert manifest_names(healthy, root) == before, f"leftovers after failing write {k}"
        # the inputs are intact
        assert len(ManifestFile(healthy, TablePaths(root), PT).read_all(metas)) == 13


def test_manifest_write_failing_midway_deletes_its_files():
    fio, root = memory_root()
    hooked = HookedFileIO(fio.fs, write_prefix="manifest-", on_write=fail_on_write(2))
    mf = ManifestFile(hooked, TablePaths(root), PT, target_file_size_bytes=1)
    with pytest.raises(InjectedIOError):
        mf.write([entry(FileKind.ADD, f"f{i}") for i in range(5)])
    assert manifest_names(fio, root) == set()
    assert len(hooked.writes) == 3  # two written and deleted, the third failed


def test_merge_kinds_print_as_their_names():
    """Commit statistics and the stateful tests' events print the kinds: the text stays what
    the strings were before the enum."""
    assert [k.value for k in ManifestMergeKind] == ["none", "minor", "full"]
    assert f"manifest merge: {ManifestMergeKind.FULL}" == "manifest merge: full"
    assert str(ManifestMergeKind.MINOR) == "minor" and ManifestMergeKind("none") is ManifestMergeKind.NONE


# ----------------------------------------------------------------------------- grouped by partition


def test_merged_entries_are_grouped_by_partition_in_each_partitions_order():
    fio, root, mf = setup()
    names = [f"data-{i}" for i in range(40)]
    metas = write_manifests(mf, [[entry(FileKind.ADD, n, PARTS[i % 4])] for i, n in enumerate(names)])
    result = ManifestFileMerger(mf, MergeOptions(BIG, BIG, 30)).merge(metas)
    assert result.kind is ManifestMergeKind.MINOR
    merged = ManifestFile(fio, TablePaths(root), PT).read_all(result.manifests)
    # nulls first, then by value; within a partition the order the files came in
    expected = [n for p in (PARTS[3], PARTS[0], PARTS[1], PARTS[2])
                for i, n in enumerate(names) if PARTS[i % 4] == p]
    assert [e.file.file_name for e in merged] == expected


def test_a_manifest_ends_at_a_partition_boundary_once_it_reaches_the_roll_size():
    fio, root, mf = setup()
    entries = [entry(FileKind.ADD, f"data-{p}-{i}", PARTS[p]) for p in range(3) for i in range(3)]
    metas = mf.write(entries, partition_roll_bytes=1)
    assert [m.num_added_files for m in metas] == [3, 3, 3]
    assert [m.partition_stats.min_values for m in metas] == PARTS[:3]
    assert [m.partition_stats.max_values for m in metas] == PARTS[:3]
    assert len(mf.write(entries)) == 1  # without it, by size only


def test_settled_size_is_a_32nd_of_the_target_with_a_floor():
    assert MergeOptions().settled_size_bytes == 256 << 10  # of Paimon's default 8 MB target
    assert MergeOptions(target_file_size_bytes=512 << 10).settled_size_bytes == 64 << 10
    assert MergeOptions(target_file_size_bytes=5000).settled_size_bytes == 5000  # small targets: the target

"""The files a snapshot references (impl.snapshot.references) and the rollback plan built on them."""

from __future__ import annotations

import pytest
from core_helpers import memory_root

from impl.datafile.meta import DataFileMeta, SimpleStats
from impl.errors import CorruptMetadataError
from impl.fs.paths import TablePaths
from impl.maintenance.cleanup import plan_rollback
from impl.manifest.manifest_file import IndexManifestFile, ManifestFile, ManifestList
from impl.manifest.records import FileKind, IndexFileMeta, IndexManifestEntry, ManifestEntry, ManifestFileMeta
from impl.snapshot.records import CommitKind, Snapshot
from impl.snapshot.references import Missing, SnapshotFileReader, snapshot_files

P = TablePaths("/t")
NO_PARTITION = b"\x00\x00\x00\x00"


def snap(sid: int, changelog: str | None = None, index: str | None = None) -> Snapshot:
    return Snapshot(sid, 0, f"base-{sid}", f"delta-{sid}", "u", sid, CommitKind.APPEND, 0,
                    changelog_manifest_list=changelog, index_manifest=index)


def entry(kind: FileKind, name: str, extra: tuple[str, ...] = ()) -> ManifestEntry:
    return ManifestEntry(kind, NO_PARTITION, 0, 1, DataFileMeta(name, 1, 1, extra_files=extra))


def meta(name: str) -> ManifestFileMeta:
    return ManifestFileMeta(name, 1, 1, 0, SimpleStats(b"", b"", ()), 0)


def index_entry(kind: FileKind, name: str) -> IndexManifestEntry:
    return IndexManifestEntry(kind, NO_PARTITION, 0, IndexFileMeta("HASH", name, 1, 1))


def test_snapshot_files_rule():
    s = snap(3, changelog="log-3", index="index-manifest-3")
    files = snapshot_files(
        s, {"base-3": [meta("m1"), meta("m2")], "delta-3": [meta("m2"), meta("m3")], "log-3": [meta("m4")]},
        data_entries=[entry(FileKind.ADD, "a", ("a.index",)), entry(FileKind.ADD, "b"),
                      entry(FileKind.DELETE, "b"), entry(FileKind.DELETE, "gone")],
        changelog_entries=[entry(FileKind.ADD, "changelog-c"), entry(FileKind.DELETE, "changelog-d")],
        index_entries=[index_entry(FileKind.ADD, "index-1"), index_entry(FileKind.DELETE, "index-0")])
    assert files.manifest_lists == ("base-3", "delta-3", "log-3")
    assert files.manifests == ("m1", "m2", "m3", "m4")  # each once
    assert [e.file.file_name for e in files.data_files] == ["a"]  # b came and went, "gone" only deleted
    assert [e.file.file_name for e in files.changelog_files] == ["changelog-c"]
    assert files.index_files == ("index-1",)
    assert files.metadata_names() == {"base-3", "delta-3", "log-3", "m1", "m2", "m3", "m4", "index-manifest-3"}
    assert files.names() == files.metadata_names() | {"a", "a.index", "changelog-c", "index-1"}
    paths = files.paths(P, lambda partition: "")
    assert paths["a"] == "/t/bucket-0/a" and paths["a.index"] == "/t/bucket-0/a.index"
    assert paths["m1"] == "/t/manifest/m1" and paths["index-1"] == "/t/index/index-1"


def test_rollback_plan_deletes_newest_first_and_only_what_is_no_longer_used():
    newer = [snapshot_files(snap(sid), {f"delta-{sid}": [meta(f"m{sid}")]},
                            [entry(FileKind.ADD, "shared"), entry(FileKind.ADD, f"d{sid}")], [], [])
             for sid in (4, 5)]
    plan = plan_rollback(3, list(reversed(newer)), P, lambda partition: "")
    assert plan.snapshot_ids == (5, 4)
    assert set(plan.candidates) == {"base-4", "delta-4", "m4", "shared", "d4", "base-5", "delta-5", "m5", "d5"}
    still_used = {"base-4", "shared"}  # e.g. the target's base list, a file the target holds too
    assert sorted(plan.files_to_delete(still_used)) == sorted(
        plan.candidates[n] for n in plan.candidates if n not in still_used)


def test_reader_missing_files_raise_or_skip():
    io, root = memory_root("references")  # an empty table directory: every metadata file is missing
    fs_paths = TablePaths(root)
    reader = SnapshotFileReader(ManifestList(io, fs_paths), ManifestFile(io, fs_paths),
                                IndexManifestFile(io, fs_paths), fs_paths)
    s = snap(7, changelog="log-7", index="index-manifest-7")
    with pytest.raises(CorruptMetadataError, match="manifest list of snapshot 7 is missing"):
        reader.files(s, Missing.RAISE)
    skipped = reader.files(s, Missing.SKIP)
    assert skipped.metadata_names() == {"base-7", "delta-7", "log-7", "index-manifest-7"}
    assert skipped.data_files == () and skipped.index_files == ()

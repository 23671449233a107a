"""Manifest entries, their merging rules, manifest files and lists, and the manifest merger."""

from impl.datafile.meta import DataFileMeta, FileSource, SimpleStats
from impl.manifest.entries import live_entries, merge_entries
from impl.manifest.manifest_file import IndexManifestFile, ManifestFile, ManifestList, fold_index_entries
from impl.manifest.merger import ManifestFileMerger, ManifestMergeKind, MergeOptions, MergeResult
from impl.manifest.records import (
    FileIdentity,
    FileKind,
    IndexFileMeta,
    IndexManifestEntry,
    ManifestEntry,
    ManifestFileMeta,
)

__all__ = [
    "DataFileMeta", "FileIdentity", "FileKind", "FileSource", "IndexFileMeta", "IndexManifestEntry",
    "ManifestEntry", "ManifestFileMeta", "SimpleStats", "live_entries", "merge_entries",
    "IndexManifestFile", "ManifestFile", "ManifestList", "fold_index_entries", "ManifestFileMerger",
    "ManifestMergeKind", "MergeOptions", "MergeResult",
]

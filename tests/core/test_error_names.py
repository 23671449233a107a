"""Public error names: one naming style (Paimon's ``...NotExistError`` / ``...AlreadyExistError``),
the old names kept as aliases of the same classes, and the errors a committer must catch
reachable from ``impl`` itself."""

from __future__ import annotations

import inspect

import impl
import impl.errors
import impl.table.errors

OLD_NAMES = {
    "SnapshotNotFoundError": "SnapshotNotExistError",
    "TagAlreadyExistsError": "TagAlreadyExistError",
    "TagNotFoundError": "TagNotExistError",
    "BranchAlreadyExistsError": "BranchAlreadyExistError",
    "BranchNotFoundError": "BranchNotExistError",
}


def test_old_names_are_the_same_classes():
    for old, new in OLD_NAMES.items():
        assert getattr(impl.errors, old) is getattr(impl.errors, new)
        assert getattr(impl, old) is getattr(impl, new)
        assert getattr(impl, new).__name__ == new


def test_one_naming_style():
    classes = [c for m in (impl.errors, impl.table.errors) for _, c in inspect.getmembers(m, inspect.isclass)
               if issubclass(c, impl.PaimonError)]
    names = {c.__name__ for c in classes}
    assert not {n for n in names if n.endswith(("NotFoundError", "AlreadyExistsError", "ExistsError"))}, names


def test_commit_errors_are_exported():
    for name in ("CommitConflictError", "FileAlreadyLiveError", "FileNotLiveError", "KeyRangeOverlapError",
                 "IndexFileConflictError", "BucketCountChangedError", "SchemaChangedError",
                 "CommitOutcomeUnknownError", "CommitRetriesExhaustedError", "CommitRecoveryError",
                 "OverwritePartitionError", "WriterClosedError"):
        cls = getattr(impl, name)
        assert issubclass(cls, impl.PaimonError) and name in impl.__all__
        assert cls is getattr(impl.errors, name)

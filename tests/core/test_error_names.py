"""Public error names: one naming style (Paimon's ``...NotExistError`` / ``...AlreadyExistError``),
the old names kept as aliases of the same classes, the errors a caller catches reachable from
``impl`` itself, and the two homes every error lives in (``impl.errors``, ``impl.spark.errors``; see
specs/table_core.md, "Where errors live")."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import os
import pkgutil

import pytest

import impl
import impl.errors

HOMES = ("impl.errors", "impl.spark.errors")
HAS_SPARK = importlib.util.find_spec("pyspark") is not None

# errors once defined elsewhere: the module that defined them still offers the same class
MOVED = {
    "impl.mergetree.levels": ["LevelsError"],
    "impl.mergetree.merge_engine": ["MergeEngineError"],
    "impl.format.file_format": ["UnsupportedFileFormatError"],
    "impl.data.types": ["TypeParseError", "UnsupportedTypeError"],
    "impl.write.dynamic_bucket": ["DynamicBucketError"],
    # the catalog and table API's errors, moved down into impl.errors (the layout issue)
    "impl.table.errors": ["InvalidIdentifierError", "TableNotExistError", "DatabaseNotExistError",
                          "FilterSyntaxError", "CatalogServerError", "UnsupportedTableFeatureError"],
    # the write-job protocol's errors, moved with it out of impl.spark into the job layer (impl.jobs)
    "impl.jobs.keycheck": ["WriteRoutingError"],
    "impl.jobs.tracking": ["WriteClosedError"],
}
MOVED_SPARK = {
    "impl.spark.errors": ["WriteRoutingError", "WriteClosedError"],  # their old home, now in impl.errors
    "impl.spark.reader": ["SharedPlanError"],
    "impl.spark.stream_reader": ["StreamStartError", "StreamSnapshotExpiredError"],
    "impl.spark.stream_writer": ["StreamSinkError"],
}


def _impl_modules():
    """Every module of impl, imported (impl.spark's only when pyspark is installed)."""
    def onerror(name):
        if not (name == "impl.spark" and not HAS_SPARK):
            raise  # the import error walk_packages is handling
    names = [m.name for m in pkgutil.walk_packages(impl.__path__, "impl.", onerror=onerror)]
    return [importlib.import_module(n) for n in names
            if (HAS_SPARK or not (n == "impl.spark" or n.startswith("impl.spark.")))
            and not n.endswith(".__main__")]  # a program: importing it runs it


def _error_classes():
    found = {}
    for module in _impl_modules():
        for value in vars(module).values():
            if inspect.isclass(value) and issubclass(value, impl.PaimonError):
                found.setdefault(value, set()).add(module.__name__)
    return found


def _defined_in(module):
    return [c for _, c in inspect.getmembers(module, inspect.isclass)
            if issubclass(c, impl.PaimonError) and c.__module__ == module.__name__]

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
    classes = [c for m in (impl.errors,) for _, c in inspect.getmembers(m, inspect.isclass)
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


def test_every_error_lives_in_one_of_three_homes():
    found = _error_classes()
    stray = {f"{c.__module__}.{c.__qualname__}" for c in found if c.__module__ not in HOMES}
    assert not stray, f"errors defined outside {HOMES}: {sorted(stray)}"
    homes_seen = {c.__module__ for c in found}
    assert homes_seen == set(HOMES if HAS_SPARK else HOMES[:1])
    assert not {c.__name__ for c in found if not c.__name__.endswith("Error")}


def test_each_home_holds_its_layer():
    assert all(issubclass(c, impl.PaimonError) for c in _defined_in(impl.errors))
    if HAS_SPARK:
        spark_errors = importlib.import_module("impl.spark.errors")
        assert all(issubclass(c, spark_errors.SparkConnectorError) for c in _defined_in(spark_errors))


def _impl_imports(module_name):
    # read, not imported: impl.spark.errors is checked without pyspark too
    path = os.path.join(os.path.dirname(impl.__file__), *module_name.split(".")[1:]) + ".py"
    with open(path) as f:
        tree = ast.parse(f.read())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return {n for n in names if n == "impl" or n.startswith("impl.")}


def test_homes_import_only_downwards():
    assert _impl_imports("impl.errors") == set()
    assert _impl_imports("impl.spark.errors") == {"impl.errors"}


def test_moved_errors_keep_their_old_import_path():
    moved = MOVED | (MOVED_SPARK if HAS_SPARK else {})
    for module_name, names in moved.items():
        module = importlib.import_module(module_name)
        for name in names:
            cls = getattr(module, name)
            assert cls.__module__ in HOMES and cls.__name__ == name
            assert cls is getattr(importlib.import_module(cls.__module__), name)


def test_every_core_error_is_exported_from_impl():
    for home in (impl.errors,):
        for cls in _defined_in(home):
            assert cls.__name__ in impl.__all__, cls.__name__
            assert getattr(impl, cls.__name__) is cls


@pytest.mark.skipif(not HAS_SPARK, reason="pyspark is not installed")
def test_every_spark_error_is_exported_from_impl_spark():
    spark = importlib.import_module("impl.spark")
    spark_errors = importlib.import_module("impl.spark.errors")
    for cls in _defined_in(spark_errors):
        assert cls.__name__ in spark.__all__, cls.__name__
        assert getattr(spark, cls.__name__) is cls

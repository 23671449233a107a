"""Picklable handles on a table, from its directory ``<warehouse>/<db>.db/<table>``.

Spark ships these to executors and to the Python workers that plan reads and commit writes;
each opens the table itself through ``impl.Catalog`` (nothing unpicklable crosses a process).
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass, field
from typing import Callable, Mapping

from impl.errors import PaimonError
from impl.table.catalog import DB_SUFFIX
from impl.table.errors import InvalidIdentifierError


class SparkConnectorError(PaimonError, ValueError):
    """Misuse of the Spark connector (bad path, bad option, unsupported save mode, ...)."""


def _normalize(path: str) -> str:
    if not isinstance(path, str) or not path.strip():
        raise SparkConnectorError(f"table path {path!r} is empty")
    path = path.strip()
    if "://" not in path:
        path = os.path.abspath(os.path.expanduser(path))
    return path.rstrip("/")


def split_table_path(table_path: str) -> tuple[str, str, str]:
    """``<warehouse>/<db>.db/<table>`` -> (warehouse, database, table)."""
    path = _normalize(table_path)
    parent, table = posixpath.split(path)
    warehouse, db_dir = posixpath.split(parent)
    if not table or not db_dir.endswith(DB_SUFFIX) or len(db_dir) == len(DB_SUFFIX) or not warehouse:
        raise InvalidIdentifierError(
            f"table path {table_path!r} is not '<warehouse>/<database>.db/<table>'")
    if warehouse.endswith(":/") or warehouse.endswith(":"):  # "memory://db.db/t"
        warehouse = warehouse + "/"
    return warehouse, db_dir[: -len(DB_SUFFIX)], table


@dataclass(frozen=True)
class TableRef:
    """Where a table lives and how to open it, in a form every Spark process can unpickle.

    ``fs_factory`` (optional, picklable, no arguments) builds the fsspec file system to use
    instead of the one the path implies: tests use it to inject faults in executors.
    ``dynamic_options`` are applied with ``table.copy`` (time travel, write-only, ...).
    """

    table_path: str
    warehouse: str
    database: str
    name: str
    fs_factory: Callable | None = None
    dynamic_options: tuple[tuple[str, str], ...] = field(default=())

    @staticmethod
    def from_path(table_path: str, *, fs_factory: Callable | None = None,
                  dynamic_options: Mapping[str, str] | None = None) -> "TableRef":
        warehouse, db, name = split_table_path(table_path)
        opts = tuple(sorted((str(k), str(v)) for k, v in (dynamic_options or {}).items()))
        return TableRef(_normalize(table_path), warehouse, db, name, fs_factory, opts)

    @property
    def identifier(self) -> str:
        return f"{self.database}.{self.name}"

    def with_options(self, options: Mapping[str, str]) -> "TableRef":
        merged = dict(self.dynamic_options)
        merged.update({str(k): str(v) for k, v in options.items()})
        return TableRef(self.table_path, self.warehouse, self.database, self.name, self.fs_factory,
                        tuple(sorted(merged.items())))

    def filesystem(self):
        """The fsspec file system of this table (``fs_factory()`` or the one the path implies)."""
        if self.fs_factory is not None:
            return self.fs_factory()
        import fsspec

        fs, _ = fsspec.core.url_to_fs(self.warehouse)
        return fs

    def catalog(self, filesystem=None):
        import impl

        return impl.Catalog(self.warehouse, filesystem=filesystem if filesystem is not None else
                            (self.fs_factory() if self.fs_factory is not None else None))

    def exists(self, filesystem=None) -> bool:
        return self.catalog(filesystem).table_exists(self.identifier)

    def table(self, filesystem=None, *, extra_options: Mapping[str, str] | None = None):
        """Open the table (raises TableNotExistError naming it and its path when there is none)."""
        from impl.table.errors import DatabaseNotExistError, TableNotExistError

        try:
            t = self.catalog(filesystem).get_table(self.identifier)
        except (TableNotExistError, DatabaseNotExistError):
            err = TableNotExistError(self.identifier)
            err.args = (f"table {self.identifier!r} does not exist (no Paimon table at {self.table_path})",)
            raise err from None
        opts = dict(self.dynamic_options)
        opts.update(extra_options or {})
        return t.copy(opts) if opts else t


__all__ = ["TableRef", "split_table_path", "SparkConnectorError"]

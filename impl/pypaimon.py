"""pypaimon's top-level names over impl's own classes, so pypaimon code runs with its import changed.

>>> from impl.pypaimon import CatalogFactory, Schema               # was: from pypaimon import ...
>>> catalog = CatalogFactory.create({"warehouse": "/tmp/wh"})       # doctest: +SKIP

Everything here is impl's own class (this module only names them as pypaimon 2.1.0 does):
:class:`impl.catalog.CatalogFactory` makes a :class:`impl.Catalog`, whose tables,
builders, writes, commits, scans, reads and predicate builders answer pypaimon's method names
(``create_table(identifier, schema, ignore_if_exists)``, ``write_row``, ``with_write_type``,
``and_predicates``, ``to_iterator``, ``to_duckdb`` ...). Errors are impl's typed errors, not
pypaimon's exception classes.

pypaimon's ``PaimonVirtualFileSystem`` (a virtual file system over a REST catalog) and
``SQLContext`` (DataFusion SQL through pypaimon-rust) have no counterpart here; naming them
raises an AttributeError (an ImportError for ``from impl.pypaimon import ...``) that says so.
"""

from __future__ import annotations

from impl.catalog import Catalog, CatalogFactory, Database
from impl.store.schema import Schema
from impl.tag.manager import TagManager
from impl.tag.tag import Tag

# pypaimon's top-level names that impl does not offer, and why
_NOT_OFFERED = {
    "PaimonVirtualFileSystem": "a virtual file system over a REST catalog, which impl does not implement "
                               "(impl's catalog is the filesystem one)",
    "SQLContext": "DataFusion SQL through pypaimon-rust; query a table with DuckDB instead "
                  "(duckdb.sql('select ... from t') over the table's Arrow stream)",
}


def __getattr__(name: str) -> object:
    if name in _NOT_OFFERED:
        raise AttributeError(f"impl.pypaimon does not offer pypaimon's {name}: {_NOT_OFFERED[name]}")
    raise AttributeError(f"module 'impl.pypaimon' has no attribute {name!r}")


__all__ = ["CatalogFactory", "Schema", "Tag", "TagManager", "Catalog", "Database"]

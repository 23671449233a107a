"""Catalogs: where tables are found by name. :class:`Catalog` is the API every catalog has
(:mod:`impl.catalog.base`); the filesystem catalog (``filesystem``: ``<warehouse>/<db>.db/<table>``),
the JDBC catalog (``jdbc``) and the REST catalog client (``rest``) implement it, each opening
:class:`impl.table.FileStoreTable` objects. :func:`load_catalog` opens the one its options name.

>>> from impl.catalog import Catalog, load_catalog
>>> cat = Catalog("/tmp/warehouse")            # doctest: +SKIP
>>> cat = load_catalog({"warehouse": "/tmp/wh", "metastore": "jdbc", "uri": "jdbc:sqlite:/tmp/c.db"})  # doctest: +SKIP
"""

from impl.catalog.base import METASTORES, Catalog, CatalogFactory, Database, load_catalog, open_catalog
from impl.catalog.filesystem import FileSystemCatalog

__all__ = ["Catalog", "CatalogFactory", "Database", "FileSystemCatalog", "METASTORES", "load_catalog", "open_catalog"]

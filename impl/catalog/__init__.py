"""Catalogs: where tables are found by name. The filesystem catalog (``filesystem``:
``<warehouse>/<db>.db/<table>``), the JDBC catalog (``jdbc``) and the REST catalog client
(``rest``); each opens :class:`impl.table.FileStoreTable` objects.

>>> from impl.catalog import Catalog
>>> cat = Catalog("/tmp/warehouse")            # doctest: +SKIP
"""

from impl.catalog.filesystem import Catalog, CatalogFactory, Database
from impl.catalog.jdbc import JdbcCatalog  # noqa: F401  # registers metastore "jdbc" with Catalog, whoever imports it

__all__ = ["Catalog", "CatalogFactory", "Database"]

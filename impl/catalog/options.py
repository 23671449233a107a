"""Every catalog option, declared as table options are (:class:`impl.options.config_option.ConfigOption`:
key, how its value parses, default, description), and the set each catalog takes.

A key no set declares and no family prefix of it covers (``fs.*`` storage options, the JDBC
driver's ``jdbc.*`` properties, REST ``header.*``) is refused by name
(:func:`check_catalog_keys`): a ``uri`` given to the filesystem catalog, a ``lock.enabled`` given
to the REST one, belong to a catalog this is not and must not be dropped silently.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from impl.catalog.rest import protocol as rest
from impl.errors import UnsupportedCatalogOptionError
from impl.fs.object_store import STORAGE_OPTION_PREFIXES
from impl.options.config_option import ConfigOption
from impl.options.values import at_least, parse_bool, parse_duration_millis, parse_int, parse_optional_text, parse_text

# ---------------------------------------------------------------------------- every catalog

METASTORE = ConfigOption(rest.METASTORE, parse_text, "filesystem",
                         "Which catalog lists the tables: filesystem (the warehouse's directories), jdbc or rest.")
WAREHOUSE: ConfigOption[str | None] = ConfigOption(
    rest.WAREHOUSE, parse_optional_text, None,
    "Where the tables' files live (a path or fsspec URL); for a REST catalog, the catalog's name at the server.")

# ---------------------------------------------------------------------------- JDBC (Paimon's JdbcCatalogOptions)

# the JDBC driver's properties: jdbc.user, jdbc.password, jdbc.connectTimeout (Java's PROPERTY_PREFIX)
JDBC_PROPERTY_PREFIX = "jdbc."
JDBC_URI: ConfigOption[str | None] = ConfigOption(
    "uri", parse_optional_text, None,
    "The catalog's database: jdbc:sqlite:<file> or jdbc:postgresql://<host>[:port]/<database>.")
CATALOG_KEY = ConfigOption("catalog-key", parse_text, "jdbc",
                           "The catalog's name in the database's tables (several catalogs can share one database).")
LOCK_ENABLED: ConfigOption[bool | None] = ConfigOption(
    "lock.enabled", parse_bool, None,
    "Whether commits and schema changes take the table's lock in the database (default: on for an object-store "
    "warehouse, which has no atomic rename).")
LOCK_CHECK_MAX_SLEEP = ConfigOption("lock-check-max-sleep", parse_duration_millis, 8_000,
                                    "The longest wait between two tries of a held lock.")
LOCK_ACQUIRE_TIMEOUT = ConfigOption("lock-acquire-timeout", parse_duration_millis, 8 * 60_000,
                                    "How long a lock is waited for before the commit fails.")
LOCK_KEY_MAX_LENGTH = ConfigOption("lock-key-max-length", at_least(1), 255,
                                   "The length of the lock table's key column (created with it).")
CLIENT_POOL_SIZE = ConfigOption("client-pool-size", parse_int, 2,
                                "Java's connection pool size; accepted and without effect (one connection).")
SYNC_ALL_PROPERTIES = ConfigOption("sync-all-properties", parse_bool, True,
                                   "Whether a table's options and keys are mirrored in paimon_table_properties.")

# ---------------------------------------------------------------------------- REST (Paimon's RESTCatalogOptions)

REST_HEADER_PREFIX = "header."
REST_URI: ConfigOption[str | None] = ConfigOption(rest.URI, parse_optional_text, None,
                                                  "The catalog server's http:// or https:// URL.")
TOKEN_PROVIDER: ConfigOption[str | None] = ConfigOption(
    rest.TOKEN_PROVIDER, parse_optional_text, None, "How requests authenticate: bear (a bearer token) is implemented.")
TOKEN: ConfigOption[str | None] = ConfigOption(rest.TOKEN, parse_optional_text, None,
                                               "The bearer token (with token.provider = bear).")
PREFIX = ConfigOption(rest.PREFIX, parse_text, rest.DEFAULT_PREFIX, "The resource path prefix the server's config names.")
DATA_TOKEN_ENABLED = ConfigOption(rest.DATA_TOKEN_ENABLED, parse_bool, False,
                                  "Whether tables are opened with the storage credentials the server hands out.")


@dataclass(frozen=True)
class CatalogOptionSet:
    """The options one catalog takes: its declared options and the key families it passes on."""

    catalog: str  # as error messages name it
    options: tuple[ConfigOption, ...]
    prefixes: tuple[str, ...]

    @property
    def keys(self) -> frozenset[str]:
        return frozenset(k for option in self.options for k in option.keys)


FILESYSTEM_OPTIONS = CatalogOptionSet("this filesystem catalog", (METASTORE, WAREHOUSE), STORAGE_OPTION_PREFIXES)
JDBC_OPTIONS = CatalogOptionSet(
    "the JDBC catalog", (METASTORE, WAREHOUSE, JDBC_URI, CATALOG_KEY, LOCK_ENABLED, LOCK_CHECK_MAX_SLEEP,
                         LOCK_ACQUIRE_TIMEOUT, LOCK_KEY_MAX_LENGTH, CLIENT_POOL_SIZE, SYNC_ALL_PROPERTIES),
    (JDBC_PROPERTY_PREFIX, *STORAGE_OPTION_PREFIXES))
REST_OPTIONS = CatalogOptionSet(
    "the REST catalog", (METASTORE, WAREHOUSE, REST_URI, TOKEN_PROVIDER, TOKEN, PREFIX, DATA_TOKEN_ENABLED),
    (REST_HEADER_PREFIX, *STORAGE_OPTION_PREFIXES))


def check_catalog_keys(options: Mapping[Any, object] | None, declared: CatalogOptionSet) -> None:
    """Refuse, naming the key, each option ``declared`` neither declares nor covers by a prefix."""
    for key, value in (options or {}).items():
        if not isinstance(key, str):
            raise UnsupportedCatalogOptionError(repr(key), value, "option keys are strings")
        if key in declared.keys or key.startswith(declared.prefixes):
            continue
        raise UnsupportedCatalogOptionError(
            key, value, f"not an option of {declared.catalog} (it takes {sorted(declared.keys)} and options starting "
                        f"with {', '.join(declared.prefixes)})")


__all__ = ["CatalogOptionSet", "FILESYSTEM_OPTIONS", "JDBC_OPTIONS", "REST_OPTIONS", "check_catalog_keys"]

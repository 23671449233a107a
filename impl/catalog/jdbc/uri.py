"""JDBC URIs as Paimon's JDBC catalog takes them (``jdbc:sqlite:/path/cat.db``,
``jdbc:postgresql://host:port/db?user=u``): the protocol, where to connect, and the URI as it
may be shown in a message (without a password)."""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from typing import Mapping
from urllib.parse import parse_qsl, urlsplit

from impl.catalog.options import JDBC_PROPERTY_PREFIX as PROPERTY_PREFIX
from impl.errors import UnsupportedCatalogOptionError

_SECRET = re.compile(r"(password=)[^&;]*", re.IGNORECASE)


class JdbcProtocol(enum.Enum):
    """The databases this catalog runs on (Java's DistributedLockDialectFactory.JdbcProtocol
    names; MySQL is Java's and pypaimon's too, not this one's)."""

    SQLITE = "sqlite"
    POSTGRESQL = "postgresql"


@dataclass(frozen=True)
class JdbcUri:
    """A parsed ``jdbc:`` URI. ``target``: the SQLite file (or ``file:`` URI, ``:memory:``) or
    the PostgreSQL database name; ``properties``: the URI's query parameters."""

    uri: str
    protocol: JdbcProtocol
    target: str
    host: str | None = None
    port: int | None = None
    properties: Mapping[str, str] = field(default_factory=dict)

    @property
    def shown(self) -> str:
        """The URI with any password left out, for messages."""
        return redact(self.uri)


def redact(uri: str) -> str:
    """``uri`` with the value of every ``password=`` parameter replaced by ``***``."""
    return _SECRET.sub(r"\1***", uri)


def parse_jdbc_uri(uri: object) -> JdbcUri:
    """Parse ``uri``; UnsupportedCatalogOptionError naming ``uri`` for anything else than a
    SQLite or PostgreSQL JDBC URI."""
    if not isinstance(uri, str) or not uri.startswith("jdbc:"):
        raise UnsupportedCatalogOptionError("uri", redact(str(uri)), "is not a JDBC URI ('jdbc:sqlite:<file>' or "
                                                                   "'jdbc:postgresql://<host>[:<port>]/<database>')")
    scheme, _, rest = uri[len("jdbc:"):].partition(":")
    try:
        protocol = JdbcProtocol(scheme.lower())
    except ValueError:
        raise UnsupportedCatalogOptionError(
            "uri", redact(uri), f"the {scheme!r} database is not supported (this JDBC catalog runs on "
                                f"{', '.join(p.value for p in JdbcProtocol)})") from None
    if protocol is JdbcProtocol.SQLITE:
        if not rest:
            raise UnsupportedCatalogOptionError("uri", uri, "names no SQLite database file")
        return JdbcUri(uri, protocol, rest)
    parts = urlsplit(rest)
    database = parts.path.lstrip("/")
    if not rest.startswith("//") or not parts.hostname or not database:
        raise UnsupportedCatalogOptionError("uri", redact(uri), "is not 'jdbc:postgresql://<host>[:<port>]/<database>'")
    try:
        port = parts.port
    except ValueError as e:
        raise UnsupportedCatalogOptionError("uri", redact(uri), f"has a bad port: {e}") from None
    return JdbcUri(uri, protocol, database, parts.hostname, port, dict(parse_qsl(parts.query)))


def connection_properties(options: Mapping[str, str]) -> dict[str, str]:
    """The driver properties among the catalog options (``jdbc.user`` -> ``user``)."""
    return {k[len(PROPERTY_PREFIX):]: str(v) for k, v in options.items() if k.startswith(PROPERTY_PREFIX)}


def sqlite_file(uri: JdbcUri) -> str | None:
    """The local file a SQLite URI's database lives in; None for another database or an in-memory
    one (``:memory:``, ``file:...?mode=memory``), which has no file to look for."""
    if uri.protocol is not JdbcProtocol.SQLITE or uri.target == ":memory:":
        return None
    if not uri.target.startswith("file:"):
        return uri.target
    parts = urlsplit(uri.target)
    if dict(parse_qsl(parts.query)).get("mode") == "memory" or not parts.path:
        return None
    return parts.path

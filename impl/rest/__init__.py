"""Paimon's REST catalog (Java's ``org.apache.paimon.rest``): a client, :class:`RESTCatalog`,
and a server, :class:`RESTCatalogServer` (``python -m impl.rest --warehouse PATH_OR_S3_URL``),
both speaking the protocol of Paimon's ``rest-catalog-open-api.yaml``. The server's limits are a
:class:`ServerLimits`; its per-table S3 credentials, a :class:`CredentialVending`."""

from impl.catalog.rest.client import RESTCatalog
from impl.rest.credentials import CredentialVending
from impl.rest.http_server import ServerLimits
from impl.rest.server import RESTCatalogServer

__all__ = ["CredentialVending", "RESTCatalog", "RESTCatalogServer", "ServerLimits"]

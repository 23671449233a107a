"""Azure Blob Storage and ADLS Gen2: opening a warehouse URL with Paimon's (Hadoop's) option names,
and the facts publication needs (one HEAD per existence check, the store's identity for the probe).

Publication on Azure is a conditional create, as on S3: adlfs's ``pipe_file(path, data,
mode="create")`` uploads with ``overwrite=False``, which azure-storage-blob sends as
``If-None-Match: *`` on the Put Blob (or on the Put Block List of a large blob); the service
answers 409 ``BlobAlreadyExists`` when the blob exists, and adlfs raises ``FileExistsError``.
:func:`impl.fs.object_store.conditional_create` then applies the read-back rule (a refused retry
of our own landed upload holds our bytes) and :func:`impl.fs.object_store.probe_conditional_create`
checks once per store that the condition is honoured. No lock and no LIST on the commit path.

URLs, as adlfs, Paimon Java and Hadoop spell them (the file system's own path is
``container/path``):

- ``abfs://container/path`` and ``az://container/path``: the account comes from the options;
- ``abfs[s]://container@account.dfs.core.windows.net/path`` (ADLS Gen2, Hadoop's ABFS) and
  ``wasb[s]://container@account.blob.core.windows.net/path`` (Hadoop's WASB): the account is in
  the URL. Either way impl talks to the account's Blob endpoint, which every ADLS Gen2 account
  serves too.

>>> parse_url("abfss://data@acct.dfs.core.windows.net/wh")
AzureLocation(container='data', account='acct', path='data/wh')
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

import fsspec

from impl._optional import require
from impl.errors import InvalidWarehouseError

AZURE_PROTOCOLS = ("abfs", "abfss", "az", "wasb", "wasbs")
STORAGE_OPTION_PREFIX = "azure."

# impl's own names (adlfs's arguments, spelled as Paimon options); Hadoop's per-account names are
# matched by the patterns below.
ACCOUNT_NAME_KEY = "azure.account-name"
ACCOUNT_KEY_KEY = "azure.account-key"
SAS_TOKEN_KEY = "azure.sas-token"
CONNECTION_STRING_KEY = "azure.connection-string"
ENDPOINT_KEY = "azure.endpoint"  # the Blob endpoint URL: an emulator's, or a sovereign cloud's
CONNECT_TIMEOUT_KEY = "azure.connect-timeout"
READ_TIMEOUT_KEY = "azure.read-timeout"

# Hadoop (and so Paimon Java's paimon-azure): fs.azure.account.key.<account>.blob|dfs.core.windows.net,
# the WASB SAS fs.azure.sas.<container>.<account>.blob.core.windows.net and the ABFS fixed SAS
# fs.azure.sas.fixed.token.<account>.dfs.core.windows.net. Paimon Java's AzureFileIO also takes
# them under azure. and fs.wasb. for fs.azure., and fs.azure.account.key alone for the URL's account.
_PREFIX = r"^(?:fs\.azure\.|azure\.|fs\.wasb\.)"
_HADOOP_KEY = re.compile(_PREFIX + r"account\.key\.([a-z0-9]+)\.(?:blob|dfs)\.core\.windows\.net$")
_HADOOP_FIXED_SAS = re.compile(_PREFIX + r"sas\.fixed\.token\.([a-z0-9]+)\.(?:blob|dfs)\.core\.windows\.net$")
_HADOOP_WASB_SAS = re.compile(_PREFIX + r"sas\.(?!fixed\.)([a-z0-9-]+)\.([a-z0-9]+)\.blob\.core\.windows\.net$")
UNSCOPED_KEY_KEYS = ("fs.azure.account.key", "azure.account.key")
ACCOUNT_KEY_OPTION_HINT = "fs.azure.account.key.<account>.dfs.core.windows.net"  # named in errors

# Azure's naming rules: accounts 3-24 lower-case letters and digits; containers 3-63 of lower-case
# letters, digits and single hyphens.
_ACCOUNT = re.compile(r"^[a-z0-9]{3,24}$")
_CONTAINER = re.compile(r"^(?!-)(?!.*--)[a-z0-9-]{3,63}(?<!-)$")
_HOST = re.compile(r"^([a-z0-9]{3,24})\.(?:blob|dfs)\.core\.windows\.net$")

DEFAULT_CONNECT_TIMEOUT_SECONDS = 5
DEFAULT_READ_TIMEOUT_SECONDS = 30


def is_azure(fs: fsspec.AbstractFileSystem) -> bool:
    """True for an adlfs file system (its protocols include ``abfs``)."""
    protocol = getattr(fs, "protocol", None)
    names = (protocol,) if isinstance(protocol, str) else tuple(protocol or ())
    return "abfs" in names


@dataclass(frozen=True)
class AzureLocation:
    """A warehouse URL taken apart: the container, the account named in the URL (or None) and
    the path in the file system's own form (``container/path``)."""

    container: str
    account: str | None
    path: str


def parse_url(url: str) -> AzureLocation:
    """The container, account and path of an Azure URL; :class:`InvalidWarehouseError` naming
    what is wrong otherwise (no container, a host that is not an Azure storage account)."""
    scheme, rest = url.split("://", 1)
    authority, _, tail = rest.partition("/")
    container, at, host = authority.partition("@")
    account = None
    if at:
        m = _HOST.match(host.lower())
        if m is None:
            raise InvalidWarehouseError(
                f"Azure URL {url!r}: {host!r} is not a storage account host "
                "(expected ACCOUNT.dfs.core.windows.net or ACCOUNT.blob.core.windows.net)")
        account = m.group(1)
    if not container:
        raise InvalidWarehouseError(f"Azure URL {url!r} names no container (expected {scheme}://container/path)")
    if not _CONTAINER.match(container):
        raise InvalidWarehouseError(
            f"Azure URL {url!r}: {container!r} is not a container name (3-63 lower-case letters, digits, hyphens)")
    tail = tail.strip("/")
    return AzureLocation(container, account, f"{container}/{tail}" if tail else container)


def _timeout(options: Mapping[str, str], key: str, default: int) -> int:
    raw = options.get(key)
    if raw is None or str(raw) == "":
        return default
    text = str(raw).strip()
    if not text.isdigit() or int(text) < 1:
        raise InvalidWarehouseError(f"option {key!r}: {raw!r} is not a whole number of seconds >= 1")
    return int(text)


def _per_account(options: Mapping[str, str], pattern: re.Pattern[str]) -> dict[str, str]:
    return {m.group(1): str(v) for k, v in options.items() if (m := pattern.match(k)) and str(v) != ""}


@dataclass(frozen=True)
class AzureConfig:
    """How to reach an Azure storage account. With no credentials in the options, adlfs takes them
    from the environment (``AZURE_STORAGE_CONNECTION_STRING``, ``AZURE_STORAGE_ACCOUNT_NAME`` /
    ``AZURE_STORAGE_ACCOUNT_KEY`` / ``AZURE_STORAGE_SAS_TOKEN``, then Azure's credential chain).
    ``repr`` leaves the secrets out: they are never logged.

    >>> AzureConfig.from_options({"fs.azure.account.key.acct.dfs.core.windows.net": "a2V5"}, "acct")
    AzureConfig(account='acct', endpoint=None, connect_timeout_seconds=5, read_timeout_seconds=30)
    """

    account: str | None
    endpoint: str | None = None
    account_key: str | None = None
    sas_token: str | None = None
    connection_string: str | None = None
    connect_timeout_seconds: int = DEFAULT_CONNECT_TIMEOUT_SECONDS
    read_timeout_seconds: int = DEFAULT_READ_TIMEOUT_SECONDS

    def __repr__(self) -> str:
        return (f"AzureConfig(account={self.account!r}, endpoint={self.endpoint!r}, "
                f"connect_timeout_seconds={self.connect_timeout_seconds}, "
                f"read_timeout_seconds={self.read_timeout_seconds})")

    @staticmethod
    def from_options(options: Mapping[str, str] | None, url_account: str | None = None,
                     container: str | None = None) -> "AzureConfig":
        """The configuration from Paimon/Hadoop option names; the account named in the URL must
        agree with ``azure.account-name`` when both are given."""
        opts = {str(k): str(v) for k, v in (options or {}).items()}
        named = opts.get(ACCOUNT_NAME_KEY) or None
        if named is not None and url_account is not None and named != url_account:
            raise InvalidWarehouseError(
                f"option {ACCOUNT_NAME_KEY!r} names account {named!r} but the URL names {url_account!r}")
        keys = _per_account(opts, _HADOOP_KEY)
        sases = _per_account(opts, _HADOOP_FIXED_SAS)
        wasb_sases = {m.group(2): (m.group(1), str(v)) for k, v in opts.items() if (m := _HADOOP_WASB_SAS.match(k))}
        account = url_account or named
        if account is None:
            candidates = set(keys) | set(sases) | set(wasb_sases)
            if len(candidates) > 1:
                raise InvalidWarehouseError(
                    f"options name keys for several accounts ({sorted(candidates)}) and neither the URL "
                    f"(container@ACCOUNT.dfs.core.windows.net) nor {ACCOUNT_NAME_KEY!r} says which")
            account = next(iter(candidates), None)
        if account is not None and not _ACCOUNT.match(account):
            raise InvalidWarehouseError(f"{account!r} is not a storage account name (3-24 lower-case letters, digits)")
        sas = opts.get(SAS_TOKEN_KEY) or (sases.get(account) if account else None)
        if sas is None and account in wasb_sases and wasb_sases[account][0] == container:
            sas = wasb_sases[account][1]
        endpoint = opts.get(ENDPOINT_KEY) or None
        if endpoint is not None and "://" not in endpoint:
            endpoint = "https://" + endpoint
        return AzureConfig(
            account=account,
            endpoint=endpoint.rstrip("/") if endpoint else None,
            account_key=(opts.get(ACCOUNT_KEY_KEY) or (keys.get(account) if account else None)
                         or next((opts[k] for k in UNSCOPED_KEY_KEYS if opts.get(k)), None)),
            sas_token=sas.lstrip("?") if sas else None,
            connection_string=opts.get(CONNECTION_STRING_KEY) or None,
            connect_timeout_seconds=_timeout(opts, CONNECT_TIMEOUT_KEY, DEFAULT_CONNECT_TIMEOUT_SECONDS),
            read_timeout_seconds=_timeout(opts, READ_TIMEOUT_KEY, DEFAULT_READ_TIMEOUT_SECONDS),
        )

    def service_connection_string(self) -> str | None:
        """The connection string the options amount to (None: leave it to adlfs and the environment).

        Built whenever the options give a key or a SAS, so they win over an
        ``AZURE_STORAGE_CONNECTION_STRING`` in the environment (adlfs tries that one first)."""
        if self.connection_string is not None:
            return self.connection_string
        if self.account_key is None and self.sas_token is None:
            return None
        if self.account is None:
            raise InvalidWarehouseError(
                f"an Azure key or SAS was given but no account: name it in the URL "
                f"(abfss://container@ACCOUNT.dfs.core.windows.net/...) or with {ACCOUNT_NAME_KEY!r}")
        endpoint = self.endpoint or f"https://{self.account}.blob.core.windows.net"
        parts = [f"BlobEndpoint={endpoint}"]
        if self.account_key is not None:
            protocol = endpoint.split("://", 1)[0]
            parts = [f"DefaultEndpointsProtocol={protocol}", f"AccountName={self.account}",
                     f"AccountKey={self.account_key}", *parts]
        else:
            parts.append(f"SharedAccessSignature={self.sas_token}")
        return ";".join(parts) + ";"

    def filesystem(self) -> fsspec.AbstractFileSystem:
        """An adlfs file system for this configuration (listing cache off: a cached listing must
        never answer whether a snapshot exists; a new instance, never fsspec's shared one, whose
        event loop would not survive a fork)."""
        require("adlfs", "an Azure Blob / ADLS warehouse", extra="azure")
        from impl.fs.azure_blob import PaimonAzureBlobFileSystem  # imports adlfs: the optional azure extra
        kwargs: dict[str, Any] = {
            "use_listings_cache": False,
            "skip_instance_cache": True,
            "connection_timeout": self.connect_timeout_seconds,
            "read_timeout": self.read_timeout_seconds,
        }
        conn = self.service_connection_string()
        if conn is not None:
            kwargs["connection_string"] = conn
        elif self.account is not None:
            kwargs["account_name"] = self.account
            if self.endpoint is not None:
                kwargs["account_host"] = self.endpoint.split("://", 1)[-1]
        try:
            return PaimonAzureBlobFileSystem(**kwargs)
        except ValueError as e:  # adlfs: no account and no connection string, or a malformed one
            raise InvalidWarehouseError(f"cannot open the Azure store: {e}") from e

    @property
    def identity(self) -> str:
        """The store, for the once-per-store conditional-create probe (no secret in it)."""
        return f"azure:{self.endpoint or ''}:{self.account or ''}"


def account_url(scheme: str, account: str, path: str) -> str:
    """``container/path`` as Hadoop (and so Paimon Java, and Iceberg readers such as pyiceberg)
    spell it, with the account in the URL: a reader elsewhere can open it without being told the
    account. ``abfs``/``abfss`` name the account's ``dfs`` host, ``wasb``/``wasbs`` its ``blob``
    host; adlfs's own ``az`` has no Hadoop form and is written as ``abfs``.

    >>> account_url("abfss", "acct", "data/wh/db.db/t")
    'abfss://data@acct.dfs.core.windows.net/wh/db.db/t'
    >>> account_url("az", "acct", "data/wh")
    'abfs://data@acct.dfs.core.windows.net/wh'
    """
    scheme = scheme.lower()
    if scheme not in AZURE_PROTOCOLS:
        raise InvalidWarehouseError(f"{scheme!r} is not an Azure scheme ({', '.join(AZURE_PROTOCOLS)})")
    scheme = "abfs" if scheme == "az" else scheme
    host = "blob" if scheme.startswith("wasb") else "dfs"
    container, _, tail = path.strip("/").partition("/")
    return f"{scheme}://{container}@{account}.{host}.core.windows.net/{tail}"


def qualified_url(fs: fsspec.AbstractFileSystem, path: str) -> str:
    """``path`` (``container/path`` of the adlfs file system ``fs``) as a URL naming the account,
    in the scheme the warehouse was opened with (see :func:`account_url`): what Iceberg metadata
    written on Azure must name, as Paimon Java writes the table's own URL there."""
    account = getattr(fs, "paimon_account", None) or getattr(fs, "account_name", None)
    if not account:
        account = fs.service_client.account_name  # credentials from a connection string or the environment
    return account_url(getattr(fs, "paimon_url_scheme", "abfss"), str(account), path)


def filesystem_for_url(url: str, options: Mapping[str, str] | None) -> tuple[fsspec.AbstractFileSystem, str]:
    """The adlfs file system and the ``container/path`` of an Azure warehouse or table URL.

    >>> fs, path = filesystem_for_url("abfs://data/wh", {  # doctest: +SKIP
    ...     "fs.azure.account.key.acct.dfs.core.windows.net": "..."})
    """
    where = parse_url(url)
    config = AzureConfig.from_options(options, where.account, where.container)
    fs = config.filesystem()
    fs.paimon_store_identity = config.identity  # read by the probe's per-store memory
    fs.paimon_url_scheme = url.split("://", 1)[0].lower()  # the form qualified_url writes back
    fs.paimon_account = config.account
    return fs, where.path


def blob_exists(fs: fsspec.AbstractFileSystem, path: str) -> bool:
    """Whether the blob ``path`` exists: one Get Blob Properties (a HEAD), never a LIST (adlfs's own
    ``exists`` lists the prefix after a 404, to look for a directory)."""
    from fsspec.asyn import sync

    container, blob, _ = fs.split_path(path)
    if not blob:
        return bool(fs.exists(path))

    async def head() -> bool:
        async with fs.service_client.get_blob_client(container, blob) as client:
            return bool(await client.exists())

    from impl.fs.azure_blob import os_errors  # imports the Azure SDK: the optional azure extra

    with os_errors():
        return bool(sync(fs.loop, head))



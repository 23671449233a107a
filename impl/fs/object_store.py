"""Object stores: opening a warehouse URL with Paimon's option names, and publication by a
conditional PUT.

On S3 and compatible stores there is no rename and no hard link, so the create-if-absent that
publishes ``snapshot-N`` is a PUT with ``If-None-Match: *``: the store answers 412 when the key
exists, and exactly one of many racing writers wins.

Two subtleties decide correctness, both handled by :func:`conditional_create`:

- A client retries a PUT whose response was lost (timeout, reset connection, 5xx). If the
  first try landed, the retry sees 412 although *we* hold the key. So a 412 is not trusted on
  its own: the key is read back and compared byte for byte with what we wrote. Our bytes are
  unique (they name manifest lists with random names), so equality proves the key is ours.
- Some S3-compatible stores ignore ``If-None-Match`` and silently overwrite. Two writers would
  then both "win" snapshot N. :func:`probe_conditional_create` checks the store once (a probe
  key written twice with the header; the second PUT must be refused) before a table's first
  commit writes anything, and the commit is refused on a store that fails the probe.
"""

from __future__ import annotations

import os
import threading
import uuid
from dataclasses import dataclass
from typing import Any, Mapping

import fsspec

from impl._optional import require
from impl.errors import FileIOError, InvalidWarehouseError, UnsupportedFileSystemError
from impl.fs import azure, gcs, hdfs
from impl.fs.publication import Publication

# Option names as pypaimon reads them: its own key first (``fs.s3.accessKeyId``...), then each
# name under the prefixes s3. / s3a. / fs.s3. / fs.s3a. (which covers Apache Paimon Java's
# ``s3.access-key`` and Hadoop's ``fs.s3a.access.key``).
_S3_PREFIXES = ("s3.", "s3a.", "fs.s3.", "fs.s3a.")


def _variants(own: str | None, *names: str) -> tuple[str, ...]:
    keys = [own] if own else []
    keys += [prefix + name for prefix in _S3_PREFIXES for name in names]
    return tuple(keys)


ENDPOINT_KEYS = _variants("fs.s3.endpoint", "endpoint")
ACCESS_KEY_KEYS = _variants("fs.s3.accessKeyId", "access-key", "access.key")
SECRET_KEY_KEYS = _variants("fs.s3.accessKeySecret", "secret-key", "secret.key")
SESSION_TOKEN_KEYS = _variants("fs.s3.securityToken", "session-token", "session.token", "security-token",
                               "security.token")
REGION_KEYS = _variants("fs.s3.region", "region", "endpoint.region")
PATH_STYLE_KEYS = _variants(None, "path-style-access", "path.style.access")
CONNECT_TIMEOUT_KEY = "fs.s3.connect-timeout"
READ_TIMEOUT_KEY = "fs.s3.read-timeout"
MAX_ATTEMPTS_KEY = "fs.s3.max-attempts"

# Bounded defaults: an unreachable endpoint fails within seconds, not minutes.
DEFAULT_CONNECT_TIMEOUT_SECONDS = 5.0
DEFAULT_READ_TIMEOUT_SECONDS = 30.0
DEFAULT_MAX_ATTEMPTS = 3

S3_PROTOCOLS = ("s3", "s3a", "s3n")

STORAGE_OPTION_PREFIXES = ("fs.", "s3.", "s3a.", "hadoop.", azure.STORAGE_OPTION_PREFIX, gcs.STORAGE_OPTION_PREFIX)

# Schemes a warehouse may use besides the object stores and HDFS: local disk and fsspec's memory
# (tests). Any other is refused by name rather than opened through whatever fsspec implementation
# happens to be installed, whose publication would not be known to be atomic.
LOCAL_PROTOCOLS = ("file", "local", "memory")


def storage_options(options: Mapping[str, str] | None) -> dict[str, str]:
    """The options that configure storage access (``fs.*``, ``s3.*``, ``hadoop.*``, ``azure.*``, ``gs.*``), as strings."""
    return {k: str(v) for k, v in (options or {}).items() if k.startswith(STORAGE_OPTION_PREFIXES)}


def _first(options: Mapping[str, str], keys: tuple[str, ...]) -> str | None:
    for k in keys:
        v = options.get(k)
        if v is not None and str(v) != "":
            return str(v)
    return None


def _path_style(options: Mapping[str, str]) -> bool:
    """The path-style-access option: true or false as Paimon Java takes it; anything else is refused
    by name (a "yes" read as false would silently address buckets the other way)."""
    for key in PATH_STYLE_KEYS:
        raw = options.get(key)
        if raw is not None and str(raw) != "":
            text = str(raw).strip().lower()
            if text not in ("true", "false"):
                raise InvalidWarehouseError(f"option {key!r}: {raw!r} is not a boolean (true or false)")
            return text == "true"
    return False


def _float_option(options: Mapping[str, str], key: str, default: float) -> float:
    raw = options.get(key)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise InvalidWarehouseError(f"option {key!r}: {raw!r} is not a number of seconds") from None
    if value <= 0:
        raise InvalidWarehouseError(f"option {key!r}: {raw!r} must be > 0")
    return value


@dataclass(frozen=True)
class S3Config:
    """How to reach an S3-compatible store. Credentials left None fall back to the usual
    environment chain (``AWS_ACCESS_KEY_ID``, profiles, instance roles) through botocore."""

    endpoint_url: str | None = None
    access_key_id: str | None = None
    secret_access_key: str | None = None
    session_token: str | None = None
    region: str | None = None
    path_style: bool = False
    connect_timeout_seconds: float = DEFAULT_CONNECT_TIMEOUT_SECONDS
    read_timeout_seconds: float = DEFAULT_READ_TIMEOUT_SECONDS
    max_attempts: int = DEFAULT_MAX_ATTEMPTS

    @staticmethod
    def from_options(options: Mapping[str, str] | None) -> "S3Config":
        opts = dict(options or {})
        endpoint = _first(opts, ENDPOINT_KEYS)
        if endpoint is not None and "://" not in endpoint:
            endpoint = "https://" + endpoint  # Paimon accepts a bare host
        access = _first(opts, ACCESS_KEY_KEYS)
        secret = _first(opts, SECRET_KEY_KEYS)
        if (access is None) != (secret is None):
            raise InvalidWarehouseError(
                "S3 credentials need both an access key (fs.s3.accessKeyId) and a secret "
                "(fs.s3.accessKeySecret); only one was given")
        attempts_raw = opts.get(MAX_ATTEMPTS_KEY, str(DEFAULT_MAX_ATTEMPTS))
        if not attempts_raw.isdigit() or int(attempts_raw) < 1:
            raise InvalidWarehouseError(f"option {MAX_ATTEMPTS_KEY!r}: {attempts_raw!r} is not an integer >= 1")
        return S3Config(
            endpoint_url=endpoint,
            access_key_id=access,
            secret_access_key=secret,
            session_token=_first(opts, SESSION_TOKEN_KEYS),
            region=_first(opts, REGION_KEYS),
            path_style=_path_style(opts),
            connect_timeout_seconds=_float_option(opts, CONNECT_TIMEOUT_KEY, DEFAULT_CONNECT_TIMEOUT_SECONDS),
            read_timeout_seconds=_float_option(opts, READ_TIMEOUT_KEY, DEFAULT_READ_TIMEOUT_SECONDS),
            max_attempts=int(attempts_raw),
        )

    def filesystem(self) -> fsspec.AbstractFileSystem:
        """An s3fs file system for this configuration (listing cache off: a cached listing
        must never answer whether a snapshot exists)."""
        s3fs = require("s3fs", "an S3 warehouse")
        client_kwargs: dict[str, Any] = {}
        if self.endpoint_url:
            client_kwargs["endpoint_url"] = self.endpoint_url
        if self.region:
            client_kwargs["region_name"] = self.region
        config_kwargs: dict[str, Any] = {
            "connect_timeout": self.connect_timeout_seconds,
            "read_timeout": self.read_timeout_seconds,
            "retries": {"max_attempts": self.max_attempts, "mode": "standard"},
        }
        if self.path_style:
            config_kwargs["s3"] = {"addressing_style": "path"}
        kwargs: dict[str, Any] = {
            "client_kwargs": client_kwargs,
            "config_kwargs": config_kwargs,
            "use_listings_cache": False,
            # a new instance per config: fsspec's instance cache would share one event loop
            # and client across fork()ed Spark workers.
            "skip_instance_cache": True,
        }
        if self.access_key_id is not None:
            kwargs["key"] = self.access_key_id
            kwargs["secret"] = self.secret_access_key
            if self.session_token:
                kwargs["token"] = self.session_token
        fs = s3fs.S3FileSystem(**kwargs)
        # s3fs retries on top of botocore's own attempts; keep the product bounded.
        fs.retries = self.max_attempts
        return fs


def is_object_store_url(url: str) -> bool:
    """True for S3, Azure and GCS URLs: stores without rename, where publication is a conditional create."""
    return "://" in url and url.split("://", 1)[0].lower() in (*S3_PROTOCOLS, *azure.AZURE_PROTOCOLS,
                                                                *gcs.GCS_PROTOCOLS)


def filesystem_for_url(url: str, options: Mapping[str, str] | None = None) -> tuple[fsspec.AbstractFileSystem, str]:
    """The file system and the path in its own form for a warehouse or table URL.

    The one place a scheme picks a store: ``s3://bucket/prefix`` (also ``s3a://``, ``s3n://``)
    opens s3fs with the ``fs.s3.*`` / ``s3.*`` options; ``webhdfs://`` (and the refusal of
    ``hdfs://``) is :mod:`impl.fs.hdfs`; ``abfs://``, ``abfss://``, ``az://``, ``wasb[s]://`` open
    adlfs (:mod:`impl.fs.azure`); ``gs://`` opens gcsfs (:mod:`impl.fs.gcs`); a local path, ``file://`` and ``memory://`` open through fsspec;
    any other scheme raises :class:`UnsupportedFileSystemError` naming it.
    """
    if hdfs.is_hdfs_url(url):
        return hdfs.filesystem_for_hdfs_url(url, options)
    scheme = url.split("://", 1)[0].lower() if "://" in url else "file"
    if scheme in azure.AZURE_PROTOCOLS:
        return azure.filesystem_for_url(url, options)
    if scheme in gcs.GCS_PROTOCOLS:
        return gcs.filesystem_for_url(url, options)
    if scheme not in (*S3_PROTOCOLS, *LOCAL_PROTOCOLS):
        raise UnsupportedFileSystemError(
            f"warehouse {url!r}: unknown scheme {scheme!r} (supported: local paths, file://, memory://, webhdfs://, "
            f"{', '.join(p + '://' for p in (*S3_PROTOCOLS, *azure.AZURE_PROTOCOLS, *gcs.GCS_PROTOCOLS))}); its store's atomic "
            "create-if-absent is not known, so snapshots could not be published safely")
    if is_object_store_url(url):
        rest = url.split("://", 1)[1]
        bucket = rest.split("/", 1)[0]
        if not bucket:
            raise InvalidWarehouseError(f"S3 URL {url!r} names no bucket (expected s3://bucket/path)")
        fs = S3Config.from_options(options).filesystem()
        return fs, rest.rstrip("/")
    try:
        fs, path = fsspec.core.url_to_fs(url)
    except ValueError as e:
        if "://" in url and url.split("://", 1)[0].lower() not in fsspec.available_protocols():
            raise UnsupportedFileSystemError(f"warehouse {url!r}: unknown scheme {url.split('://', 1)[0]!r}") from e
        raise InvalidWarehouseError(f"cannot open warehouse {url!r}: {e}") from e
    except ImportError as e:
        raise InvalidWarehouseError(f"cannot open warehouse {url!r}: {e}") from e
    return fs, path


def is_s3(fs: fsspec.AbstractFileSystem) -> bool:
    protocol = getattr(fs, "protocol", None)
    names = (protocol,) if isinstance(protocol, str) else tuple(protocol or ())
    return any(p in S3_PROTOCOLS for p in names)


def check_bucket_reachable(fs: fsspec.AbstractFileSystem, path: str) -> None:
    """Fail fast with a clear error when the bucket (Azure: container) of ``path`` is missing, the
    credentials are refused or the endpoint does not answer (within the configured timeouts)."""
    bucket = path.split("/", 1)[0]
    on_azure = azure.is_azure(fs)
    what = "container" if on_azure else "bucket"
    credentials = (f"{azure.ACCOUNT_KEY_OPTION_HINT} or a SAS" if on_azure
                   else f"{gcs.AUTH_TYPE_KEY} / {gcs.KEYFILE_KEY}" if gcs.is_gcs(fs)
                   else "fs.s3.accessKeyId / fs.s3.accessKeySecret")
    try:
        fs.info(bucket)
    except FileNotFoundError:
        raise InvalidWarehouseError(f"{what} {bucket!r} does not exist (warehouse {path!r})") from None
    except PermissionError as e:
        raise InvalidWarehouseError(f"access to {what} {bucket!r} was refused: check {credentials} ({e})") from e
    except Exception as e:  # noqa: BLE001 - endpoint errors come in many types (botocore, aiohttp, OSError)
        raise InvalidWarehouseError(f"cannot reach the store of {what} {bucket!r}: {type(e).__name__}: {e}") from e


def get_object(fs: fsspec.AbstractFileSystem, path: str) -> bytes:
    """The whole object at ``path`` with one GET (FileNotFoundError when absent)."""
    from fsspec.asyn import sync

    bucket, key, _ = fs.split_path(path)

    async def read() -> bytes:
        response = await fs._call_s3("get_object", Bucket=bucket, Key=key)
        body = response["Body"]
        try:
            return bytes(await body.read())
        finally:
            body.close()

    return bytes(sync(fs.loop, read))


# ------------------------------------------------------------------ conditional create


def has_conditional_create(fs: fsspec.AbstractFileSystem) -> bool:
    """True for stores whose ``pipe_file(path, data, mode="create")`` is a conditional PUT
    (S3: ``If-None-Match: *``; Azure: ``If-None-Match: *`` on the Put Blob; GCS: ``ifGenerationMatch=0``)."""
    return bool(getattr(fs, "supports_conditional_create", False)) or _remembers_probe(fs)


def _remembers_probe(fs: fsspec.AbstractFileSystem) -> bool:
    """Stores whose probe result is kept per process and store (a client of a real object store,
    not a wrapper, which may change its behaviour between calls)."""
    return is_s3(fs) or azure.is_azure(fs) or gcs.is_gcs(fs)


def conditional_create(fs: fsspec.AbstractFileSystem, path: str, data: bytes) -> Publication:
    """Create ``path`` with ``data`` unless it exists.

    A refusal (412, ``FileExistsError``) is checked by reading the key back: equal bytes mean
    an earlier try of this very write landed and the client's retry was refused. Any other
    failure propagates: whether the PUT landed is then unknown, and the caller resolves it by
    reading the key back later, never by trusting the response.
    """
    try:
        fs.pipe_file(path, data, mode="create")
        return Publication.CREATED
    except FileExistsError:
        pass
    try:
        existing = get_object(fs, path) if is_s3(fs) else fs.cat_file(path)
    except FileNotFoundError:
        # refused, then gone: a concurrent expiration or rollback removed it; not ours
        return Publication.TAKEN
    return Publication.OURS_AFTER_RETRY if existing == data else Publication.TAKEN


_PROBED: dict[tuple[str, str], bool] = {}
_PROBE_LOCK = threading.Lock()


def _store_key(fs: fsspec.AbstractFileSystem, path: str) -> tuple[str, str]:
    endpoint = str(getattr(fs, "paimon_store_identity", ""))  # set on Azure and GCS file systems
    client_kwargs = getattr(fs, "client_kwargs", None)
    if isinstance(client_kwargs, dict):
        endpoint = str(client_kwargs.get("endpoint_url", ""))
    return f"{type(fs).__name__}:{endpoint}", path.split("/", 1)[0]


def probe_conditional_create(fs: fsspec.AbstractFileSystem, directory: str) -> None:
    """Check that the store refuses a second conditional PUT: once per process and bucket for
    an s3fs, adlfs or gcsfs file system, on every call for any other (a wrapper: the caller remembers).

    Writes a probe key under ``directory`` twice with ``If-None-Match: *`` and deletes it. A
    store that accepts the second PUT ignores the header, and publishing there could let two
    writers both take snapshot N: :class:`UnsupportedFileSystemError` then, before any table
    file is written.
    """
    key = _store_key(fs, directory)
    with _PROBE_LOCK:
        known = _PROBED.get(key) if _remembers_probe(fs) else None
    if known is True:
        return
    if known is False:
        raise _no_conditional_writes(directory)
    # dot-prefixed and .tmp: listings skip it and orphan removal takes it if a crash leaves it
    probe = f"{directory.rstrip('/')}/.conditional-write-probe-{os.getpid()}-{uuid.uuid4().hex}.tmp"
    try:
        fs.pipe_file(probe, b"1", mode="create")
        try:
            fs.pipe_file(probe, b"2", mode="create")
            refused = False
        except FileExistsError:
            refused = True
    except OSError as e:
        raise FileIOError(f"cannot probe conditional writes under {directory}: {e}") from e
    finally:
        try:
            fs.rm_file(probe)
        except Exception:  # noqa: BLE001 - the probe key is a harmless leftover if this fails
            pass
    if _remembers_probe(fs):
        with _PROBE_LOCK:
            _PROBED[key] = refused
    if not refused:
        raise _no_conditional_writes(directory)


def _no_conditional_writes(directory: str) -> UnsupportedFileSystemError:
    return UnsupportedFileSystemError(
        f"the store under {directory} accepted a second PUT with If-None-Match: *, so it has no "
        "conditional create; two writers could both publish one snapshot id. Use a store with "
        "conditional writes (AWS S3, MinIO, R2, GCS and Azure support them)")


def forget_probes() -> None:
    """Forget probe results (tests that swap stores under one endpoint)."""
    with _PROBE_LOCK:
        _PROBED.clear()

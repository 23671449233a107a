"""Google Cloud Storage: opening a ``gs://`` warehouse with the Hadoop GCS connector's option names
(Paimon Java's paimon-gs reads them), and the facts publication needs (one metadata GET per
existence check, the store's identity for the probe).

Publication on GCS is a conditional create, as on S3 and Azure: gcsfs's ``pipe_file(path, data,
mode="create")`` uploads with ``ifGenerationMatch=0`` (the object must have no live generation); the
service answers 412 when the object exists, and gcsfs raises ``FileExistsError``.
:func:`impl.fs.object_store.conditional_create` then applies the read-back rule (a refused retry of
our own landed upload holds our bytes) and :func:`impl.fs.object_store.probe_conditional_create`
checks once per store that the precondition is honoured. No lock and no LIST on the commit path.
(Paimon Java on GCS publishes by a Hadoop rename, a copy and a delete on GCS, and so needs a
catalog lock for concurrent writers.)

Options (``gs.X`` is read as ``fs.gs.X``, as Paimon's GSFileIO passes both prefixes on):

- ``fs.gs.project.id``: the project (bucket listings, requester pays);
- ``fs.gs.auth.type``: ``APPLICATION_DEFAULT`` (the default: Google's credential chain, e.g.
  ``GOOGLE_APPLICATION_CREDENTIALS``), ``SERVICE_ACCOUNT_JSON_KEYFILE`` (with
  ``fs.gs.auth.service.account.json.keyfile``), ``COMPUTE_ENGINE`` (the metadata server) or
  ``UNAUTHENTICATED`` (public buckets, emulators); any other is refused by name;
- ``fs.gs.storage.root.url``: the endpoint (an emulator's); ``STORAGE_EMULATOR_HOST`` works too;
- ``fs.gs.requester.pays.mode``: ``DISABLED`` (default) or ``ENABLED`` (bill ``fs.gs.project.id``);
- ``fs.gs.http.read-timeout``: milliseconds a request may take (default 30000).

>>> parse_url("gs://data/wh/")
GcsLocation(bucket='data', path='data/wh')
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

import fsspec

from impl._optional import require
from impl.errors import InvalidWarehouseError

GCS_PROTOCOLS = ("gs", "gcs")
STORAGE_OPTION_PREFIX = "gs."  # fs.gs.* is covered by the fs. prefix

PROJECT_KEY = "fs.gs.project.id"
AUTH_TYPE_KEY = "fs.gs.auth.type"
KEYFILE_KEY = "fs.gs.auth.service.account.json.keyfile"
ROOT_URL_KEY = "fs.gs.storage.root.url"
REQUESTER_PAYS_KEY = "fs.gs.requester.pays.mode"
READ_TIMEOUT_KEY = "fs.gs.http.read-timeout"
# Hadoop's GCS connector options that change what is written or who is billed, which impl does not
# implement: refused by name rather than ignored (a customer-supplied key ignored would write objects
# the user's other readers cannot read).
REFUSED_PREFIXES = ("fs.gs.encryption.",)

DEFAULT_READ_TIMEOUT_MILLIS = 30_000

# gcsfs's token argument for each auth type the connector names
_TOKENS = {"APPLICATION_DEFAULT": "google_default", "COMPUTE_ENGINE": "cloud", "UNAUTHENTICATED": "anon"}
AUTH_TYPES = (*_TOKENS, "SERVICE_ACCOUNT_JSON_KEYFILE")

# GCS bucket names: 3-63 characters of lower-case letters, digits, '-', '_' and '.', starting and
# ending with a letter or digit (up to 222 with dots; the common form is enough to refuse typos).
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$")


def is_gcs(fs: fsspec.AbstractFileSystem) -> bool:
    """True for a gcsfs file system (its protocols include ``gs``)."""
    protocol = getattr(fs, "protocol", None)
    names = (protocol,) if isinstance(protocol, str) else tuple(protocol or ())
    return "gs" in names


@dataclass(frozen=True)
class GcsLocation:
    """A warehouse URL taken apart: the bucket and the path in gcsfs's form (``bucket/path``)."""

    bucket: str
    path: str


def parse_url(url: str) -> GcsLocation:
    """The bucket and path of a ``gs://`` URL; :class:`InvalidWarehouseError` naming what is wrong
    otherwise."""
    rest = url.split("://", 1)[1]
    bucket, _, tail = rest.partition("/")
    if not bucket:
        raise InvalidWarehouseError(f"GCS URL {url!r} names no bucket (expected gs://bucket/path)")
    if not _BUCKET.match(bucket):
        raise InvalidWarehouseError(
            f"GCS URL {url!r}: {bucket!r} is not a bucket name (3-63 lower-case letters, digits, '-', '_', '.')")
    tail = tail.strip("/")
    return GcsLocation(bucket, f"{bucket}/{tail}" if tail else bucket)


def _normalized(options: Mapping[str, str] | None) -> dict[str, str]:
    """The GCS options under their ``fs.gs.`` names (``gs.X`` read as ``fs.gs.X``; the latter wins)."""
    out: dict[str, str] = {}
    for k, v in (options or {}).items():
        if str(k).startswith(STORAGE_OPTION_PREFIX) and str(v) != "":
            out.setdefault("fs." + str(k), str(v))
    for k, v in (options or {}).items():
        if str(k).startswith("fs.gs.") and str(v) != "":
            out[str(k)] = str(v)
    return out


@dataclass(frozen=True)
class GcsConfig:
    """How to reach GCS. Credentials come from the environment unless the options name a key file
    (gcsfs reads it; impl never does); ``repr`` shows the kind of credentials, never their source.

    >>> GcsConfig.from_options({"gs.auth.type": "UNAUTHENTICATED", "fs.gs.project.id": "p"})
    GcsConfig(project='p', token='anon', endpoint=None, requester_pays=False, read_timeout_seconds=30.0)
    """

    project: str | None
    token: str
    endpoint: str | None = None
    requester_pays: bool = False
    read_timeout_seconds: float = DEFAULT_READ_TIMEOUT_MILLIS / 1000

    @staticmethod
    def from_options(options: Mapping[str, str] | None) -> "GcsConfig":
        opts = _normalized(options)
        refused = sorted(k for k in opts if k.startswith(REFUSED_PREFIXES))
        if refused:
            raise InvalidWarehouseError(
                f"GCS options {refused} are not supported (customer-supplied encryption keys): impl would "
                "write objects without them")
        auth = opts.get(AUTH_TYPE_KEY, "SERVICE_ACCOUNT_JSON_KEYFILE" if KEYFILE_KEY in opts else "APPLICATION_DEFAULT")
        auth = auth.strip().upper()
        if auth not in AUTH_TYPES:
            raise InvalidWarehouseError(f"option {AUTH_TYPE_KEY!r}: {auth!r} is not supported (supported: "
                                        f"{', '.join(AUTH_TYPES)})")
        if auth == "SERVICE_ACCOUNT_JSON_KEYFILE":
            if KEYFILE_KEY not in opts:
                raise InvalidWarehouseError(f"option {AUTH_TYPE_KEY!r} is SERVICE_ACCOUNT_JSON_KEYFILE but "
                                            f"{KEYFILE_KEY!r} names no key file")
            token = opts[KEYFILE_KEY]
        else:
            token = _TOKENS[auth]
        pays = opts.get(REQUESTER_PAYS_KEY, "DISABLED").strip().upper()
        if pays not in ("DISABLED", "ENABLED"):
            raise InvalidWarehouseError(f"option {REQUESTER_PAYS_KEY!r}: {pays!r} is not supported "
                                        "(DISABLED or ENABLED)")
        raw_timeout = opts.get(READ_TIMEOUT_KEY, str(DEFAULT_READ_TIMEOUT_MILLIS)).strip()
        if not raw_timeout.isdigit() or int(raw_timeout) < 1:
            raise InvalidWarehouseError(f"option {READ_TIMEOUT_KEY!r}: {raw_timeout!r} is not a whole number of "
                                        "milliseconds >= 1")
        endpoint = opts.get(ROOT_URL_KEY)
        if endpoint is not None and "://" not in endpoint:
            endpoint = "https://" + endpoint
        return GcsConfig(project=opts.get(PROJECT_KEY), token=token,
                         endpoint=endpoint.rstrip("/") if endpoint else None, requester_pays=pays == "ENABLED",
                         read_timeout_seconds=int(raw_timeout) / 1000)

    def __repr__(self) -> str:
        shown = self.token if self.token in _TOKENS.values() else "<key file>"
        return (f"GcsConfig(project={self.project!r}, token={shown!r}, endpoint={self.endpoint!r}, "
                f"requester_pays={self.requester_pays}, read_timeout_seconds={self.read_timeout_seconds})")

    def filesystem(self) -> fsspec.AbstractFileSystem:
        """A gcsfs file system for this configuration (listing cache off: a cached listing must never
        answer whether a snapshot exists; a new instance, never fsspec's shared one, whose event loop
        would not survive a fork)."""
        require("gcsfs", "a Google Cloud Storage warehouse", extra="gcs")
        from impl.fs.gcs_objects import PaimonGcsFileSystem  # imports gcsfs: the optional gcs extra

        kwargs: dict[str, Any] = {
            "token": self.token,
            "use_listings_cache": False,
            "skip_instance_cache": True,
            "requests_timeout": self.read_timeout_seconds,
            "requester_pays": self.requester_pays,
            "check_connection": False,
        }
        if self.project is not None:
            kwargs["project"] = self.project
        if self.endpoint is not None:
            kwargs["endpoint_url"] = self.endpoint
        try:
            return PaimonGcsFileSystem(**kwargs)
        except (ValueError, OSError) as e:  # gcsfs: an unreadable key file, no default credentials
            raise InvalidWarehouseError(f"cannot open the GCS store: {type(e).__name__}: {e}") from e

    @property
    def identity(self) -> str:
        """The store, for the once-per-store conditional-create probe (no secret in it)."""
        return f"gcs:{self.endpoint or ''}"


def filesystem_for_url(url: str, options: Mapping[str, str] | None) -> tuple[fsspec.AbstractFileSystem, str]:
    """The gcsfs file system and the ``bucket/path`` of a GCS warehouse or table URL.

    >>> fs, path = filesystem_for_url("gs://data/wh", {  # doctest: +SKIP
    ...     "fs.gs.auth.service.account.json.keyfile": "/etc/keys/sa.json"})
    """
    where = parse_url(url)
    config = GcsConfig.from_options(options)
    fs = config.filesystem()
    fs.paimon_store_identity = config.identity  # read by the probe's per-store memory
    return fs, where.path


def object_exists(fs: fsspec.AbstractFileSystem, path: str) -> bool:
    """Whether the object ``path`` exists: one metadata GET, never a LIST (gcsfs's own ``exists``
    lists the prefix after a 404, to look for a directory)."""
    bucket, key, _ = fs.split_path(path)
    if not key:
        return bool(fs.exists(path))
    return bool(fs.object_exists(bucket, key))

"""Spark's own Parquet reader and writer on S3: Hadoop's ``s3a`` file system for the native paths.

pyspark 4.3 ships Hadoop's 3.5.0 client without ``hadoop-aws``, so ``s3a://`` is absent and
:func:`impl.spark.read_table` / the native writer fall back to impl's Python readers and writers
on object stores. ``impl.spark.session(conf=impl.spark.s3a_conf())`` puts ``hadoop-aws`` 3.5.0
and only the AWS SDK v2 modules S3A loads on the class path (``spark.jars.packages``, fetched
once by Spark's Ivy from Maven Central, about 14 MB, instead of the SDK's 686 MB ``bundle``,
which is excluded). Without them (no network, a session built elsewhere) the native paths say
why (:func:`s3a_reason`) and the Python paths serve, as before.

impl's paths and options stay as they are (``s3://bucket/...``, ``fs.s3.endpoint``, ...): at the
boundary only, a path becomes ``s3a://bucket/...`` and the table's storage options become
``fs.s3a.*`` options of that one read or write (Spark copies a file source's options into its
Hadoop configuration). One JVM keeps one S3A client per bucket (Hadoop's file system cache): the
first read or write of a bucket fixes its endpoint and keys for the session.
"""

from __future__ import annotations

import ipaddress
import threading
from dataclasses import dataclass, field
from typing import Mapping
from urllib.parse import urlparse

from impl.fs.object_store import S3Config

HADOOP_AWS_VERSION = "3.5.0"  # pyspark 4.3's Hadoop client (pyspark/jars/hadoop-client-api-3.5.0.jar)
AWS_SDK_VERSION = "2.35.4"  # the SDK hadoop-aws 3.5.0 is built against
# hadoop-aws pulls the SDK's bundle (686 MB); S3A needs s3 (+ its core modules) and the
# transfer manager; netty itself comes from Spark's own jars.
S3A_PACKAGES = (f"org.apache.hadoop:hadoop-aws:{HADOOP_AWS_VERSION}",
                f"software.amazon.awssdk:s3:{AWS_SDK_VERSION}",
                f"software.amazon.awssdk:s3-transfer-manager:{AWS_SDK_VERSION}")
S3A_EXCLUDES = ("software.amazon.awssdk:bundle", "io.netty:*")


def s3a_conf(storage_options: Mapping[str, str] | None = None, *, ivy_dir: str | None = None) -> dict[str, str]:
    """Spark session configuration that puts ``s3a`` on the class path (``spark.jars.packages``);
    with ``storage_options`` (impl's names: ``fs.s3.endpoint``, ``fs.s3.accessKeyId``, ...) also
    session-wide ``spark.hadoop.fs.s3a.*`` settings. ``ivy_dir``: where Spark's Ivy keeps the jars
    (default ``~/.ivy2.5.2``). Static settings: they take effect on a new session only."""
    conf = {"spark.jars.packages": ",".join(S3A_PACKAGES), "spark.jars.excludes": ",".join(S3A_EXCLUDES)}
    if ivy_dir:
        conf["spark.jars.ivy"] = ivy_dir
    if storage_options:
        conf.update({"spark.hadoop." + k: v for k, v in hadoop_options(storage_options).items()})
    return conf


def hadoop_options(storage_options: Mapping[str, str]) -> dict[str, str]:
    """impl's storage options as S3A's Hadoop options (``fs.s3a.*``)."""
    cfg = S3Config.from_options(storage_options)
    out: dict[str, str] = {}
    if cfg.endpoint_url:
        out["fs.s3a.endpoint"] = cfg.endpoint_url
    if cfg.region:
        out["fs.s3a.endpoint.region"] = cfg.region
    if cfg.access_key_id is not None:
        out["fs.s3a.access.key"] = cfg.access_key_id
        out["fs.s3a.secret.key"] = cfg.secret_access_key or ""
        provider = "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"
        if cfg.session_token:
            out["fs.s3a.session.token"] = cfg.session_token
            provider = "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
        out["fs.s3a.aws.credentials.provider"] = provider
    # botocore addresses a bucket on an IP or localhost endpoint by path whatever the option
    # says; S3A would put the bucket in the host name
    out["fs.s3a.path.style.access"] = str(cfg.path_style or _literal_host(cfg.endpoint_url)).lower()
    out["fs.s3a.attempts.maximum"] = str(cfg.max_attempts)
    return out


def _literal_host(endpoint: str | None) -> bool:
    host = urlparse(endpoint).hostname if endpoint else None
    if not host:
        return False
    if host == "localhost":
        return True
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def s3a_uri(path: str) -> str:
    """An object-store path of impl (``s3://b/k``, ``s3a://b/k`` or fsspec's ``b/k``) as S3A's URI."""
    rest = path.split("://", 1)[1] if "://" in path else path
    return "s3a://" + rest.lstrip("/")


@dataclass(frozen=True)
class SparkStore:
    """How Spark's Parquet reader and writer reach a table's files: the URI of a path as impl
    spells it, and the Hadoop options of each read or write."""

    object_store: bool = False
    hadoop: Mapping[str, str] = field(default_factory=dict, repr=False)  # may hold secrets: never printed

    def uri(self, path: str) -> str:
        # a local path spelled as a file: URI, or a cluster whose default file system is HDFS
        # would look for it there
        return s3a_uri(path) if self.object_store else "file://" + path


LOCAL_STORE = SparkStore()


def spark_store(ref) -> SparkStore:
    """The :class:`SparkStore` of a :class:`impl.jobs.tables.TableRef` on local disk or S3."""
    if not ref.on_object_store:
        return LOCAL_STORE
    return SparkStore(True, hadoop_options(dict(ref.storage)))


_checked: dict[int, str | None] = {}
_checked_lock = threading.Lock()


def s3a_reason(spark) -> str | None:
    """Why ``spark`` cannot read and write ``s3a://`` (hadoop-aws or the AWS SDK not on its class
    path), or None when it can. Checked once per SparkContext."""
    if spark is None:
        return "no active Spark session"
    jsc = getattr(spark.sparkContext, "_jsc", None)
    if jsc is None:
        return "the Spark session has no JVM context (Spark Connect)"
    key = id(jsc)
    with _checked_lock:
        if key in _checked:
            return _checked[key]
    jvm = spark.sparkContext._jvm
    reason: str | None = None
    try:
        cls = jvm.org.apache.hadoop.fs.FileSystem.getFileSystemClass("s3a", jsc.hadoopConfiguration())
        # S3A's class loads lazily: the SDK it needs must be there too
        cls.getClassLoader().loadClass("software.amazon.awssdk.services.s3.S3Client")
    except Exception as e:  # noqa: BLE001 - any JVM error here means: no usable s3a
        reason = ("Spark has no s3a file system (hadoop-aws and the AWS SDK are not on its class path; "
                  f"build the session with impl.spark.s3a_conf()): {str(e).splitlines()[0][:200]}")
    with _checked_lock:
        _checked[key] = reason
    return reason


__all__ = ["s3a_conf", "hadoop_options", "s3a_uri", "s3a_reason", "SparkStore", "spark_store", "LOCAL_STORE",
           "S3A_PACKAGES", "S3A_EXCLUDES"]

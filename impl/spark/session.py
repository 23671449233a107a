"""A SparkSession with defaults for a small machine and for CI.

``session()`` (alias ``get_or_create_session()``) returns the active session, or builds one:

- ``local[2]`` master, Spark UI off, console progress bar off;
- driver host / bind address and ``SPARK_LOCAL_IP`` on 127.0.0.1 (no DNS, no public interface);
- ``PYSPARK_PYTHON`` / ``PYSPARK_DRIVER_PYTHON`` set to the running interpreter, so workers
  import the same ``impl`` (and pyarrow) as the driver;
- the driver's ``PYTHONPATH`` shipped as ``spark.executorEnv.PYTHONPATH``: executors on a cluster
  do not inherit the driver's environment (local mode does), and without it a driver running
  from a source checkout would have its tasks import whichever ``impl`` is installed;
- quiet logs: the driver JVM logs errors only, to stderr (``log4j2.properties`` beside this
  module), so opening a session writes nothing to stdout and no banner to stderr; 4 shuffle
  partitions, Arrow batches of 64k rows;
- Python data source filter pushdown enabled (Spark refuses a reader that implements
  ``pushFilters`` while it is off);
- the ``paimon_py`` data source registered.

Everything can be overridden with ``conf`` (or a ``PAIMON_PY_SPARK_MASTER`` environment variable
for the master).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from pathlib import Path
from typing import Mapping

from impl.spark.source import register

LOG4J_CONFIG = Path(__file__).with_name("log4j2.properties")

DEFAULT_CONF: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.memory": "2g",
    "spark.log.level": "ERROR",
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "2",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.execution.arrow.maxRecordsPerBatch": "65536",
    "spark.sql.python.filterPushdown.enabled": "true",
    "spark.python.worker.reuse": "true",
    "spark.sql.adaptive.enabled": "true",
    # read by spark-submit when it launches the driver JVM (local and client mode)
    "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={LOG4J_CONFIG.as_uri()}",
}

_lock = threading.Lock()
_PACKAGE_KEYS = frozenset({"spark.jars.packages", "spark.jars.excludes", "spark.jars.ivy"})
log = logging.getLogger(__name__)


def _prepare_environment() -> None:
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # Workers must run this interpreter: it has impl, pyarrow and numpy in the same versions.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.setdefault("PYARROW_IGNORE_TIMEZONE", "1")


def _executor_environment() -> dict[str, str]:
    path = os.environ.get("PYTHONPATH")
    return {"spark.executorEnv.PYTHONPATH": path} if path else {}


def session(app_name: str = "paimon-py", master: str | None = None,
            conf: Mapping[str, str] | None = None, *, register_source: bool = True):
    """The active SparkSession, or a new one with the defaults above (then ``conf`` applies)."""
    _prepare_environment()
    from pyspark.sql import SparkSession

    with _lock:
        active = SparkSession.getActiveSession()
        if active is None:
            builder = SparkSession.builder.appName(app_name).master(
                master or os.environ.get("PAIMON_PY_SPARK_MASTER", "local[2]"))
            settings = {**DEFAULT_CONF, **_executor_environment(), **dict(conf or {})}
            try:
                active = _build(builder, settings)
            except Exception as e:  # noqa: BLE001 - spark-submit exits when Ivy cannot fetch the packages
                if "spark.jars.packages" not in settings:
                    raise
                # e.g. no network to Maven Central: a session without them (s3a_reason says so
                # and the object-store paths stay on impl's readers and writers)
                log.warning("Spark session without spark.jars.packages %s: %s", settings["spark.jars.packages"],
                            str(e).splitlines()[0] if str(e) else type(e).__name__)
                active = _build(SparkSession.builder.appName(app_name).master(
                    master or os.environ.get("PAIMON_PY_SPARK_MASTER", "local[2]")),
                    {k: v for k, v in settings.items() if k not in _PACKAGE_KEYS})
            active.sparkContext.setLogLevel("ERROR")
        elif conf:
            for k, v in conf.items():
                try:
                    active.conf.set(k, v)
                except Exception:  # noqa: BLE001 - static confs cannot change on a running session
                    pass
    if register_source:
        register(active)
    return active


def _build(builder, settings: Mapping[str, str]):
    for k, v in settings.items():
        builder = builder.config(k, v)
    return builder.getOrCreate()


get_or_create_session = session

__all__ = ["session", "get_or_create_session", "DEFAULT_CONF"]

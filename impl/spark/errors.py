"""Typed errors of the Spark connector (``impl.spark``; all subclasses of
:class:`SparkConnectorError`).

Where errors live (three homes, checked by tests/core/test_error_names.py): ``impl.errors``
holds the bases and every error raised below the table API (storage, formats and types,
manifests, snapshots, commit, merge tree, schema, options, tags and branches);
``impl.errors`` the errors of the catalog and the table API; this module those of the
Spark connector. An error goes to the home of the lowest package that raises it. This module
imports nothing from impl but :mod:`impl.errors`, so every connector module can import it.
"""

from __future__ import annotations

from typing import Mapping

from impl.errors import PaimonError


class SparkConnectorError(PaimonError, ValueError):
    """Misuse of the Spark connector (bad path, bad option, unsupported save mode, ...)."""


class WriteRoutingError(SparkConnectorError):
    """Two Spark tasks of one write wrote the same primary key (the order of its versions is undefined).

    ``key`` (column -> value), ``partition`` (column -> value) and ``bucket`` name one such key.
    """

    def __init__(self, message: str, *, key: Mapping[str, object] | None = None,
                 partition: Mapping[str, object] | None = None, bucket: int | None = None):
        super().__init__(message)
        self.key = dict(key or {})
        self.partition = dict(partition or {})
        self.bucket = bucket


class NativeWriteUnsupportedError(SparkConnectorError):
    """``writer="spark"`` was asked for a table Spark's Parquet writer cannot write as Paimon does."""


class SharedPlanError(SparkConnectorError):
    """One query scans the same loaded DataFrame / view twice while Spark 4.3 hands all those
    scans the same pruned plan: reading it could return wrong rows, so the query fails."""


class WriteClosedError(SparkConnectorError):
    """A task attempt started after the driver had already committed or aborted its write."""


class StreamStartError(SparkConnectorError):
    """The start options of a streaming read are wrong or not supported."""


class StreamSnapshotExpiredError(SparkConnectorError):
    """A snapshot the stream still has to read has expired: its changes can no longer be read."""


class StreamSinkError(SparkConnectorError):
    """The streaming sink cannot run as configured (no checkpoint location, no query or batch id)."""


class RowLevelChangeError(SparkConnectorError):
    """A row-level DELETE / UPDATE / MERGE INTO (:mod:`impl.spark.dml`) that cannot run as given:
    a condition or expression Spark cannot parse or resolve, or an assignment to a column that is
    not the table's or may not change. Raised before anything is written."""


class MergeCardinalityError(RowLevelChangeError):
    """MERGE INTO matched one target row with several source rows (which one wins is undefined;
    Delta and Iceberg refuse it too). ``target_row`` names one such row. Nothing is written."""

    def __init__(self, message: str, *, target_row: Mapping[str, object] | None = None):
        super().__init__(message)
        self.target_row = dict(target_row or {})


class PlanPinError(SparkConnectorError):
    """A read cannot stay on what its DataFrame was planned at: the snapshot its time travel
    option named resolves to another one now (a tag moved, snapshots expired), or the table's
    columns changed since the DataFrame was loaded. Nothing is read from another snapshot or
    under another schema; load the DataFrame again."""

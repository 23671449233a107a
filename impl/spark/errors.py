"""Typed errors of the Spark connector (``impl.spark``; all subclasses of
:class:`SparkConnectorError`).

Where errors live (three homes, checked by tests/core/test_error_names.py): ``impl.errors``
holds the bases and every error raised below the table API (storage, formats and types,
manifests, snapshots, commit, merge tree, schema, options, tags and branches);
``impl.errors`` the errors of the catalog and the table API; this module those of the
Spark connector. An error goes to the home of the lowest package that raises it: the errors of
the write-job protocol Spark shares with Ray (``WriteRoutingError``, ``WriteClosedError``) live
in :mod:`impl.errors` and are re-exported here. This module imports nothing from impl but
:mod:`impl.errors`, so every connector module can import it.
"""

from __future__ import annotations

from typing import Mapping

# the job layer's errors (impl.jobs, shared with impl.ray) live in impl.errors; offered here
# under their old names too
from impl.errors import ConnectorError
from impl.errors import WriteClosedError as WriteClosedError
from impl.errors import WriteRoutingError as WriteRoutingError


class SparkConnectorError(ConnectorError):
    """Misuse of the Spark connector (bad option, unsupported save mode, ...). A table path or
    storage option the job layer refuses (``impl.jobs``, shared with Ray) raises its base,
    :class:`impl.errors.ConnectorError`."""


class NativeWriteUnsupportedError(SparkConnectorError):
    """``writer="spark"`` was asked for a table Spark's Parquet writer cannot write as Paimon does."""


class SharedPlanError(SparkConnectorError):
    """One query scans the same loaded DataFrame / view twice while Spark 4.3 hands all those
    scans the same pruned plan: reading it could return wrong rows, so the query fails."""


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

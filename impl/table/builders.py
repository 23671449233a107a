"""Write and read builders (Paimon's BatchWriteBuilder, StreamWriteBuilder, ReadBuilder)."""

from __future__ import annotations

from concurrent.futures import Executor
from typing import Mapping, Sequence

from impl._optional import require
from impl.errors import InvalidPredicateError, OverwritePartitionError
from impl.options.registry import check_read
from impl.predicate.predicate import Predicate, PredicateBuilder
from impl.read.arrow_stream import BuilderReads
from impl.read.projection import check_limit, resolve_projection
from impl.read.scan import TableScan
from impl.read.table_read import TableRead
from impl.store.core import TableCore
from impl.store.schema import ROW_TRACKING_COLUMNS, is_row_tracking_column
from impl.write.table_commit import NO_OVERWRITE, TableCommit
from impl.write.table_write import TableWrite
from impl.write.update import TableUpdate


class BatchWriteBuilder:
    """Builds one batch write and its commit (they share a commit user).

    >>> wb = table.new_batch_write_builder()                   # doctest: +SKIP
    >>> w, c = wb.new_write(), wb.new_commit()                  # doctest: +SKIP
    >>> w.write_arrow(data); c.commit(w.prepare_commit())       # doctest: +SKIP
    """

    def __init__(self, core: TableCore):
        self.core = core
        self.commit_user = core.env.new_id()
        self._overwrite = NO_OVERWRITE

    def overwrite(self, static_partition: Mapping[str, object] | None = None) -> "BatchWriteBuilder":
        """Make the commit an OVERWRITE: of the given partition spec (a prefix of the partition
        keys), or with None of the whole table (of the partitions receiving rows, on partitioned
        tables with ``dynamic-partition-overwrite`` = true, Paimon's default)."""
        spec = dict(static_partition) if static_partition else {}
        keys = list(self.core.schema.partition_keys)
        unknown = [k for k in spec if k not in keys]
        if unknown:
            raise OverwritePartitionError(
                f"overwrite of {self.core.identifier}: {unknown} are not partition keys (partition keys: {keys})")
        self._overwrite = spec
        return self

    def new_write(self, *, compaction_executor: Executor | None = None,
                  spill_directory: str | None = None) -> TableWrite:
        """``compaction_executor``, ``spill_directory``: see :class:`TableWrite` (defaults: a
        background thread pool, the system temp directory)."""
        return TableWrite(self.core, self.commit_user, streaming=False,
                          ignore_previous_files=self._overwrite is not NO_OVERWRITE,
                          compaction_executor=compaction_executor, spill_directory=spill_directory)

    def new_commit(self) -> TableCommit:
        return TableCommit(self.core, self.commit_user, streaming=False, overwrite_partition=self._overwrite)

    def new_update(self) -> TableUpdate:
        """Column updates by ``_ROW_ID`` of a data-evolution table (see :mod:`impl.write.update`);
        commit their messages with :meth:`new_commit`."""
        return TableUpdate(self.core, self.commit_user)


class StreamWriteBuilder:
    """Builds a stream write (many prepare_commit calls) and a commit with explicit identifiers."""

    def __init__(self, core: TableCore):
        self.core = core
        self.commit_user = core.env.new_id()

    def with_commit_user(self, commit_user: str) -> "StreamWriteBuilder":
        self.commit_user = commit_user
        return self

    def new_write(self, *, compaction_executor: Executor | None = None,
                  spill_directory: str | None = None) -> TableWrite:
        """``compaction_executor``, ``spill_directory``: see :class:`TableWrite`."""
        return TableWrite(self.core, self.commit_user, streaming=True, compaction_executor=compaction_executor,
                          spill_directory=spill_directory)

    def new_commit(self) -> TableCommit:
        return TableCommit(self.core, self.commit_user, streaming=True)


class ReadBuilder(BuilderReads):
    """Builds scans and reads with a filter, a projection and a row limit."""

    def __init__(self, core: TableCore):
        # a Paimon option that changes what a read returns and impl does not implement (e.g.
        # scan.version, bucket-function.type = mod) is refused here, before any plan
        check_read(core.options.raw, core.identifier)
        self.core = core
        self._predicate: Predicate | None = None
        self._projection: list[str] | None = None
        self._limit: int | None = None

    def with_filter(self, predicate: Predicate | None) -> "ReadBuilder":
        if predicate is not None and not isinstance(predicate, Predicate):
            raise InvalidPredicateError(f"with_filter takes a Predicate, got {type(predicate).__name__}")
        self._predicate = predicate
        return self

    def with_projection(self, projection: Sequence[str | int] | None) -> "ReadBuilder":
        if projection is None:
            self._projection = None
            return self
        tracked = self.core.options.row_tracking

        def hint(p: object) -> str:
            if isinstance(p, str) and is_row_tracking_column(p) and not tracked:
                return " (a row-tracking system column: the table needs 'row-tracking.enabled')"
            return ""

        self._projection = resolve_projection(projection, self.core.schema.field_names,
                                              extra_columns=ROW_TRACKING_COLUMNS if tracked else (),
                                              missing_hint=hint)
        return self

    def with_limit(self, limit: int | None) -> "ReadBuilder":
        self._limit = check_limit(limit)
        return self

    def new_predicate_builder(self) -> PredicateBuilder:
        return PredicateBuilder(self.core.schema)

    def read_type(self):
        """The pyarrow schema of what ``new_read()`` returns."""
        return self.new_read().output_schema()

    def new_scan(self) -> TableScan:
        return TableScan(self.core, self._predicate, fallback=True)

    def to_ray(self, *, parallelism: int = -1, ray_remote_args: dict | None = None, concurrency: int | None = None):
        """This builder's rows (filter, projection, limit) as a Ray Dataset, planned now and read
        in parallel Ray tasks (needs the ray extra): see :func:`impl.ray.read_table`."""
        ray_source = require("impl.ray.source", "to_ray()", extra="ray")  # impl.ray sits above the table layer: resolved when called, as an optional library is
        return ray_source.read_table(self.core, filter=self._predicate, columns=self._projection,
                          limit=self._limit, parallelism=parallelism, ray_remote_args=ray_remote_args,
                          concurrency=concurrency)

    def new_read(self) -> TableRead:
        return TableRead(self.core, self._predicate, self._projection, self._limit)

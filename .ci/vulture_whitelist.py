"""Names vulture reports as unused that are used from outside this repository's code.

Each line is a reviewed decision; a name that is truly dead is deleted instead of added here.
"""
# ruff: noqa
# mypy: ignore-errors

# fsspec's AbstractFileSystem protocol: class attributes and parameters fsspec itself reads
_.protocol
_.cachable
_.root_marker
objtype  # descriptor __get__(self, obj, objtype)
autocommit  # AbstractFileSystem._open signature
_.put_file  # fsspec's upload method; the Spark write log wraps it so `fs.put` cannot bypass the log

# Paimon's format: enum members and record fields that exist in the files we read and write
_.ANALYZE  # CommitKind
_.embedded_index  # DataFileMeta field
_.COUNTS  # StatsModeKind (metadata.stats-mode=counts)
_.PROCESS  # simulation.committers.CommitterMode
# StartupMode (scan.mode): Paimon's values, parsed so that they are refused by name by streaming reads
_.LATEST_DELTA
_.COMPACTED_FULL
_.FROM_CREATION_TIMESTAMP
_.FROM_FILE_CREATION_TIME
_.INCREMENTAL

# results a caller reads (public API), not used inside the repository
_.deleted_metadata_files  # ExpireResult
_.files_after  # spark CompactionResult

# Spark's Python data source API: called by Spark
_.pushFilters
_.initialOffset
_.latestOffset
_.prepareForTriggerAvailableNow
_.streamReader
_.streamWriter

# Ray Data's Datasource / Datasink API: called by Ray (impl/ray)
_.get_name
_.estimate_inmemory_data_size
_.on_write_start
_.on_write_complete
_.on_write_failed
_.min_rows_per_write  # how many rows Ray bundles into one write task

# pypaimon-compatible API names
_.read_type  # ReadBuilder.read_type
_.write_arrow_batch  # BatchTableWrite alias
_.write_pandas

# option views: parsed so that a wrong value is refused at table creation, though nothing
# else reads them yet (only Parquet is written; spilling is issue 16)
_.file_format
WRITE_BUFFER_SPILLABLE

# http.server's BaseHTTPRequestHandler / ThreadingHTTPServer protocol (the S3 fault proxy, impl.rest)
_.protocol_version
_.log_message
_.do_GET
_.do_PUT
_.do_POST
_.do_DELETE
_.do_HEAD
_.daemon_threads
_.close_connection
# impl.rest.http_server: the rest of the protocol its hardened handler and server override
_.readinto  # io.RawIOBase: the deadline reader under the handler's BufferedReader
_.default_request_version
_.handle_one_request
_.handle_expect_100
_.request_version
_.requestline
_.request_queue_size  # socketserver.TCPServer: listen()'s backlog
_.handle_error

# conformance: enum members named for targets and reports (the pypaimon target declares them, the
# integrator's classification of pypaimon divergences uses the other two classes)
from fault_injection.conformance.adapter import Capability
from fault_injection.conformance.checks.result import Classification

Capability.COMMIT_IDENTIFIER
Capability.OBJECT_STORE
Classification.UNSUPPORTED_FEATURE

# dynamic-bucket.initial-buckets: declared so its value is validated and documented (Paimon's
# assigner parallelism of a distributed writer); this library assigns with one assigner
from impl.options import core_options

core_options.DYNAMIC_BUCKET_INITIAL_BUCKETS

# module-level __getattr__ (PEP 562): Python calls it for a name the module lacks; impl.pypaimon
# answers pypaimon's names impl does not offer with the reason
__getattr__

# pyarrow.dataset.Dataset's property, overridden by impl.duckdb.dataset.TableDataset to refuse by name
# instead of reaching the native dataset the object does not have
from impl.duckdb.dataset import TableDataset

TableDataset.partition_expression

# moto's ThreadedMotoServer runs self._server_entry() in its thread; the server class made by
# simulation/embedded_s3.py overrides it to wrap moto's WSGI app (racing conditional PUTs)
from simulation import embedded_s3

embedded_s3._threaded_server("127.0.0.1", 0)._server_entry

# a type-level check: mypy verifies both kinds of table satisfy the Table protocol (impl/system/table.py)
TABLE_KINDS

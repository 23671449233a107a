"""fsspec file systems that fail on purpose, and crash-point enumeration.

- :mod:`fault_injection.faulty_fs`: :class:`FaultyFileSystem`, the fault plan
  (:class:`Crash`, :class:`CrashAfter`, :class:`IOErrorAt`, :class:`TornWrite`,
  :class:`NonAtomicRename`, :class:`LoseUnsynced`, :class:`Latency`), the
  :class:`OpRecorder` and the durability model (read its module docstring).
- :mod:`fault_injection.crash_points`: :func:`enumerate_crash_points` runs a scenario once
  per storage operation with a fault there and yields a :class:`CrashOutcome` per run.
"""

from fault_injection.crash_points import (
    CrashOutcome,
    at_state_changes,
    container_storage,
    crash_after,
    crash_at,
    enumerate_crash_points,
    fresh_memory_storage,
    io_error_at,
    local_storage,
    object_store_storage,
    record_operations,
    remove_storage,
    torn_writes,
)
from fault_injection.faulty_fs import (
    WRITE_KINDS,
    Crash,
    CrashAfter,
    Fault,
    FaultyFileSystem,
    IOErrorAt,
    Latency,
    LoseUnsynced,
    NonAtomicRename,
    OpRecord,
    OpRecorder,
    SimulatedCrash,
    TornWrite,
)

__all__ = [
    "WRITE_KINDS",
    "Crash",
    "CrashAfter",
    "CrashOutcome",
    "Fault",
    "FaultyFileSystem",
    "IOErrorAt",
    "Latency",
    "LoseUnsynced",
    "NonAtomicRename",
    "OpRecord",
    "OpRecorder",
    "SimulatedCrash",
    "TornWrite",
    "at_state_changes",
    "container_storage",
    "crash_after",
    "crash_at",
    "enumerate_crash_points",
    "fresh_memory_storage",
    "io_error_at",
    "local_storage",
    "object_store_storage",
    "record_operations",
    "remove_storage",
    "torn_writes",
]

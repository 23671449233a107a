"""Shared helpers of the storage-core tests: the pypaimon 2.1.0 reference dump, file builders,
storage roots, and FileIO subclasses that inject faults or competing commits.

Kept free of pytest so that spawned worker processes can import it cheaply.
"""

from __future__ import annotations

import datetime
import json
import os
import posixpath
import re
import uuid
from dataclasses import dataclass, field
from typing import Callable

import fsspec
from fsspec.spec import AbstractFileSystem

from impl.fs.file_io import FileIO

DATA_DIR = os.path.join(os.path.dirname(__file__), "data")
REFERENCE_DUMP = os.path.join(DATA_DIR, "pypaimon-2.1.0-layout.txt")


# ----------------------------------------------------------------------------- reference dump


@dataclass
class AvroSection:
    table: str  # e.g. "pk_t"
    path: str  # relative path as printed, e.g. "db.db/pk_t/manifest/manifest-..."
    codec: str
    schema: dict
    records: list[dict] = field(default_factory=list)

    @property
    def file_name(self) -> str:
        return posixpath.basename(self.path)


@dataclass
class ReferenceDump:
    json_files: dict[str, bytes]  # "db.db/pk_t/snapshot/snapshot-1" -> raw JSON text
    hints: dict[str, str]  # "db.db/pk_t/snapshot/LATEST" -> "3"
    avro: list[AvroSection]
    tree_lines: list[str]

    def snapshots(self) -> dict[str, bytes]:
        return {k: v for k, v in self.json_files.items() if "/snapshot/snapshot-" in k}

    def schemas(self) -> dict[str, bytes]:
        return {k: v for k, v in self.json_files.items() if "/schema/schema-" in k}

    def schema_of(self, table: str) -> dict:
        return json.loads(self.json_files[f"db.db/{table}/schema/schema-0"])

    def avro_with_record(self, record_name: str) -> list[AvroSection]:
        return [s for s in self.avro if s.schema.get("name") == record_name]


_HEADER = re.compile(r"^--- (AVRO |PARQUET )?(\S+?):?(\s.*)?$")
_REPR_GLOBALS = {"__builtins__": {}, "datetime": datetime}


def load_reference_dump(path: str = REFERENCE_DUMP) -> ReferenceDump:
    """Parse the text dump: JSON files, hints, Avro sections (schema + records as Python reprs)."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    json_files: dict[str, bytes] = {}
    hints: dict[str, str] = {}
    avro: list[AvroSection] = []
    tree: list[str] = []
    i = 0
    section = None
    while i < len(lines):
        line = lines[i]
        if line.startswith("============================== TREE"):
            section = "tree"
            i += 1
            continue
        if line.startswith("=============================="):
            section = None
            i += 1
            continue
        if section == "tree":
            tree.append(line)
            i += 1
            continue
        m = _HEADER.match(line)
        if not m:
            i += 1
            continue
        kind, rel = m.group(1), m.group(2)
        body = []
        i += 1
        while i < len(lines) and not lines[i].startswith("---") and not lines[i].startswith("====="):
            body.append(lines[i])
            i += 1
        if kind is None:
            text = "\n".join(body).strip()
            if rel.endswith("/LATEST") or rel.endswith("/EARLIEST"):
                hints[rel] = text
            elif text:
                json_files[rel] = text.encode("utf-8")
        elif kind.strip() == "AVRO":
            codec = re.search(r"codec=(\S+)", line).group(1)
            schema = json.loads(body[0])
            records = []
            for b in body[1:]:
                rm = re.match(r"^record\[(\d+)\]: (.*)$", b)
                if rm:
                    assert int(rm.group(1)) == len(records)
                    records.append(eval(rm.group(2), dict(_REPR_GLOBALS)))  # noqa: S307 - trusted local fixture
            table = rel.split("/")[1]
            avro.append(AvroSection(table, rel, codec, schema, records))
    return ReferenceDump(json_files, hints, avro, tree)


# ----------------------------------------------------------------------------- storage roots


def memory_root(prefix: str = "core") -> tuple[FileIO, str]:
    """A FileIO on the process-wide memory store with a root no other test uses."""
    fs = fsspec.filesystem("memory")
    return FileIO(fs), f"/{prefix}-{uuid.uuid4().hex}"


def list_manifest_dir(io: FileIO, table: str) -> set[str]:
    return set(io.list_names(posixpath.join(table, "manifest")))


# ----------------------------------------------------------------------------- injecting FileIOs


class InjectedIOError(OSError):
    pass


class SimulatedCrash(BaseException):
    """The process 'dies' here: nothing after it runs, no cleanup (not an Exception)."""


class HookedFileIO(FileIO):
    """A FileIO with hooks around writes and the atomic publish.

    ``on_write(path, n)`` runs before the n-th (0-based) ``write_bytes`` whose base name starts
    with ``write_prefix``; it may raise. ``before_publish(path, n)`` / ``after_publish(path, n, result)``
    run around the n-th ``try_write_atomic``.
    """

    def __init__(self, fs, *, write_prefix: str = "", on_write=None, before_publish=None, after_publish=None):
        super().__init__(fs)
        self.write_prefix = write_prefix
        self.on_write: Callable | None = on_write
        self.before_publish: Callable | None = before_publish
        self.after_publish: Callable | None = after_publish
        self.writes: list[str] = []
        self.publishes: list[str] = []

    def write_bytes(self, path: str, data: bytes) -> None:
        name = posixpath.basename(path)
        if name.startswith(self.write_prefix) and not name.startswith("."):
            n = len(self.writes)
            self.writes.append(path)
            if self.on_write is not None:
                self.on_write(path, n)
        super().write_bytes(path, data)

    def try_write_atomic(self, path: str, data: bytes) -> bool:
        n = len(self.publishes)
        self.publishes.append(path)
        if self.before_publish is not None:
            self.before_publish(path, n)
        result = super().try_write_atomic(path, data)
        if self.after_publish is not None:
            self.after_publish(path, n, result)
        return result


def fail_on_write(k: int, exc_factory=lambda p: InjectedIOError(f"injected failure writing {p}")):
    """An ``on_write`` hook raising on the k-th matching write."""

    def hook(path, n):
        if n == k:
            raise exc_factory(path)

    return hook


# ----------------------------------------------------------------------------- multiprocess race


def race_worker(root: str, rounds: int, worker_id: int, payload_size: int, barrier, queue) -> None:
    """Spawned process: race for ``root/round-<r>`` each round; report (round, worker, won)."""
    io = FileIO()
    payload_unit = f"worker-{worker_id}|".encode()
    results = []
    for r in range(rounds):
        data = (payload_unit * (payload_size // len(payload_unit) + 1))[:payload_size] + f"#{r}".encode()
        barrier.wait()
        won = io.try_write_atomic(posixpath.join(root, f"round-{r}"), data)
        results.append((r, worker_id, bool(won)))
    queue.put(results)


def expected_race_payload(worker_id: int, r: int, payload_size: int) -> bytes:
    unit = f"worker-{worker_id}|".encode()
    return (unit * (payload_size // len(unit) + 1))[:payload_size] + f"#{r}".encode()


# ----------------------------------------------------------------------------- a file system without atomic create


class DictFS(AbstractFileSystem):
    """A minimal file system with no atomic create-if-absent."""

    protocol = "dictfs"
    cachable = False

    def __init__(self):
        super().__init__()
        self.files: dict[str, bytes] = {}

    def pipe_file(self, path, value, **kwargs):
        self.files[path] = bytes(value)

    def cat_file(self, path, start=None, end=None, **kwargs):
        if path not in self.files:
            raise FileNotFoundError(path)
        return self.files[path]

    def rm_file(self, path):
        if path not in self.files:
            raise FileNotFoundError(path)
        del self.files[path]

    def ls(self, path, detail=True, **kwargs):
        names = [p for p in self.files if posixpath.dirname(p) == path.rstrip("/")]
        return [{"name": n, "type": "file", "size": len(self.files[n])} for n in names] if detail else names

    def info(self, path, **kwargs):
        if path in self.files:
            return {"name": path, "type": "file", "size": len(self.files[path])}
        raise FileNotFoundError(path)

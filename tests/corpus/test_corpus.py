"""The corpus (issue 25 item 5): tables written by Paimon Java 1.4.2, pypaimon 2.1.0 and
pypaimon-rust 0.4.0, one per configuration of ``corpus_configs.CONFIGS``.

For each writer, one test runs the whole corpus in three batched phases (one warm JVM, or one
peer-venv process per phase): (1) the writer creates every table, runs its steps (writes,
ALTER TABLE) and reads it; (2) impl reads each table, which must equal the writer's read and the
rows a small reference computes from the batches written, then impl writes one more batch;
(3) the writer reads every table back, which must equal the reference again. For
``changelog-producer`` = input, impl also reads the changelog of the writer's last snapshot. A configuration
the writer cannot produce must fail on the writer's side with the reason recorded in
``cannot_produce`` (and a writer that starts producing it fails the test, so the list stays
honest); a configuration impl refuses must be refused with the typed error naming the option.
Every cell is recorded as a ``corpus_cell`` user property; the root conftest prints the table.
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from corpus_configs import CONFIGS, Config
from corpus_table import JAVA, PYPAIMON, RUST
from paimon_java import JavaServer, harness_classpath, tools_missing
from pypaimon_env import pypaimon_python
from pypaimon_rust_env import Unavailable, pypaimon_rust_python

import impl
from fault_injection.conformance.pypaimon_env import PeerUnavailable, run_in_python

ARROW = {"INT": pa.int32(), "STRING": pa.string(), "BIGINT": pa.int64(), "DOUBLE": pa.float64(),
         "BOOLEAN": pa.bool_(), "DATE": pa.date32(), "DECIMAL(10, 2)": pa.decimal128(10, 2),
         "TIMESTAMP(6)": pa.timestamp("us")}


# ---------------------------------------------------------------------------- rows and the reference

def table_name(config: Config) -> str:
    return "db." + config.name.replace("-", "_")


def cols_after(config: Config, upto: int | None = None) -> list[tuple[str, str]]:
    """The table's columns after its first ``upto`` steps (all by default)."""
    cols = list(config.cols)
    for step in config.steps[:upto]:
        if step[0] != "alter":
            continue
        for change in step[1]:
            if change["op"] == "rename_column":
                cols = [(change["new_name"] if n == change["name"] else n, t) for n, t in cols]
            elif change["op"] == "drop_column":
                cols = [(n, t) for n, t in cols if n != change["name"]]
            elif change["op"] == "add_column":
                cols.append((change["name"], change["type"]))
    return cols


def altered(row: dict, changes: list[dict], names: list[str]) -> dict:
    """``row`` after the schema changes, in order: a renamed column keeps its values, a dropped one
    loses them (a column re-added under the same name is a new column, null in old rows)."""
    row = dict(row)
    for change in changes:
        if change["op"] == "rename_column":
            row[change["new_name"]] = row.pop(change["name"], None)
        elif change["op"] == "drop_column":
            row.pop(change["name"], None)
    return {n: row.get(n) for n in names}


# A partition column "dt" of another type than STRING: two values (by id parity) per type
PART_VALUES = {"DATE": (dt.date(2024, 2, 29), dt.date(1999, 12, 31)),
               "TIMESTAMP(6)": (dt.datetime(2024, 1, 1, 12, 30, 15, 123456), dt.datetime(2024, 1, 2)),
               "DECIMAL(10, 2)": (decimal.Decimal("0.50"), decimal.Decimal("-12.25")),
               "BOOLEAN": (True, False)}


def batch(tag: str, cols) -> list[dict]:
    """Batch "a" inserts ids 0-19, "b" updates 10-19 (half its text values null, which
    partial-update keeps) and inserts 20-29, "c" (impl's write-back) updates 25-29 and inserts
    30-34."""
    ids = {"a": range(0, 20), "b": range(10, 30), "c": range(25, 35), "u": (12, 25, 40)}[tag]
    base = {"a": 0, "b": 100, "c": 1000, "u": 5000}[tag]
    rows = []
    for i in ids:
        row = {}
        k = base + i
        for n, t in cols:
            if n == "id":
                row[n] = i
            elif n == "dt":
                row[n] = f"p{i % 2}" if t == "STRING" else PART_VALUES[t][i % 2]
            elif n == "v":
                row[n] = k
            elif tag == "b" and i % 2 == 0:  # partial-update keeps the old value of a null
                row[n] = None
            else:
                row[n] = _value(t, tag, k)
        rows.append(row)
    return rows


def _value(type_name: str, tag: str, k: int):
    return {"STRING": lambda: f"{tag}{k}", "BIGINT": lambda: k * 7, "DOUBLE": lambda: k / 4 - 3,
            "BOOLEAN": lambda: k % 3 == 0, "DATE": lambda: dt.date(2024, 1, 1) + dt.timedelta(days=k),
            "DECIMAL(10, 2)": lambda: decimal.Decimal(k * 137 - 2000).scaleb(-2),
            "TIMESTAMP(6)": lambda: dt.datetime(2024, 1, 1) + dt.timedelta(microseconds=k * 1_000_003)}[type_name]()


def _merge(engine: str, old: dict, new: dict) -> dict:
    if engine == "partial-update-group":  # SEQUENCE_GROUP: v orders the group (name, d), d sums
        merged = _merge("partial-update", old, new)
        if old.get("v") is None or (new.get("v") is not None and new["v"] >= old["v"]):
            merged["name"] = new.get("name")  # a newer group takes the new value, null too
        else:
            merged["name"], merged["v"] = old.get("name"), old.get("v")
        parts = [x for x in (old.get("d"), new.get("d")) if x is not None]
        merged["d"] = sum(parts) if parts else None
        return merged
    if engine == "first-row":
        return old
    if engine == "partial-update":
        return {**old, **{k: v for k, v in new.items() if v is not None}}
    if engine == "aggregation":  # v sums, every other column keeps its last non-null value
        merged = {**old, **{k: v for k, v in new.items() if v is not None}}
        merged["v"] = (old.get("v") or 0) + (new.get("v") or 0)
        return merged
    return new


def impl_compacts(config: Config) -> bool:
    return any(step[0] == "compact_impl" for step in config.steps)


def reference(config: Config, tags: list[str], *, writer_only: bool = False) -> list[dict]:
    """The rows a reader must see after the steps, then ``tags`` (impl's batches, or "compact").
    ``writer_only``: the writer's steps alone (before impl compacts). On a postpone-bucket table
    a reader sees the rows as of the last compaction."""
    return normalize(config, reference_rows(config, tags, writer_only=writer_only))


def reference_rows(config: Config, tags: list[str], *, writer_only: bool = False) -> list[dict]:
    """:func:`reference` unnormalized; on append tables in write order (row id order)."""
    keys = list(config.primary_keys)
    state: dict = {}
    appended: list = []
    postponed = config.options.get("bucket") == "-2"
    visible: dict = {}
    steps = [s for s in config.steps if not (writer_only and s[0] == "compact_impl")]
    steps += [("compact_impl",) if t == "compact" else ("write", t) for t in tags]
    for index, step in enumerate(steps):
        if step[0] == "compact_impl":
            visible = dict(state)
            continue
        if step[0] == "compact":  # rewrites files, never rows
            continue
        if step[0] == "update":  # column updates by row id: row id k is the k-th appended row
            for rid, values in update_rows(step[1]).items():
                appended[rid] = {**appended[rid], **values}
            continue
        if step[0] == "upsert":  # by id: every row of an id takes the new row, a new id is appended
            for row in batch(step[1], cols_after(config, index)):
                hits = [i for i, r in enumerate(appended) if r["id"] == row["id"]]
                for i in hits:
                    appended[i] = row
                if not hits:
                    appended.append(row)
            continue
        if step[0] == "alter":
            cols = cols_after(config, index + 1)
            names = [n for n, _ in cols]
            state = {k: altered(r, step[1], names) for k, r in state.items()}
            appended = [altered(r, step[1], names) for r in appended]
            continue
        for row in batch(step[1], cols_after(config, index)):
            if not keys:
                appended.append(row)
                continue
            key = tuple(row[k] for k in keys)
            state[key] = _merge(config.merge, state[key], row) if key in state else row
    if "c" in tags:  # impl's column update after its write-back batch
        for rid, values in update_rows(config.write_back_update).items():
            appended[rid] = {**appended[rid], **values}
    if postponed:
        state = visible
    return list(state.values()) if keys else appended


UPDATE_COLS = (("name", "STRING"), ("v", "BIGINT"))


def update_rows(row_ids) -> dict[int, dict]:
    """The column update of an ("update", row ids) step: row id -> new values of name and v."""
    return {r: {"name": f"u{r}", "v": 9000 + r} for r in row_ids}


def update_table(row_ids) -> pa.Table:
    """The update step's input as the writers take it: _ROW_ID and the updated columns."""
    ups = update_rows(row_ids)
    return pa.table({"_ROW_ID": pa.array(list(ups), pa.int64()), "name": [u["name"] for u in ups.values()],
                     "v": pa.array([u["v"] for u in ups.values()], pa.int64())})


def row_tracking(config: Config) -> bool:
    return config.options.get("row-tracking.enabled") == "true"


def as_text(config: Config, rows: list[dict]) -> list[dict]:
    names = [n for n, _ in cols_after(config)]
    # as text: the peers' rows cross as JSON, where dates, decimals and timestamps are strings
    return [{n: None if r.get(n) is None else str(r[n]) for n in names} for r in rows]


def normalize(config: Config, rows: list[dict]) -> list[dict]:
    names = [n for n, _ in cols_after(config)]
    return sorted(as_text(config, rows), key=lambda r: tuple(str(r[n]) for n in names))


def _row_id_check(wh: Path, config: Config, tags: list[str], writers: list[dict] | None = None) -> str:
    """Row tracking: impl's _ROW_ID numbers the rows in write order from 0 (ids survive
    compaction and column updates; impl's appends continue them), and equals the writer's own
    _ROW_ID of every row (when the writer reads them)."""
    rb = impl.Catalog(str(wh)).get_table(table_name(config)).new_read_builder()
    names = [n for n, _ in cols_after(config)]
    rb = rb.with_projection(["_ROW_ID", *names])
    got = sorted(rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist(), key=lambda r: r["_ROW_ID"])
    ids = [r.pop("_ROW_ID") for r in got]
    want = as_text(config, reference_rows(config, tags))
    if ids != list(range(len(want))) or as_text(config, got) != want:
        return f"FAIL: impl's _ROW_ID order: ids {ids[:5]}.., rows {as_text(config, got)[:2]} != {want[:2]}"
    if writers is not None:
        theirs = sorted((r["_ROW_ID"], str(r["id"])) for r in writers)
        if theirs != [(i, r["id"]) for i, r in zip(ids, as_text(config, got), strict=True)]:
            return f"FAIL: the writer's _ROW_ID {theirs[:4]} differ from impl's {list(zip(ids, got, strict=True))[:4]}"
        return "pass (and _ROW_ID = the writer's)"
    return "pass (and _ROW_ID)"


def arrow_table(config: Config, rows: list[dict], cols) -> pa.Table:
    schema = pa.schema([pa.field(n, ARROW[t], nullable=n not in config.primary_keys) for n, t in cols])
    return pa.Table.from_pylist(rows, schema=schema)


def error_text(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}".splitlines()[0][:300]


# ---------------------------------------------------------------------------- writers

class JavaWriter:
    label = JAVA

    def __init__(self, java: JavaServer, tmp: Path):
        self.java, self.tmp, self.n = java, tmp, 0

    def _read(self, wh: Path, name: str, row_tracking: bool = False) -> list[dict]:
        self.n += 1
        out = self.tmp / f"read-{self.n}.parquet"
        self.java.call("read", warehouse=str(wh), table=name, out=str(out), row_tracking=row_tracking)
        return pq.read_table(out).to_pylist()

    def produce(self, wh: Path, configs: list[Config]) -> dict:
        result = {}
        for config in configs:
            name = table_name(config)
            try:
                fields = [[n, f"{t} NOT NULL" if n in config.primary_keys else t] for n, t in config.cols]
                self.java.call("create_table", warehouse=str(wh), table=name, fields=fields,
                               primary_keys=list(config.primary_keys), partition_keys=list(config.partition_keys),
                               table_options=config.options)
                for index, step in enumerate(config.steps):
                    if step[0] == "compact_impl":
                        continue
                    if step[0] == "alter":
                        self.java.call("alter", warehouse=str(wh), table=name, changes=step[1])
                        continue
                    if step[0] == "compact":
                        self.java.call("compact", warehouse=str(wh), table=name)
                        continue
                    if step[0] == "upsert":  # no such op: Paimon Java 1.4.2 has no upsert-by-key API
                        self.java.call("upsert_by_key", warehouse=str(wh), table=name)
                    if step[0] == "update":
                        self.n += 1
                        path = self.tmp / f"update-{self.n}.parquet"
                        pq.write_table(update_table(step[1]), path)
                        self.java.call("update_by_row_id", warehouse=str(wh), table=name, parquet=str(path),
                                       columns=[n for n, _ in UPDATE_COLS])
                        continue
                    self.n += 1
                    path = self.tmp / f"in-{self.n}.parquet"
                    cols = cols_after(config, index)
                    pq.write_table(arrow_table(config, batch(step[1], cols), cols), path)
                    self.java.call("write", warehouse=str(wh), table=name, parquet=str(path), commit_user="java",
                                   identifier=self.n)
                result[name] = {"rows": self._read(wh, name)}
                if row_tracking(config):
                    result[name]["row_ids"] = self._read(wh, name, row_tracking=True)
            except Exception as e:  # noqa: BLE001 - the writer's refusal is the cell's outcome
                result[name] = {"error": error_text(e)}
        return result

    def read_back(self, wh: Path, names: list[str]) -> dict:
        result = {}
        for name in names:
            try:
                result[name] = {"rows": self._read(wh, name)}
            except Exception as e:  # noqa: BLE001
                result[name] = {"error": error_text(e)}
        return result


def _spec(config: Config) -> dict:
    steps = []
    for index, step in enumerate(config.steps):
        if step[0] == "compact_impl":
            continue
        if step[0] == "alter":
            steps.append(["alter", step[1]])
        elif step[0] == "compact":
            steps.append(["compact", None])
        elif step[0] == "upsert":
            cols = cols_after(config, index)
            rows = [{n: v if v is None or isinstance(v, (int, float, str)) else str(v) for n, v in r.items()}
                    for r in batch(step[1], cols)]
            steps.append(["upsert", {"cols": cols, "rows": rows}])
        elif step[0] == "update":
            steps.append(["update", {"rows": update_table(step[1]).to_pylist(), "columns": [n for n, _ in UPDATE_COLS]}])
        else:
            cols = cols_after(config, index)
            rows = [{n: v if v is None or isinstance(v, (int, float, str)) else str(v) for n, v in r.items()}
                    for r in batch(step[1], cols)]
            steps.append(["write", {"cols": cols, "rows": rows}])
    return {"table": table_name(config), "cols": list(config.cols), "pks": list(config.primary_keys),
            "partition_keys": list(config.partition_keys), "options": config.options, "steps": steps}


_PEER_PRELUDE = """
import pyarrow as pa
T = {"INT": pa.int32(), "STRING": pa.string(), "BIGINT": pa.int64(), "DOUBLE": pa.float64(),
     "BOOLEAN": pa.bool_(), "DATE": pa.date32(), "DECIMAL(10, 2)": pa.decimal128(10, 2),
     "TIMESTAMP(6)": pa.timestamp("us")}
TEXT = ("DATE", "DECIMAL(10, 2)", "TIMESTAMP(6)")  # sent as strings, cast here
def arrow_schema(cols, pks):
    return pa.schema([pa.field(n, T[t], nullable=n not in pks) for n, t in cols])
def arrow_rows(rows, cols, pks):
    sent = pa.schema([pa.field(n, pa.string() if t in TEXT else T[t], nullable=n not in pks) for n, t in cols])
    return pa.Table.from_pylist(rows, schema=sent).cast(arrow_schema(cols, pks))
def err(e):
    return (type(e).__name__ + ": " + str(e)).splitlines()[0][:300]
def run_all(specs, produce, read):
    out = {}
    for spec in specs:
        try:
            if produce:
                produce(spec)
            out[spec["table"]] = {"rows": read(spec["table"])}
        except Exception as e:
            out[spec["table"]] = {"error": err(e)}
    return out
"""

PYPAIMON_SCRIPT = _PEER_PRELUDE + """
from pypaimon import CatalogFactory, Schema
from pypaimon.schema.data_types import AtomicType
from pypaimon.schema.schema_change import SchemaChange
cat = CatalogFactory.create({"warehouse": params["warehouse"]})
cat.create_database("db", True)
def change(c):
    if c["op"] == "rename_column":
        return SchemaChange.rename_column(c["name"], c["new_name"])
    if c["op"] == "add_column":
        return SchemaChange.add_column(c["name"], AtomicType(c["type"]))
    if c["op"] == "drop_column":
        return SchemaChange.drop_column(c["name"])
    return SchemaChange.set_option(c["key"], c["value"])
def produce(spec):
    name = spec["table"]
    cat.create_table(name, Schema.from_pyarrow_schema(arrow_schema(spec["cols"], spec["pks"]),
                     partition_keys=spec["partition_keys"] or None, primary_keys=spec["pks"] or None,
                     options=spec["options"]), False)
    for kind, arg in spec["steps"]:
        if kind == "alter":
            cat.alter_table(name, [change(c) for c in arg])
            continue
        table = cat.get_table(name)
        wb = table.new_batch_write_builder()
        if kind == "compact":  # pypaimon 2.1.0 has no compaction: the attempt's error is the cell's
            wb.new_compact()
        if kind == "upsert":
            c = wb.new_commit()
            c.commit(wb.new_update().upsert_by_arrow_with_key(arrow_rows(arg["rows"], arg["cols"], spec["pks"]), ["id"]))
            c.close()
            continue
        if kind == "update":
            update = pa.Table.from_pylist(arg["rows"], schema=pa.schema(
                [("_ROW_ID", pa.int64()), ("name", pa.string()), ("v", pa.int64())]))
            c = wb.new_commit()
            c.commit(wb.new_update().with_update_type(arg["columns"]).update_by_arrow_with_row_id(update))
            c.close()
            continue
        w = wb.new_write(); c = wb.new_commit()
        w.write_arrow(arrow_rows(arg["rows"], arg["cols"], spec["pks"]))
        c.commit(w.prepare_commit()); w.close(); c.close()
def read(name):
    rb = cat.get_table(name).new_read_builder()
    arrow = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    return arrow.to_pylist() if arrow is not None else []
result = run_all(params["specs"], produce if params["produce"] else None, read)
"""

PYPAIMON_RUST_SCRIPT = _PEER_PRELUDE + """
from pypaimon_rust.datafusion import PaimonCatalog, SQLContext
wh = params["warehouse"]
ctx = SQLContext()
ctx.register_catalog("paimon", {"warehouse": wh})
if params["produce"]:
    ctx.sql("CREATE SCHEMA IF NOT EXISTS paimon.db")
def sql_alter(name, c):
    if c["op"] == "rename_column":
        return f"ALTER TABLE paimon.{name} RENAME COLUMN {c['name']} TO {c['new_name']}"
    if c["op"] == "add_column":
        return f"ALTER TABLE paimon.{name} ADD COLUMN {c['name']} {c['type']}"
    if c["op"] == "drop_column":
        return f"ALTER TABLE paimon.{name} DROP COLUMN {c['name']}"
    return f"ALTER TABLE paimon.{name} SET TBLPROPERTIES ('{c['key']}' = '{c['value']}')"
def produce(spec):
    name = spec["table"]
    cols = ", ".join(f"{n} {t}" + (" NOT NULL" if n in spec["pks"] else "") for n, t in spec["cols"])
    if spec["pks"]:
        cols += f", PRIMARY KEY ({', '.join(spec['pks'])})"
    ddl = f"CREATE TABLE paimon.{name} ({cols})"
    if spec["partition_keys"]:
        ddl += f" PARTITIONED BY ({', '.join(spec['partition_keys'])})"
    if spec["options"]:
        ddl += " WITH (" + ", ".join(f"'{k}'='{v}'" for k, v in spec["options"].items()) + ")"
    ctx.sql(ddl)
    for kind, arg in spec["steps"]:
        if kind == "alter":
            for c in arg:
                ctx.sql(sql_alter(name, c))
            continue
        if kind == "compact":  # pypaimon-rust 0.4.0 has no compaction: the attempt's error is the cell's
            ctx.sql(f"CALL paimon.sys.compact(table => '{name}')")
            continue
        table = PaimonCatalog({"warehouse": wh}).get_table(name)
        builder = table.new_batch_write_builder()
        if kind == "upsert":
            builder.new_commit().commit(builder.new_update().upsert_by_arrow_with_key(
                arrow_rows(arg["rows"], arg["cols"], spec["pks"]), ["id"]))
            continue
        if kind == "update":
            update = pa.Table.from_pylist(arg["rows"], schema=pa.schema(
                [("_ROW_ID", pa.int64()), ("name", pa.string()), ("v", pa.int64())]))
            builder.new_commit().commit(
                builder.new_update().with_update_type(arg["columns"]).update_by_arrow_with_row_id(update))
            continue
        write = builder.new_write()
        for b in arrow_rows(arg["rows"], arg["cols"], spec["pks"]).to_batches():
            write.write_arrow(b)
        builder.new_commit().commit(write.prepare_commit())
        write.close()
def read(name):
    rb = PaimonCatalog({"warehouse": wh}).get_table(name).new_read_builder()
    batches = rb.new_read().read(rb.new_scan().plan().splits())
    return pa.Table.from_batches(batches).to_pylist() if batches else []
result = run_all(params["specs"], produce if params["produce"] else None, read)
"""


class PeerWriter:
    """A Python peer in its own venv: one process for producing the corpus, one for reading back."""

    def __init__(self, label: str, python: Path, script: str):
        self.label, self.python, self.script = label, python, script

    def produce(self, wh: Path, configs: list[Config]) -> dict:
        return run_in_python(self.python, self.label, self.script, warehouse=str(wh), produce=True,
                             specs=[_spec(c) for c in configs])

    def read_back(self, wh: Path, names: list[str]) -> dict:
        by_name = {table_name(c): c for c in CONFIGS}
        return run_in_python(self.python, self.label, self.script, warehouse=str(wh), produce=False,
                             specs=[_spec(by_name[n]) for n in names])


# ---------------------------------------------------------------------------- the corpus run

def impl_read(wh: Path, name: str) -> list[dict]:
    return impl.Catalog(str(wh)).get_table(name).to_arrow().to_pylist()


def impl_write_back(wh: Path, config: Config) -> None:
    cols = cols_after(config)
    table = impl.Catalog(str(wh)).get_table(table_name(config))
    table.write_arrow(arrow_table(config, batch("c", cols), cols))
    if impl_compacts(config):
        table.compact()
    if config.write_back_compact:
        impl.Catalog(str(wh)).get_table(table_name(config)).compact(full=True)
    if config.write_back_update:
        wb = impl.Catalog(str(wh)).get_table(table_name(config)).new_batch_write_builder()
        update = wb.new_update().with_update_type([n for n, _ in UPDATE_COLS])
        wb.new_commit().commit(update.update_by_arrow_with_row_id(update_table(config.write_back_update)))


def back_tags(config: Config) -> list[str]:
    """What impl did in phase 2, as ``reference`` tags: its batch, then its compaction if any."""
    return ["c", "compact"] if impl_compacts(config) else ["c"]


def _changelog_check(wh: Path, config: Config) -> str:
    """changelog-producer = input: the changelog of the writer's last snapshot, read by impl, is
    the last batch the writer wrote, every row an insert (+I)."""
    table = impl.Catalog(str(wh)).get_table(table_name(config))
    last = table.latest_snapshot().id
    got = table.copy({"incremental-between": f"{last - 1},{last}"}).to_arrow()
    kinds = set(got.column("_VALUE_KIND").to_pylist())
    index = max(i for i, step in enumerate(config.steps) if step[0] == "write")
    want = normalize(config, batch(config.steps[index][1], cols_after(config, index)))
    rows = normalize(config, got.drop_columns(["_VALUE_KIND"]).to_pylist())
    if kinds == {0} and rows == want:
        return "pass (and its changelog files)"
    return f"FAIL: changelog of snapshot {last}: kinds {kinds}, {rows[:3]} != {want[:3]}"


def _index_probe_check(wh: Path, config: Config, want: list[dict]) -> str:
    """A table with data-file indexes: impl's filtered reads of ``column = value`` (present) and
    ``column = absent`` return the reference's matching rows with the index
    (file-index.read.enabled, the default) and without; the cell names the files each planned."""
    column, *values = config.index_probe
    table = impl.Catalog(str(wh)).get_table(table_name(config))
    counts = []
    for value in values:
        expected = [r for r in want if r[column] == str(value)]
        files = {}
        for enabled in ("true", "false"):
            rb = table.copy({"file-index.read.enabled": enabled}).new_read_builder()
            rb = rb.with_filter(rb.new_predicate_builder().equal(column, value))
            splits = rb.new_scan().plan().splits()
            files[enabled] = sum(len(s.files) for s in splits)
            got = [r for r in normalize(config, rb.new_read().to_arrow(splits).to_pylist()) if r[column] == str(value)]
            if got != expected:
                return f"FAIL: {column} = {value!r} with file-index.read.enabled={enabled}: {got[:3]} != {expected[:3]}"
        counts.append(f"{value!r}: {files['true']} of {files['false']} files")
    return f"pass (and {column} = " + ", ".join(counts) + " with the index)"


def _refusal(config: Config, e: BaseException) -> str:
    """"refused: ..." when ``e`` is the declared typed error naming the option, else "FAIL: ..."."""
    refused = config.impl_refuses
    ok = refused is not None and type(e).__name__ == refused[0] and refused[1] in str(e)
    return f"{'refused' if ok else 'FAIL'}: {error_text(e)}"


def _write_refusal(config: Config, e: BaseException) -> str:
    """"refused: ..." when impl's write-back failed with ``write_refused``'s typed error naming
    its option (impl reads the table but refuses to write it), else "FAIL: impl write: ..."."""
    refused = config.write_refused
    ok = refused is not None and type(e).__name__ == refused[0] and refused[1] in str(e)
    return f"refused: {error_text(e)}" if ok else f"FAIL: impl write: {error_text(e)}"


# Options that decide where a data file lies and how it is named (honoured by impl since issue 45)
LAYOUT_OPTIONS = ("partition.legacy-name", "data-file.path-directory", "data-file.prefix", "changelog-file.prefix",
                  "file.suffix.include.compression")
_UUID_COUNTER = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-\d+")


def checks_layout(config: Config) -> bool:
    return config.part_type != "STRING" or any(k in config.options for k in LAYOUT_OPTIONS)


def data_files(wh: Path, config: Config) -> set[str]:
    """The table's files outside its metadata directories, relative to the table's directory."""
    database, table = table_name(config).split(".")
    root = wh / f"{database}.db" / table
    meta = ("snapshot", "manifest", "schema", "index", "statistics", "tag", "branch", "changelog")
    return {str(p.relative_to(root)) for p in root.rglob("*")
            if p.is_file() and not str(p.relative_to(root)).startswith(meta)}


def _layout(paths: set[str], names: bool) -> set[tuple[str, str]]:
    """(partition directories, file name with its uuid and counter starred, or "" without
    ``names``) of each file."""
    return {(str(Path(p).parent.parent), _UUID_COUNTER.sub("*", Path(p).name) if names else "") for p in paths}


def layout_check(writer_files: set[str], impl_files: set[str], names: bool) -> str | None:
    """impl's write-back puts its files in the partition directories the writer used (the partition
    directory names, data-file.path-directory) and, with ``names``, names them as the writer did
    (prefixes, compression suffix); None when it does, else the first difference."""
    extra = _layout(impl_files, names) - _layout(writer_files, names)
    if not impl_files or extra:
        theirs = sorted(_layout(writer_files, names))[:3]
        return f"FAIL: impl's files {sorted(extra)[:3]} are not laid out as the writer's {theirs}"
    return None


def run_corpus(writer, wh: Path) -> list[dict]:
    """Every configuration's cell: ``read`` / ``write_back`` = "pass", "refused: ...",
    "writer cannot produce: ..." or "FAIL: ..." (the test fails on any FAIL)."""
    produced = writer.produce(wh, CONFIGS)
    cells, written = [], []
    for index, config in enumerate(CONFIGS):
        name = table_name(config)
        cell = {"writer": writer.label, "config": config.name, "index": index}
        cells.append(cell)
        outcome = produced[name]
        expected_cannot = config.cannot_produce.get(writer.label)
        if "error" in outcome:
            ok = expected_cannot is not None and expected_cannot in outcome["error"]
            cell["read"] = f"{'' if ok else 'FAIL: '}writer cannot produce: {outcome['error']}"
            cell["write_back"] = "n/a (not produced)"
            continue
        if expected_cannot is not None:
            cell["read"] = f"FAIL: writer now produces it (declared: {expected_cannot})"
            cell["write_back"] = "n/a"
            continue
        want = reference(config, [])
        try:
            if impl_compacts(config):
                impl.Catalog(str(wh)).get_table(name).compact()
            got = normalize(config, impl_read(wh, name))
        except Exception as e:  # noqa: BLE001 - recorded, then judged below
            cell["read"] = _refusal(config, e)
            try:  # nothing may be written to a table impl cannot read
                impl_write_back(wh, config)
                cell["write_back"] = "FAIL: impl wrote to a table it refuses to read"
            except Exception as w:  # noqa: BLE001
                cell["write_back"] = _refusal(config, w)
            continue
        if config.impl_refuses is not None:
            cell["read"] = f"FAIL: impl reads it (declared refused: {config.impl_refuses})"
            cell["write_back"] = "n/a"
            continue
        theirs = normalize(config, outcome["rows"])
        differs = config.writer_read_differs.get(writer.label)
        if impl_compacts(config):  # the writer read before impl compacted
            want_writer = reference(config, [], writer_only=True)
            cell["read"] = "pass (after impl's compaction)" if got == want and theirs == want_writer else \
                f"FAIL: impl read {got[:3]} (reference {want[:3]}), writer read {theirs[:3]} " \
                f"(reference before impl's compaction {want_writer[:3]})"
        elif differs is not None:
            # impl must read what the writer reads; the declaration must still be true
            ok = got == theirs != want
            cell["read"] = f"pass (= the writer's read, not the reference: {differs})" if ok else \
                f"FAIL: declared '{differs}', impl read {got[:3]}, writer read {theirs[:3]}, reference {want[:3]}"
        elif got != want or theirs != want:
            cell["read"] = f"FAIL: impl read {'==' if got == theirs else '!='} writer read, " \
                f"{'impl' if got != want else 'writer'} != reference: {got[:3]} vs {want[:3]}"
        else:
            cell["read"] = "pass"
        if config.options.get("changelog-producer") == "input" and cell["read"] == "pass":
            cell["read"] = _changelog_check(wh, config)
        if config.index_probe is not None and cell["read"] == "pass":
            cell["read"] = _index_probe_check(wh, config, want)
        if row_tracking(config) and cell["read"] == "pass":
            cell["read"] = _row_id_check(wh, config, [], outcome.get("row_ids"))
        layout = checks_layout(config)
        before = data_files(wh, config) if layout else set()
        try:
            impl_write_back(wh, config)
        except Exception as e:  # noqa: BLE001
            cell["write_back"] = _write_refusal(config, e)
            continue
        # file names only against Java's: the Python writers ignore file.suffix.include.compression
        # (both) and changelog-file.prefix (pypaimon 2.1.0)
        wrong = layout_check(before, data_files(wh, config) - before, writer.label == JAVA) if layout else None
        if wrong is not None:
            cell["write_back"] = wrong
            continue
        if config.write_refused is not None:
            cell["write_back"] = f"FAIL: impl wrote it (declared refused: {config.write_refused})"
            continue
        written.append(name)
    back = writer.read_back(wh, written) if written else {}
    for cell, config in zip(cells, CONFIGS, strict=True):
        name = table_name(config)
        if name not in back:
            continue
        want = reference(config, back_tags(config))
        cannot = config.cannot_read_back.get(writer.label)
        if "error" in back[name]:
            ok = cannot is not None and cannot in back[name]["error"]
            cell["write_back"] = f"{'' if ok else 'FAIL: '}writer cannot read impl's table: {back[name]['error']}"
        elif cannot is not None:
            cell["write_back"] = f"FAIL: writer now reads it back (declared: {cannot})"
        else:
            rows = normalize(config, back[name]["rows"])
            mine = normalize(config, impl_read(wh, name))
            differs = config.write_back_differs.get(writer.label)
            if differs is not None:  # both read the same wrong rows; the declaration must still be true
                cell["write_back"] = f"pass (= impl's read, not the reference: {differs})" if rows == mine != want \
                    else f"FAIL: declared '{differs}', writer read back {rows[:3]} (impl {mine[:3]}), " \
                    f"reference {want[:3]}"
            else:
                cell["write_back"] = "pass" if rows == want == mine else \
                    f"FAIL: writer read back {rows[:3]} (impl {mine[:3]}) != reference {want[:3]}"
            if checks_layout(config) and cell["write_back"] == "pass":
                cell["write_back"] = "pass (and impl's files laid out as the writer's)" if writer.label == JAVA \
                    else "pass (and impl's partition directories as the writer's)"
            if row_tracking(config) and cell["write_back"] == "pass":
                cell["write_back"] = _row_id_check(wh, config, ["c"])
    return cells


def _judge(record_property, cells: list[dict]) -> None:
    for cell in cells:
        record_property("corpus_cell", cell)
    failed = [c for c in cells if c["read"].startswith("FAIL") or c["write_back"].startswith("FAIL")]
    assert not failed, "\n".join(f"{c['config']}: read {c['read']} | write-back {c['write_back']}" for c in failed)


@pytest.mark.paimon_java
def test_corpus_paimon_java(tmp_path, record_property):
    reason = tools_missing()
    if reason:
        pytest.skip(f"Paimon Java harness needs a JDK and Maven: {reason}")
    with JavaServer(harness_classpath()) as java:
        cells = run_corpus(JavaWriter(java, tmp_path), tmp_path / "wh")
    _judge(record_property, cells)


def test_corpus_pypaimon(tmp_path, record_property):
    try:
        python = pypaimon_python()
    except PeerUnavailable as e:
        pytest.skip(f"pypaimon 2.1.0 cannot be installed here: {e}")
    writer = PeerWriter(PYPAIMON, python, PYPAIMON_SCRIPT)
    _judge(record_property, run_corpus(writer, tmp_path / "wh"))


def test_corpus_pypaimon_rust(tmp_path, record_property):
    try:
        python = pypaimon_rust_python()
    except (Unavailable, PeerUnavailable) as e:
        pytest.skip(f"pypaimon-rust 0.4.0 cannot be installed here: {e}")
    writer = PeerWriter(RUST, python, PYPAIMON_RUST_SCRIPT)
    _judge(record_property, run_corpus(writer, tmp_path / "wh"))

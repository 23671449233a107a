"""The environment seam: with the same seeded Environment, the same table operations write the
same files, byte for byte where they are metadata (snapshot, schema and tag JSON with their
time fields, manifests), and a different seed changes them; the default is the real clock."""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import time

import fastavro
import pyarrow as pa

import impl
from impl.environment import PRODUCTION, Environment, SimulatedClock
from impl.schema import SchemaChange

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def _operations(root: str, env: Environment) -> None:
    """A primary-key table and an append table through create, writes, compaction, a schema
    change, a tag with retention, a branch and expiration."""
    cat = impl.Catalog(root, env=env)
    cat.create_database("db")
    pk = cat.create_table("db.pk", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    pk.write_arrow(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=SCHEMA))
    pk.write_arrow(pa.table({"id": [2, 4], "v": ["B", "d"]}, schema=SCHEMA))
    pk.compact(full=True)
    pk.create_tag("t1", time_retained="1 d")
    pk.create_branch("dev", tag="t1")
    cat.alter_table("db.pk", [SchemaChange.set_option("snapshot.num-retained.min", "1")])
    pk = cat.get_table("db.pk")
    pk.write_arrow(pa.table({"id": [5], "v": ["e"]}, schema=SCHEMA))
    pk.expire_snapshots(retain_min=1, retain_max=2)

    log = cat.create_table("db.log", SCHEMA)
    w = log.new_stream_write_builder()
    write, commit = w.new_write(), w.new_commit()
    for i in range(3):
        write.write_arrow(pa.table({"id": [i], "v": [str(i)]}, schema=SCHEMA))
        commit.commit(write.prepare_commit(), commit_identifier=i)
    write.close()
    commit.close()
    log.compact(full=True)


def _files(root: str) -> dict[str, object]:
    """Every file under ``root`` by relative path: the bytes of JSON metadata, the records of
    Avro manifests (an Avro container's sync marker is random by design), None for data files."""
    out: dict[str, object] = {}
    for d, _, names in os.walk(root):
        for n in names:
            p = os.path.join(d, n)
            data = open(p, "rb").read()
            if n.endswith(".parquet"):
                out[os.path.relpath(p, root)] = None
            elif data.startswith(b"Obj\x01"):
                out[os.path.relpath(p, root)] = list(fastavro.reader(io.BytesIO(data)))
            else:
                out[os.path.relpath(p, root)] = data
    return out


def test_same_seed_same_files_and_metadata(tmp_path):
    a = _files_of_run(tmp_path / "a", 7)
    b = _files_of_run(tmp_path / "b", 7)
    assert sorted(a) == sorted(b)  # the same file names: data, manifests, index, snapshots, tags, branch
    assert a == b  # and the same metadata bytes, time fields included
    snapshots = [k for k in a if "/snapshot/snapshot-" in k and k.startswith("db.db/pk/snapshot")]
    assert snapshots and all(str(json.loads(a[k])["timeMillis"]).startswith("1700000") for k in snapshots)


def test_another_seed_other_names(tmp_path):
    a = _files_of_run(tmp_path / "a", 7)
    c = _files_of_run(tmp_path / "c", 8)
    assert sorted(a) != sorted(c)
    assert {k for k in a if k.endswith(".parquet")}.isdisjoint(k for k in c if k.endswith(".parquet"))


def _files_of_run(root, seed) -> dict[str, object]:
    _operations(str(root), Environment.seeded(seed))
    return _files(str(root))


def test_default_environment_is_the_real_one(tmp_path):
    before = int(time.time() * 1000)
    cat = impl.Catalog(str(tmp_path / "w"))
    assert cat.env is PRODUCTION
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA)
    t.write_arrow(pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA))
    after = int(time.time() * 1000)
    assert before <= t.latest_snapshot().time_millis <= after
    assert before <= t.schema.time_millis <= after


def test_simulated_clock_advances_per_reading_and_on_sleep():
    clock = SimulatedClock(1_000, tick_millis=2)
    assert [clock.millis(), clock.millis()] == [1_002, 1_004]
    clock.sleep(1.5)
    assert clock.millis() == 2_506
    env = Environment.seeded(1)
    assert Environment.seeded(1).new_id() == env.new_id()  # a fresh seeded environment replays
    assert env.new_random().random() == Environment.seeded(1).new_random().random()


def test_tag_create_time_comes_from_the_environment(tmp_path):
    env = Environment.seeded(3, start_millis=int(dt.datetime(2030, 1, 2, 3, 4, 5).timestamp() * 1000))
    cat = impl.Catalog(str(tmp_path / "w"), env=env)
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA)
    t.write_arrow(pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA))
    tag = t.create_tag("x", time_retained="1 h")
    assert dt.datetime(2030, 1, 2, 3, 4, 5) < tag.create_time < dt.datetime(2030, 1, 2, 3, 4, 6)

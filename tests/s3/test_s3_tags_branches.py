"""Tags and branches on an S3 server (moto on 127.0.0.1): tag creation is one conditional PUT
(a taken name, or a racing creator, is refused by the server), branches live under
``branch/branch-<name>/`` with shared data, and expiration, rollback, fast-forward and tag
deletion work without rename."""

from __future__ import annotations

import threading

import pyarrow as pa
import pytest

import impl
from impl.errors import TagAlreadyExistError

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])


def rows(ids, v="x"):
    return pa.table({"dt": ["d"] * len(ids), "id": list(ids), "v": [v] * len(ids)}, schema=SCHEMA)


def ids_of(table) -> list[int]:
    return sorted(table.to_arrow().column("id").to_pylist())


def test_tags_and_branches_on_s3(s3_server, s3_bucket):
    cat = impl.Catalog(f"s3://{s3_bucket}/warehouse", options=s3_server.options())
    cat.create_database("db")
    t = cat.create_table("db.t", schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                         options={"bucket": "1"})
    for i in range(4):
        t.write_arrow(rows(range(i * 3, i * 3 + 3)))
    t.create_tag("v2", 2, time_retained="1 h")
    with pytest.raises(TagAlreadyExistError):
        t.create_tag("v2", 3)
    assert t.tag_manager().get("v2").snapshot.id == 2

    # racing creators of one name: the server's conditional PUT lets exactly one win
    outcomes: list[str] = []

    def create(sid: int) -> None:
        try:
            t.create_tag("race", sid)
            outcomes.append(f"won {sid}")
        except TagAlreadyExistError:
            outcomes.append("lost")

    threads = [threading.Thread(target=create, args=(sid,)) for sid in (1, 3, 4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    winners = [o for o in outcomes if o.startswith("won")]
    assert len(winners) == 1 and outcomes.count("lost") == 2
    assert f"won {t.tag_manager().get('race').snapshot.id}" == winners[0]
    t.delete_tag("race")

    t.create_branch("dev", tag="v2")
    dev = cat.get_table("db.t$branch_dev")
    dev.write_arrow(rows([100, 101]))
    assert ids_of(dev) == [0, 1, 2, 3, 4, 5, 100, 101] and ids_of(t) == list(range(12))

    t.expire_snapshots(retain_min=1, time_retained_ms=0, max_deletes=100)
    assert ids_of(t.copy({"scan.tag-name": "v2"})) == list(range(6))
    assert ids_of(dev) == [0, 1, 2, 3, 4, 5, 100, 101]

    t.fast_forward("dev")
    assert ids_of(t) == [0, 1, 2, 3, 4, 5, 100, 101]
    t.write_arrow(rows([200]))
    t.rollback_to("v2")
    assert ids_of(t) == list(range(6))
    t.delete_branch("dev")
    assert t.branches() == []
    t.remove_orphan_files(older_than_millis=2**62)
    assert ids_of(t) == list(range(6)) and ids_of(t.copy({"scan.tag-name": "v2"})) == list(range(6))

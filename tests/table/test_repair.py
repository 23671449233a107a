"""A table whose latest snapshot (or its manifest list, or a tag) is damaged: ``doctor`` names
the damaged file and what it breaks, ``repair`` moves the table back to its newest readable
snapshot (setting the damaged files aside, deleting no manifest or data file), ``rollback_to``
works past a damaged snapshot and changes nothing when it refuses, and the error of a damaged
latest snapshot points at ``paimon-py repair``. Through the API and through ``paimon-py``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pytest

import impl
from impl.cli import EXIT_OK, EXIT_USER_ERROR, main
from impl.errors import CorruptMetadataError, DamagedSnapshotError, TableNotRepairableError, UnsupportedVersionError
from impl.maintenance.repair import QUARANTINE_PREFIX, Role

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
FAR_FUTURE_MILLIS = 2**62


def make_table(warehouse: Path, commits: int = 3) -> impl.FileStoreTable:
    """db.t: a primary-key table, commit i writes row (i, str(i)); tag t1 on snapshot 1."""
    cat = impl.Catalog(str(warehouse))
    cat.create_database("db")
    t = cat.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    for i in range(commits):
        wb = t.new_batch_write_builder()
        w, c = wb.new_write(), wb.new_commit()
        w.write_arrow(pa.table({"id": [i], "v": [str(i)]}, schema=SCHEMA))
        c.commit(w.prepare_commit())
        w.close()
        c.close()
    t.create_tag("t1", 1)
    return t


def reopen(warehouse: Path) -> impl.FileStoreTable:
    return impl.Catalog(str(warehouse)).get_table("db.t")


def ids(t: impl.FileStoreTable) -> list[int]:
    return sorted(t.to_arrow()["id"].to_pylist())


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def tear(path: str) -> bytes:
    data = Path(path).read_bytes()
    Path(path).write_bytes(data[: len(data) // 2])
    return data[: len(data) // 2]


def test_torn_latest_snapshot_is_named_and_repaired(tmp_path):
    t = make_table(tmp_path)
    torn = tear(t.paths.snapshot_path(3))
    # every path that meets the damaged file says the way out (typed: DamagedSnapshotError)
    for work in (lambda x: x.to_arrow(), lambda x: x.write_arrow(pa.table({"id": [9], "v": ["9"]}, schema=SCHEMA)),
                 lambda x: x.compact(full=True), lambda x: x.expire_snapshots(retain_min=1, retain_max=1),
                 lambda x: x.remove_orphan_files(older_than_millis=FAR_FUTURE_MILLIS)):
        with pytest.raises(DamagedSnapshotError, match="paimon-py repair") as e:
            work(reopen(tmp_path))
        assert e.value.path == t.paths.snapshot_path(3) and e.value.reason.startswith("not valid JSON")

    health = reopen(tmp_path).doctor()
    assert not health.healthy
    assert (health.latest_id, health.readable_id) == (3, 2)
    [d] = health.damages
    assert (d.path, d.role, d.breaks) == (t.paths.snapshot_path(3), Role.SNAPSHOT, "snapshot 3 (the latest)")

    before = tree(tmp_path)
    plan = reopen(tmp_path).repair(dry_run=True)
    assert tree(tmp_path) == before  # a dry run changes nothing
    assert plan.target_id == 2 and [p for p, _ in plan.quarantine] == [t.paths.snapshot_path(3)]

    done = reopen(tmp_path).repair()
    assert done == plan
    t = reopen(tmp_path)
    assert t.latest_snapshot().id == 2 and ids(t) == [0, 1]
    assert t.doctor().healthy
    # the damaged bytes are kept under a name no reader lists; nothing else was deleted
    aside = done.quarantine[0][1]
    assert os.path.basename(aside).startswith(QUARANTINE_PREFIX + "3-") and Path(aside).read_bytes() == torn
    after = tree(tmp_path)
    assert set(before) - set(after) == {"db.db/t/snapshot/snapshot-3"}
    # repair twice: nothing more to do
    assert reopen(tmp_path).repair().quarantine == ()
    # the table takes writes again (snapshot 3 anew), and orphan removal keeps what 1, 2 and t1 read
    wb = t.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(pa.table({"id": [7], "v": ["7"]}, schema=SCHEMA))
    c.commit(w.prepare_commit())
    w.close()
    c.close()
    t.remove_orphan_files(older_than_millis=FAR_FUTURE_MILLIS)
    t = reopen(tmp_path)
    assert ids(t) == [0, 1, 7]
    assert sorted(t.copy({"scan.snapshot-id": "2"}).to_arrow()["id"].to_pylist()) == [0, 1]
    assert t.copy({"scan.tag-name": "t1"}).to_arrow()["id"].to_pylist() == [0]
    assert t.doctor().healthy and Path(aside).exists()


def test_missing_manifest_list_of_latest_is_named_and_repaired(tmp_path):
    t = make_table(tmp_path)
    lst = t.paths.manifest_path(t.snapshot(3).delta_manifest_list)
    os.remove(lst)
    health = reopen(tmp_path).doctor()
    assert [(d.path, d.role, d.reason, d.breaks) for d in health.damages] == [
        (lst, Role.MANIFEST_LIST, "is missing", "snapshot 3 (the latest)")]
    plan = reopen(tmp_path).repair()
    assert plan.target_id == 2
    assert ids(reopen(tmp_path)) == [0, 1]


def test_doctor_names_a_damaged_tag_and_garbage_hint(tmp_path):
    t = make_table(tmp_path)
    tear(t.tag_manager().tag_path("t1"))
    Path(t.paths.hint_path("LATEST")).write_text("garbage")
    health = reopen(tmp_path).doctor()
    assert {(d.role, d.breaks) for d in health.damages} == {
        (Role.TAG, "tag t1"), (Role.HINT, "nothing (readers list the snapshot directory instead)")}
    assert health.readable_id == 3
    reopen(tmp_path).repair()  # nothing to set aside: the hints are rewritten
    assert Path(t.paths.hint_path("LATEST")).read_text() == "3"


def test_rollback_past_a_damaged_latest_snapshot(tmp_path):
    t = make_table(tmp_path)
    tear(t.paths.snapshot_path(3))
    deleted = reopen(tmp_path).rollback_to(2)
    t = reopen(tmp_path)
    assert t.latest_snapshot().id == 2 and ids(t) == [0, 1]
    assert deleted == []  # snapshot 3's files are unknown: left for orphan removal
    assert any(n.startswith(QUARANTINE_PREFIX + "3-") for n in os.listdir(t.paths.snapshot_dir))
    assert Path(t.paths.hint_path("LATEST")).read_text() == "2"


def test_refused_rollback_changes_nothing(tmp_path):
    t = make_table(tmp_path)
    os.remove(t.paths.manifest_path(t.snapshot(2).delta_manifest_list))  # the target cannot be read
    before = tree(tmp_path)
    with pytest.raises(CorruptMetadataError, match="rollback's target, snapshot 2"):
        reopen(tmp_path).rollback_to(2)
    assert tree(tmp_path) == before  # LATEST included


def test_repair_refuses_when_no_snapshot_is_readable(tmp_path):
    t = make_table(tmp_path, commits=1)
    tear(t.paths.snapshot_path(1))
    before = tree(tmp_path)
    with pytest.raises(TableNotRepairableError, match="roll back to a tag"):
        reopen(tmp_path).repair()
    assert tree(tmp_path) == before


def test_repair_never_sets_aside_a_snapshot_of_a_newer_format(tmp_path):
    t = make_table(tmp_path)
    path = t.paths.snapshot_path(3)
    obj = json.loads(Path(path).read_text())
    Path(path).write_text(json.dumps({**obj, "version": 99}))
    with pytest.raises(UnsupportedVersionError):
        reopen(tmp_path).to_arrow()
    before = tree(tmp_path)
    with pytest.raises(TableNotRepairableError, match="format this library does not read"):
        reopen(tmp_path).repair()
    assert tree(tmp_path) == before


def test_cli_doctor_and_repair(tmp_path, capsys, monkeypatch):
    t = make_table(tmp_path)
    tear(t.paths.snapshot_path(3))
    monkeypatch.setenv("PAIMON_WAREHOUSE", str(tmp_path))
    capsys.readouterr()
    assert main(["read", "db.t"]) == EXIT_USER_ERROR
    assert "paimon-py repair" in capsys.readouterr().err
    assert main(["--json", "doctor", "db.t"]) == EXIT_OK
    doc = json.loads(capsys.readouterr().out)
    assert (doc["healthy"], doc["latest_snapshot_id"], doc["readable_snapshot_id"]) == (False, 3, 2)
    assert [(r["path"], r["kind"]) for r in doc["damaged"]] == [(t.paths.snapshot_path(3), "snapshot")]
    assert main(["--json", "repair", "db.t"]) == EXIT_OK
    doc = json.loads(capsys.readouterr().out)
    assert doc["latest_snapshot_id"] == 2
    assert [r["snapshot"] for r in doc["set_aside"]] == [t.paths.snapshot_path(3)]
    assert main(["--json", "doctor", "db.t"]) == EXIT_OK
    assert json.loads(capsys.readouterr().out)["healthy"] is True
    assert main(["--json", "read", "db.t"]) == EXIT_OK

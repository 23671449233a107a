"""The paimon-java conformance target: every adapter op round-trips through the harness, and
what Paimon Java wrote is checked with impl (snapshot user, identifier, kind, rows).

One target (one JVM) serves the module. The full suite runs with
``python -m fault_injection.conformance --target paimon-java`` (minutes: it starts a JVM per
racing process); this module keeps to seconds.
"""

from __future__ import annotations

import pytest

import impl
from fault_injection.conformance.adapter import Capability, Outcome, TableRef, TableSpec, Unsupported
from fault_injection.conformance.checks.duplicate import check_duplicates
from fault_injection.conformance.checks.machine import fresh_local_table
from fault_injection.conformance.checks.result import Classification, Status
from fault_injection.conformance.targets import TARGET_NAMES, open_target

pytestmark = pytest.mark.paimon_java

APPEND = TableSpec(primary_key=False, partitioned=True, bucket=-1)
PK = TableSpec(primary_key=True, partitioned=True, bucket=2)


@pytest.fixture(scope="module")
def target(java):  # the java fixture skips the module when no JDK/Maven is installed
    t = open_target("paimon-java")
    yield t
    t.close()


class Shared:
    """The module's target for a check that opens and closes its own: close() leaves the JVM up
    (a JVM start costs seconds on a loaded machine)."""

    def __init__(self, target):
        self._target = target

    def __getattr__(self, name):
        return getattr(self._target, name)

    def close(self) -> None:
        pass


def snapshots(ref: TableRef):
    return impl.Catalog(ref.warehouse).get_table(ref.identifier).snapshots()


def rows(rs) -> list[tuple]:
    return sorted((r["dt"], r["id"], r["v"]) for r in rs)


def test_registered_with_the_capabilities_paimon_has(target):
    assert "paimon-java" in TARGET_NAMES and target.name == "paimon-java"
    assert {Capability.COMPACT, Capability.EXPIRE, Capability.FILTER_COMMITTED, Capability.OVERWRITE,
            Capability.TIME_TRAVEL} <= target.capabilities
    assert Capability.OBJECT_STORE not in target.capabilities
    with pytest.raises(Unsupported, match="object-store"):
        target.read_rows(TableRef("s3://b/w", "db.t", (("fs.s3.endpoint", "http://127.0.0.1:1"),)))


@pytest.mark.parametrize("spec", [APPEND, PK], ids=["append", "pk"])
def test_ops_round_trip(target, tmp_path, spec):
    ref = TableRef(str(tmp_path / "wh"), "db.t")
    target.create_table(ref, spec)
    first = [{"dt": "a", "id": 1, "v": 10}, {"dt": "b", "id": 2, "v": 20}]
    prepared = target.prepare(ref, first)
    assert prepared.file_names and snapshots(ref) == []  # prepared, not committed
    res = target.commit(ref, prepared, "user-1", 7)
    assert res.outcome is Outcome.OK and res.snapshot_ids == (1,)
    s1 = snapshots(ref)[-1]
    assert (s1.commit_user, s1.commit_identifier, s1.commit_kind.value) == ("user-1", 7, "APPEND")
    # recovery: the same (user, identifier) again through filter-committed publishes nothing
    again = target.commit(ref, prepared, "user-1", 7, filter_committed=True)
    assert again.outcome is Outcome.OK and again.snapshot_ids == () and len(snapshots(ref)) == 1

    second = [{"dt": "a", "id": 1, "v": 11}, {"dt": "a", "id": 3, "v": 30}]
    assert target.commit(ref, target.prepare(ref, second), "user-2", 8).outcome is Outcome.OK
    merged = ([("a", 1, 11)] if spec.primary_key else [("a", 1, 10), ("a", 1, 11)]) + [("a", 3, 30), ("b", 2, 20)]
    assert rows(target.read_rows(ref)) == sorted(merged)
    assert rows(impl.Catalog(ref.warehouse).get_table(ref.identifier).to_arrow().to_pylist()) == sorted(merged)
    assert rows(target.read_rows(ref, snapshot_id=1)) == rows(first)  # time travel

    res = target.overwrite(ref, [{"dt": "b", "id": 9, "v": 90}], {"dt": "b"}, "user-3", 9)
    assert res.outcome is Outcome.OK and snapshots(ref)[-1].commit_kind.value == "OVERWRITE"
    after = [r for r in merged if r[0] != "b"] + [("b", 9, 90)]
    assert rows(target.read_rows(ref)) == sorted(after)

    res = target.compact(ref, "compactor", 10)
    assert res.outcome is Outcome.OK
    if spec.primary_key:  # bucket-unaware append: too few small files for Paimon's coordinator
        assert [snapshots(ref)[-1].commit_kind.value] == ["COMPACT"] and len(res.snapshot_ids) == 1
    assert rows(target.read_rows(ref)) == sorted(after)

    ids = [s.id for s in snapshots(ref)]
    expired = target.expire(ref, 1, 2)
    assert expired == ids[:-2] and [s.id for s in snapshots(ref)] == ids[-2:]
    assert rows(impl.Catalog(ref.warehouse).get_table(ref.identifier).to_arrow().to_pylist()) == sorted(after)


def test_duplicate_commit_checks(target):
    """The suite's duplicate-commit checks against Paimon Java: filter-committed passes; a plain
    re-commit of the same files is accepted by Paimon (the model refuses it), reported as a
    divergence classified 'model stricter than Paimon' with its citation."""
    results = {r.name: r for r in check_duplicates(lambda: Shared(target), fresh_local_table, target.capabilities)}
    assert results["duplicate commit (filter_committed)"].status is Status.PASS
    plain = results["duplicate commit (plain)"]
    assert plain.status is Status.DIVERGENCE
    assert plain.classification is Classification.MODEL_STRICTER

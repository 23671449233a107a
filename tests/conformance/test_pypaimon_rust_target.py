"""The pypaimon-rust 0.4.0 conformance target: every adapter op round-trips through its JSON-lines
server, what it wrote is checked with impl, and the suite's checks run against it in CI sizes,
each known divergence asserted as found (so these tests fail if the suite stops seeing it).

One target (one server process) serves the module; checks that open a target per attempt get a
view of it whose ``close`` keeps the server up. The full suite runs with
``python -m fault_injection.conformance --target pypaimon-rust`` (docs/conformance-pypaimon-rust.md).
The module skips, naming the reason, where the pypaimon-rust wheel cannot be installed.
"""

from __future__ import annotations

import os

import pytest

import impl
from fault_injection.conformance.adapter import Capability, Outcome, TableRef, TableSpec, Unsupported
from fault_injection.conformance.checks.duplicate import check_duplicates
from fault_injection.conformance.checks.held import check_held_publication
from fault_injection.conformance.checks.machine import check_machine, fresh_local_table
from fault_injection.conformance.checks.processes import check_race, check_sigkill, replaced_by_rename
from fault_injection.conformance.checks.result import Classification, Status
from fault_injection.conformance.pypaimon_env import PeerUnavailable
from fault_injection.conformance.targets import TARGET_NAMES, open_target
from fault_injection.conformance.targets.pypaimon_rust_target import PypaimonRustTarget, pypaimon_rust_python

APPEND = TableSpec(primary_key=False, partitioned=True, bucket=-1)
PK = TableSpec(primary_key=True, partitioned=True, bucket=2)
BATCH_COMMIT_IDENTIFIER = 2**63 - 1  # pypaimon-rust publishes every batch commit (overwrites) under it


@pytest.fixture(scope="module")
def target():
    try:
        pypaimon_rust_python()
    except PeerUnavailable as e:
        pytest.skip(f"pypaimon-rust 0.4.0 cannot be installed here: {e}")
    t = PypaimonRustTarget()
    yield t
    t.close()


class Shared:
    """The module's target for a check that opens and closes its own: close() leaves it running."""

    def __init__(self, target):
        self._target = target

    def __getattr__(self, name):
        return getattr(self._target, name)

    def close(self) -> None:
        pass


def snapshots(ref: TableRef):
    return impl.Catalog(ref.warehouse, options=dict(ref.storage_options) or None) \
        .get_table(ref.identifier).snapshots()


def triples(rs) -> list[tuple]:
    return sorted((r["dt"], r["id"], r["v"]) for r in rs)


def test_registered_with_what_0_4_0_has(target, tmp_path):
    assert "pypaimon-rust" in TARGET_NAMES and target.name == "pypaimon-rust"
    assert {Capability.APPEND_TABLE, Capability.PRIMARY_KEY_TABLE, Capability.COMMIT_IDENTIFIER,
            Capability.FILTER_COMMITTED, Capability.OVERWRITE, Capability.TIME_TRAVEL,
            Capability.OBJECT_STORE} <= target.capabilities
    assert {Capability.COMPACT, Capability.EXPIRE}.isdisjoint(target.capabilities)
    ref = TableRef(str(tmp_path / "wh"), "db.t")
    target.create_table(ref, PK)
    for capability, call in ((Capability.COMPACT, lambda: target.compact(ref, "u", 1)),
                             (Capability.EXPIRE, lambda: target.expire(ref, 1, 1))):
        with pytest.raises(Unsupported) as info:
            call()
        assert info.value.capability is capability
    assert snapshots(ref) == []


@pytest.mark.parametrize("spec", [APPEND, PK], ids=["append", "pk"])
def test_ops_round_trip(target, tmp_path, spec):
    ref = TableRef(str(tmp_path / "wh"), "db.t")
    target.create_table(ref, spec)
    first = [{"dt": "a", "id": 1, "v": 10}, {"dt": "b", "id": 2, "v": 20}]
    prepared = target.prepare(ref, first)
    # the data files the serialized commit messages name are the ones on disk, none committed yet
    on_disk = {f for _, _, files in os.walk(tmp_path / "wh" / "db.db" / "t") for f in files if f.startswith("data-")}
    assert prepared.file_names and set(prepared.file_names) == on_disk and snapshots(ref) == []

    assert target.commit(ref, prepared, "user-1", 7).outcome is Outcome.OK
    s1 = snapshots(ref)[-1]
    assert (s1.commit_user, s1.commit_identifier, s1.commit_kind.value) == ("user-1", 7, "APPEND")
    # recovery: filter_and_commit of an identifier this user published publishes nothing ...
    assert target.commit(ref, prepared, "user-1", 7, filter_committed=True).outcome is Outcome.OK
    assert len(snapshots(ref)) == 1
    # ... and of a new one commits it
    second = [{"dt": "a", "id": 1, "v": 11}, {"dt": "a", "id": 3, "v": 30}]
    assert target.commit(ref, target.prepare(ref, second), "user-2", 8, filter_committed=True).outcome \
        is Outcome.OK
    assert [(s.commit_user, s.commit_identifier) for s in snapshots(ref)] == [("user-1", 7), ("user-2", 8)]

    merged = ([("a", 1, 11)] if spec.primary_key else [("a", 1, 10), ("a", 1, 11)]) + [("a", 3, 30), ("b", 2, 20)]
    assert triples(target.read_rows(ref)) == sorted(merged)
    assert triples(impl.Catalog(ref.warehouse).get_table(ref.identifier).to_arrow().to_pylist()) == sorted(merged)
    assert triples(target.read_rows(ref, snapshot_id=1)) == triples(first)  # time travel

    # overwrite one partition, then the whole table; published under the batch identifier
    assert target.overwrite(ref, [{"dt": "b", "id": 9, "v": 90}], {"dt": "b"}, "user-3", 9).outcome is Outcome.OK
    s3 = snapshots(ref)[-1]
    assert (s3.commit_user, s3.commit_identifier, s3.commit_kind.value) == \
        ("user-3", BATCH_COMMIT_IDENTIFIER, "OVERWRITE")
    assert triples(target.read_rows(ref)) == sorted([r for r in merged if r[0] != "b"] + [("b", 9, 90)])
    assert target.overwrite(ref, [{"dt": "c", "id": 5, "v": 5}], None, "user-3", 10).outcome is Outcome.OK
    assert triples(target.read_rows(ref)) == [("c", 5, 5)]


def test_failures_map_to_outcomes(target, tmp_path):
    from fault_injection.conformance.adapter import Prepared
    from fault_injection.conformance.targets.pypaimon_target import PypaimonServerError
    ref = TableRef(str(tmp_path / "wh"), "db.t")
    target.create_table(ref, APPEND)
    result = target.commit(ref, Prepared("no-such-handle"), "u", 1)
    assert (result.outcome, result.error_class) == (Outcome.ERROR, "KeyError")
    with pytest.raises(PypaimonServerError, match="pypaimon-rust create_table failed"):
        target.create_table(ref, APPEND)
    assert target.read_rows(ref) == []  # the server lives on after errors


def test_duplicate_commit_checks(target):
    """filter_and_commit passes; a plain re-commit of the same files is published (as Paimon Java's
    commit path does; the model refuses it): a divergence classified 'model stricter', found."""
    results = {r.name: r for r in check_duplicates(lambda: Shared(target), fresh_local_table, target.capabilities)}
    assert results["duplicate commit (filter_committed)"].status is Status.PASS
    plain = results["duplicate commit (plain)"]
    assert plain.status is Status.DIVERGENCE and plain.classification is Classification.MODEL_STRICTER
    assert "second plain commit: ok" in plain.details and "is added twice" in plain.details
    # pypaimon-rust then reads the rows twice (Paimon Java's scans refuse the table)
    assert "extra rows [('a', 1, 10), ('a', 2, 20)]" in plain.details


@pytest.mark.parametrize("spec,label", [(PK, "primary-key table"), (APPEND, "append table")], ids=["pk", "append"])
def test_state_machine_passes_without_plain_recommits(target, spec, label):
    results = check_machine("pypaimon-rust", lambda: Shared(target), fresh_local_table, target.capabilities, spec,
                            label, examples=2, seed=3, steps_per_example=10, skip_ops=frozenset({"recommit"}))
    assert [(r.name, r.status) for r in results] == [
        (f"commit state machine ({label})", Status.PASS),
        (f"commit state machine ({label}): compact", Status.UNSUPPORTED),
        (f"commit state machine ({label}): expire", Status.UNSUPPORTED)], results


def test_state_machine_finds_the_plain_recommit_and_shrinks_it(target):
    results = check_machine("pypaimon-rust", lambda: Shared(target), fresh_local_table, target.capabilities, APPEND,
                            "append table", examples=1, seed=5, steps_per_example=8)
    # seed 5 draws read, commit(2), recommit_filter(0), write, commit(1), recommit(2), ...
    (r,) = [r for r in results if r.status is Status.DIVERGENCE]
    steps = [line.split(". ", 1)[1] for line in r.reproduction.splitlines() if line[:1].isdigit()]
    assert steps == ["commit(2,)", "recommit(2,)"], r.reproduction
    assert r.classification is Classification.MODEL_STRICTER and "1 new snapshots, expected 0" in r.details


def assert_race_lost_only_to_rename(race, losable) -> None:
    """Every commit acknowledged and either none lost, or (rarely) lost only to pypaimon-rust's
    replacing rename (docs/conformance-pypaimon-rust.md): by a racer ``losable`` names, with
    exactly its rows missing; anything else fails."""
    assert race.details.startswith("6 of 6 commits acknowledged"), race.details
    lost, unexplained = replaced_by_rename(race.details, losable)
    assert not unexplained, race.details
    assert (race.status is Status.PASS) == (not lost), race.details
    if lost:
        assert race.classification is Classification.TARGET_DEFECT, race


def test_processes_race_and_survive_sigkill_on_local_disk(target):
    opener = lambda: Shared(target)  # noqa: E731 - the checks' parent side only reads
    race = check_race("pypaimon-rust", opener, fresh_local_table(), 2, 3, "local")
    assert_race_lost_only_to_rename(race, losable=lambda user: True)
    # impl (even racers) publishes with os.link and never replaces: only impl's commits can be
    # replaced by pypaimon-rust's rename; a lost pypaimon-rust commit would be impl's fault
    mixed = check_race("impl", opener, fresh_local_table(), 2, 3, "local", racer_targets=("impl", "pypaimon-rust"))
    assert_race_lost_only_to_rename(mixed, losable=lambda user: int(user.split("-")[1]) % 2 == 0)
    kill = check_sigkill("pypaimon-rust", opener, fresh_local_table(), 1, 0)
    assert kill.status is Status.PASS, kill.details


def test_held_publication_loses_a_commit_on_s3(target, s3_server):
    """pypaimon-rust publishes a snapshot on S3 by an existence check, then a plain PUT: held on the
    wire, writer A's PUT overwrites writer B's snapshot 2, both acknowledged (a target defect,
    found every time), also when B is impl (impl alone passes: test_conformance_impl)."""
    def table() -> TableRef:
        return TableRef(f"s3://{s3_server.new_bucket()}/wh", "db.t", tuple(sorted(s3_server.options().items())))
    found = check_held_publication(PypaimonRustTarget, table())
    assert found.status is Status.DIVERGENCE and found.classification is Classification.TARGET_DEFECT, found
    assert "writer-a: ok, writer-b: ok" in found.details
    assert "acknowledged commit (writer-b, 1) appears in 0 snapshots" in found.details
    # mixed writers: pypaimon-rust's held PUT replaces the snapshot impl published meanwhile
    mixed = check_held_publication(PypaimonRustTarget, table(), open_writer_b=lambda: open_target("impl"),
                                   label="pypaimon-rust held, impl")
    assert mixed.status is Status.DIVERGENCE and "(writer-b, 1) appears in 0 snapshots" in mixed.details, mixed

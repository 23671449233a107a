"""The connector's local read state is private to the user and is data, never pickles.

Before, the pushed filters of every loaded relation were pickled into a world-writable
directory under the system temp dir and unpickled by the driver: anyone who created that
directory first, or wrote into it, ran code in every other user's Spark driver. A name another
user took first is now stepped around (it used to be refused, failing every read).
"""

from __future__ import annotations

import os
import pickle
import stat
import tempfile

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

from impl.errors import InvalidPredicateError  # noqa: E402
from impl.predicate.predicate import CompoundPredicate, LeafPredicate  # noqa: E402
from impl.spark import claims  # noqa: E402
from impl.spark.errors import SparkConnectorError  # noqa: E402


@pytest.fixture
def tmpdir_root(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)  # else the state lives there
    return tmp_path


def _private_path(root) -> str:
    return os.path.join(str(root), f"paimon_py_spark-{os.getuid()}")


def test_created_owner_only(tmpdir_root):
    path = claims.private_root()
    assert path == _private_path(tmpdir_root)
    assert stat.S_IMODE(os.lstat(path).st_mode) == 0o700


def _assert_stepped_around(root) -> None:
    """The state goes to the next name, private, and nothing in the squatted one is read."""
    squatted = _private_path(root)
    assert claims.private_root() == f"{squatted}.1"
    assert stat.S_IMODE(os.lstat(f"{squatted}.1").st_mode) == 0o700
    claims.record_pushed("abc123", LeafPredicate("equal", "id", (1,)))
    assert claims.pushed_predicates("abc123") == [LeafPredicate("equal", "id", (1,))]


@pytest.mark.parametrize("mode", [0o777, 0o755, 0o720])
def test_a_directory_others_can_reach_is_stepped_around(tmpdir_root, mode):
    """Before, it was refused, which failed every read of the user whose name another user took."""
    path = _private_path(tmpdir_root)
    planted = os.path.join(path, "relations", "abc123")
    os.makedirs(planted)
    with open(os.path.join(planted, "x.json"), "w") as fh:
        fh.write('{"leaf": "is_null", "field": "id", "literals": []}')  # a record to skew the plan
    os.chmod(path, mode)
    _assert_stepped_around(tmpdir_root)


def test_a_link_is_stepped_around(tmpdir_root):
    target = tmpdir_root / "elsewhere"
    target.mkdir(mode=0o700)
    os.symlink(target, _private_path(tmpdir_root))
    _assert_stepped_around(tmpdir_root)
    assert os.listdir(target) == []


@pytest.mark.skipif(os.getuid() != 0, reason="giving a directory to another user needs root")
def test_a_directory_of_another_user_is_stepped_around(tmpdir_root):
    path = _private_path(tmpdir_root)
    os.mkdir(path, 0o700)
    os.chown(path, 65534, 65534)
    _assert_stepped_around(tmpdir_root)


def test_pushed_filters_round_trip_as_json_and_planted_pickles_are_never_loaded(tmpdir_root):
    import datetime as dt
    import decimal

    p1 = LeafPredicate("equal", "dt", ("a",))
    p2 = CompoundPredicate("or", (LeafPredicate("greater_than", "ts", (dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc),)),
                                  LeafPredicate("is_in", "amount", (decimal.Decimal("1.5"), None))))
    claims.record_pushed("rel1", p1)
    claims.record_pushed("rel1", p2)
    claims.record_pushed("rel1", p1)  # the same push twice is one record
    d = os.path.join(claims.private_root(), "relations", "rel1")
    names = sorted(os.listdir(d))
    assert len(names) == 2 and all(n.endswith(".json") for n in names)
    for n in names:
        with open(os.path.join(d, n), encoding="utf-8") as fh:
            fh.read().encode("ascii")  # plain JSON text
    assert sorted(map(repr, claims.pushed_predicates("rel1"))) == sorted(map(repr, [p1, p2]))

    class Boom:
        def __reduce__(self):
            return (os.mkdir, (str(tmpdir_root / "pwned"),))

    with open(os.path.join(d, "planted"), "wb") as fh:
        fh.write(pickle.dumps(Boom()))
    with open(os.path.join(d, "planted.pickle"), "wb") as fh:
        fh.write(pickle.dumps(Boom()))
    assert len(claims.pushed_predicates("rel1")) == 2
    with open(os.path.join(d, "planted.json"), "wb") as fh:
        fh.write(pickle.dumps(Boom()))
    with pytest.raises(InvalidPredicateError):
        claims.pushed_predicates("rel1")
    assert not (tmpdir_root / "pwned").exists()


def test_a_push_that_cannot_prune_means_the_whole_table(tmpdir_root):
    claims.record_pushed("rel2", LeafPredicate("equal", "id", (1,)))
    claims.record_pushed("rel2", None)
    assert claims.pushed_predicates("rel2") is None
    assert claims.pushed_predicates("never") == []


def test_relation_ids_are_never_paths(tmpdir_root):
    with pytest.raises(SparkConnectorError, match="invalid relation id"):
        claims.record_pushed("../../etc", None)

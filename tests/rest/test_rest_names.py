"""The REST server and the name rule (impl.fs.names): table identifiers ``t$branch_<name>`` with
hostile branch names, sent percent-encoded as Paimon's client sends them (and, for some, with
their ``%`` encoded once more), are answered 400 when the decoded name breaks the rule and never
read or write outside the table: a neighbour table and a second warehouse next to the served
one are compared before and after. The exploit of issue 44 itself: tests/core/test_name_exploits.py.
"""

from __future__ import annotations

import json
import sys

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import impl
from impl.catalog.rest.protocol import ResourcePaths
from impl.fs.names import path_problem
from impl.rest import RESTCatalogServer

sys.path.insert(0, __file__.rsplit("/tests/", 1)[0] + "/tests/core")
from test_name_exploits import _request, make_table, tree  # noqa: E402
from test_name_rule import hostile_names  # noqa: E402


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("rest-names")
    cat = impl.Catalog(str(root / "wh"))
    t = make_table(cat, "db.t", [1, 2])
    t.create_branch("b")
    make_table(cat, "db.victim", [7])
    make_table(impl.Catalog(str(root / "outside")), "odb.v", [100])
    snapshot = json.loads(t.file_io.read_bytes(t.core.paths.snapshot_path(1)))
    with RESTCatalogServer(str(root / "wh"), no_auth=True) as server:
        yield root, server, snapshot


@given(name=hostile_names, twice=st.booleans())
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_hostile_branch_names_over_rest_stay_in_the_table(served, name, twice):
    root, server, snapshot = served
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        assume(False)  # a lone surrogate has no URL form (a server decoding one gets U+FFFD)
    paths = ResourcePaths(server.service.prefix)
    table = f"t$branch_{name}"
    before = tree(str(root), skip=("wh/db.db/t",))
    get_path, commit_path = paths.snapshot("db", table), paths.commit("db", table)
    sent: str | None = name  # the branch name the server sees after its one decode
    if twice:  # '%' encoded once more: after its one decode the server sees 't%24branch_...', a
        # table name with a literal '%' and no branch, which does not exist
        get_path = get_path.replace("%", "%25")
        commit_path = commit_path.replace("%", "%25")
        sent = None
    for method, path, body in (("GET", get_path, None), ("POST", commit_path, {"snapshot": {**snapshot, "id": 2}})):
        status, reply = _request(server, method, path, body)
        assert status in (400, 404), (name, method, status, reply)  # no branch of t has such a name
        if sent is not None and "$" not in sent and sent.strip() and path_problem(sent) is not None:
            # refused by the name rule, or (names near the limit) by the server's 255-byte check of
            # the whole path segment, which runs first
            assert status == 400 and ("branch name" in reply["message"] or "over 255" in reply["message"]), (name, reply)
    assert tree(str(root), skip=("wh/db.db/t",)) == before

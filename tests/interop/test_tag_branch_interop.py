"""Tags and branches against pypaimon 2.1.0, both ways.

1. impl tags a primary-key table (one tag with a retention), expires the tagged snapshots,
   makes a branch from a tag and commits on it; pypaimon reads each tag (``scan.tag-name``),
   the tag's retention, the branch (``db.t$branch_dev``) and its branch list; impl
   fast-forwards main to the branch and pypaimon reads main as the branch.
2. pypaimon tags a table (with and without retention), makes a branch from a tag and commits
   on it; impl reads the tags, their retention, the branch, expires main (the tags stay
   readable), rolls main back to a tag; pypaimon reads the result.

Expected rows come from the written change stream, never from one side alone.
"""

from __future__ import annotations

import datetime as dt

from test_table_interop_matrix import (
    APPEND_COLS,
    append_stream,
    arrow_schema,
    flat,
    impl_rows,
    pp_run,
    sort_rows,
    to_arrow,
)

import impl

PK_COLS = [["dt", "string"], ["id", "int64"], ["name", "string"], ["score", "float64"]]


def upserts(seed: int, commits: int) -> list[list[dict]]:
    """Commits that insert and overwrite keys of a small key space (no deletes)."""
    return append_stream(seed, commits=commits, rows_per_commit=15)


def pk_state(commits) -> list[dict]:
    state: dict = {}
    for rows in commits:
        for r in rows:
            state[(r["dt"], r["id"])] = r
    return sort_rows(list(state.values()))


def keyed(commits, space: int = 12) -> list[list[dict]]:
    """The same rows with ids folded into ``space`` keys, so later commits update earlier rows."""
    return [[{**r, "id": r["id"] % space} for r in _dedupe(rows, space)] for rows in commits]


def _dedupe(rows, space):
    seen: dict = {}
    for r in rows:
        seen[(r["dt"], r["id"] % space)] = r
    return list(seen.values())


PP_READ_TAGS = """
out = {}
table = catalog().get_table(params["table"])
for name in params["tags"]:
    t = table.copy({"scan.tag-name": name})
    rb = t.new_read_builder()
    arrow = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    out[name] = arrow.to_pylist() if arrow is not None else []
tm = table.tag_manager()
out["_names"] = sorted(tm.list_tags())
kept = tm.get(params["retained_tag"])
out["_retained_seconds"] = kept.tag_time_retained.total_seconds() if kept.tag_time_retained else None
out["_create_time_set"] = kept.tag_create_time is not None
out["_branch"] = read(params["table"] + "$branch_dev")
out["_branches"] = sorted(table.branch_manager().branches())
result = out
"""


def test_pypaimon_reads_impl_tags_and_branch(tmp_path, pypaimon):
    wh = str(tmp_path / "wh")
    cat = impl.Catalog(wh)
    cat.create_database("db")
    t = cat.create_table("db.pk", schema=arrow_schema(PK_COLS), partition_keys=["dt"], primary_keys=["dt", "id"],
                         options={"bucket": "2"})
    commits = keyed(upserts(11, 5))
    for rows in commits:
        t.write_arrow(to_arrow(PK_COLS, rows))
    t.create_tag("first", 1)
    t.create_tag("third", 3, time_retained="1 d")
    t.compact(full=True)
    t.expire_snapshots(retain_min=1, time_retained_ms=0, max_deletes=100)
    assert len(t.snapshots()) == 1 and not t.snapshot_manager().snapshot_exists(3)
    t.create_branch("dev", tag="third")
    dev = cat.get_table("db.pk$branch_dev")
    branch_commit = keyed(upserts(12, 1))[0]
    dev.write_arrow(to_arrow(PK_COLS, branch_commit))

    want = {"first": pk_state(commits[:1]), "third": pk_state(commits[:3])}
    want_branch = pk_state(commits[:3] + [branch_commit])
    assert impl_rows(t, **{"scan.tag-name": "third"}) == want["third"]
    assert impl_rows(dev) == want_branch

    got = pp_run(PP_READ_TAGS, warehouse=wh, table="db.pk", tags=["first", "third"], retained_tag="third")
    assert sort_rows(got["first"]) == want["first"]
    assert sort_rows(got["third"]) == want["third"]
    assert got["_names"] == ["first", "third"]
    assert got["_retained_seconds"] == 86400.0 and got["_create_time_set"]
    assert sort_rows(got["_branch"]) == want_branch
    assert got["_branches"] == ["dev"]

    # impl fast-forwards main to the branch; pypaimon reads main as the branch
    t.fast_forward("dev")
    assert impl_rows(t) == want_branch
    got = pp_run('result = {"main": read("db.pk")}', warehouse=wh)
    assert sort_rows(got["main"]) == want_branch


PP_MAKE_TAGS = """
create("db.app", params["cols"], partition_keys=["dt"])
write("db.app", params["cols"], params["commits"])
table = catalog().get_table("db.app")
table.create_tag("v1", snapshot_id=1)
table.create_tag("v2", snapshot_id=2, time_retained="2h")
table.branch_manager().create_branch("dev", "v2")
write("db.app$branch_dev", params["cols"], params["branch_commits"])
result = {"branch": read("db.app$branch_dev"), "tags": sorted(table.list_tags())}
"""

PP_READ_MAIN = """
table = catalog().get_table("db.app")
result = {"main": read("db.app"), "tags": sorted(table.list_tags()),
          "snapshot_dir": sorted(n for n in __import__("os").listdir(params["snapshot_dir"]) if n.startswith("snapshot-"))}
"""


def test_impl_reads_pypaimon_tags_and_branch_then_rolls_back(tmp_path, pypaimon):
    wh = str(tmp_path / "wh")
    commits = append_stream(21, commits=4, rows_per_commit=10)
    branch_commits = append_stream(22, commits=2, rows_per_commit=5, first_id=1000)
    got = pp_run(PP_MAKE_TAGS, warehouse=wh, cols=APPEND_COLS, commits=commits, branch_commits=branch_commits)
    want_branch = sort_rows(flat(commits[:2] + branch_commits))
    assert sort_rows(got["branch"]) == want_branch and got["tags"] == ["v1", "v2"]

    cat = impl.Catalog(wh)
    t = cat.get_table("db.app")
    assert [i.tag_name for i in t.list_tags()] == ["v1", "v2"]
    info = {i.tag_name: i for i in t.list_tags()}
    assert info["v1"].time_retained is None and info["v1"].snapshot_id == 1
    assert info["v2"].time_retained == dt.timedelta(hours=2) and info["v2"].create_time is not None
    assert info["v2"].branches == ("dev",)
    assert impl_rows(t, **{"scan.tag-name": "v1"}) == sort_rows(flat(commits[:1]))
    assert impl_rows(t, **{"scan.tag-name": "v2"}) == sort_rows(flat(commits[:2]))
    dev = cat.get_table("db.app$branch_dev")
    assert impl_rows(dev) == want_branch
    assert [b.branch_name for b in t.list_branches()] == ["dev"]

    # impl expires main: the tags and the branch keep reading what they read
    t.expire_snapshots(retain_min=1, time_retained_ms=0, max_deletes=100)
    assert impl_rows(t, **{"scan.tag-name": "v1"}) == sort_rows(flat(commits[:1]))
    assert impl_rows(dev) == want_branch
    t.remove_orphan_files(older_than_millis=int(dt.datetime.now().timestamp() * 1000) + 3_600_000)
    assert impl_rows(dev) == want_branch
    # impl rolls main back to v2 (its snapshot expired: written back from the tag); pypaimon reads it
    t.rollback_to("v2")
    assert impl_rows(t) == sort_rows(flat(commits[:2]))
    got = pp_run(PP_READ_MAIN, warehouse=wh, snapshot_dir=t.paths.snapshot_dir)
    assert sort_rows(got["main"]) == sort_rows(flat(commits[:2]))
    assert got["tags"] == ["v1", "v2"] and got["snapshot_dir"] == ["snapshot-2"]

"""Row tracking and data evolution (``row-tracking.enabled``, ``data-evolution.enabled``) through the table API."""

from __future__ import annotations

import pyarrow as pa
import pytest
from table_helpers import data_files, write

from impl.table.errors import UnsupportedTableFeatureError

SCHEMA = pa.schema([("id", pa.int32()), ("v", pa.string())])
ROWS = pa.table({"id": pa.array([1, 2, 3], pa.int32()), "v": ["a", "b", "c"]})


@pytest.mark.parametrize("option", ["row-tracking.enabled", "data-evolution.enabled"])
def test_unimplemented_writes_are_refused_by_name(local_catalog, option):
    """Files without a first row id make Paimon Java fail on the whole table: no write, no commit of
    another handle's files, no compaction, and nothing left on storage."""
    plain = local_catalog.create_table("db.plain", schema=SCHEMA)
    options = {"row-tracking.enabled": "true", option: "true"}
    t = local_catalog.create_table("db.t", schema=SCHEMA, options=options)
    with pytest.raises(UnsupportedTableFeatureError, match=f"'{option}'"):
        t.new_batch_write_builder().new_write()
    # a dynamic option does not switch the stored table kind off
    with pytest.raises(UnsupportedTableFeatureError, match=f"'{option}'"):
        write(t.copy({option: "false"}), ROWS)
    w = plain.new_batch_write_builder().new_write()
    w.write_arrow(ROWS)
    messages = w.prepare_commit()
    with pytest.raises(UnsupportedTableFeatureError, match=f"'{option}'"):
        t.new_batch_write_builder().new_commit().commit(messages)
    with pytest.raises(UnsupportedTableFeatureError, match=f"'{option}'"):
        t.compact()
    assert t.latest_snapshot() is None
    assert data_files(t) == []

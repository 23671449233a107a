"""The read path's memory pool: jemalloc in place of mimalloc, the user's own pool otherwise."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from impl.format.formats import open_reader
from impl.format.memory_pool import read_pool


def _jemalloc_built() -> bool:
    try:
        pa.jemalloc_memory_pool()
    except NotImplementedError:
        return False
    return True


def test_a_pool_the_user_chose_is_kept():
    before = pa.default_memory_pool()
    pa.set_memory_pool(pa.system_memory_pool())
    try:
        assert read_pool().backend_name == "system"
    finally:
        pa.set_memory_pool(before)


@pytest.mark.skipif(not _jemalloc_built(), reason="pyarrow built without jemalloc")
def test_mimalloc_is_replaced_by_jemalloc_for_decoded_columns(tmp_path):
    before = pa.default_memory_pool()
    try:
        pa.set_memory_pool(pa.mimalloc_memory_pool())
    except NotImplementedError:
        pytest.skip("pyarrow built without mimalloc")
    try:
        assert read_pool().backend_name == "jemalloc"
        path = tmp_path / "f.parquet"
        pq.write_table(pa.table({"s": ["a" * 100] * 10_000}), path)
        jemalloc = pa.jemalloc_memory_pool()
        held = jemalloc.bytes_allocated()
        with open(path, "rb") as f:
            t = open_reader(f, str(path)).read(["s"])
        assert t.column("s").to_pylist() == ["a" * 100] * 10_000
        assert jemalloc.bytes_allocated() >= held + 1_000_000  # the decoded strings live there
    finally:
        pa.set_memory_pool(before)

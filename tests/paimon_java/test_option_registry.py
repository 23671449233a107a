"""impl's option registry against the options Paimon Java declares (issue 45 item 1).

Fails when Java declares a key the registry does not classify, when the registry (or the
generated ``impl/options/paimon_1_4_2.py``) has a key Java lacks, or when a default or fallback
key changed: regenerate with ``python tests/paimon_java/gen_option_registry.py`` and classify
the new keys in ``impl/options/registry.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import impl
from impl.errors import UnsupportedOptionError
from impl.options.paimon_1_4_2 import DECLARED
from impl.options.registry import CLASSIFIED, IMPL_ONLY, classify

sys.path.insert(0, str(Path(__file__).parent))
from gen_option_registry import java_options  # noqa: E402 - the generator's own call to the harness

pytestmark = pytest.mark.paimon_java


def test_registry_classifies_exactly_the_keys_java_declares(java):
    declared = {o["key"]: o for o in java_options(java)}
    assert len(declared) > 300  # CoreOptions alone declares 283
    unclassified = sorted(k for k in declared if classify(k) is None)
    assert unclassified == [], f"classify these Paimon keys in impl/options/registry.py: {unclassified}"
    stale = sorted(k for k in CLASSIFIED if k not in declared)
    assert stale == [], f"keys Java no longer declares (move impl-specific ones to IMPL_ONLY): {stale}"
    assert not set(IMPL_ONLY) & set(declared)
    # the generated module is Java's current answer (defaults and fallback keys included)
    generated = {key: (default, list(fallbacks), cls) for key, default, fallbacks, cls, _ in DECLARED}
    assert generated == {k: (o["default"], o["fallback_keys"], o["class"]) for k, o in declared.items()}


def test_java_table_with_a_write_refused_key_reads_and_refuses_writes(java, tmp_path):
    """A table Java writes with ignore-update-before = true (a write drops -U rows; impl does
    not): impl reads Java's rows and refuses to write, naming the option, with nothing written."""
    wh = str(tmp_path / "wh")
    java.call("create_table", warehouse=wh, table="db.t", fields=[["id", "BIGINT"], ["v", "STRING"]],
              primary_keys=["id"], table_options={"bucket": "4", "ignore-update-before": "true"})
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    pq.write_table(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=schema), tmp_path / "a.parquet")
    java.call("write", warehouse=wh, table="db.t", parquet=str(tmp_path / "a.parquet"), commit_user="u", identifier=1)
    t = impl.Catalog(wh).get_table("db.t")
    assert sorted(t.to_arrow()["id"].to_pylist()) == [1, 2, 3]
    with pytest.raises(UnsupportedOptionError, match="'ignore-update-before' = 'true'"):
        t.new_batch_write_builder().new_write()
    assert t.snapshot_manager().latest_snapshot_id() == 1  # nothing written by impl

"""Partition directory names and data file names, against strings Paimon Java 1.4.2 produced
(the harness's ``partition_paths`` op; tests/paimon_java/test_java_partition_paths.py checks
drawn values against the live harness)."""

from __future__ import annotations

import datetime as dt
import decimal
import os

import pyarrow as pa
import pytest

import impl
from impl.commit.options import data_layout
from impl.data.partition_names import PartitionNaming
from impl.data.types import parse_type
from impl.errors import InvalidOptionError
from impl.fs.names import check_branch
from impl.fs.paths import TablePaths

FIELDS = [("d", "DATE"), ("ts", "TIMESTAMP(3)"), ("s", "STRING"), ("t", "TIME(3)"), ("x", "DOUBLE"),
          ("dec", "DECIMAL(5, 2)"), ("b", "BOOLEAN")]
ROW = [dt.date(2024, 1, 2), dt.datetime(2024, 1, 2, 10, 0), "a/b:}", 3600500, 1.5, decimal.Decimal("1.50"), True]
# Paimon Java 1.4.2's FileStorePathFactory for ROW
JAVA = {
    True: "d=19724/ts=2024-01-02T10%3A00/s=a%2Fb%3A%7D/t=3600500/x=1.5/dec=1.50/b=true",
    False: "d=2024-01-02/ts=2024-01-02 10%3A00%3A00.000/s=a%2Fb%3A%7D/t=01%3A00%3A00.5/x=1.5/dec=1.50/b=true",
}


@pytest.mark.parametrize("legacy", [True, False])
def test_partition_path_is_javas(legacy):
    naming = PartitionNaming(tuple(n for n, _ in FIELDS), tuple(parse_type(t) for _, t in FIELDS), legacy=legacy)
    assert naming.path(ROW) == JAVA[legacy]
    assert naming.path([None, None, " \t", None, None, None, None]) == "/".join(
        f"{n}=__DEFAULT_PARTITION__" for n, _ in FIELDS)


def test_data_layout_names_and_directories():
    layout = data_layout({"data-file.path-directory": "data", "data-file.prefix": "dat-",
                          "changelog-file.prefix": "chg-", "file.suffix.include.compression": "true",
                          "file.compression": "zstd"})
    paths = TablePaths("/wh/db.db/t", layout=layout)
    assert paths.bucket_dir("dt=1", 0) == "/wh/db.db/t/data/dt=1/bucket-0"
    assert paths.with_branch(check_branch("b")).bucket_dir("", 1) == "/wh/db.db/t/data/bucket-1"
    namer = layout.namer(lambda: "u")
    assert (namer.data_file(), namer.changelog_file()) == ("dat-u-0.zst", "chg-u-1.zst")  # + .<format>
    # Java's extension for a codec it does not know is the codec's own name; none has none
    assert data_layout({"file.suffix.include.compression": "true", "file.compression": "none"}).compression_infix is None
    assert data_layout({"file.suffix.include.compression": "true", "file.compression": "LZ4"}).compression_infix == "lz4"


@pytest.mark.parametrize("options", [{"data-file.path-directory": "../x"}, {"data-file.path-directory": "/x"},
                                     {"data-file.path-directory": "a//b"}, {"data-file.prefix": "../"},
                                     {"changelog-file.prefix": "a\\b"}, {"data-file.path-directory": "snapshot/d"}])
def test_layout_options_stay_inside_the_table(options):
    with pytest.raises(InvalidOptionError):
        data_layout(options)


def test_postpone_files_take_the_data_file_prefix(tmp_path):
    """Paimon's postpone writer names its files ``<data-file.prefix>-u-<user>-s-<id>-w-...``."""
    cat = impl.Catalog(str(tmp_path))
    cat.create_database("db", ignore_if_exists=True)
    cat.create_table("db.t", schema=pa.schema([("k", pa.int32()), ("v", pa.string())]), primary_keys=["k"],
                     options={"bucket": "-2", "data-file.prefix": "dat-", "data-file.path-directory": "d",
                              "file.suffix.include.compression": "true"})
    cat.get_table("db.t").write_arrow(pa.table({"k": pa.array([1, 2], pa.int32()), "v": ["a", "b"]}))
    names = os.listdir(tmp_path / "db.db" / "t" / "d" / "bucket-postpone")
    assert names and all(n.startswith("dat--u-") and ".zst." in n for n in names), names

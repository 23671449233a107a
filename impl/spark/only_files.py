"""The internal ``paimon_py`` option with which :func:`impl.spark.fast_read.read_table` hands the
source just the files Spark's Parquet reader does not read: (partition, bucket, file names)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Mapping, Sequence

from impl.read.scan import DataSplit
from impl.spark.errors import SparkConnectorError
from impl.spark.options import FORMAT_NAME, ONLY_FILES_KEY


def encode_only_files(splits: Sequence[DataSplit]) -> str:
    """The internal ``paimon_py`` option restricting a read to these splits' files."""
    return json.dumps([[s.partition.hex(), s.bucket, sorted(f.file_name for f in s.files)] for s in splits])


def decode_only_files(value: str) -> dict[tuple[bytes, int], frozenset[str]]:
    out: dict[tuple[bytes, int], frozenset[str]] = {}
    try:
        # a bucket of an append table can be planned as several splits: their files add up
        for p, b, names in json.loads(value):
            key = (bytes.fromhex(p), int(b))
            out[key] = out.get(key, frozenset()) | frozenset(names)
    except (ValueError, TypeError) as e:
        raise SparkConnectorError(f"{FORMAT_NAME}: option {ONLY_FILES_KEY} is internal and malformed: {e}") from e
    return out


def restrict_splits(splits: Sequence[DataSplit], only: Mapping[tuple[bytes, int], frozenset[str]] | None
                    ) -> list[DataSplit]:
    """``splits`` cut down to the files ``only`` names (None: all of them)."""
    if only is None:
        return list(splits)
    out = []
    for s in splits:
        names = only.get((s.partition, s.bucket))
        if not names:
            continue
        files = tuple(f for f in s.files if f.file_name in names)
        if files:
            out.append(replace(s, files=files))
    return out


__all__ = ["encode_only_files", "decode_only_files", "restrict_splits"]

"""Routing rows to writers: the bucket of every row by the table's bucket function, as a
vectorized function of the bucket-key columns. Engine-neutral: Spark runs it as a scalar Arrow
UDF (``impl.spark.routing``), Ray in its split tasks.
"""

from __future__ import annotations

from typing import Sequence

import pyarrow as pa


def bucket_function(types: Sequence, num_buckets: int, function: str = "default"):
    """A vectorized function of the bucket-key columns (pyarrow arrays) giving each row's int32
    bucket by the table's ``bucket-function.type`` ``function``."""
    types = list(types)

    def buckets(*columns):
        # imported where the function runs (a Spark UDF on its Python workers, a Ray task)
        from impl.bucket.routing import compute_buckets
        from impl.data.types import to_arrow
        from impl.options.values import BucketFunctionType

        cols = []
        for c, t in zip(columns, types, strict=True):
            at = to_arrow(t)
            cols.append(c if c.type.equals(at) else c.cast(at))
        n = len(cols[0]) if cols else 0
        return pa.array(compute_buckets(cols, types, num_buckets, BucketFunctionType(function)) if n else [],
                        type=pa.int32())

    return buckets


__all__ = ["bucket_function"]

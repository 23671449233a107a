"""Deletion vectors applied inside the native Parquet scan's own tasks, as one JVM filter.

:func:`impl.spark.fast_read.read_table` reads the level >= 1 files of a deletion-vector table
with ``spark.read.parquet``, each row tagged with ``_metadata.file_name`` and
``_metadata.row_index``. :func:`drop_deleted` removes the rows the vectors delete without a join
and without moving a row into Python: the driver packs every file's deleted positions into one
bitmap of little-endian 64-bit words (bit ``p % 64`` of word ``offset + p // 64`` set when
position ``p`` is deleted), hands it to the JVM as one ``array<bigint>`` literal, and the filter
finds a row's file by a binary search over the sorted file names (nested ``CASE``; ``log2(files)``
string comparisons per row) whose leaves test one bit::

    keep = CASE WHEN name < 'data-m.parquet' THEN (CASE WHEN name = 'data-a.parquet'
                THEN row_index div 64 >= 3 OR (get(words, 0 + row_index div 64) >> row_index % 64) & 1 = 0
                ELSE true END) ELSE ... END

The filter runs in the scan's tasks, compiled with the scan (whole-stage code generation), so the
cost is a few nanoseconds per row instead of a broadcast join's hash probe of a string and a long.
The literal travels with each task (1 bit per row up to each file's last deleted position). At
most :data:`FILES_PER_TREE` files per search tree (generated code stays small); more files
give several trees, AND-ed. Where the session has no JVM to build the literal (Spark Connect),
or the bitmap exceeds :data:`MAX_BITMAP_WORDS`, :func:`drop_deleted` returns None and the caller
keeps its own way (the anti join).

    >>> words, offsets, counts = pack_positions([np.array([0, 65]), np.array([3])])
    >>> words.tolist(), offsets.tolist(), counts.tolist()
    ([1, 2, 8], [0, 2], [2, 1])
    >>> df = drop_deleted(spark, tagged, {"data-a.parquet": np.array([0, 65])},
    ...                   file_name_column="f", row_index_column="i")  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

# files per binary-search tree: depth 7, and a generated method well below the JVM's limits
FILES_PER_TREE = 128
# the literal travels in every task and in the plan's text: beyond 1 MiB of bitmap (8M rows up
# to the files' last deleted positions) the caller's broadcast join ships the vectors once instead
MAX_BITMAP_WORDS = 1 << 17
_WORD_BITS = 64


def pack_positions(positions: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The deleted ``positions`` of several files as one bitmap: (words, first word of each file,
    words of each file). A file's bitmap ends at the word of its last deleted position (rows after
    it are kept by the word-count test); a file without positions has no word."""
    counts = np.array([(int(np.max(p)) // _WORD_BITS + 1) if len(p) else 0 for p in positions], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64) if len(counts) else counts
    total = int(counts.sum())
    bits = np.zeros(total * _WORD_BITS, dtype=bool)
    for p, off in zip(positions, offsets, strict=True):  # one vectorized scatter per file
        if len(p):
            bits[np.asarray(p, dtype=np.int64) + int(off) * _WORD_BITS] = True
    words = np.packbits(bits, bitorder="little").view("<i8")
    return words, offsets, counts


def is_deleted(words: np.ndarray, offset: int, count: int, row_index: np.ndarray) -> np.ndarray:
    """The filter's bit test in numpy (the rule the JVM expression spells; for tests and oracles)."""
    w = row_index // _WORD_BITS
    inside = w < count
    out = np.zeros(len(row_index), dtype=bool)
    got = words[offset + w[inside]].astype(np.uint64) >> (row_index[inside] % _WORD_BITS).astype(np.uint64)
    out[inside] = (got & np.uint64(1)).astype(bool)
    return out


def _jvm_words(spark, words: np.ndarray):
    """``words`` as a Spark ``array<bigint>`` literal Column, built in the JVM from one byte
    array (a literal of Python ints would be one py4j call per word); None without a JVM."""
    from pyspark.sql.classic.column import Column

    jvm = getattr(spark, "_jvm", None)
    gateway = getattr(getattr(spark, "sparkContext", None), "_gateway", None)
    if jvm is None or gateway is None:
        return None
    longs = gateway.new_array(jvm.long, len(words))
    buf = jvm.java.nio.ByteBuffer.wrap(bytearray(words.astype("<i8").tobytes()))
    buf.order(jvm.java.nio.ByteOrder.LITTLE_ENDIAN).asLongBuffer().get(longs)
    return Column(jvm.org.apache.spark.sql.functions.lit(longs))


def _leaf(words_col, offset: int, count: int, row_index, word):
    from pyspark.sql import functions as F

    # (F.shiftright takes a constant shift only)
    bit = F.call_function("shiftright", F.get(words_col, word + F.lit(int(offset))),
                          (row_index % _WORD_BITS).cast("int"))
    return (word >= F.lit(int(count))) | (bit.bitwiseAND(F.lit(1)) == 0)


def _tree(names: Sequence[str], leaves: Sequence[Any], name_col) -> Any:
    """Binary search over sorted ``names``: the leaf of the row's file, true for other files."""
    from pyspark.sql import functions as F

    if len(names) == 1:
        return F.when(name_col == F.lit(names[0]), leaves[0]).otherwise(F.lit(True))
    mid = len(names) // 2
    return F.when(name_col < F.lit(names[mid]), _tree(names[:mid], leaves[:mid], name_col)) \
        .otherwise(_tree(names[mid:], leaves[mid:], name_col))


def keep_condition(spark, deletions: Mapping[str, np.ndarray], *, file_name_column: str,
                   row_index_column: str, max_words: int = MAX_BITMAP_WORDS):
    """A boolean Column, true for the rows ``deletions`` (file name -> deleted positions) keep;
    None when the session cannot build it (no JVM) or the bitmap would exceed ``max_words``."""
    from pyspark.sql import functions as F

    names = sorted(n for n, p in deletions.items() if len(p))
    if not names:
        return F.lit(True)
    if sum(int(np.max(deletions[n])) // _WORD_BITS + 1 for n in names) > max_words:
        return None
    words, offsets, counts = pack_positions([np.asarray(deletions[n]) for n in names])
    words_col = _jvm_words(spark, words)
    if words_col is None:
        return None
    row_index = F.col(row_index_column)
    word = F.shiftright(row_index, 6).cast("int")
    name_col = F.col(file_name_column)
    trees = []
    for lo in range(0, len(names), FILES_PER_TREE):
        chunk = names[lo:lo + FILES_PER_TREE]
        leaves = [_leaf(words_col, int(offsets[lo + i]), int(counts[lo + i]), row_index, word)
                  for i in range(len(chunk))]
        trees.append(_tree(chunk, leaves, name_col))
    cond = trees[0]
    for t in trees[1:]:
        cond = cond & t
    return cond


def drop_deleted(spark, df, deletions: Mapping[str, np.ndarray], *, file_name_column: str,
                 row_index_column: str, max_words: int = MAX_BITMAP_WORDS):
    """``df`` (rows tagged with their file's name and their position in it) without the rows
    ``deletions`` delete, filtered in the scan's tasks; None when it cannot (no JVM, or a bitmap
    beyond ``max_words``)."""
    cond = keep_condition(spark, deletions, file_name_column=file_name_column, row_index_column=row_index_column,
                          max_words=max_words)
    return None if cond is None else df.filter(cond)


__all__ = ["drop_deleted", "keep_condition", "pack_positions", "is_deleted", "FILES_PER_TREE", "MAX_BITMAP_WORDS"]

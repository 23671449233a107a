"""The STRING-key merge (integer key codes, issue 49) equals Arrow's on random sorted runs.

Keys share long random prefixes (multi-byte UTF-8, zero bytes, longer than the 8 bytes a code
holds), suffixes are empty or long; runs overlap or not, hold a key twice or not; sequence
numbers tie or go backwards; rows retract; some keys are null (no codes: Arrow's sort). The
columns come in chunks sliced out of larger arrays, as a concatenation of files or batches
gives: offsets that do not start at 0, data buffers that end right after the last value.
"""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from impl.mergetree import MergeSpec, merge_kv, merge_sorted
from impl.mergetree.key_codes import string_key_codes
from impl.mergetree.kv import SEQUENCE_NUMBER, VALUE_KIND
from impl.mergetree.merge_engine import merge_order
from impl.options import MergeEngine

SETTINGS = settings(max_examples=int(os.environ.get("MERGETREE_EXAMPLES", "60")), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

_CHARS = st.sampled_from(["a", "b", "z", "0", "9", "\x00", "é", "€", "𝄞", "-"])
PREFIXES = st.sampled_from(["", "u", "user-", "user-0000", "prefix-longer-than-8", "é€𝄞-", "\x00\x00"]) | \
    st.text(_CHARS, max_size=20)
SUFFIXES = st.text(_CHARS, max_size=12)


def _chunked(values: list, typ: pa.DataType, cuts: list[int]) -> pa.ChunkedArray:
    """``values`` in chunks cut at ``cuts``, each a slice of a larger array (a value before and
    after it), so offsets start past 0 and the data buffer runs on past the chunk's end."""
    bounds = sorted({0, len(values), *[min(c, len(values)) for c in cuts]})
    pad = ["\xff\xff padding"] if not pa.types.is_binary(typ) and not pa.types.is_large_binary(typ) else [b"\xff"]
    chunks = [pa.array(pad + values[a:b] + pad, typ).slice(1, b - a) for a, b in zip(bounds, bounds[1:], strict=False)]
    return pa.chunked_array(chunks or [pa.array([], typ)], typ)


@st.composite
def string_kv(draw):
    prefix = draw(PREFIXES)
    nulls = draw(st.integers(0, 5)) == 0
    runs = []
    for _ in range(draw(st.integers(1, 12))):
        keys = draw(st.lists(SUFFIXES.map(lambda s: prefix + s), max_size=25))
        if draw(st.integers(0, 5)):  # as a data file: sorted, one row per key
            keys = sorted(set(keys), key=lambda k: k.encode())
        runs.append([None if nulls and draw(st.integers(0, 6)) == 0 else k for k in keys])
    keys = [k for run in runs for k in run]
    n = len(keys)
    seq = np.arange(n, dtype=np.int64)
    if n and draw(st.booleans()):
        for _ in range(draw(st.integers(1, 3))):  # ties, and a number going backwards
            seq[draw(st.integers(0, n - 1))] = seq[draw(st.integers(0, n - 1))]
    typ = draw(st.sampled_from([pa.string(), pa.large_string(), pa.binary()]))
    values = [k if k is None or not pa.types.is_binary(typ) else k.encode() for k in keys]
    cuts = draw(st.lists(st.integers(0, n), max_size=5))
    kv = pa.table({
        "_KEY_id": _chunked(values, typ, cuts),
        SEQUENCE_NUMBER: pa.array(seq),
        VALUE_KIND: pa.array(draw(st.lists(st.sampled_from([0, 0, 0, 2, 1, 3]), min_size=n, max_size=n)), pa.int8()),
        "v": pa.array(np.arange(n, dtype=np.int64)),
    })
    engine = draw(st.sampled_from([MergeEngine.DEDUPLICATE, MergeEngine.FIRST_ROW]))
    spec = MergeSpec(engine=engine, key_columns=("_KEY_id",), sequence_fields=(),
                     sequence_descending=False, ignore_delete=draw(st.booleans()))
    return kv, spec


@SETTINGS
@given(case=string_kv(), drop=st.booleans())
def test_string_merge_equals_arrows_merge(case, drop):
    kv, spec = case
    general = pc.sort_indices(kv, sort_keys=spec.sort_keys())
    assert merge_order(kv, spec).tolist() == general.to_numpy().tolist()
    expected = merge_sorted(kv.take(general), spec, drop)
    assert merge_kv(kv, spec, drop).to_pylist() == expected.to_pylist()
    assert merge_kv(kv, spec, drop, columns=["v"]).to_pylist() == expected.select(["v"]).to_pylist()


@SETTINGS
@given(prefix=PREFIXES, suffixes=st.lists(SUFFIXES, max_size=40), cuts=st.lists(st.integers(0, 40), max_size=4),
       typ=st.sampled_from([pa.string(), pa.large_string()]))
def test_codes_order_like_the_keys_whatever_the_chunks(prefix, suffixes, cuts, typ):
    """Different words order as their keys' bytes; exact codes are the keys themselves; a
    chunked column of sliced arrays has the codes of the same keys in one fresh array."""
    keys = [prefix + s for s in suffixes]
    codes = string_key_codes(_chunked(keys, typ, cuts))
    whole = string_key_codes(pa.array(keys, typ))
    assert codes is not None and whole is not None
    assert codes.words.tolist() == whole.words.tolist() and codes.lengths.tolist() == whole.lengths.tolist()
    raw = [k.encode() for k in keys]
    common = os.path.commonprefix(raw)
    assert codes.exact == all(len(k) - len(common) <= 8 for k in raw)
    for i, a in enumerate(raw):
        for j, b in enumerate(raw):
            if codes.words[i] < codes.words[j]:
                assert a < b
            if codes.exact:
                assert (a == b) == (codes.words[i] == codes.words[j] and codes.lengths[i] == codes.lengths[j])

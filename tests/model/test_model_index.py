"""The model's index rules (dynamic bucket mode) against impl's, side by side on random inputs:
bucket assignment (model.assign_buckets vs impl PartitionIndex.assign), the index fold and the
index conflict rules 5 and 6."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import impl.errors as impl_errors
from impl.commit.conflicts import check_index_conflicts as impl_check_index
from impl.manifest.manifest_file import fold_index_entries
from impl.manifest.records import FileKind, IndexFileMeta, IndexManifestEntry
from impl.write.dynamic_bucket import PartitionIndex
from model import (
    ADD,
    DELETE,
    HASH,
    IndexEntry,
    IndexFacts,
    ModelError,
    assign_buckets,
    check_index_conflicts,
    check_index_invariant,
    fold_index,
    index_identity,
)

hashes = st.integers(-(2**31), 2**31 - 1) | st.integers(0, 30)  # small values collide often


@settings(max_examples=200, deadline=None)
@given(base=st.dictionaries(st.integers(0, 40), st.integers(0, 5), max_size=25),
       batches=st.lists(st.lists(hashes, max_size=30), min_size=1, max_size=4), target=st.integers(1, 6))
def test_assignment_matches_the_model(base, batches, target):
    owner = dict(base)
    idx = PartitionIndex.of(np.array(list(base), np.int32), np.array(list(base.values()), np.int32), target)
    for batch in batches:
        want = assign_buckets(owner, batch, target)
        got = idx.assign(np.array(batch, np.int32)).tolist()
        assert got == want
    assert dict(zip(idx.hashes.tolist(), idx.buckets.tolist(), strict=True)) == owner


# index files: (partition, bucket, type, name) drawn from a small space so changes hit live files
index_files = st.tuples(st.sampled_from(["p", "q"]), st.integers(0, 2), st.sampled_from([HASH, HASH, "GLOBAL"]),
                        st.sampled_from(["f0", "f1", "f2", "f3"]))


def to_impl(kind: str, f: tuple) -> IndexManifestEntry:
    p, b, t, name = f
    return IndexManifestEntry(FileKind.ADD if kind == ADD else FileKind.DELETE, p.encode(), b,
                              IndexFileMeta(t, name, 4, 1))


def to_model(f: tuple) -> IndexFacts:
    p, b, t, name = f
    return IndexFacts(p.encode(), b, t, name)


@settings(max_examples=300, deadline=None)
@given(live=st.lists(index_files, max_size=6, unique_by=lambda f: (f[0], f[1], f[2]) if f[2] == HASH else f),
       changes=st.lists(st.tuples(st.sampled_from([ADD, DELETE]), index_files), max_size=5))
def test_index_fold_and_conflicts_match_the_model(live, changes):
    model_live = {index_identity(to_model(f)): to_model(f) for f in live}
    check_index_invariant(model_live)
    impl_live = [to_impl(ADD, f) for f in live]
    model_changes = [IndexEntry(k, to_model(f)) for k, f in changes]
    impl_changes = [to_impl(k, f) for k, f in changes]
    model_error = impl_error = None
    try:
        check_index_conflicts(model_live, model_changes)
    except ModelError as e:
        model_error = type(e).__name__
    try:
        impl_check_index(impl_live, impl_changes)
    except impl_errors.PaimonError as e:
        impl_error = type(e).__name__
    assert impl_error == model_error
    folded_model = fold_index(model_live, model_changes)
    folded_impl = fold_index_entries(impl_live, impl_changes)
    assert set(folded_model) == {(e.partition, e.bucket, e.index_file.index_type, e.index_file.file_name)
                                 for e in folded_impl}
    if model_error is None:
        # a change list that passes the rules keeps one HASH file per bucket
        hash_buckets = [(k[0], k[1]) for k in folded_model if k[2] == HASH]
        assert len(hash_buckets) == len(set(hash_buckets))

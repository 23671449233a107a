"""Folding manifest entries: ADD/DELETE cancel, orphan DELETEs kept, double ADD rejected, and the
fold is independent of how a valid history is split into manifests."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from impl.data.binary_row import encode_row
from impl.data.types import STRING
from impl.datafile.meta import DataFileMeta
from impl.errors import DuplicateFileError
from impl.manifest.entries import live_entries, merge_entries
from impl.manifest.records import FileKind, ManifestEntry

P0 = encode_row(["a"], [STRING()])
P1 = encode_row(["b"], [STRING()])


def entry(name, kind=FileKind.ADD, *, partition=P0, bucket=0, level=0, extra=(), rows=1):
    return ManifestEntry(kind, partition, bucket, 2, DataFileMeta(name, 10, rows, level=level, extra_files=extra))


def add(name, **kw):
    return entry(name, FileKind.ADD, **kw)


def delete(name, **kw):
    return entry(name, FileKind.DELETE, **kw)


def kinds(merged):
    return {k.file_name: e.kind for k, e in merged.items()}


def test_add_then_delete_cancel():
    assert merge_entries([add("f1"), add("f2"), delete("f1")]) == {add("f2").identity: add("f2")}
    assert live_entries([add("f1"), delete("f1")]) == []


def test_delete_without_add_is_kept():
    merged = merge_entries([delete("old"), add("new")])
    assert kinds(merged) == {"old": FileKind.DELETE, "new": FileKind.ADD}
    assert live_entries([delete("old"), add("new")]) == [add("new")]


def test_second_add_raises_naming_the_file():
    with pytest.raises(DuplicateFileError) as ei:
        merge_entries([add("data-dup.parquet"), add("other"), add("data-dup.parquet")])
    assert ei.value.file_name == "data-dup.parquet"
    assert "data-dup.parquet" in str(ei.value)


def test_add_after_orphan_delete_raises():
    # the DELETE says the file is live in an older manifest; adding it again is a duplicate
    with pytest.raises(DuplicateFileError):
        merge_entries([delete("f"), add("f")])


def test_double_delete_of_non_live_file_stays_one_delete():
    merged = merge_entries([delete("gone"), delete("gone")])
    assert list(merged.values()) == [delete("gone")]
    # also after the ADD/DELETE pair cancelled: the extra DELETE survives and is visible
    merged = merge_entries([add("f"), delete("f"), delete("f")])
    assert kinds(merged) == {"f": FileKind.DELETE}


def test_identity_includes_partition_bucket_level_and_extra_files():
    es = [add("f"), add("f", partition=P1), add("f", bucket=1), add("f", level=1), add("f", extra=("x.index",))]
    assert len(merge_entries(es)) == 5
    # deleting one of them removes exactly that one
    merged = merge_entries(es + [delete("f", level=1)])
    assert len(merged) == 4 and all(e.kind is FileKind.ADD for e in merged.values())
    assert add("f", level=1).identity not in merged


def test_identity_ignores_non_identity_fields():
    # DELETE entries may carry other stats than the ADD (e.g. row count); same identity still cancels
    assert merge_entries([add("f", rows=5), delete("f", rows=7)]) == {}


def test_merge_keeps_first_insertion_order():
    merged = merge_entries([add("c"), add("a"), delete("z"), add("b")])
    assert [k.file_name for k in merged] == ["c", "a", "z", "b"]


# ----------------------------------------------------------------------------- chunking property


@st.composite
def valid_histories(draw):
    """Interleaved per-file lifecycles: ADD, ADD then DELETE, or a lone DELETE (ADD in an older
    manifest). Identities differ by name, partition, bucket and level."""
    n = draw(st.integers(0, 25))
    lifecycles = []
    for i in range(n):
        ident = dict(partition=draw(st.sampled_from([P0, P1])), bucket=draw(st.integers(0, 1)),
                     level=draw(st.integers(0, 2)))
        name = f"f{i}"
        shape = draw(st.sampled_from(["add", "add-delete", "delete"]))
        if shape == "add":
            lifecycles.append([add(name, **ident)])
        elif shape == "add-delete":
            lifecycles.append([add(name, **ident), delete(name, **ident)])
        else:
            lifecycles.append([delete(name, **ident)])
    # random interleaving that keeps each lifecycle's order
    history = []
    pending = [list(lc) for lc in lifecycles]
    while any(pending):
        choices = [i for i, lc in enumerate(pending) if lc]
        i = draw(st.sampled_from(choices))
        history.append(pending[i].pop(0))
    return history


@st.composite
def chunked(draw):
    history = draw(valid_histories())
    cuts = sorted(draw(st.lists(st.integers(0, len(history)), max_size=6)))
    chunks, prev = [], 0
    for c in cuts + [len(history)]:
        chunks.append(history[prev:c])
        prev = c
    return history, chunks


def _model_fold(history):
    """The expected fold, computed from lifecycles: a DELETE with an earlier ADD cancels it."""
    state = {}
    for e in history:
        k = e.identity
        if e.kind is FileKind.ADD:
            state[k] = e
        elif k in state and state[k].kind is FileKind.ADD:
            del state[k]
        else:
            state[k] = e
    return state


@settings(max_examples=150, deadline=None)
@given(chunked())
def test_folding_chunks_then_results_equals_folding_all(hc):
    history, chunks = hc
    whole = merge_entries(history)
    assert whole == _model_fold(history)
    partial = []
    for chunk in chunks:
        partial.extend(merge_entries(chunk).values())
    assert merge_entries(partial) == whole
    # and fold is idempotent
    assert merge_entries(whole.values()) == whole


# ----------------------------------------------------------------------------- live_entries
# live_entries folds only the entries whose file name repeats: it must equal the full fold's ADD
# entries, order included, and raise on the same duplicate ADD.

_any_entry = st.builds(
    entry, st.sampled_from(["f0", "f1", "f2", "f3", "f4"]), st.sampled_from(list(FileKind)),
    partition=st.sampled_from([P0, P1]), bucket=st.integers(0, 1), level=st.integers(0, 1),
    extra=st.sampled_from([(), ("x.index",)]), rows=st.integers(1, 3))


def _full_fold_adds(history):
    return [e for e in merge_entries(history).values() if e.kind is FileKind.ADD]


def _outcome(fold, history):
    try:
        return fold(history)
    except DuplicateFileError as e:
        return ("duplicate", e.file_name, str(e))


@settings(max_examples=400, deadline=None)
@given(st.one_of(valid_histories(), st.lists(_any_entry, max_size=30)), st.lists(st.integers(0, 9), max_size=8))
def test_live_entries_equal_the_full_fold(history, unique_names):
    # mixed with entries whose names occur once, which live_entries does not fold
    for k, n in enumerate(unique_names):
        history.insert(min(n, len(history)), entry(f"u{k}", FileKind.DELETE if n % 3 == 0 else FileKind.ADD))
    assert _outcome(live_entries, history) == _outcome(_full_fold_adds, history)


def test_live_entries_of_distinct_names_keep_the_adds_in_order():
    es = [add("c"), delete("z"), add("a"), add("b", partition=P1)]
    assert live_entries(es) == [add("c"), add("a"), add("b", partition=P1)]
    assert live_entries([add("a"), delete("a"), add("a")]) == [add("a")]  # re-added at its new place
    assert live_entries([add("a"), add("b"), delete("a"), add("a")]) == [add("b"), add("a")]

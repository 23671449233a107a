"""The model's schema rule (model.schema) side by side with impl's (impl.schema.evolution):
random prepared/latest schema pairs get the same verdict from both, and the model's commits
follow the rule (published under the latest schema id, or refused with nothing published)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import impl.schema.evolution as impl_rule
from impl.data.types import DataField, parse_type
from impl.schema.records import TableSchema
from model import FieldFacts, FileFacts, Model, SchemaChangedError, SchemaFacts, commit_schema_problem

TYPES = ["TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "STRING"]


def to_impl(s: SchemaFacts) -> TableSchema:
    fields = tuple(DataField(f.id, f.name, parse_type(f.type).copy(f.nullable)) for f in s.fields)
    return TableSchema(s.id, fields, s.partition_keys, s.primary_keys, dict(s.options))


@st.composite
def schema_pairs(draw):
    """A prepared schema and a latest one reached by arbitrary edits (also ones alter_table refuses,
    as another writer such as pypaimon might make them)."""
    n = draw(st.integers(2, 5))
    fields = [FieldFacts(i, f"c{i}", draw(st.sampled_from(TYPES)), nullable=i >= 2) for i in range(n)]
    parts, pks = ("c0",), ("c0", "c1")
    opts = {"bucket": "2", "bucket-key": "c1"}
    prepared = SchemaFacts(0, tuple(fields), parts, pks, opts)
    latest_fields = list(fields)
    latest_parts, latest_pks, latest_opts = parts, pks, dict(opts)
    next_id = n
    for _ in range(draw(st.integers(0, 4))):
        op = draw(st.sampled_from(["rename", "drop", "add", "retype", "nullability", "bucket", "bucket-key",
                                   "other-option", "rekey"]))
        i = draw(st.integers(0, len(latest_fields) - 1))
        f = latest_fields[i]
        if op == "rename":
            new_name = f"r{next_id}{f.name}"
            latest_fields[i] = FieldFacts(f.id, new_name, f.type, f.nullable)
            latest_parts = tuple(new_name if k == f.name else k for k in latest_parts)
            latest_pks = tuple(new_name if k == f.name else k for k in latest_pks)
            if latest_opts.get("bucket-key") == f.name:
                latest_opts["bucket-key"] = new_name
        elif op == "drop" and f.name not in latest_pks and len(latest_fields) > 1:
            del latest_fields[i]
        elif op == "add":
            latest_fields.append(FieldFacts(next_id, f"a{next_id}", draw(st.sampled_from(TYPES)), draw(st.booleans())))
            next_id += 1
        elif op == "retype":
            latest_fields[i] = FieldFacts(f.id, f.name, draw(st.sampled_from(TYPES)), f.nullable)
        elif op == "nullability":
            latest_fields[i] = FieldFacts(f.id, f.name, f.type, not f.nullable)
        elif op == "bucket":
            latest_opts["bucket"] = draw(st.sampled_from(["2", "4"]))
        elif op == "bucket-key":
            latest_opts["bucket-key"] = draw(st.sampled_from([g.name for g in latest_fields]))
        elif op == "other-option":
            latest_opts["snapshot.num-retained.min"] = "3"
        elif op == "rekey":
            latest_pks = tuple(draw(st.permutations([g.name for g in latest_fields]))[:2])
    latest = SchemaFacts(1, tuple(latest_fields), latest_parts, latest_pks, latest_opts)
    return prepared, latest


@settings(max_examples=150, deadline=None)
@given(schema_pairs())
def test_model_and_impl_rules_agree(pair):
    prepared, latest = pair
    model_says = commit_schema_problem(prepared, latest)
    impl_says = impl_rule.commit_schema_problem(to_impl(prepared), to_impl(latest))
    assert (model_says is None) == (impl_says is None), (model_says, impl_says)


@pytest.mark.parametrize("source", TYPES)
@pytest.mark.parametrize("target", TYPES)
def test_widening_tables_agree(source, target):
    from model.schema import reads_as
    assert reads_as(source, target) == impl_rule.is_safe_cast(parse_type(source), parse_type(target))


def _schema(sid, fields, **options):
    return SchemaFacts(sid, tuple(fields), (), ("k",), {"bucket": "1", **options})


K = FieldFacts(0, "k", "INT", False)


def test_model_commit_under_older_schema_takes_latest_id_or_is_refused():
    m = Model(primary_key=True, schema=_schema(0, [K, FieldFacts(1, "v", "INT")]))
    f1 = FileFacts("p", 0, 1, 0, "f1", 1, 1)
    assert m.commit("u", 1, [f1], prepared_schema_id=0) == [1]
    m.alter(_schema(1, [K, FieldFacts(1, "w", "BIGINT"), FieldFacts(2, "n", "STRING")]))
    f2 = FileFacts("p", 0, 1, 0, "f2", 2, 2)
    assert m.commit("u", 2, [f2], prepared_schema_id=0) == [2]  # rename + widen + add: compatible
    assert [s.schema_id for s in m.snapshots] == [0, 1]
    m.alter(_schema(2, [K, FieldFacts(1, "w", "BIGINT"), FieldFacts(2, "n", "STRING")], **{"bucket": "2"}))
    with pytest.raises(SchemaChangedError) as info:
        m.commit("u", 3, [FileFacts("p", 0, 1, 0, "f3", 3, 3)], prepared_schema_id=1)
    assert (info.value.prepared_schema_id, info.value.latest_schema_id) == (1, 2)
    assert len(m.snapshots) == 2  # nothing published
    assert m.commit("u", 3, [FileFacts("p", 0, 1, 0, "f3", 3, 3)], prepared_schema_id=2) == [3]
    assert m.latest().schema_id == 2
    with pytest.raises(ValueError):
        m.alter(_schema(7, [K]))

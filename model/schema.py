"""Schema ids in the commit protocol: the rule for a commit prepared under an older schema.

The counterpart of ``impl.schema.evolution.commit_schema_problem`` (read them side by side).
The model knows fields by (id, name, type name, nullable) over a small set of atomic types;
type widening is the table ``WIDENS_TO`` (impl's ``is_safe_cast`` restricted to those types).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

# what each type's values read as without loss (besides itself)
WIDENS_TO: Mapping[str, frozenset[str]] = {
    "TINYINT": frozenset({"SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE"}),
    "SMALLINT": frozenset({"INT", "BIGINT", "FLOAT", "DOUBLE"}),
    "INT": frozenset({"BIGINT", "DOUBLE"}),
    "BIGINT": frozenset(),
    "FLOAT": frozenset({"DOUBLE"}),
    "DOUBLE": frozenset(),
    "STRING": frozenset(),
}
LAYOUT_OPTIONS = ("bucket", "merge-engine", "deletion-vectors.enabled")
LAYOUT_COLUMN_OPTIONS = ("bucket-key", "sequence.field", "rowkind.field")


@dataclass(frozen=True)
class FieldFacts:
    id: int
    name: str
    type: str  # a key of WIDENS_TO
    nullable: bool = True


@dataclass(frozen=True)
class SchemaFacts:
    id: int
    fields: tuple[FieldFacts, ...]
    partition_keys: tuple[str, ...] = ()
    primary_keys: tuple[str, ...] = ()
    options: Mapping[str, str] = field(default_factory=dict)

    def ids_of(self, names) -> tuple:
        by_name = {f.name: f.id for f in self.fields}
        return tuple(by_name.get(n, n) for n in names)

    def option_ids(self, key: str) -> tuple:
        raw = self.options.get(key)
        return () if raw is None else self.ids_of(c.strip() for c in raw.split(",") if c.strip())


def reads_as(source: str, target: str) -> bool:
    return source == target or target in WIDENS_TO[source]


def commit_schema_problem(prepared: SchemaFacts, latest: SchemaFacts) -> str | None:
    """Why a commit prepared under ``prepared`` must not be published under ``latest``, or None:
    keys (by field id), layout options, and every surviving field readable as its new type and
    not newly NOT NULL; every added field nullable."""
    if latest.id == prepared.id:
        return None
    if prepared.ids_of(prepared.partition_keys) != latest.ids_of(latest.partition_keys):
        return "partition keys changed"
    if prepared.ids_of(prepared.primary_keys) != latest.ids_of(latest.primary_keys):
        return "primary keys changed"
    for key in LAYOUT_OPTIONS:
        if prepared.options.get(key) != latest.options.get(key):
            return f"option {key!r} changed"
    for key in LAYOUT_COLUMN_OPTIONS:
        if prepared.option_ids(key) != latest.option_ids(key):
            return f"option {key!r} now names other columns"
    old = {f.id: f for f in prepared.fields}
    for f in latest.fields:
        was = old.get(f.id)
        if was is None:
            if not f.nullable:
                return f"column {f.name!r} was added as NOT NULL"
        elif not reads_as(was.type, f.type):
            return f"column {f.name!r} changed type"
        elif was.nullable and not f.nullable:
            return f"column {f.name!r} became NOT NULL"
    return None

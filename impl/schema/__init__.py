"""Schema evolution: schema changes and their rules, schema files, and reading old files by field id.

``changes`` builds the next schema from a list of :class:`SchemaChange` (pure rules),
``manager`` reads and publishes ``schema/schema-<id>`` files, ``evolution`` holds what readers
and committers share (safe casts, field-id column mapping, the commit-time schema check).
Depends on impl.fs, impl.format and impl.environment (the clock of new schemas) only.
"""

from impl.schema.changes import IMMUTABLE_OPTIONS, Move, MoveType, SchemaChange, apply_changes
from impl.schema.evolution import column_sources, commit_schema_problem, file_column, is_safe_cast
from impl.schema.manager import SchemaManager

__all__ = ["SchemaChange", "Move", "MoveType", "apply_changes", "IMMUTABLE_OPTIONS", "SchemaManager",
           "column_sources", "file_column", "commit_schema_problem", "is_safe_cast"]

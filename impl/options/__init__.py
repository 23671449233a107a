"""Paimon table options, declared once: keys, parsers, defaults, fallback keys, known-key checks.

- :mod:`impl.options.values`: parsers of option values (memory sizes, durations, booleans, ...)
  and the kinds options choose between (:class:`MergeEngine`, :class:`ChangelogProducer`, ...).
- :mod:`impl.options.config_option`: :class:`ConfigOption` (one key) and :class:`FieldOption`
  (``fields.<field>.<suffix>``), and how each is read from an option map.
- :mod:`impl.options.core_options`: the declaration of every option this library reads, and
  the unknown-key warning.
- :mod:`impl.options.parsed`: :class:`ParsedOptions`, one table view's options with each
  declared option parsed once, the one typed object the views below are derived from.
- :mod:`impl.options.write_formats`: the formats a table writes (``file.format``, compression,
  per-level overrides, the ``orc.*`` / ``avro.*`` options).
- :mod:`impl.options.registry`: every key Paimon 1.4.2 declares (:mod:`impl.options.paimon_1_4_2`,
  generated from Java), classified as honoured, without storage effect, or refused on read or
  write (:class:`impl.errors.UnsupportedOptionError`), and consulted by reads, writes,
  create/alter and view options.

Per-concept views derived from a :class:`ParsedOptions` (``from_parsed``; ``from_options`` for a
bare option map): :class:`impl.commit.options.CommitOptions`,
:class:`impl.mergetree.options.MergeTreeOptions`, :class:`impl.store.options.TableOptions`,
:class:`impl.options.write_formats.WriteFormats`, :class:`impl.fileindex.options.FileIndexSpec`.
Connector options are declared the same way where they are read (:mod:`impl.spark.options`).
Wrong values raise :class:`impl.errors.InvalidOptionError` naming the option and the value.
"""

from impl.options.config_option import ConfigOption, FieldOption
from impl.options.core_options import CORE_OPTIONS, FIELD_OPTIONS, KNOWN_KEYS, is_known_key, warn_unknown_keys
from impl.options.parsed import ParsedOptions
from impl.options.values import (
    ChangelogProducer,
    MergeEngine,
    SortOrder,
    StatsMode,
    StatsModeKind,
    parse_bool,
    parse_duration_millis,
    parse_int,
    parse_memory_size,
)

__all__ = [
    "ConfigOption", "FieldOption", "ParsedOptions", "CORE_OPTIONS", "FIELD_OPTIONS", "KNOWN_KEYS", "is_known_key",
    "warn_unknown_keys", "ChangelogProducer", "MergeEngine", "SortOrder", "StatsMode", "StatsModeKind",
    "parse_bool", "parse_duration_millis", "parse_int", "parse_memory_size",
]

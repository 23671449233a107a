"""A table's options parsed once: the one typed object every option view is derived from.

:class:`ParsedOptions` holds the option map of one table view (schema options merged with
dynamic ones) and the parsed value of each declared option (:mod:`impl.options.core_options`),
parsed the first time a view asks for it and then kept. A table core builds one; its views
(:class:`impl.store.options.TableOptions`, :class:`impl.commit.options.CommitOptions`,
:class:`impl.mergetree.options.MergeTreeOptions`, :class:`impl.options.write_formats.WriteFormats`,
:class:`impl.fileindex.options.FileIndexSpec`) read it instead of the raw keys, so each key is
parsed in one place, with its declaration's parser and default.

Parsing stays lazy on purpose: a key is parsed (and a wrong value refused with
:class:`impl.errors.InvalidOptionError`) when the view that uses it is built, as before the
views shared one object. Parsing everything up front would refuse, say, a malformed merge-tree
key on an append table that never reads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, TypeVar

from impl.options.config_option import ConfigOption, FieldOption

T = TypeVar("T")


@dataclass(frozen=True, eq=False)
class ParsedOptions:
    """The options of one table view, each declared option parsed at most once.

    ``raw``: key -> value text (unset keys absent). Build with :meth:`of` from any option map.
    """

    raw: Mapping[str, str]
    # id(option) -> (option, parsed value): by identity, the option kept so its id stays its own.
    # Filled lazily; two threads racing parse the same text to the same value, which is harmless.
    _values: dict[int, tuple[Any, Any]] = field(default_factory=dict, repr=False)

    @staticmethod
    def of(options: "ParsedOptions | Mapping[str, object]") -> "ParsedOptions":
        """The options of ``options`` as text; a None value counts as unset."""
        if isinstance(options, ParsedOptions):
            return options
        return ParsedOptions({str(k): str(v) for k, v in options.items() if v is not None})

    def get(self, option: ConfigOption[T]) -> T:
        """The parsed value of ``option`` (its default when unset); InvalidOptionError naming the
        key that was set when its value is wrong (not cached: asked again, it raises again)."""
        known = self._values.get(id(option))
        if known is not None and known[0] is option:
            return known[1]
        value = option.get(self.raw)
        self._values[id(option)] = (option, value)
        return value

    __getitem__ = get

    def fields(self, option: FieldOption[T]) -> dict[str, T]:
        """``<field>`` -> parsed value of a per-field option, for every field it is set for."""
        known = self._values.get(id(option))
        if known is None or known[0] is not option:
            known = (option, option.get_all(self.raw))
            self._values[id(option)] = known
        return dict(known[1])

    def text(self, option: ConfigOption[Any]) -> str:
        """The value of ``option`` as written (its first set key), or its default as text: for
        the few rules that use the text itself (a file name extension spelled as the user set it)."""
        key = option.key_in(self.raw)
        return str(option.default) if key is None else self.raw[key]

    def with_prefix(self, *prefixes: str) -> dict[str, str]:
        """The options of key families (``orc.``, ``file-index.``), in option order."""
        return {k: v for k, v in self.raw.items() if k.startswith(prefixes)}

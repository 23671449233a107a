"""How one option is declared and read from an option map (after Paimon's ``ConfigOption``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Generic, Mapping, TypeVar

T = TypeVar("T")

FIELDS_PREFIX = "fields."


@dataclass(frozen=True)
class ConfigOption(Generic[T]):
    """One option: its key, how its value parses, its default, and the older keys it also answers to.

    ``parse(key, raw)`` raises :class:`impl.errors.InvalidOptionError` naming ``key`` (the key
    that was actually set, which may be a fallback key) and the value.
    """

    key: str
    parse: Callable[[str, object], T]
    default: T
    description: str
    fallback_keys: tuple[str, ...] = ()

    @property
    def keys(self) -> tuple[str, ...]:
        """The key, then the fallback keys, in the order they are looked up."""
        return (self.key, *self.fallback_keys)

    def key_in(self, options: Mapping[str, object]) -> str | None:
        """The first of :attr:`keys` set in ``options``; a None value counts as unset."""
        for key in self.keys:
            if options.get(key) is not None:
                return key
        return None

    def get(self, options: Mapping[str, object]) -> T:
        """The parsed value of this option in ``options``, or the default when it is unset."""
        key = self.key_in(options)
        return self.default if key is None else self.parse(key, options[key])


@dataclass(frozen=True)
class FieldOption(Generic[T]):
    """A per-field option ``fields.<field>.<suffix>``; ``<field>`` may itself contain dots or commas."""

    suffix: str
    parse: Callable[[str, object], T]
    description: str

    def key(self, field_name: str) -> str:
        return f"{FIELDS_PREFIX}{field_name}.{self.suffix}"

    def field_of(self, key: str) -> str | None:
        """The ``<field>`` part of ``key`` if ``key`` is this option for some field, else None."""
        end = "." + self.suffix
        if not (key.startswith(FIELDS_PREFIX) and key.endswith(end)):
            return None
        return key[len(FIELDS_PREFIX):-len(end)] or None

    def get_all(self, options: Mapping[str, object]) -> dict[str, T]:
        """``<field>`` -> parsed value for every field this option is set for, in option order."""
        found: dict[str, T] = {}
        for key, value in options.items():
            name = self.field_of(key)
            if name is not None and value is not None:
                found[name] = self.parse(key, value)
        return found

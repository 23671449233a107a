"""The targets the conformance suites can drive, by name: ``impl``, ``pypaimon`` and ``paimon-java``."""

from __future__ import annotations

import importlib

from fault_injection.conformance.adapter import Target

TARGET_NAMES = ("impl", "pypaimon", "paimon-java")


class UnknownTargetError(ValueError):
    """No target of that name, or its module is not available."""


def open_target(name: str, **kw) -> Target:
    """A fresh target instance (one per OS process; the racing suites open one in each)."""
    if name == "impl":
        from fault_injection.conformance.targets.impl_target import ImplTarget
        return ImplTarget(**kw)
    if name == "pypaimon":
        try:
            module = importlib.import_module("fault_injection.conformance.targets.pypaimon_target")
        except ModuleNotFoundError as e:
            raise UnknownTargetError(
                f"the pypaimon target needs fault_injection/conformance/targets/pypaimon_target.py ({e})") from e
        return module.PypaimonTarget(**kw)
    if name == "paimon-java":
        from fault_injection.conformance.targets.paimon_java_target import PaimonJavaTarget
        return PaimonJavaTarget(**kw)
    raise UnknownTargetError(f"unknown target {name!r}: choose one of {', '.join(TARGET_NAMES)}")

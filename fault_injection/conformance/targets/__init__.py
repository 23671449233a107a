"""The targets the conformance suites can drive, by name: ``impl``, ``pypaimon``, ``pypaimon-rust`` and ``paimon-java``."""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path
from types import ModuleType

from fault_injection.conformance.adapter import Target

TARGET_NAMES = ("impl", "pypaimon", "pypaimon-rust", "paimon-java")


class UnknownTargetError(ValueError):
    """No target of that name, or its module is not available."""


def load_support_module(path: Path, name: str, missing: type[Exception]) -> ModuleType:
    """A module of ``tests/_support`` (which builds and runs a peer implementation), loaded by
    path: that directory is on pytest's path only. ``missing`` is raised when the file is absent."""
    if not path.exists():
        raise missing(f"cannot find {path}, which builds and runs the peer implementation; "
                      "run from a checkout of this repository")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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
    if name == "pypaimon-rust":
        from fault_injection.conformance.targets.pypaimon_rust_target import PypaimonRustTarget
        return PypaimonRustTarget(**kw)
    if name == "paimon-java":
        from fault_injection.conformance.targets.paimon_java_target import PaimonJavaTarget
        return PaimonJavaTarget(**kw)
    raise UnknownTargetError(f"unknown target {name!r}: choose one of {', '.join(TARGET_NAMES)}")

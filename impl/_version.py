"""The version of this package: its installed metadata, or ``pyproject.toml`` beside the
package when it runs from a checkout that was never installed."""

from __future__ import annotations

import importlib.metadata
import pathlib

DISTRIBUTION = "paimon-py-core"
_PYPROJECT = pathlib.Path(__file__).resolve().parent.parent / "pyproject.toml"


def package_version(distribution: str = DISTRIBUTION, pyproject: pathlib.Path = _PYPROJECT) -> str:
    """The installed version of ``distribution``; without an install, ``project.version`` of
    ``pyproject``; ``"0+unknown"`` (a valid PEP 440 version) when neither is there."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        pass
    import tomllib  # only a checkout that was never installed reads pyproject.toml

    try:
        return str(tomllib.loads(pyproject.read_text())["project"]["version"])
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return "0+unknown"

"""Errors of the Ray Data connector (bad arguments of its entry points)."""

from __future__ import annotations

from impl.errors import PaimonError


class RayConnectorError(PaimonError, ValueError):
    """An argument of ``impl.ray`` that cannot be used (unknown write mode, a datasink used for a
    second write, a table object that Ray workers cannot open)."""


__all__ = ["RayConnectorError"]

"""Errors of the Ray Data connector (they live in the library's error homes)."""

from impl.errors import RayConnectorError

__all__ = ["RayConnectorError"]

"""Storage access: :class:`FileIO` over any fsspec file system, and the atomic create primitive."""

from impl.fs.file_io import FileIO, FileStatus, link_if_absent, supports_atomic_create

__all__ = ["FileIO", "FileStatus", "link_if_absent", "supports_atomic_create"]

"""Storage access: :class:`FileIO` over any fsspec file system and its atomic create primitive
(``file_io``), object-store options and conditional writes (``object_store``), and the table's
directory layout and file namers (``paths``: ``TablePaths``, ``data-<uuid>-<n>`` names, whose
uuid part comes from the environment's ids)."""

from impl.fs.file_io import FileIO, FileStatus, link_if_absent, supports_atomic_create

__all__ = ["FileIO", "FileStatus", "link_if_absent", "supports_atomic_create"]

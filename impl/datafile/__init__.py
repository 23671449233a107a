"""Data files: the ``DataFileMeta`` record (``meta``) and the column statistics a writer computes
for it (``stats``)."""

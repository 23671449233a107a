"""Writes: routing rows to (partition, bucket) writers (``table_write``), append-table files
(``append_writer``), dynamic, postpone and cross-partition bucket modes, column updates by row id
(``update``), and the table commit (``table_commit``). Each takes a
:class:`impl.store.core.TableCore`."""

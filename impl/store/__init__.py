"""The table core (Paimon's ``FileStore``): :class:`TableCore` (``core``), one table view's plumbing
that every operation shares, the table's options view (``options``) and table definitions
(``schema``). Operations (``impl.read``, ``impl.write``, ``impl.maintenance``) take a core; the
facade (``impl.table``) holds one."""

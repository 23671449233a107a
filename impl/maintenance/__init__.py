"""Table maintenance: the dedicated compaction job (``compact``), orphan-file removal, rollback and
tag deletion (``cleanup``), and table-level tag operations (``tags``). Each takes a
:class:`impl.store.core.TableCore`."""

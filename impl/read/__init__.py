"""Reads: scan planning (``scan``: which files of which snapshot, cut into splits), reading splits
into Arrow (``table_read``), merge-on-read of primary-key buckets (``primary_key``), row tracking
(``row_tracking``), ``scan.fallback-branch`` (``fallback``), engine filter pushdown
(``pushdown``) and the Arrow C stream protocol (``arrow_stream``) and exact pandas conversions (``pandas_io``). Each takes a
:class:`impl.store.core.TableCore`."""

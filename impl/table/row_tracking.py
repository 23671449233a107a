"""Row tracking and data evolution at the table layer (``row-tracking.enabled``, ``data-evolution.enabled``).

Paimon 1.x gives every row of a row-tracking table a stable id: the commit assigns each new data
file a ``_FIRST_ROW_ID`` (its rows hold ``first_row_id .. first_row_id + row_count - 1``) and the
snapshot records ``nextRowId``. Data-evolution tables additionally let files hold a subset of the
columns (``_WRITE_COLS``), merged by row id on read.
"""

from __future__ import annotations

from impl.options import core_options as co
from impl.table.core import TableCore
from impl.table.errors import UnsupportedTableFeatureError


def refuse_unimplemented_write(core: TableCore) -> None:
    """UnsupportedTableFeatureError naming the option when writes into this table kind are not
    implemented: files without ``_FIRST_ROW_ID`` make Paimon Java fail on the whole table. The
    stored schema's options decide (a dynamic option cannot switch the table's kind off)."""
    stored = core.schema.options
    for option in (co.DATA_EVOLUTION_ENABLED, co.ROW_TRACKING_ENABLED):
        if option.get(stored) or option.get(core.options.raw):
            raise UnsupportedTableFeatureError(
                f"write to {core.identifier}: option {option.key!r} = true is not supported for writes yet "
                "(files would carry no first row id, which Paimon Java cannot read); reads are supported")

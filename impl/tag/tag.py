"""A tag: a named, retained copy of one snapshot (``tag/tag-<name>``), and the rules on its name.

The tag file holds the snapshot's JSON. Paimon 2.x adds two optional keys when the tag has a
retention: ``tagCreateTime`` (a Java LocalDateTime as ``[y, mo, d, h, mi, s?, nanos?]``,
trailing zeros omitted as Jackson does) and ``tagTimeRetained`` (a Java Duration as decimal
seconds). Without a retention neither key is written, so older readers keep reading the file.
"""

from __future__ import annotations

import datetime as _dt
import json
from dataclasses import dataclass

from impl.errors import CorruptMetadataError
from impl.fs.names import check_tag
from impl.snapshot.records import Snapshot

TAG_CREATE_TIME = "tagCreateTime"
TAG_TIME_RETAINED = "tagTimeRetained"

# the tag name rule, under its old name (the rule lives in impl.fs.names: Paimon's "not blank"
# plus what a file name needs)
check_tag_name = check_tag


def encode_local_datetime(ts: _dt.datetime) -> list[int]:
    """Jackson's LocalDateTime array: seconds only when seconds or nanos are non-zero, nanos only when non-zero."""
    nanos = ts.microsecond * 1000
    out = [ts.year, ts.month, ts.day, ts.hour, ts.minute]
    if ts.second or nanos:
        out.append(ts.second)
        if nanos:
            out.append(nanos)
    return out


def decode_local_datetime(value: object, path: str) -> _dt.datetime:
    if not isinstance(value, list) or not 5 <= len(value) <= 7 or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise CorruptMetadataError(path, f"key {TAG_CREATE_TIME!r} must be [y, mo, d, h, mi, s?, nanos?], found {value!r}")
    y, mo, d, h, mi, s, nanos = (list(value) + [0, 0])[:7]
    try:
        return _dt.datetime(y, mo, d, h, mi, s, nanos // 1000)
    except ValueError as e:
        raise CorruptMetadataError(path, f"key {TAG_CREATE_TIME!r}: {e}") from None


@dataclass(frozen=True)
class Tag:
    """One tag: its name, the snapshot it keeps, and its optional retention; also one row of
    Paimon's ``$tags`` system table (``tag_name``, ``snapshot_id``, ``schema_id``,
    ``commit_time``, ``record_count``, ``branches``, ``create_time``, ``time_retained``).

    ``create_time`` is a naive local time, as Java's LocalDateTime; both it and
    ``time_retained`` are None for a tag created without a retention. ``branches``: the
    branches created from the tag (they hold a copy of it), as :meth:`impl.FileStoreTable.tags`
    finds them; empty where only the tag file was read (:class:`impl.tag.TagManager`).
    """

    name: str
    snapshot: Snapshot
    create_time: _dt.datetime | None = None
    time_retained: _dt.timedelta | None = None
    branches: tuple[str, ...] = ()

    @property
    def tag_name(self) -> str:
        return self.name

    @property
    def snapshot_id(self) -> int:
        return self.snapshot.id

    @property
    def schema_id(self) -> int:
        return self.snapshot.schema_id

    @property
    def commit_time(self) -> _dt.datetime:
        """The snapshot's commit time, naive local time as Java shows it."""
        return _dt.datetime.fromtimestamp(self.snapshot.time_millis / 1000)

    @property
    def record_count(self) -> int | None:
        return self.snapshot.total_record_count

    def to_json_bytes(self) -> bytes:
        data = self.snapshot.to_json_bytes()
        if self.time_retained is None:
            return data
        obj = json.loads(data)
        if self.create_time is not None:
            obj[TAG_CREATE_TIME] = encode_local_datetime(self.create_time)
        obj[TAG_TIME_RETAINED] = self.time_retained.total_seconds()
        return json.dumps(obj, indent=2, ensure_ascii=False).encode("utf-8")

    @staticmethod
    def from_json_bytes(name: str, data: bytes, path: str) -> "Tag":
        snapshot = Snapshot.from_json_bytes(data, path)  # checks every snapshot key
        obj = json.loads(data)
        created = obj.get(TAG_CREATE_TIME)
        retained = obj.get(TAG_TIME_RETAINED)
        if retained is not None and (isinstance(retained, bool) or not isinstance(retained, (int, float))
                                     or retained < 0):
            raise CorruptMetadataError(path, f"key {TAG_TIME_RETAINED!r} must be non-negative seconds, found {retained!r}")
        return Tag(
            name=name,
            snapshot=snapshot,
            create_time=None if created is None else decode_local_datetime(created, path),
            time_retained=None if retained is None else _dt.timedelta(seconds=retained),
        )

    def is_expired(self, now: _dt.datetime) -> bool:
        """Whether the retention has run out (a tag without retention never expires)."""
        if self.time_retained is None or self.create_time is None:
            return False
        return self.create_time + self.time_retained < now


# the ``$tags`` row is the tag itself (one record, since issue 27); the old name stays
TagInfo = Tag

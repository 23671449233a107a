"""What an atomic create-if-absent of a snapshot came to, on every store that publishes by one
(S3's conditional PUT in :mod:`impl.fs.object_store`, HDFS's rename in :mod:`impl.fs.hdfs`).

>>> Publication.OURS_AFTER_RETRY.published
True
"""

from __future__ import annotations

import enum


class Publication(enum.Enum):
    """What a conditional create of a key came to."""

    CREATED = "created"  # the PUT was accepted
    OURS_AFTER_RETRY = "ours-after-retry"  # refused, but the key holds our bytes: a retry of our landed PUT
    TAKEN = "taken"  # refused: another writer holds the key

    @property
    def published(self) -> bool:
        return self is not Publication.TAKEN

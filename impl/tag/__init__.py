"""Tags: named snapshots that outlive expiration (``tag/tag-<name>``), per branch."""

from impl.tag.manager import TagManager
from impl.tag.tag import Tag, TagInfo, check_tag_name

__all__ = ["Tag", "TagInfo", "TagManager", "check_tag_name"]

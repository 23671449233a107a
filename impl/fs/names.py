"""The one rule for the names that become path components: database, table, branch and tag names.

A name reaches storage as one directory or file name (``<db>.db``, ``<table>``,
``branch/branch-<name>``, ``tag/tag-<name>``). Every entry point (the Python API, table options,
the REST server, the JDBC catalog, the CLI, the Spark connector) and every name read back from a
listing goes through a checker here, and the path builders of :mod:`impl.fs.paths` take only the
checked types (:class:`BranchName`, :class:`TagName`; :class:`DatabaseName` and
:class:`TableName` for the catalog): mypy refuses a plain ``str`` there, and the builders check
the type at run time too. Only this module makes checked names: their constructor takes a key
private to it, and unpickling a checked name checks it again.

The rule, for every kind (what Paimon Java allows, narrowed to what is a safe path component):

- a ``str``, not blank (Paimon: blank names are refused for branches and tags);
- no leading or trailing whitespace;
- at most :data:`MAX_NAME_BYTES` (200) UTF-8 bytes: the longest file a name becomes is the temp
  file of an atomic tag write, ``.tag-<name>.<32 hex>.tmp`` (42 bytes more), and POSIX file
  names end at 255 bytes;
- not ``.`` or ``..``, and no leading ``.`` (dot-files are the temp files of atomic writes);
- no ``/``, ``\\``, NUL or other control character (Unicode categories Cc, and Cs, Zl, Zp:
  surrogates cannot be stored, line separators break listings and logs);
- no Unicode look-alike of ``/`` or ``\\`` (U+2215, U+2044, U+29F8, U+FF0F, U+2571, U+2216,
  U+29F9, U+FE68, U+FF3C, U+2572): harmless on POSIX, refused so that a name never reads as a path.

``%`` is allowed: Paimon Java allows it in every kind of name (its REST client percent-encodes
names, ``%`` as ``%25``). Names are URL-decoded exactly once, where a request enters the REST
server (:func:`impl.catalog.rest.protocol.split_path`), and nothing below decodes again (fsspec and the
object-store clients take keys as given), so ``a%2Fb`` after that decode is the literal
directory ``branch-a%2Fb`` inside the table, never ``a/b``.

Per kind, Paimon's own rules on top: a new branch (``create_branch``) is not ``main``, not only
decimal digits (Paimon's ``BranchManager.validateBranch``) and has no ``$`` (it could not be
named in ``db.t$branch_<name>$<system table>``). Database and table names keep the catalog's
rules (a table name has no ``.``: :func:`impl.catalog.filesystem.parse_identifier`).

A bad name raises the typed error of its kind (:class:`impl.errors.InvalidNameError` and its
subclasses :class:`~impl.errors.InvalidIdentifierError` for databases and tables,
:class:`~impl.errors.InvalidBranchNameError`, :class:`~impl.errors.InvalidTagNameError`), with
``kind`` and ``name`` set and the name's repr (truncated) in the message. A name read from a
listing that breaks the rule is refused the same way, naming the directory: a hostile writer's
odd entry stops the operation rather than being used, or skipped while its files are deleted.
"""

from __future__ import annotations

import enum
import unicodedata
from typing import Callable, ClassVar, Final

from impl.errors import (
    InvalidBranchNameError,
    InvalidIdentifierError,
    InvalidNameError,
    InvalidTagNameError,
)


class NameKind(enum.Enum):
    DATABASE = "database"
    TABLE = "table"
    BRANCH = "branch"
    TAG = "tag"


MAX_NAME_BYTES: Final = 200
MAIN_BRANCH_TEXT: Final = "main"
# how much of a refused name an error message shows (its repr, truncated)
_SHOWN_CHARS = 60

_SEPARATORS = frozenset("/\\")
_LOOKALIKES = frozenset("\u2215\u2044\u29f8\uff0f\u2571\u2216\u29f9\ufe68\uff3c\u2572")
_CONTROL_CATEGORIES = frozenset({"Cc", "Cs", "Zl", "Zp"})

# the key only this module holds: a checked name is made by the checkers below, nowhere else
_MINT = object()


class CheckedName(str):
    """A name that passed the rule of its kind. Made only by this module's checkers."""

    __slots__ = ()
    KIND: ClassVar[NameKind]

    def __new__(cls, value: str, key: object = None):
        if key is not _MINT:
            raise TypeError(f"a {cls.__name__} is made by impl.fs.names' checkers only "
                            f"(check_{cls.KIND.value}), not from {value!r}")
        return super().__new__(cls, value)

    def __reduce__(self):
        # pickling (Spark, Ray, copy) goes through the checker again, never around it
        return (_CHECKERS[self.KIND], (str(self),))


class DatabaseName(CheckedName):
    __slots__ = ()
    KIND = NameKind.DATABASE


class TableName(CheckedName):
    __slots__ = ()
    KIND = NameKind.TABLE


class BranchName(CheckedName):
    __slots__ = ()
    KIND = NameKind.BRANCH


class TagName(CheckedName):
    __slots__ = ()
    KIND = NameKind.TAG


MAIN_BRANCH: Final = BranchName(MAIN_BRANCH_TEXT, _MINT)

_ERRORS: dict[NameKind, type[InvalidNameError]] = {
    NameKind.DATABASE: InvalidIdentifierError, NameKind.TABLE: InvalidIdentifierError,
    NameKind.BRANCH: InvalidBranchNameError, NameKind.TAG: InvalidTagNameError,
}


def shown(name: object) -> str:
    """``repr(name)``, cut to a bounded length for error messages."""
    text = repr(name)
    return text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + "...'"


def path_problem(name: str) -> str | None:
    """Why ``name`` cannot be a path component (see the module), or None when it can. Bounded
    work: a name longer than the limit is refused before any per-character look."""
    if not name.strip():
        return "is blank"
    if len(name) > MAX_NAME_BYTES or len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
        return f"is longer than {MAX_NAME_BYTES} UTF-8 bytes"
    if name != name.strip():
        return "has leading or trailing whitespace"
    if name in (".", ".."):
        return "is a relative path ('.' or '..')"
    if name.startswith("."):
        return "starts with '.' (dot-files are the temp files of atomic writes)"
    for ch in name:
        if ch in _SEPARATORS:
            return f"contains the path separator {ch!r}"
        if ch in _LOOKALIKES:
            return f"contains {ch!r} (U+{ord(ch):04X}), which looks like a path separator"
        if unicodedata.category(ch) in _CONTROL_CATEGORIES:
            return f"contains the control character U+{ord(ch):04X}"
    return None


def _refuse(kind: NameKind, name: object, problem: str, where: str | None) -> InvalidNameError:
    source = f" (listed in {where})" if where else ""
    return _ERRORS[kind](f"{kind.value} name {shown(name)}{source} {problem}", kind=kind.value, name=name)


def _checked(cls: type[CheckedName], name: object, where: str | None) -> str:
    """``name`` as a str when it passes the common rule, else the kind's error."""
    if not isinstance(name, str):
        raise _refuse(cls.KIND, name, f"is a {type(name).__name__}, not a string", where)
    problem = path_problem(name)
    if problem is not None:
        raise _refuse(cls.KIND, name, problem, where)
    return str(name)


def check_database(name: object, where: str | None = None) -> DatabaseName:
    """A database name (InvalidIdentifierError if it breaks the rule)."""
    return DatabaseName(_checked(DatabaseName, name, where), _MINT)


def check_table(name: object, where: str | None = None) -> TableName:
    """A table name (InvalidIdentifierError if it breaks the rule)."""
    return TableName(_checked(TableName, name, where), _MINT)


def check_branch(name: object, where: str | None = None) -> BranchName:
    """The name of a branch that may exist (``main`` included): for opening, reading, deleting
    and fast-forwarding. ``where``: the directory a listed name came from (for the message)."""
    if isinstance(name, BranchName):
        return name
    return BranchName(_checked(BranchName, name, where), _MINT)


def check_new_branch(name: object) -> BranchName:
    """The name of a branch to create: :func:`check_branch` plus Paimon's rules (not ``main``,
    not only digits) and no ``$`` (see the module)."""
    branch = check_branch(name)
    if branch == MAIN_BRANCH:
        raise _refuse(NameKind.BRANCH, name, "is the default branch and cannot be created", None)
    if branch.isdecimal():  # Java's Character.isDigit: decimal digits of any script
        raise _refuse(NameKind.BRANCH, name, "cannot be a pure numeric string", None)
    if "$" in branch:
        raise _refuse(NameKind.BRANCH, name, "contains '$', which would not round-trip in 'db.table$branch_<name>'",
                      None)
    return branch


def check_tag(name: object, where: str | None = None) -> TagName:
    """A tag name (InvalidTagNameError if it breaks the rule)."""
    if isinstance(name, TagName):
        return name
    return TagName(_checked(TagName, name, where), _MINT)


def parse_branch_option(key: str, value: object) -> BranchName:
    """A table option naming a branch (``branch``, ``scan.fallback-branch``): blank means
    ``main`` (Paimon's BranchManager.normalizeBranch); otherwise the name must pass
    :func:`check_branch` (InvalidBranchNameError naming the option)."""
    text = str(value)
    if not text.strip():
        return MAIN_BRANCH
    try:
        return check_branch(text)
    except InvalidNameError as e:
        raise type(e)(f"option {key!r}: {e}", kind=e.kind, name=e.name) from None


def parse_tag_option(key: str, value: object) -> TagName | None:
    """A table option naming a tag (``scan.tag-name``): empty means unset; otherwise the name
    must pass :func:`check_tag` (InvalidTagNameError naming the option)."""
    text = str(value)
    if not text:
        return None
    try:
        return check_tag(text)
    except InvalidNameError as e:
        raise type(e)(f"option {key!r}: {e}", kind=e.kind, name=e.name) from None


def parse_optional_branch_option(key: str, value: object) -> BranchName | None:
    """A table option naming a branch that may be unset (``scan.fallback-branch``): empty means
    unset; otherwise the name must pass :func:`check_branch` (InvalidBranchNameError naming the
    option)."""
    text = str(value)
    if not text.strip():
        return None
    return parse_branch_option(key, text)


def require(cls: type[CheckedName], value: object) -> None:
    """Run-time guard of the path builders: ``value`` was made by the checker of ``cls``'s kind
    (mypy checks the same statically). A plain str here is a bug of the caller: TypeError."""
    if not isinstance(value, cls):
        raise TypeError(f"expected a {cls.__name__} (checked by impl.fs.names.check_{cls.KIND.value}), "
                        f"got {type(value).__name__} {shown(value)}")


_CHECKERS: dict[NameKind, Callable[[str], CheckedName]] = {
    NameKind.DATABASE: check_database, NameKind.TABLE: check_table,
    NameKind.BRANCH: check_branch, NameKind.TAG: check_tag,
}

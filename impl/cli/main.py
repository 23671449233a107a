"""``paimon-py``: the command line (argparse), its options and exit codes.

Exit codes: 0 ok; 1 a user error (impl's typed errors: a table that does not exist, an unknown
column, a bad filter, a refused SQL query ...), printed as ``error: <message>`` without a
traceback; 2 a usage error (argparse's); 3 an unexpected internal error (the traceback only
with ``--debug``).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import traceback
from typing import Mapping, Sequence

from impl._cli import HelpFormatter
from impl.cli import commands as c
from impl.cli.output import choose_style, emit
from impl.errors import CatalogConnectionError, PaimonError

PROG = "paimon-py"
WAREHOUSE_ENV = "PAIMON_WAREHOUSE"

EXIT_OK = 0
EXIT_USER_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3

DESCRIPTION = f"""\
Look at and maintain Apache Paimon tables of any catalog: a filesystem warehouse (local or object
store), a JDBC catalog or a REST catalog server.

Tables are named db.table; a branch db.table$branch_dev. The warehouse comes from --warehouse or
the {WAREHOUSE_ENV} environment variable; catalog and storage options (metastore=jdbc, uri=...,
token=..., fs.s3.endpoint=...) from --option KEY=VALUE, repeated. A JDBC catalog:
--warehouse jdbc:sqlite:FILE -o warehouse=PATH; a REST one: --warehouse NAME -o metastore=rest
-o uri=http://HOST:PORT -o token=TOKEN.

exit codes: 0 ok, 1 user error (no such table, unknown column, bad filter ...), 2 usage error,
3 internal error (--debug prints its traceback)"""


def _option(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE")
    return key.strip(), value


def _non_negative(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is negative")
    return n


def _add_common(p: argparse.ArgumentParser, sub: bool) -> None:
    """The options every command takes, before or after the command name (after it, a
    subcommand's value wins; its defaults are suppressed so they do not overwrite the main one's)."""
    d = argparse.SUPPRESS if sub else None
    p.add_argument("--warehouse", "-w", metavar="PATH_OR_URL", default=d,
                   help=f"the warehouse (default: ${WAREHOUSE_ENV})")
    p.add_argument("--option", "-o", metavar="KEY=VALUE", type=_option, action="append",
                   dest="sub_options" if sub else "options", default=d,
                   help="a catalog / storage option (fs.s3.endpoint=..., fs.s3.region=...); repeat for several")
    p.add_argument("--json", action="store_true", default=argparse.SUPPRESS if sub else False,
                   help="print one JSON document instead of text tables")
    p.add_argument("--style", choices=("auto", "plain", "rich"), default=d,
                   help="text tables: rich ones when stdout is a terminal and rich is installed (auto), or plain")
    p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS if sub else False,
                   help="print the traceback of an internal error")


def _filters(p: argparse.ArgumentParser, default_limit: int | None) -> None:
    p.add_argument("--where", metavar="FILTER",
                   help="rows to keep: comparisons, IN, BETWEEN, IS [NOT] NULL joined by AND / OR, "
                        "e.g. \"id = 3 and name = 'x'\"")
    p.add_argument("--columns", metavar="A,B", help="the columns to print, in this order")
    p.add_argument("--limit", type=_non_negative, default=default_limit, metavar="N",
                   help="print at most N rows" + (" (0: all)" if default_limit else ""))


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=PROG, description=DESCRIPTION, formatter_class=HelpFormatter)
    _add_common(ap, sub=False)
    subs = ap.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def add(name: str, help: str, run: c.Command, aliases: Sequence[str] = ()) -> argparse.ArgumentParser:
        p = subs.add_parser(name, help=help, description=help, aliases=list(aliases), formatter_class=HelpFormatter)
        _add_common(p, sub=True)
        p.set_defaults(run=run)
        return p

    add("databases", "list the databases", c.cmd_databases, ["list-databases"])
    p = add("tables", "list the tables (of one database, or of all)", c.cmd_tables, ["list-tables"])
    p.add_argument("database", nargs="?")
    p = add("describe", "a table's columns, keys, partition keys, bucketing and options", c.cmd_describe)
    p.add_argument("table", metavar="DB.TABLE")
    for name, what in c.SYSTEM_TABLE_COMMANDS.items():
        p = add(name, f"show {what}", c.show_system_table(name))
        p.add_argument("table", metavar="DB.TABLE")
        _filters(p, None)
    p = add("read", "the first rows of a table (merged: one row per key), filtered and projected", c.cmd_read,
            ["head"])
    p.add_argument("table", metavar="DB.TABLE")
    _filters(p, c.DEFAULT_READ_LIMIT)
    travel = p.add_mutually_exclusive_group()
    travel.add_argument("--snapshot", type=_non_negative, metavar="ID", help="read this snapshot (time travel)")
    travel.add_argument("--tag", metavar="NAME", help="read this tag's snapshot")
    travel.add_argument("--version", metavar="TAG_OR_ID", dest="scan_version",
                        help="read this version (a tag of that name, else the snapshot of that id: scan.version)")

    p = add("compact", "compact the latest snapshot into one COMPACT snapshot", c.cmd_compact)
    p.add_argument("table", metavar="DB.TABLE")
    p.add_argument("--full", action="store_true", help="full compaction (one sorted run per bucket)")
    p.add_argument("--spark", action="store_true", help="run it as a Spark job (impl.spark.compact; the spark extra)")

    p = add("expire-snapshots", "expire old snapshots (Paimon's expire_snapshots; unset limits come from the "
            "table's snapshot.* options)", c.cmd_expire_snapshots, ["expire_snapshots"])
    p.add_argument("table", metavar="DB.TABLE")
    p.add_argument("--retain-max", "--retain_max", type=_non_negative, metavar="N",
                   help="keep at most N snapshots (snapshot.num-retained.max)")
    p.add_argument("--retain-min", "--retain_min", type=_non_negative, metavar="N",
                   help="keep at least N snapshots (snapshot.num-retained.min)")
    p.add_argument("--older-than", "--older_than", metavar="TIME",
                   help="expire snapshots committed before TIME: a local timestamp '2024-01-01 12:00:00' or a "
                        "duration before now '1 h' (instead of snapshot.time-retained)")
    p.add_argument("--max-deletes", "--max_deletes", type=_non_negative, metavar="N",
                   help="expire at most N snapshots (snapshot.expire.limit)")

    p = add("remove-orphan-files", "delete files no snapshot, tag or branch references (Paimon's "
            "remove_orphan_files)", c.cmd_remove_orphan_files, ["remove_orphan_files"])
    p.add_argument("table", metavar="DB.TABLE")
    p.add_argument("--older-than", "--older_than", metavar="TIME",
                   help="only files last modified before TIME: '2024-01-01 12:00:00' or '1 h' (default: 1 d)")
    p.add_argument("--dry-run", "--dry_run", action="store_true", help="list them, delete nothing")

    p = add("rollback-to", "make a snapshot or a tag the latest snapshot (newer snapshots and tags go)",
            c.cmd_rollback_to, ["rollback_to", "rollback"])
    p.add_argument("table", metavar="DB.TABLE")
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("--snapshot", type=_non_negative, metavar="ID")
    target.add_argument("--tag", metavar="NAME")

    p = add("doctor", "check every metadata file the table's snapshots, tags and hints refer to; name each "
            "damaged one and what it breaks", c.cmd_doctor)
    p.add_argument("table", metavar="DB.TABLE")

    p = add("repair", "move a table whose latest snapshot cannot be read back to its newest readable snapshot "
            "(damaged snapshot files are set aside, no data file is deleted)", c.cmd_repair)
    p.add_argument("table", metavar="DB.TABLE")
    p.add_argument("--dry-run", "--dry_run", action="store_true", help="say what would be set aside, change nothing")

    p = add("iceberg", "the table's Iceberg view (metadata.iceberg.storage): metadata file, current Iceberg "
            "snapshot and the Paimon snapshot it mirrors, schema with field ids, partition spec, history",
            c.cmd_iceberg)
    p.add_argument("table", metavar="DB.TABLE")
    p.add_argument("--sync", action="store_true",
                   help="first bring the Iceberg metadata level with the newest Paimon snapshot (after a crash "
                        "between the Paimon commit and the Iceberg write)")

    p = add("create-tag", "tag a snapshot (default: the latest)", c.cmd_create_tag, ["create_tag"])
    p.add_argument("table", metavar="DB.TABLE")
    p.add_argument("tag_name", metavar="TAG")
    p.add_argument("--snapshot", type=_non_negative, metavar="ID")
    p.add_argument("--time-retained", "--time_retained", metavar="DURATION", help="e.g. '7 d'")

    p = add("delete-tag", "delete a tag and the files only it kept", c.cmd_delete_tag, ["delete_tag"])
    p.add_argument("table", metavar="DB.TABLE")
    p.add_argument("tag_name", metavar="TAG")

    p = add("sql", "run a SQL query through DuckDB over the tables it names as db.table "
            "(system tables as db.\"t$snapshots\"; the duckdb extra)", c.cmd_sql)
    p.add_argument("query", metavar="QUERY")
    return ap


def _report(code: int, kind: str, message: str, as_json: bool, *, usage: str | None = None) -> int:
    """Print an error to stderr: ``error: <message>`` (after the usage, for a usage error), or
    with ``--json`` one JSON document ``{"error": {"type", "message", "exit_code"}}`` so that a
    script reading JSON gets JSON in failure too; ``code``."""
    if as_json:
        print(json.dumps({"error": {"type": kind, "message": message, "exit_code": code}}, indent=2),
              file=sys.stderr)
    elif usage is not None:
        print(f"{usage.rstrip()}\n{PROG}: error: {message}", file=sys.stderr)
    else:
        print(f"error: {message}", file=sys.stderr)
    return code


def _usage_error(ap: argparse.ArgumentParser, message: str, as_json: bool) -> int:
    return _report(EXIT_USAGE, "UsageError", message, as_json, usage=ap.format_usage())


def _parse(ap: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace | int:
    """The parsed arguments, or argparse's exit code (0 for --help; 2 for a usage error, reported
    as JSON when ``--json`` is among ``argv``: argparse stops before it has parsed it)."""
    as_json = "--json" in argv
    captured = io.StringIO()
    try:
        with contextlib.redirect_stderr(captured) if as_json else contextlib.nullcontext():
            return ap.parse_args(argv)
    except SystemExit as e:  # argparse: --help (0) or a usage error (2)
        code = e.code if isinstance(e.code, int) else EXIT_USAGE
        if as_json and code != EXIT_OK:
            lines = captured.getvalue().strip().splitlines()
            message = lines[-1].split(": error: ", 1)[-1] if lines else "usage error"
            return _report(code, "UsageError", message, True)
        return code


def _refuse_missing_sqlite(warehouse: str, options: Mapping[str, str]) -> None:
    """The commands create nothing: a mistyped ``uri=jdbc:sqlite:FILE`` would otherwise create an
    empty catalog database and list no tables. CatalogConnectionError when the file is missing."""
    metastore = str(options.get("metastore", "")).strip().lower()
    uri = options.get("uri") if metastore == "jdbc" else warehouse if warehouse.startswith("jdbc:") else None
    if uri is None:
        return
    # imported here, not at the top: the catalog package brings in most of impl, which --help does not need
    from impl.catalog.jdbc.uri import parse_jdbc_uri, sqlite_file

    parsed = parse_jdbc_uri(uri)
    path = sqlite_file(parsed)
    if path is not None and not os.path.exists(path):
        raise CatalogConnectionError(parsed.shown, f"the SQLite database {path!r} does not exist ({PROG} creates "
                                                   f"no catalog; impl.Catalog({parsed.shown!r}, warehouse=...) does)")


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``paimon-py`` with ``argv`` (default: the process's arguments); the exit code."""
    ap = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parse(ap, argv)
    if isinstance(args, int):
        return args
    as_json = bool(args.json)
    warehouse = getattr(args, "warehouse", None) or os.environ.get(WAREHOUSE_ENV)
    if not warehouse:
        return _usage_error(ap, f"no warehouse: give --warehouse PATH_OR_URL or set {WAREHOUSE_ENV}", as_json)
    options = dict((args.options or []) + getattr(args, "sub_options", []))
    debug = args.debug
    try:
        style = choose_style(args.style or "auto", sys.stdout)
        # imported here, not at the top: it brings in most of impl, which --help does not need
        from impl.catalog import open_catalog

        _refuse_missing_sqlite(warehouse, options)
        with open_catalog(warehouse, options=options) as catalog:
            # the commands create nothing: a mistyped warehouse would otherwise list no databases
            catalog.check_warehouse()
            ctx = c.Context(catalog, options, show_progress=not as_json and sys.stderr.isatty())
            result = args.run(ctx, args)
            emit(result, as_json=as_json, style=style)
    except PaimonError as e:  # MissingExtraError included: it names the extra to install
        return _report(EXIT_USER_ERROR, type(e).__name__, str(e), as_json)
    except BrokenPipeError:  # `paimon-py ... | head`
        sys.stderr.close()
        return EXIT_OK
    except KeyboardInterrupt:
        return 130
    except Exception as e:
        if debug:
            traceback.print_exc()
        return _report(EXIT_INTERNAL, "InternalError", f"internal error: {type(e).__name__}: {e}"
                       + ("" if debug else " (run with --debug for the traceback)"), as_json)
    return EXIT_OK


__all__ = ["main", "build_parser", "EXIT_OK", "EXIT_USER_ERROR", "EXIT_USAGE", "EXIT_INTERNAL", "WAREHOUSE_ENV"]

"""``python -m impl.rest --warehouse PATH_OR_S3_URL [--host H] [--port P] [--token-file F]
[--options-file F] [--tls-cert F --tls-key F] [--no-auth]``: serve a warehouse as a Paimon REST
catalog until interrupted (Ctrl-C) or stopped (SIGTERM): no new connections, the requests in
flight answered and logged, exit 0.

Secrets never need the command line (where any local user reads them in ``/proc/PID/cmdline``):
the bearer token comes from ``--token-file`` or ``$PAIMON_REST_TOKEN``, storage options (S3 keys)
from ``--options-file`` (``KEY=VALUE`` lines) or ``$PAIMON_REST_OPTIONS_FILE``. ``--token`` and
``-o KEY=VALUE`` still work, with a warning when they carry a secret. Without a token the server
refuses to start unless ``--no-auth`` asks for a server anyone can use. Requests are logged on
stderr (logger ``impl.rest.access``; ``--quiet`` turns it off).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys

from impl.catalog.rest.protocol import DEFAULT_PREFIX
from impl.environment import PRODUCTION
from impl.rest.credentials import CredentialVending
from impl.rest.http_server import ServerLimits
from impl.rest.server import RESTCatalogServer

TOKEN_ENV = "PAIMON_REST_TOKEN"
OPTIONS_FILE_ENV = "PAIMON_REST_OPTIONS_FILE"
# option names whose values are secrets: named on the command line, they draw a warning
SECRET_WORDS = ("secret", "password", "token", "credential")
# a service manager's stop and Ctrl-C: both end the server gracefully, noticed within the poll
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
STOP_POLL_SECONDS = 0.2


def parse_options_file(text: str, source: str) -> dict[str, str]:
    """``KEY=VALUE`` lines (blank lines and ``#`` comments skipped); ValueError naming the line."""
    options = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"{source} line {number} is not KEY=VALUE")
        options[key.strip()] = value.strip()
    return options


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m impl.rest", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--warehouse", required=True, help="the warehouse: a local path or an s3:// URL")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8181, help="0 takes a free port (printed on start)")
    parser.add_argument("--token-file", help=f"a file holding the bearer token clients must send (or ${TOKEN_ENV})")
    parser.add_argument("--token", help="the bearer token on the command line (visible to every local user: "
                                        "prefer --token-file)")
    parser.add_argument("--no-auth", action="store_true", help="serve without a token: anyone who reaches the "
                                                               "port may read, change and drop every table")
    parser.add_argument("--prefix", default=DEFAULT_PREFIX)
    parser.add_argument("--options-file", default=os.environ.get(OPTIONS_FILE_ENV),
                        help=f"storage options of the warehouse, KEY=VALUE lines (default: ${OPTIONS_FILE_ENV})")
    parser.add_argument("-o", "--option", action="append", default=[], metavar="KEY=VALUE",
                        help="a storage option (fs.s3.endpoint=...); keep keys in --options-file")
    parser.add_argument("--tls-cert", help="serve HTTPS with this PEM certificate (chain)")
    parser.add_argument("--tls-key", help="the certificate's PEM private key (when not in --tls-cert)")
    parser.add_argument("--max-body-bytes", type=int, default=ServerLimits.max_body_bytes)
    parser.add_argument("--max-connections", type=int, default=ServerLimits.max_connections)
    parser.add_argument("--vend-role-arn", help="hand out per-table S3 credentials from STS AssumeRole of this role "
                                                "(default: data tokens are empty)")
    parser.add_argument("--sts-endpoint", help="the STS endpoint for --vend-role-arn (default: AWS's)")
    parser.add_argument("--quiet", action="store_true", help="no access log")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("impl.rest.access").setLevel(logging.WARNING if args.quiet else logging.INFO)
    warn = logging.getLogger("impl.rest").warning

    options: dict[str, str] = {}
    if args.options_file:
        try:
            options.update(parse_options_file(_read(args.options_file), args.options_file))
        except (OSError, ValueError) as e:
            parser.error(f"--options-file: {e}")
    for item in args.option:
        key, sep, value = item.partition("=")
        if not sep or not key:
            parser.error(f"--option {item!r} is not KEY=VALUE")
        if any(word in key.lower() for word in SECRET_WORDS):
            warn("option %r on the command line is visible to every local user; put it in --options-file", key)
        options[key] = value

    token = None
    if args.token is not None:
        warn("--token on the command line is visible to every local user; use --token-file or $%s", TOKEN_ENV)
        token = args.token
    elif args.token_file:
        try:
            token = _read(args.token_file).strip()
        except OSError as e:
            parser.error(f"--token-file: {e}")
    else:
        token = os.environ.get(TOKEN_ENV) or None
    if not token and not args.no_auth:
        parser.error(f"no bearer token: give --token-file or ${TOKEN_ENV}, or --no-auth to serve without one")
    if token and args.no_auth:
        parser.error("--no-auth with a token: choose one")

    vending = CredentialVending(args.vend_role_arn, args.sts_endpoint) if args.vend_role_arn else None
    limits = ServerLimits(max_body_bytes=args.max_body_bytes, max_connections=args.max_connections)
    server = RESTCatalogServer(args.warehouse, host=args.host, port=args.port, options=options, token=token,
                               prefix=args.prefix, no_auth=args.no_auth, limits=limits, certfile=args.tls_cert,
                               keyfile=args.tls_key, vending=vending)
    if args.no_auth:
        warn("serving %s WITHOUT authentication (--no-auth)", args.warehouse)
    print(f"serving {args.warehouse} as a Paimon REST catalog at {server.uri}", flush=True)
    # A stop signal only records itself: an exception raised from a handler lands wherever the
    # main thread is, and raised inside serve_forever's dispatch of a connection (starting its
    # thread, slow on a loaded machine) socketserver swallowed it as a request's error and served
    # on (the lost SIGTERM of loaded runs). The loop runs in a thread of its own, so stop()'s
    # shutdown() never waits for the loop of the thread calling it; the main thread polls,
    # because the kernel may hand the signal to any thread (pyarrow's among them) and only a
    # poll, not a wait, sees the handler's mark then.
    stop_signals: list[int] = []
    for signum in STOP_SIGNALS:
        signal.signal(signum, lambda received, _frame: stop_signals.append(received))
    server.start()
    try:
        while not stop_signals:
            PRODUCTION.sleep(STOP_POLL_SECONDS)
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``python -m impl.rest --warehouse PATH_OR_S3_URL [--host H] [--port P] [--token T] [-o KEY=VALUE]``:
serve a warehouse as a Paimon REST catalog until interrupted."""

from __future__ import annotations

import argparse
import os
import sys

from impl.rest.protocol import DEFAULT_PREFIX
from impl.rest.server import RESTCatalogServer

TOKEN_ENV = "PAIMON_REST_TOKEN"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m impl.rest", description=__doc__)
    parser.add_argument("--warehouse", required=True, help="the warehouse: a local path or an s3:// URL")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8181, help="0 takes a free port (printed on start)")
    parser.add_argument("--token", default=os.environ.get(TOKEN_ENV),
                        help=f"the bearer token clients must send (default: ${TOKEN_ENV}; none: no check)")
    parser.add_argument("--prefix", default=DEFAULT_PREFIX)
    parser.add_argument("-o", "--option", action="append", default=[], metavar="KEY=VALUE",
                        help="a storage option of the warehouse (fs.s3.endpoint=..., s3.access-key=...)")
    args = parser.parse_args(argv)
    options = {}
    for item in args.option:
        key, sep, value = item.partition("=")
        if not sep or not key:
            parser.error(f"--option {item!r} is not KEY=VALUE")
        options[key] = value
    server = RESTCatalogServer(args.warehouse, host=args.host, port=args.port, options=options, token=args.token,
                               prefix=args.prefix)
    print(f"serving {args.warehouse} as a Paimon REST catalog at {server.uri}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())

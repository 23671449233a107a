"""``python -m simulation --embedded-s3``: a throwaway S3 server on 127.0.0.1 for a self-contained demo.

moto's ``ThreadedMotoServer`` (a real HTTP endpoint that enforces ``If-None-Match: *`` on PUT, so
snapshots are published exactly as on AWS S3; its writes are serialized here so that a racing
conditional PUT has one winner, as on S3) runs in a thread of the driver on a free port; one
fresh bucket is created and the job runs against ``s3://<bucket>/warehouse``. The Spark Python
workers reach it over HTTP through the storage options like any other store. Everything it
holds is in memory and goes away with the process.

moto's server and s3fs come with the ``s3-server`` extra: ``pip install -e ".[s3-server]"``.
"""

from __future__ import annotations

import logging
import socket
import threading
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from impl._optional import require

# moto accepts any credentials; these only make the requests signed as on a real store
ACCESS_KEY = "embedded-access-key"
SECRET_KEY = "embedded-secret-key"
REGION = "us-east-1"


@dataclass(frozen=True)
class EmbeddedStore:
    """Where the embedded server listens, the bucket it made, and the options that reach it."""

    endpoint: str
    bucket: str

    @property
    def warehouse(self) -> str:
        return f"s3://{self.bucket}/warehouse"

    def options(self) -> dict[str, str]:
        return {"fs.s3.endpoint": self.endpoint, "fs.s3.accessKeyId": ACCESS_KEY,
                "fs.s3.accessKeySecret": SECRET_KEY, "fs.s3.region": REGION}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# S3 applies a write and its precondition atomically; moto's server checks ``If-None-Match`` and
# then stores in two steps, so two racing threads of the server could both see "absent" and both
# win. Every request that changes a bucket runs alone; reads still run side by side.
_MUTATING_METHODS = frozenset({"PUT", "POST", "DELETE"})


def serialize_writes(app: Callable[..., Iterable[bytes]]) -> Callable[..., Iterable[bytes]]:
    """A WSGI middleware that runs ``app`` for PUT / POST / DELETE requests under one lock.

    The response body is drained inside the lock, since a WSGI app may do its work lazily.
    """
    lock = threading.Lock()

    def wsgi(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("REQUEST_METHOD") not in _MUTATING_METHODS:
            return app(environ, start_response)
        with lock:
            body = app(environ, start_response)
            try:
                return [b"".join(body)]
            finally:
                close = getattr(body, "close", None)
                if close is not None:
                    close()

    return wsgi


def _threaded_server(ip_address: str, port: int) -> Any:
    """moto's ThreadedMotoServer whose app serializes writes (see ``serialize_writes``)."""
    server_module = require("moto.server", "the embedded S3 server (--embedded-s3)", extra="s3-server")
    from moto.moto_server.werkzeug_app import MotoRequestHandler, create_backend_app
    from werkzeug.serving import make_server

    class SerializedMotoServer(server_module.ThreadedMotoServer):  # type: ignore[name-defined]
        # ThreadedMotoServer._server_entry with the app wrapped; the rest of the class is moto's
        def _server_entry(self) -> None:
            # S3 only: moto's DomainDispatcherApplication would find the service of every request
            # by matching its host against every backend's URL patterns, twice (11 % of a py-spy
            # profile of the S3 crash-point test, about a third of the server's samples); the S3
            # app it would pick is this one
            app = serialize_writes(create_backend_app("s3"))
            self._server = make_server(self._ip_address, self._port, app, True,
                                       request_handler=MotoRequestHandler)
            self._server_ready_event.set()
            self._server.serve_forever()

    return SerializedMotoServer(ip_address=ip_address, port=port, verbose=False)


class EmbeddedS3:
    """Start with :meth:`start` (returns the :class:`EmbeddedStore`), end with :meth:`stop`."""

    def __init__(self) -> None:
        # MissingExtraError (naming the s3-server extra) when moto's server or s3fs is missing
        require("s3fs", "the embedded S3 server (--embedded-s3)", extra="s3-server")
        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one log line per request otherwise
        self._server = _threaded_server("127.0.0.1", free_port())
        self._started = False

    def start(self) -> EmbeddedStore:
        from impl.fs.object_store import S3Config

        self._server.start()
        self._started = True
        host, port = self._server.get_host_and_port()
        store = EmbeddedStore(f"http://{host}:{port}", f"paimon-sim-{uuid.uuid4().hex[:12]}")
        # CreateBucket without a LocationConstraint (s3fs's mkdir sends one, which us-east-1 refuses)
        S3Config.from_options(store.options()).filesystem().call_s3("create_bucket", Bucket=store.bucket)
        return store

    def stop(self) -> None:
        if self._started:
            self._started = False
            self._server.stop()


__all__ = ["EmbeddedS3", "EmbeddedStore"]

"""``python -m simulation --embedded-s3``: a throwaway S3 server on 127.0.0.1 for a self-contained demo.

moto's ``ThreadedMotoServer`` (a real HTTP endpoint that enforces ``If-None-Match: *`` on PUT, so
snapshots are published exactly as on AWS S3) runs in a thread of the driver on a free port; one
fresh bucket is created and the job runs against ``s3://<bucket>/warehouse``. The Spark Python
workers reach it over HTTP through the storage options like any other store. Everything it
holds is in memory and goes away with the process.

moto's server and s3fs come with the ``s3-server`` extra: ``pip install -e ".[s3-server]"``.
"""

from __future__ import annotations

import logging
import socket
import uuid
from dataclasses import dataclass

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


class EmbeddedS3:
    """Start with :meth:`start` (returns the :class:`EmbeddedStore`), end with :meth:`stop`."""

    def __init__(self) -> None:
        # MissingExtraError (naming the s3-server extra) when moto's server or s3fs is missing
        ThreadedMotoServer = require("moto.server", "the embedded S3 server (--embedded-s3)",
                                     extra="s3-server").ThreadedMotoServer
        require("s3fs", "the embedded S3 server (--embedded-s3)", extra="s3-server")
        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one log line per request otherwise
        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=free_port(), verbose=False)
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

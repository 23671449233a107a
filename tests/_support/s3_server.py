"""A real S3 endpoint on 127.0.0.1 for tests: moto's threaded server on a free port.

One server per pytest(-xdist) worker process (session fixture ``s3_server`` in the root
conftest); each test takes a fresh bucket from it, so tests never see each other's keys. The
server enforces ``If-None-Match: *`` on PUT (tests/s3/test_s3_server.py proves it).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from simulation.embedded_s3 import EmbeddedS3

ACCESS_KEY = "paimon-test-key"
SECRET_KEY = "paimon-test-secret"
REGION = "us-east-1"


@dataclass(frozen=True)
class S3Endpoint:
    """An S3 endpoint and the options that reach it, with Paimon's (pypaimon's) option names."""

    endpoint: str

    def options(self, endpoint: str | None = None) -> dict[str, str]:
        return {
            "fs.s3.endpoint": endpoint or self.endpoint,
            "fs.s3.accessKeyId": ACCESS_KEY,
            "fs.s3.accessKeySecret": SECRET_KEY,
            "fs.s3.region": REGION,
        }

    def client(self, endpoint: str | None = None):
        import boto3

        return boto3.client("s3", endpoint_url=endpoint or self.endpoint, aws_access_key_id=ACCESS_KEY,
                            aws_secret_access_key=SECRET_KEY, region_name=REGION)

    def new_bucket(self, prefix: str = "t") -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:16]}"
        self.client().create_bucket(Bucket=name)
        return name


class S3Server:
    """moto's ThreadedMotoServer on 127.0.0.1, started the way the main job's ``--embedded-s3``
    starts it (simulation/embedded_s3.py)."""

    def __init__(self) -> None:
        self._embedded = EmbeddedS3()

    def start(self) -> S3Endpoint:
        return S3Endpoint(self._embedded.start().endpoint)

    def stop(self) -> None:
        self._embedded.stop()

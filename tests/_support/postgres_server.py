"""A real PostgreSQL server on 127.0.0.1 for the JDBC catalog tests, from the binaries the
``pgserver`` wheel ships (the test extra installs it): initdb with a password (scram-sha-256),
``postgres`` listening on a free port, stopped (fast shutdown) and removed at the end.

PostgreSQL refuses to run as root: under root the server runs as ``nobody``.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

USER = "paimon"
PASSWORD = "paimon-secret"
DATABASE = "postgres"
START_TIMEOUT_SECONDS = 30.0


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL binaries here (pgserver not installed) or the server did not start."""


@dataclass(frozen=True)
class PostgresServer:
    host: str
    port: int

    @property
    def jdbc_uri(self) -> str:
        return f"jdbc:postgresql://{self.host}:{self.port}/{DATABASE}"


def _bin_dir() -> Path:
    spec = importlib.util.find_spec("pgserver")
    if spec is None or not spec.submodule_search_locations:
        raise PostgresUnavailable("the pgserver wheel (PostgreSQL binaries) is not installed: pip install -e '.[test]'")
    install = Path(next(iter(spec.submodule_search_locations))) / "pginstall"
    if not (install / "bin" / "postgres").exists():
        raise PostgresUnavailable(f"no postgres binary under {install}")
    if os.geteuid() == 0 and not all(p.stat().st_mode & 0o001 for p in install.parents):
        # the server user (nobody) cannot reach the venv (under /root, say): a copy it can
        # (the binaries find their libraries at $ORIGIN/../../../pgserver.libs: the same layout)
        copy = Path(tempfile.gettempdir()) / f"paimon-pginstall-{os.stat(install).st_ino}"
        if not (copy / "pgserver" / "pginstall" / "bin" / "postgres").exists():
            staging = Path(tempfile.mkdtemp(prefix="paimon-pginstall-"))
            os.chmod(staging, 0o755)
            shutil.copytree(install, staging / "pgserver" / "pginstall", symlinks=True)
            shutil.copytree(install.parent.parent / "pgserver.libs", staging / "pgserver.libs", symlinks=True)
            try:
                os.rename(staging, copy)
            except OSError:
                shutil.rmtree(staging, ignore_errors=True)  # another worker's copy landed first
        install = copy / "pgserver" / "pginstall"
    return install / "bin"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_server_user():
    if os.geteuid() == 0:
        uid = gid = 65534  # nobody / nogroup
        return lambda: (os.setgid(gid), os.setuid(uid))
    return None


class RunningPostgres:
    """Context manager: a fresh server; ``.server`` says where it listens."""

    def __enter__(self) -> PostgresServer:
        bins = _bin_dir()
        self.root = tempfile.mkdtemp(prefix="paimon-pg-")
        os.chmod(self.root, 0o755)
        demote = _as_server_user()
        if demote is not None:
            os.chown(self.root, 65534, 65534)
        pwfile = os.path.join(self.root, "pw")
        with open(pwfile, "w") as f:
            f.write(PASSWORD + "\n")
        if demote is not None:
            os.chown(pwfile, 65534, 65534)
        data = os.path.join(self.root, "data")
        init = subprocess.run([str(bins / "initdb"), "-D", data, "-U", USER, "--pwfile", pwfile,
                               "--auth=scram-sha-256", "-E", "UTF8", "--no-sync"],
                              preexec_fn=demote, capture_output=True, text=True, timeout=120)
        if init.returncode != 0:
            shutil.rmtree(self.root, ignore_errors=True)
            raise PostgresUnavailable(f"initdb failed: {init.stderr[-2000:]}")
        port = _free_port()
        self.proc = subprocess.Popen(
            [str(bins / "postgres"), "-D", data, "-p", str(port), "-k", self.root,
             "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "max_connections=30"],
            preexec_fn=demote, stdout=subprocess.DEVNULL, stderr=self._log(), text=True)
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise PostgresUnavailable(f"postgres exited: {Path(self.root, 'log').read_text()[-2000:]}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                if os.path.exists(os.path.join(self.root, f".s.PGSQL.{port}")):
                    return PostgresServer("127.0.0.1", port)
            except OSError:
                pass
            time.sleep(0.05)
        self.__exit__()
        raise PostgresUnavailable(f"postgres did not listen on 127.0.0.1:{port} within {START_TIMEOUT_SECONDS} s")

    def _log(self):
        self.log = open(os.path.join(self.root, "log"), "w")
        return self.log

    def __exit__(self, *exc) -> None:
        self.proc.send_signal(2)  # SIGINT: fast shutdown, clients disconnected
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.root, ignore_errors=True)

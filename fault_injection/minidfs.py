"""A real HDFS on 127.0.0.1 for tests and the conformance suite's ``--store hdfs``: Hadoop's
MiniDFSCluster (one NameNode, one DataNode).

The launcher is the Maven module tests/hdfs_java (Hadoop 3.3.6's ``hadoop-client-minicluster``
from Maven Central, the version the Paimon Java harness runs). ``minidfs_classpath()`` builds it
once (``mvn package``, offline first so a warm ``~/.m2`` needs no network; a file lock makes
concurrent pytest-xdist workers build it once). :class:`HdfsServer` starts one cluster per
pytest(-xdist) worker (session fixture ``hdfs_server`` in the root conftest) on free ports,
reads the ports from its first stdout line, and stops it at exit (the launcher also ends when
its stdin closes, so a killed test run leaves no NameNode behind). Each test takes a fresh
directory (:meth:`HdfsEndpoint.new_root`), so tests never see each other's files.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path

MODULE_DIR = Path(__file__).resolve().parents[1] / "tests" / "hdfs_java"
MAIN_CLASS = "org.paimonpy.minidfs.MiniDfs"
TEST_USER = "paimon"
START_TIMEOUT_SECONDS = 180.0  # a cold JVM on a loaded 2-core machine takes 20-40 s


def tools_missing() -> str | None:
    """Why the MiniDFSCluster cannot be built or run here (None when java and mvn are on PATH)."""
    missing = [tool for tool in ("java", "mvn") if shutil.which(tool) is None]
    return f"{' and '.join(missing)} not on PATH (the test HDFS is Hadoop's MiniDFSCluster)" if missing else None


def _compiled() -> Path:
    return MODULE_DIR / "target" / "classes" / "org" / "paimonpy" / "minidfs" / "MiniDfs.class"


def _stale() -> bool:
    sources = [MODULE_DIR / "pom.xml", *MODULE_DIR.glob("src/**/*")]
    return not _compiled().exists() or not any((MODULE_DIR / "target" / "lib").glob("hadoop-client-minicluster-*.jar")) \
        or max(p.stat().st_mtime for p in sources if p.is_file()) > _compiled().stat().st_mtime


def minidfs_classpath() -> str:
    """The launcher's class path, building it first (``mvn -o package``, online on a cold cache)."""
    with open(MODULE_DIR.parent / ".hdfs-build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _stale():
            base = ["mvn", "-q", "-B", "package"]
            if subprocess.run([*base, "-o"], cwd=MODULE_DIR, capture_output=True, text=True).returncode != 0:
                online = subprocess.run(base, cwd=MODULE_DIR, capture_output=True, text=True)
                if online.returncode != 0:
                    raise RuntimeError(f"mvn package failed in {MODULE_DIR}:\n{online.stdout[-4000:]}{online.stderr[-4000:]}")
    return os.pathsep.join([str(MODULE_DIR / "target" / "classes"), str(MODULE_DIR / "target" / "lib" / "*")])


@dataclass(frozen=True)
class HdfsEndpoint:
    """A running MiniDFSCluster: NameNode RPC (``hdfs://``) and HTTP (``webhdfs://``) ports."""

    rpc_port: int
    http_port: int

    def webhdfs_url(self, path: str) -> str:
        return f"webhdfs://127.0.0.1:{self.http_port}/{path.lstrip('/')}"

    def hdfs_url(self, path: str) -> str:
        return f"hdfs://127.0.0.1:{self.rpc_port}/{path.lstrip('/')}"

    def options(self) -> dict[str, str]:
        return {"hadoop.user.name": TEST_USER}

    def new_root(self, prefix: str = "t") -> str:
        """A fresh directory path (not created: writers create what they need)."""
        return f"/{prefix}-{uuid.uuid4().hex[:16]}"


class HdfsServer:
    """One MiniDFSCluster JVM; :meth:`start` returns once the cluster answers."""

    def __init__(self) -> None:
        self._base = tempfile.mkdtemp(prefix="minidfs-")
        self._log = open(os.path.join(self._base, "minidfs.log"), "w+")
        self._proc: subprocess.Popen | None = None

    def start(self) -> HdfsEndpoint:
        cp = minidfs_classpath()
        self._proc = subprocess.Popen(
            ["java", "-Xmx512m", "--add-opens", "java.base/java.lang=ALL-UNNAMED",  # Jersey 1 (WebHDFS)
             "-cp", cp, MAIN_CLASS, os.path.join(self._base, "dfs")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, text=True)
        line: list[str] = []
        reader = threading.Thread(target=lambda: line.append(self._proc.stdout.readline()), daemon=True)  # type: ignore[union-attr]
        reader.start()
        reader.join(START_TIMEOUT_SECONDS)
        if not line or not line[0].strip():
            self.stop()
            raise RuntimeError(f"MiniDFSCluster did not start within {START_TIMEOUT_SECONDS:.0f} s:\n{self.log_tail()}")
        ports = json.loads(line[0])
        return HdfsEndpoint(int(ports["rpc_port"]), int(ports["http_port"]))

    def log_tail(self, chars: int = 4000) -> str:
        self._log.flush()
        return Path(self._log.name).read_text(errors="replace")[-chars:]

    def stop(self) -> None:
        proc = self._proc
        if proc is not None and proc.poll() is None:
            try:
                if proc.stdin is not None:
                    proc.stdin.close()  # the launcher shuts the cluster down on EOF
                proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                proc.kill()
                proc.wait()
        self._log.close()
        shutil.rmtree(self._base, ignore_errors=True)

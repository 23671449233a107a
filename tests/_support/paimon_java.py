"""Apache Paimon Java in the loop: builds the harness (tests/paimon_java/harness) and talks to it.

The harness is a Maven project whose only dependencies are Paimon's published bundle and the
Hadoop client its Parquet format needs. ``harness_classpath()`` builds it once (``mvn package``,
offline first so a warm ``~/.m2`` needs no network; a file lock makes concurrent pytest-xdist
workers build it once) and returns the class path. ``.ci/run`` builds it before the tests, so
the fixture only builds when the jar is missing.

``JavaServer`` runs the harness's JSON-lines server (one warm JVM for many calls): each
``call(op, **args)`` sends one request line and returns the result, or raises
:class:`JavaHarnessError` carrying Paimon's exception class and message. Rows cross as Parquet
files (Paimon's own Parquet reader and writer on the Java side), so every test that needs Java
exchanges data on disk only. The ops are documented in Harness.java.
"""

from __future__ import annotations

import fcntl
import itertools
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

HARNESS_DIR = Path(__file__).resolve().parents[1] / "paimon_java" / "harness"
MAIN_CLASS = "org.paimonpy.harness.Harness"
PAIMON_JAVA_VERSION = "1.4.2"  # the newest Paimon release on Maven Central (2.0.0 is not published)
_STDERR_TAIL = 4000


class JavaUnavailable(RuntimeError):
    """Java or Maven is not installed here, so the harness cannot be built or run."""


class JavaHarnessError(RuntimeError):
    """Paimon Java (through the harness) refused or failed a request.

    ``error_class`` is the Java exception's class name; ``conflict`` says whether Paimon's
    message (or a cause's) reports a commit conflict."""

    def __init__(self, op: str, error_class: str, message: str, conflict: bool, traceback: str):
        super().__init__(f"{op}: {error_class}: {message}")
        self.op = op
        self.error_class = error_class
        self.message = message
        self.conflict = conflict
        self.traceback = traceback


def tools_missing() -> str | None:
    """Why the harness cannot be built here (None when java and mvn are both on PATH)."""
    missing = [tool for tool in ("java", "mvn") if shutil.which(tool) is None]
    return f"{' and '.join(missing)} not on PATH" if missing else None


def _built() -> bool:
    return (HARNESS_DIR / "target" / "classes" / "org" / "paimonpy" / "harness" / "Harness.class").exists() \
        and any((HARNESS_DIR / "target" / "lib").glob("paimon-bundle-*.jar"))


def _stale() -> bool:
    """Whether a source file is newer than the compiled harness."""
    compiled = HARNESS_DIR / "target" / "classes" / "org" / "paimonpy" / "harness" / "Harness.class"
    newest = max(p.stat().st_mtime for p in [HARNESS_DIR / "pom.xml", *HARNESS_DIR.glob("src/**/*.java")])
    return newest > compiled.stat().st_mtime


def build_harness() -> None:
    """``mvn package``: offline first (a warm local repository needs no network), then online."""
    reason = tools_missing()
    if reason:
        raise JavaUnavailable(f"cannot build the Paimon Java harness: {reason}")
    base = ["mvn", "-q", "-B", "package"]
    offline = subprocess.run([*base, "-o"], cwd=HARNESS_DIR, capture_output=True, text=True)
    if offline.returncode == 0:
        return
    online = subprocess.run(base, cwd=HARNESS_DIR, capture_output=True, text=True)
    if online.returncode != 0:
        raise RuntimeError(f"mvn package failed in {HARNESS_DIR}:\n{online.stdout[-4000:]}\n{online.stderr[-4000:]}")


def harness_classpath() -> str:
    """The harness's class path, building it first if it is missing or older than its sources."""
    lock_path = HARNESS_DIR.parent / ".build.lock"
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _built() or _stale():
            build_harness()
    return os.pathsep.join([str(HARNESS_DIR / "target" / "classes"), str(HARNESS_DIR / "target" / "lib" / "*")])


class JavaServer:
    """One warm JVM running the harness's JSON-lines server; close() (or stdin EOF) ends it.

    ``jvm_options`` go on the java command line before the class path (e.g. ``-Dname=value``)."""

    def __init__(self, classpath: str | None = None, *, heap: str = "2g", jvm_options: tuple[str, ...] = ()):
        cp = classpath or harness_classpath()
        self._stderr = tempfile.NamedTemporaryFile(prefix="paimon-java-", suffix=".log", delete=False)
        self._proc = subprocess.Popen(
            ["java", f"-Xmx{heap}", *jvm_options, "-cp", cp, MAIN_CLASS, "serve"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, text=True, bufsize=1)
        self._ids = itertools.count(1)

    def _stderr_tail(self) -> str:
        try:
            return Path(self._stderr.name).read_text(errors="replace")[-_STDERR_TAIL:]
        except OSError:
            return ""

    def call(self, op: str, **args):
        """Send one request and return its result; a refusal raises JavaHarnessError."""
        proc = self._proc
        if proc.poll() is not None or proc.stdin is None or proc.stdout is None:
            raise RuntimeError(f"the Paimon Java server is gone (exit {proc.poll()}):\n{self._stderr_tail()}")
        rid = next(self._ids)
        proc.stdin.write(json.dumps({"id": rid, "op": op, "args": args}) + "\n")
        proc.stdin.flush()
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the Paimon Java server died during {op} (exit {proc.wait()}):\n{self._stderr_tail()}")
        resp = json.loads(line)
        if resp.get("id") != rid:
            raise RuntimeError(f"the Paimon Java server answered request {resp.get('id')} to request {rid}")
        if not resp["ok"]:
            raise JavaHarnessError(op, resp["error_class"], resp["message"], resp["conflict"], resp["traceback"])
        return resp["result"]

    def close(self) -> None:
        proc = self._proc
        if proc.poll() is None and proc.stdin is not None:
            try:
                proc.stdin.close()
                proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                proc.kill()
                proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
        self._stderr.close()
        os.unlink(self._stderr.name)

    def __enter__(self) -> "JavaServer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

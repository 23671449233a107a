"""A Spark standalone cluster on 127.0.0.1: one master and N workers, for tests and by hand.

``python -m simulation.spark_cluster --start`` prints the master URL and runs until Ctrl-C;
tests use :class:`SparkCluster` (``with SparkCluster() as cluster: cluster.master_url``).

Every daemon is started through ``pyspark/bin/spark-class`` with ``SPARK_HOME`` = the installed
pyspark package (no separate Spark download): the master on free ports, each worker with
``--cores 1 --memory 1g`` by default and its own work directory (where its executors run and
log), all bound to 127.0.0.1. :meth:`SparkCluster.start` returns once the master's JSON status
(``http://127.0.0.1:<webui>/json/``) shows every worker alive, or raises
:class:`ClusterStartError` with the daemons' logs.

What the executors see: ``PYSPARK_PYTHON`` is this interpreter, and the workers' environment has
no ``PYTHONPATH``: as on a real cluster, a driver that needs one ships it with the application
(``impl.spark.session`` sends its own as ``spark.executorEnv.PYTHONPATH``), so a driver running
from a source checkout is never silently served the installed ``impl`` on the executors.

Stopping: each daemon runs in its own process group; :meth:`SparkCluster.stop` sends SIGTERM to
every group and to every descendant found under the daemons (executor JVMs, Python daemons that
made their own groups), waits, then SIGKILLs whatever is left and raises
:class:`ClusterStopError` if anything survives. On Linux the daemons also get SIGTERM when the
process that started them dies (``PR_SET_PDEATHSIG``), so a killed test run leaves no JVMs.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import IO, Any, Callable, Sequence

from impl._cli import HelpFormatter
from impl._optional import require
from simulation.embedded_s3 import free_port

HOST = "127.0.0.1"
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
# Heap of the master and worker daemons themselves (Spark's default is 1g each); executors get
# their memory from the worker's --memory budget.
DAEMON_MEMORY = "256m"
_POLL_SECONDS = 0.1
_LOG_TAIL_CHARS = 4000


class ClusterStartError(RuntimeError):
    """The cluster did not come up (the message carries the daemons' log tails)."""


class ClusterStopError(RuntimeError):
    """Processes of the cluster survived SIGKILL (their pids are in the message)."""


def spark_home() -> str:
    """The installed pyspark package: it carries ``bin/spark-class`` and ``jars/``."""
    pyspark = require("pyspark", "a standalone Spark cluster")

    home = os.path.dirname(os.path.abspath(str(pyspark.__file__)))
    if not os.path.exists(os.path.join(home, "bin", "spark-class")):
        raise ClusterStartError(f"{home} has no bin/spark-class: install pyspark from PyPI (pip install -e '.[spark]')")
    return home


@dataclass(frozen=True)
class Daemon:
    """One started daemon: its process (leader of its own process group) and its log file."""

    name: str
    process: subprocess.Popen[bytes]
    log_path: str

    def log_tail(self) -> str:
        return _tail(self.log_path)


def _tail(path: str) -> str:
    try:
        with open(path, errors="replace") as fh:
            text = fh.read()
    except OSError as e:
        return f"(no log: {e})"
    return text[-_LOG_TAIL_CHARS:]


def _death_signal_setter() -> Callable[[], None] | None:
    """A function for the child between fork and exec: SIGTERM when the starting process dies.

    Linux only (``PR_SET_PDEATHSIG``). libc is looked up here, in the parent: the child of a
    threaded process (moto's server, Spark's py4j) must not load libraries or import.
    """
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    prctl = ctypes.CDLL(None, use_errno=True).prctl
    pr_set_pdeathsig = 1

    def set_death_signal() -> None:
        prctl(pr_set_pdeathsig, int(signal.SIGTERM), 0, 0, 0)

    return set_death_signal


def _children_map() -> dict[int, list[int]]:
    """ppid -> pids of every process visible in /proc (Linux); empty elsewhere."""
    out: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return out
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        # the command name (field 2) may hold spaces and parentheses: ppid is 2 fields after the last ')'
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        out.setdefault(ppid, []).append(int(entry))
    return out


def descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (children, their children, ...)."""
    children = _children_map()
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has exited
    except FileNotFoundError:
        return False
    except OSError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class SparkCluster:
    """A master and ``workers`` workers on 127.0.0.1 (see the module docstring).

    ``root`` holds the daemons' logs and the workers' work directories (a temporary directory,
    removed by :meth:`stop`, when not given).
    """

    def __init__(self, workers: int = 2, *, cores: int = 1, memory: str = "1g", root: str | None = None,
                 python: str | None = None) -> None:
        if workers < 1 or cores < 1:
            raise ValueError(f"a cluster needs workers >= 1 and cores >= 1 (got workers={workers}, cores={cores})")
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.python = python or sys.executable
        self._own_root = root is None
        self.root = root or tempfile.mkdtemp(prefix="paimon-spark-cluster-")
        self.master_url = ""
        self.webui_url = ""
        self._daemons: list[Daemon] = []
        self._logs: list[IO[bytes]] = []

    # ------------------------------------------------------------------ paths and status

    def worker_dir(self, i: int) -> str:
        """Work directory of worker ``i``: its executors run (and log) in ``<app-id>/<executor-id>/``."""
        return os.path.join(self.root, f"worker-{i}")

    @property
    def worker_dirs(self) -> list[str]:
        return [self.worker_dir(i) for i in range(self.workers)]

    def status(self) -> dict[str, Any]:
        """The master's JSON status (workers, alive workers, cores, applications)."""
        # no proxy: the master is on this machine whatever http_proxy says
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(f"{self.webui_url}/json/", timeout=2) as resp:
            return dict(json.loads(resp.read()))

    def logs(self) -> str:
        """The tail of every daemon's log and of every executor's stderr, for error messages."""
        parts = [f"----- {d.name} ({d.log_path}) -----\n{_tail(d.log_path)}" for d in self._daemons]
        for path in sorted(glob.glob(os.path.join(self.root, "worker-*", "*", "*", "stderr"))):
            parts.append(f"----- executor ({path}) -----\n{_tail(path)}")
        return "\n".join(parts)

    # ------------------------------------------------------------------ start

    def _environment(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env.update({
            "SPARK_HOME": spark_home(),
            "SPARK_LOCAL_IP": HOST,
            "SPARK_LOCAL_HOSTNAME": HOST,
            "SPARK_DAEMON_MEMORY": DAEMON_MEMORY,
            # one try per port: a port taken between free_port() and bind fails the start (and is
            # retried with fresh ports) instead of Spark silently binding the next port up
            "SPARK_DAEMON_JAVA_OPTS": "-Dspark.port.maxRetries=0",
            "SPARK_NO_DAEMONIZE": "1",
            "PYSPARK_PYTHON": self.python,
            "PYSPARK_DRIVER_PYTHON": self.python,
        })
        return env

    def _spawn(self, name: str, args: Sequence[str], env: dict[str, str]) -> Daemon:
        log_path = os.path.join(self.root, f"{name}.log")
        log = open(log_path, "wb")  # a retried start begins a fresh log
        self._logs.append(log)
        cmd = [os.path.join(env["SPARK_HOME"], "bin", "spark-class"), *args]
        # its own process group (stopped as a whole), killed with us if we die first
        proc = subprocess.Popen(cmd, env=env, cwd=self.root, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, process_group=0, preexec_fn=_death_signal_setter())
        daemon = Daemon(name, proc, log_path)
        self._daemons.append(daemon)
        return daemon

    def start(self, timeout: float = 60.0, attempts: int = 3) -> str:
        """Start the master and the workers; the master URL once every worker is alive."""
        if self._daemons:
            raise RuntimeError("the cluster is already started")
        deadline = time.monotonic() + timeout
        last = ""
        try:
            for _ in range(attempts):
                try:
                    return self._start_once(deadline)
                except _PortTaken as e:  # lost a race for a free port: fresh ports, fresh daemons
                    last = str(e)
                    self._stop_daemons()
            raise ClusterStartError(f"could not bind the master's ports in {attempts} attempts:\n{last}")
        except BaseException:
            self._stop_daemons()  # a failed start leaves nothing running
            raise

    def _start_once(self, deadline: float) -> str:
        env = self._environment()
        port, webui = free_port(), free_port()
        self.master_url = f"spark://{HOST}:{port}"
        self.webui_url = f"http://{HOST}:{webui}"
        self._spawn("master", [MASTER_CLASS, "--host", HOST, "--port", str(port), "--webui-port", str(webui)], env)
        # The workers start at once, not after the master answers: a JVM takes seconds to start
        # (twice, with spark-class's launcher), and a worker first connects only once its own
        # RPC and web UI are up, well after the master listens (if not, it retries in 5-15 s).
        for i in range(self.workers):
            os.makedirs(self.worker_dir(i), exist_ok=True)
            # worker ports 0: chosen by the OS, nothing to collide with
            self._spawn(f"worker-{i}", [WORKER_CLASS, self.master_url, "--host", HOST, "--port", "0",
                                        "--webui-port", "0", "--cores", str(self.cores), "--memory", self.memory,
                                        "--work-dir", self.worker_dir(i)], env)
        self._wait(deadline, lambda s: int(s.get("aliveworkers", 0)) >= self.workers,
                   f"{self.workers} workers to register", self._daemons)
        return self.master_url

    def _wait(self, deadline: float, ready: Callable[[dict[str, Any]], bool], what: str,
              watched: Sequence[Daemon]) -> None:
        while True:
            for d in watched:
                code = d.process.poll()
                if code is not None:
                    tail = d.log_tail()
                    if d.name == "master" and "Address already in use" in tail:
                        raise _PortTaken(tail)
                    raise ClusterStartError(f"the Spark {d.name} exited with code {code} while waiting for {what}; "
                                            f"logs:\n{self.logs()}")
            try:
                if ready(self.status()):
                    return
            except (urllib.error.URLError, ConnectionError, TimeoutError, json.JSONDecodeError):
                pass  # not listening yet
            if time.monotonic() > deadline:
                raise ClusterStartError(f"timed out waiting for {what} (master {self.master_url}, status "
                                        f"{self.webui_url}/json/); logs:\n{self.logs()}")
            time.sleep(_POLL_SECONDS)

    # ------------------------------------------------------------------ stop

    def stop(self, timeout: float = 20.0) -> None:
        """Stop every daemon and everything they started; remove the temporary root."""
        try:
            self._stop_daemons(timeout)
        finally:
            if self._own_root:
                shutil.rmtree(self.root, ignore_errors=True)

    def _stop_daemons(self, timeout: float = 20.0) -> None:
        daemons, self._daemons = self._daemons, []
        pids: set[int] = set()
        for d in daemons:
            pids.add(d.process.pid)
            pids |= descendants(d.process.pid)
        # workers first: they stop their executors on SIGTERM; then the master
        for d in reversed(daemons):
            _signal_group(d.process.pid, signal.SIGTERM)
        for pid in pids:
            _signal(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout / 2
        while time.monotonic() < deadline and any(_alive(p) for p in pids):
            for d in daemons:
                d.process.poll()  # reap our own children so they do not linger as zombies
            time.sleep(_POLL_SECONDS)
        left = {p for p in pids if _alive(p)}
        for pid in left:
            _signal(pid, signal.SIGKILL)
        for d in daemons:
            _signal_group(d.process.pid, signal.SIGKILL)
            try:
                d.process.wait(timeout=timeout / 2)
            except subprocess.TimeoutExpired:
                pass
        for log in self._logs:
            log.close()
        self._logs = []
        survivors = sorted(p for p in pids if _alive(p))
        if survivors:
            raise ClusterStopError(f"processes of the Spark cluster survived SIGKILL: {survivors}")

    def __enter__(self) -> "SparkCluster":
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _PortTaken(Exception):
    """The master could not bind a port found free a moment before."""


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m simulation.spark_cluster",
                                formatter_class=HelpFormatter,
                                description="A Spark standalone cluster on 127.0.0.1 (master and workers).")
    p.add_argument("--start", action="store_true", help="start it, print the master URL, run until Ctrl-C")
    p.add_argument("--workers", type=int, default=2, help="worker processes")
    p.add_argument("--cores", type=int, default=1, help="cores per worker")
    p.add_argument("--memory", default="1g", help="memory per worker (its executors' budget)")
    a = p.parse_args(argv)
    if not a.start:
        p.print_help()
        return 2
    if a.workers < 1 or a.cores < 1:
        p.error("--workers and --cores must be >= 1")
    # Ctrl-C even when started in the background of a script (which ignores SIGINT), and kill
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    cluster = SparkCluster(a.workers, cores=a.cores, memory=a.memory)
    try:
        cluster.start()
        print(cluster.master_url, flush=True)
        print(f"status: {cluster.webui_url} (JSON: {cluster.webui_url}/json/); logs and work dirs under {cluster.root}",
              file=sys.stderr, flush=True)
        print(f"run the main job on it: PAIMON_PY_SPARK_MASTER={cluster.master_url} python -m simulation",
              file=sys.stderr, flush=True)
        while True:
            time.sleep(3600)
    except (KeyboardInterrupt, SystemExit):
        return 0
    except ClusterStartError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    finally:
        cluster.stop()


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["SparkCluster", "ClusterStartError", "ClusterStopError", "descendants", "spark_home"]

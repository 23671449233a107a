"""A private virtual environment with pypaimon-rust 0.4.0 (Apache Paimon's Rust core with Python
bindings), created once and cached, as ``pypaimon_env`` does for pypaimon 2.1.0.

The venv lives in ``$PAIMON_PY_CACHE`` (default ``~/.cache/paimon-py-core``); a file lock makes
concurrent pytest-xdist workers build it once. When the package registry cannot be reached the
build fails and :func:`pypaimon_rust_python` raises :class:`Unavailable`, which the fixture turns
into a skip naming the reason.
"""

from __future__ import annotations

import fcntl
import json
import subprocess
import sys
import textwrap
from pathlib import Path

from pypaimon_env import cache_dir

PYPAIMON_RUST_VERSION = "0.4.0"


class Unavailable(RuntimeError):
    """The venv cannot be built (no package registry, or no wheel for this platform)."""


def pypaimon_rust_python() -> Path:
    """Path of the python executable of the pypaimon-rust venv, building the venv if needed."""
    root = cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    venv = root / f"pypaimon-rust-{PYPAIMON_RUST_VERSION}"
    python = venv / "bin" / "python"
    marker = venv / ".complete"
    with open(root / ".pypaimon-rust.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not marker.exists():
            subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
            proc = subprocess.run(
                [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                 f"pypaimon-rust=={PYPAIMON_RUST_VERSION}", "pyarrow"],
                capture_output=True, text=True, timeout=900)
            if proc.returncode != 0:
                raise Unavailable(f"pip install pypaimon-rust=={PYPAIMON_RUST_VERSION} failed "
                                  f"(package registry unreachable?): {proc.stderr.strip()[-1000:]}")
            marker.write_text(PYPAIMON_RUST_VERSION)
    return python


def run_pypaimon_rust(script: str, **params) -> object:
    """Run ``script`` under pypaimon-rust's interpreter. The script sees ``params`` (a dict) and
    sets ``result`` to something JSON-serializable, which is returned."""
    code = "import json, sys\nparams = json.loads(sys.argv[1])\nresult = None\n" + textwrap.dedent(script) + \
        "\nprint('@@RESULT@@' + json.dumps(result, default=str))\n"
    proc = subprocess.run([str(pypaimon_rust_python()), "-c", code, json.dumps(params)],
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"pypaimon-rust script failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    for line in proc.stdout.splitlines():
        if line.startswith("@@RESULT@@"):
            return json.loads(line[len("@@RESULT@@"):])
    raise RuntimeError(f"pypaimon-rust script printed no result:\n{proc.stdout[-2000:]}")

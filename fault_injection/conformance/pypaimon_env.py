"""A private virtual environment with pypaimon 2.1.0, created once and cached (for the pypaimon
conformance target and the interop tests, which import it through tests/_support/pypaimon_env.py).

pypaimon 2.1.0 pins pyarrow < 20, which cannot live beside this project's pyarrow, so it
runs in its own interpreter; the two sides exchange tables on disk only. The venv lives in
``$PAIMON_PY_CACHE`` (default ``~/.cache/paimon-py-core``); a file lock makes concurrent
pytest-xdist workers build it once.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Sequence

PYPAIMON_VERSION = "2.1.0"


def cache_dir() -> Path:
    return Path(os.environ.get("PAIMON_PY_CACHE", Path.home() / ".cache" / "paimon-py-core"))


class PeerUnavailable(RuntimeError):
    """A peer's venv cannot be built (no package registry, or no wheel for this platform)."""


def peer_python(name: str, version: str, requirements: Sequence[str]) -> Path:
    """Path of the python executable of the venv ``<cache>/<name>-<version>`` holding
    ``requirements``, building it once (a file lock makes concurrent builders wait for one);
    :class:`PeerUnavailable` when pip cannot install them."""
    root = cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    venv = root / f"{name}-{version}"
    python = venv / "bin" / "python"
    marker = venv / ".complete"
    with open(root / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not marker.exists():
            subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
            proc = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                                   *requirements], capture_output=True, text=True, timeout=900)
            if proc.returncode != 0:
                raise PeerUnavailable(f"pip install {' '.join(requirements)} failed (package registry "
                                      f"unreachable?): {proc.stderr.strip()[-1000:]}")
            marker.write_text(version)
    return python


def run_in_python(python: Path, label: str, script: str, **params) -> object:
    """Run ``script`` under the interpreter ``python`` (a peer's venv). The script sees ``params``
    (a dict) and sets ``result`` to something JSON-serializable, which is returned."""
    # params cross on stdin: an argument is limited to 128 KiB (MAX_ARG_STRLEN), and a corpus of
    # tables' rows is larger
    code = "import json, sys\nparams = json.loads(sys.stdin.read())\nresult = None\n" + textwrap.dedent(script) + \
        "\nprint('@@RESULT@@' + json.dumps(result, default=str))\n"
    proc = subprocess.run([str(python), "-c", code], input=json.dumps(params), capture_output=True, text=True,
                          timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"{label} script failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    for line in proc.stdout.splitlines():
        if line.startswith("@@RESULT@@"):
            return json.loads(line[len("@@RESULT@@"):])
    raise RuntimeError(f"{label} script printed no result:\n{proc.stdout[-2000:]}")


def pypaimon_python() -> Path:
    """Path of the python executable of the pypaimon venv, building the venv if needed."""
    return peer_python("pypaimon", PYPAIMON_VERSION, [f"pypaimon=={PYPAIMON_VERSION}"])


def run_pypaimon(script: str, **params) -> object:
    """Run ``script`` under pypaimon's interpreter (see :func:`run_in_python`)."""
    return run_in_python(pypaimon_python(), "pypaimon", script, **params)


# Reads every row of a table as a list of dicts sorted by the given columns.
READ_TABLE = """
from pypaimon import CatalogFactory
catalog = CatalogFactory.create({"warehouse": params["warehouse"]})
table = catalog.get_table(params["table"])
rb = table.new_read_builder()
splits = rb.new_scan().plan().splits()
arrow = rb.new_read().to_arrow(splits)
rows = arrow.to_pylist() if arrow is not None else []
rows.sort(key=lambda r: tuple(str(r[c]) for c in params["sort_by"]))
result = rows
"""

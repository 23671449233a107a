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

PYPAIMON_VERSION = "2.1.0"


def cache_dir() -> Path:
    return Path(os.environ.get("PAIMON_PY_CACHE", Path.home() / ".cache" / "paimon-py-core"))


def pypaimon_python() -> Path:
    """Path of the python executable of the pypaimon venv, building the venv if needed."""
    root = cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    venv = root / f"pypaimon-{PYPAIMON_VERSION}"
    python = venv / "bin" / "python"
    marker = venv / ".complete"
    with open(root / ".pypaimon.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not marker.exists():
            subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
            subprocess.run([str(python), "-m", "pip", "install", "--quiet", f"pypaimon=={PYPAIMON_VERSION}"],
                           check=True)
            marker.write_text(PYPAIMON_VERSION)
    return python


def run_pypaimon(script: str, **params) -> object:
    """Run ``script`` under pypaimon's interpreter. The script sees ``params`` (a dict) and sets
    ``result`` to something JSON-serializable, which is returned."""
    code = "import json, sys\nparams = json.loads(sys.argv[1])\nresult = None\n" + textwrap.dedent(script) + \
        "\nprint('@@RESULT@@' + json.dumps(result, default=str))\n"
    proc = subprocess.run([str(pypaimon_python()), "-c", code, json.dumps(params)],
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"pypaimon script failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    for line in proc.stdout.splitlines():
        if line.startswith("@@RESULT@@"):
            return json.loads(line[len("@@RESULT@@"):])
    raise RuntimeError(f"pypaimon script printed no result:\n{proc.stdout[-2000:]}")


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

"""Every code block of README.md runs as written, top to bottom, against a temporary warehouse.

The Python blocks run in one namespace, in order, with the working directory in a temporary
directory (so ``./warehouse`` is a fresh warehouse there); their Spark lines use the test run's
local session (``impl.spark.session()`` returns the active one). The bash blocks run in that
directory with this interpreter first on PATH.

The S3 blocks name placeholders for the reader's own store. They run against the tests' moto
server (tests/_support/s3_server.py), substituted exactly here and nowhere else:

- ``"http://127.0.0.1:9000"`` -> the server's endpoint;
- ``"fs.s3.accessKeyId": "..."`` / ``"fs.s3.accessKeySecret": "..."`` -> the server's keys;
- ``s3://bucket/`` -> ``s3://<a fresh bucket>/``.

The two set-up commands ("1. Run the main job", "2. Run the tests") build a venv and run the job
or the whole suite: they are not run here. Their test asserts that they are the commands
``.ci/run`` executes (through ``.ci/readme_command.py``), then skips with that reason.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


@dataclass(frozen=True)
class Block:
    language: str
    code: str
    line: int  # of the opening fence in README.md

    @property
    def label(self) -> str:
        return f"README.md:{self.line} ({self.language})"


def readme_blocks(text: str) -> list[Block]:
    """Every fenced block, in order (language, code, line of its opening fence)."""
    return [Block(m.group(1), m.group(2), text.count("\n", 0, m.start()) + 1)
            for m in re.finditer(r"^```(\w*)\n(.*?)^```\s*$", text, re.S | re.M)]


def readme_command_module():
    spec = importlib.util.spec_from_file_location("readme_command", ROOT / ".ci" / "readme_command.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def setup_commands(text: str) -> dict[str, str]:
    """The set-up commands, by .ci/readme_command.py's names (main, tests)."""
    module = readme_command_module()
    return {which: module.command(which, text) for which in module.HEADINGS}


def test_blocks_are_found():
    text = "a\n```python\nx = 1\n```\nb\n```bash\necho hi\n```\n"
    assert readme_blocks(text) == [Block("python", "x = 1\n", 2), Block("bash", "echo hi\n", 6)]


def test_every_block_is_python_or_bash():
    blocks = readme_blocks(README.read_text())
    assert blocks and {b.language for b in blocks} == {"python", "bash"}


@pytest.mark.parametrize("which", ["main", "tests"])
def test_setup_command_is_what_ci_runs(which):
    text = README.read_text()
    command = setup_commands(text)[which]
    assert command in [b.code.strip() for b in readme_blocks(text) if b.language == "bash"]
    assert command.startswith("python3 -m venv .venv && . .venv/bin/activate && pip install --upgrade pip && ")
    ci = (ROOT / ".ci" / "run").read_text()
    if which == "tests":
        assert "python3 .ci/readme_command.py tests" in ci  # .ci/run runs this very command
    pytest.skip(f"the {which!r} set-up command builds a venv and runs "
                f"{'the main job' if which == 'main' else 'the whole suite'}; .ci/run runs the README's commands")


def s3_substituted(code: str, endpoint: str, bucket: str) -> str:
    """The block with the README's S3 placeholders replaced by the test server's (module docstring)."""
    from s3_server import ACCESS_KEY, SECRET_KEY

    code = code.replace('"http://127.0.0.1:9000"', repr(endpoint))
    code = code.replace('"fs.s3.accessKeyId": "..."', f'"fs.s3.accessKeyId": {ACCESS_KEY!r}')
    code = code.replace('"fs.s3.accessKeySecret": "..."', f'"fs.s3.accessKeySecret": {SECRET_KEY!r}')
    return code.replace("s3://bucket/", f"s3://{bucket}/")


def run_bash(block: Block, cwd: Path) -> None:
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", block.code], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, f"{block.label} failed:\n{block.code}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"


def test_every_block_runs_top_to_bottom(spark, s3_server, tmp_path, monkeypatch):
    text = README.read_text()
    setup = set(setup_commands(text).values())
    bucket = s3_server.new_bucket("readme")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "readme"}
    ran, substituted = [], []
    for block in readme_blocks(text):
        if block.code.strip() in setup:
            continue  # test_setup_command_is_what_ci_runs
        if block.language == "bash":
            run_bash(block, tmp_path)
        else:
            code = s3_substituted(block.code, s3_server.endpoint, bucket)
            if code != block.code:
                substituted.append(block.line)
            try:
                exec(compile(code, block.label, "exec"), namespace)
            except Exception as e:
                raise AssertionError(f"{block.label} failed: {type(e).__name__}: {e}\n{code}") from e
        ran.append(block.line)
    assert len(ran) == len(readme_blocks(text)) - 2
    assert len(substituted) == 2  # both S3 blocks reached the test server, not a placeholder

    # what the blocks left behind is what their comments say
    import impl

    local = impl.Catalog("./warehouse")
    assert local.list_databases() == ["db", "demo"]
    t = local.get_table("db.t")
    assert sorted(r["id"] for r in t.to_arrow().to_pylist()) == [1, 3]  # rolled back to v1, then dev's row
    assert "value" in t.schema.field_names  # the schema evolution block ran
    assert local.get_table("db.events").to_arrow().num_rows == 2
    # the S3 block rebinds cat to the store: the commit-core block's table is there
    s3_cat = namespace["cat"]
    assert isinstance(s3_cat, impl.Catalog) and s3_cat.warehouse == f"{bucket}/warehouse"
    assert s3_cat.get_table("db.t").to_arrow().num_rows == 2
    assert [s.commit_kind.value for s in s3_cat.get_table("db.core").snapshots()] == ["APPEND"]

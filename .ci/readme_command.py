"""Print one of the README's set-up commands, so that CI runs exactly what the README says.

    python3 .ci/readme_command.py tests     # the command under "2. Run the tests"
    python3 .ci/readme_command.py main      # the command under "1. Run the main job"
"""

import pathlib
import re
import sys

HEADINGS = {"main": "**1. Run the main job**", "tests": "**2. Run the tests**"}


def command(which: str, readme: str) -> str:
    start = readme.index(HEADINGS[which])
    block = re.search(r"```bash\n(.*?)\n```", readme[start:], re.S)
    if block is None:
        raise SystemExit(f"README.md: no bash block after {HEADINGS[which]}")
    return block.group(1).strip()


if __name__ == "__main__":
    root = pathlib.Path(__file__).resolve().parent.parent
    print(command(sys.argv[1], (root / "README.md").read_text()))

"""The corpus's results as a markdown table (writer x configuration x read x write-back).

tests/corpus/test_corpus.py records one ``("corpus_cell", {...})`` user property per cell; the
root conftest collects them (xdist ships user properties to the controller), prints
:func:`markdown` at the end of the run and, when ``$PAIMON_CORPUS_REPORT`` names a file, writes it
there (docs/corpus.md is such a run's table).
"""

from __future__ import annotations

import re

_PATH = re.compile(r"(?:/[^/\s:]+)+/")  # directories of a file named in an error (a temporary path)

JAVA, PYPAIMON, RUST = "paimon-java-1.4.2", "pypaimon-2.1.0", "pypaimon-rust-0.4.0"
WRITERS = (JAVA, PYPAIMON, RUST)  # the order of the rows


def _cell(text: str) -> str:
    return _PATH.sub("", text).replace("|", "\\|").replace("\n", " ")[:200]


def markdown(cells: list[dict]) -> str:
    """One row per (writer, configuration), in the writers' order then the corpus's order."""
    order = {w: i for i, w in enumerate(WRITERS)}
    rows = sorted(cells, key=lambda c: (order.get(c["writer"], 99), c["index"]))
    lines = ["| writer | configuration | impl reads | impl writes back, writer reads |", "|---|---|---|---|"]
    lines += [f"| {c['writer']} | {c['config']} | {_cell(c['read'])} | {_cell(c['write_back'])} |" for c in rows]
    return "\n".join(lines) + "\n"

"""The rows the demo (impl/demo.py) leaves in its table, for the tests that read it back."""

from __future__ import annotations

from impl.demo import ROWS_PER_COMMIT


def expected_rows(commits: int) -> list[dict]:
    """Every id written once, with the value of the last commit that wrote it (commit i also
    updates the first row of commit i-1), sorted by id."""
    rows = {}
    for c in range(commits):
        ids = list(range(c * ROWS_PER_COMMIT, (c + 1) * ROWS_PER_COMMIT)) + ([(c - 1) * ROWS_PER_COMMIT] if c else [])
        for i in ids:
            rows[i] = f"commit-{c}"
    return [{"dt": "2024-01-01", "id": i, "v": v} for i, v in sorted(rows.items())]


def table_name(table_path: str) -> str:
    """The catalog identifier of the demo table at ``table_path``."""
    return f"demo.{table_path.rstrip('/').rsplit('/', 1)[1]}"

"""Crash-point summary: every enumeration test appends how many fault points it tried to
``$PAIMON_FAULT_SUMMARY_DIR`` (default /tmp/paimon-fault-summary, one JSONL file per
process); the controlling process clears it when the session starts and prints the totals
per test and scenario at the end (also written to SUMMARY.txt in that directory)."""

from __future__ import annotations

import glob
import json
import os
import shutil

from fault_scenarios import SUMMARY_DIR


def _is_controller(config) -> bool:
    return not hasattr(config, "workerinput")


def pytest_configure(config):
    if _is_controller(config):
        shutil.rmtree(SUMMARY_DIR, ignore_errors=True)
        os.makedirs(SUMMARY_DIR, exist_ok=True)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not _is_controller(config):
        return
    rows: dict[tuple[str, str], dict] = {}
    for path in glob.glob(os.path.join(SUMMARY_DIR, "*.jsonl")):
        with open(path) as fh:
            for line in fh:
                rec = json.loads(line)
                key = (rec.pop("test"), rec.pop("scenario"))
                row = rows.setdefault(key, {"mode": rec.pop("mode"), "crash_points": 0})
                rec.pop("mode", None)
                for k, v in rec.items():
                    if isinstance(v, int):
                        row[k] = row.get(k, 0) + v
    if not rows:
        return
    lines = ["fault points tried per test and scenario:"]
    total = 0
    for (test, scenario), row in sorted(rows.items()):
        extra = ", ".join(f"{k}={v}" for k, v in row.items() if k not in ("mode", "crash_points"))
        lines.append(f"  {test:<34} {scenario:<20} {row['crash_points']:>5}  [{row['mode']}]"
                     + (f"  {extra}" if extra else ""))
        total += row["crash_points"]
    lines.append(f"  total fault points: {total}")
    with open(os.path.join(SUMMARY_DIR, "SUMMARY.txt"), "w") as fh:
        fh.write("\n".join(lines) + "\n")
    terminalreporter.write_sep("-", "fault injection summary")
    for line in lines:
        terminalreporter.write_line(line)

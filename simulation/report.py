"""The simulation report: a Markdown file with PNG plots (matplotlib, headless)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from impl._optional import require

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

SnapshotEvent = tuple[float, str, str]  # (seconds since start, series name, snapshot kind)
LevelPoint = tuple[float, Mapping[int, int]]  # (seconds since start, {level: live file count})


def _plt() -> Any:
    # matplotlib is imported only when a report is drawn, headless (no display on CI machines)
    matplotlib = require("matplotlib", "the simulation report's plots")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(plt: Any, fig: Figure, ax: Axes, path: str, *, xlabel: str, ylabel: str, title: str) -> None:
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_snapshots_per_writer(events: Sequence[SnapshotEvent], path: str) -> None:
    """``events``: (seconds since start, series name, snapshot kind) per published snapshot."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    series: dict[str, list[float]] = {}
    for t, name, _ in sorted(events):
        series.setdefault(name, []).append(t)
    for name, times in sorted(series.items()):
        ax.step([0.0] + times, list(range(len(times) + 1)), where="post", label=f"{name} ({len(times)})")
    _save(plt, fig, ax, path, xlabel="seconds since start", ylabel="snapshots published", title="Snapshots over time, per committer")


def latency_figure(series_s: Mapping[str, Sequence[float]]) -> Figure:
    """One histogram per series (latencies in seconds, drawn in milliseconds), each on its own axes.

    Driver commits take milliseconds and Spark write jobs seconds: on one shared linear axis the
    commits were a sliver at zero beside the job bars. Each series gets the x range of its own
    values, so every one is readable; the panels are stacked with the series name in the title.
    """
    plt = _plt()
    shown = [(name, values) for name, values in series_s.items() if values]
    fig, axes = plt.subplots(max(1, len(shown)), 1, figsize=(8, 2.6 * max(1, len(shown))), squeeze=False)
    # strict=False: with no values at all there is one empty axes and nothing to draw on it
    for ax, (name, values) in zip(axes[:, 0], shown, strict=False):
        ms = [v * 1000 for v in values]
        ax.hist(ms, bins=min(30, max(5, len(ms) // 2)), alpha=0.8)
        ax.set_title(f"{name}: n={len(ms)}, median {sorted(ms)[len(ms) // 2]:.0f} ms", fontsize=10)
        ax.set_xlabel("milliseconds")
        ax.set_ylabel("count")
        ax.grid(alpha=0.3)
    fig.suptitle("Latency per writer commit")
    fig.tight_layout()
    return fig


def plot_latency_histogram(series_s: Mapping[str, Sequence[float]], path: str) -> None:
    """``series_s``: latencies in seconds per series name (see :func:`latency_figure`)."""
    plt = _plt()
    fig = latency_figure(series_s)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_files_per_level(points: Sequence[LevelPoint], path: str) -> None:
    """``points``: (seconds since start, {level: live file count}) per snapshot."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    levels = sorted({lvl for _, per in points for lvl in per})
    xs = [t for t, _ in points]
    for lvl in levels:
        ax.step(xs, [per.get(lvl, 0) for _, per in points], where="post", label=f"level {lvl}")
    _save(plt, fig, ax, path, xlabel="seconds since start", ylabel="live data files", title="Live files per LSM level over time")


def write_report(directory: str, *, title: str, config: Mapping[str, object], summary: Mapping[str, object],
                 checks: Sequence[tuple[str, bool, str]], snapshot_events: Sequence[SnapshotEvent],
                 latencies_s: Mapping[str, Sequence[float]], level_points: Sequence[LevelPoint],
                 notes: Sequence[str] = ()) -> str:
    """Write ``report.md`` and its plots into ``directory``; return the Markdown path."""
    os.makedirs(directory, exist_ok=True)
    images = []
    plots: Sequence[tuple[str, Callable[[Any, str], None], object]] = (
        ("snapshots_per_writer.png", plot_snapshots_per_writer, snapshot_events),
        ("commit_latency.png", plot_latency_histogram, latencies_s),
        ("files_per_level.png", plot_files_per_level, level_points))
    for name, fn, data in plots:
        try:
            fn(data, os.path.join(directory, name))
            images.append(name)
        except Exception as e:  # noqa: BLE001 - a plot must not hide the verification result
            notes = [*notes, f"plot {name} failed: {e}"]
    path = os.path.join(directory, "report.md")
    with open(path, "w") as fh:
        fh.write(report_markdown(title, config, summary, checks, images, notes))
    return path


def report_markdown(title: str, config: Mapping[str, object], summary: Mapping[str, object],
                    checks: Sequence[tuple[str, bool, str]], images: Sequence[str], notes: Sequence[str]) -> str:
    """The report's Markdown: verdict, configuration, summary, checks, plots (file names), notes."""
    ok = all(passed for _, passed, _ in checks)
    lines = [f"# {title}", "", f"**Verification: {'PASSED' if ok else 'FAILED'}**", "", "## Configuration", "",
             "| setting | value |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in config.items()]
    lines += ["", "## Summary", "", "| metric | value |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in summary.items()]
    lines += ["", "## Checks", "", "| check | result | detail |", "|---|---|---|"]
    for name, passed, detail in checks:
        cell = str(detail).replace("|", "\\|").replace("\n", " ")
        lines.append(f"| {name} | {'pass' if passed else '**FAIL**'} | {cell} |")
    lines += ["", "## Plots", ""]
    for img in images:
        lines += [f"![{img[:-4].replace('_', ' ')}]({img})", ""]
    if notes:
        lines += ["## Notes", ""] + [f"- {n}" for n in notes] + [""]
    return "\n".join(lines) + "\n"


__all__ = ["write_report", "report_markdown", "plot_snapshots_per_writer", "latency_figure", "plot_latency_histogram",
           "plot_files_per_level"]

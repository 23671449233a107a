"""The main job's commit-latency plot shows driver commits on a scale where they are visible:
each series (commits in milliseconds, Spark write jobs in seconds) on its own axes."""

from __future__ import annotations

import random

import pytest

pytest.importorskip("matplotlib", reason="matplotlib is not installed (pip install -e '.[sim]')")

from simulation.report import latency_figure, plot_latency_histogram  # noqa: E402


def synthetic_latencies() -> dict[str, list[float]]:
    rng = random.Random(3)
    return {"commit (driver)": [rng.uniform(0.010, 0.040) for _ in range(40)],
            "write job (Spark)": [rng.uniform(2.0, 6.0) for _ in range(40)]}


def test_commits_and_spark_jobs_are_on_separate_axes_scaled_to_their_values():
    import matplotlib.pyplot as plt

    fig = latency_figure(synthetic_latencies())
    try:
        axes = fig.get_axes()
        assert len(axes) == 2
        commit_ax, job_ax = axes
        assert commit_ax.get_title().startswith("commit (driver)")
        assert job_ax.get_title().startswith("write job (Spark)")
        # the commit axis spans the commits' milliseconds, not the jobs' seconds
        lo, hi = commit_ax.get_xlim()
        assert hi < 100 and lo > 0
        assert job_ax.get_xlim()[1] > 2000
        # and its bars have a visible width on that axis: at least half the range is covered
        widths = [p.get_width() for p in commit_ax.patches]
        assert sum(widths) > 0.5 * (hi - lo)
    finally:
        plt.close(fig)


def test_an_empty_series_gets_no_axes(tmp_path):
    import matplotlib.pyplot as plt

    fig = latency_figure({"commit (driver)": [0.02, 0.03], "write job (Spark)": []})
    try:
        assert [ax.get_title().split(":")[0] for ax in fig.get_axes()] == ["commit (driver)"]
    finally:
        plt.close(fig)
    plot_latency_histogram(synthetic_latencies(), str(tmp_path / "latency.png"))
    assert (tmp_path / "latency.png").stat().st_size > 0

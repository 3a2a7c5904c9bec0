"""Figures of policy comparisons (matplotlib, installed with `pip install 'schedopt[plot]'`).

    fig = jct_cdf(comparison.jobs)          # CDF of job completion times, one line per policy
    fig = jct_vs_load(sweep)                # average JCT (h) vs input job rate (jobs/h)
    fig.savefig("jct.png")

matplotlib is imported only when a figure is drawn. Figures are made on the Agg canvas without
pyplot, so nothing here needs a display or changes pyplot's global state; pass `ax` to draw into
an axes of your own (e.g. in a notebook).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from schedopt.errors import SchedoptError

__all__ = ["jct_cdf", "jct_vs_load", "require_matplotlib"]


def jct_cdf(frames: dict[str, pd.DataFrame], ax=None):
    """Empirical CDF of job completion time (hours, log scale) per policy, from each policy's
    per-job frame (column `jct_s`, seconds). Returns the figure."""
    fig, ax = _axes(ax)
    for policy, jobs in frames.items():
        hours = np.sort(jobs["jct_s"].to_numpy(dtype=float)) / 3600.0
        hours = hours[np.isfinite(hours)]
        fraction = np.arange(1, hours.size + 1) / max(hours.size, 1)
        ax.step(hours, fraction, where="post", label=policy)
    ax.set_xscale("log")
    ax.set_xlabel("Job completion time (hours, log scale)")
    ax.set_ylabel("Fraction of jobs")
    ax.set_ylim(0, 1.02)
    ax.grid(True, alpha=0.3)
    ax.legend()
    return fig


def jct_vs_load(sweep: pd.DataFrame, ax=None):
    """Average JCT (hours) against the input job rate (jobs/hour), one line with markers per
    policy, from `load_sweep`'s frame (columns rate_jobs_per_hour, policy, average_jct_s).
    Returns the figure."""
    fig, ax = _axes(ax)
    markers = "osD^v<>ph*"
    for i, (policy, rows) in enumerate(sweep.groupby("policy", sort=False)):
        rows = rows.sort_values("rate_jobs_per_hour")
        ax.plot(rows["rate_jobs_per_hour"], rows["average_jct_s"] / 3600.0,
                marker=markers[i % len(markers)], label=policy)
    ax.set_xlabel("Input job rate (jobs/hour)")
    ax.set_ylabel("Average JCT (hours)")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend()
    return fig


def require_matplotlib() -> None:
    """SchedoptError with the install command when matplotlib is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise SchedoptError("plotting needs matplotlib: pip install 'schedopt[plot]'") from None


def _axes(ax):
    """(figure, axes): `ax` and its figure, or a new figure on the Agg canvas."""
    if ax is not None:
        return ax.figure, ax
    require_matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.4), layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot()

"""Figures of policy comparisons (matplotlib, installed with `pip install 'schedopt[plot]'`).

    fig = jct_cdf(comparison.jobs)          # CDF of job completion times, one line per policy
    fig = jct_vs_load(sweep)                # average JCT (h) vs input job rate (jobs/h)
    fig = slo_miss_vs_deadline(sweep)       # SLO miss ratio vs deadline factor, per scheduler
    fig = ps_completion_time(spec)          # one parameter-server job: T vs workers, per PS count
    fig = completion_totals(totals)         # sum of completion times per policy (bars)
    fig = learning_curve(result.learning)   # learned pair rates: error vs simulated time
    fig.savefig("jct.png")

matplotlib is imported only when a figure is drawn. Figures are made on the Agg canvas without
pyplot, so nothing here needs a display or changes pyplot's global state; pass `ax` to draw into
an axes of your own (e.g. in a notebook).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from schedopt.errors import SchedoptError

__all__ = ["allox_alpha_tradeoff", "completion_totals", "jct_cdf", "jct_vs_load",
           "ps_completion_time", "require_matplotlib", "slo_miss_vs_deadline"]


def jct_cdf(frames: dict[str, pd.DataFrame], ax=None):
    """Empirical CDF of job completion time (hours, log scale) per policy, from each policy's
    per-job frame (column `jct_s`, seconds). Returns the figure."""
    fig, ax = figure_axes(ax)
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
    fig, ax = figure_axes(ax)
    _lines(ax, sweep, "rate_jobs_per_hour", "average_jct_s", "policy", 1 / 3600.0)
    ax.set_xlabel("Input job rate (jobs/hour)")
    ax.set_ylabel("Average JCT (hours)")
    return fig


def slo_miss_vs_deadline(sweep: pd.DataFrame, ax=None):
    """SLO deadline-miss ratio against the deadline factor (deadline = factor x duration), one
    line per scheduler, from a frame with columns deadline_factor, scheduler, slo_miss_ratio
    (e.g. rows of lease-run summaries, `schedopt.simulation.metrics.lease_summary`). Returns the figure."""
    fig, ax = figure_axes(ax)
    _lines(ax, sweep, "deadline_factor", "slo_miss_ratio", "scheduler", 1.0)
    ax.set_xlabel("Deadline factor (deadline = factor x job duration)")
    ax.set_ylabel("SLO deadline-miss ratio")
    ax.set_ylim(0, 1.02)
    return fig


def learning_curve(history: pd.DataFrame, ax=None):
    """How throughputs learned in a simulation converged: the estimate's mean relative error on
    the pair rates (all measured pairs, and those hidden at the start), in %, against simulated
    time (hours), from `SimulationResult.learning`. Returns the figure."""
    if history is None or history.empty:
        raise SchedoptError("no learning history: simulate with learn_throughputs=True "
                            "(--learn-throughputs)")
    fig, ax = figure_axes(ax)
    hours = history["time_s"] / 3600.0
    ax.step(hours, history["pair_mre"] * 100, where="post", marker="o", label="all pairs")
    ax.step(hours, history["hidden_mre"] * 100, where="post", marker="s",
            label="pairs hidden at the start")
    _labelled(ax, "Simulated time (hours)", "Mean relative error of pair rates (%)")
    return fig


def _labelled(ax, x: str, y: str) -> None:
    """Axis labels, y from 0, a light grid and the legend."""
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend()


def _lines(ax, frame: pd.DataFrame, x: str, y: str, group: str, scale: float) -> None:
    """One line with markers per value of `group`: frame[y] * scale against frame[x]."""
    markers = "osD^v<>ph*"
    for i, (name, rows) in enumerate(frame.groupby(group, sort=False)):
        rows = rows.sort_values(x)
        ax.plot(rows[x], rows[y] * scale, marker=markers[i % len(markers)], label=name)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend()


def require_matplotlib() -> None:
    """SchedoptError with the install command when matplotlib is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise SchedoptError("plotting needs matplotlib: pip install 'schedopt[plot]'") from None


def figure_axes(ax):
    """(figure, axes): `ax` and its figure, or a new figure on the Agg canvas."""
    if ax is not None:
        return ax.figure, ax
    require_matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.4), layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot()


def allox_alpha_tradeoff(sweep: pd.DataFrame, fairness: str = "jain_share", ax=None):
    """AlloX's fairness knob: average JCT (s, left axis, circles) and a fairness index (right
    axis, squares; column `fairness`, default the time-averaged Jain index of the users' shares)
    against alpha, from `schedopt.simulation.allox_sim.alpha_sweep`'s frame (columns alpha,
    average_jct_s and `fairness`). The right axis runs from the lowest index rounded down to a
    tenth (0.9 at most) up to 1. Returns the figure."""
    if fairness not in sweep.columns:
        raise SchedoptError(f"the sweep has no column {fairness!r}; expected one of "
                            f"{', '.join(map(str, sweep.columns))}")
    fig, ax = figure_axes(ax)
    rows = sweep.sort_values("alpha")
    jct_line, = ax.plot(rows["alpha"], rows["average_jct_s"], marker="o", color="C0",
                        label="average JCT")
    ax.set_xlabel("alpha (fraction of users in each matching, lowest share first)")
    ax.set_ylabel("Average JCT (s)", color="C0")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    right = ax.twinx()
    fair_line, = right.plot(rows["alpha"], rows[fairness], marker="s", color="C1",
                            linestyle="--", label=f"fairness ({fairness})")
    right.set_ylabel("Jain's fairness index (1 = equal)", color="C1")
    lowest = float(np.nanmin(rows[fairness].to_numpy(dtype=float))) if len(rows) else 0.0
    right.set_ylim(min(np.floor(lowest * 10.0) / 10.0, 0.9), 1.0)  # tenths up to 1 (= equal)
    ax.legend(handles=[jct_line, fair_line], loc="lower left")
    return fig


def ps_completion_time(spec, workers=range(1, 17), ps=(1, 2, 4, 8), ax=None):
    """One parameter-server job (`ParameterServerSpec`): its completion time T(w, p) in hours
    against the number of workers w, one line per PS count p, and (dotted) the compute-only
    time, with no communication at all (schedopt.policies.smd.model). Returns the figure."""
    from schedopt.policies.smd.model import completion_time_parts

    fig, ax = figure_axes(ax)
    w = np.asarray(list(workers), dtype=float)
    markers = "osD^v<>ph*"
    for k, p in enumerate(ps):
        parts = completion_time_parts(spec, w, p)
        ax.plot(w, parts.completion_s / 3600.0, marker=markers[k % len(markers)], label=f"{p} PS")
    compute = completion_time_parts(spec, w, 1)
    ax.plot(w, compute.iterations * compute.compute_s / 3600.0, linestyle=":", color="0.4",
            label="compute only")
    _labelled(ax, "Workers w", "Completion time T(w, p) (hours)")
    return fig


def completion_totals(totals: dict[str, float], ax=None):
    """Sum of completion times (hours) per policy as labelled bars, from {policy: seconds}
    (e.g. each parameter-server policy's Result.objective). Returns the figure."""
    fig, ax = figure_axes(ax)
    names = list(totals)
    hours = np.array([totals[n] for n in names], dtype=float) / 3600.0
    bars = ax.bar(names, hours, color=[f"C{i}" for i in range(len(names))])
    ax.bar_label(bars, labels=[f"{h:,.0f}" for h in hours], padding=2)
    ax.set_ylabel("Sum of completion times (hours)")
    ax.set_ylim(0, hours.max() * 1.12 if hours.size else 1)
    ax.grid(True, axis="y", alpha=0.3)
    return fig

"""Compare policies by simulation: one trace under several policies, or a sweep over load.

    table, jobs = compare(trace, ["max_min_fairness", "max_min_fairness_agnostic"])
    table.loc["max_min_fairness", "average_jct_s"]      # one row per policy, summary metrics
    jobs["max_min_fairness"]                             # that policy's per-job frame

    sweep = load_sweep(performance, cluster, [1, 2, 4], policies, num_jobs=100, seed=0)
    # one row per (rate, policy): average JCT of the same synthetic trace under each policy

Times are seconds unless a column name says hours (`_h`); rates are jobs per hour.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd
from tqdm import tqdm

from schedopt.errors import SchedoptError
from schedopt.instance.model import Instance
from schedopt.core.registry import resolve
from schedopt.simulation import SimulationConfig, SimulationResult, simulate

__all__ = ["Comparison", "compare", "load_sweep", "run_number", "summary_row", "window_jct"]


class Comparison(NamedTuple):
    """table: one row per policy (index `policy`), the columns of `summary_row`;
    jobs: policy -> that run's per-job frame (`SimulationResult.jobs`);
    results: policy -> the whole SimulationResult (rounds, config)."""

    table: pd.DataFrame
    jobs: dict[str, pd.DataFrame]
    results: dict[str, SimulationResult]


def summary_row(summary: dict, gpu_counts: dict[str, int]) -> dict:
    """A run's `summary` as one flat row: every scalar key as is (seconds); for allocation runs
    `utilization_<type>` per GPU type and `utilization`: busy GPU-seconds over (all GPUs x
    makespan), i.e. the per-type utilizations weighted by `gpu_counts` (GPU type -> GPUs).
    Lease runs keep their scalar utilization (of the pool); queue runs their
    utilization_gpu / utilization_cpu. Dict-valued keys other than utilization (per-user JCT)
    are left out."""
    row = {key: value for key, value in summary.items() if not isinstance(value, dict)}
    per_type = summary.get("utilization")
    if not isinstance(per_type, dict):
        return row
    for gpu_type, value in per_type.items():
        row[f"utilization_{gpu_type}"] = value
    weights = np.array([gpu_counts[t] for t in per_type], dtype=float)
    values = np.array(list(per_type.values()), dtype=float)
    row["utilization"] = float(values @ weights / weights.sum()) if weights.sum() else 0.0
    return row


def compare(trace: Instance, policies: list[str], config: SimulationConfig = SimulationConfig(),
            progress: bool = False) -> Comparison:
    """Simulate `trace` under each of `policies` (names as `schedopt policies` lists them,
    gavel:NAME or MODULE:NAME; policies of any decision kind) with the same `config`;
    `progress` shows a bar over the simulations."""
    _check_policies(policies)
    with simulations_bar(len(policies), progress) as bar:
        return _compare(trace, policies, config, bar)


def _compare(trace: Instance, policies: list[str], config: SimulationConfig, bar: tqdm) -> Comparison:
    counts = {name: t.count for name, t in trace.cluster.gpu_types.items()}
    results = {}
    for policy in policies:
        results[policy] = simulate(trace, policy, config)
        bar.update(1)
    table = pd.DataFrame([summary_row(r.summary, counts) for r in results.values()],
                         index=pd.Index(list(results), name="policy"))
    return Comparison(table, {p: r.jobs for p, r in results.items()}, results)


def window_jct(jobs: pd.DataFrame, window: tuple[int, int] | None = None) -> np.ndarray:
    """JCTs (s) of the jobs `window[0]` up to, not including, `window[1]` in arrival order (ties
    in trace order), as Gavel's experiments measure steady state; all jobs when None."""
    jct = jobs.sort_values("arrival_s", kind="stable")["jct_s"].to_numpy()
    if window is None:
        return jct
    _check_window(window, len(jct))
    return jct[window[0]:window[1]]


def load_sweep(performance: dict, cluster: dict, rates_jobs_per_hour: list[float],
               policies: list[str], num_jobs: int, seed: int = 0,
               config: SimulationConfig = SimulationConfig(), window: tuple[int, int] | None = None,
               progress: bool = False, **trace_options) -> pd.DataFrame:
    """Average JCT against load: for each rate, one `synthetic_trace(performance, cluster,
    num_jobs, rate, seed, **trace_options)` simulated under every policy (the same trace for
    each policy; the same seed at every rate, so only the arrival gaps scale with 1/rate).

    `window=(start, end)` averages JCT over jobs start..end-1 in arrival order only (measure
    steady state, leaving out the warm-up and the drain after the last arrival); default all.
    trace_options: `single_gpu`, `reference`, `deadline_factor` of `synthetic_trace`.

    Rows (rate, policy) with columns rate_jobs_per_hour, policy, jobs_measured, average_jct_s,
    average_jct_h, p90_jct_s (over the window), makespan_s, utilization, rho_max,
    solve_seconds_mean (over the whole run).
    """
    from schedopt.traces import synthetic_trace

    _check_policies(policies)
    if not rates_jobs_per_hour:
        raise SchedoptError("give at least one arrival rate (jobs/hour)")
    if window is not None:
        _check_window(window, num_jobs)  # before any simulation
    trace_options.setdefault("colocation", False)  # the simulator does not co-locate jobs
    rows = []
    with simulations_bar(len(rates_jobs_per_hour) * len(policies), progress) as bar:
        for rate in rates_jobs_per_hour:
            trace = synthetic_trace(performance, cluster, num_jobs, rate, seed, **trace_options)
            table, jobs, _ = _compare(trace, policies, config, bar)
            for policy in policies:
                jct = window_jct(jobs[policy], window)
                row = table.loc[policy]
                rows.append({
                    "rate_jobs_per_hour": float(rate), "policy": policy,
                    "jobs_measured": int(jct.size), "average_jct_s": float(jct.mean()),
                    "average_jct_h": float(jct.mean()) / 3600.0,
                    "p90_jct_s": float(np.percentile(jct, 90)),
                    "makespan_s": float(row["makespan_s"]),
                    "utilization": run_number(row, "utilization"),
                    "rho_max": run_number(row, "rho_max"),
                    "solve_seconds_mean": run_number(row, *SOLVE_SECONDS),
                })
    return pd.DataFrame(rows)


# Where a run's summary keeps the policy's calls and their mean / max seconds, by decision kind
# (allocations, leases, queues).
SOLVES = ("policy_solves", "leases", "decisions")
SOLVE_SECONDS = ("solve_seconds_mean", "decide_seconds_mean")
SOLVE_SECONDS_MAX = ("solve_seconds_max", "decide_seconds_max")


def run_number(row, *keys: str) -> float | None:
    """The first of `keys` the row has, as a float (None when none has a number)."""
    for key in keys:
        value = row.get(key)
        if value is not None and not pd.isna(value):
            return float(value)
    return None


def simulations_bar(total: int, enabled: bool) -> tqdm:
    """A tqdm bar (on stderr) over `total` simulations when `enabled`, else a silent one."""
    return tqdm(total=total, unit="sim", desc="simulations", disable=not enabled)


def _check_policies(policies: list[str]) -> None:
    if not policies:
        raise SchedoptError("give at least one policy to compare")
    twice = sorted({p for p in policies if policies.count(p) > 1})
    if twice:
        raise SchedoptError(f"policy listed more than once: {', '.join(twice)}")
    for policy in policies:
        resolve(policy)  # PolicyError (one line) for an unknown name, before any simulation


def _check_window(window: tuple[int, int], num_jobs: int) -> None:
    start, end = window
    if not 0 <= start < end <= num_jobs:
        raise SchedoptError(f"window {start}:{end} must satisfy 0 <= start < end <= the number "
                            f"of jobs ({num_jobs})")

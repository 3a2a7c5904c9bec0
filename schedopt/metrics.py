"""Run-level metrics of a simulation, from its per-job frame and GPU busy time."""

from __future__ import annotations

import numpy as np
import pandas as pd


def summarize(jobs: pd.DataFrame, busy_gpu_seconds: np.ndarray, capacity: np.ndarray,
              cost_per_hour: np.ndarray, gpu_types: tuple[str, ...],
              solve_seconds: list[float]) -> dict:
    """JCT statistics (s), makespan (s, first arrival to last completion), finish-time fairness
    rho (JCT / time under the isolated share), deadline-miss ratio, GPU utilization per type
    (busy GPU-seconds / (GPUs x makespan)), cost ($) and policy solve times (s)."""
    jct = jobs["jct_s"].to_numpy()
    start = float(jobs["arrival_s"].min()) if len(jobs) else 0.0
    makespan = float(jobs["completion_s"].max()) - start if len(jobs) else 0.0
    rho = jobs["rho"].to_numpy()
    with_deadline = jobs["missed_deadline"].dropna()
    span = max(makespan, 1e-12)
    return {
        "jobs": int(len(jobs)),
        "average_jct_s": float(np.mean(jct)) if len(jobs) else 0.0,
        "p50_jct_s": percentile(jct, 50), "p90_jct_s": percentile(jct, 90),
        "p99_jct_s": percentile(jct, 99),
        "makespan_s": makespan,
        "rho_min": percentile(rho, 0), "rho_median": percentile(rho, 50),
        "rho_max": percentile(rho, 100),
        "deadline_miss_ratio": float(with_deadline.mean()) if len(with_deadline) else None,
        "utilization": {t: float(b / (c * span)) for t, b, c in zip(gpu_types, busy_gpu_seconds, capacity)},
        "cost_dollars": float(np.sum(busy_gpu_seconds * cost_per_hour) / 3600.0),
        "policy_solves": len(solve_seconds),
        "solve_seconds_mean": float(np.mean(solve_seconds)) if solve_seconds else 0.0,
        "solve_seconds_max": float(np.max(solve_seconds)) if solve_seconds else 0.0,
    }


def percentile(values: np.ndarray, q: float) -> float | None:
    """The q-th percentile of the finite values, None if there are none."""
    finite = values[np.isfinite(values)]
    return float(np.percentile(finite, q)) if finite.size else None

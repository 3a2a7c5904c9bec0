"""Run-level metrics of a simulation, from its per-job frame: JCT statistics and makespan
(every decision kind), finish-time fairness, GPU utilization and cost (allocations), SLO misses
and preemptions (leases), per-user JCT and Jain's index (queues). Times are seconds.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def percentile(values: np.ndarray, q: float) -> float | None:
    """The q-th percentile of the finite values, None if there are none."""
    finite = values[np.isfinite(values)]
    return float(np.percentile(finite, q)) if finite.size else None


def makespan(jobs: pd.DataFrame) -> float:
    """Seconds from the first arrival to the last completion (0 for no jobs)."""
    if len(jobs) == 0:
        return 0.0
    return float(jobs["completion_s"].max()) - float(jobs["arrival_s"].min())


def jct_summary(jobs: pd.DataFrame, *quantiles: int) -> dict:
    """jobs, average_jct_s and p<q>_jct_s for each of `quantiles` (s), makespan_s."""
    jct = jobs["jct_s"].to_numpy()
    out = {"jobs": int(len(jobs)), "average_jct_s": float(np.mean(jct)) if len(jobs) else 0.0}
    out.update({f"p{q}_jct_s": percentile(jct, q) for q in quantiles})
    out["makespan_s"] = makespan(jobs)
    return out


def summarize(jobs: pd.DataFrame, busy_gpu_seconds: np.ndarray, capacity: np.ndarray,
              cost_per_hour: np.ndarray, gpu_types: tuple[str, ...],
              solve_seconds: list[float]) -> dict:
    """Allocation runs: JCT statistics (s), makespan (s, first arrival to last completion),
    finish-time fairness rho (JCT / time under the isolated share), deadline-miss ratio, GPU
    utilization per type (busy GPU-seconds / (GPUs x makespan)), cost ($) and policy solve
    times (s)."""
    out = jct_summary(jobs, 50, 90, 99)
    rho = jobs["rho"].to_numpy()
    with_deadline = jobs["missed_deadline"].dropna()
    span = max(out["makespan_s"], 1e-12)
    return {
        **out,
        "rho_min": percentile(rho, 0), "rho_median": percentile(rho, 50),
        "rho_max": percentile(rho, 100),
        "deadline_miss_ratio": float(with_deadline.mean()) if len(with_deadline) else None,
        "utilization": {t: float(b / (c * span))
                        for t, b, c in zip(gpu_types, busy_gpu_seconds, capacity)},
        "cost_dollars": float(np.sum(busy_gpu_seconds * cost_per_hour) / 3600.0),
        "policy_solves": len(solve_seconds),
        "solve_seconds_mean": float(np.mean(solve_seconds)) if solve_seconds else 0.0,
        "solve_seconds_max": float(np.max(solve_seconds)) if solve_seconds else 0.0,
    }


def lease_summary(frame: pd.DataFrame, leases: pd.DataFrame, gpu_type: str, gpus: int,
                  lease_seconds: float) -> dict:
    """Lease runs: SLO deadline-miss ratio, value-weighted miss (1 - value earned / value
    possible), best-effort average JCT (s), preemptions, utilization (GPU-seconds held / (pool
    x span)), and decision statistics."""
    slo = frame[frame["slo"]]
    best_effort = frame[~frame["slo"]]
    out = jct_summary(frame, 90)
    held = float(leases["gpus_held"].sum()) * lease_seconds
    milp = leases["milp_gap"].dropna()
    possible = float(slo["value_max"].sum())
    return {
        "jobs": out["jobs"], "gpu_type": gpu_type, "gpus": int(gpus),
        "slo_jobs": int(len(slo)), "best_effort_jobs": int(len(best_effort)),
        "slo_miss_ratio": float(1.0 - slo["met_deadline"].mean()) if len(slo) else None,
        "value_weighted_miss": (1.0 - float(slo["value_earned"].sum()) / possible
                                if possible > 0 else None),
        "best_effort_average_jct_s": (float(best_effort["jct_s"].mean())
                                      if len(best_effort) else None),
        "average_jct_s": out["average_jct_s"], "p90_jct_s": out["p90_jct_s"],
        "makespan_s": out["makespan_s"],
        "preemptions": int(frame["preemptions"].sum()), "starts": int(frame["starts"].sum()),
        "admitted": int(frame["admitted"].sum()), "demoted": int(frame["demoted"].sum()),
        "utilization": held / (gpus * max(out["makespan_s"], 1e-12)),
        "leases": int(len(leases)),
        "decide_seconds_mean": float(leases["decide_s"].mean()) if len(leases) else 0.0,
        "decide_seconds_max": float(leases["decide_s"].max()) if len(leases) else 0.0,
        "milp_solves": int(len(milp)),
        "milp_gap_max": float(milp.max()) if len(milp) else None,
        "milp_fallbacks": int(leases["used_fallback"].fillna(False).astype(bool).sum()),
    }


def queue_summary(jobs: pd.DataFrame, busy: np.ndarray, is_gpu: np.ndarray,
                  decisions: pd.DataFrame) -> dict:
    """Queue runs (seconds): jobs, average_jct_s, p50/p90/p99_jct_s, makespan_s,
    user_average_jct_s (user -> average JCT), max_user_average_jct_s, jain_user_jct (Jain's
    index of the users' average JCTs), jain_share (`share_fairness`), utilization_gpu and
    utilization_cpu (busy machine-seconds `busy` (K,) / (machines x makespan); None without such
    machines), decisions, solve_seconds_mean/max (of the decisions that timed a solver)."""
    out = jct_summary(jobs, 50, 90, 99)
    user_jct = jobs.groupby("user", sort=True)["jct_s"].mean()
    span = max(out["makespan_s"], 1e-12)

    def utilization(mask: np.ndarray) -> float | None:
        return float(busy[mask].sum() / (mask.sum() * span)) if mask.any() else None

    solves = decisions["solve_seconds"].dropna()
    return {
        **out,
        "user_average_jct_s": {str(u): float(v) for u, v in user_jct.items()},
        "max_user_average_jct_s": float(user_jct.max()) if len(jobs) else None,
        "jain_user_jct": jain_index(user_jct),
        "jain_share": share_fairness(jobs),
        "utilization_gpu": utilization(is_gpu),
        "utilization_cpu": utilization(~is_gpu),
        "decisions": int(len(decisions)),
        "solve_seconds_mean": float(solves.mean()) if len(solves) else 0.0,
        "solve_seconds_max": float(solves.max()) if len(solves) else 0.0,
    }


def jain_index(values) -> float | None:
    """Jain's fairness index (sum x)^2 / (n sum x^2) of non-negative values: 1 when all are
    equal, 1/n when one value holds everything; None for no values (or all zero)."""
    x = np.asarray(list(values), dtype=float)
    square = float((x ** 2).sum())
    return float(x.sum() ** 2 / (x.size * square)) if x.size and square > 0 else None


def _received(t: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """sum_j clip(t - start_j, 0, end_j - start_j) at each time in `t` (machine-seconds run by
    then), from sorted starts and ends: k t - (sum of the k starts before t), less the same
    over the ends before t."""
    def ramp(points: np.ndarray) -> np.ndarray:
        points = np.sort(points)
        before = np.searchsorted(points, t, side="right")
        return before * t - np.concatenate([[0.0], np.cumsum(points)])[before]
    return ramp(start) - ramp(end)


def share_fairness(jobs: pd.DataFrame) -> float | None:
    """Time-averaged Jain index of the users' shares, what AlloX's fairness knob equalizes: at
    time t, the users with a job in the system (arrived, not completed) and their shares
    (machine-seconds received since the start, running jobs counting their elapsed part);
    Jain's index of those shares (1 while a single user, or none with a share yet, is active),
    averaged over the time some job is in the system. Evaluated at the midpoint of each
    interval between events (arrivals, starts, completions), weighted by its length; None for
    no jobs."""
    if len(jobs) == 0:
        return None
    arrival, start = jobs["arrival_s"].to_numpy(), jobs["start_s"].to_numpy()
    completion, processing = jobs["completion_s"].to_numpy(), jobs["processing_s"].to_numpy()
    events = np.unique(np.concatenate([arrival, start, completion]))
    if events.size < 2:
        return 1.0
    mid, length = (events[:-1] + events[1:]) / 2, np.diff(events)
    _, owner = np.unique(jobs["user"].to_numpy(dtype=str), return_inverse=True)
    users = owner.max() + 1
    share = np.zeros((mid.size, users))
    active = np.zeros((mid.size, users), dtype=bool)
    for user in range(users):  # per user, sorted times and prefix sums: no jobs x events array
        mine = owner == user
        share[:, user] = _received(mid, start[mine], start[mine] + processing[mine])
        arrived = np.searchsorted(np.sort(arrival[mine]), mid, side="right")
        left = np.searchsorted(np.sort(completion[mine]), mid, side="right")
        active[:, user] = arrived > left
    x = np.where(active, share, 0.0)
    square = (x ** 2).sum(axis=1)
    index = np.divide(x.sum(axis=1) ** 2, active.sum(axis=1) * square,
                      out=np.ones(mid.size), where=square > 0)
    weight = np.where(active.any(axis=1), length, 0.0)
    return float((index * weight).sum() / weight.sum()) if weight.sum() > 0 else 1.0

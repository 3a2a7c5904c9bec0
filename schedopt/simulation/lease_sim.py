"""Lease-based simulation: Chronus against EDF and SRTF on one homogeneous GPU pool.

    result = simulate_leases(load_instance("trace.json"), "chronus")
    result.jobs      # DataFrame, one row per job: arrival, completion, JCT (s), deadline met, ...
    result.summary   # dict: SLO miss ratio, value-weighted miss, best-effort average JCT, ...

Time is cut into leases of `lease_seconds` starting at t = 0 of the trace clock. Decisions are
taken only at lease boundaries: a job arriving mid-lease waits for the next boundary, and the
GPUs of a job finishing mid-lease stay idle until then (they are leased). A job that starts or
resumes loses `resume_overhead_s` of its lease; one that keeps its GPUs from the previous lease
does not. A *preemption* is an unfinished job that held GPUs in the previous lease and does not in
this one.

Only one GPU type is used (Chronus schedules a homogeneous pool): `gpu_type`, by default the type
with the most GPUs. A job runs `remaining_steps / throughput[gpu_type]` seconds on
`scale_factor` GPUs, rounded up to 1, 2, 4, 8n for consolidation on 8-GPU nodes (`round_up`;
kept as requested when the rounded count exceeds the pool). Jobs with `deadline` or
`deadline_options` are SLO jobs (`Job.slo_options`); the rest are best effort.

Schedulers (`SCHEDULERS`), each deciding who holds GPUs in the next lease:
- `chronus`: `schedopt.policies.chronus.boundary`: demotion, admission control of the SLO
  jobs that arrived, the lease MILP, shortest-remaining-service fill of what is left.
- `edf`: earliest deadline first over every waiting job (best-effort jobs last, by arrival),
  skipping a job that does not fit; no admission control, so hopeless jobs keep running.
- `srtf`: shortest remaining running time first over every waiting job, skipping what does not
  fit; deadlines are ignored.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from schedopt.errors import SchedoptError
from schedopt.policies.chronus.boundary import (
    LeaseInstance,
    LeaseSettings,
    admit_arrivals,
    demote_hopeless,
    fill_in_order,
    plan_boundary,
)
from schedopt.instance.model import Instance
from schedopt.metrics import percentile
from schedopt.simulation.common import progress_bar

__all__ = ["SCHEDULERS", "LeaseSimulationConfig", "LeaseSimulationResult", "simulate_leases"]

SCHEDULERS = ("chronus", "edf", "srtf")
EPS_S = 1e-6  # seconds: finishing this close to a deadline or a lease end counts as within it


@dataclass(frozen=True)
class LeaseSimulationConfig:
    """settings: lease length, resume overhead, window, sigma and MILP solver (`LeaseSettings`);
    gpu_type: the pool (None: the type with the most GPUs); round_up: consolidation round-up of
    GPU counts; max_leases: a run longer than this many leases is an error."""

    settings: LeaseSettings = field(default_factory=LeaseSettings)
    gpu_type: str | None = None
    round_up: bool = True
    max_leases: int = 1_000_000


@dataclass
class LeaseSimulationResult:
    """jobs: one row per job; summary: the run's metrics; leases: one row per lease (start s,
    jobs running, GPUs held, MILP seconds, gap, fallback)."""

    scheduler: str
    jobs: pd.DataFrame
    summary: dict
    leases: pd.DataFrame
    config: LeaseSimulationConfig


class _State:
    """Mutable per-job state over a run (arrays over N jobs)."""

    def __init__(self, data: LeaseInstance):
        n = data.num_jobs
        self.remaining = data.run_s.copy()
        self.completion = np.where(self.remaining <= 0, data.arrival, np.nan)
        self.seen = np.zeros(n, dtype=bool)
        self.admitted = np.zeros(n, dtype=bool)
        self.demoted = np.zeros(n, dtype=bool)
        self.ran_before = np.zeros(n, dtype=bool)
        self.preemptions = np.zeros(n, dtype=np.int64)
        self.starts = np.zeros(n, dtype=np.int64)
        self.reserved: dict[int, tuple[int, ...]] = {}  # admitted job -> absolute lease numbers


def _order_by(keys: tuple[np.ndarray, ...], among: np.ndarray) -> np.ndarray:
    """`among` (indices) sorted by `keys` (last key primary, as np.lexsort), ties by index."""
    return among[np.lexsort((among, *(k[among] for k in keys)))]


def simulate_leases(trace: Instance, scheduler: str = "chronus",
                    config: LeaseSimulationConfig = LeaseSimulationConfig(),
                    progress: bool = False) -> LeaseSimulationResult:
    """Replay `trace` lease by lease under `scheduler` (one of `SCHEDULERS`)."""
    if scheduler not in SCHEDULERS:
        raise SchedoptError(f"unknown lease scheduler {scheduler!r}; expected one of "
                            f"{', '.join(SCHEDULERS)}")
    data = LeaseInstance.from_instance(trace, config.gpu_type, config.round_up)
    settings = config.settings
    L = settings.lease_seconds
    state = _State(data)
    deadline = data.first_deadline()
    rows: list[tuple] = []
    bar = progress_bar(data.num_jobs, progress)
    bar.update(int(np.sum(~np.isnan(state.completion))))
    lease = 0
    while np.isnan(state.completion).any():
        now = lease * L
        unfinished = np.isnan(state.completion)
        if not np.any(unfinished & (data.arrival <= now + EPS_S)):
            lease = int(np.ceil((data.arrival[unfinished].min() - EPS_S) / L))
            now = lease * L
        if lease > config.max_leases:
            raise SchedoptError(f"the run passed {config.max_leases} leases; raise max_leases")
        arrived = unfinished & (data.arrival <= now + EPS_S)
        active = np.flatnonzero(arrived)
        new = ~state.seen[active]
        state.seen[active] = True
        jobs = data.lease_jobs(active, state.remaining)
        clock = time.perf_counter()
        plan = None
        if scheduler == "chronus":
            admitted = state.admitted[active]
            demote = demote_hopeless(jobs, admitted, now, settings)
            admitted &= ~demote
            position = {int(g): i for i, g in enumerate(active)}
            reserved = {position[g]: tuple(t - lease for t in leases)
                        for g, leases in state.reserved.items()
                        if g in position and admitted[position[g]]}
            arriving = _order_by((data.arrival[active],), np.flatnonzero(new))
            admitted, reserved = admit_arrivals(jobs, admitted, arriving, reserved,
                                                data.capacity, now, settings)
            decision = plan_boundary(jobs, admitted, data.capacity, now, settings)
            demote[decision.unplaced] = True
            state.demoted[active[demote]] = True
            state.admitted[active] = admitted & ~demote
            state.reserved = {int(active[i]): tuple(int(t) + lease for t in leases)
                              for i, leases in decision.reserved.items()}
            running, plan = decision.running, decision.plan
        else:
            keys = ((data.arrival[active], deadline[active]) if scheduler == "edf"
                    else (data.arrival[active], state.remaining[active]))
            order = _order_by(keys, np.arange(active.size))
            running = np.zeros(active.size, dtype=bool)
            running[fill_in_order(jobs.gpus, order, data.capacity)] = True
        decide_s = time.perf_counter() - clock
        finished = _run_lease(data, state, active, running, now, settings)
        bar.update(finished)
        rows.append((now, int(running.sum()), int(jobs.gpus[running].sum()), decide_s,
                     None if plan is None else plan.gap,
                     None if plan is None else plan.used_fallback))
        lease += 1
    bar.close()
    return _result(scheduler, config, data, state, rows)


def _run_lease(data: LeaseInstance, state: _State, active: np.ndarray, running: np.ndarray,
               now: float, settings: LeaseSettings) -> int:
    """Advance the `running` jobs (mask over `active`) through one lease; returns how many
    finished."""
    run = active[running]
    idle = active[~running]
    state.preemptions[idle[state.ran_before[idle]]] += 1
    state.ran_before[idle] = False
    overhead = np.where(state.ran_before[run], 0.0, settings.resume_overhead_s)
    state.starts[run] += ~state.ran_before[run]
    useful = settings.lease_seconds - overhead
    done = state.remaining[run] <= useful + EPS_S
    state.completion[run[done]] = now + overhead[done] + state.remaining[run[done]]
    state.remaining[run] = np.maximum(state.remaining[run] - useful, 0.0)
    state.ran_before[run] = ~done
    return int(done.sum())


def _result(scheduler: str, config: LeaseSimulationConfig, data: LeaseInstance, state: _State,
            rows: list[tuple]) -> LeaseSimulationResult:
    completion = state.completion
    met = completion[data.option_job] <= data.option_deadline_s + EPS_S
    earned = np.zeros(data.num_jobs)
    np.maximum.at(earned, data.option_job[met], data.option_value[met])
    best = np.zeros(data.num_jobs)
    np.maximum.at(best, data.option_job, data.option_value)
    slo = np.bincount(data.option_job, minlength=data.num_jobs) > 0
    deadline = data.first_deadline()
    jct = completion - data.arrival
    frame = pd.DataFrame({
        "job": data.ids, "gpus": data.gpus, "run_s": data.run_s, "arrival_s": data.arrival,
        "completion_s": completion, "jct_s": jct, "slo": slo,
        "deadline_s": np.where(slo, deadline - data.arrival, np.nan),
        "met_deadline": pd.array(np.where(slo, completion <= deadline + EPS_S, None),
                                 dtype="boolean"),
        "value_earned": np.where(slo, earned, np.nan), "value_max": np.where(slo, best, np.nan),
        "admitted": state.admitted, "demoted": state.demoted,
        "starts": state.starts, "preemptions": state.preemptions,
    }).set_index("job")
    leases = pd.DataFrame(rows, columns=["start_s", "jobs_running", "gpus_held", "decide_s",
                                         "milp_gap", "used_fallback"])
    return LeaseSimulationResult(scheduler, frame, _summary(frame, leases, data, config.settings.lease_seconds), leases, config)


def _summary(frame: pd.DataFrame, leases: pd.DataFrame, data: LeaseInstance,
             lease_seconds: float) -> dict:
    """SLO deadline-miss ratio, value-weighted miss (1 - value earned / value possible),
    best-effort average JCT (s), preemptions, utilization (GPU-seconds held / (pool x span)),
    and decision statistics."""
    slo = frame[frame["slo"]]
    best_effort = frame[~frame["slo"]]
    jct = frame["jct_s"].to_numpy()
    start = float(frame["arrival_s"].min()) if len(frame) else 0.0
    makespan = float(frame["completion_s"].max()) - start if len(frame) else 0.0
    held = float(leases["gpus_held"].sum()) * lease_seconds
    milp = leases["milp_gap"].dropna()
    possible = float(slo["value_max"].sum())
    return {
        "jobs": int(len(frame)), "gpu_type": data.gpu_type, "gpus": int(data.capacity),
        "slo_jobs": int(len(slo)), "best_effort_jobs": int(len(best_effort)),
        "slo_miss_ratio": float(1.0 - slo["met_deadline"].mean()) if len(slo) else None,
        "value_weighted_miss": (1.0 - float(slo["value_earned"].sum()) / possible
                                if possible > 0 else None),
        "best_effort_average_jct_s": (float(best_effort["jct_s"].mean())
                                      if len(best_effort) else None),
        "average_jct_s": float(np.mean(jct)) if len(frame) else 0.0,
        "p90_jct_s": percentile(jct, 90), "makespan_s": makespan,
        "preemptions": int(frame["preemptions"].sum()), "starts": int(frame["starts"].sum()),
        "admitted": int(frame["admitted"].sum()), "demoted": int(frame["demoted"].sum()),
        "utilization": held / (data.capacity * max(makespan, 1e-12)),
        "leases": int(len(leases)),
        "decide_seconds_mean": float(leases["decide_s"].mean()) if len(leases) else 0.0,
        "decide_seconds_max": float(leases["decide_s"].max()) if len(leases) else 0.0,
        "milp_solves": int(len(milp)),
        "milp_gap_max": float(milp.max()) if len(milp) else None,
        "milp_fallbacks": int(leases["used_fallback"].fillna(False).astype(bool).sum()),
    }


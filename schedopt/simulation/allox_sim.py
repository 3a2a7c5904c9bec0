"""Online AlloX: an event-driven simulation of non-preemptive jobs on GPU and CPU machines.

    result = simulate_allox(load_instance("instances/allox-40.json"), "allox", alpha=1.0)
    result.jobs       # DataFrame, one row per job: arrival_s, start_s, completion_s, jct_s, machine
    result.summary    # dict: average/p90 JCT, makespan, per-user JCT, Jain index, utilization
    sweep = alpha_sweep(instance, [0.25, 0.5, 0.75, 1.0])   # average JCT and fairness per alpha

Machines are every GPU (one machine each) and every CPU machine; job m takes p[m, k] seconds on
machine k (`schedopt.policies.allox.matching.allox_processing_times`, np.inf = cannot run there).
A started job runs to completion on its machine: nothing is ever preempted or migrated.

Events are job arrivals and job completions. At each event time, completions free their
machines and arrivals join the queue; then, if some machine is free and some job is queued, the
scheduler starts jobs on free machines (a *decision*). Schedulers (`SCHEDULERS`):

- `allox`: docs/formulations.md §4 online. The queued jobs that pass the fairness filter are
  matched to (machine, position-from-last) slots at minimum total completion time, busy
  machines entering with the time their running job ends (free machines with the decision time);
  the first job of each *free* machine's queue starts, the rest of the matching is thrown away
  (it is solved again at the next decision). A free machine whose queue is empty stays idle
  until the next event, even if jobs wait: the matching found it better to queue them on a
  faster machine that is still busy.
  Fairness filter (alpha in (0, 1]): only the jobs of the ceil(alpha * U) users with the lowest
  current share enter the matching, U = users with queued jobs. A user's *share* is the
  machine-seconds its jobs have received so far (GPU and CPU seconds alike; a running job counts
  the part it has run). alpha = 1 is pure JCT minimization.
- `sjf`: shortest job first on the faster device, non-preemptive. A job's faster device is the
  set of machines where its processing time is smallest (all GPUs of its fastest type, or all
  CPU machines; within 1e-9 relative); it runs only there. A free machine takes, among the
  queued jobs whose faster device it belongs to, the one with the smallest processing time
  (ties: earlier arrival, then trace order). Free machines are filled in machine order.
- `fifo`: jobs in arrival order (ties: trace order); each takes, among the free machines that
  can run it, the one where it runs fastest (ties: machine order, GPUs first); a job that no
  free machine can run waits and later jobs may pass it.
- `drf`: dominant resource fairness over two resources, GPU machines and CPU machines. A user's
  dominant share = max(GPUs running its jobs / all GPUs, CPU machines running its jobs / all
  CPU machines). Each free machine in machine order (GPUs first) goes to the user with the
  lowest dominant share among those with a queued job that can run there (ties: less
  machine-seconds received, then user order), which starts its job with the smallest processing
  time on that machine. Speed-agnostic: a GPU-friendly job may run on a CPU machine.

Times are seconds of simulated time, measured from the instance's clock (arrival_time).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from schedopt.errors import SchedoptError
from schedopt.policies.allox.matching import (
    allox_processing_times,
    allox_schedule,
    fairness_filter,
)
from schedopt.instance.model import Instance
from schedopt.metrics import percentile
from schedopt.simulation.common import progress_bar

__all__ = ["SCHEDULERS", "AlloxSimulationResult", "AlloxTrace", "alpha_sweep", "jain_index",
           "share_fairness", "simulate_allox"]

SCHEDULERS = ("allox", "sjf", "fifo", "drf")
FASTEST_TOLERANCE = 1e-9  # relative: processing times this close count as equally fast


@dataclass(frozen=True)
class AlloxTrace:
    """The trace as arrays over n jobs (trace order) and K machines (GPUs first, then CPUs).

    processing[m, k]: seconds of job m on machine k (np.inf = cannot run there); arrival (s);
    user[m]: index into `users` (a job without a user is its own user, named by its id);
    is_gpu[k]: machine k is a GPU (else a CPU machine)."""

    ids: tuple[str, ...]
    arrival: np.ndarray
    processing: np.ndarray
    machines: tuple[str, ...]
    is_gpu: np.ndarray
    users: tuple[str, ...]
    user: np.ndarray

    @classmethod
    def from_instance(cls, instance: Instance) -> "AlloxTrace":
        processing, names = allox_processing_times(instance)
        processing = np.asarray(processing, dtype=float)
        num_gpus = sum(t.count for t in instance.cluster.gpu_types.values())
        num_cpus = len(instance.cluster.cpu_machines)
        if processing.shape != (len(instance.jobs), num_gpus + num_cpus):
            raise SchedoptError(f"processing times have shape {processing.shape}, expected "
                                f"{len(instance.jobs)} jobs x {num_gpus} GPUs + {num_cpus} CPUs")
        owners = [job.user if job.user is not None else job.id for job in instance.jobs]
        users, user = np.unique(np.array(owners, dtype=object), return_inverse=True) \
            if owners else (np.array([], dtype=object), np.array([], dtype=int))
        return cls(ids=instance.job_ids,
                   arrival=np.array([job.arrival_time for job in instance.jobs], dtype=float),
                   processing=processing,
                   machines=tuple(str(name) for name in names),
                   is_gpu=np.arange(num_gpus + num_cpus) < num_gpus,
                   users=tuple(str(u) for u in users), user=np.asarray(user, dtype=int))

    @cached_property
    def fastest(self) -> np.ndarray:
        """(n, K) bool: machine k is among job m's fastest (its faster device, for `sjf`)."""
        P = self.processing
        return P <= P.min(axis=1, keepdims=True) * (1 + FASTEST_TOLERANCE)

    def __post_init__(self):
        nowhere = ~(np.isfinite(self.processing) & (self.processing >= 0)).any(axis=1)
        if nowhere.any():
            bad = [self.ids[m] for m in np.flatnonzero(nowhere)[:5]]
            raise SchedoptError(f"jobs {', '.join(bad)} can run on no machine (no GPU "
                                f"throughput and no performance.cpu_time)")


@dataclass
class AlloxSimulationResult:
    """scheduler and alpha as run; jobs: one row per job (index `job`); summary: the run's
    metrics (see `simulate_allox`); decisions: one row per decision (time_s, queued jobs,
    candidates that entered it, free machines, jobs started, solve seconds)."""

    scheduler: str
    alpha: float
    jobs: pd.DataFrame
    summary: dict
    decisions: pd.DataFrame


class _State:
    """The simulation's mutable state; the schedulers read it and return the jobs to start."""

    def __init__(self, trace: AlloxTrace, alpha: float):
        self.trace, self.alpha = trace, alpha
        n, K = trace.processing.shape
        self.queued = np.zeros(n, dtype=bool)
        self.start = np.full(n, np.nan)
        self.completion = np.full(n, np.nan)
        self.machine = np.full(n, -1)
        self.busy_until = np.full(K, -np.inf)  # machine k is free at time t if busy_until[k] <= t
        self.running = np.full(K, -1)          # job on machine k, -1 = none (or finished)
        self.solve_seconds = 0.0
        self.candidates = 0

    def served(self, t: float) -> np.ndarray:
        """Machine-seconds each user's jobs received up to time t (running jobs: elapsed part)."""
        started = np.flatnonzero(~np.isnan(self.start))
        elapsed = np.minimum(self.completion[started], t) - self.start[started]
        return np.bincount(self.trace.user[started], weights=elapsed,
                           minlength=len(self.trace.users))


def _by_key(*keys: np.ndarray) -> np.ndarray:
    """Indices sorted by keys[0], then keys[1], ... (np.lexsort takes them last-first)."""
    return np.lexsort(keys[::-1])


def _allox(state: _State, t: float, free: np.ndarray) -> list[tuple[int, int]]:
    trace = state.trace
    jobs = np.flatnonzero(state.queued)
    if state.alpha < 1.0:
        names = np.asarray(trace.users, dtype=object)[trace.user[jobs]]  # ties: by user name
        share = state.served(t)[trace.user[jobs]]
        jobs = jobs[np.asarray(fairness_filter(names, share, state.alpha), dtype=bool)]
    state.candidates = int(jobs.size)
    free_at = np.where(free, t, state.busy_until)
    began = time.perf_counter()
    schedule = allox_schedule(trace.processing[jobs], free_at, trace.arrival[jobs])
    state.solve_seconds = time.perf_counter() - began
    return [(int(jobs[queue[0]]), k) for k, queue in enumerate(schedule.queues)
            if free[k] and queue]


def _sjf(state: _State, t: float, free: np.ndarray) -> list[tuple[int, int]]:
    trace, starts = state.trace, []
    P, fastest = trace.processing, trace.fastest
    waiting = state.queued.copy()
    for k in np.flatnonzero(free):
        jobs = np.flatnonzero(waiting & fastest[:, k])
        if jobs.size:
            m = int(jobs[_by_key(P[jobs, k], trace.arrival[jobs], jobs)[0]])
            starts.append((m, int(k)))
            waiting[m] = False
    return starts


def _fifo(state: _State, t: float, free: np.ndarray) -> list[tuple[int, int]]:
    trace, starts = state.trace, []
    idle = free.copy()
    jobs = np.flatnonzero(state.queued)
    for m in jobs[_by_key(trace.arrival[jobs], jobs)]:
        if not idle.any():
            break
        times = np.where(idle, trace.processing[m], np.inf)
        if np.isfinite(times).any():
            k = int(np.argmin(times))
            starts.append((int(m), k))
            idle[k] = False
    return starts


def _drf(state: _State, t: float, free: np.ndarray) -> list[tuple[int, int]]:
    trace, starts = state.trace, []
    U = len(trace.users)
    is_gpu = trace.is_gpu
    held = np.zeros((U, 2))  # machines running each user's jobs now: GPUs, CPUs
    busy = np.flatnonzero((state.busy_until > t) & (state.running >= 0))
    np.add.at(held, (trace.user[state.running[busy]], np.where(is_gpu[busy], 0, 1)), 1.0)
    totals = np.array([max(is_gpu.sum(), 1), max((~is_gpu).sum(), 1)], dtype=float)
    served = state.served(t)
    waiting = state.queued.copy()
    for k in np.flatnonzero(free):
        jobs = np.flatnonzero(waiting & np.isfinite(trace.processing[:, k]))
        if jobs.size == 0:
            continue
        candidates = np.unique(trace.user[jobs])
        dominant = (held[candidates] / totals).max(axis=1)
        u = candidates[_by_key(dominant, served[candidates], candidates)[0]]
        mine = jobs[trace.user[jobs] == u]
        m = int(mine[_by_key(trace.processing[mine, k], trace.arrival[mine], mine)[0]])
        starts.append((m, int(k)))
        waiting[m] = False
        held[u, 0 if is_gpu[k] else 1] += 1.0
    return starts


_DISPATCH = {"allox": _allox, "sjf": _sjf, "fifo": _fifo, "drf": _drf}


def simulate_allox(instance: Instance | AlloxTrace, scheduler: str = "allox", alpha: float = 1.0,
                   progress: bool = False) -> AlloxSimulationResult:
    """Replay the jobs of `instance` (arrival_time, user; GPU time total_steps / throughput, CPU
    time performance.cpu_time) on its GPUs and CPU machines under `scheduler` (one of
    SCHEDULERS; see the module docstring). `alpha` in (0, 1] is AlloX's fairness knob (only
    `allox` uses it). `progress` shows a bar over started jobs.

    summary keys (seconds): jobs, average_jct_s, p50/p90/p99_jct_s, makespan_s (first arrival
    to last completion), user_average_jct_s (user -> average JCT), jain_user_jct (Jain's index
    of the users' average JCTs: 1 = equal, 1/U = one user takes it all), jain_share (Jain's
    index of the active users' shares, averaged over time: `share_fairness`; what alpha
    trades average JCT for), max_user_average_jct_s, utilization_gpu and utilization_cpu
    (busy machine-seconds / (machines x makespan); None without such machines), decisions,
    solve_seconds_mean/max (allox's matchings)."""
    if scheduler not in _DISPATCH:
        raise SchedoptError(f"unknown AlloX scheduler {scheduler!r}; expected one of "
                            f"{', '.join(SCHEDULERS)}")
    if not (isinstance(alpha, (int, float)) and 0.0 < alpha <= 1.0):
        raise SchedoptError(f"alpha must be in (0, 1], got {alpha!r}")
    trace = instance if isinstance(instance, AlloxTrace) else AlloxTrace.from_instance(instance)
    dispatch = _DISPATCH[scheduler]
    state = _State(trace, float(alpha))
    n = len(trace.ids)
    arrivals = _by_key(trace.arrival, np.arange(n))
    admitted, launched = 0, 0
    decisions: list[tuple] = []
    bar = progress_bar(n, progress)
    t = float(trace.arrival[arrivals[0]]) if n else 0.0
    while launched < n:
        while admitted < n and trace.arrival[arrivals[admitted]] <= t:
            state.queued[arrivals[admitted]] = True
            admitted += 1
        free = state.busy_until <= t
        if free.any() and state.queued.any():
            queued = int(state.queued.sum())
            state.solve_seconds, state.candidates = float("nan"), queued
            starts = dispatch(state, t, free)
            for m, k in starts:
                state.queued[m] = False
                state.start[m], state.machine[m] = t, k
                state.completion[m] = t + trace.processing[m, k]
                state.busy_until[k], state.running[k] = state.completion[m], m
            decisions.append((t, queued, state.candidates, int(free.sum()), len(starts),
                              state.solve_seconds))
            launched += len(starts)
            bar.update(len(starts))
        upcoming = state.busy_until[state.busy_until > t]
        later = [float(upcoming.min())] if upcoming.size else []
        if admitted < n:
            later.append(float(trace.arrival[arrivals[admitted]]))
        if not later:
            if launched < n:  # every machine free, jobs queued, nothing started: a scheduler bug
                raise SchedoptError(f"scheduler {scheduler} left jobs "
                                    f"{', '.join(np.asarray(trace.ids)[state.queued][:5])} "
                                    f"waiting with every machine free at t={t:.0f} s")
            break
        t = min(later)
    bar.close()
    frame = _job_frame(trace, state)
    decided = pd.DataFrame(decisions, columns=["time_s", "queued", "candidates", "free_machines",
                                               "started", "solve_seconds"])
    return AlloxSimulationResult(scheduler, float(alpha), frame,
                                 _summary(trace, frame, state, decided), decided)


def _job_frame(trace: AlloxTrace, state: _State) -> pd.DataFrame:
    n = len(trace.ids)
    k = state.machine
    processing = trace.processing[np.arange(n), k] if n else np.zeros(0)
    fastest = trace.processing.min(axis=1) if n else np.zeros(0)
    jct = state.completion - trace.arrival
    machines = np.array(trace.machines, dtype=object)
    return pd.DataFrame({
        "job": list(trace.ids), "user": np.array(trace.users, dtype=object)[trace.user],
        "arrival_s": trace.arrival, "start_s": state.start, "completion_s": state.completion,
        "jct_s": jct, "wait_s": state.start - trace.arrival, "machine": machines[k],
        "device": np.where(trace.is_gpu[k], "gpu", "cpu"), "processing_s": processing,
        "fastest_processing_s": fastest, "slowdown": jct / fastest,
    }).set_index("job")


def jain_index(values) -> float | None:
    """Jain's fairness index (sum x)^2 / (n sum x^2) of non-negative values: 1 when all are
    equal, 1/n when one value holds everything; None for no values (or all zero)."""
    x = np.asarray(list(values), dtype=float)
    square = float((x ** 2).sum())
    return float(x.sum() ** 2 / (x.size * square)) if x.size and square > 0 else None


def _summary(trace: AlloxTrace, jobs: pd.DataFrame, state: _State, decisions: pd.DataFrame) -> dict:
    n = len(jobs)
    jct = jobs["jct_s"].to_numpy()
    makespan = float(jobs["completion_s"].max() - jobs["arrival_s"].min()) if n else 0.0
    per_user = jobs.groupby("user", sort=True)
    user_jct = per_user["jct_s"].mean()
    busy = np.bincount(state.machine, weights=jobs["processing_s"].to_numpy(),
                       minlength=len(trace.machines)) if n else np.zeros(len(trace.machines))
    span = max(makespan, 1e-12)

    def utilization(mask: np.ndarray) -> float | None:
        return float(busy[mask].sum() / (mask.sum() * span)) if mask.any() else None

    solves = decisions["solve_seconds"].dropna()
    return {
        "jobs": n,
        "average_jct_s": float(jct.mean()) if n else 0.0,
        "p50_jct_s": percentile(jct, 50), "p90_jct_s": percentile(jct, 90),
        "p99_jct_s": percentile(jct, 99),
        "makespan_s": makespan,
        "user_average_jct_s": {str(u): float(v) for u, v in user_jct.items()},
        "max_user_average_jct_s": float(user_jct.max()) if n else None,
        "jain_user_jct": jain_index(user_jct),
        "jain_share": share_fairness(jobs),
        "utilization_gpu": utilization(trace.is_gpu),
        "utilization_cpu": utilization(~trace.is_gpu),
        "decisions": int(len(decisions)),
        "solve_seconds_mean": float(solves.mean()) if len(solves) else 0.0,
        "solve_seconds_max": float(solves.max()) if len(solves) else 0.0,
    }


def share_fairness(jobs: pd.DataFrame) -> float | None:
    """Time-averaged Jain index of the users' shares, what the fairness knob equalizes: at time
    t, the users with a job in the system (arrived, not completed) and their shares (machine-
    seconds received since the start, running jobs counting their elapsed part); Jain's index
    of those shares (1 while a single user, or none with a share yet, is active), averaged over
    the time some job is in the system. Evaluated at the midpoint of each interval between
    events (arrivals, starts, completions), weighted by its length; None for no jobs."""
    if len(jobs) == 0:
        return None
    arrival, start = jobs["arrival_s"].to_numpy(), jobs["start_s"].to_numpy()
    completion, processing = jobs["completion_s"].to_numpy(), jobs["processing_s"].to_numpy()
    events = np.unique(np.concatenate([arrival, start, completion]))
    if events.size < 2:
        return 1.0
    mid, length = (events[:-1] + events[1:]) / 2, np.diff(events)
    _, owner = np.unique(jobs["user"].to_numpy(dtype=str), return_inverse=True)
    members = np.eye(owner.max() + 1)[owner]                           # (jobs, users) one-hot
    share = np.clip(mid[:, None] - start, 0.0, processing) @ members     # (intervals, users)
    active = ((arrival <= mid[:, None]) & (mid[:, None] < completion)) @ members > 0
    x = np.where(active, share, 0.0)
    square = (x ** 2).sum(axis=1)
    index = np.divide(x.sum(axis=1) ** 2, active.sum(axis=1) * square,
                      out=np.ones(mid.size), where=square > 0)
    weight = np.where(active.any(axis=1), length, 0.0)
    return float((index * weight).sum() / weight.sum()) if weight.sum() > 0 else 1.0


def alpha_sweep(instance: Instance | AlloxTrace, alphas, progress: bool = False) -> pd.DataFrame:
    """Online AlloX at each fairness knob in `alphas` (each in (0, 1]): one row per alpha with
    columns alpha, average_jct_s, p90_jct_s, makespan_s, max_user_average_jct_s, jain_share
    and jain_user_jct (Jain's indices, see `simulate_allox`)."""
    alphas = [float(a) for a in alphas]
    if not alphas:
        raise SchedoptError("give at least one alpha in (0, 1]")
    trace = instance if isinstance(instance, AlloxTrace) else AlloxTrace.from_instance(instance)
    columns = ["average_jct_s", "p90_jct_s", "makespan_s", "max_user_average_jct_s",
               "jain_share", "jain_user_jct"]
    rows = []
    bar = progress_bar(len(alphas), progress)
    for alpha in alphas:
        summary = simulate_allox(trace, "allox", alpha).summary
        rows.append({"alpha": alpha, **{key: summary[key] for key in columns}})
        bar.update(1)
    bar.close()
    return pd.DataFrame(rows)

"""The simulation loop of lease policies (decision LEASES: chronus, edf, srtf), on one
homogeneous GPU pool.

Time is cut into leases of `lease_seconds` (a policy option) starting at t = 0 of the trace
clock. Decisions are taken at lease boundaries. With the policy's `work_conserving` option (on
by default for chronus, edf and srtf), GPUs idle between two boundaries are not wasted: when a
job arrives or finishes mid-lease while GPUs are idle and a job waits, the policy is asked again
(`LeaseBoundary.until`) which waiting jobs take the idle GPUs until the next boundary, where
every job is decided again. Idle GPUs are those no job holds, so an admitted job's reservation
(a lease in which it holds GPUs from the boundary on) is never touched. Without it, a job
arriving mid-lease waits for the next boundary and the GPUs of a job finishing mid-lease stay
idle until then (leased). A job that starts or resumes loses `resume_overhead_s` (s) of running
(a start between boundaries is made only while more than that is left of the lease); one that
keeps its GPUs from the previous lease does not. A *preemption* is an unfinished job that held
GPUs in the previous lease and does not in this one. The `leases` frame has one row per
boundary: GPUs held (work-conserving: GPU-seconds held in the lease / lease_seconds) and the
jobs started between it and the next (`started_between`).

Only one GPU type is used: the policy's `gpu_type` option, by default the type with the most
GPUs. A job runs `remaining_steps / throughput[gpu_type]` seconds on `scale_factor` GPUs, rounded
up to 1, 2, 4, 8n for consolidation on 8-GPU nodes (`round_up`; kept as requested when the
rounded count exceeds the pool). Jobs with `deadline` or `deadline_options` are SLO jobs
(`Job.slo_options`); the rest are best effort.

At each boundary every lease policy is called the same way: `policy.solve` gets the waiting
and running jobs as a `LeaseBoundary` problem, with the run's state a policy may read (the jobs
that held GPUs in the lease before, those that arrived since the last boundary, each job's
position in the run) and `memory`, one dict per run that the policy may keep its own state in
(chronus: its admitted jobs and their reservations). It returns a `LeasePlan`; the jobs in its
`running` list hold GPUs in the lease, and its `admitted` jobs (and those the outcome's
details list as `demoted`) are reported per job.

A run can be checkpointed at its boundaries and resumed (`run_leases`, `simulate(...,
checkpoint=..., resume=...)`): the per-job arrays, the leases so far and the policy's memory
are written, so a resumed run equals the uninterrupted one. The lease MILP runs on one solver
thread so that two runs of the same trace and options decide the same (a MILP stopped by its
time limit still depends on the machine's speed).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import numpy as np
import pandas as pd

from schedopt.backends import SolveOptions
from schedopt.backends.session import Solver
from schedopt.core.decisions import DecisionKind, LeasePlan
from schedopt.core.policy import Policy
from schedopt.errors import SchedoptError
from schedopt.instance.model import Instance
from schedopt.core.events import LeaseBoundary, LeaseMask
from schedopt.policies.chronus.boundary import LeaseInstance, LeaseSettings
from schedopt.simulation.checkpoint import (Checkpoints, CheckpointError, checkpointing, prefix,
                                            restore)
from schedopt.simulation.common import SimulationConfig, SimulationResult, progress_bar
from schedopt.simulation.metrics import lease_summary

EPS_S = 1e-6  # seconds: finishing this close to a deadline or a lease end counts as within it
CHRONUS_TIME_LIMIT = 5.0  # seconds per lease MILP when the config sets none (Chronus's artifact)
LEASE_MILP_THREADS = 1


class LeaseState:
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
        self.memory: dict = {}  # the policy's own state over the run (LeaseBoundary.memory)

    ARRAYS = ("remaining", "completion", "seen", "admitted", "demoted", "ran_before",
              "preemptions", "starts")

    def snapshot(self) -> dict:
        """Copies of the per-job arrays and of the policy's memory (its arrays copied too:
        a policy may update them in place at the next boundary)."""
        state = {name: getattr(self, name).copy() for name in self.ARRAYS}
        state["memory"] = _copied(self.memory)
        return state

    def restore(self, saved: dict) -> None:
        """The arrays and memory of `saved` (a `snapshot` read back from a checkpoint)."""
        fresh = {name: getattr(self, name) for name in self.ARRAYS}
        for name, value in zip(self.ARRAYS, restore(saved, **fresh)):
            setattr(self, name, value)
        memory = saved["memory"]
        if not isinstance(memory, dict):
            raise CheckpointError("corrupt checkpoint (state 'memory' is not a dict)")
        self.memory = memory


def _copied(value: Any) -> Any:
    """`value` with every dict, list and array in it copied (tuples, numbers, strings kept)."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, dict):
        return {key: _copied(v) for key, v in value.items()}
    if isinstance(value, list):
        return [_copied(v) for v in value]
    return value


def settings_of(options: Any, solver: Solver, config: SimulationConfig) -> LeaseSettings:
    """The lease settings a run uses: every `LeaseSettings` field the policy's options have
    (lease length, overhead, window, sigma; chronus's defaults for the others), the solver
    and time limit from the config."""
    given = {f.name: getattr(options, f.name) for f in dataclasses.fields(LeaseSettings)
             if f.name not in ("solver", "time_limit") and hasattr(options, f.name)}
    return LeaseSettings(**given, solver=solver.name or LeaseSettings.solver,
                         time_limit=CHRONUS_TIME_LIMIT if config.time_limit is None
                         else config.time_limit)


def run_leases(trace: Instance, policy: Policy, options: Any, name: str,
               config: SimulationConfig, progress: bool = False,
               checkpoints: Checkpoints | None = None) -> SimulationResult:
    """Replay `trace` lease by lease under the LEASES `policy` with parsed `options`;
    `checkpoints` (schedopt.simulation.checkpoint) resumes it from a saved state and writes the
    state at each boundary (every per-job array, the leases so far and the policy's `memory`,
    e.g. chronus's admitted jobs and reservations) and when the run is interrupted."""
    data = LeaseInstance.from_instance(trace, getattr(options, "gpu_type", None),
                                       getattr(options, "round_up", True))
    # One solver thread: CP-SAT's parallel workers return different plans among equal optima
    # from run to run; on one thread a run (and a resumed one) is reproducible.
    solver = Solver(config.solver or policy.default_solver,
                    SolveOptions(time_limit=config.time_limit, threads=LEASE_MILP_THREADS))
    settings = settings_of(options, solver, config)
    L = settings.lease_seconds
    state = LeaseState(data)
    deadline = data.first_deadline()
    rows: list[tuple] = []
    left = int(np.isnan(state.completion).sum())  # jobs not finished
    lease = 0
    if checkpoints is not None and checkpoints.resumed is not None:
        saved = checkpoints.resumed
        state.restore(saved)
        lease, left, rows = saved["lease"], saved["left"], [tuple(r) for r in saved["rows"]]
        if type(lease) is not int or type(left) is not int:
            raise CheckpointError("corrupt checkpoint (state 'lease' or 'left' not an integer)")

    def snapshot() -> dict:
        return {**state.snapshot(), "lease": lease, "left": left, "rows": prefix(rows)}

    bar = progress_bar(data.num_jobs, progress)
    bar.update(data.num_jobs - left)
    with checkpointing(checkpoints):
        while left:
            if checkpoints is not None:
                checkpoints.tick(snapshot)
            lease, finished = _boundary(policy, options, solver, data, state, settings, config,
                                        deadline, lease, rows)
            left -= finished
            bar.update(finished)
    bar.close()
    return _result(name, policy, options, config, data, state, rows, L)


def _boundary(policy: Policy, options: Any, solver: Solver, data: LeaseInstance,
              state: LeaseState, settings: LeaseSettings, config: SimulationConfig,
              deadline: np.ndarray, lease: int, rows: list[tuple]) -> tuple[int, int]:
    """The boundary at lease `lease` (or the first one after it where a job is there; in a
    work-conserving run the lease in which the next job arrives): the policy's decision and
    the lease it runs. Returns (the next lease, jobs finished)."""
    L = settings.lease_seconds
    conserving = bool(getattr(options, "work_conserving", False))
    now = lease * L
    unfinished = np.isnan(state.completion)
    arrived = unfinished & (data.arrival <= now + EPS_S)
    if not arrived.any():
        first = data.arrival[unfinished].min()
        lease = int(np.floor(first / L) if conserving else np.ceil((first - EPS_S) / L))
        now = lease * L
        arrived = unfinished & (data.arrival <= now + EPS_S)
    if lease > config.max_leases:
        raise SchedoptError(f"the run passed {config.max_leases} leases; raise max_leases")
    active = np.flatnonzero(arrived)
    running, gap, fallback, decide_s = np.zeros(0, dtype=bool), None, None, 0.0
    if active.size:
        new = ~state.seen[active]
        state.seen[active] = True
        jobs = data.lease_jobs(active, state.remaining)
        boundary = LeaseBoundary(data.ids[active], data.arrival[active], deadline[active], jobs,
                                 int(data.capacity), data.gpu_type, float(now), float(L),
                                 state.ran_before[active], new, active, state.memory)
        clock = time.perf_counter()
        running, gap, fallback = _step(policy, options, solver, boundary, state, active)
        decide_s = time.perf_counter() - clock
    if conserving:
        finished, held, between = _run_lease_conserving(policy, options, solver, data, state,
                                                        deadline, active, running, now,
                                                        settings)
        rows.append((now, int(running.sum()), held, decide_s, gap, fallback, between))
    else:
        finished = _run_lease(state, active, running, now, settings)
        rows.append((now, int(running.sum()), int(data.gpus[active[running]].sum()), decide_s,
                     gap, fallback, 0))
    return lease + 1, finished


def _running_mask(policy: Policy, outcome, boundary: LeaseBoundary) -> np.ndarray:
    """(n,) bool over the boundary's jobs: those the outcome's LeasePlan gives GPUs."""
    plan = outcome.decision
    if not isinstance(plan, LeasePlan):
        raise SchedoptError(f"policy {policy.name} (decision {DecisionKind.LEASES.value}) "
                            f"returned {type(plan).__name__}, expected a LeasePlan")
    X = outcome.allocation
    if isinstance(plan, LeaseMask) and plan.boundary is boundary:
        return plan.mask
    if X is not None and X.shape[0] == boundary.jobs.num_jobs:
        return X.any(axis=1)  # a LEASES allocation marks the jobs holding GPUs next lease
    return np.isin(boundary.ids, np.asarray(plan.running, dtype=object))


def _step(policy: Policy, options: Any, solver: Solver, boundary: LeaseBoundary,
          state: LeaseState, active: np.ndarray) -> tuple[np.ndarray, Any, Any]:
    """The policy's decision through its contract: (running mask, MILP gap, fallback used);
    the jobs it admitted and demoted are recorded in `state`."""
    outcome = policy.solve(boundary.problem(), options, solver)
    running = _running_mask(policy, outcome, boundary)
    plan, details = outcome.decision, outcome.details
    state.admitted[active] = _marked(boundary.ids, plan.admitted)
    demoted = details.get("demoted")
    if demoted:
        state.demoted[active[_marked(boundary.ids, demoted)]] = True
    return running, details.get("gap"), details.get("used_fallback")


def _marked(ids: np.ndarray, listed) -> np.ndarray:
    """(n,) bool: the `ids` in the list `listed` of job ids."""
    if not listed:
        return np.zeros(ids.shape[0], dtype=bool)
    return np.isin(ids, np.asarray(listed, dtype=object))


def _start(state: LeaseState, active: np.ndarray, running: np.ndarray,
           settings: LeaseSettings) -> tuple[np.ndarray, np.ndarray]:
    """The boundary's preemptions and starts recorded: (jobs holding GPUs in the lease, the
    resume overhead (s) each pays in it)."""
    run = active[running]
    idle = active[~running]
    state.preemptions[idle[state.ran_before[idle]]] += 1
    state.ran_before[idle] = False
    overhead = np.where(state.ran_before[run], 0.0, settings.resume_overhead_s)
    state.starts[run] += ~state.ran_before[run]
    return run, overhead


def _run_lease(state: LeaseState, active: np.ndarray, running: np.ndarray, now: float,
               settings: LeaseSettings) -> int:
    """Advance the `running` jobs (mask over `active`) through one lease; returns how many
    finished."""
    run, overhead = _start(state, active, running, settings)
    useful = settings.lease_seconds - overhead
    return _advance(state, run, useful, now + overhead)


def _advance(state: LeaseState, run: np.ndarray, useful: np.ndarray,
             working_from: np.ndarray) -> int:
    """The jobs `run` have `useful` seconds of running from `working_from` (s) until the
    lease ends: those that finish get their completion time, the others' work left shrinks.
    Returns how many finished."""
    done = state.remaining[run] <= useful + EPS_S
    state.completion[run[done]] = working_from[done] + state.remaining[run[done]]
    state.remaining[run] = np.maximum(state.remaining[run] - useful, 0.0)
    state.ran_before[run] = ~done
    return int(done.sum())


def _run_lease_conserving(policy: Policy, options: Any, solver: Solver, data: LeaseInstance,
                          state: LeaseState, deadline: np.ndarray, active: np.ndarray,
                          running: np.ndarray, now: float,
                          settings: LeaseSettings) -> tuple[int, float, int]:
    """One lease of a work-conserving run: the boundary's jobs run as in `_run_lease`; each
    time a job finishes or arrives in the lease while GPUs are idle and a job waits, the
    policy decides who takes them until the boundary (`LeaseBoundary.until`); such a start
    pays the resume overhead and is made only while more than the overhead is left of the
    lease. The idle GPUs are those no job holds: an admitted job's reservation in this lease
    is a job holding GPUs from the boundary on. Returns (jobs finished, GPU-seconds held /
    lease_seconds, jobs started between the boundaries)."""
    L, o = settings.lease_seconds, settings.resume_overhead_s
    end = now + L
    run, overhead = _start(state, active, running, settings)
    begin = np.full(run.size, float(now))
    working_from = now + overhead
    useful = L - overhead
    gpus = data.gpus
    free = int(data.capacity) - int(gpus[run].sum())
    later = np.flatnonzero(np.isnan(state.completion) & (data.arrival > now + EPS_S)
                           & (data.arrival < end - o - EPS_S))
    later = later[np.argsort(data.arrival[later], kind="stable")]
    pool = np.concatenate([active[~running], later])  # who may start between the boundaries
    t, started, seen_later, held_s = float(now), 0, 0, 0.0
    while pool.size:
        finish = working_from + state.remaining[run]
        ahead = finish[(finish > t + EPS_S) & (finish < end - o - EPS_S)]
        t_next = float(ahead.min()) if ahead.size else np.inf
        if seen_later < later.size:
            t_next = min(t_next, float(data.arrival[later[seen_later]]))
        if not t_next < end - o - EPS_S:
            break
        t = t_next
        while seen_later < later.size and data.arrival[later[seen_later]] <= t + EPS_S:
            seen_later += 1
        done = finish <= t + EPS_S
        if done.any():  # finished: their GPUs are free from now on
            state.completion[run[done]] = finish[done]
            state.remaining[run[done]] = 0.0
            state.ran_before[run[done]] = False
            free += int(gpus[run[done]].sum())
            held_s += float(np.sum(gpus[run[done]] * (finish[done] - begin[done])))
            keep = ~done
            run, begin, working_from, useful, finish = (run[keep], begin[keep],
                                                        working_from[keep], useful[keep],
                                                        finish[keep])
        waiting = pool[(data.arrival[pool] <= t + EPS_S) & np.isnan(state.completion[pool])]
        waiting = waiting[~np.isin(waiting, run)]
        if not waiting.size or free < int(gpus[waiting].min()):
            continue
        chosen = _between_step(policy, options, solver, data, state, deadline, waiting, free,
                               t, end, L)
        if not chosen.size:
            continue
        free -= int(gpus[chosen].sum())
        state.starts[chosen] += 1
        started += chosen.size
        run = np.concatenate([run, chosen])
        begin = np.concatenate([begin, np.full(chosen.size, t)])
        working_from = np.concatenate([working_from, np.full(chosen.size, t + o)])
        useful = np.concatenate([useful, np.full(chosen.size, (end - t) - o)])
    held_s += float(np.sum(gpus[run] * (np.minimum(working_from + state.remaining[run], end)
                                         - begin)))
    _advance(state, run, useful, working_from)
    # every job of the lease was unfinished at its start
    finished = np.count_nonzero(~np.isnan(state.completion[active])) \
        + np.count_nonzero(~np.isnan(state.completion[later]))
    return int(finished), held_s / L, started


def _between_step(policy: Policy, options: Any, solver: Solver, data: LeaseInstance,
                  state: LeaseState, deadline: np.ndarray, waiting: np.ndarray, free: int,
                  now: float, until: float, lease_seconds: float) -> np.ndarray:
    """The `waiting` jobs (indices) the policy starts at `now` on the `free` idle GPUs, until
    the boundary at `until` (s); nothing else of its decision is kept."""
    jobs = data.lease_jobs(waiting, state.remaining)
    boundary = LeaseBoundary(data.ids[waiting], data.arrival[waiting], deadline[waiting], jobs,
                             int(free), data.gpu_type, float(now), float(lease_seconds),
                             np.zeros(waiting.size, dtype=bool), ~state.seen[waiting], waiting,
                             state.memory, float(until))
    chosen = waiting[_running_mask(policy, policy.solve(boundary.problem(), options, solver),
                                   boundary)]
    if int(data.gpus[chosen].sum()) > free:
        raise SchedoptError(f"policy {policy.name} started jobs needing "
                            f"{int(data.gpus[chosen].sum())} GPUs on the {free} idle between "
                            f"boundaries at t={now:.0f} s")
    return chosen
def _result(name: str, policy: Policy, options: Any, config: SimulationConfig,
            data: LeaseInstance, state: LeaseState, rows: list[tuple],
            lease_seconds: float) -> SimulationResult:
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
                                         "milp_gap", "used_fallback", "started_between"])
    summary = lease_summary(frame, leases, data.gpu_type, data.capacity, lease_seconds)
    return SimulationResult(name, frame, summary, None, config, DecisionKind.LEASES,
                            leases=leases, options=options)

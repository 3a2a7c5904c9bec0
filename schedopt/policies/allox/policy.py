"""The `allox` policy on an instance (`schedopt solve FILE --policy allox`,
`schedopt.solve(instance, "allox")`): whole jobs in run order on every GPU and CPU machine,
minimizing total completion time exactly by the matching of `matching.py`.

Every machine is free at `instance.now`, jobs count from their arrival. With alpha < 1 only the
jobs of the ceil(alpha * users) users with the lowest current share enter; offline nothing runs
yet, so every share is 0 and ties go by user name (a job without `user` is its own user, named
by its id). Left-out jobs are listed in `waiting`.

Outcome: no allocation (AlloX orders whole jobs; it does not share GPU time); decision: a
`MachineQueues`; objective = bound = total completion time (seconds; exact optimum); details:
total_completion_time, average_jct (seconds, over the matched jobs), queues {machine: [job ids
in run order]}, schedule {job: {machine, position, start (s), completion (s)}}, waiting [job
ids], alpha, matchings (matchings solved).
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from typing import Literal

import numpy as np

from schedopt.core.deadline import deadline_after
from schedopt.backends import Status
from schedopt.core.capabilities import Capability
from schedopt.core.decisions import DecisionKind, MachineQueues
from schedopt.core.events import QueueDecision, event_of
from schedopt.core.outcome import Outcome, Termination
from schedopt.core.policy import Policy
from schedopt.errors import PolicyError
from schedopt.policies.allox.matching import (DEFAULT_METHOD, METHODS, allox_assignment,
                                              allox_processing_times, fairness_filter,
                                              schedule_from_assignment, solver_of, validated)
from schedopt.policies.machine_times import MachineTimes

Method = Literal["auto", "scipy", "scipy-sparse", "ortools", "full"]


@dataclasses.dataclass(frozen=True)
class AlloxOptions:
    """alpha: the fairness knob in (0, 1] (1: pure total-completion minimization); method: the
    exact matching algorithm, auto (= scipy, chosen by measurement), scipy, scipy-sparse,
    ortools or full (`matching.py`)."""

    alpha: float = 1.0
    method: Method = "auto"

    def __post_init__(self):
        if not 0 < self.alpha <= 1:
            raise ValueError(f"alpha must be in (0, 1], got {self.alpha!r}")


def matching_method(method: str, solver) -> str:
    """The matching method to run: the option `method`, unless the caller named a solver.

    Deprecated, accepted for one release: a method given as the solver (`-s ortools`, from
    when AlloX's methods were listed as solvers) means method=<that name>; this is the only
    place that reads it. AlloX calls no solver backend, so any other solver name is an error."""
    if solver is None or solver.name is None:
        return method
    if solver.name not in METHODS:
        raise PolicyError(f"unknown AlloX method {solver.name!r}; choose one of "
                          f"{', '.join(METHODS)} with -o method=NAME (allox calls no solver "
                          f"backend)")
    warnings.warn(f"solver {solver.name!r} is deprecated for allox; use the policy option "
                  f"method={solver.name} (-o method={solver.name})", FutureWarning, stacklevel=3)
    return solver.name


class Allox(Policy):
    """AlloX (module docstring): decision QUEUES. Splits under POP by machines
    (`machine_times`, `details`; see `schedopt.policies.machine_times`)."""

    name = "allox"
    summary = ("Whole jobs on single GPUs and CPU machines, min total completion time (AlloX "
               "matching; option alpha).")
    objective_doc = "total completion time, sum of (completion - arrival), seconds"
    Options = AlloxOptions
    decision = DecisionKind.QUEUES
    needs = Capability.none()
    default_solver = None
    instance_data = "CPU machines and performance.cpu_time, the GPUs' nodes, job arrivals and users"

    def machine_times(self, problem, options: AlloxOptions) -> MachineTimes:
        """The jobs that enter now (alpha) with their processing times on every machine, one
        per GPU (`<node>/<slot>`) and per CPU machine, all free at `instance.now`; inside a
        simulation (a `QueueDecision` event), the queued jobs, users' shares so far and busy
        machines entering at the time their running job ends (docs/formulations.md §4 online)."""
        decision = event_of(problem, QueueDecision)
        if decision is not None:
            return _online_times(decision, options.alpha)
        instance = problem.instance
        processing, machines = allox_processing_times(instance)
        ids = np.asarray(instance.job_ids, dtype=object)
        users = np.array([job.user if job.user is not None else job.id for job in instance.jobs],
                         dtype=object)
        enter = fairness_filter(users, np.zeros(len(ids)), options.alpha)
        arrival = np.array([job.arrival_time for job in instance.jobs], dtype=float)
        P, A, a = validated(processing[enter], np.full(len(machines), instance.now),
                            arrival[enter])
        return MachineTimes(tuple(ids[enter]), machines, P, A, a, tuple(ids[~enter]))

    def solve(self, problem, options: AlloxOptions, solver) -> Outcome:
        method = matching_method(options.method, solver)
        solver_of(method)  # an unknown method fails before any work; imports stay out of timing
        clock = time.perf_counter()
        times = getattr(problem, "times", None) or self.machine_times(problem, options)
        limit = None if solver is None else solver.settings.time_limit
        deadline = deadline_after(limit, clock)
        machine, stats = allox_assignment(times.processing, times.free_at, method,
                                          deadline=deadline)
        schedule = schedule_from_assignment(times.processing, times.free_at, times.arrival,
                                            machine)
        ids, names = times.job_ids, times.machines
        decision = MachineQueues(
            {name: [ids[j] for j in queue] for name, queue in zip(names, schedule.queues)},
            {job: {"machine": names[k], "position": int(q), "start": float(s),
                   "completion": float(c)}
             for job, k, q, s, c in zip(ids, schedule.machine.tolist(), schedule.position,
                                        schedule.start, schedule.completion)},
            list(times.waiting))
        details = self.details(times, decision, options) | {"matchings": stats.matchings,
                                                             "candidates": len(ids)}
        total = details["total_completion_time"]
        # Stopped by the time limit: a feasible schedule without the full matching's proof.
        status, bound = ((Status.FEASIBLE, None) if stats.timed_out else (Status.OPTIMAL, total))
        return Outcome.from_status(None, status, total, bound, time.perf_counter() - clock,
                                   DEFAULT_METHOD if method == "auto" else method, details,
                                   termination=Termination.TIME_LIMIT if stats.timed_out else None,
                                   decision=decision)

    def details(self, times: MachineTimes, decision: MachineQueues,
                options: AlloxOptions) -> dict:
        """The result document's keys for `decision` on the jobs and machines of `times`."""
        total = _total_completion(decision, times.job_ids, times.arrival)
        count = len(times.job_ids)
        return {"total_completion_time": total, "average_jct": total / count if count else None,
                "queues": decision.queues, "schedule": decision.schedule,
                "waiting": list(decision.waiting), "alpha": options.alpha}

    def objective(self, problem, allocation, options) -> float | None:
        """Total completion time (seconds) of a `MachineQueues` decision (passed as
        `allocation`), from the instance's arrival times; None for anything else."""
        if not isinstance(allocation, MachineQueues) or problem.instance is None:
            return None
        arrival = {job.id: job.arrival_time for job in problem.instance.jobs}
        jobs = tuple(allocation.schedule)
        return _total_completion(allocation, jobs,
                                 np.array([arrival[job] for job in jobs], dtype=float))


def _online_times(decision: QueueDecision, alpha: float) -> MachineTimes:
    """The queued jobs that pass the fairness filter (ties: by user name; a user's share is the
    machine-seconds its jobs have received so far) on every machine, free ones now and busy
    ones when their running job ends."""
    trace = decision.trace
    jobs = np.flatnonzero(decision.queued)
    enter = np.ones(jobs.size, dtype=bool)
    if alpha < 1.0:
        names = np.asarray(trace.users, dtype=object)[trace.user[jobs]]
        enter = np.asarray(fairness_filter(names, decision.served[trace.user[jobs]], alpha),
                           dtype=bool)
    free_at = np.where(decision.free, decision.now, decision.busy_until)
    chosen = jobs[enter]
    return MachineTimes(tuple(trace.id_array[chosen]), trace.machines, trace.processing[chosen],
                        free_at, trace.arrival[chosen], tuple(trace.id_array[jobs[~enter]]))


def _total_completion(decision: MachineQueues, jobs, arrival: np.ndarray) -> float:
    completion = np.array([decision.schedule[job]["completion"] for job in jobs], dtype=float)
    return float(np.sum(completion - arrival))

"""Lease baselines on one homogeneous GPU pool (decision LEASES, like chronus): who holds GPUs
in the next lease.

- `edf`: earliest deadline first over every waiting job (best-effort jobs last, by arrival),
  skipping a job that does not fit; no admission control, so hopeless jobs keep running.
- `srtf`: shortest remaining running time first over every waiting job, skipping what does not
  fit; deadlines are ignored.

Ties go to the earlier arrival, then to trace order. Leases, the pool, GPU round-up and
deadlines are those of chronus (`schedopt.policies.chronus.boundary`): `lease_seconds` and
`resume_overhead_s` in seconds, `gpu_type` the pool (default: the type with the most GPUs),
`round_up` the consolidation round-up of GPU counts to 1, 2, 4, 8n.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from schedopt.core.capabilities import Capability
from schedopt.core.decisions import DecisionKind
from schedopt.core.events import LeaseBoundary, LeaseMask, event_of, rule_outcome
from schedopt.core.outcome import Outcome
from schedopt.core.policy import Policy
from schedopt.core.problem import ThroughputProblem
from schedopt.policies.chronus.boundary import LeaseInstance, LeaseSettings, fill_in_order


@dataclass(frozen=True)
class LeaseOptions:
    """lease_seconds, resume_overhead_s: seconds; gpu_type: the pool (None: the type with the
    most GPUs); round_up: round GPU counts up to 1, 2, 4, 8n for consolidation;
    work_conserving: in a simulation, GPUs idle between boundaries go at once to waiting jobs
    in the rule's order, until the next boundary."""

    lease_seconds: float = 1200.0
    resume_overhead_s: float = 30.0
    gpu_type: str | None = None
    round_up: bool = True
    work_conserving: bool = True

    def __post_init__(self):
        LeaseSettings(self.lease_seconds, self.resume_overhead_s,
                      work_conserving=self.work_conserving)  # PolicyError when invalid


def boundary_of(instance, options: LeaseOptions) -> LeaseBoundary:
    """Every job of `instance` waiting at `instance.now`, with all its work left, on the pool
    of `options`."""
    data = LeaseInstance.from_instance(instance, options.gpu_type, options.round_up)
    everyone = np.arange(data.num_jobs)
    return LeaseBoundary(data.ids, data.arrival, data.first_deadline(),
                         data.lease_jobs(everyone, data.run_s), int(data.capacity), data.gpu_type,
                         float(instance.now), float(options.lease_seconds))


def lease_outcome(problem: ThroughputProblem, boundary: LeaseBoundary, running: np.ndarray,
                  seconds: float, algorithm: str) -> Outcome:
    """The decision `running` ((n,) bool: holds GPUs in the next lease) as an Outcome: the
    allocation marks those jobs on the pool's type; the decision is a LeasePlan (`LeaseMask`).
    Inside a simulation (`problem` is the boundary's) the allocation and details are left out:
    the engine reads the decision, whose job ids are built only if read."""
    plan = LeaseMask.of(boundary, running)
    if event_of(problem, LeaseBoundary) is boundary:
        return rule_outcome(None, plan, {}, seconds, algorithm)
    X = np.zeros((boundary.jobs.num_jobs, len(problem.gpu_types)))
    X[running, tuple(problem.gpu_types).index(boundary.gpu_type)] = 1.0
    details = {"leases": plan.leases, "running": plan.running,
               "lease_seconds": boundary.lease_seconds, "gpu_type": boundary.gpu_type,
               "gpus": boundary.capacity}
    return rule_outcome(X, plan, details, seconds, algorithm)


class _PriorityFill(Policy):
    """Fill the pool in a priority order, skipping jobs that do not fit (`fill_in_order`)."""

    Options = LeaseOptions
    decision = DecisionKind.LEASES
    needs = Capability.none()
    default_solver = None
    instance_data = "one GPU pool and the jobs' deadlines"
    objective_doc = "none (a priority rule)"

    def keys(self, boundary: LeaseBoundary) -> tuple[np.ndarray, ...]:
        """Sort keys, last primary (np.lexsort)."""
        raise NotImplementedError

    def check_instance(self, problem: ThroughputProblem) -> None:
        if event_of(problem, LeaseBoundary) is None:
            super().check_instance(problem)

    def solve(self, problem: ThroughputProblem, options: LeaseOptions, solver) -> Outcome:
        clock = time.perf_counter()
        boundary = event_of(problem, LeaseBoundary)
        if boundary is None:
            boundary = boundary_of(problem.instance, options)
        n = boundary.jobs.num_jobs
        order = np.lexsort(self.keys(boundary))  # stable: ties in index order
        running = np.zeros(n, dtype=bool)
        running[fill_in_order(boundary.jobs.gpus, order, boundary.capacity)] = True
        return lease_outcome(problem, boundary, running, time.perf_counter() - clock, self.name)


class Edf(_PriorityFill):
    """Earliest deadline first (see the module docstring)."""

    name = "edf"
    summary = ("Lease baseline: earliest deadline first on one GPU pool, best-effort jobs last; "
               "no admission control.")

    def keys(self, boundary: LeaseBoundary) -> tuple[np.ndarray, ...]:
        return boundary.arrival, boundary.deadline


class Srtf(_PriorityFill):
    """Shortest remaining running time first (see the module docstring)."""

    name = "srtf"
    summary = "Lease baseline: shortest remaining running time first on one GPU pool."

    def keys(self, boundary: LeaseBoundary) -> tuple[np.ndarray, ...]:
        return boundary.arrival, boundary.jobs.remaining_s


__all__ = ["Edf", "LeaseOptions", "Srtf", "boundary_of", "lease_outcome"]

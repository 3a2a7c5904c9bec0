"""The problem an event-driven policy sees at one decision point of a simulation.

A lease policy (decision LEASES) decides at each lease boundary; a queue policy (decision
QUEUES) each time a machine is free and a job waits. The simulator hands such a policy an
`EventProblem`: the usual `ThroughputProblem` arrays over the jobs that wait, plus `event`, the
state of that decision point (`schedopt.policies.baselines.leases.LeaseBoundary` or
`schedopt.policies.baselines.queues.QueueDecision`). `schedopt solve` hands it a plain
`ThroughputProblem` with the instance: the policy then reads the instance as one decision point
at `instance.now`, every job waiting and every machine free.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from schedopt.core.problem import ThroughputProblem


@dataclass(frozen=True, eq=False)
class EventProblem(ThroughputProblem):
    """A ThroughputProblem carrying the state of one decision point in `event`."""

    event: Any = None


def event_arrays(event: Any, job_ids: tuple[str, ...], gpu_types: tuple[str, ...],
                 throughput: np.ndarray, scale_factor: np.ndarray, capacity: np.ndarray,
                 remaining_steps: np.ndarray, time_since_arrival: np.ndarray,
                 time_to_deadline: np.ndarray) -> EventProblem:
    """An EventProblem straight from arrays the simulator has already checked (no copies, no
    validation: it is built at every decision point); weight 1, cost and isolated time
    unknown."""
    M, J = throughput.shape
    return EventProblem(job_ids, gpu_types, throughput, scale_factor, np.ones(M), capacity,
                        np.full(J, np.nan), remaining_steps, time_since_arrival, np.zeros(M),
                        time_to_deadline, event=event)


def event_problem(base: ThroughputProblem, event: Any) -> EventProblem:
    """`base` with `event` attached."""
    fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(ThroughputProblem)}
    return EventProblem(**fields, event=event)


def event_of(problem: ThroughputProblem, kind: type) -> Any:
    """The problem's event state when it is a `kind`, else None."""
    event = getattr(problem, "event", None)
    return event if isinstance(event, kind) else None

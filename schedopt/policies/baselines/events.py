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

from dataclasses import dataclass
from typing import Any

import numpy as np

from schedopt.core.outcome import Outcome, Status, split_status
from schedopt.core.problem import ThroughputProblem


@dataclass(frozen=True, eq=False)
class EventProblem(ThroughputProblem):
    """A ThroughputProblem carrying the state of one decision point in `event`."""

    event: Any = None


def event_arrays(event: Any, job_ids: np.ndarray, gpu_types: tuple[str, ...],
                 throughput: np.ndarray, scale_factor: np.ndarray, capacity: np.ndarray,
                 remaining_steps: np.ndarray, time_since_arrival: np.ndarray,
                 time_to_deadline: np.ndarray) -> EventProblem:
    """An EventProblem straight from arrays the simulator has already checked (no copies, no
    validation: it is built at every decision point; job_ids stays the simulator's (M,) object
    array); weight 1, cost and isolated time unknown."""
    M, J = throughput.shape
    return EventProblem(job_ids, gpu_types, throughput, scale_factor, filled(M, "one"),
                        capacity, filled(J, "nan"), remaining_steps, time_since_arrival,
                        filled(M, "zero"), time_to_deadline, event=event)


_VALUES = {"one": 1.0, "zero": 0.0, "nan": np.nan}
_FILLED: dict[str, np.ndarray] = {}


def filled(size: int, name: str) -> np.ndarray:
    """A read-only (size,) array of ones, zeros or nans (`name`): a view of one buffer shared
    by every event problem, so that a decision point allocates nothing for constants."""
    buffer = _FILLED.get(name)
    if buffer is None or buffer.size < size:
        buffer = np.full(max(size, 1024, 0 if buffer is None else 2 * buffer.size),
                         _VALUES[name])
        buffer.flags.writeable = False
        _FILLED[name] = buffer
    return buffer[:size]


def event_of(problem: ThroughputProblem, kind: type) -> Any:
    """The problem's event state when it is a `kind`, else None."""
    event = getattr(problem, "event", None)
    return event if isinstance(event, kind) else None


_RULE = split_status(Status.FEASIBLE)  # what a priority rule reports: a decision, no optimum


def rule_outcome(allocation: np.ndarray | None, decision: Any, details: dict, seconds: float,
                 algorithm: str) -> Outcome:
    """The Outcome of a priority rule at one decision point (status feasible, no objective)."""
    return Outcome(allocation, *_RULE, None, None, seconds, algorithm, details, decision)

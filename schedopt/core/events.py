"""The problem an event-driven policy sees at one decision point of a simulation.

A lease policy (decision LEASES) decides at each lease boundary; a queue policy (decision
QUEUES) each time a machine is free and a job waits. The simulator hands such a policy an
`EventProblem`: the usual `ThroughputProblem` arrays over the jobs that wait, plus `event`, the
state of that decision point (a `LeaseBoundary` or a `QueueDecision`). `schedopt solve` hands
it a plain `ThroughputProblem` with the instance: the policy then reads the instance as one
decision point at `instance.now`, every job waiting and every machine free.

A simulation takes thousands of decisions and most event policies read only the event, so the
problem's arrays are built from it on first read (`EventProblem.of`), and the event's arrays are
the simulator's own (read them during `solve`, do not change or keep them). For the same reason
a rule's decision may stay in the simulator's terms, indices into the event, its lists of job
ids built when read: `LeaseMask` (a `LeasePlan`) and `QueueStarts` (a `MachineQueues`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from schedopt.core.decisions import LeasePlan, MachineQueues
from schedopt.core.outcome import Outcome, Status, split_status
from schedopt.core.problem import ThroughputProblem

if TYPE_CHECKING:
    from schedopt.policies.baselines.queues import MachineTrace
    from schedopt.policies.chronus.boundary import LeaseJobs

# the ThroughputProblem fields without a default: what an event builds (`arrays`)
_ARRAYS = frozenset(f.name for f in dataclasses.fields(ThroughputProblem)
                    if f.default is dataclasses.MISSING)


class _BuiltOnRead:
    """For a frozen dataclass made by `_made(cls, {source: ..., ...})`, which sets only some
    attributes: the fields in `_ON_READ` are built together by `_build()` ({field: value})
    the first time one of them is read, from the attribute named by `_SOURCE`."""

    _ON_READ: frozenset[str] = frozenset()
    _SOURCE = ""

    def _build(self) -> dict:
        raise NotImplementedError

    def __getattr__(self, name: str) -> Any:
        # called only for attributes not set, i.e. the fields still to build
        if name not in type(self)._ON_READ or self.__dict__.get(type(self)._SOURCE) is None:
            raise AttributeError(name)
        self.__dict__.update(self._build())
        return self.__dict__[name]


def _made(cls: type, values: dict) -> Any:
    """An instance of the frozen dataclass `cls` with the attributes `values` set, without its
    `__init__` (a frozen dataclass sets each field through object.__setattr__, a few
    microseconds at every decision point of a simulation)."""
    made = object.__new__(cls)
    made.__dict__.update(values)
    return made


@dataclass(frozen=True, eq=False)
class EventProblem(_BuiltOnRead, ThroughputProblem):
    """A ThroughputProblem carrying the state of one decision point in `event`."""

    event: Any = None

    _ON_READ = _ARRAYS
    _SOURCE = "event"

    @classmethod
    def of(cls, event: "LeaseBoundary | QueueDecision") -> "EventProblem":
        """The problem of `event`, its arrays built by `event.arrays()` when first read."""
        return _made(cls, {"event": event})

    def _build(self) -> dict:
        return self.event.arrays()


def event_arrays(job_ids: np.ndarray, gpu_types: tuple[str, ...], throughput: np.ndarray,
                 scale_factor: np.ndarray, capacity: np.ndarray, remaining_steps: np.ndarray,
                 time_since_arrival: np.ndarray, time_to_deadline: np.ndarray) -> dict:
    """The ThroughputProblem arrays of a decision point, from arrays the simulator has already
    checked (no copies, no validation; job_ids stays the simulator's (M,) object array);
    weight 1, cost and isolated time unknown."""
    M, J = throughput.shape
    return {"job_ids": job_ids, "gpu_types": gpu_types, "throughput": throughput,
            "scale_factor": scale_factor, "weight": filled(M, "one"), "capacity": capacity,
            "cost_per_hour": filled(J, "nan"), "remaining_steps": remaining_steps,
            "time_since_arrival": time_since_arrival, "isolated_time": filled(M, "zero"),
            "time_to_deadline": time_to_deadline}


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


@dataclass(frozen=True, init=False)
class LeaseBoundary:
    """One lease boundary at `now` (s). ids, arrival (s), deadline (absolute s of the first SLO
    deadline, inf for best effort): (n,) over the jobs waiting or running; jobs: their GPUs and
    seconds of running left (`schedopt.policies.chronus.boundary.LeaseJobs`); capacity: GPUs
    in the pool of `gpu_type`; lease_seconds: the lease length (s).

    What a policy that keeps state over a run reads (None outside a simulation, where the
    boundary is the only one): held (n,) bool, the jobs that held GPUs in the lease before now
    (one that keeps them pays no resume overhead); arrived (n,) bool, the jobs seen for the
    first time (None: every job); run_index (n,) int, each job's position in the run, the
    same at every boundary (index arrays of the policy's own over the run's jobs);
    memory, a dict the policy keeps its own state in, the same object at every boundary of one
    run (empty at the first). A checkpoint of the run writes it and a resumed run starts from
    the copy read back, so it holds only plain values: numbers, strings, None, numpy arrays
    (float, int, bool), lists, tuples and dicts of them.

    until (s): None at a lease boundary. Set, this is a decision between two boundaries of a
    work-conserving run (the policy's `work_conserving` option): `now` is when GPUs became
    idle or a job arrived, `until` the next boundary, `capacity` the GPUs idle until then (no
    job holds them and no reservation needs them before `until`), and the jobs are those
    waiting; the jobs chosen hold GPUs from `now` to `until` (paying the resume overhead) and
    are decided again at the boundary. Nothing is admitted between boundaries: `arrived` marks
    the jobs the next boundary will see as new."""

    ids: np.ndarray
    arrival: np.ndarray
    deadline: np.ndarray
    jobs: "LeaseJobs"
    capacity: int
    gpu_type: str
    now: float
    lease_seconds: float
    held: np.ndarray | None = None
    arrived: np.ndarray | None = None
    run_index: np.ndarray | None = None
    memory: dict | None = None
    until: float | None = None

    def __init__(self, ids, arrival, deadline, jobs, capacity, gpu_type, now, lease_seconds,
                 held=None, arrived=None, run_index=None, memory=None, until=None):
        self.__dict__.update(ids=ids, arrival=arrival, deadline=deadline, jobs=jobs,
                             capacity=capacity, gpu_type=gpu_type, now=now,
                             lease_seconds=lease_seconds, held=held, arrived=arrived,
                             run_index=run_index, memory=memory, until=until)  # see `_made`

    def problem(self) -> EventProblem:
        """This boundary as the problem a LEASES policy solves (`arrays`)."""
        return EventProblem.of(self)

    def arrays(self) -> dict:
        """The problem's arrays: the pool is the one GPU type, throughput 1 (a second of
        running per second held), remaining_steps the seconds of running left."""
        jobs = self.jobs
        return event_arrays(self.ids, (self.gpu_type,), filled(jobs.num_jobs, "one")[:, None],
                            jobs.gpus, np.array([float(self.capacity)]), jobs.remaining_s,
                            self.now - self.arrival,
                            np.where(np.isfinite(self.deadline), self.deadline - self.now,
                                     np.nan))


@dataclass(frozen=True, init=False)
class QueueDecision:
    """One decision at `now` (s) over the whole `trace` (`schedopt.policies.baselines.queues.
    MachineTrace`: n jobs, K machines; arrays the simulator owns: read them, do not change
    them): queued (n,) bool, the jobs waiting; free (K,) bool, the machines idle now;
    busy_until (K,) s, when each machine's job ends (<= now when free); running (K,) the job
    on each machine (-1: none); start, completion (n,) s of the jobs started so far (nan: not
    started)."""

    trace: "MachineTrace"
    now: float
    queued: np.ndarray
    free: np.ndarray
    busy_until: np.ndarray
    running: np.ndarray
    start: np.ndarray
    completion: np.ndarray

    def __init__(self, trace, now, queued, free, busy_until, running, start, completion):
        self.__dict__.update(trace=trace, now=now, queued=queued, free=free,
                             busy_until=busy_until, running=running, start=start,
                             completion=completion)  # see `_made`

    @cached_property
    def served(self) -> np.ndarray:
        """(U,) machine-seconds each user's jobs received up to now (running jobs: the part
        they have run)."""
        started = np.flatnonzero(~np.isnan(self.start))
        elapsed = np.minimum(self.completion[started], self.now) - self.start[started]
        return np.bincount(self.trace.user[started], weights=elapsed,
                           minlength=len(self.trace.users))

    def problem(self) -> EventProblem:
        """This decision as the problem a QUEUES policy solves (`arrays`)."""
        return EventProblem.of(self)

    def arrays(self) -> dict:
        """The problem's arrays over the waiting jobs (throughput and capacity are not what
        these policies read: machines are in the event)."""
        waiting = np.flatnonzero(self.queued)
        unknown = filled(waiting.size, "nan")
        return event_arrays(self.trace.id_array[waiting], (), np.empty((waiting.size, 0)),
                            filled(waiting.size, "one"), filled(0, "zero"), unknown,
                            self.now - self.trace.arrival[waiting], unknown)


@dataclass(frozen=True, eq=False)
class LeaseMask(_BuiltOnRead, LeasePlan):
    """The LeasePlan of a rule at one lease boundary: `mask` (n,) bool over the `boundary`'s
    jobs, those holding GPUs in the next lease; `leases` and `running` (job ids) are built from
    it when read; nothing admitted or rejected."""

    boundary: LeaseBoundary | None = None
    mask: np.ndarray | None = None

    _ON_READ = frozenset({"leases", "running"})
    _SOURCE = "boundary"

    @classmethod
    def of(cls, boundary: LeaseBoundary, mask: np.ndarray) -> "LeaseMask":
        return _made(cls, {"boundary": boundary, "mask": mask, "admitted": [], "rejected": [],
                           "lease_seconds": boundary.lease_seconds,
                           "gpu_type": boundary.gpu_type})

    def _build(self) -> dict:
        ids = self.boundary.ids[self.mask].tolist()
        return {"leases": dict.fromkeys(ids, [0]), "running": ids}


@dataclass(frozen=True, eq=False)
class QueueStarts(_BuiltOnRead, MachineQueues):
    """The MachineQueues of a rule at one queue decision: `starts`, (job, machine) index pairs
    into the `decision`'s trace, the jobs that start now (one at the head of each machine that
    gets one); `queues`, `schedule` and `waiting` (job ids) are built from them when read."""

    decision: QueueDecision | None = None
    starts: list[tuple[int, int]] | None = None

    _ON_READ = frozenset({"queues", "schedule", "waiting"})
    _SOURCE = "decision"

    @classmethod
    def of(cls, decision: QueueDecision, starts: list[tuple[int, int]]) -> "QueueStarts":
        """`starts` is kept, not copied."""
        return _made(cls, {"decision": decision, "starts": starts})

    def _build(self) -> dict:
        decision, starts = self.decision, self.starts
        trace, now = decision.trace, decision.now
        ms, ks = [m for m, _ in starts], [k for _, k in starts]
        jobs, machines = [trace.ids[m] for m in ms], [trace.machines[k] for k in ks]
        ends = (now + trace.processing[ms, ks]).tolist()
        left = decision.queued.copy()
        left[ms] = False
        return {"queues": {machine: [job] for machine, job in zip(machines, jobs)},
                "schedule": {job: {"machine": machine, "position": 0, "start": now,
                                   "completion": end}
                             for job, machine, end in zip(jobs, machines, ends)},
                "waiting": trace.id_array[left].tolist()}


_RULE = split_status(Status.FEASIBLE)  # what a priority rule reports: a decision, no optimum


def rule_outcome(allocation: np.ndarray | None, decision: Any, details: dict, seconds: float,
                 algorithm: str) -> Outcome:
    """The Outcome of a priority rule at one decision point (status feasible, no objective;
    seconds: wall seconds of the decision)."""
    return Outcome(allocation, *_RULE, None, None, seconds, algorithm, details, decision)


__all__ = ["EventProblem", "LeaseBoundary", "LeaseMask", "QueueDecision", "QueueStarts",
           "event_arrays", "event_of", "filled", "rule_outcome"]

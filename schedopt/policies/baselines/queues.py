"""Queue baselines on GPU and CPU machines (decision QUEUES, like allox): whole jobs started on
free machines, never preempted or migrated.

Machines are every GPU (one machine each) and every CPU machine; job m takes p[m, k] seconds on
machine k (`schedopt.policies.allox.matching.allox_processing_times`, inf = cannot run there).
At a decision some machines are free and some jobs wait; each policy names the jobs that start
on free machines now:

- `sjf`: shortest job first on the faster device. A job's faster device is the set of machines
  where its processing time is smallest (all GPUs of its fastest type, or all CPU machines;
  within 1e-9 relative); it runs only there. A free machine takes, among the waiting jobs whose
  faster device it belongs to, the one with the smallest processing time (ties: earlier arrival,
  then trace order). Free machines are filled in machine order.
- `fifo_queue`: jobs in arrival order (ties: trace order); each takes, among the free machines
  that can run it, the one where it runs fastest (ties: machine order, GPUs first); a job that
  no free machine can run waits and later jobs may pass it. (`fifo` is the time-fraction
  baseline of the same idea.)
- `drf`: dominant resource fairness over two resources, GPU machines and CPU machines. A user's
  dominant share = max(GPUs running its jobs / all GPUs, CPU machines running its jobs / all CPU
  machines). Free machines in machine order; each goes to the user with the lowest dominant
  share among those with a waiting job that can run there (ties: lower machine-seconds served so
  far, then user name), whose shortest such job (on that machine; ties: arrival, trace order)
  starts on it. Speed-agnostic: a GPU-friendly job may run on a CPU machine.

Times are seconds of the instance's clock (arrival_time).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from schedopt.core.capabilities import Capability
from schedopt.core.decisions import DecisionKind
from schedopt.core.events import QueueDecision, QueueStarts, event_of, rule_outcome
from schedopt.core.outcome import Outcome
from schedopt.core.policy import Policy
from schedopt.core.problem import ThroughputProblem
from schedopt.errors import SchedoptError
from schedopt.instance.model import Instance
from schedopt.policies.allox.matching import allox_processing_times

FASTEST_TOLERANCE = 1e-9  # relative: processing times this close count as equally fast


@dataclass(frozen=True)
class MachineTrace:
    """Jobs as arrays over n jobs (trace order) and K machines (GPUs first, then CPUs).

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
    def from_instance(cls, instance: Instance) -> "MachineTrace":
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

    @cached_property
    def runnable(self) -> np.ndarray:
        """(n, K) bool: job m can run on machine k (finite processing time)."""
        return np.isfinite(self.processing)

    @cached_property
    def arrival_order(self) -> np.ndarray:
        """(n,) every job by arrival, ties in trace order."""
        return np.lexsort((np.arange(len(self.ids)), self.arrival))

    @cached_property
    def shortest_order(self) -> np.ndarray:
        """(K, n): row k is every job by processing time on machine k, ties by arrival, then
        trace order (a rule's pick among any subset is that subset's first in this row)."""
        n, K = self.processing.shape
        index = np.arange(n)
        return np.array([np.lexsort((index, self.arrival, self.processing[:, k]))
                         for k in range(K)], dtype=np.intp).reshape(K, n)

    @cached_property
    def id_array(self) -> np.ndarray:
        """(n,) the job ids as an object array."""
        return np.asarray(self.ids, dtype=object)

    @cached_property
    def job_index(self) -> dict[str, int]:
        return {job: m for m, job in enumerate(self.ids)}

    @cached_property
    def machine_index(self) -> dict[str, int]:
        return {name: k for k, name in enumerate(self.machines)}

    def __post_init__(self):
        nowhere = ~(np.isfinite(self.processing) & (self.processing >= 0)).any(axis=1)
        if nowhere.any():
            bad = [self.ids[m] for m in np.flatnonzero(nowhere)[:5]]
            raise SchedoptError(f"jobs {', '.join(bad)} can run on no machine (no GPU "
                                f"throughput and no performance.cpu_time)")


def decision_of(instance: Instance) -> QueueDecision:
    """Every job of `instance` waiting at `instance.now`, every machine free."""
    trace = MachineTrace.from_instance(instance)
    n, K = trace.processing.shape
    return QueueDecision(trace, float(instance.now), np.ones(n, dtype=bool),
                         np.ones(K, dtype=bool), np.full(K, float(instance.now)),
                         np.full(K, -1), np.full(n, np.nan), np.full(n, np.nan))


def queue_outcome(decision: QueueDecision, starts: list[tuple[int, int]], seconds: float,
                  algorithm: str, details: dict | None = None, document: bool = True) -> Outcome:
    """The jobs `starts` [(job, machine)] (indices into the trace) started now, as an Outcome
    whose decision is a MachineQueues (`QueueStarts`: one job at the head of each machine that
    gets one). document=True puts queues, schedule and waiting (job ids) into the details, for
    the result document; inside a simulation (False) they are built only if read."""
    plan = QueueStarts.of(decision, starts)
    out = {} if details is None else dict(details)
    if document:
        out = {"queues": plan.queues, "schedule": plan.schedule, "waiting": plan.waiting, **out}
    return rule_outcome(None, plan, out, seconds, algorithm)


def _first(order: np.ndarray, eligible: np.ndarray) -> int:
    """The first job of `order` (indices) that is `eligible` ((n,) bool), -1 if none."""
    if not eligible.any():
        return -1
    chosen = eligible[order]
    return int(order[chosen.argmax()])


def _by_key(*keys: np.ndarray) -> np.ndarray:
    """Indices sorted by keys[0], then keys[1], ... (np.lexsort takes them last-first)."""
    return np.lexsort(keys[::-1])


class _QueuePolicy(Policy):
    """Start jobs on free machines by a rule (`starts`)."""

    decision = DecisionKind.QUEUES
    needs = Capability.none()
    default_solver = None
    instance_data = "CPU machines and cpu_time"
    objective_doc = "none (a priority rule)"

    def starts(self, decision: QueueDecision) -> list[tuple[int, int]]:
        raise NotImplementedError

    def check_instance(self, problem: ThroughputProblem) -> None:
        if event_of(problem, QueueDecision) is None:
            super().check_instance(problem)

    def solve(self, problem: ThroughputProblem, options, solver) -> Outcome:
        clock = time.perf_counter()
        decision = event_of(problem, QueueDecision)
        standalone = decision is None
        if standalone:
            decision = decision_of(problem.instance)
        starts = self.starts(decision)
        return queue_outcome(decision, starts, time.perf_counter() - clock, self.name,
                             document=standalone)


class Sjf(_QueuePolicy):
    name = "sjf"
    summary = ("Queue baseline: shortest job first on its faster device (GPU or CPU machines), "
               "non-preemptive.")

    def starts(self, decision: QueueDecision) -> list[tuple[int, int]]:
        trace, starts = decision.trace, []
        fastest, shortest = trace.fastest, trace.shortest_order
        waiting = decision.queued.copy()
        for k in np.flatnonzero(decision.free):
            m = _first(shortest[k], waiting & fastest[:, k])
            if m >= 0:
                starts.append((m, int(k)))
                waiting[m] = False
        return starts


class FifoQueue(_QueuePolicy):
    name = "fifo_queue"
    summary = ("Queue baseline: arrival order, each job on the free machine where it runs "
               "fastest, non-preemptive.")

    def starts(self, decision: QueueDecision) -> list[tuple[int, int]]:
        trace, starts = decision.trace, []
        order = trace.arrival_order
        jobs = order[decision.queued[order]]
        idle = decision.free.copy()
        while jobs.size and idle.any():
            # the next job in arrival order that some idle machine can run (the ones skipped
            # can run on none, and idle machines only get fewer)
            fits = trace.runnable[jobs][:, idle].any(axis=1)
            i = int(np.argmax(fits))
            if not fits[i]:
                break
            m = int(jobs[i])
            k = int(np.argmin(np.where(idle, trace.processing[m], np.inf)))
            starts.append((m, k))
            idle[k] = False
            jobs = jobs[i + 1:]
        return starts


class Drf(_QueuePolicy):
    name = "drf"
    summary = ("Queue baseline: dominant resource fairness over GPU and CPU machines, "
               "non-preemptive, speed-agnostic.")

    def starts(self, decision: QueueDecision) -> list[tuple[int, int]]:
        trace, starts = decision.trace, []
        U = len(trace.users)
        is_gpu = trace.is_gpu
        held = np.zeros((U, 2))  # machines running each user's jobs now: GPUs, CPUs
        busy = np.flatnonzero((decision.busy_until > decision.now) & (decision.running >= 0))
        np.add.at(held, (trace.user[decision.running[busy]], np.where(is_gpu[busy], 0, 1)), 1.0)
        totals = np.array([max(is_gpu.sum(), 1), max((~is_gpu).sum(), 1)], dtype=float)
        served = decision.served
        waiting = decision.queued.copy()
        for k in np.flatnonzero(decision.free):
            can = waiting & trace.runnable[:, k]
            jobs = np.flatnonzero(can)
            if jobs.size == 0:
                continue
            candidates = np.unique(trace.user[jobs])
            dominant = (held[candidates] / totals).max(axis=1)
            u = candidates[_by_key(dominant, served[candidates], candidates)[0]]
            m = _first(trace.shortest_order[k], can & (trace.user == u))
            starts.append((m, int(k)))
            waiting[m] = False
            held[u, 0 if is_gpu[k] else 1] += 1.0
        return starts


__all__ = ["Drf", "FifoQueue", "MachineTrace", "Sjf", "decision_of", "queue_outcome"]

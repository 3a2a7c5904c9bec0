"""What a machine-queues policy (decision QUEUES, e.g. AlloX) works on: how long each job takes
on each machine, and which machines and jobs a POP part gives it.

A QUEUES policy that `Partitioned` can split offers `machine_times(problem, options)` (the whole
problem's `MachineTimes`) and schedules exactly `problem.times` when handed a `QueuesPart`;
`details(times, decision, options)` (optional) writes the result document's keys for a
`MachineQueues` decision.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from schedopt.core.problem import ThroughputProblem


@dataclass(frozen=True, eq=False)
class MachineTimes:
    """The jobs to place now on whole machines. job_ids: (n,); machines: (K,) machine ids;
    processing: (n, K) seconds job m needs on machine k (np.inf: it cannot run there);
    free_at: (K,) absolute seconds machine k is free; arrival: (n,) absolute seconds;
    waiting: ids of the jobs left out of this decision (they wait for a later one)."""

    job_ids: tuple[str, ...]
    machines: tuple[str, ...]
    processing: np.ndarray
    free_at: np.ndarray
    arrival: np.ndarray
    waiting: tuple[str, ...] = ()

    def subset(self, rows: np.ndarray, cols: np.ndarray) -> "MachineTimes":
        """The jobs `rows` on the machines `cols` (index arrays), nobody waiting."""
        ids, names = np.asarray(self.job_ids, dtype=object), np.asarray(self.machines, dtype=object)
        return MachineTimes(tuple(ids[rows]), tuple(names[cols]),
                            self.processing[np.ix_(rows, cols)], self.free_at[cols],
                            self.arrival[rows])


@dataclass(frozen=True, eq=False)
class QueuesPart(ThroughputProblem):
    """A POP part of a QUEUES problem: the policy schedules the jobs of `times` on its machines
    only (the arrays above are the part's jobs; `instance` may be None)."""

    times: MachineTimes | None = None

    @classmethod
    def of(cls, problem: ThroughputProblem, times: MachineTimes) -> "QueuesPart":
        values = {f.name: getattr(problem, f.name) for f in fields(ThroughputProblem)}
        return cls(**values, times=times)

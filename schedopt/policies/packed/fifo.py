"""FIFO with space sharing (Gavel's `fifo_packed`): whole jobs in arrival order, then the jobs
left in the queue join running jobs when the pair runs well enough.

1. Solo, in job order: a job takes s_m GPUs of its fastest type among those with s_m GPUs
   free (ties: the first type); the queue stops at the first job for which no type has room
   (that job waits), and a job whose fastest type with room runs it at 0 steps/s is passed
   over.
2. Pairing, in job order over the jobs still waiting (those passed over in step 1, and the
   one that found no room while GPUs were free, do not take part): a waiting job joins the running solo job of its
   scale factor with the highest normalized pair throughput on that job's type,
   Q_j[m,m'] / T[m,j] + Q_j[m',m] / T[m',j] (terms with a pair rate of 0 count 0; ties: the
   job placed first), when that sum is above `threshold` (1.5 by default: the pair makes 50%
   more progress than one job alone); the first waiting job with no such partner stops the
   pairing, so no job overtakes an earlier one.

Each placed job or pair holds its GPUs for the whole round (time fraction 1). Both passes are
sequential by nature (each choice depends on the ones before); a step of the pairing pass is
one vectorized look over the running jobs.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from schedopt.backends import Status
from schedopt.core.capabilities import Capability
from schedopt.core.outcome import Outcome
from schedopt.core.problem import ThroughputProblem
from schedopt.errors import PolicyError
from schedopt.policies.packed.decision import PairedAllocation
from schedopt.policies.packed.master import PairTable
from schedopt.policies.packed.policy import PackedPolicy


def fifo_solo(problem: ThroughputProblem) -> tuple[np.ndarray, np.ndarray]:
    """(gpu type of each job, -1 when not placed; the jobs still waiting, in order) after step 1
    of the module docstring."""
    M = problem.num_jobs
    T = problem.throughput * problem.runnable
    free = problem.capacity.astype(float).copy()
    placed = np.full(M, -1)
    for m in range(M):  # sequential by nature: each job takes what the earlier ones left
        if not np.any(free > 0):  # the cluster is full: job m still waits in the queue
            return placed, np.arange(m, M)
        room = free >= problem.scale_factor[m]
        if not room.any():
            return placed, np.arange(m + 1, M)
        j = int(np.argmax(np.where(room, T[m], -1.0)))
        if T[m, j] > 0:
            placed[m] = j
            free[j] -= problem.scale_factor[m]
    return placed, np.zeros(0, dtype=int)


def pair_gain(table_rates: np.ndarray, T: np.ndarray, m: np.ndarray, partner: int,
              gpu: np.ndarray) -> np.ndarray:
    """(n,) normalized throughput of job `partner` paired with each job m[i] on type gpu[i]:
    Q[m, partner] / T[m] + Q[partner, m] / T[partner] (a nan or 0 pair rate counts 0)."""
    mine = np.nan_to_num(table_rates[gpu, m, partner])
    theirs = np.nan_to_num(table_rates[gpu, partner, m])
    with np.errstate(divide="ignore", invalid="ignore"):
        return (np.where(mine > 0, mine / T[m, gpu], 0.0)
                + np.where(theirs > 0, theirs / T[partner, gpu], 0.0))


def job_pair_rates(problem: ThroughputProblem, table: PairTable) -> np.ndarray:
    """(J, M, M) steps/s of job m beside m' on each type (nan: they cannot share there; pairs
    of unequal scale factor never share)."""
    rates = np.stack([table.pair_rates(j) for j in range(problem.num_types)]) \
        if problem.num_types else np.zeros((0, problem.num_jobs, problem.num_jobs))
    s = problem.scale_factor
    return np.where((s[:, None] == s[None, :])[None], rates, np.nan)


def fifo_packed(problem: ThroughputProblem, table: PairTable,
                threshold: float = 1.5) -> PairedAllocation:
    """The decision of the module docstring."""
    M, J = problem.num_jobs, problem.num_types
    placed, waiting = fifo_solo(problem)
    T = problem.throughput * problem.runnable
    rates = job_pair_rates(problem, table)
    order = list(np.flatnonzero(placed >= 0))  # running solo jobs in placement order
    first, second, gpu = [], [], []
    for m in waiting:  # the queue's order; stops at the first job nobody pairs with
        running = np.array(order, dtype=int)
        gain = pair_gain(rates, T, running, int(m), placed[running]) if running.size else \
            np.zeros(0)
        if gain.size == 0 or gain.max() <= threshold:
            break
        host = int(running[np.argmax(gain)])
        order.remove(host)
        first.append(min(host, int(m)))
        second.append(max(host, int(m)))
        gpu.append(int(placed[host]))
    solo = np.zeros((M, J))
    alone = np.array(order, dtype=int)
    solo[alone, placed[alone]] = 1.0
    first, second, gpu = (np.array(v, dtype=np.int64) for v in (first, second, gpu))
    return PairedAllocation(solo, first, second, gpu, np.ones(first.size),
                            np.nan_to_num(rates[gpu, first, second]),
                            np.nan_to_num(rates[gpu, second, first]))


@dataclasses.dataclass(frozen=True)
class FifoPackedOptions:
    """threshold: the normalized pair throughput (dimensionless, sum of both jobs' pair rate
    over solo rate) a waiting job's pair must exceed to start."""

    threshold: float = 1.5

    def __post_init__(self):
        if not self.threshold >= 0:
            raise PolicyError(f"threshold must be >= 0, got {self.threshold}")


class FifoPacked(PackedPolicy):
    """FIFO with space sharing (module docstring); calls no solver."""

    name = "fifo_packed"
    summary = ("FIFO on each job's fastest free type, then waiting jobs join running ones whose "
               "pair makes enough progress (co-location table).")
    objective_doc = "none"
    Options = FifoPackedOptions
    needs = Capability.none()
    default_solver = None

    def solve_with_table(self, problem: ThroughputProblem, table: PairTable,
                         options: FifoPackedOptions, solver) -> Outcome:
        start = time.perf_counter()
        decision = fifo_packed(problem, table, options.threshold)
        return Outcome.from_status(decision.total(), Status.OPTIMAL, None, None,
                                   time.perf_counter() - start, None,
                                   {"pairs": decision.pairs(problem)}, decision=decision)

    def objective(self, problem, allocation, options) -> float | None:
        return None

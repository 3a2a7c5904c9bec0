"""AlloX: whole jobs on GPU and CPU machines, minimizing total completion time (docs/formulations.md §4).

Machines k = 1..K are every GPU (one machine each) and every CPU machine. Job m needs p[m,k]
seconds on machine k (inf: it cannot run there), machine k is free at A_k, job m arrived at a_m.
A machine runs its jobs one after another, never preempting. Slot (k, q) is "q-th from last on
machine k": the job there delays itself and the q - 1 jobs after it, so with x[m,(k,q)] = 1 when
job m takes slot (k, q),

    min  sum_{m,k,q} c[m,(k,q)] x[m,(k,q)],     c[m,(k,q)] = (A_k - a_m) + q p[m,k]
    s.t. sum_{k,q} x[m,(k,q)] = 1    for every job m        (every job gets a slot)
         sum_m     x[m,(k,q)] <= 1   for every slot (k,q)   (a slot holds one job)
         x >= 0                                             (the LP is integral: an assignment)

equals min over schedules of sum_m (C_m - a_m), C_m = completion time: a schedule gives a
matching of the same cost (a machine's jobs, read from the last, take q = 1, 2, ...), and a
matching with gaps on a machine only gets cheaper when its jobs move down to q = 1, 2, ...,
which is again a schedule (the jobs run in decreasing q). For a fixed assignment to machines
the best order is shortest processing time first (SPT); `allox_schedule` reports that order.

The cost matrix is built by broadcasting, without the two constants the formulation carries:
-a_m is the same for every slot of row m and min_k A_k for every slot, and every job takes
exactly one slot, so dropping them shifts every matching's cost by the same amount.

Exact reduction: per-machine caps on q
--------------------------------------
With q = 1..n on every machine the matrix is n x nK (1e8 entries at 1,000 jobs and 100
machines). We keep slots q <= Q_k on machine k only, solve that matching exactly, and accept
it when every machine k has Q_k = n or its slot (k, Q_k) unused; otherwise the caps of the
machines whose last slot is used double (to at most n) and we solve again.

Claim: an optimal matching x* of the capped problem in which slot (k, Q_k) is unused for every
k with Q_k < n is optimal for the uncapped problem.
Proof. The LP dual of the capped problem is  max sum_m u_m + sum_s v_s  s.t.  u_m + v_s <=
c[m,s], v_s <= 0. Take an optimal dual (u, v); by strong duality its value is the cost of x*.
Complementary slackness gives v_s = 0 on every unused slot, so v_(k,Q_k) = 0. Extend v by
v_(k,q) = 0 for Q_k < q <= n. The new dual rows hold: u_m <= c[m,(k,Q_k)] - v_(k,Q_k) =
c[m,(k,Q_k)] <= c[m,(k,q)], because c[m,(k,q)] = A_k - a_m + q p[m,k] is nondecreasing in q
(p >= 0). So (u, v) is feasible for the uncapped dual with the same value: a lower bound on the
uncapped optimum that x* (feasible there too) attains. Slots q > n are never needed (n jobs
leave no gap-free schedule using them). QED. (`tests/test_allox_matching.py` checks the capped
answer against the full n x nK matching on random instances.)

The first caps come from a greedy schedule: jobs from the longest (smallest p over machines)
to the shortest each take the machine where running them first adds the least,
A_k + (n_k + 1) p[m,k] (with SPT order a shorter job delays the n_k jobs already there and
itself). Its per-machine counts are within one of the optimum's on the benchmark instances, and
caps Q_k = n_k + ceil(n_k / 10) + 2 make a second matching rare. The greedy assignment fits
the caps, so the capped problem is always feasible. The greedy loops over jobs (n steps of
O(K) numpy work, inherently sequential, ~5 ms at 1,000 x 100); the matrix does not.

Methods (`method=`), all on the same capped matrix:
- `scipy`: scipy.optimize.linear_sum_assignment, a dense shortest augmenting path (LAPJV-like)
  solver on float costs, rows fed longest job first. When machines come in identical groups
  (the GPUs of a type, all free now: what `schedopt solve -p allox` sees) that order is 3-14x
  faster than input order (ties let augmenting paths end early); otherwise it makes no
  difference.
- `scipy-sparse`: scipy's LAPJVsp (min_weight_full_bipartite_matching) on the finite entries.
- `ortools`: OR-Tools SimpleMinCostFlow. It takes int64 costs, so costs are scaled to ~2^40
  and rounded: optimal for the rounded costs, within n * max|c| * 2^-40 of the optimum.
- `full`: the uncapped n x nK matrix with scipy, rows as given (the reference of the tests).
`auto` is `scipy`, chosen by measurement (benchmarks/allox_scaling.py, table in
benchmarks/README.md): fastest at every size up to 1,000 jobs; 1,000 jobs x 100 machines in
0.11 s with identical groups and 1.05 s with every machine distinct; 2,000 x 100 in 1.1 s /
12.4 s (there scipy-sparse ties with it). OR-Tools is 1.7-18x slower and inexact by rounding.
The solve grows roughly as n^3 when machines are distinct.

Fairness knob alpha in (0, 1] (`fairness_filter`): only jobs of the ceil(alpha * U) users with
the lowest current share (U = distinct users among the queued jobs; ties by user name) enter a
matching; the others wait for a later one. alpha = 1 is pure total-completion minimization.
"""

from __future__ import annotations

import importlib
import math
import numbers
from dataclasses import dataclass

import numpy as np

from schedopt.core.deadline import is_past
from schedopt.backends import assignment
from schedopt.backends.assignment import NoFullMatching
from schedopt.errors import PolicyError, SolveError
from schedopt.core.problem import ThroughputProblem
from schedopt.instance.model import Instance
from schedopt.mechanism.topology import Topology

METHODS = ("auto", "scipy", "scipy-sparse", "ortools", "full")
DEFAULT_METHOD = "scipy"


@dataclass(frozen=True)
class AlloxSchedule:
    """One AlloX matching as a schedule; times are absolute seconds.

    machine[m]: machine index job m runs on; position[m]: 0 = first to run on that machine;
    start / completion: (n,) seconds; queues[k]: job indices in run order on machine k (empty
    when k gets none); total_completion: sum over jobs of (completion - arrival), seconds.
    """

    machine: np.ndarray
    position: np.ndarray
    start: np.ndarray
    completion: np.ndarray
    queues: tuple[tuple[int, ...], ...]
    total_completion: float


@dataclass(frozen=True)
class MatchingStats:
    """How `allox_assignment` got its answer: matchings solved, slots in the last one, final
    caps, and whether its time limit stopped it before the optimum was proven."""

    matchings: int
    slots: int
    caps: np.ndarray
    timed_out: bool = False


# ---------------------------------------------------------------------------------------------
# The schedule


def allox_schedule(processing: np.ndarray, free_at: np.ndarray, arrival: np.ndarray,
                   method: str = "auto") -> AlloxSchedule:
    """Assign every job to a machine and an order, minimizing sum (completion - arrival) exactly.

    processing[m, k]: seconds job m needs on machine k (np.inf = cannot run there; every job
    must be runnable somewhere). free_at[k]: absolute time machine k becomes free. arrival[m]:
    absolute arrival time. Jobs are all available now: a job starts at its machine's free time
    plus its predecessors' processing. method: one of METHODS (see the module docstring).
    """
    P, A, a = validated(processing, free_at, arrival)
    machine, _ = allox_assignment(P, A, method)
    return schedule_from_assignment(P, A, a, machine)


def allox_assignment(processing: np.ndarray, free_at: np.ndarray, method: str = "auto",
                     initial_caps: np.ndarray | None = None,
                     deadline: float | None = None) -> tuple[np.ndarray, MatchingStats]:
    """(machine per job, stats) of an optimal matching; inputs already validated.

    initial_caps: start from these slots per machine instead of the greedy's (tests use it to
    exercise the growth steps); a capped problem without a full matching grows every cap.
    deadline: a time.perf_counter() value checked between matchings (one matching is not
    interrupted): past it, the greedy schedule's assignment (before the first matching) or the
    last capped matching's (a full matching, optimal for its caps) is returned, timed_out set.
    """
    P, A = processing, free_at
    n, K = P.shape
    solve = solver_of(method)
    if n == 0:
        return np.zeros(0, dtype=int), MatchingStats(0, 0, np.zeros(K, dtype=int))
    order = np.arange(n)  # rows as given for the reference; longest job first otherwise
    if method == "full":
        caps = np.full(K, n)
    elif initial_caps is not None:
        order = np.argsort(-P.min(axis=1), kind="stable")
        caps = np.clip(np.asarray(initial_caps, dtype=int), 0, n)
    else:
        order, counts, greedy = greedy_counts(P, A)
        if is_past(deadline):
            return greedy, MatchingStats(0, 0, counts, timed_out=True)
        caps = np.minimum(n, counts + -(-counts // 10) + 2)
    caps[~np.isfinite(P).any(axis=0)] = 0           # nobody can run there: no slots
    matchings = 0
    while True:
        slot_machine, slot_q = slots(caps)
        cost = slot_costs(P[order], A, slot_machine, slot_q)
        matchings += 1
        try:
            if slot_q.size < n:
                raise NoFullMatching
            found = solve(cost)
        except NoFullMatching:
            room = (caps < n) & np.isfinite(P).any(axis=0)
            if not room.any():  # cannot happen: n slots on every usable machine always fit
                raise SolveError("AlloX: no full matching even with n slots per machine")
            caps = np.where(room, np.minimum(n, np.maximum(2 * caps, 1)), caps)
            continue
        col = np.empty(n, dtype=int)
        col[order] = found
        last_used = np.zeros(K, dtype=bool)
        last_used[slot_machine[col][slot_q[col] == caps[slot_machine[col]]]] = True
        grow = last_used & (caps < n)
        if not grow.any():
            return slot_machine[col], MatchingStats(matchings, int(slot_q.size), caps)
        if is_past(deadline):
            return slot_machine[col], MatchingStats(matchings, int(slot_q.size), caps, True)
        caps = np.where(grow, np.minimum(n, 2 * caps), caps)


def slots(caps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(machine, q) of every slot when machine k keeps q = 1..caps[k] (q-th from last)."""
    slot_machine = np.repeat(np.arange(caps.size), caps)
    first = np.repeat(np.cumsum(caps) - caps, caps)
    return slot_machine, np.arange(slot_machine.size) - first + 1


def slot_costs(processing: np.ndarray, free_at: np.ndarray, slot_machine: np.ndarray,
               slot_q: np.ndarray) -> np.ndarray:
    """(n, S) matrix c[m, s] = (A_k - min A) + q p[m,k] for slot s = (k, q) (inf: cannot run),
    the formulation's cost less the per-row constant a_m and the global min A."""
    start = (free_at - free_at.min())[slot_machine]
    return start[None, :] + slot_q[None, :] * processing[:, slot_machine]


def greedy_counts(processing: np.ndarray, free_at: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(job order, jobs per machine, machine per job) of the greedy schedule that seeds the
    caps: jobs from the longest to the shortest each go where running them first adds least,
    A_k + (n_k+1) p[m,k]."""
    K = processing.shape[1]
    order = np.argsort(-processing.min(axis=1), kind="stable")
    counts = np.zeros(K)
    machine = np.empty(processing.shape[0], dtype=int)
    for m in order:  # sequential by nature: each choice depends on the counts so far
        machine[m] = np.argmin(free_at + (counts + 1.0) * processing[m])
        counts[machine[m]] += 1.0
    return order, counts.astype(int), machine


def schedule_from_assignment(processing: np.ndarray, free_at: np.ndarray, arrival: np.ndarray,
                             machine: np.ndarray) -> AlloxSchedule:
    """The schedule that runs each machine's jobs shortest first (ties: lower job index)."""
    n, K = processing.shape
    machine = np.asarray(machine, dtype=int)
    p = processing[np.arange(n), machine]
    order = np.lexsort((np.arange(n), p, machine))
    counts = np.bincount(machine, minlength=K)
    first = np.cumsum(counts) - counts
    position = np.empty(n, dtype=int)
    position[order] = np.arange(n) - np.repeat(first, counts)
    start, completion = np.empty(n), np.empty(n)
    queues = []
    for k, jobs in enumerate(np.split(order, np.cumsum(counts)[:-1]) if K else []):
        done = free_at[k] + np.cumsum(p[jobs])
        completion[jobs] = done
        start[jobs] = done - p[jobs]
        queues.append(tuple(int(j) for j in jobs))
    return AlloxSchedule(machine, position, start, completion, tuple(queues),
                         float(np.sum(completion - arrival)))


# ---------------------------------------------------------------------------------------------
# Exact assignment solvers: (n, S) cost with inf = forbidden -> column of each row


_SOLVERS = {"scipy": (assignment.dense, "scipy.optimize"),
            "scipy-sparse": (assignment.sparse, "scipy.sparse.csgraph"),
            "ortools": (assignment.min_cost_flow, "ortools.graph.python.min_cost_flow"),
            "full": (assignment.dense, "scipy.optimize")}


def solver_of(method: str):
    """The solver function of `method`, its module imported now (so that timings exclude it:
    scipy.optimize takes ~0.7 s to import cold)."""
    key = DEFAULT_METHOD if method == "auto" else method
    if key not in _SOLVERS:
        raise SolveError(f"unknown AlloX method {method!r}; choose one of {', '.join(METHODS)}")
    solve, module = _SOLVERS[key]
    importlib.import_module(module)
    return solve


def validated(processing, free_at, arrival) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    P = np.asarray(processing, dtype=float)
    if P.ndim != 2:
        raise PolicyError(f"processing must be a 2-D (jobs x machines) array, got shape {P.shape}")
    n, K = P.shape
    A = np.asarray(free_at, dtype=float)
    a = np.asarray(arrival, dtype=float)
    if A.shape != (K,) or a.shape != (n,):
        raise PolicyError(f"free_at must have shape ({K},) and arrival ({n},); got {A.shape} "
                          f"and {a.shape}")
    if np.isnan(P).any() or (P < 0).any():
        raise PolicyError("processing times must be >= 0 (np.inf = cannot run there)")
    if not (np.isfinite(A).all() and np.isfinite(a).all()):
        raise PolicyError("free_at and arrival must be finite")
    stuck = np.flatnonzero(~np.isfinite(P).any(axis=1))
    if stuck.size:
        raise PolicyError(f"job(s) {', '.join(map(str, stuck[:5]))} can run on no machine "
                          f"(processing time inf everywhere)")
    return P, A, a


# ---------------------------------------------------------------------------------------------
# From an instance: machines, processing times, fairness


def allox_processing_times(instance: Instance) -> tuple[np.ndarray, tuple[str, ...]]:
    """(processing (n, K) seconds, machine names): one machine per GPU (`<node>/<slot>`,
    processing = remaining steps / throughput on its type, inf where the throughput is 0), then
    every CPU machine (its id; processing = performance.cpu_time[job], inf without one)."""
    problem = ThroughputProblem.from_instance(instance)
    ids = np.asarray(problem.job_ids, dtype=object)
    wide = problem.scale_factor > 1
    if wide.any():
        raise PolicyError(problem.located(
            f"jobs[{int(np.argmax(wide))}].scale_factor", f"AlloX runs every job on one GPU "
            f"or one CPU machine; job(s) {', '.join(ids[wide][:5])} have scale_factor > 1"))
    problem.require_remaining_steps("allox")
    topology = Topology.from_cluster(instance.cluster)
    gpu_throughput = problem.throughput[:, topology.gpu_type]
    with np.errstate(divide="ignore", invalid="ignore"):
        gpu = np.where(gpu_throughput > 0,
                       problem.remaining_steps[:, None] / gpu_throughput, np.inf)
    cpu_time = instance.performance.cpu_time
    cpus = instance.cluster.cpu_machines
    per_job = np.array([cpu_time.get(job, np.inf) for job in problem.job_ids], dtype=float)
    cpu = np.broadcast_to(per_job[:, None], (problem.num_jobs, len(cpus)))
    names = (tuple(topology.gpu_label(g) for g in range(topology.num_gpus))
             + tuple(machine.id for machine in cpus))
    if len(set(names)) != len(names):
        raise PolicyError("a CPU machine id equals a GPU label (<node>/<slot>); rename it")
    return np.hstack([gpu, cpu]), names


def fairness_filter(users: np.ndarray, share: np.ndarray, alpha: float) -> np.ndarray:
    """(n,) bool: job m enters the matching when its user is among the ceil(alpha * U) users
    with the lowest current share (U = distinct users among these jobs; ties by user name).

    share[m] is job m's user's current share (the same for all jobs of a user). alpha in (0, 1];
    alpha * U is rounded to 9 digits first, so that e.g. 0.7 * 10 keeps 7 users, not 8.
    """
    if isinstance(alpha, bool) or not (isinstance(alpha, numbers.Real) and 0 < alpha <= 1):
        raise PolicyError(f"alpha must be in (0, 1], got {alpha!r}")
    names = np.asarray(users, dtype=object).astype(str)
    share = np.asarray(share, dtype=float)
    if share.shape != names.shape:
        raise PolicyError(f"share must have shape {names.shape}, got {share.shape}")
    if names.size == 0:
        return np.zeros(0, dtype=bool)
    distinct, first, which = np.unique(names, return_index=True, return_inverse=True)
    user_share = share[first]
    if not np.array_equal(user_share[which], share):
        raise PolicyError("share must be the same for every job of a user")
    keep = math.ceil(round(alpha * distinct.size, 9))
    chosen = np.argsort(user_share, kind="stable")[:keep]  # distinct is sorted: ties by name
    return np.isin(which, chosen)

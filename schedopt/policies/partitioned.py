"""POP as a wrapper policy: `Partitioned(policy, k)` splits a problem into k parts, solves each
with `policy` itself (in parallel), and coalesces the parts' decisions (docs/formulations.md
§6; Narayanan et al., SOSP'21). It wraps any policy, built in or a user's:

    from schedopt.policies.partitioned import Partitioned
    pop = Partitioned(my_policy, k=8, executor="process")
    result = schedopt.solve(instance, pop)   # or schedopt.solve(instance, "name", partitions=8)
    result.details["pop"]   # k, method, executor, seed, parts {job: part}, part_seconds, ...

How a problem splits depends on the decision the policy emits:

- ALLOCATION (time fractions X[m, j]): the jobs are dealt into k parts (`partition_jobs`) and a
  part gets a share of every GPU type equal to its share of the jobs (fractional, not floored:
  1/k for balanced parts; it follows sticky parts as they drift). The constraints of these
  policies couple jobs only through per-type capacity, so the union of the parts' allocations
  is feasible for the whole cluster. A part keeps the whole cluster's type sizes for deciding
  where a job can run (`type_size`), so a job needing more GPUs than its part's share of a type
  still gets a time fraction there. A policy that reads the instance sees the part's jobs and
  the whole cluster (its capacities are `problem.capacity`).
- QUEUES (whole jobs on machines, e.g. AlloX): jobs and machines are both split
  (`partition_machines`), and each part schedules its jobs on its machines only; the machines
  are disjoint, so the union is a schedule of the whole cluster. The policy offers
  `machine_times` and takes a `QueuesPart` (`schedopt.policies.machine_times`).
- LEASES and PS_CONFIGURATION (Chronus, SMD) do not split: their decisions couple every job
  through the pool or the machines' resources.

Partitioning of jobs (`partition_jobs`), seeded:
- `stratified` (default): jobs sorted by scale factor, fastest type and their normalized
  throughput row, ties broken at random, then dealt so that each part's jobs are spread evenly
  along that order (parts in random order where positions tie), so every part gets nearly the
  same mix of jobs. On a Gavel-like 10,000-job instance POP-16's max-min gap is 0.11%,
  against 0.94% with `random` (benchmarks/README.md).
- `random`: a random permutation dealt the same way (as POP's reference code).
- `previous` {job id: part} keeps jobs in their part across successive solves (sticky); jobs
  not in it are dealt, in the order above, so as to even out the parts' job counts.

Executors: `serial`; `process`, a pool of min(k, cores) worker processes that receive the
policy (pickled by reference: its class or function must be importable there) and the parts'
arrays, each solver limited to cores / workers threads; `ray` (`pip install 'schedopt[ray]'`):
one task per part, solver threads 1, on `ray.init()` (local) or the cluster named by
RAY_ADDRESS. Serial parts keep the caller's solver and thread setting (HiGHS refuses a thread
count other than the one its process-wide scheduler started with).

Outcome: the coalesced decision; objective = the wrapped policy's `objective()` of it on the
whole problem (None where the policy has none); a policy whose decision is more than the
allocation (the packed policies' pairs) offers `merge_parts`, which joins the parts' decisions
and details, and its `objective()` reads the joined decision; status `feasible` (`optimal` only for k = 1
when the part was), or a failed part's status; bound: the single part's for k = 1, else None.
With exact_gap the whole problem is also solved: details["pop"] gains exact_objective,
exact_seconds and gap (relative, >= 0 when POP is worse), and the bound is the exact solve's.
"""

from __future__ import annotations

import dataclasses
import os
import time
import pickle
from concurrent.futures.process import BrokenProcessPool

import numpy as np

from schedopt.backends import Status
from schedopt.backends.session import Solver
from schedopt.core.decisions import DecisionKind, MachineQueues
from schedopt.core.outcome import Outcome
from schedopt.core.policy import Policy
from schedopt.core.problem import ThroughputProblem
from schedopt.errors import PolicyError
from schedopt.executors import EXECUTORS, connected_ray, drop_pool, process_pool
from schedopt.policies.machine_times import MachineTimes, QueuesPart

PARTITION_METHODS = ("stratified", "random")
SPLITS = (DecisionKind.ALLOCATION, DecisionKind.QUEUES)


class Partitioned(Policy):
    """POP around `policy` (module docstring): k parts run by `executor`, jobs dealt by
    `method` with `seed`, `previous` {job id: part} kept (sticky); exact_gap also solves the
    whole problem and reports POP's gap. Name, options, decision and needs are the policy's."""

    def __init__(self, policy: Policy, k: int, executor: str = "serial",
                 method: str = "stratified", seed: int = 0,
                 previous: dict[str, int] | None = None, exact_gap: bool = False):
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise PolicyError(f"partitions must be an integer >= 1, got {k!r}")
        if executor not in EXECUTORS:
            raise PolicyError(f"unknown executor {executor!r}; expected one of "
                              f"{', '.join(EXECUTORS)}")
        if method not in PARTITION_METHODS:
            raise PolicyError(f"unknown partition method {method!r}; expected one of "
                              f"{', '.join(PARTITION_METHODS)}")
        if policy.decision not in SPLITS:
            raise PolicyError(f"POP (partitions) works with throughput-matrix policies and "
                              f"allox; {policy.name} is neither")
        if policy.decision is DecisionKind.QUEUES and not hasattr(policy, "machine_times"):
            raise PolicyError(f"POP splits machine-queue policies by machines; {policy.name} "
                              f"offers no machine_times (schedopt.policies.machine_times)")
        self.policy = policy
        self.k, self.executor, self.method, self.seed = int(k), executor, method, seed
        self.previous, self.exact_gap = previous, exact_gap
        for attribute in ("name", "summary", "objective_doc", "Options", "decision", "needs",
                          "default_solver", "instance_data"):
            setattr(self, attribute, getattr(policy, attribute))

    @property
    def option_names(self) -> tuple[str, ...]:
        return self.policy.option_names

    def parse_options(self, values: dict):
        return self.policy.parse_options(values)

    def objective(self, problem, allocation, options):
        return self.policy.objective(problem, allocation, options)

    def solve(self, problem: ThroughputProblem, options, solver: Solver) -> Outcome:
        start = time.perf_counter()
        if self.decision is DecisionKind.QUEUES:
            outcome = self._solve_queues(problem, options, solver, start)
        else:
            outcome = self._solve_allocation(problem, options, solver, start)
        if self.exact_gap and outcome.objective is not None:
            began = time.perf_counter()
            exact = self.policy.solve(problem, options, solver)
            report = outcome.details["pop"]
            report["exact_seconds"] = time.perf_counter() - began
            report["exact_objective"] = exact.objective
            if exact.objective is not None:
                report["gap"] = (abs(outcome.objective - exact.objective)
                                 / max(abs(exact.objective), 1e-12))
            outcome.bound = exact.bound
        return outcome

    # ------------------------------------------------------------------ time fractions

    def _solve_allocation(self, problem, options, solver, start) -> Outcome:
        parts = partition_jobs(problem, self.k, self.seed, self.method, self.previous)
        rows = [r for r in (np.flatnonzero(parts == q) for q in range(self.k)) if r.size]
        keep_instance = self.instance_data is not None
        outcomes = self._run([part_problem(problem, r, r.size / problem.num_jobs, keep_instance)
                              for r in rows], options, solver)
        X = np.zeros_like(problem.throughput)
        for r, outcome in zip(rows, outcomes):
            if outcome.allocation is not None:
                X[r] = outcome.allocation
        # A policy whose decision is more than X (e.g. the packed ones' pairs) merges its parts'
        # decisions and details itself: merge_parts(problem, rows, outcomes) -> (decision, details).
        decision, details = None, None
        merge = getattr(self.policy, "merge_parts", None)
        if merge is not None and all(o.status.has_solution for o in outcomes):
            decision, details = merge(problem, rows, outcomes)
        return self._coalesced(problem, options, solver, outcomes, X, decision,
                               dict(zip(problem.job_ids, parts.tolist())), start, details=details)

    # ------------------------------------------------------------------ machine queues

    def _solve_queues(self, problem, options, solver, start) -> Outcome:
        times: MachineTimes = self.policy.machine_times(problem, options)
        job_part, machine_part = partition_machines(times.processing, self.k, self.seed)
        row_of = {job: m for m, job in enumerate(problem.job_ids)}
        problem_rows = np.array([row_of[job] for job in times.job_ids], dtype=np.int64)
        parts, sets = [], []
        for q in range(self.k):
            rows, cols = np.flatnonzero(job_part == q), np.flatnonzero(machine_part == q)
            stuck = rows[~np.isfinite(times.processing[np.ix_(rows, cols)]).any(axis=1)]
            if stuck.size:
                raise PolicyError(f"with {self.k} parts, job(s) {', '.join(map(str, stuck[:5]))}"
                                  f" have no machine they can run on in their part; use fewer "
                                  f"parts")
            if rows.size:
                sets.append(rows)
                parts.append(QueuesPart.of(part_problem(problem, problem_rows[rows], 1.0, False),
                                           times.subset(rows, cols)))
        outcomes = self._run(parts, options, solver)
        decided = [o.decision for o in outcomes if o.decision is not None]
        queues = {name: [] for name in times.machines}
        schedule = {}
        for decision in decided:
            queues.update({m: jobs for m, jobs in decision.queues.items() if jobs})
            schedule.update(decision.schedule)
        decision = MachineQueues(queues, {job: schedule[job] for job in times.job_ids
                                          if job in schedule}, list(times.waiting))
        details = (self.policy.details(times, decision, options)
                   if hasattr(self.policy, "details") else {})
        return self._coalesced(problem, options, solver, outcomes, None, decision,
                               dict(zip(times.job_ids, job_part.tolist())), start,
                               details=details, method="by machines")

    # ------------------------------------------------------------------ shared

    def _run(self, parts: list[ThroughputProblem], options, solver: Solver) -> list[Outcome]:
        return _run_parts(self.executor, self.policy, parts, options, solver)

    def _coalesced(self, problem, options, solver, outcomes, X, decision, parts, start, *,
                   details=None, method=None) -> Outcome:
        seconds = [o.solve_seconds for o in outcomes]
        details = dict(details or {})
        details["pop"] = {
            "k": self.k, "executor": self.executor, "method": method or self.method,
            "seed": self.seed, "parts": parts, "part_seconds": seconds,
            "max_part_seconds": max(seconds, default=0.0),
            "wall_seconds": time.perf_counter() - start}
        wall = details["pop"]["wall_seconds"]
        name = outcomes[0].solver if outcomes else solver.name
        failed = next((o for o in outcomes if not o.status.has_solution), None)
        if failed is not None:
            return Outcome(None, failed.termination, failed.solution, None, None, wall, name,
                           details)
        single = len(outcomes) == 1 and self.k == 1
        status = (Status.OPTIMAL if single and outcomes[0].status is Status.OPTIMAL
                  else Status.FEASIBLE)
        objective = self.policy.objective(problem, X if decision is None else decision, options)
        return Outcome.from_status(X, status, objective, outcomes[0].bound if single else None,
                                   wall, name, details, decision=decision)


def partition_jobs(problem: ThroughputProblem, k: int, seed: int = 0, method: str = "stratified",
                   previous: dict[str, int] | None = None) -> np.ndarray:
    """(M,) part of each job in 0..k-1 (module docstring)."""
    if method not in PARTITION_METHODS:
        raise PolicyError(f"unknown partition method {method!r}; expected one of "
                          f"{', '.join(PARTITION_METHODS)}")
    M = problem.num_jobs
    rng = np.random.default_rng(seed)
    if method == "random":
        order = rng.permutation(M)
    else:
        T = problem.throughput * problem.runnable
        norm = T / np.maximum(T.max(axis=1, keepdims=True), 1e-300)
        keys = (rng.random(M), *norm.T[::-1], T.argmax(axis=1), problem.scale_factor)
        order = np.lexsort(keys)
    parts = np.full(M, -1, dtype=np.int64)
    if previous:
        kept = np.array([previous.get(job, -1) for job in problem.job_ids], dtype=np.int64)
        parts = np.where((kept >= 0) & (kept < k), kept, -1)
    new = order[parts[order] < 0]
    quota = _quotas(np.bincount(parts[parts >= 0], minlength=k), new.size)
    # Spread each part's quota evenly along the (stratified) order: part p takes positions
    # (i + 1/2) / quota_p; ties go at random, so the seed matters even without tied keys.
    owner = np.repeat(np.arange(k), quota)
    rank = np.arange(new.size) - np.repeat(np.cumsum(quota) - quota, quota)
    position = (rank + 0.5) / np.repeat(np.maximum(quota, 1), quota)
    parts[new] = owner[np.lexsort((rng.random(new.size), position))]
    return parts


def _quotas(counts: np.ndarray, n: int) -> np.ndarray:
    """(k,) how many of n new jobs each part gets so the fullest part is as empty as possible
    (water-filling from the emptiest part up; the remainder to the emptiest parts)."""
    k = counts.size
    order = np.argsort(counts, kind="stable")
    c = counts[order]
    prefix = np.cumsum(c)
    raise_cost = np.arange(1, k + 1) * c - prefix  # new jobs to lift the m emptiest to c[m-1]
    m = int(np.searchsorted(raise_cost, n, side="right"))
    level, extra = divmod(n + int(prefix[m - 1]), m)
    quota = np.zeros(k, dtype=np.int64)
    quota[order[:m]] = level - c[:m]
    quota[order[:extra]] += 1
    return quota


def partition_machines(processing: np.ndarray, k: int, seed: int = 0
                       ) -> tuple[np.ndarray, np.ndarray]:
    """((n,) part of each job, (K,) part of each machine) for POP by machines. Machines with
    identical processing columns (a GPU type, the CPU machines) are dealt round-robin, so every
    part gets its share of each kind; jobs are sorted by their fastest time (ties at random,
    seeded) and dealt round-robin."""
    n, K = processing.shape
    if isinstance(k, bool) or int(k) != k or not 1 <= k <= K:
        raise PolicyError(f"partitions must be an integer in 1..{K} (the machines), got {k!r}")
    _, kind = np.unique(np.where(np.isfinite(processing), processing, -1.0), axis=1,
                        return_inverse=True)
    machine_part = np.empty(K, dtype=np.int64)
    machine_part[np.lexsort((np.arange(K), kind.ravel()))] = np.arange(K) % k
    rng = np.random.default_rng(seed)
    job_part = np.empty(n, dtype=np.int64)
    job_part[np.lexsort((rng.random(n), processing.min(axis=1)))] = np.arange(n) % k
    return job_part, machine_part


_PER_JOB_FIELDS = ("throughput", "scale_factor", "weight", "remaining_steps", "time_since_arrival",
                   "isolated_time", "time_to_deadline")


def part_problem(problem: ThroughputProblem, rows: np.ndarray, share: float,
                 keep_instance: bool = True) -> ThroughputProblem:
    """The jobs `rows` with `share` of every GPU type (fractional), the whole cluster's type
    sizes kept for `runnable`; its instance has the part's jobs (None unless keep_instance)."""
    ids = np.asarray(problem.job_ids, dtype=object)
    per_job = {name: getattr(problem, name)[rows] for name in _PER_JOB_FIELDS}
    if problem.user is not None:  # users keep their indices (and weights) in every part
        per_job["user"] = problem.user[rows]
    size = problem.capacity if problem.type_size is None else problem.type_size
    instance = problem.instance if keep_instance else None
    if instance is not None and len(instance.jobs) == problem.num_jobs:
        instance = dataclasses.replace(instance, jobs=tuple(instance.jobs[i] for i in rows),
                                       source=None)  # errors name no file: indices are the part's
    return dataclasses.replace(problem, job_ids=tuple(ids[rows]), capacity=problem.capacity * share,
                               type_size=size, instance=instance, **per_job)


def _solve_part(policy: Policy, problem: ThroughputProblem, options, solver: Solver) -> Outcome:
    """One part, in whatever process runs it; solve_seconds is the part's wall time."""
    start = time.perf_counter()
    outcome = policy.solve(problem, options, solver)
    outcome.solve_seconds = time.perf_counter() - start
    return outcome


def _check_picklable(policy: Policy, executor: str) -> None:
    """PolicyError in one line when `policy` cannot travel to worker processes."""
    try:
        pickle.dumps(policy)
    except (pickle.PicklingError, AttributeError, TypeError) as exc:
        raise PolicyError(f"executor {executor!r} sends the policy to worker processes, and "
                          f"{policy.name} cannot be pickled ({exc}); define it at module level "
                          f"or use executor 'serial'") from None


def _run_parts(executor: str, policy: Policy, parts: list[ThroughputProblem], options,
               solver: Solver) -> list[Outcome]:
    if executor == "serial":
        # The caller's solver as it is (its thread setting, its record of programs).
        return [_solve_part(policy, part, options, solver) for part in parts]
    cores = os.cpu_count() or 1
    workers = max(1, min(len(parts), cores))
    settings = solver.settings
    if settings.threads is None:  # constant per worker process (a pool per size; Ray: 1)
        threads = max(1, cores // workers) if executor == "process" else 1
        settings = dataclasses.replace(settings, threads=threads)
    remote_solver = Solver(solver.name, settings)
    if executor == "process":
        _check_picklable(policy, executor)
        chunk = -(-len(parts) // workers)  # one round trip per worker
        count = len(parts)
        try:
            return list(process_pool(workers).map(_solve_part, [policy] * count, parts,
                                           [options] * count, [remote_solver] * count,
                                           chunksize=chunk))
        except BrokenProcessPool:  # e.g. a worker could not import the policy's module
            drop_pool(workers)
            raise PolicyError(f"a POP worker process died solving {policy.name}; the policy "
                              f"must be importable there (defined at module level of a module "
                              f"or script), else use executor 'serial'") from None
    ray = connected_ray()
    remote = ray.remote(_solve_part)
    return ray.get([remote.remote(policy, part, options, remote_solver) for part in parts])

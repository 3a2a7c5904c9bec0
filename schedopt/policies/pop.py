"""POP: partition the jobs into k parts, give each part its share of every GPU type, solve the
parts with the unchanged formulation (in parallel), and coalesce by union (docs/formulations.md §6;
Narayanan et al., SOSP'21).

    result = schedopt.solve(instance, "max_min_fairness", partitions=8, executor="process")
    result.details["pop"]   # k, executor, parts {job: part}, sub-problem seconds, wall seconds

Any throughput-matrix policy works: their constraints couple jobs only through per-type
capacity, so the union of the parts' allocations is feasible for the whole cluster. A part's
share of every type is its share of the jobs (fractional, not floored): 1/k for balanced parts,
and it follows sticky parts as they drift (in simulation, POP-4's average JCT moved from +0.9%
to +0.01% of the exact policy's with it). A part keeps the whole cluster's type sizes for
deciding where a job can run (`type_size`), so a job needing more GPUs than its part's share of
a type still gets a time fraction there.

Partitioning (`partition_jobs`), seeded:
- `stratified` (default): jobs sorted by scale factor, fastest type and their normalized
  throughput row, ties broken at random, then dealt so that each part's jobs are spread evenly
  along that order (parts in random order where positions tie), so every part gets nearly the
  same mix of jobs. On a Gavel-like 10,000-job instance POP-16's max-min gap is 0.11%,
  against 0.94% with `random` (benchmarks/README.md).
- `random`: a random permutation dealt the same way (as POP's reference code).
- `previous` {job id: part} keeps jobs in their part across successive solves (sticky); jobs
  not in it are dealt, in the order above, so as to even out the parts' job counts.

Executors: `serial`; `process`, a pool of min(k, cores) worker processes that receive the
parts' arrays and build their models there, each solver limited to cores / workers threads;
`ray` (`pip install 'schedopt[ray]'`): one task per part, solver threads 1, on `ray.init()`
(local) or the cluster named by RAY_ADDRESS. Serial parts keep the caller's thread setting
(HiGHS refuses a thread count other than the one its process-wide scheduler started with).
"""

from __future__ import annotations

import atexit
import dataclasses
import os
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from schedopt.backends import SolveOptions, Status
from schedopt.errors import PolicyError
from schedopt.core.outcome import Outcome
from schedopt.core.problem import ThroughputProblem

PARTITION_METHODS = ("stratified", "random")
EXECUTORS = ("serial", "process", "ray")


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


_PER_JOB_FIELDS = ("throughput", "scale_factor", "weight", "remaining_steps", "time_since_arrival",
                   "isolated_time", "time_to_deadline")


def part_problem(problem: ThroughputProblem, rows: np.ndarray, share: float) -> ThroughputProblem:
    """The jobs `rows` with `share` of every GPU type (fractional), the whole cluster's type
    sizes kept for `runnable`."""
    ids = np.asarray(problem.job_ids, dtype=object)
    per_job = {name: getattr(problem, name)[rows] for name in _PER_JOB_FIELDS}
    if problem.user is not None:  # users keep their indices (and weights) in every part
        per_job["user"] = problem.user[rows]
    size = problem.capacity if problem.type_size is None else problem.type_size
    return dataclasses.replace(problem, job_ids=tuple(ids[rows]), capacity=problem.capacity * share,
                               type_size=size, **per_job)


def _solve_part(policy_name: str, problem: ThroughputProblem, solver: str,
                options: SolveOptions, policy_options: dict):
    """One part, in whatever process runs it: (allocation, status, seconds)."""
    from schedopt.core.registry import resolve

    policy, defaults = resolve(policy_name)
    start = time.perf_counter()
    outcome = policy.run(problem, solver, options, **{**defaults, **policy_options})
    return outcome.allocation, outcome.status, time.perf_counter() - start


_POOLS: dict[int, ProcessPoolExecutor] = {}
_THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def _pool(workers: int) -> ProcessPoolExecutor:
    """A process pool kept for the life of the program (starting one costs ~1 s)."""
    if workers not in _POOLS:
        import multiprocessing

        # Workers inherit the environment at spawn: one BLAS thread each, so they do not
        # oversubscribe the cores the pool already fills.
        saved = {name: os.environ.get(name) for name in _THREAD_VARIABLES}
        os.environ.update(dict.fromkeys(_THREAD_VARIABLES, "1"))
        try:
            _POOLS[workers] = ProcessPoolExecutor(
                workers, mp_context=multiprocessing.get_context("spawn"))
            # Start every worker now, while the variables are set (they spawn on demand).
            list(_POOLS[workers].map(time.sleep, [0.05] * workers))
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
    return _POOLS[workers]


@atexit.register
def _close_pools() -> None:
    for pool in _POOLS.values():
        pool.shutdown(cancel_futures=True)
    _POOLS.clear()


def _run_parts(executor: str, policy_name: str, parts: list[ThroughputProblem], solver: str,
               options: SolveOptions, policy_options: dict) -> list:
    if executor == "serial":
        # The caller's thread settings as they are: HiGHS refuses a thread count other than
        # the one its process-wide scheduler started with.
        return [_solve_part(policy_name, part, solver, options, policy_options) for part in parts]
    cores = os.cpu_count() or 1
    workers = max(1, min(len(parts), cores))
    if options.threads is None:  # constant per worker process (a pool per size; Ray: 1)
        threads = max(1, cores // workers) if executor == "process" else 1
        options = dataclasses.replace(options, threads=threads)
    args = [(policy_name, part, solver, options, policy_options) for part in parts]
    if executor == "process":
        chunk = -(-len(args) // workers)  # one round trip per worker
        return list(_pool(workers).map(_solve_part, *zip(*args), chunksize=chunk))
    try:
        import ray
    except ImportError:
        raise PolicyError("the ray executor needs Ray: pip install 'schedopt[ray]'") from None
    if not ray.is_initialized():
        ray.init(address=os.environ.get("RAY_ADDRESS"), include_dashboard=False,
                 log_to_driver=False)
    remote = ray.remote(_solve_part)
    return ray.get([remote.remote(*a) for a in args])


def solve_pop(problem: ThroughputProblem, policy_name: str, k: int, solver: str,
              options: SolveOptions, policy_options: dict, *, executor: str = "serial",
              seed: int = 0, method: str = "stratified",
              previous: dict[str, int] | None = None, evaluate=None) -> Outcome:
    """POP with k parts. Outcome: the coalesced allocation; objective = `evaluate` of it on the
    whole problem (None without an evaluator); status `feasible` (optimal only when k = 1 and
    the part was), or the first part's status when a part has no solution; bound None.
    details["pop"]: k, executor, method, seed, parts {job id: part}, part_seconds (each
    part's solve, s), max_part_seconds, wall_seconds (partition, solves and coalescing)."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise PolicyError(f"partitions must be an integer >= 1, got {k!r}")
    if executor not in EXECUTORS:
        raise PolicyError(f"unknown executor {executor!r}; expected one of {', '.join(EXECUTORS)}")
    start = time.perf_counter()
    parts = partition_jobs(problem, k, seed, method, previous)
    rows = [np.flatnonzero(parts == q) for q in range(k)]
    rows = [r for r in rows if r.size]
    shares = [r.size / problem.num_jobs for r in rows]
    results = _run_parts(executor, policy_name,
                         [part_problem(problem, r, q) for r, q in zip(rows, shares)],
                         solver, options, policy_options)
    X = np.zeros_like(problem.throughput)
    failed = None
    for r, (allocation, status, _) in zip(rows, results):
        if allocation is None:
            failed = failed or status
        else:
            X[r] = allocation
    seconds = [s for _, _, s in results]
    details = {"pop": {
        "k": int(k), "executor": executor, "method": method, "seed": seed,
        "parts": dict(zip(problem.job_ids, parts.tolist())),
        "part_seconds": seconds, "max_part_seconds": max(seconds, default=0.0),
        "wall_seconds": time.perf_counter() - start}}
    if failed is not None:
        return Outcome.from_status(None, failed if failed is not Status.OPTIMAL else Status.ERROR, None,
                       None, details["pop"]["wall_seconds"], solver, details)
    statuses = {status for _, status, _ in results}
    status = Status.OPTIMAL if k == 1 and statuses == {Status.OPTIMAL} else Status.FEASIBLE
    objective = None if evaluate is None else evaluate(problem, X, **policy_options)
    return Outcome.from_status(X, status, objective, None, details["pop"]["wall_seconds"], solver, details)

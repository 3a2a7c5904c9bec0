"""Chronus lease MILP at issue 5's size: 400 candidate jobs, a 48-lease horizon, 64 GPUs (default).

Each instance: GPUs per job from {1, 2, 4, 8} (probabilities 0.5/0.2/0.2/0.1), 1-6 leases
needed, 1-3 deadline options with increasing horizons (up to 48 leases) and decreasing values.
Jobs are admitted in index order while the latest-fit greedy still places them (Chronus's
admission keeps admitted jobs feasible); admitted jobs must get an option, the rest may. Every
MILP backend solves each instance with a 5 s limit; the table prints status, gap, wall seconds
(model build and solve) and the objective relative to the best one found in this process.

    python benchmarks/chronus_scaling.py [--seeds 5] [--jobs 400] [--gpus 64] [--time-limit 5]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from schedopt.formulations.chronus import (
    LeaseProblem,
    latest_fit_greedy,
    solve_lease_problem,
)

SOLVERS = ("scip", "cbc", "cpsat")


def random_lease_problem(num_jobs: int = 400, num_leases: int = 48, gpus: int = 64, seed: int = 0,
                         sigma: float = 1.0) -> LeaseProblem:
    rng = np.random.default_rng(seed)
    g = rng.choice([1, 2, 4, 8], num_jobs, p=[0.5, 0.2, 0.2, 0.1])
    n = rng.integers(1, 7, num_jobs)
    num_options = rng.integers(1, 4, num_jobs)
    job = np.repeat(np.arange(num_jobs), num_options)
    rank = np.arange(job.size) - np.repeat(np.cumsum(num_options) - num_options, num_options)
    first = np.minimum(n + rng.integers(0, 25, num_jobs), num_leases)
    step = rng.integers(4, 17, job.size) * (rank > 0)
    horizon = np.minimum(first[job] + _cumsum_by_job(step, num_options), num_leases)
    value = rng.uniform(1.0, 10.0, num_jobs)[job] * 0.6 ** rank
    capacity = np.full(num_leases, gpus)
    candidate = LeaseProblem.from_arrays(g, n, job, value, horizon, capacity, sigma=sigma,
                                         admitted=np.zeros(num_jobs, dtype=bool))
    chosen, _, _ = latest_fit_greedy(candidate)
    return LeaseProblem.from_arrays(g, n, job, value, horizon, capacity, sigma=sigma,
                                    admitted=chosen >= 0)


def _cumsum_by_job(step: np.ndarray, counts: np.ndarray) -> np.ndarray:
    total = np.cumsum(step)
    starts = np.cumsum(counts) - counts
    return total - np.repeat(total[starts] - step[starts], counts)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=400)
    parser.add_argument("--time-limit", type=float, default=5.0)
    parser.add_argument("--gpus", type=int, default=64)
    args = parser.parse_args(argv)
    print(f"{os.cpu_count()} CPUs; {args.jobs} candidate jobs, 48 leases, {args.gpus} GPUs, "
          f"limit {args.time_limit} s", file=sys.stderr)
    print("| sigma | seed | admitted | options | columns | solver | status | gap | seconds "
          "| objective / best |")
    print("|---:|---:|---:|---:|---:|---|---|---:|---:|---:|")
    summary: dict[str, list[tuple[str, float, float]]] = {s: [] for s in SOLVERS}
    for sigma in (1.0, -1.0):
        for seed in range(args.seeds):
            problem = random_lease_problem(args.jobs, gpus=args.gpus, seed=seed, sigma=sigma)
            columns = int(np.minimum(problem.option_horizon, problem.num_leases).sum()) + \
                problem.num_options
            rows = []
            for solver in SOLVERS:
                start = time.perf_counter()
                plan = solve_lease_problem(problem, solver=solver, time_limit=args.time_limit)
                rows.append((solver, plan, time.perf_counter() - start))
            best = max(p.objective for _, p, _ in rows if p.objective is not None)
            for solver, plan, seconds in rows:
                gap = "—" if plan.gap is None else f"{100 * plan.gap:.3f}%"
                status = plan.status.value + (" (fallback)" if plan.used_fallback else "")
                print(f"| {sigma:+.0f} | {seed} | {int(problem.admitted.sum())} | "
                      f"{problem.num_options} | {columns:,} | {solver} | {status} | {gap} | "
                      f"{seconds:.2f} | {plan.objective / best:.5f} |", flush=True)
                summary[solver].append((plan.status.value,
                                        np.inf if plan.gap is None else plan.gap, seconds))
    print()
    print("| solver | optimal | gap < 1% | median s | max s | max gap |")
    print("|---|---:|---:|---:|---:|---:|")
    for solver, runs in summary.items():
        optimal = sum(s == "optimal" for s, _, _ in runs)
        within = sum(g < 0.01 for _, g, _ in runs)
        secs = [t for _, _, t in runs]
        print(f"| {solver} | {optimal}/{len(runs)} | {within}/{len(runs)} | "
              f"{np.median(secs):.2f} | {max(secs):.2f} | {100 * max(g for _, g, _ in runs):.3f}% |")


if __name__ == "__main__":
    main()

"""Chronus lease solves at the target size: 400 candidate jobs, a 48-lease horizon, 64 GPUs (default).

Each instance: GPUs per job from {1, 2, 4, 8} (probabilities 0.5/0.2/0.2/0.1), 1-6 leases
needed, 1-3 deadline options with increasing horizons (up to 48 leases) and decreasing values.
Jobs are admitted in index order while the latest-fit greedy still places them (Chronus's
admission keeps admitted jobs feasible); admitted jobs must get an option, the rest may.

Instances: seeds 0..S-1 x sigma = +1/-1, each solved by `solve_lease_problem` (LP bound,
rounding, restricted and full MILP; schedopt.policies.chronus.lease_milp) with every MILP backend and
a 5 s limit for the whole solve. Trace: T successive lease boundaries of seed 0's pool (sigma
+1) with the default solver; after each boundary lease 0 is over, so the jobs holding it need
one lease fewer (finished ones leave), every horizon shrinks by one lease (options past it
leave, then jobs without options), a fresh lease of the same capacity joins at the end, and
admitted jobs stay admitted. Tables: status, where the plan came from, gap to the bound,
seconds when the plan was found and for the whole call (model builds included), objective
relative to the best plan found for the instance in this process; then the distributions.

    python benchmarks/chronus_scaling.py [--seeds 10] [--trace 12] [--jobs 400] [--gpus 64]
        [--time-limit 5] [--solvers cpsat,scip,cbc]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from schedopt.policies.chronus.lease_milp import (
    DEFAULT_SOLVER,
    LeaseProblem,
    latest_fit_greedy,
    solve_lease_problem,
)

SOLVERS = ("cpsat", "scip", "cbc")
TARGET_GAP = 0.01


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


def next_boundary(problem: LeaseProblem, plan) -> LeaseProblem:
    """The same pool one lease later (module docstring); jobs renumbered, order kept."""
    holds_first = np.zeros(problem.num_jobs, dtype=bool)
    holds_first[[j for j, leases in plan.leases.items() if 0 in leases]] = True
    needed = problem.leases_needed - holds_first
    horizon = problem.option_horizon - 1
    option_kept = (needed[problem.option_job] > 0) & (horizon >= 1)
    job_kept = np.bincount(problem.option_job[option_kept], minlength=problem.num_jobs) > 0
    renumber = np.cumsum(job_kept) - 1
    return LeaseProblem.from_arrays(
        problem.gpus[job_kept], needed[job_kept], renumber[problem.option_job[option_kept]],
        problem.option_value[option_kept], horizon[option_kept],
        np.append(problem.capacity[1:], problem.capacity[-1]), sigma=problem.sigma,
        admitted=problem.admitted[job_kept])


def _solve(problem: LeaseProblem, solver: str, time_limit: float) -> dict:
    start = time.perf_counter()
    plan = solve_lease_problem(problem, solver=solver, time_limit=time_limit)
    seconds = time.perf_counter() - start
    source = plan.details["incumbent_from"] or "fallback"
    found = plan.details["stage_end"].get(source, seconds)
    return {"plan": plan, "seconds": seconds, "found": found, "source": source,
            "gap": np.inf if plan.gap is None else plan.gap}


def _row(cells) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def _print_runs(label: str, runs: list[dict], time_limit: float) -> None:
    gaps = np.array([r["gap"] for r in runs])
    secs = np.array([r["seconds"] for r in runs])
    optimal = sum(r["plan"].status.value == "optimal" for r in runs)
    within = int(np.sum((gaps < TARGET_GAP) & (secs <= time_limit)))
    q = np.percentile(gaps, [0, 50, 90, 100]) * 100
    print(_row([label, f"{optimal}/{len(runs)}", f"{np.sum(gaps < TARGET_GAP)}/{len(runs)}",
                f"{within}/{len(runs)}", *(f"{v:.2f}%" for v in q),
                f"{np.median(secs):.2f}", f"{secs.max():.2f}"]))


SUMMARY_HEADER = ("| runs | optimal | gap < 1% | gap < 1% within limit | min gap | median gap | "
                  "90th pct gap | max gap | median s | max s |\n"
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")


def instances(args) -> dict[str, list[dict]]:
    print("| sigma | seed | admitted | options | columns | solver | status | plan from | gap "
          "| plan at s | seconds | objective / best |")
    print("|---:|---:|---:|---:|---:|---|---|---|---:|---:|---:|---:|")
    runs: dict[str, list[dict]] = {s: [] for s in args.solvers}
    for sigma in (1.0, -1.0):
        for seed in range(args.seeds):
            problem = random_lease_problem(args.jobs, gpus=args.gpus, seed=seed, sigma=sigma)
            columns = int(np.minimum(problem.option_horizon, problem.num_leases).sum()) + \
                problem.num_options
            results = {s: _solve(problem, s, args.time_limit) for s in args.solvers}
            best = max(r["plan"].objective for r in results.values())
            for solver, r in results.items():
                plan = r["plan"]
                print(_row([f"{sigma:+.0f}", seed, int(problem.admitted.sum()),
                            problem.num_options, f"{columns:,}", solver, plan.status.value,
                            r["source"], f"{100 * r['gap']:.3f}%", f"{r['found']:.2f}",
                            f"{r['seconds']:.2f}", f"{plan.objective / best:.5f}"]), flush=True)
                runs[solver].append(r)
    return runs


def trace(args) -> list[dict]:
    print("| boundary | jobs | admitted | status | plan from | gap | plan at s | seconds |")
    print("|---:|---:|---:|---|---|---:|---:|---:|")
    problem = random_lease_problem(args.jobs, gpus=args.gpus, seed=0, sigma=1.0)
    runs = []
    for boundary in range(args.trace):
        r = _solve(problem, DEFAULT_SOLVER, args.time_limit)
        print(_row([boundary, problem.num_jobs, int(problem.admitted.sum()),
                    r["plan"].status.value, r["source"], f"{100 * r['gap']:.3f}%",
                    f"{r['found']:.2f}", f"{r['seconds']:.2f}"]), flush=True)
        runs.append(r)
        problem = next_boundary(problem, r["plan"])
    return runs


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--trace", type=int, default=12, help="lease boundaries (0: none)")
    parser.add_argument("--jobs", type=int, default=400)
    parser.add_argument("--time-limit", type=float, default=5.0)
    parser.add_argument("--gpus", type=int, default=64)
    parser.add_argument("--solvers", type=lambda s: tuple(s.split(",")), default=SOLVERS)
    args = parser.parse_args(argv)
    print(f"{os.cpu_count()} CPUs; {args.jobs} candidate jobs, 48 leases, {args.gpus} GPUs, "
          f"limit {args.time_limit} s", file=sys.stderr)
    runs = instances(args) if args.seeds else {}
    trace_runs = trace(args) if args.trace else []
    print()
    print(SUMMARY_HEADER)
    for solver, solver_runs in runs.items():
        _print_runs(solver, solver_runs, args.time_limit)
    if trace_runs:
        _print_runs(f"trace ({DEFAULT_SOLVER})", trace_runs, args.time_limit)
    print()
    for label, label_runs in [*runs.items(), *([("trace", trace_runs)] if trace_runs else [])]:
        ok = sum(r["gap"] < TARGET_GAP and r["seconds"] <= args.time_limit for r in label_runs)
        print(f"{label}: gap < 1% within {args.time_limit:g} s: {ok}/{len(label_runs)}")


if __name__ == "__main__":
    main()

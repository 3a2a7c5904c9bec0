"""Water filling (lexicographic max-min fairness) at scale: `water_filling` with the price
decomposition vs one `levels.max_level` solve of the same max-min problem; the plain reference
(Gavel's method: one max-min LP per level plus one LP per job asking whether it can still
rise, HiGHS) at a small size; `hierarchical_water_filling` (HiGHS) with random users.

    python benchmarks/water_filling.py [--jobs 1000 10000] [--variants gavel holes weights]
                                       [--small 200] [--users-jobs 1000 10000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from common import best_of, random_problem
from water_filling_reference import reference_water_filling

from schedopt.policies.gavel import lp as gavel
from schedopt.core.problem import user_fields
from schedopt.policies.gavel.levels import LevelProblem, max_level
from schedopt.policies.gavel.water_filling import hierarchical_water_filling, water_filling


def variant(problem, name: str):
    """gavel: common.random_problem as is; holes: 40% of (job, type) pairs cannot run (jobs
    that could run nowhere keep type 0); weights: priority weights 1, 2 or 4."""
    rng = np.random.default_rng(5)
    if name == "holes":
        T = problem.throughput * (rng.random(problem.throughput.shape) > 0.4)
        T[T.sum(axis=1) == 0, 0] = 1.0
        return dataclasses.replace(problem, throughput=T)
    if name == "weights":
        return dataclasses.replace(problem, weight=rng.choice([1.0, 2.0, 4.0], problem.num_jobs))
    return problem


def one_level(problem):
    a = gavel.normalized_throughput(problem) * problem.runnable
    return max_level(LevelProblem(a, problem.scale_factor, problem.capacity))


def sorted_levels(outcome) -> np.ndarray:
    return np.sort(np.fromiter(outcome.details["job_levels"].values(), float))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--variants", nargs="+", default=["gavel"],
                        choices=["gavel", "holes", "weights"])
    parser.add_argument("--small", type=int, default=200,
                        help="jobs for the reference run (0: skip it)")
    parser.add_argument("--users-jobs", type=int, nargs="*", default=[1000, 10000],
                        help="jobs for the hierarchical runs (one user per 50 jobs)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"load average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    print("| instances | jobs | water_filling s | one max_level s | ratio | distinct levels | "
          "solves | stages | min level | max-min bound |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in args.variants:
        for jobs in args.jobs:
            problem = variant(random_problem(jobs), name)
            wf_s, outcome = best_of(args.repeats, lambda p=problem: water_filling(p))
            one_s, single = best_of(args.repeats, lambda p=problem: one_level(p))
            d = outcome.details
            print(f"| {name} | {jobs:,} | {wf_s:.3f} | {one_s:.3f} | {wf_s / one_s:.1f}x | "
                  f"{d['levels']} | {d['solves']} | {d['stages']} | {outcome.objective:.9f} | "
                  f"{single.bound:.9f} |")
    if args.small > 0:
        reference_table(args)
    if args.users_jobs:
        users_table(args)


def reference_table(args) -> None:
    problem = random_problem(args.small)
    start = time.perf_counter()
    reference = reference_water_filling(problem)
    ref_s = time.perf_counter() - start
    wf_s, outcome = best_of(args.repeats, lambda p=problem: water_filling(p))
    hi_s, highs = best_of(args.repeats, lambda: water_filling(problem, solver="highs"))
    diff = max(np.abs(sorted_levels(outcome) - np.sort(reference.levels)).max(),
               np.abs(sorted_levels(highs) - np.sort(reference.levels)).max())
    print()
    print("| jobs | reference (Gavel's LP sequence) s | its LPs | water_filling s | "
          "water_filling --solver highs s | ratio reference / water_filling | max level difference |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    print(f"| {args.small} | {ref_s:.3f} | {reference.lps} | {wf_s:.3f} | {hi_s:.3f} | "
          f"{ref_s / wf_s:.0f}x | {diff:.1e} |")


def users_table(args) -> None:
    print()
    print("| jobs | users | hierarchical_water_filling s (decomposition) | distinct water levels | "
          "solves | stages | --solver clarabel s | its max level difference |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for jobs in args.users_jobs:
        problem = random_problem(jobs)
        rng = np.random.default_rng(1)
        users = max(1, jobs // 50)
        owner = [f"u{k}" for k in rng.integers(0, users, jobs)]
        weights = {f"u{k}": float(w) for k, w in enumerate(rng.choice([1, 2, 4], users))}
        problem = dataclasses.replace(problem, **user_fields(owner, weights, problem.weight))
        seconds, outcome = best_of(1, lambda p=problem: hierarchical_water_filling(p))
        ipm_s, ipm = best_of(1, lambda p=problem: hierarchical_water_filling(p, solver="clarabel"))
        d = outcome.details
        diff = np.abs(sorted_levels(outcome) - sorted_levels(ipm)).max()
        print(f"| {jobs:,} | {users} | {seconds:.3f} | {d['levels']} | {d['solves']} | "
              f"{d['stages']} | {ipm_s:.3f} | {diff:.1e} |")


if __name__ == "__main__":
    main()

"""Each LP policy on each backend, to pick the policies' default solvers by measurement.

Run: python benchmarks/backend_defaults.py [--jobs 1000 10000] [--time-limit 60]
Prints wall seconds per (policy, backend) and marks the fastest that reached optimality; the
defaults in schedopt/policies/catalog.py follow this table (see benchmarks/README.md).
"""

from __future__ import annotations

import argparse

from common import best_of, random_problem
from schedopt.api import solve

POLICIES = ["max_min_fairness", "min_makespan", "finish_time_fairness", "max_total_throughput",
            "min_cost"]
BACKENDS = ["highs", "highs-ipm", "clarabel", "glop", "pdlp", "cvxpy:CLARABEL"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--time-limit", type=float, default=60.0)
    args = parser.parse_args()
    print(f"{'jobs':>6}  {'policy':<22} " + " ".join(f"{b:>14}" for b in BACKENDS) + "  fastest")
    for M in args.jobs:
        problem = random_problem(M)
        for policy in POLICIES:
            cells, times = [], {}
            for backend in BACKENDS:
                seconds, result = best_of(1, lambda: solve(problem, policy, backend,
                                                           time_limit=args.time_limit))
                ok = result.status.value == "optimal"
                cells.append(f"{seconds:>13.3f}{' ' if ok else '*'}")
                if ok:
                    times[backend] = seconds
            fastest = min(times, key=times.get) if times else "-"
            print(f"{M:>6}  {policy:<22} " + " ".join(cells) + f"  {fastest}")
    print("\n* = not optimal within the time limit")


if __name__ == "__main__":
    main()

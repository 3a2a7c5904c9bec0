"""POP on max-min fairness at 10,000 jobs: exact vs POP-k (k = 1, 4, 16), serial vs process
executor, true objective gap, in one run.

The instance: 10,000 jobs drawn like Gavel's trace generator over the 83 job types of
instances/large-2000.json (Gavel's measured throughputs), all arrived, on 1,024 GPUs of each of
v100/p100/k80. Every row is the best of `--repeats` runs; the process pool is started (and
warmed by one solve) before timing, as a simulator calling POP every round would have it.
`random` is POP's reference partitioning, `stratified` ours (schedopt.policies.partitioned).

    python benchmarks/pop_scaling.py [--jobs 10000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os

from common import best_of, gavel_like

import schedopt

def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--gpus", type=int, default=1024, help="GPUs of each type")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    problem = gavel_like(args.jobs, args.gpus)
    schedopt.solve(problem, "max_min_fairness", partitions=2, executor="process")  # warm the pool
    exact_s, exact = best_of(args.repeats, lambda: schedopt.solve(problem, "max_min_fairness"))
    print(f"{os.cpu_count()} CPUs; max-min fairness, {args.jobs:,} jobs, {args.gpus} GPUs per "
          f"type; exact (clarabel): {exact_s:.3f} s, objective {exact.objective:.6f}\n")
    print("| partition | k | executor | wall s | slowest part s | vs exact | objective | gap |")
    print("|---|---:|---|---:|---:|---:|---:|---:|")
    for method in ("stratified", "random"):
        for k in (1, 4, 16):
            for executor in ("serial", "process"):
                seconds, result = best_of(args.repeats, lambda: schedopt.solve(
                    problem, "max_min_fairness", partitions=k, executor=executor,
                    partition_method=method))
                pop = result.details["pop"]
                gap = (exact.objective - result.objective) / exact.objective
                print(f"| {method} | {k} | {executor} | {seconds:.3f} | "
                      f"{pop['max_part_seconds']:.3f} | {exact_s / seconds:.2f}x | "
                      f"{result.objective:.6f} | {100 * gap:.3f}% |", flush=True)


if __name__ == "__main__":
    main()

"""AlloX matching: solve time against (queued jobs, machines) for each exact method.

Run: python benchmarks/allox_scaling.py [--sizes 100x10 1000x100 ...] [--repeats 3]
Instances: 90% of the machines are GPUs of three speeds (1, 1/2, 1/4, like v100/p100/k80),
10% CPU machines; GPU seconds lognormal (median ~18 min), CPU seconds = GPU seconds x a
lognormal slowdown (median ~4.5x), 20% of the jobs without a CPU time (GPU only). Two
scenarios: `classes`, every machine free now, so the GPUs of a speed (and the CPU machines)
are identical, as `schedopt solve -p allox` sees an instance; `distinct`, every machine its own
speed (x U(0.9, 1.1)) and free time (U(0, 600) s), as a busy cluster looks in the online use.
Wall seconds of `allox_assignment` (cost matrix and greedy caps included), best of `--repeats`
(1 from 2,000 jobs), all methods on the same instance in this one process; `full` (the uncapped
n x nK matrix) only where it has at most 2e7 entries. The last column times scipy's solver
alone on the same capped matrix, rows longest job first (what `scipy` does) vs as given.
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy.optimize import linear_sum_assignment

from common import best_of
from schedopt.policies.allox.matching import (allox_assignment, schedule_from_assignment, slot_costs,
                                         slots)

METHODS = ("scipy", "scipy-sparse", "ortools", "full")
DEFAULT_SIZES = ("100x10", "300x30", "500x50", "1000x10", "1000x100", "2000x100", "2000x200")
FULL_LIMIT = 2e7


def hybrid_instance(num_jobs: int, num_machines: int, seed: int = 0, distinct: bool = False):
    """(processing, free_at, arrival) as described in the module docstring."""
    rng = np.random.default_rng(seed)
    cpus = max(1, num_machines // 10)
    gpus = num_machines - cpus
    gpu_seconds = rng.lognormal(7.0, 1.0, num_jobs)
    speed = rng.choice([1.0, 0.5, 0.25], gpus)
    P = np.empty((num_jobs, num_machines))
    P[:, :gpus] = gpu_seconds[:, None] / speed[None, :]
    P[:, gpus:] = (gpu_seconds * rng.lognormal(1.5, 0.7, num_jobs))[:, None]
    P[rng.random(num_jobs) < 0.2, gpus:] = np.inf
    free_at = np.zeros(num_machines)
    if distinct:
        P *= rng.uniform(0.9, 1.1, num_machines)[None, :]
        free_at = rng.uniform(0.0, 600.0, num_machines)
    return P, free_at, np.zeros(num_jobs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=list(DEFAULT_SIZES), help="JOBSxMACHINES")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print("| scenario | jobs | machines | slots (capped) | matchings | "
          + " | ".join(f"{m} s" for m in METHODS) + " | best other / scipy | max objective "
          "difference | scipy solver alone: longest first / as given (s) |")
    print("|---|---:|---:|---:|---:|" + "---:|" * len(METHODS) + "---:|---:|---|")
    for distinct in (False, True):
        for size in args.sizes:
            n, K = (int(v) for v in size.split("x"))
            row(n, K, distinct, args.repeats if n < 2000 else 1)


def row(n: int, K: int, distinct: bool, repeats: int) -> None:
    P, A, a = hybrid_instance(n, K, distinct=distinct)
    times, totals, stats = {}, {}, None
    for method in METHODS:
        if method == "full" and n * n * K > FULL_LIMIT:
            continue
        seconds, (machine, got) = best_of(repeats, lambda m=method: allox_assignment(P, A, m))
        times[method] = seconds
        totals[method] = schedule_from_assignment(P, A, a, machine).total_completion
        if method == "scipy":
            stats = got
    others = min(t for m, t in times.items() if m != "scipy")
    diff = max(abs(v - totals["scipy"]) / totals["scipy"] for v in totals.values())
    slot_machine, slot_q = slots(stats.caps)
    order = np.argsort(-P.min(axis=1), kind="stable")
    sorted_cost = slot_costs(P[order], A, slot_machine, slot_q)
    plain_cost = slot_costs(P, A, slot_machine, slot_q)
    longest_first, _ = best_of(repeats, lambda: linear_sum_assignment(sorted_cost))
    as_given, _ = best_of(repeats, lambda: linear_sum_assignment(plain_cost))
    cells = [f"{times[m]:.3f}" if m in times else "—" for m in METHODS]
    print(f"| {'distinct' if distinct else 'classes'} | {n:,} | {K} | {stats.slots:,} | "
          f"{stats.matchings} | " + " | ".join(cells) + f" | {others / times['scipy']:.2f}x | "
          f"{diff:.0e} | {longest_first:.3f} / {as_given:.3f} |", flush=True)


if __name__ == "__main__":
    main()

"""Water filling and makespan with space sharing (water_filling_packed, min_makespan_packed)
against max-min fairness with space sharing on the same instances, in this one process.

Run: python benchmarks/packed_targets.py [--jobs 256 1024 2048] [--noisy 256 1024]
                                         [--gpus-per-job 0.75] [--repeats 1] [--clock cpu]

Instances: `space_sharing.py`'s synthetic table (26 job types, every pair of types co-locatable
on every GPU type), single-GPU jobs on 3/4 as many GPUs as jobs split over v100/p100/k80, each
job 10^4-10^6 steps left (seed 1). `--noisy` jobs also get their own solo rows (x U(0.9, 1.1)),
so jobs are no longer interchangeable, and run twice: with `--gpus-per-job` and with 1.5 GPUs
per job, where many jobs reach their own top level (all of their time on their best type) and
water filling freezes them over tens of stages (with fewer GPUs than jobs every job ends at
the same level, one stage).
Columns: seconds of `schedopt.solve` (pair table and candidates included; CPU seconds of this
process by default, `--clock wall` for wall seconds), ratio to
max_min_fairness_packed on the same instance, water-filling stages, pair columns generated,
proven relative gap.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from space_sharing import GPUS, synthetic_performance
from schedopt.api import solve
from schedopt.instance import parse_instance

POLICIES = ("max_min_fairness_packed", "water_filling_packed", "min_makespan_packed")
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def instance(jobs: int, noise: float = 0.0, gpus_per_job: float = 0.75, seed: int = 1):
    performance = synthetic_performance()
    types = sorted(performance["throughput"])
    rng = np.random.default_rng(seed)
    drawn = rng.integers(0, len(types), jobs)
    steps = rng.uniform(1e4, 1e6, jobs)
    rows = [{"id": f"j{m:05d}", "type": types[k], "total_steps": float(s)}
            for m, (k, s) in enumerate(zip(drawn.tolist(), steps.tolist()))]
    if noise:
        factor = rng.uniform(1 - noise, 1 + noise, (jobs, len(GPUS)))
        for row, f in zip(rows, factor.tolist()):
            base = performance["throughput"][row["type"]]
            row["throughput"] = {g: base[g] * x for g, x in zip(GPUS, f)}
    gpus = max(3, int(gpus_per_job * jobs))
    return parse_instance({
        "format": "schedopt-instance/1",
        "cluster": {"gpu_types": {g: {"count": gpus // 3, "gpus_per_node": 4} for g in GPUS}},
        "jobs": rows, "performance": performance})


def timed(inst, policy: str, repeats: int, clock=time.process_time):
    best, result = np.inf, None
    for _ in range(repeats):
        start = clock()
        result = solve(inst, policy)
        best = min(best, clock() - start)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, nargs="+", default=[256, 1024, 2048])
    parser.add_argument("--noisy", type=int, nargs="*", default=[256, 1024])
    parser.add_argument("--gpus-per-job", type=float, default=0.75)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="cpu")
    args = parser.parse_args()
    solve(instance(8), POLICIES[0])  # imports and first-call costs out of the first row
    print("| jobs | GPUs | rows | policy | seconds | ratio to max-min | stages | pair columns | gap |")
    print("|---:|---:|---|---|---:|---:|---:|---:|---:|")
    ratio = args.gpus_per_job
    cases = ([(n, 0.0, ratio) for n in args.jobs] + [(n, 0.1, ratio) for n in args.noisy]
             + [(n, 0.1, 1.5) for n in args.noisy])
    for jobs, noise, per_job in cases:
        inst = instance(jobs, noise, per_job)
        gpus = sum(t.count for t in inst.cluster.gpu_types.values())
        base = None
        for policy in POLICIES:
            seconds, result = timed(inst, policy, args.repeats, CLOCKS[args.clock])
            base = base or seconds
            d = result.details
            print(f"| {jobs:,} | {gpus:,} | {'own' if noise else 'by type'} | {policy} | "
                  f"{seconds:.2f} | {seconds / base:.2f} | {d.get('stages', '')} | "
                  f"{d['columns_generated']:,} | {d['gap']:.1e} |", flush=True)


if __name__ == "__main__":
    main()

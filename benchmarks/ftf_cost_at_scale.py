"""Finish-time fairness and min_cost with SLOs at scale: the price decomposition against the
whole-LP path, side by side in one run.

Run: python benchmarks/ftf_cost_at_scale.py [--sizes 1000 10000 100000] [--cap 120]
Policies: finish_time_fairness, finish_time_fairness_agnostic (whole LP: bisection over LPs on
HiGHS, method=lp) and min_cost with SLOs (whole LP on HiGHS' interior point, its default).
Instances (`common.random_problem`, 3 GPU types): 0.1 GPU per job in all for finish-time
fairness, 0.3 for min_cost, where half of the jobs have a deadline asking 20-100% of an even
split of the GPUs; the GPUs bind in every case. Each solve runs in a fresh process; the whole LP
only within --cap seconds (and not at a larger size once a smaller one ran past it).
Reported: wall seconds of the solve, the proven relative gap (FTF: (objective - bound) /
objective; min_cost: (bound - objective) / bound) and the objectives' relative difference.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import time

import numpy as np

from common import random_problem
from schedopt.core.problem import ThroughputProblem
from schedopt.policies.gavel import lp as gavel

POLICIES = {  # name: (policy function, options)
    "finish_time_fairness": (gavel.finish_time_fairness, {}),
    "finish_time_fairness_agnostic": (gavel.finish_time_fairness, {"agnostic": True}),
    "min_cost (SLOs)": (gavel.min_cost, {"slos": True}),
}
WHOLE_LP = {"finish_time_fairness": "highs", "finish_time_fairness_agnostic": "highs",
            "min_cost (SLOs)": "highs-ipm"}


def instance(policy: str, jobs: int) -> ThroughputProblem:
    problem = random_problem(jobs)
    if not policy.startswith("min_cost"):
        return dataclasses.replace(problem, capacity=np.full(3, jobs * 0.1 / 3))
    rng = np.random.default_rng(1)
    capacity = np.full(3, jobs * 0.3 / 3)
    even = capacity.sum() / problem.scale_factor.sum()  # each job's time share, split evenly
    need = rng.uniform(0.2, 1.0, jobs) * even * problem.throughput.mean(axis=1)  # steps/s
    deadline = np.where(rng.random(jobs) < 0.5, problem.remaining_steps / need, np.nan)
    return dataclasses.replace(problem, capacity=capacity, time_to_deadline=deadline)


def run_one(policy: str, jobs: int, method: str) -> dict:
    fn, options = POLICIES[policy]
    problem = instance(policy, jobs)
    solver = None if method == "decomposition" else WHOLE_LP[policy]
    began = time.perf_counter()
    outcome = fn(problem, solver, method=method, **options)
    seconds = time.perf_counter() - began
    objective, bound = outcome.objective, outcome.bound
    gap = None
    if objective is not None and bound is not None:
        gap = abs(objective - bound) / max(abs(objective), abs(bound))
    return {"seconds": seconds, "status": outcome.status.value, "objective": objective,
            "gap": gap}


def in_fresh_process(policy: str, jobs: int, method: str, cap: float) -> dict | None:
    """run_one in a child process; None when it ran past `cap` seconds."""
    try:
        done = subprocess.run([sys.executable, __file__, "--one", policy, str(jobs), method],
                              capture_output=True, text=True, timeout=cap, check=True)
    except subprocess.TimeoutExpired:
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--cap", type=float, default=120.0)
    parser.add_argument("--one", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        policy, jobs, method = args.one
        print(json.dumps(run_one(policy, int(jobs), method)))
        return
    print(f"load average at start: {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores",
          file=sys.stderr)
    print("| policy | jobs | decomposition s | proven gap | whole LP s | whole LP gap | "
          "speed-up | objective diff |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for policy in POLICIES:
        lp_too_slow = False
        for jobs in args.sizes:
            ours = in_fresh_process(policy, jobs, "decomposition", 10 * args.cap)
            whole = None if lp_too_slow else in_fresh_process(policy, jobs, "lp", args.cap)
            if whole is None:
                shown = (f"> {args.cap:.0f} (not run)" if lp_too_slow
                         else f"> {args.cap:.0f} (stopped)")
                lp_too_slow = True
                cells = [shown, "—", "—", "—"]
            else:
                diff = abs(ours["objective"] - whole["objective"]) / abs(whole["objective"])
                cells = [f"{whole['seconds']:.2f}", f"{whole['gap']:.1e}",
                         f"{whole['seconds'] / ours['seconds']:.1f}x", f"{diff:.1e}"]
            print(f"| {policy} | {jobs:,} | **{ours['seconds']:.2f}** | {ours['gap']:.1e} | "
                  + " | ".join(cells) + " |", flush=True)
    print(f"load average at end: {os.getloadavg()[0]:.2f}", file=sys.stderr)


if __name__ == "__main__":
    main()

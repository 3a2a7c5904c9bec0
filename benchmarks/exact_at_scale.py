"""Exact max-min fairness at scale: the price decomposition against the same LP in cvxpy.

Run: python benchmarks/exact_at_scale.py [--repeats 3] [--skip-large]
Cases, each in a fresh process so its peak memory (max RSS) is its own:
  cvxpy10k   10,000 jobs x 3 types (random rows with the GPUs binding or not, and jobs drawn
             from Gavel's 83 job types):
             schedopt's default vs Gavel-style cvxpy + CLARABEL / ECOS, best of --repeats,
             model building included on both sides, objectives compared.
  large      1,000,000 jobs x 3 types and 100,000 jobs x 8 types (random rows, contended):
             wall seconds, proven gap (bound - level) / bound, peak memory.
  warm       re-solve after 1% of the jobs leave and 1% arrive, from the previous prices,
             against a cold solve of the same problem.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import dataclasses
import time

import numpy as np

from common import best_of, gavel_like, random_problem
from max_min_vs_cvxpy import gavel_style_cvxpy
from schedopt.policies.gavel import lp as gavel
from schedopt.core.problem import ThroughputProblem
from schedopt.policies.gavel.levels import LevelProblem, max_level


def contended(jobs: int, types: int = 3) -> ThroughputProblem:
    """`random_problem` with 3/8 of a GPU per job in all (jobs * 3 / (8 * types) per type): the
    GPUs bind. (At random_problem's own jobs/4 per type they do not: every job tops out on its
    fastest type first, and the decomposition answers in closed form.)"""
    problem = random_problem(jobs, types)
    return dataclasses.replace(problem, capacity=np.full(types, jobs * 3 / (8 * types)))


def level_problem(problem) -> LevelProblem:
    gain = gavel.normalized_throughput(problem) * problem.runnable
    return LevelProblem(gain, problem.scale_factor, problem.capacity)


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def case_cvxpy(repeats: int) -> list[dict]:
    rows = []
    for name, problem in (("random rows, contended", contended(10_000)),
                          ("random rows, GPUs not binding", random_problem(10_000)),
                          ("Gavel job types", gavel_like(10_000, 1024))):
        ours_s, ours = best_of(repeats, lambda: gavel.max_min_fairness(problem))
        refs = {}
        for solver in ("CLARABEL", "ECOS"):
            try:
                refs[solver] = best_of(repeats, lambda: gavel_style_cvxpy(problem, solver))
            except Exception as error:  # a solver cvxpy does not have here
                print(f"cvxpy + {solver}: {error}", file=sys.stderr)
        best_solver = min(refs, key=lambda k: refs[k][0])
        ref_s, ref_obj = refs[best_solver]
        rows.append({"case": f"10,000 x 3, {name}", "ours_s": ours_s, "gap": ours.details["gap"],
                     "reference": f"cvxpy + {best_solver}", "reference_s": ref_s,
                     "ratio": ref_s / ours_s, "binding_types": int(np.count_nonzero(
                         np.asarray(ours.details["prices"]) > 0)),
                     "objective_diff": abs(ours.objective - ref_obj) / abs(ref_obj)})
    return rows


def case_large(jobs: int, types: int) -> list[dict]:
    problem = level_problem(contended(jobs, types))
    start = time.perf_counter()
    solution = max_level(problem)
    seconds = time.perf_counter() - start
    return [{"case": f"{jobs:,} x {types}", "ours_s": seconds, "gap": solution.gap,
             "status": solution.status.value, "free_classes": solution.details["free_classes"],
             "binding_types": int(np.count_nonzero(solution.prices > 0)),
             "peak_mb": peak_mb()}]


def case_warm(jobs: int, repeats: int) -> list[dict]:
    full = level_problem(contended(int(jobs * 1.01)))
    before = LevelProblem(full.gain[:jobs], full.gpus[:jobs], full.capacity)
    after = LevelProblem(full.gain[jobs // 100:], full.gpus[jobs // 100:], full.capacity)
    previous = max_level(before)
    cold_s, cold = best_of(repeats, lambda: max_level(after))
    warm_s, warm = best_of(repeats, lambda: max_level(after, start=previous))
    return [{"case": f"warm start, {jobs:,} x 3, 1% leave + 1% arrive", "cold_s": cold_s,
             "warm_s": warm_s, "speedup": cold_s / warm_s, "gap": warm.gap,
             "level_diff": abs(warm.level - cold.level) / cold.level}]


def run_case(argv: list[str]) -> list[dict]:
    out = subprocess.run([sys.executable, __file__, "--case", *argv], capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-large", action="store_true")
    parser.add_argument("--case", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        kind, *rest = args.case
        rows = {"cvxpy": lambda: case_cvxpy(int(rest[0])),
                "large": lambda: case_large(int(rest[0]), int(rest[1])),
                "warm": lambda: case_warm(int(rest[0]), int(rest[1]))}[kind]()
        print(json.dumps(rows))
        return
    rows = run_case(["cvxpy", str(args.repeats)])
    rows += run_case(["warm", "10000", str(args.repeats)])
    rows += run_case(["warm", "100000", "1"])
    if not args.skip_large:
        rows += run_case(["large", "1000000", "3"]) + run_case(["large", "100000", "8"])
    for row in rows:
        print("  ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                        for k, v in row.items()))


if __name__ == "__main__":
    main()

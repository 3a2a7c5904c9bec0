"""smd_exact's time to proven optimality and its bound, with and without what shrinks its MILP
(docs/smd.md, "smd_exact"), side by side on the same instances and the same smd start.

    python benchmarks/smd_exact_speed.py                   # 8 NIC-bound 40-job instances, 30 s
    python benchmarks/smd_exact_speed.py --regimes nic cpu --seeds 8 --limit 30 --verbose
    python benchmarks/smd_exact_speed.py --regimes nic --variants after --verbose
    python benchmarks/smd_exact_speed.py --regimes loose memory mixed --verbose

Instance s of a regime: `parameter_server_document(jobs, machines, seed=s, regime=R)` with
machines uniform in max(6, ceil(jobs / 4))..20 from numpy default_rng(2021 + s) (the rule of
benchmarks/smd_regimes.py with the job count fixed). smd runs once per instance (defaults) and
the variants (`--variants`, default all) start from its placement:
- before: `smd_exact(problem, reduced_cost=False, canonical_start=False, start=smd's)`, the
  release before the MILP was shrunk (its hint violates the symmetry rows);
- hint: `smd_exact(problem, reduced_cost=False, start=smd's)`: the hint permuted to satisfy
  the symmetry rows;
- fixing: `smd_exact(problem, place_relaxation=False, start=smd's)`: that hint, and the columns
  bounded by the LP relaxation's reduced costs (the LP's bound kept);
- after: `smd_exact(problem, start=smd's)`, the default: also a short CP-SAT run, then the
  configurations of the relaxation with integer configurations placed by the tabu search
  where it can (a placement found is optimal).
Next to them each instance's LP relaxation (HiGHS) and its relaxation with integer
configurations and a fractional placement (`configuration_relaxation`, SCIP, `--scip-limit`
seconds), the value near which CP-SAT's bound stops.
CP-SAT gets `--threads` workers (2) and `--limit` seconds of wall-clock time. Reported per
variant: instances proven optimal, median CPU seconds of the process to proven optimality
(">limit (wall)" when fewer than half are proven), median and worst gap
(objective - bound) / objective, the median count of configuration columns fixed to 0 (where
the reduced costs are used), and the medians of (bound - LP) / LP and (integer configurations -
LP) / LP. CPU seconds include every CP-SAT thread; wall times are printed per instance with
--verbose.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import time

import numpy as np

from schedopt.backends import SolveOptions
from schedopt.instance import parse_instance
from schedopt.policies.smd.algorithm import smd
from schedopt.policies.smd.bound import configuration_relaxation, relaxation
from schedopt.policies.smd.exact import exact_program, smd_exact
from schedopt.policies.smd.model import SmdProblem
from schedopt.traces.parameter_server import parameter_server_document

VARIANTS = {
    "before": dict(reduced_cost=False, canonical_start=False),
    "hint": dict(reduced_cost=False),
    "fixing": dict(place_relaxation=False),
    "after": dict(),
}


def draw(regime: str, seed: int, jobs: int) -> SmdProblem:
    rng = np.random.default_rng(2021 + seed)
    machines = int(rng.integers(max(6, math.ceil(jobs / 4)), 21))
    doc = parameter_server_document(jobs, machines, seed=seed, regime=regime)
    return SmdProblem.from_instance(parse_instance(doc))


def run(problem: SmdProblem, limit: float, threads: int, variants: list[str],
        scip_limit: float) -> dict:
    program = exact_program(problem, problem.configurations())
    cpu = time.process_time()
    start = smd(problem)
    row = {"jobs": problem.num_jobs, "machines": problem.num_machines,
           "smd": start.objective, "smd_cpu": time.process_time() - cpu,
           "lp": relaxation(program)[0],
           "configurations": configuration_relaxation(program, scip_limit)}
    options = SolveOptions(time_limit=limit, threads=threads)
    for name in variants:
        cpu, wall = time.process_time(), time.perf_counter()
        out = smd_exact(problem, options=options, start=start, **VARIANTS[name])
        row[name] = {"status": out.status.value, "objective": out.objective, "bound": out.bound,
                     "gap": out.details.get("gap"), "cpu": time.process_time() - cpu,
                     "wall": time.perf_counter() - wall,
                     "fixed": out.details.get("fixed_configurations")}
    return row


def summary(regime: str, rows: list[dict], limit: float, variants: list[str]) -> list[str]:
    lines = []
    for name in variants:
        runs = [r[name] for r in rows]
        proven = [v["cpu"] for v in runs if v["status"] == "optimal"]
        times = sorted(proven + [math.inf] * (len(runs) - len(proven)))
        median = statistics.median(times)
        gaps = [v["gap"] for v in runs if v["gap"] is not None]
        fixed = [v["fixed"] for v in runs if v["fixed"] is not None]
        lp = [r["lp"] for r in rows]
        gain = [(v["bound"] - b) / b for v, b in zip(runs, lp) if v["bound"] is not None]
        integer = [(r["configurations"] - r["lp"]) / r["lp"] for r in rows
                   if r["configurations"] is not None]
        lines.append(
            f"| {regime} | {name} | {len(proven)}/{len(runs)} | "
            f"{f'{median:.1f}' if math.isfinite(median) else f'>{limit:g} (wall)'} | "
            f"{statistics.median(gaps):.2%} | {max(gaps):.2%} | "
            f"{statistics.median(fixed) if fixed else '-'} | "
            f"{f'{statistics.median(gain):+.3%}' if gain else '-'} | "
            f"{f'{statistics.median(integer):+.3%}' if integer else '-'} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--regimes", nargs="+", default=["nic"])
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=40)
    parser.add_argument("--limit", type=float, default=30.0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS))
    parser.add_argument("--scip-limit", type=float, default=60.0)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    print("| regime | variant | proven | median CPU s to optimal | median gap | worst gap "
          "| configurations fixed (median) | bound above the LP (median) "
          "| integer configurations above the LP (median) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for regime in args.regimes:
        rows = []
        for seed in range(args.first, args.first + args.seeds):
            rows.append(run(draw(regime, seed, args.jobs), args.limit, args.threads,
                            args.variants, args.scip_limit))
            if args.verbose:
                print(json.dumps({"regime": regime, "seed": seed, **rows[-1]}), flush=True)
        print("\n".join(summary(regime, rows, args.limit, args.variants)), flush=True)
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()

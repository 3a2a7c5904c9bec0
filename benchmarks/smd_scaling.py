"""SMD against its exact reference and its baselines, side by side in one run.

    python benchmarks/smd_scaling.py                 # all three tables
    python benchmarks/smd_scaling.py --seeds 3 --skip-solvers --skip-200-exact

Instances: `schedopt.traces.parameter_server.parameter_server_instance(jobs, machines, seed)`
(drawing rules in that module: machines of 8/4/2 GPUs with CPUs, memory and NIC bandwidth,
five model templates, at most 8 workers and 4 PSs per job).

1. 50 jobs / 20 machines, one row per seed, with at most 4 PSs per job (the generator's default)
   and 8 (the format's): `smd` (best of 3 wall times) and `smd_exact` with its default solver
   (one run), both from the SmdProblem (configurations and model building included), the
   speed ratio exact / smd and smd's gap (smd / exact - 1).
2. The exact MILP's solver on the same instances: cpsat, scip, cbc (wall seconds; the default
   in smd_exact.DEFAULT_SOLVER is the fastest here).
3. 200 jobs / 80 machines: smd against the baselines (sum of completion times, hours, and the
   ratio to smd) and smd_exact with a time limit as the reference.
"""

from __future__ import annotations

import argparse
import statistics
import time

from common import best_of
from schedopt.backends import SolveOptions
from schedopt.policies.smd.algorithm import smd
from schedopt.policies.smd.baselines import equal_split, optimus_greedy
from schedopt.policies.smd.exact import DEFAULT_SOLVER, smd_exact
from schedopt.policies.smd.model import SmdProblem
from schedopt.traces.parameter_server import parameter_server_instance


def problem(jobs: int, machines: int, seed: int, max_ps: int = 4) -> SmdProblem:
    return SmdProblem.from_instance(parameter_server_instance(jobs, machines, seed, max_ps=max_ps))


def speed_table(seeds: int, max_ps: int) -> None:
    print(f"## smd vs smd_exact ({DEFAULT_SOLVER}), 50 jobs / 20 machines, at most 8 workers and "
          f"{max_ps} PSs per job\n")
    print("| seed | smd s | exact s | exact / smd | smd objective (s) | exact objective (s) | gap |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    ratios, gaps = [], []
    for seed in range(seeds):
        p = problem(50, 20, seed, max_ps)
        smd_s, heuristic = best_of(3, lambda: smd(p))
        start = time.perf_counter()
        exact = smd_exact(p)
        exact_s = time.perf_counter() - start
        assert heuristic.placement.violations(p) == [] and exact.status.value == "optimal"
        ratio, gap = exact_s / smd_s, heuristic.objective / exact.objective - 1
        ratios.append(ratio)
        gaps.append(gap)
        print(f"| {seed} | {smd_s:.3f} | {exact_s:.2f} | {ratio:.1f}x | {heuristic.objective:,.0f} | "
              f"{exact.objective:,.0f} | {gap:.2e} |")
    print(f"\nratio exact / smd: median {statistics.median(ratios):.1f}x, min {min(ratios):.1f}x; "
          f"gap: mean {statistics.mean(gaps):.2e}, max {max(gaps):.2e}\n")


def solver_table(seeds: int) -> None:
    print("## smd_exact's solver, 50 jobs / 20 machines (wall seconds, time limit 120 s)\n")
    solvers = ("cpsat", "scip", "cbc")
    print("| seed | " + " | ".join(solvers) + " |")
    print("|---:|" + "---:|" * len(solvers))
    totals = dict.fromkeys(solvers, 0.0)
    for seed in range(seeds):
        p = problem(50, 20, seed)
        cells, objectives = [], []
        for solver in solvers:
            start = time.perf_counter()
            result = smd_exact(p, solver, SolveOptions(time_limit=120))
            seconds = time.perf_counter() - start
            totals[solver] += seconds
            objectives.append(result.objective)
            cells.append(f"{seconds:.2f}" + ("" if result.status.value == "optimal" else " (limit)"))
        spread = (max(objectives) - min(objectives)) / min(objectives)
        print(f"| {seed} | " + " | ".join(cells) + f" |   <!-- objectives agree to {spread:.0e} -->")
    print("| total | " + " | ".join(f"{totals[s]:.2f}" for s in solvers) + " |\n")


def baseline_table(seed: int, exact_limit: float | None) -> None:
    print(f"## smd vs the baselines, 200 jobs / 80 machines (seed {seed})\n")
    p = problem(200, 80, seed)
    rows = [("smd", smd), ("smd_greedy (Optimus-style)", optimus_greedy),
            ("smd_equal_split", equal_split)]
    results = [(name, method(p)) for name, method in rows]
    if exact_limit:
        results.append((f"smd_exact (cpsat, limit {exact_limit:g} s)",
                        smd_exact(p, "cpsat", SolveOptions(time_limit=exact_limit))))
    reference = results[0][1].objective
    print("| policy | sum of completion times (h) | / smd | mean JCT (h) | workers | PSs | seconds |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, result in results:
        assert result.placement.violations(p) == []
        print(f"| {name} | {result.objective / 3600:,.1f} | {result.objective / reference:.3f} | "
              f"{result.objective / 3600 / p.num_jobs:.2f} | {int(result.workers.sum())} | "
              f"{int(result.ps.sum())} | {result.solve_seconds:.2f} |")
    exact = dict(results).get(f"smd_exact (cpsat, limit {exact_limit:g} s)") if exact_limit else None
    if exact is not None:
        print(f"\nsmd_exact: status {exact.status.value}, bound {exact.bound / 3600:,.1f} h; smd's "
              f"gap to it {reference / exact.objective - 1:.2e}")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--skip-solvers", action="store_true")
    parser.add_argument("--skip-200-exact", action="store_true")
    args = parser.parse_args()
    for max_ps in (4, 8):  # the generator's default, the format's default
        speed_table(args.seeds, max_ps)
    if not args.skip_solvers:
        solver_table(args.seeds)
    baseline_table(0, None if args.skip_200_exact else 120.0)


if __name__ == "__main__":
    main()

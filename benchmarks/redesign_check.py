"""Before/after check of the Policy redesign: the same timing function run in two subprocesses,
one on the code before it (`--before DIR`, a checkout of commit 9e2763a) and one on this tree.

Cases: building the max-min fairness LP at 100,000 jobs x 3 GPU types (before: the sparse
blocks of `schedopt.formulations.gavel`; after: `models.max_min_model` on
`schedopt.modeling`, compiled), and a whole `schedopt.solve` at 10,000 jobs for the Gavel
policies on their default solvers (max_min_fairness also on Clarabel, the whole LP). Each case
is the best of `--repeats` wall-clock runs in one process; the two trees' processes alternate
`--rounds` times and each keeps its best, so a burst of load on a shared machine does not land
on one side only. The table shows before s, after s and their ratio (after / before; below 1
is faster). `--clock cpu` times the process's CPU seconds instead of wall seconds: on a machine
others share, it does not count the time the process waits for a core.

    python benchmarks/redesign_check.py --before /tmp/before-rounds [--clock cpu]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUILD_JOBS = 100_000
SOLVE_JOBS = 10_000
SOLVES = [  # (case, policy, solver: None = the policy's default)
    ("max_min_fairness (decomposition)", "max_min_fairness", None),
    ("max_min_fairness --solver clarabel (LP)", "max_min_fairness", "clarabel"),
    ("min_makespan", "min_makespan", None),
    ("finish_time_fairness", "finish_time_fairness", None),
    ("max_total_throughput", "max_total_throughput", None),
    ("min_cost", "min_cost", None),
    ("water_filling", "water_filling", None),
]


def problem(num_jobs: int, num_types: int = 3, seed: int = 0):
    """benchmarks/common.py's random_problem, built here so both trees get the same arrays:
    throughputs 0.2-5 steps/s, scale factors 1/2/4/8 (Gavel's odds), num_jobs/4 GPUs per
    type, remaining steps 1e4-1e6, up to an hour since arrival, $0.5-2.5 per GPU-hour."""
    import numpy as np

    import schedopt

    rng = np.random.default_rng(seed)
    return schedopt.ThroughputProblem.from_arrays(
        rng.uniform(0.2, 5.0, (num_jobs, num_types)),
        rng.choice([1, 2, 4, 8], num_jobs, p=[0.7, 0.1, 0.15, 0.05]),
        np.ones(num_jobs),
        np.full(num_types, max(8.0, num_jobs / 4)),
        remaining_steps=rng.uniform(1e4, 1e6, num_jobs),
        time_since_arrival=rng.uniform(0, 3600, num_jobs),
        cost_per_hour=np.linspace(2.5, 0.5, num_types),
    )


def build_max_min_lp(problem):
    """The max-min fairness LP for `problem`, by whichever builder this tree has."""
    try:
        from schedopt.policies.gavel.models import max_min_model
    except ImportError:  # before the redesign
        import numpy as np

        from schedopt.formulations import gavel
        from schedopt.formulations.blocks import column, per_job_rows, scale_rows

        a = gavel.normalized_throughput(problem) * problem.runnable
        M, J = a.shape
        rows = per_job_rows(a, 1) - column(np.ones(M), M * J, M * J + 1)
        rows, lo, hi = scale_rows(rows, np.zeros(M), np.full(M, np.inf))
        return gavel._lp_with_aux(problem, rows, lo, hi, aux_cost=np.ones(1),
                                  aux_upper=np.full(1, np.inf))
    return max_min_model(problem)[0].compile()


def best_of(repeats: int, fn, clock=time.perf_counter) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = clock()
        fn()
        best = min(best, clock() - start)
    return best


def measure(repeats: int, clock) -> dict[str, float]:
    """Seconds per case in this process's tree."""
    import schedopt

    times = {}
    big = problem(BUILD_JOBS)
    times[f"max-min LP build, {BUILD_JOBS:,} jobs x 3 types"] = best_of(
        repeats, lambda: build_max_min_lp(big), clock)
    small = problem(SOLVE_JOBS)
    for case, policy, solver in SOLVES:
        def run():
            result = schedopt.solve(small, policy, solver)
            assert result.status.value == "optimal", (case, result.status)
        times[f"solve {case}, {SOLVE_JOBS:,} jobs"] = best_of(repeats, run, clock)
    return times


CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def side(tree: Path, repeats: int, clock: str) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run([sys.executable, __file__, "--measure", "--repeats", str(repeats),
                           "--clock", clock],
                          env=env, cwd=tree, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"the run in {tree} failed:\n{done.stderr}")
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, default=Path("/tmp/before-rounds"),
                        help="checkout of the code before the redesign")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall")
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.repeats, CLOCKS[args.clock])))
        return
    before: dict[str, float] = {}
    after: dict[str, float] = {}
    for _ in range(args.rounds):
        for best, tree in ((before, args.before.resolve()), (after, ROOT)):
            for case, seconds in side(tree, args.repeats, args.clock).items():
                best[case] = min(best.get(case, float("inf")), seconds)
    print("| case | before s | after s | after / before |")
    print("| --- | ---: | ---: | ---: |")
    for case in before:
        print(f"| {case} | {before[case]:.3f} | {after[case]:.3f} | "
              f"{after[case] / before[case]:.2f} |")


if __name__ == "__main__":
    main()

"""Before/after check of the Policy redesign: the same timing function run in two subprocesses,
one on the code before it (`--before DIR`, a checkout of commit 9e2763a) and one on this tree.

Cases: building the max-min fairness LP at 100,000 jobs x 3 GPU types (before: the sparse
blocks of `schedopt.formulations.gavel`; after: `models.max_min_model` on
`schedopt.modeling`, compiled), and a whole `schedopt.solve` at 10,000 jobs for the Gavel
policies on their default solvers (max_min_fairness also on Clarabel, the whole LP). One
worker process per tree (warmed up by one untimed run of every case) times one run at a time,
the two trees alternating run by run, so a burst of load on a shared machine lands on both
sides alike; each case is the best of `--repeats` runs per tree (of SHORT_RUNS for cases under
SHORT seconds, where a millisecond of noise would dominate). The table shows before s,
after s and their ratio (after / before; below 1 is faster). Instances: `common.random_problem`. `--clock cpu` times the process's CPU seconds instead of wall seconds: on a machine
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


def cases() -> dict[str, object]:
    """{case: a function doing it once} in this process's tree."""
    import schedopt

    from common import random_problem  # benchmarks/common.py, beside this file

    big = random_problem(BUILD_JOBS)
    small = random_problem(SOLVE_JOBS)
    found = {f"max-min LP build, {BUILD_JOBS:,} jobs x 3 types": lambda: build_max_min_lp(big)}
    for case, policy, solver in SOLVES:
        def run(policy=policy, solver=solver, case=case):
            result = schedopt.solve(small, policy, solver)
            assert result.status.value == "optimal", (case, result.status)
        found[f"solve {case}, {SOLVE_JOBS:,} jobs"] = run
    return found


CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
SHORT = 0.1       # seconds: a case this fast is timed SHORT_RUNS times per tree, not --repeats,
SHORT_RUNS = 30   # since a millisecond of noise is a large share of it


def serve(clock) -> None:
    """Worker: print the case names, then time one case per line read from stdin."""
    work = cases()
    names = list(work)
    for fn in work.values():  # warm up: imports, first-call caches
        fn()
    print(json.dumps(names), flush=True)
    for line in sys.stdin:
        fn = work[names[int(line)]]
        start = clock()
        fn()
        print(clock() - start, flush=True)


class Worker:
    """A `serve` process on the code in `tree`."""

    def __init__(self, tree: Path, clock: str):
        env = {**os.environ, "PYTHONPATH": str(tree)}
        self.process = subprocess.Popen([sys.executable, __file__, "--serve", "--clock", clock],
                                        env=env, cwd=tree, stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True)
        self.names = json.loads(self._line(tree))

    def _line(self, tree=None) -> str:
        line = self.process.stdout.readline()
        if not line:
            sys.exit(f"the worker on {tree or 'a tree'} stopped (see its error above)")
        return line

    def time(self, index: int) -> float:
        self.process.stdin.write(f"{index}\n")
        self.process.stdin.flush()
        return float(self._line())

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, default=Path("/tmp/before-rounds"),
                        help="checkout of the code before the redesign")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per case and tree")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(CLOCKS[args.clock])
        return
    before, after = Worker(args.before.resolve(), args.clock), Worker(ROOT, args.clock)
    names = before.names
    best = {name: [float("inf"), float("inf")] for name in names}
    for index, name in enumerate(names):
        runs = args.repeats
        for done in range(max(SHORT_RUNS, args.repeats)):  # the trees alternate run by run
            for side, worker in enumerate((before, after)):
                best[name][side] = min(best[name][side], worker.time(index))
            if done == 0 and max(best[name]) > SHORT:
                runs = args.repeats  # a long case: --repeats runs
            elif done == 0:
                runs = SHORT_RUNS
            if done + 1 >= runs:
                break
    before.close()
    after.close()
    print("| case | before s | after s | after / before |")
    print("| --- | ---: | ---: | ---: |")
    for name, (old, new) in best.items():
        print(f"| {name} | {old:.3f} | {new:.3f} | {new / old:.2f} |")


if __name__ == "__main__":
    main()

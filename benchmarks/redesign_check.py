"""Before/after check of the Policy redesign: the same timing function run in two subprocesses,
one on the code before it (`--before DIR`, a checkout of commit 9e2763a) and one on this tree.

Cases: building the max-min fairness LP at 100,000 jobs x 3 GPU types (before: the sparse
blocks of `schedopt.formulations.gavel`; after: `models.max_min_model` on
`schedopt.modeling`, compiled), and a whole `schedopt.solve` at 10,000 jobs for the Gavel
policies on their default solvers (max_min_fairness also on Clarabel, the whole LP), and whole
simulations under the event baselines through the simulators' entry points that both trees
have: edf and srtf on a 600-job lease trace (`lease_trace`: 64 GPUs), sjf, drf and fifo_queue
on a 400-job AlloX-like trace (`benchmarks/allox_40.py`'s generator: 4 GPUs, 8 CPU machines).
One worker process per tree (warmed up by one untimed run of every case) times one run at a
time, the two trees alternating run by run, so a burst of load on a shared machine lands on
both sides alike; each case is the best of `--repeats` runs per tree (of `--short-runs`,
default SHORT_RUNS, for cases under SHORT seconds, where a millisecond of noise would dominate).
The table shows before s, after s and their ratio (after / before; below 1 is faster). Instances of the solves:
`common.random_problem`. `--clock cpu` times the process's CPU seconds instead of wall seconds:
on a machine others share, it does not count the time the process waits for a core.
`--cases` keeps the cases whose names contain one of its comma-separated words.

    python benchmarks/redesign_check.py --before /tmp/before-rounds [--clock cpu] [--cases simulate]
        [--short-runs 30]
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
LEASE_JOBS = 600
QUEUE_JOBS = 400
LEASE_POLICIES = ("edf", "srtf")
QUEUE_POLICIES = ("sjf", "drf", "fifo_queue")


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


def lease_trace(num_jobs: int, seed: int = 0):
    """SLO (70%) and best-effort jobs on 64 V100s: running time U(600 s, 4 h) at 1 step/s,
    1/2/4/8 GPUs (0.5/0.2/0.2/0.1), arrivals U(0, 24 h), an SLO deadline of 1.2-3x the
    running time: several times what the pool serves."""
    import numpy as np

    from schedopt.instance import parse_instance

    rng = np.random.default_rng(seed)
    run = rng.uniform(600, 4 * 3600, num_jobs)
    gpus = rng.choice([1, 2, 4, 8], num_jobs, p=[.5, .2, .2, .1])
    arrival = rng.uniform(0, 24 * 3600, num_jobs)
    slo, stretch = rng.random(num_jobs) < 0.7, rng.uniform(1.2, 3, num_jobs)
    jobs = [{"id": f"j{i}", "scale_factor": int(gpus[i]), "arrival_time": float(arrival[i]),
             "total_steps": float(run[i]), "throughput": {"v100": 1.0},
             **({"deadline": float(run[i] * stretch[i])} if slo[i] else {})}
            for i in range(num_jobs)]
    return parse_instance({"format": "schedopt-instance/1", "jobs": jobs, "cluster": {
        "gpu_types": {"v100": {"count": 64, "gpus_per_node": 8}}}})


def simulate_event_policy(instance, policy: str):
    """A whole simulation of `instance` under the lease or queue baseline `policy`, through
    the simulators' former entry points (both trees have them; before the redesign
    `fifo_queue` was the AlloX simulator's `fifo`)."""
    from schedopt.simulation import allox_sim, lease_sim

    if policy in LEASE_POLICIES:
        return lease_sim.simulate_leases(instance, policy)
    if policy == "fifo_queue" and policy not in allox_sim.SCHEDULERS:
        policy = "fifo"
    return allox_sim.simulate_allox(instance, policy)


def cases(wanted: str = "") -> dict[str, object]:
    """{case: a function doing it once} in this process's tree, only the cases whose names
    contain one of the comma-separated words `wanted` (all when empty)."""
    found = all_cases()
    return {name: fn for name, fn in found.items()
            if not wanted or any(word in name for word in wanted.split(","))}


def all_cases() -> dict[str, object]:
    """{case: a function doing it once} for every case."""
    import schedopt
    from schedopt.instance import parse_instance

    from allox_40 import allox_40_document  # benchmarks/, beside this file
    from common import random_problem

    big = random_problem(BUILD_JOBS)
    small = random_problem(SOLVE_JOBS)
    found = {f"max-min LP build, {BUILD_JOBS:,} jobs x 3 types": lambda: build_max_min_lp(big)}
    for case, policy, solver in SOLVES:
        def run(policy=policy, solver=solver, case=case):
            result = schedopt.solve(small, policy, solver)
            assert result.status.value == "optimal", (case, result.status)
        found[f"solve {case}, {SOLVE_JOBS:,} jobs"] = run
    traces = {"leases": lease_trace(LEASE_JOBS),
              "queues": parse_instance(allox_40_document(0, QUEUE_JOBS))}
    for kind, policies, size in (("leases", LEASE_POLICIES, LEASE_JOBS),
                                 ("queues", QUEUE_POLICIES, QUEUE_JOBS)):
        for policy in policies:
            found[f"simulate {policy} ({kind}), {size} jobs"] = (
                lambda policy=policy, trace=traces[kind]: simulate_event_policy(trace, policy))
    return found


CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
SHORT = 0.1       # seconds: a case this fast is timed SHORT_RUNS times per tree, not --repeats,
SHORT_RUNS = 30   # since a millisecond of noise is a large share of it


def serve(clock, wanted: str) -> None:
    """Worker: print the case names, then time one case per line read from stdin."""
    work = cases(wanted)
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

    def __init__(self, tree: Path, clock: str, wanted: str):
        env = {**os.environ, "PYTHONPATH": str(tree)}
        self.process = subprocess.Popen([sys.executable, __file__, "--serve", "--clock", clock,
                                         "--cases", wanted],
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
    parser.add_argument("--short-runs", type=int, default=SHORT_RUNS,
                        help=f"timed runs per tree of a case under {SHORT} s")
    parser.add_argument("--cases", default="", help="only the cases whose names contain one "
                        "of these comma-separated words (e.g. simulate)")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(CLOCKS[args.clock], args.cases)
        return
    before = Worker(args.before.resolve(), args.clock, args.cases)
    after = Worker(ROOT, args.clock, args.cases)
    names = before.names
    best = {name: [float("inf"), float("inf")] for name in names}
    for index, name in enumerate(names):
        runs = args.repeats
        for done in range(max(args.short_runs, args.repeats)):  # the trees alternate run by run
            for side, worker in enumerate((before, after)):
                best[name][side] = min(best[name][side], worker.time(index))
            if done == 0 and max(best[name]) > SHORT:
                runs = args.repeats  # a long case: --repeats runs
            elif done == 0:
                runs = args.short_runs
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

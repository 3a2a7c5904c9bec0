"""smd's CPU seconds by size and regime, this tree against another side by side (docs/smd.md,
"Across regimes").

    python benchmarks/smd_cpu.py                                   # this tree only
    git archive HEAD~1 schedopt | tar -x -C /tmp/before            # an older package ...
    python benchmarks/smd_cpu.py --before /tmp/before              # ... run alongside

Instances: `parameter_server_document(jobs, machines, seed=7, regime=R)` for jobs 16, 30, 45
and 60 on max(6, ceil(jobs / 3)) machines (60 jobs: 20 machines, the instance of
`smd_regimes.py --timing-only`). Each (tree, regime, size) runs in a fresh process with that
tree's `schedopt` first on PYTHONPATH: one untimed `smd` call, then `--repeats` timed ones,
the least CPU time (`time.process_time`) kept, alternating in that process with the same
call with the upgrade step at every size (UPGRADE_MAX_JOBS lifted: the previous release); with
--before the trees alternate per instance so that both see the same load. The two runs in one
process are the cleaner comparison: between processes the same code's CPU time varied by
0.7-1.5x on the shared machine. The objective (s) of each tree is printed beside its time:
where they are equal, so are the placements' gaps.
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from schedopt.traces.parameter_server import REGIMES

SIZES = (16, 30, 45, 60)

CHILD = """
import sys, time
import schedopt.policies.smd.algorithm as algorithm
from schedopt.instance import parse_instance
from schedopt.policies.smd.model import SmdProblem
from schedopt.traces.parameter_server import parameter_server_document
jobs, machines, regime, repeats = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
problem = SmdProblem.from_instance(parse_instance(
    parameter_server_document(jobs, machines, seed=7, regime=regime)))
limits = [getattr(algorithm, "UPGRADE_MAX_JOBS", None), 10**9]
best, objective = [float("inf")] * 2, [algorithm.smd(problem).objective] * 2
for _ in range(repeats):
    for which, limit in enumerate(limits):
        if limit is not None:
            algorithm.UPGRADE_MAX_JOBS = limit
        start = time.process_time()
        result = algorithm.smd(problem)
        best[which] = min(best[which], time.process_time() - start)
        objective[which] = result.objective
print(repr((best, objective)))
"""


def measure(tree: str | None, jobs: int, regime: str, repeats: int) -> tuple[list, list]:
    """([least CPU s of `repeats` smd calls, the same with the upgrade step at every size],
    [their objectives, s]) in a fresh process on `tree`, the two alternating."""
    env = dict(os.environ)
    env["PYTHONPATH"] = tree or str(Path(__file__).resolve().parent.parent)
    machines = max(6, math.ceil(jobs / 3))
    child = subprocess.run([sys.executable, "-c", CHILD, str(jobs), str(machines), regime,
                            str(repeats)], capture_output=True, text=True, check=True, env=env,
                           cwd=tempfile.gettempdir())  # not this tree's folder: `-c` puts it first
    return eval(child.stdout.strip().splitlines()[-1])  # our own repr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--regimes", default=",".join(REGIMES))
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--before", default=None,
                        help="a folder holding another tree's schedopt package, run alongside")
    args = parser.parse_args()
    print(f"load average at the start: {os.getloadavg()[0]:.1f}")
    head = ("| regime | jobs | machines | CPU s | CPU s, upgrade step at every size | ratio "
            "| objective ratio |")
    rule = "|---|---:|---:|---:|---:|---:|---:|"
    if args.before:
        head += " CPU s before | before / now | objective now / before |"
        rule += "---:|---:|---:|"
    print(head)
    print(rule)
    for regime in args.regimes.split(","):
        for jobs in map(int, args.sizes.split(",")):
            (cpu, every), (objective, every_objective) = measure(None, jobs, regime, args.repeats)
            line = (f"| {regime} | {jobs} | {max(6, math.ceil(jobs / 3))} | {cpu:.2f} | "
                    f"{every:.2f} | {every / cpu:.2f} | {objective / every_objective:.4f} |")
            if args.before:
                (old, _), (old_objective, _) = measure(args.before, jobs, regime, args.repeats)
                line += f" {old:.2f} | {old / cpu:.2f} | {objective / old_objective:.4f} |"
            print(line, flush=True)
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()

"""Before/after check of the space-sharing LP (max_min_fairness_packed) built with the modelling
layer: the same cases timed in two subprocesses, one on an older tree (`--before DIR`, a copy of
the code whose master LP was assembled from hand-built sparse blocks) and one on this tree.

Cases (instances of `space_sharing.py`: synthetic co-location table, 26 job types, GPUs split
evenly over v100/p100/k80):
  - building the master LP (`master_lp`: solo columns and t) at 100,000 jobs x 3 types
    (`common.random_problem`);
  - building the pair columns column generation adds (`pair_columns`) for 200,000 candidate
    pairs of a 1,024-job instance, and for 512 of them (about one round's batch);
  - whole `schedopt.solve` runs: 2,048 jobs on 1,536 GPUs (column generation, class seed:
    one round), 512 jobs on 384 GPUs without the seed (tens of rounds, each adding pair
    columns), and the one-LP method (`method=dense`, pruned pairs) at 128 jobs on 96 GPUs.
The two workers alternate run by run, so load on a shared machine lands on both; each case is
the best of `--repeats` runs per tree. `--clock cpu` times the worker's CPU seconds.

    git archive <commit before the change> | tar -x -C /tmp/packed-before
    python benchmarks/packed_check.py --before /tmp/packed-before [--clock cpu] [--repeats 3]
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
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def all_cases() -> dict[str, object]:
    """{case: a function doing it once}, on whichever tree this process imports."""
    import schedopt
    from schedopt.core.problem import ThroughputProblem
    from schedopt.policies.packed.master import Candidates, PairTable, master_lp, pair_columns

    from common import random_problem  # benchmarks/, beside this file
    from space_sharing import instance

    big = random_problem(100_000)
    mid = instance(1024, 768)
    problem = ThroughputProblem.from_instance(mid)
    cand = Candidates.build(problem, PairTable.from_instance(mid))
    pj, pm, pq = (a[:200_000] for a in cand.upper_pairs())
    large, small, tiny = instance(2048, 1536), instance(512, 384), instance(128, 96)

    def solve(inst, **options):
        result = schedopt.solve(inst, "max_min_fairness_packed", **options)
        assert result.status.value == "optimal", result.status
        return result

    return {
        "master LP build, 100,000 jobs x 3 types": lambda: master_lp(big),
        f"pair columns, {pj.size:,} pairs of 1,024 jobs": lambda: pair_columns(problem, cand,
                                                                                pj, pm, pq),
        "pair columns, 512 pairs (a round's batch)": lambda: pair_columns(
            problem, cand, pj[:512], pm[:512], pq[:512]),
        "solve, 2,048 jobs (columns, class seed)": lambda: solve(large),
        "solve, 512 jobs (columns, no seed)": lambda: solve(small, seed=False),
        "solve, 128 jobs (dense, pruned)": lambda: solve(tiny, method="dense"),
    }


def serve(clock) -> None:
    """Worker: warm up, print the case names, then time the case numbered on each stdin line."""
    work = all_cases()
    names = list(work)
    for fn in work.values():
        fn()
    print(json.dumps(names), flush=True)
    for line in sys.stdin:
        start = clock()
        work[names[int(line)]]()
        print(clock() - start, flush=True)


def start_worker(tree: Path, clock: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, __file__, "--serve", "--clock", clock],
                            env={**os.environ, "PYTHONPATH": str(tree)}, cwd=tree,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def ask(worker: subprocess.Popen, message: str | None = None) -> str:
    if message is not None:
        worker.stdin.write(message + "\n")
        worker.stdin.flush()
    line = worker.stdout.readline()
    if not line:
        sys.exit("a worker stopped (see its error above)")
    return line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, default=Path("/tmp/packed-before"),
                        help="a copy of the tree before the change")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per case and tree")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(CLOCKS[args.clock])
        return
    workers = [start_worker(args.before.resolve(), args.clock), start_worker(ROOT, args.clock)]
    names = [json.loads(ask(w)) for w in workers][0]
    best = {name: [float("inf")] * 2 for name in names}
    for index, name in enumerate(names):
        for _ in range(args.repeats):
            for side, worker in enumerate(workers):
                best[name][side] = min(best[name][side], float(ask(worker, str(index))))
    for worker in workers:
        worker.stdin.close()
        worker.wait()
    rows = [f"| {name} | {old:.3f} | {new:.3f} | {new / old:.2f} |"
            for name, (old, new) in best.items()]
    print("\n".join(["| case | before s | after s | after / before |", "| --- | ---: | ---: | ---: |",
                     *rows]))


if __name__ == "__main__":
    main()

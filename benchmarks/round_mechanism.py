"""The round mechanism at scale: one `place_round` on M jobs and G GPUs.

    python benchmarks/round_mechanism.py                       # this checkout
    PYTHONPATH=/path/to/other/checkout python benchmarks/round_mechanism.py   # another one

Runs the same cases in this process and, with --compare DIR, in a subprocess on the checkout at
DIR (older layouts kept the module at schedopt/rounds.py), and prints both side by side with the
ratio. Cases: 3 GPU types (8, 4 and 8 GPUs per node), scale factors 1/2/4/8 with probabilities
0.7/0.1/0.15/0.05, random time fractions summing to 0.3 per job; "fresh" has no previous round,
"extension" passes the previous round's placement (jobs keep their GPUs). Best of 5, seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

import importlib
from pathlib import Path

import schedopt

# An editable install can map subpackages to another tree: pick by the files of this schedopt.
_NEW = (Path(schedopt.__file__).parent / "mechanism" / "rounds.py").exists()
place_round = importlib.import_module("schedopt.mechanism.rounds" if _NEW
                                      else "schedopt.rounds").place_round
Topology = importlib.import_module("schedopt.mechanism.topology" if _NEW
                                   else "schedopt.topology").Topology

CASES = [(1_000, 1_000), (10_000, 10_000)]


def instance(jobs: int, gpus: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    per = gpus // 3
    topology = Topology.uniform({"v100": per, "p100": per, "k80": gpus - 2 * per},
                                {"v100": 8, "p100": 4, "k80": 8})
    scale = rng.choice([1, 2, 4, 8], jobs, p=[0.7, 0.1, 0.15, 0.05])
    X = rng.random((jobs, 3)) * (rng.random((jobs, 3)) > 0.3)
    X = X / np.maximum(X.sum(axis=1, keepdims=True), 1e-9) * 0.3
    received = rng.random((jobs, 3)) * 100 * (X > 0)
    return X, scale, topology, received


def measure() -> dict:
    out = {}
    for jobs, gpus in CASES:
        X, scale, topology, received = instance(jobs, gpus)
        previous = place_round(X, scale, topology, received, 1000.0).gpus
        for case, prev in (("fresh", None), ("extension", previous)):
            times = []
            for _ in range(5):
                start = time.perf_counter()
                place_round(X, scale, topology, received, 1000.0, prev)
                times.append(time.perf_counter() - start)
            out[f"{jobs}x{gpus} {case}"] = min(times)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--compare", metavar="DIR", help="another checkout to time side by side")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    ours = measure()
    if args.json:
        print(json.dumps(ours))
        return
    other = {}
    if args.compare:
        env = {**os.environ, "PYTHONPATH": args.compare}
        done = subprocess.run([sys.executable, __file__, "--json"], env=env, cwd=args.compare,
                              capture_output=True, text=True, check=True)
        other = json.loads(done.stdout)
    print("| jobs x GPUs, round | this checkout (s) |" + (" other (s) | other / this |" if other else ""))
    print("|---|---:|" + ("---:|---:|" if other else ""))
    for key, seconds in ours.items():
        row = f"| {key} | {seconds:.4f} |"
        if other:
            row += f" {other[key]:.4f} | {other[key] / seconds:.1f}x |"
        print(row)


if __name__ == "__main__":
    main()

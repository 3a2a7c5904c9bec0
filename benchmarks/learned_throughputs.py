"""Throughputs learned online against the whole co-location table, on the bundled co-location
trace (instances/colocation.json: 12 jobs of 5 types, Gavel's measured table, 4 V100 + 4 P100
+ 4 K80), both runs in this one process.

Run: python benchmarks/learned_throughputs.py [--hide 0.5 1.0] [--seeds 10]
                                              [--modes default gavel]
                                              [--policy max_min_fairness_packed]

For each mode, hidden share and seed: the average JCT of the run whose policy starts from the
table with that share of its pair measurements hidden (the seed picks which) and learns the
rest online (`SimulationConfig(learn_throughputs=True)`), over the run with the whole table;
and the estimate's mean relative error on the pair rates hidden at the start, at the first
re-solve and at the last. The acceptance line: with half of the pairs hidden, every learned
run's average JCT within 5% of the full-table run's.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from schedopt.instance import load_instance
from schedopt.simulation import SimulationConfig, simulate

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hide", type=float, nargs="+", default=[0.5, 1.0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--modes", nargs="+", default=["default", "gavel"])
    parser.add_argument("--policy", default="max_min_fairness_packed")
    args = parser.parse_args()
    trace = load_instance(ROOT / "instances" / "colocation.json")
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; {args.policy}\n")
    print("| mode | hidden | full-table JCT (h) | learned / full JCT: min | mean | max | "
          "within 5% | hidden-pair error, first -> last re-solve (mean) | run (s, mean) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for mode in args.modes:
        full = simulate(trace, args.policy, SimulationConfig(mode=mode)).summary["average_jct_s"]
        for hide in args.hide:
            ratios, first, last, wall = [], [], [], []
            for seed in range(args.seeds):
                start = time.perf_counter()
                config = SimulationConfig(mode=mode, learn_throughputs=True, hide_pairs=hide,
                                          seed=seed)
                result = simulate(trace, args.policy, config)
                wall.append(time.perf_counter() - start)
                ratios.append(result.summary["average_jct_s"] / full)
                first.append(result.learning["hidden_mre"].iloc[0])
                last.append(result.learning["hidden_mre"].iloc[-1])
            ratios = np.array(ratios)
            within = int((np.abs(ratios - 1) <= 0.05).sum())
            print(f"| {mode} | {hide:.0%} | {full / 3600:.2f} | {ratios.min():.4f} | "
                  f"{ratios.mean():.4f} | {ratios.max():.4f} | {within}/{len(ratios)} | "
                  f"{np.mean(first):.1%} -> {np.mean(last):.1%} | {np.mean(wall):.1f} |",
                  flush=True)


if __name__ == "__main__":
    main()

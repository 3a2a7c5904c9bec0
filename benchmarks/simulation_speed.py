"""Simulation speed: 1,000 jobs on 108 GPUs (36 each of v100/p100/k80) under max_min_fairness.

Run: python benchmarks/simulation_speed.py [--jobs 1000] [--rate 8] [--mode default gavel]
Prints simulated seconds per wall-clock second, re-solves, and time spent in the policy, for
each mode, measured in this one process. The trace is drawn with the Gavel-like generator from
the bundled performance model (instances/large-2000.json), so ../shared is not needed.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from schedopt.instance import instance_to_dict, load_instance
from schedopt.simulation import SimulationConfig, simulate
from schedopt.traces import gavel_cluster, synthetic_trace

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=8.0, help="arrivals, jobs/hour")
    parser.add_argument("--policy", default="max_min_fairness")
    parser.add_argument("--mode", nargs="+", default=["default", "gavel"])
    args = parser.parse_args()
    performance = instance_to_dict(load_instance(ROOT / "instances" / "large-2000.json"))["performance"]
    cluster = gavel_cluster({"v100": 36, "p100": 36, "k80": 36})
    trace = synthetic_trace(performance, cluster, args.jobs, args.rate, seed=0, colocation=False)
    print(f"{'mode':<8} {'wall s':>8} {'simulated s':>12} {'sim s / wall s':>15} {'re-solves':>10} "
          f"{'policy s':>9} {'avg JCT h':>10}")
    for mode in args.mode:
        config = SimulationConfig.gavel_compatible() if mode == "gavel" else SimulationConfig()
        start = time.perf_counter()
        result = simulate(trace, args.policy, config)
        wall = time.perf_counter() - start
        s = result.summary
        solve_total = s["solve_seconds_mean"] * s["policy_solves"]
        print(f"{mode:<8} {wall:>8.1f} {s['makespan_s']:>12.0f} {s['makespan_s'] / wall:>15.0f} "
              f"{s['policy_solves']:>10} {solve_total:>9.1f} {s['average_jct_s'] / 3600:>10.2f}")


if __name__ == "__main__":
    main()

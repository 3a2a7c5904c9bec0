"""Simulation at scale: N jobs on G GPUs (a third each of v100/p100/k80) under max_min_fairness,
with a wall-time cap.

Run: python benchmarks/simulation_scale.py --jobs 100000 --gpus 2500 --rate 30 --cap 600
     [--profile] [--mode default]
Prints jobs done, simulated seconds, simulated seconds per wall-clock second, re-solves so far,
peak resident memory (MB, resource.getrusage) and the load average; with --profile, cProfile's
top 15 functions by cumulative time. A capped run stops at the first round boundary after --cap
wall seconds and reports the rate it reached (the time left extrapolates from it). The trace is
drawn at run time by the Gavel-like generator (schedopt.traces.synthetic_trace) from the bundled
performance model; nothing is written to disk.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import resource
import time
from pathlib import Path

from schedopt.instance import instance_to_dict, load_instance
from schedopt.simulation import SimulationConfig, simulate
from schedopt.traces import gavel_cluster, synthetic_trace

ROOT = Path(__file__).resolve().parents[1]


class WallCap(Exception):
    """The run reached its wall-time cap."""


class Meter:
    """A progress bar that records jobs done and simulated time, and stops the run at the cap."""

    def __init__(self, cap: float):
        self.cap, self.start, self.done, self.simulated = cap, time.perf_counter(), 0, 0.0
        self.first = None

    def update(self, n: int) -> None:
        self.done += n

    def simulated_time(self, t: float) -> None:
        if self.first is None:
            self.first = t
        self.simulated = t - self.first
        if time.perf_counter() - self.start > self.cap:
            raise WallCap

    def close(self) -> None:
        pass


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--gpus", type=int, default=2500, help="GPUs, split evenly over 3 types")
    parser.add_argument("--rate", type=float, default=30.0, help="arrivals, jobs/hour")
    parser.add_argument("--policy", default="max_min_fairness")
    parser.add_argument("--mode", default="default", choices=["default", "gavel"])
    parser.add_argument("--cap", type=float, default=600.0, help="wall seconds before stopping")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--profile", action="store_true", help="print cProfile's top 15")
    args = parser.parse_args()
    performance = instance_to_dict(load_instance(ROOT / "instances" / "large-2000.json"))["performance"]
    third = args.gpus // 3
    counts = {"v100": args.gpus - 2 * third, "p100": third, "k80": third}
    clock = time.perf_counter()
    trace = synthetic_trace(performance, gavel_cluster(counts), args.jobs, args.rate,
                            seed=args.seed, colocation=False)
    print(f"trace: {args.jobs} jobs, {args.gpus} GPUs ({counts}), {args.rate} jobs/h, "
          f"drawn in {time.perf_counter() - clock:.1f} s")
    config = SimulationConfig.gavel_compatible() if args.mode == "gavel" else SimulationConfig()
    meter = Meter(args.cap)
    loop = __import__(f"schedopt.simulation.{'gavel_mode' if args.mode == 'gavel' else 'rounds_loop'}",
                      fromlist=["progress_bar"])
    loop.progress_bar = lambda total, enabled: meter
    profiler = cProfile.Profile() if args.profile else None
    start = time.perf_counter()
    result, capped = None, False
    if profiler:
        profiler.enable()
    try:
        result = simulate(trace, args.policy, config, progress=True)
    except WallCap:
        capped = True
    if profiler:
        profiler.disable()
    wall = time.perf_counter() - start
    simulated = meter.simulated if capped else result.summary["makespan_s"]
    done = meter.done
    print(f"{'jobs':>7} {'done':>7} {'GPUs':>5} {'wall s':>7} {'simulated s':>12} "
          f"{'sim s/wall s':>12} {'peak MB':>8} {'load avg':>9} {'avg JCT h':>9} {'capped':>6}")
    jct = "-" if result is None else f"{result.summary['average_jct_s'] / 3600:.2f}"
    print(f"{args.jobs:>7} {done:>7} {args.gpus:>5} {wall:>7.1f} {simulated:>12.0f} "
          f"{simulated / wall:>12.0f} {peak_mb():>8.0f} {os.getloadavg()[0]:>9.2f} {jct:>9} "
          f"{'yes' if capped else 'no':>6}")
    if profiler:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(15)


if __name__ == "__main__":
    main()

"""Simulated JCT and makespan when some unconsolidated rates are unknown: left missing (the
simulator then runs a spread job at its consolidated rate) or predicted by
`schedopt.perf.spread.fill_unconsolidated`, each against the run with every rate measured.

Gavel's trace (`--trace`, default max_min_fairness.trace) on Gavel's 48-GPU cluster with
`--gpus-per-node` GPUs per server of every type (2: every 4- and 8-GPU job spans nodes), no
co-location; per seed, half of the measured unconsolidated rates of the trace's job types are
hidden (`hide_unconsolidated`). The three runs of a seed are made one after the other in this
process with the same policy and settings.

    python benchmarks/perf_spread_simulation.py --seeds 10 --gpus-per-node 2

Needs Gavel's files (../shared/trace-samples/gavel, or --trace and --throughputs).
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import numpy as np

from schedopt.perf import PerformanceModel
from schedopt.perf.spread import fill_unconsolidated
from schedopt.perf.study import hide_unconsolidated
from schedopt.simulation import SimulationConfig, simulate
from schedopt.traces.gavel_throughputs import gavel_cluster, read_gavel_trace

SAMPLES = Path(__file__).resolve().parents[2] / "shared" / "trace-samples" / "gavel"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", type=Path, default=SAMPLES / "max_min_fairness.trace")
    parser.add_argument("--throughputs", type=Path, default=SAMPLES / "simulation_throughputs.json")
    parser.add_argument("--policy", default="max_min_fairness")
    parser.add_argument("--gpus-per-node", type=int, default=2)
    parser.add_argument("--seeds", type=int, default=10)
    args = parser.parse_args()
    per_node = {g: args.gpus_per_node for g in ("v100", "p100", "k80")}
    trace = read_gavel_trace(args.trace, args.throughputs, gavel_cluster(None, per_node), colocation=False)
    model = PerformanceModel.from_performance(trace.performance)
    J = len(model.gpu_types)

    def run(unconsolidated: PerformanceModel) -> dict:
        performance = dataclasses.replace(trace.performance,
                                          unconsolidated=unconsolidated.to_performance().unconsolidated)
        return simulate(dataclasses.replace(trace, performance=performance), args.policy,
                        SimulationConfig()).summary

    measured = run(model)
    print(f"{len(trace.jobs)} jobs, {args.policy}, {args.gpus_per_node} GPUs per node; every rate "
          f"measured: average JCT {measured['average_jct_s']:.0f} s, makespan {measured['makespan_s']:.0f} s\n")
    print("| seed | rates hidden | JCT, missing / measured | JCT, predicted / measured | "
          "makespan, missing / measured | makespan, predicted / measured |")
    print("|---:|---:|---:|---:|---:|---:|")
    ratios = []
    for seed in range(args.seeds):
        keys = hide_unconsolidated(model, 0.5, seed)
        hidden = model.without_unconsolidated(keys)
        missing = run(hidden)
        predicted = run(fill_unconsolidated(hidden, model.values[:, :J], seed=seed))
        row = [missing["average_jct_s"], predicted["average_jct_s"], missing["makespan_s"], predicted["makespan_s"]]
        row = np.array(row) / np.array([measured["average_jct_s"]] * 2 + [measured["makespan_s"]] * 2)
        ratios.append(row)
        print(f"| {seed} | {len(keys)} | " + " | ".join(f"{x:.4f}" for x in row) + " |", flush=True)
    ratios = np.array(ratios)
    print("| mean | | " + " | ".join(f"{x:.4f}" for x in ratios.mean(axis=0)) + " |")
    print("| mean abs. deviation from 1 | | " + " | ".join(f"{x:.4f}" for x in np.abs(ratios - 1).mean(axis=0)) + " |")


if __name__ == "__main__":
    main()

"""Space sharing in simulation: max_min_fairness_packed against max_min_fairness on Gavel's
physical-cluster traces, both replayed by schedopt's simulator in this one process.

Run: python benchmarks/packed_simulation.py [--dir ../shared/trace-samples/gavel]
                                            [--modes gavel default]
                                            [--policies max_min_fairness max_min_fairness_packed]

Traces: max_min_fairness.trace (96 jobs) and minimize_makespan.trace (100 jobs) from Gavel's
repository (scheduler/traces/physical_cluster), with its measured throughput table
(simulation_throughputs.json: isolated and co-located steps/s, [0, 0] = cannot share), on
Gavel's physical cluster: 8 V100, 16 P100 and 24 K80 GPUs. `--mode gavel` is
`SimulationConfig.gavel_compatible()` (Gavel's simulator conventions: 360 s rounds, re-solve
at most every 1920 s, docs/gavel-simulator.md); `default` is schedopt's own mechanism.

Printed per trace and mode: average JCT and makespan (hours) of each policy, jobs finished,
wall seconds of the run, and each policy's average JCT over max_min_fairness's (below 1 for a
packed policy: space sharing helps). The numbers of
Gavel's own simulator on the same traces are measured with its code, separately.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from schedopt.simulation import SimulationConfig, simulate
from schedopt.traces import read_gavel_trace

ROOT = Path(__file__).resolve().parents[1]
TRACES = ("max_min_fairness.trace", "minimize_makespan.trace")


def run(trace, policy: str, mode: str) -> dict:
    config = SimulationConfig.gavel_compatible() if mode == "gavel" else SimulationConfig()
    start = time.perf_counter()
    result = simulate(trace, policy, config)
    return {"jct_h": result.summary["average_jct_s"] / 3600,
            "makespan_h": result.summary["makespan_s"] / 3600,
            "finished": int(result.jobs["completion_s"].notna().sum()),
            "wall_s": time.perf_counter() - start}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, default=ROOT.parent / "shared" / "trace-samples" / "gavel")
    parser.add_argument("--modes", nargs="+", default=["gavel", "default"])
    parser.add_argument("--policies", nargs="+",
                        default=["max_min_fairness", "max_min_fairness_packed"])
    args = parser.parse_args()
    table = args.dir / "simulation_throughputs.json"
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs\n")
    print("| trace | mode | policy | jobs finished | average JCT (h) | makespan (h) | run (s) | "
          "JCT / max_min_fairness |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for name in TRACES:
        trace = read_gavel_trace(args.dir / name, table)
        for mode in args.modes:
            base = None
            for policy in args.policies:
                row = run(trace, policy, mode)
                base = row["jct_h"] if policy == "max_min_fairness" else base
                ratio = f"{row['jct_h'] / base:.3f}" if base else "-"
                print(f"| {name} | {mode} | {policy} | {row['finished']}/{len(trace.jobs)} | "
                      f"{row['jct_h']:.3f} | {row['makespan_h']:.2f} | {row['wall_s']:.1f} | "
                      f"{ratio} |", flush=True)


if __name__ == "__main__":
    main()

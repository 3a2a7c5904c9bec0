"""The AlloX trace instances/allox-40.json: how it is drawn, and its numbers under every scheduler.

    python benchmarks/allox_40.py                       # scheduler table and alpha sweep
    python benchmarks/allox_40.py --seeds 20            # the same, averaged over 20 drawn traces
    python benchmarks/allox_40.py --write instances/allox-40.json   # regenerate the instance

The trace mimics the set-up of AlloX's own simulator (Le et al., EuroSys'20: 40 jobs on 4 GPUs +
8 CPU machines), drawn with numpy default_rng(SEED):
- 4 K80 GPUs (one node) and 8 CPU machines (c0..c7, 32 cores each);
- 40 jobs of 4 users, drawn with probability 0.4/0.3/0.2/0.1 (alice/bob/carol/dave);
- Poisson arrivals, mean gap 120 s, the first job at 0 s;
- time on one GPU 10^U(2.5, 3.5) s (316 s to 53 min); three kinds of job, 40/30/30%:
  `conv` (CNNs, GPU 6-12x faster than a CPU machine), `recurrent` (GPU 2-4x faster) and
  `small` (GPU 0.7-1.5x: about as fast on a CPU machine, sometimes faster);
- throughput on a K80 U(0.5, 4) steps/s; total_steps = round(GPU time x throughput); the CPU
  time in performance.cpu_time is the GPU time x the speed-up.
Floats are rounded to 6 significant digits, so the file is the same byte for byte on every run.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
INSTANCE = ROOT / "instances" / "allox-40.json"
SEED = 4
USERS = ("alice", "bob", "carol", "dave")
KINDS = {"conv": (6.0, 12.0), "recurrent": (2.0, 4.0), "small": (0.7, 1.5)}  # GPU speed-up range


def r6(x: float) -> float:
    return float(f"{float(x):.6g}")


def allox_40_document(seed: int = SEED, num_jobs: int = 40, num_gpus: int = 4,
                      num_cpus: int = 8, mean_gap_s: float = 120.0) -> dict:
    """The instance document (format schedopt-instance/1) described in the module docstring."""
    rng = np.random.default_rng(seed)
    users = rng.choice(len(USERS), num_jobs, p=[0.4, 0.3, 0.2, 0.1])
    kinds = rng.choice(len(KINDS), num_jobs, p=[0.4, 0.3, 0.3])
    gaps = rng.exponential(mean_gap_s, num_jobs)
    arrival = np.concatenate([[0.0], np.cumsum(gaps[1:])])
    gpu_time = 10.0 ** rng.uniform(2.5, 3.5, num_jobs)
    low, high = np.array(list(KINDS.values())).T
    speedup = rng.uniform(low[kinds], high[kinds])
    throughput = rng.uniform(0.5, 4.0, num_jobs)
    jobs, cpu_time = [], {}
    for m in range(num_jobs):
        thr = r6(throughput[m])
        steps = float(round(gpu_time[m] * thr))
        job_id = f"j{m:02d}"
        jobs.append({"id": job_id, "type": list(KINDS)[kinds[m]], "arrival_time": r6(arrival[m]),
                     "total_steps": steps, "user": USERS[users[m]], "throughput": {"k80": thr}})
        cpu_time[job_id] = r6(steps / thr * speedup[m])
    return {
        "format": "schedopt-instance/1",
        "name": f"allox-{num_jobs}: AlloX-like trace, {num_gpus} K80 + {num_cpus} CPU machines "
                f"(benchmarks/allox_40.py, seed {seed})",
        "cluster": {"gpu_types": {"k80": {"count": num_gpus, "gpus_per_node": num_gpus,
                                          "cost_per_hour": 0.45}},
                    "cpu_machines": [{"id": f"c{i}", "cores": 32} for i in range(num_cpus)]},
        "jobs": jobs,
        "performance": {"cpu_time": cpu_time},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", type=Path, default=None, metavar="PATH",
                        help="write the instance document to PATH instead of measuring")
    parser.add_argument("--alphas", default="0.25,0.5,0.75,1")
    parser.add_argument("--seeds", type=int, default=0, metavar="N",
                        help="instead of the bundled trace, average over traces drawn with "
                             "seeds 0..N-1")
    args = parser.parse_args()
    if args.write is not None:
        args.write.write_text(json.dumps(allox_40_document(), indent=2) + "\n")
        return

    from schedopt.instance import load_instance
    from schedopt.simulation.allox_sim import SCHEDULERS, alpha_sweep

    alphas = [float(a) for a in args.alphas.split(",")]
    if args.seeds:
        averaged(args.seeds, alphas)
        return
    instance = load_instance(INSTANCE)
    run(instance, "allox", 1.0)  # warm-up: imports, so the wall times below compare
    print("| scheduler | average JCT (s) | p90 JCT (s) | makespan (s) | Jain (shares) | Jain (users' avg JCT) "
          "| GPU util. | CPU util. | wall s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for scheduler, alpha in [("allox", 1.0), ("allox", 0.5), *((s, 1.0) for s in SCHEDULERS[1:])]:
        began = time.perf_counter()
        s = run(instance, scheduler, alpha).summary
        wall = time.perf_counter() - began
        name = f"allox (alpha={alpha:g})" if scheduler == "allox" else scheduler
        print(f"| {name} | {s['average_jct_s']:.0f} | {s['p90_jct_s']:.0f} | {s['makespan_s']:.0f} "
              f"| {s['jain_share']:.3f} | {s['jain_user_jct']:.3f} | {s['utilization_gpu']:.2f} | "
              f"{s['utilization_cpu']:.2f} | {wall:.2f} |")
    sweep = alpha_sweep(instance, alphas)
    print()
    print(sweep.to_string(index=False, float_format=lambda x: f"{x:.4g}"))


def run(instance, policy: str, alpha: float):
    """One simulation of `policy` (alpha: allox's fairness knob) through the engine."""
    from schedopt.simulation import SimulationConfig, simulate

    options = {"alpha": alpha} if policy == "allox" else {}
    return simulate(instance, policy, SimulationConfig(policy_options=options))


def averaged(seeds: int, alphas: list[float]) -> None:
    """Mean over traces drawn with seeds 0..seeds-1 of average JCT and Jain (shares) per
    scheduler and alpha, and how often a smaller alpha gave fairer shares than alpha = 1."""
    import pandas as pd

    from schedopt.instance import parse_instance
    from schedopt.simulation.allox_sim import SCHEDULERS

    runs = [("allox", a) for a in alphas] + [(s, 1.0) for s in SCHEDULERS[1:]]
    rows = []
    for seed in range(seeds):
        instance = parse_instance(allox_40_document(seed))
        for scheduler, alpha in runs:
            s = run(instance, scheduler, alpha).summary
            rows.append({"seed": seed, "run": f"allox alpha={alpha:g}" if scheduler == "allox"
                         else scheduler, "average_jct_s": s["average_jct_s"],
                         "jain_share": s["jain_share"], "jain_user_jct": s["jain_user_jct"]})
    frame = pd.DataFrame(rows)
    table = frame.groupby("run", sort=False)[["average_jct_s", "jain_share", "jain_user_jct"]].mean()
    fairer = frame.pivot(index="seed", columns="run", values="jain_share")
    table["fairer_than_alpha_1"] = [(fairer[run] > fairer["allox alpha=1"]).mean()
                                    for run in table.index]
    print(f"mean over {seeds} traces (seeds 0..{seeds - 1}):")
    print(table.to_string(float_format=lambda x: f"{x:.4g}"))


if __name__ == "__main__":
    main()

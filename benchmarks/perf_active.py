"""Active measurement: how many isolated throughput measurements does max-min fairness need
before the allocation made from the completed matrix is as fair as the one made from the
full matrix?

Truth: Gavel's measured isolated throughputs (83 job types x v100/p100/k80,
../shared/trace-samples/gavel/simulation_throughputs.json), one job per job type (scale factor
from the label), `--gpus` GPUs of each type. Start: each job type measured on one GPU type drawn
at random (cells measured at 0 steps/s, a job that cannot run there, are known from the start).
Then, step by step, `--step` more cells are measured, chosen by each strategy of
`schedopt.perf.active.suggest` (random, uncertainty, maxmin), the matrix is completed
(`schedopt.perf.complete`, low-rank with bootstrap uncertainty), Gavel's max-min fairness
allocates from the completed matrix, and its level is evaluated under the *true* matrix,
relative to the level of the allocation made from the full matrix. Reported: measurements
needed to first reach `--target` (default 95%) of that level, per strategy and seed, and the
ratio random / strategy (> 1: fewer measurements than random sampling).

    nice -n 5 python benchmarks/perf_active.py --seeds 3
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from schedopt.perf import gavel_model
from schedopt.perf.active import decision_rows, measurement_curve

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT.parent / "shared" / "trace-samples" / "gavel" / "simulation_throughputs.json"


def run(truth, strategy: str, seed: int, gpus: float, step: int, target: float, ensemble: int) -> dict:
    """One trajectory (`measurement_curve`) and the measurements made when it first reached
    the target (None if it never did)."""
    curve = measurement_curve(truth, strategy, seed=seed, capacity=np.full(len(truth.gpu_types), gpus),
                              step=step, target=target, ensemble=ensemble)
    return {"reached": next((m for m, level in curve if level >= target), None), "history": curve}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--gpus", type=float, default=36.0, help="GPUs per type")
    parser.add_argument("--step", type=int, default=6, help="measurements per step")
    parser.add_argument("--target", type=float, default=0.95)
    parser.add_argument("--ensemble", type=int, default=4)
    parser.add_argument("--strategies", default="random,uncertainty,maxmin")
    args = parser.parse_args()
    if not TABLE.exists():
        raise SystemExit(f"{TABLE} not found (Gavel's table is needed for this benchmark)")
    truth = gavel_model(TABLE, colocation=False)
    strategies = args.strategies.split(",")
    print(f"{len(decision_rows(truth))} job types, {args.gpus:g} GPUs per type, {args.step} "
          f"measurements per step, target {100 * args.target:.0f}% of the full-matrix level")
    print(f"| seed | {' | '.join(strategies)} | " + " | ".join(f"random / {s}" for s in strategies[1:])
          + " | seconds |")
    print("|---" * (2 + 2 * len(strategies) - 1) + "|")
    totals = {s: [] for s in strategies}
    for seed in range(args.seeds):
        start = time.perf_counter()
        got = {s: run(truth, s, seed, args.gpus, args.step, args.target, args.ensemble)["reached"]
               for s in strategies}
        for s in strategies:
            totals[s].append(got[s])
        ratios = [f"{got['random'] / got[s]:.2f}" if got.get("random") and got[s] else "-"
                  for s in strategies[1:]]
        print(f"| {seed} | " + " | ".join(str(got[s]) for s in strategies) + " | " + " | ".join(ratios)
              + f" | {time.perf_counter() - start:.0f} |", flush=True)
    means = {s: np.mean([x for x in v if x is not None]) for s, v in totals.items()}
    print("| mean | " + " | ".join(f"{means[s]:.1f}" for s in strategies) + " | "
          + " | ".join(f"{means['random'] / means[s]:.2f}" if "random" in means else "-"
                       for s in strategies[1:]) + " | |")


if __name__ == "__main__":
    main()

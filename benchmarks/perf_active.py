"""Active measurement: how many isolated throughput measurements does max-min fairness need
before the allocation made from the completed matrix is as fair as the one made from the
full matrix?

Truth: Gavel's measured isolated throughputs (83 job types x v100/p100/k80,
../shared/trace-samples/gavel/simulation_throughputs.json), one job per job type (scale factor
from the label), `--gpus` GPUs of each type. Start: each job type measured on one GPU type drawn
at random (cells measured at 0 steps/s, a job that cannot run there, are known from the start).
Then, step by step, `--step` more cells are measured, chosen by each strategy of
`schedopt.perf.active.suggest` (random, uncertainty, maxmin), the matrix is completed (with
bootstrap uncertainty), Gavel's max-min fairness
allocates from the completed matrix, and its level is evaluated under the *true* matrix,
relative to the level of the allocation made from the full matrix. Reported: measurements
needed to first reach `--target` (default 95%) of that level, per strategy and seed, and the
ratio random / strategy (> 1: fewer measurements than random sampling).

    nice -n 5 python benchmarks/perf_active.py --seeds 3

The matrix is completed by `--method` (default ensemble: low-rank + side information, which
with one measurement per job type is far closer than low-rank alone: 37-40% against 135-153%
mean relative error on the 163 unknown cells at the start of seeds 0-2).
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


def run(truth, strategy: str, seed: int, gpus: float, step: int, target: float, ensemble: int,
        method: str) -> list[tuple[int, float]]:
    """One trajectory (`measurement_curve`), stopped when it first reaches the target."""
    return measurement_curve(truth, strategy, seed=seed, capacity=np.full(len(truth.gpu_types), gpus),
                             step=step, target=target, ensemble=ensemble, method=method)


def reached(curve, level: float):
    """Measurements made when the curve first reached `level` (None: never)."""
    return next((m for m, x in curve if x >= level), None)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="3", help="a count (seeds 0..N-1) or a comma list")
    parser.add_argument("--gpus", type=float, default=36.0, help="GPUs per type")
    parser.add_argument("--step", type=int, default=8, help="measurements per step")
    parser.add_argument("--target", type=float, default=0.95)
    parser.add_argument("--ensemble", type=int, default=3, help="bootstrap refits per completion")
    parser.add_argument("--method", default="ensemble", choices=["als", "ensemble"],
                        help="how the matrix is completed at each step")
    parser.add_argument("--strategies", default="random,uncertainty,maxmin")
    args = parser.parse_args()
    seeds = list(range(int(args.seeds))) if args.seeds.isdigit() else [int(x) for x in args.seeds.split(",")]
    if not TABLE.exists():
        raise SystemExit(f"{TABLE} not found (Gavel's table is needed for this benchmark)")
    truth = gavel_model(TABLE, colocation=False)
    strategies = args.strategies.split(",")
    print(f"{len(decision_rows(truth))} job types, {args.gpus:g} GPUs per type, {args.step} "
          f"measurements per step, completion: {args.method}; measurements made when the true "
          f"max-min level first reached 90% / {100 * args.target:.0f}% of the full-matrix level")
    print(f"| seed | {' | '.join(strategies)} | "
          + " | ".join(f"random / {s} at {100 * args.target:.0f}%" for s in strategies[1:]) + " | seconds |")
    print("|---" * (2 + 2 * len(strategies) - 1) + "|")
    counts = {s: [] for s in strategies}
    for seed in seeds:
        start = time.perf_counter()
        curves = {s: run(truth, s, seed, args.gpus, args.step, args.target, args.ensemble, args.method)
                  for s in strategies}
        got = {s: reached(c, args.target) for s, c in curves.items()}
        for s in strategies:
            counts[s].append(got[s])
        cells = [f"{reached(curves[s], 0.9)} / {got[s]}" for s in strategies]
        ratios = [f"{got['random'] / got[s]:.2f}" if got.get("random") and got[s] else "-"
                  for s in strategies[1:]]
        print(f"| {seed} | " + " | ".join(cells) + " | " + " | ".join(ratios)
              + f" | {time.perf_counter() - start:.0f} |", flush=True)
    means = {s: np.mean([x for x in v if x is not None]) for s, v in counts.items()}
    print("| mean | " + " | ".join(f"{means[s]:.1f}" for s in strategies) + " | "
          + " | ".join(f"{means['random'] / means[s]:.2f}" if "random" in means else "-"
                       for s in strategies[1:]) + " | |")


if __name__ == "__main__":
    main()

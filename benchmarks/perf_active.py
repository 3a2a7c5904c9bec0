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

from schedopt.perf import complete, gavel_model
from schedopt.perf.active import decision_rows, maxmin_allocation, maxmin_level, suggest

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT.parent / "shared" / "trace-samples" / "gavel" / "simulation_throughputs.json"


def run(truth, strategy: str, seed: int, gpus: float, step: int, target: float, ensemble: int) -> dict:
    """One trajectory: measurements made and the relative level after each step."""
    J = len(truth.gpu_types)
    rows = decision_rows(truth)
    s = truth.scale_factors[rows].astype(float)
    cap = np.full(J, gpus)
    T = truth.values[rows][:, :J]
    best = maxmin_level(T, maxmin_allocation(T, s, cap), s, cap)
    rng = np.random.default_rng(seed)
    positive = truth.values[:, :J] > 0
    start = np.zeros(truth.shape, dtype=bool)
    for r in range(truth.shape[0]):  # one positive cell per job type, and every known zero
        options = np.flatnonzero(positive[r])
        if options.size:
            start[r, rng.choice(options)] = True
    start[:, :J] |= ~positive
    known = start.copy()
    history = []
    while True:
        seen = truth.hide(~known)
        done = complete(seen, seed=seed, ensemble=ensemble)
        E = np.nan_to_num(done.model.values[rows][:, :J], nan=0.0)
        level = maxmin_level(T, maxmin_allocation(E, s, cap), s, cap) / best
        measured = int((known & ~start).sum())
        history.append((measured, level))
        if level >= target or not (~known[:, :J]).any():
            break
        picks = suggest(seen, step, strategy, capacity=cap, seed=seed, completed=done.model)
        for p in picks:
            known[truth.job_types.index(p.job_type), truth.gpu_types.index(p.gpu_type)] = True
    reached = next((m for m, lvl in history if lvl >= target), None)
    return {"reached": reached, "history": history}


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
    print(f"| mean | " + " | ".join(f"{means[s]:.1f}" for s in strategies) + " | "
          + " | ".join(f"{means['random'] / means[s]:.2f}" if "random" in means else "-"
                       for s in strategies[1:]) + " | |")


if __name__ == "__main__":
    main()

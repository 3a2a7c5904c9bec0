"""What predicting unconsolidated rates (`schedopt.perf.spread.fill_unconsolidated`) costs and
how close it gets as the number of multi-GPU job types grows.

A synthetic performance model, drawn from `--seed`: F families x 8 batch sizes x scale factors
1, 2, 4, 8, 16 on four GPU types; every multi-GPU job type's unconsolidated rate U follows
log(U / T) = -0.2 - 0.15 (log T - 1) - 0.1 log2(scale) plus 3% noise (faster steps lose more
when spread, as on Gavel's table). 30% of the unconsolidated rates are hidden
(`hide_unconsolidated`). Per size, side by side in one run: the GP (wall and CPU seconds, mean
relative error and 2-sd coverage on the hidden rates) and, for reference, a median ratio per
(scale factor, GPU type) and U = T. Above `spread.FIT_CELLS` / `spread.POSTERIOR_CELLS`
measured ratios the GP reads a seeded subset, which keeps its cost bounded.

    python benchmarks/perf_spread_scale.py --families 3,10,40
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from schedopt.perf.model import PerformanceModel
from schedopt.perf.spread import fill_unconsolidated
from schedopt.perf.study import hide_unconsolidated

GPUS = {"a": 4.0, "b": 2.0, "c": 1.0, "d": 0.5}


def synthetic(families: int, seed: int) -> PerformanceModel:
    rng = np.random.default_rng(seed)
    throughput, spread = {}, {}
    for f in range(families):
        speed = np.exp(rng.normal())
        for b in (4, 8, 16, 32, 64, 128, 256, 512):
            for s in (1, 2, 4, 8, 16):
                t = f"F{f} (batch size {b}) x{s}"
                throughput[t] = {g: float(speed * m * s * b ** 0.3) for g, m in GPUS.items()}
                if s > 1:
                    spread[t] = {g: x * float(np.exp(-0.2 - 0.15 * (np.log(x) - 1) - 0.1 * np.log2(s)
                                                     + 0.03 * rng.normal()))
                                 for g, x in throughput[t].items()}
    return PerformanceModel.from_section({"throughput": throughput, "unconsolidated": spread})


def median_ratio(model: PerformanceModel, hidden, keys) -> np.ndarray:
    """U of each hidden key as T times the median measured U / T of its (scale factor, GPU type)."""
    row = {t: r for r, t in enumerate(model.job_types)}

    def rate(t, g):
        return model.values[row[t], model.gpu_types.index(g)]

    seen = {}
    for t, r in hidden.unconsolidated.items():
        for g, u in r.items():
            seen.setdefault((model.scale_factors[row[t]], g), []).append(np.log(u / rate(t, g)))
    return np.array([rate(t, g) * np.exp(np.median(seen[(model.scale_factors[row[t]], g)])) for t, g in keys])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", default="3,10,40", help="sizes: families, comma-separated")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print("| families | job types | unconsolidated rates | hidden | GP wall s | GP CPU s | GP MRE | "
          "GP within 2 sd | median ratio MRE | U = T MRE |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for families in (int(x) for x in args.families.split(",")):
        model = synthetic(families, args.seed)
        keys = hide_unconsolidated(model, 0.3, args.seed)
        hidden = model.without_unconsolidated(keys)
        truth = np.array([model.unconsolidated[t][g] for t, g in keys])
        wall, cpu = time.perf_counter(), time.process_time()
        got = fill_unconsolidated(hidden, model.values[:, :len(GPUS)], seed=args.seed)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        estimate = np.array([got.unconsolidated[t][g] for t, g in keys])
        sd = np.array([got.unconsolidated_estimated[k] for k in keys])
        row = {t: r for r, t in enumerate(model.job_types)}
        consolidated = np.array([model.values[row[t], model.gpu_types.index(g)] for t, g in keys])

        def mre(x):
            return f"{100 * np.mean(np.abs(x / truth - 1)):.1f}%"

        covered = np.mean(np.abs(np.log(estimate / truth)) <= 2 * sd)
        rates = sum(len(r) for r in model.unconsolidated.values())
        print(f"| {families} | {len(model.job_types)} | {rates} | {len(keys)} | {wall:.2f} | {cpu:.2f} | "
              f"{mre(estimate)} | {100 * covered:.0f}% | {mre(median_ratio(model, hidden, keys))} | "
              f"{mre(consolidated)} |", flush=True)


if __name__ == "__main__":
    main()

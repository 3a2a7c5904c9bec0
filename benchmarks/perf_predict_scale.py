"""What the Gaussian-process member costs `schedopt.perf.predict` as the pair table grows.

A synthetic performance model, drawn from `--seed`: F families x B batch sizes of single-GPU
job types on two GPU types, every pair measured; a pair's slowdown is a job effect plus an
interaction of the two batch sizes whose sign depends on the two families (the structure the
GP models), plus 3% noise. 30% of the pairs are hidden (`hide_units`). Each size is predicted
twice in one run, side by side: the whole ensemble, and the ensemble without the `gp` member
(wall and CPU seconds, peak memory of the process so far, mean relative error on the hidden
pairs). Above `kernel.FIT_CELLS` / `kernel.POSTERIOR_CELLS` measured cells per GPU type the GP
reads a random subset of them, which keeps its cost bounded.

    python benchmarks/perf_predict_scale.py --sizes 3x6,8x8,12x8
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np

from schedopt.perf import hide_units, model_from_arrays
from schedopt.perf.predict import MEMBERS, predict
from schedopt.traces.performance import label


def synthetic(families: int, batches: int, seed: int):
    rng = np.random.default_rng(seed)
    types = [label(f"F{f} (batch size {2 ** b})", 1) for f in range(families) for b in range(3, 3 + batches)]
    R, J = len(types), 2
    iso = rng.normal(2.0, 0.5, (R, J))
    x = np.tile(np.linspace(0.0, 1.0, batches), families)
    fam = np.repeat(np.arange(families), batches)
    sign = rng.normal(size=(families, families, J))
    bend = sign[fam[:, None], fam[None, :], :] * (x[:, None, None] - 0.5) * (x[None, :, None] - 0.5) * 4
    slow = -0.3 - 0.2 * np.abs(bend + 0.5) + 0.03 * rng.standard_normal((R, R, J))
    pairs = iso[:, :, None] + np.minimum(slow.transpose(0, 2, 1), 0.0)
    return model_from_arrays(types, ("g0", "g1"), np.exp(iso), np.exp(pairs), types)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="3x6,8x8,12x8", help="families x batch sizes, comma-separated")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print("| job types | hidden pairs | members | wall s | CPU s | peak MB | MRE |")
    print("|---:|---:|---|---:|---:|---:|---:|")
    for size in args.sizes.split(","):
        families, batches = (int(v) for v in size.split("x"))
        model = synthetic(families, batches, args.seed)
        hidden = hide_units(model, 0.3, "pairs", args.seed)
        seen = model.hide(hidden)
        for name, members in (("all", MEMBERS), ("without gp", tuple(m for m in MEMBERS if m != "gp"))):
            wall, cpu = time.perf_counter(), time.process_time()
            got = predict(seen, seed=args.seed, ensemble=0, members=members)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            error = np.abs(got.model.values[hidden] - model.values[hidden]) / model.values[hidden]
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(f"| {len(model.job_types)} | {int(hidden.sum())} | {name} | {wall:.1f} | {cpu:.1f} | "
                  f"{peak:.0f} | {error.mean():.1%} |", flush=True)


if __name__ == "__main__":
    main()

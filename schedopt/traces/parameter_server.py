"""Synthetic parameter-server instances for the `smd` policies (made-up but plausible numbers).

`parameter_server_instance(num_jobs, num_machines, seed)` draws, with one
`numpy.random.default_rng(seed)`:
- machines from three templates, uniformly: 8 GPUs / 64 cores / 512 GB / 100 Gbit/s,
  4 GPUs / 32 cores / 256 GB / 50 Gbit/s, 2 GPUs / 32 cores / 128 GB / 40 Gbit/s;
- jobs from five model templates, uniformly (gradient GB, seconds per sample, batch per worker,
  samples per epoch): resnet50 (0.1, 0.004, 32, 1.28e6), vgg16 (0.55, 0.006, 32, 1.28e6),
  bert (0.44, 0.01, 16, 5e5), lstm (0.2, 0.002, 64, 1e6), cnn-small (0.01, 0.0005, 128, 6e4);
  samples per epoch scaled by U(0.05, 0.3), epochs uniform in 1..10;
- a worker holds 1 GPU, 4 cores, 16 GB and 2.5 / 5 / 10 Gbit/s (uniform); a PS 0 GPUs, 2 cores,
  2 x the gradient + 4 GB and 5 / 10 Gbit/s; at most `max_workers` workers and `max_ps` PSs.
Each job's `throughput` row (the format requires one; smd does not read it) is its steps/s with
one worker and one PS, 1 / tau(1, 1), on the single GPU type `gpu`.
"""

from __future__ import annotations

import numpy as np

from schedopt.instance import parse_instance
from schedopt.instance.model import FORMAT, Instance

MACHINES = (  # gpus, cpus, memory_gb, bandwidth_gbps
    (8, 64, 512, 100), (4, 32, 256, 50), (2, 32, 128, 40),
)
MODELS = {  # gradient GB, s per sample, batch per worker, samples per epoch
    "resnet50": (0.1, 0.004, 32, 1.28e6), "vgg16": (0.55, 0.006, 32, 1.28e6),
    "bert": (0.44, 0.01, 16, 5e5), "lstm": (0.2, 0.002, 64, 1e6),
    "cnn-small": (0.01, 0.0005, 128, 6e4),
}


def _r(x: float) -> float:
    return float(f"{float(x):.6g}")


def parameter_server_document(num_jobs: int, num_machines: int, seed: int = 0,
                              max_workers: int = 8, max_ps: int = 4) -> dict:
    """The schedopt-instance/1 document of `parameter_server_instance`."""
    rng = np.random.default_rng(seed)
    nodes = []
    for h in range(num_machines):
        gpus, cpus, memory, bandwidth = MACHINES[rng.integers(len(MACHINES))]
        nodes.append({"id": f"m{h:02d}", "gpu_type": "gpu", "gpus": gpus, "cpus": cpus,
                      "memory_gb": memory, "bandwidth_gbps": bandwidth})
    names = list(MODELS)
    jobs = []
    for i in range(num_jobs):
        model = names[rng.integers(len(names))]
        size, per_sample, batch, samples = MODELS[model]
        worker_bw = float(rng.choice([2.5, 5.0, 10.0]))
        ps_bw = float(rng.choice([5.0, 10.0]))
        spec = {
            "epochs": int(rng.integers(1, 11)),
            "samples_per_epoch": _r(round(samples * rng.uniform(0.05, 0.3))),
            "batch_per_worker": batch, "compute_s_per_sample": per_sample, "model_size_gb": size,
            "worker": {"gpus": 1, "cpus": 4, "memory_gb": 16, "bandwidth_gbps": worker_bw},
            "ps": {"gpus": 0, "cpus": 2, "memory_gb": _r(2 * size + 4), "bandwidth_gbps": ps_bw},
            "max_workers": max_workers, "max_ps": max_ps,
        }
        tau = batch * per_sample + 2 * 8 * size * max(1 / worker_bw, 1 / ps_bw)
        jobs.append({"id": f"j{i:03d}", "type": model, "throughput": {"gpu": _r(1 / tau)},
                     "parameter_server": spec})
    return {
        "format": FORMAT, "name": f"parameter-server synthetic (seed {seed})",
        "cluster": {"gpu_types": {"gpu": {"count": sum(n["gpus"] for n in nodes)}},
                    "nodes": nodes},
        "jobs": jobs,
    }


def parameter_server_instance(num_jobs: int, num_machines: int, seed: int = 0,
                              max_workers: int = 8, max_ps: int = 4) -> Instance:
    """A synthetic parameter-server instance (drawing rules in the module docstring)."""
    return parse_instance(parameter_server_document(num_jobs, num_machines, seed, max_workers,
                                                    max_ps), f"<parameter_server_instance {seed}>")

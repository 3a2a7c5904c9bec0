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

Knobs for clusters users bring (all keyword-only; without them the drawing above is unchanged,
byte for byte): `heterogeneity` h in [0, 1] (each machine is, with probability h, drawn resource
by resource from 2/4/8 GPUs, 16-64 cores, 64-512 GB, 10-100 Gbit/s, else a copy of one template
drawn once: h = 0 gives identical machines), `perturbation` (model parameters and task demands
times U(1 - x, 1 + x)) and `tightness` {resource: t or (low, high)} for "gpus", "cpus",
"memory_gb", "bandwidth_gbps". Tightness is measured on a *planted* placement of the minimum
configuration (one worker and one PS per job, placed by a balancing greedy): t = the fullest
machine's share of that resource. GPUs are set by changing machines' GPU counts (2/4/8) until
jobs / GPUs is about t; the other resources by scaling every task's demand of it. t <= 1
keeps the planted placement feasible, so every generated instance has a placement; near 1 the
resource binds from the first task on. `regime` names a preset (REGIMES): "loose", "nic",
"cpu", "memory", "mixed"; explicit knobs override the preset's.
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
                              max_workers: int = 8, max_ps: int = 4, *, regime: str | None = None,
                              heterogeneity: float | None = None, perturbation: float | None = None,
                              tightness: dict | None = None) -> dict:
    """The schedopt-instance/1 document of `parameter_server_instance`."""
    if regime is not None or heterogeneity is not None or perturbation is not None or tightness:
        return _knobbed_document(num_jobs, num_machines, seed, max_workers, max_ps, regime,
                                 heterogeneity, perturbation, tightness)
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
                              max_workers: int = 8, max_ps: int = 4, **knobs) -> Instance:
    """A synthetic parameter-server instance (drawing rules in the module docstring; `knobs`:
    regime, heterogeneity, perturbation, tightness)."""
    return parse_instance(parameter_server_document(num_jobs, num_machines, seed, max_workers,
                                                    max_ps, **knobs),
                          f"<parameter_server_instance {seed}>")


RESOURCE_NAMES = ("gpus", "cpus", "memory_gb", "bandwidth_gbps")
CHOICES = {  # per-resource draws of a heterogeneous machine
    "gpus": (2, 4, 8), "cpus": (16, 24, 32, 48, 64), "memory_gb": (64, 128, 192, 256, 384, 512),
    "bandwidth_gbps": (10, 25, 40, 50, 100),
}
REGIMES = {  # heterogeneity, perturbation, tightness (t or a (low, high) range drawn per instance)
    "loose": dict(heterogeneity=0.5, perturbation=0.3,
                  tightness={"gpus": (0.25, 0.4), "cpus": (0.15, 0.3), "memory_gb": (0.1, 0.25),
                             "bandwidth_gbps": (0.15, 0.3)}),
    "nic": dict(heterogeneity=0.5, perturbation=0.3,
                tightness={"gpus": (0.3, 0.5), "cpus": (0.2, 0.35), "memory_gb": (0.15, 0.3),
                           "bandwidth_gbps": (0.7, 0.96)}),
    "cpu": dict(heterogeneity=0.5, perturbation=0.3,
                tightness={"gpus": (0.3, 0.5), "cpus": (0.7, 0.96), "memory_gb": (0.15, 0.3),
                           "bandwidth_gbps": (0.2, 0.35)}),
    "memory": dict(heterogeneity=0.5, perturbation=0.3,
                   tightness={"gpus": (0.3, 0.5), "cpus": (0.2, 0.35), "memory_gb": (0.7, 0.96),
                              "bandwidth_gbps": (0.2, 0.35)}),
    "mixed": dict(heterogeneity=0.8, perturbation=0.3,
                  tightness={"gpus": (0.4, 0.7), "cpus": (0.5, 0.85), "memory_gb": (0.5, 0.85),
                             "bandwidth_gbps": (0.5, 0.85)}),
}


def _draw(rng, value) -> float:
    return float(rng.uniform(*value)) if isinstance(value, (tuple, list)) else float(value)


def _knobbed_document(num_jobs, num_machines, seed, max_workers, max_ps, regime, heterogeneity,
                      perturbation, tightness) -> dict:
    """parameter_server_document with knobs (module docstring)."""
    if regime is not None and regime not in REGIMES:
        raise ValueError(f"unknown regime {regime!r}; expected one of {', '.join(REGIMES)}")
    preset = REGIMES.get(regime, dict(heterogeneity=0.0, perturbation=0.0, tightness={}))
    h = preset["heterogeneity"] if heterogeneity is None else float(heterogeneity)
    x = preset["perturbation"] if perturbation is None else float(perturbation)
    want = dict(preset["tightness"])
    want.update(tightness or {})
    unknown = set(want) - set(RESOURCE_NAMES)
    if unknown:
        raise ValueError(f"tightness of unknown resource(s) {sorted(unknown)}; expected "
                         f"{', '.join(RESOURCE_NAMES)}")
    if not 0 <= h <= 1 or not 0 <= x < 1:
        raise ValueError("heterogeneity must be in [0, 1] and perturbation in [0, 1)")
    rng = np.random.default_rng(seed)
    target = {r: _draw(rng, v) for r, v in want.items()}
    if any(not 0 < t <= 1 for t in target.values()):
        raise ValueError(f"tightness must be in (0, 1], got {target}")
    H, n = num_machines, num_jobs
    base = np.array(MACHINES[rng.integers(len(MACHINES))], dtype=float)
    cap = np.empty((H, 4))
    for m in range(H):
        if rng.random() < h:
            cap[m] = [rng.choice(CHOICES[r]) for r in RESOURCE_NAMES]
        else:
            cap[m] = base
    if 8 * H < n:
        raise ValueError(f"{n} jobs need {n} GPUs for one worker each; {H} machines of at most "
                         f"8 GPUs cannot hold them")
    # GPUs: halve or double machines' GPU counts (2..8) until jobs / GPUs is about the target
    goal = max(n / target.get("gpus", n / cap[:, 0].sum()), n)
    for _ in range(10 * H):
        total = cap[:, 0].sum()
        if total < n or total < goal / 1.25:
            up = np.flatnonzero(cap[:, 0] < 8)
            if up.size == 0:  # every machine at 8 GPUs: as tight as GPUs go
                break
            cap[rng.choice(up), 0] *= 2
        elif total > goal * 1.25 and (cap[:, 0] > 2).any() and total - 2 >= n:
            down = np.flatnonzero(cap[:, 0] > 2)
            m = rng.choice(down)
            if total - cap[m, 0] / 2 < n:
                break
            cap[m, 0] /= 2
        else:
            break
    # jobs: templates with parameters and demands perturbed by U(1 - x, 1 + x)
    names = list(MODELS)
    jitter = lambda: float(rng.uniform(1 - x, 1 + x))  # noqa: E731
    specs, kinds = [], []
    for i in range(n):
        model = names[rng.integers(len(names))]
        size, per_sample, batch, samples = MODELS[model]
        size, per_sample = size * jitter(), per_sample * jitter()
        worker = np.array([1.0, 4 * jitter(), 16 * jitter(), rng.choice([2.5, 5.0, 10.0]) * jitter()])
        ps = np.array([0.0, 2 * jitter(), (2 * size + 4) * jitter(), rng.choice([5.0, 10.0]) * jitter()])
        specs.append(dict(epochs=int(rng.integers(1, 11)),
                          samples=round(samples * rng.uniform(0.05, 0.3) * jitter()),
                          batch=batch, per_sample=per_sample, size=size, worker=worker, ps=ps))
        kinds.append(model)
    a = np.array([s["worker"] for s in specs])
    b = np.array([s["ps"] for s in specs])
    load = _planted_load(a, b, cap, [RESOURCE_NAMES.index(r) for r in target if r != "gpus"] or [1, 2, 3])
    for r, t in target.items():
        k = RESOURCE_NAMES.index(r)
        if k == 0:
            continue
        fullest = float((load[:, k] / cap[:, k]).max())
        scale = t / fullest * (1 - 1e-5)  # below t after rounding to 6 digits
        a[:, k] *= scale
        b[:, k] *= scale
    nodes = [{"id": f"m{m:02d}", "gpu_type": "gpu", "gpus": int(cap[m, 0]), "cpus": int(cap[m, 1]),
              "memory_gb": int(cap[m, 2]), "bandwidth_gbps": int(cap[m, 3])} for m in range(H)]
    jobs = []
    for i, (s, model) in enumerate(zip(specs, kinds)):
        task = lambda d: {name: (int(v) if name == "gpus" else _r(v))  # noqa: E731
                          for name, v in zip(RESOURCE_NAMES, d)}
        spec = {"epochs": s["epochs"], "samples_per_epoch": _r(max(s["samples"], 1)),
                "batch_per_worker": s["batch"], "compute_s_per_sample": _r(s["per_sample"]),
                "model_size_gb": _r(s["size"]), "worker": task(a[i]), "ps": task(b[i]),
                "max_workers": max_workers, "max_ps": max_ps}
        tau = s["batch"] * s["per_sample"] + 2 * 8 * s["size"] * max(1 / a[i, 3], 1 / b[i, 3])
        jobs.append({"id": f"j{i:03d}", "type": model, "throughput": {"gpu": _r(1 / tau)},
                     "parameter_server": spec})
    label = regime or "custom"
    return {
        "format": FORMAT, "name": f"parameter-server synthetic ({label}, seed {seed})",
        "cluster": {"gpu_types": {"gpu": {"count": int(cap[:, 0].sum())}}, "nodes": nodes},
        "jobs": jobs,
    }


def _planted_load(a: np.ndarray, b: np.ndarray, cap: np.ndarray, balance: list[int]) -> np.ndarray:
    """(H, R) load of a placement of one worker (a) and one PS (b) per job: tasks largest first
    (by their summed shares of the `balance` resources), each on the machine where the largest
    share of a `balance` resource after it is smallest; workers only where a GPU is free."""
    load = np.zeros_like(cap)
    tasks = [(d, d[0] > 0) for d in np.concatenate([a, b])]
    size = [float((d[balance] / cap[:, balance].sum(axis=0)).sum()) for d, _ in tasks]
    for t in np.argsort(size, kind="stable")[::-1]:
        d, gpu = tasks[t]
        after = ((load[:, balance] + d[balance]) / cap[:, balance]).max(axis=1)
        if gpu:
            after = np.where(load[:, 0] + d[0] <= cap[:, 0], after, np.inf)
        load[int(np.argmin(after))] += d
    return load

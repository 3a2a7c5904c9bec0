"""Hypothesis drawing shared by the SMD tests: small parameter-server instances, hand-ranged or
from the generator's regimes (test helper)."""

from __future__ import annotations

from hypothesis import strategies as st

from schedopt.instance import parse_instance
from schedopt.instance.model import Instance


@st.composite
def ps_instances(draw, max_jobs: int = 6, max_machines: int = 4, max_workers: int = 8,
                 max_ps: int = 8, tight: bool = False) -> Instance:
    """An instance of 1..max_jobs parameter-server jobs on 1..max_machines machines.

    tight: machines of 1-4 GPUs, 8-16 cores and 25-50 Gbit/s, so that packing binds;
    else machines like real ones (2/4/8 GPUs, 16-64 cores, 25-100 Gbit/s). Tasks ask for
    1 GPU per worker, none per PS, and small CPU, memory and bandwidth amounts."""
    H = draw(st.integers(1, max_machines))
    n = draw(st.integers(1, max_jobs))
    nodes = []
    for h in range(H):
        if tight:
            gpus, cpus = draw(st.integers(1, 4)), draw(st.integers(8, 16))
            memory, bandwidth = draw(st.integers(16, 64)), draw(st.integers(25, 50))
        else:
            gpus, cpus, memory, bandwidth = draw(st.sampled_from(
                [(8, 64, 512, 100), (4, 32, 256, 50), (2, 16, 128, 25)]))
        nodes.append({"id": f"m{h}", "gpu_type": "g", "gpus": gpus, "cpus": cpus,
                      "memory_gb": memory, "bandwidth_gbps": bandwidth})
    jobs = []
    for i in range(n):
        spec = {
            "epochs": draw(st.integers(1, 5)),
            "samples_per_epoch": draw(st.integers(1_000, 100_000)),
            "batch_per_worker": draw(st.sampled_from([16, 32, 64])),
            "compute_s_per_sample": draw(st.sampled_from([1e-4, 5e-4, 2e-3, 1e-2])),
            "model_size_gb": draw(st.sampled_from([0.01, 0.05, 0.1, 0.3, 0.5])),
            "worker": {"gpus": 1, "cpus": draw(st.sampled_from([1, 2, 4, 8])),
                       "memory_gb": draw(st.sampled_from([2, 8, 16])),
                       "bandwidth_gbps": draw(st.sampled_from([2.5, 5, 10, 25]))},
            "ps": {"gpus": 0, "cpus": draw(st.sampled_from([1, 2, 4])),
                   "memory_gb": draw(st.sampled_from([2, 4, 8, 16])),
                   "bandwidth_gbps": draw(st.sampled_from([2.5, 5, 10, 25]))},
            "max_workers": draw(st.integers(1, max_workers)),
            "max_ps": draw(st.integers(1, max_ps)),
        }
        jobs.append({"id": f"j{i}", "throughput": {"g": 1.0}, "parameter_server": spec})
    doc = {"format": "schedopt-instance/1",
           "cluster": {"gpu_types": {"g": {"count": sum(nd["gpus"] for nd in nodes)}},
                       "nodes": nodes},
           "jobs": jobs}
    return parse_instance(doc)


@st.composite
def regime_instances(draw, max_jobs: int = 10, max_machines: int = 4,
                     regimes: tuple[str, ...] | None = None) -> Instance:
    """An instance of `traces.parameter_server` in a drawn regime (loose, nic, cpu, memory,
    mixed: which resources bind, how alike the machines are), with 2..max_jobs jobs on
    1..max_machines machines (at least jobs / 8, so one worker per job has a GPU) and a drawn
    seed; every such instance has a placement (the generator plants one)."""
    from schedopt.traces.parameter_server import REGIMES, parameter_server_instance

    regime = draw(st.sampled_from(regimes or tuple(REGIMES)))
    n = draw(st.integers(2, max_jobs))
    H = draw(st.integers(max(1, -(-n // 8)), max(max_machines, -(-n // 8))))
    seed = draw(st.integers(0, 2**31 - 1))
    return parameter_server_instance(n, H, seed=seed, max_workers=draw(st.integers(1, 6)),
                                     max_ps=draw(st.integers(1, 4)), regime=regime)


def benchmark_instance(regime: str, index: int):
    """The index-th instance of a regime as benchmarks/smd_regimes.py draws it (jobs uniform in
    16..60, machines in max(6, jobs / 4)..20, generator seed = index), as an SmdProblem."""
    import math

    import numpy as np

    from schedopt.policies.smd.model import SmdProblem
    from schedopt.traces.parameter_server import parameter_server_document

    rng = np.random.default_rng(2021 + index)
    jobs = int(rng.integers(16, 61))
    machines = int(rng.integers(max(6, math.ceil(jobs / 4)), 21))
    doc = parameter_server_document(jobs, machines, seed=index, regime=regime)
    return SmdProblem.from_instance(parse_instance(doc))

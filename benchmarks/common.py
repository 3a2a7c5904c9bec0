"""Shared set-up for the benchmarks: seeded Gavel-like instances and a wall-clock timer."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from schedopt import ThroughputProblem  # the package's export, in older checkouts too
from schedopt.traces import gavel_cluster, load_performance, synthetic_trace

ROOT = Path(__file__).resolve().parents[1]


def random_problem(num_jobs: int, num_types: int = 3, seed: int = 0) -> ThroughputProblem:
    """Jobs with throughputs 0.2-5 steps/s per type, scale factors 1/2/4/8 drawn with Gavel's
    probabilities (0.7/0.1/0.15/0.05), capacity num_jobs/4 GPUs per type (contended),
    remaining steps 1e4-1e6 and up to an hour since arrival."""
    rng = np.random.default_rng(seed)
    return ThroughputProblem.from_arrays(
        rng.uniform(0.2, 5.0, (num_jobs, num_types)),
        rng.choice([1, 2, 4, 8], num_jobs, p=[0.7, 0.1, 0.15, 0.05]),
        np.ones(num_jobs),
        np.full(num_types, max(8.0, num_jobs / 4)),
        remaining_steps=rng.uniform(1e4, 1e6, num_jobs),
        time_since_arrival=rng.uniform(0, 3600, num_jobs),
        cost_per_hour=np.linspace(2.5, 0.5, num_types),
    )


def gavel_like(num_jobs: int, gpus_per_type: int, seed: int = 0) -> ThroughputProblem:
    """Jobs drawn like Gavel's generator over the 83 job types (model x batch size x scale
    factor) of instances/large-2000.json (Gavel's measured throughputs), all arrived, on
    `gpus_per_type` GPUs of each of v100/p100/k80."""
    perf = load_performance(ROOT / "instances" / "large-2000.json", ["v100", "p100", "k80"],
                            colocation=False)
    cluster = gavel_cluster(dict.fromkeys(("v100", "p100", "k80"), gpus_per_type))
    return ThroughputProblem.from_instance(synthetic_trace(perf, cluster, num_jobs, 0, seed))


def best_of(repeats: int, fn):
    """(min wall seconds over `repeats` calls, last return value)."""
    best, value = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - start)
    return best, value

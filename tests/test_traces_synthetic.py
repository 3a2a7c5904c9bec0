"""Synthetic traces drawn like Gavel's generator: determinism and the distributions' statistics."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from schedopt.errors import SchedoptError
from schedopt.instance import instance_to_dict
from schedopt.traces import gavel_cluster, gavel_performance, synthetic_trace

SHARED = Path(__file__).resolve().parents[2] / "shared"
TABLE = SHARED / "trace-samples" / "gavel" / "simulation_throughputs.json"
pytestmark = pytest.mark.skipif(not TABLE.exists(), reason="../shared/trace-samples not present")
N, RATE = 2000, 30.0  # jobs, jobs/hour


@pytest.fixture(scope="module")
def perf():
    return gavel_performance(TABLE)


@pytest.fixture(scope="module")
def big(perf):
    return synthetic_trace(perf, gavel_cluster(), N, RATE, seed=7, colocation=False)


def durations(instance) -> np.ndarray:
    """Seconds each job runs alone on v100 (the reference type)."""
    return np.array([j.total_steps / j.throughput["v100"] for j in instance.jobs])


def test_same_seed_same_trace_other_seed_other_trace(perf):
    def doc(seed):
        return instance_to_dict(synthetic_trace(perf, gavel_cluster(), 50, 10.0, seed=seed))

    assert doc(3) == doc(3)
    assert doc(3)["jobs"] != doc(4)["jobs"]


def test_poisson_arrivals_at_the_rate(big):
    arrivals = np.array([j.arrival_time for j in big.jobs])
    assert arrivals[0] == 0.0 and np.all(np.diff(arrivals) >= 0)
    gaps = np.diff(arrivals)
    assert gaps.mean() == pytest.approx(3600 / RATE, rel=4 / math.sqrt(len(gaps)))  # 4 sigma
    assert np.std(gaps) == pytest.approx(3600 / RATE, rel=0.15)  # exponential: std = mean


def test_scale_factor_frequencies(big):
    sf = np.array([j.scale_factor for j in big.jobs])
    for s, p in zip((1, 2, 4, 8), (0.7, 0.1, 0.15, 0.05)):
        assert np.mean(sf == s) == pytest.approx(p, abs=4 * math.sqrt(p * (1 - p) / N))
    assert all(j.type.endswith(f" x{j.scale_factor}") == (j.scale_factor > 1) for j in big.jobs)


def test_durations_follow_gavels_mixture(big):
    d = durations(big)
    slack = 0.5 / min(j.throughput["v100"] for j in big.jobs)  # total_steps is rounded
    assert d.min() >= 60 * 10**1.5 - slack and d.max() <= 60 * 10**4 + slack
    long = np.mean(d > 60 * 10**3)  # only the 0.2 branch (60 * 10^U(3,4)) exceeds 60000 s
    assert long == pytest.approx(0.2, abs=4 * math.sqrt(0.2 * 0.8 / N))


def test_job_types_uniform_over_the_26_templates(big):
    singles = [j.type for j in big.jobs if j.scale_factor == 1]
    counts = np.unique(singles, return_counts=True)[1]
    assert len(counts) == 26
    expected = len(singles) / 26
    assert counts.min() > expected / 2 and counts.max() < expected * 2


def test_single_gpu_rate_zero_and_deadlines(perf):
    inst = synthetic_trace(perf, gavel_cluster(), 200, 0.0, seed=1, single_gpu=True, deadline_factor=1.5)
    assert {j.scale_factor for j in inst.jobs} == {1}
    assert {j.arrival_time for j in inst.jobs} == {0.0}
    for job, duration in zip(inst.jobs, durations(inst)):
        assert job.deadline == pytest.approx(1.5 * duration, abs=1.5 * 0.5 / job.throughput["v100"])
    assert all(j.weight == 1.0 for j in inst.jobs)


def test_a_cluster_too_small_for_eight_gpu_jobs_is_a_clear_error(perf):
    small = gavel_cluster({"v100": 4, "p100": 4, "k80": 4})
    with pytest.raises(SchedoptError, match="no job type .* runs on 8 GPU"):
        synthetic_trace(perf, small, 10, 1.0)
    assert len(synthetic_trace(perf, small, 10, 1.0, single_gpu=True).jobs) == 10

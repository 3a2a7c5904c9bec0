"""schedopt.gavel: Gavel's argument shapes in, Gavel's allocation dict out, same optima."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import gavel_reference as ref
from schedopt.errors import PolicyError
from schedopt.core.problem import ThroughputProblem
from schedopt.gavel import get_allocation, get_policy

TYPES = ["k80", "p100", "v100"]


@functools.total_ordering
class PairLikeId:
    """A job id that is not a string, like Gavel's JobIdPair (sortable, hashable)."""

    def __init__(self, n):
        self.n = n

    def __eq__(self, other):
        return self.n == other.n

    def __lt__(self, other):
        return self.n < other.n

    def __hash__(self):
        return hash(self.n)

    def __str__(self):
        return f"job{self.n}"


def gavel_inputs(seed: int, num_jobs: int = 8):
    rng = np.random.default_rng(seed)
    ids = [PairLikeId(n) for n in range(num_jobs)]
    T = rng.uniform(0.2, 5.0, (num_jobs, 3))
    throughputs = {job: dict(zip(TYPES, row)) for job, row in zip(ids, T)}
    scale_factors = {job: int(s) for job, s in zip(ids, rng.choice([1, 2], num_jobs))}
    weights = {job: float(w) for job, w in zip(ids, rng.choice([1.0, 2.0], num_jobs))}
    remaining = {job: float(r) for job, r in zip(ids, rng.uniform(1e4, 1e6, num_jobs))}
    cluster = {"k80": 4, "p100": 3, "v100": 2}
    return ids, T, throughputs, scale_factors, weights, remaining, cluster


def as_matrix(allocation, ids):
    return np.array([[allocation[job][t] for t in TYPES] for job in ids])


@pytest.mark.parametrize("seed", range(5))
def test_max_min_fairness_perf_matches_the_reference_optimum(seed):
    ids, T, throughputs, sf, w, _, cluster = gavel_inputs(seed)
    allocation = get_allocation("max_min_fairness_perf", throughputs, sf, w, cluster)
    assert set(allocation) == set(ids) and all(set(a) == set(TYPES) for a in allocation.values())
    X = as_matrix(allocation, ids)
    p = ThroughputProblem.from_arrays(T, [sf[j] for j in ids], [w[j] for j in ids],
                                      [cluster[t] for t in TYPES])
    ref.assert_base_constraints(p, X)
    expected = ref.max_min_fairness(p).value
    s = np.array([sf[j] for j in ids])
    weights = np.array([w[j] for j in ids])
    got = np.min(s * (T * X).sum(1) / (weights * ref.equal_share_throughput(T, p.capacity)))
    assert got == pytest.approx(expected, rel=1e-5)


def test_min_total_duration_perf_takes_gavel_positional_arguments():
    ids, T, throughputs, sf, _, remaining, cluster = gavel_inputs(7)
    allocation = get_policy("min_total_duration_perf").get_allocation(throughputs, sf, remaining, cluster)
    X = as_matrix(allocation, ids)
    p = ThroughputProblem.from_arrays(T, [sf[j] for j in ids], None, [cluster[t] for t in TYPES],
                                      remaining_steps=[remaining[j] for j in ids])
    makespan = max(remaining[j] / (T[m] @ X[m]) for m, j in enumerate(ids))
    assert makespan == pytest.approx(ref.min_makespan(p).value, rel=1e-5)


def test_finish_time_fairness_object_credits_isolated_time_across_calls():
    ids, T, throughputs, sf, w, remaining, cluster = gavel_inputs(3, num_jobs=4)
    policy = get_policy("finish_time_fairness_perf")
    since = {job: 0.0 for job in ids}
    policy.get_allocation(throughputs, sf, w, since, remaining, cluster)
    assert policy._isolated_time == {}
    later = {job: r - 1000.0 for job, r in remaining.items()}
    policy.get_allocation(throughputs, sf, w, {job: 600.0 for job in ids}, later, cluster)
    p = ThroughputProblem.from_arrays(T, [sf[j] for j in ids], None, [cluster[t] for t in TYPES])
    iso = (T * ref.isolated_share(p.capacity, p.scale_factor)).sum(1)
    for m, job in enumerate(ids):  # Gavel: cumulative += (steps before - steps now) / iso thr
        assert policy._isolated_time[job] == pytest.approx(1000.0 / iso[m], rel=1e-12)


def test_max_sum_throughput_normalized_by_cost_perf_slos_names_no_job_when_feasible():
    ids, T, throughputs, sf, _, remaining, cluster = gavel_inputs(11)
    costs = {"k80": 0.45, "p100": 1.46, "v100": 2.48}
    slos = {ids[0]: 1e9}
    allocation = get_policy("max_sum_throughput_normalized_by_cost_perf_SLOs").get_allocation(
        throughputs, sf, cluster, costs, slos, remaining)
    X = as_matrix(allocation, ids)
    p = ThroughputProblem.from_arrays(T, [sf[j] for j in ids], None, [cluster[t] for t in TYPES],
                                      cost_per_hour=[costs[t] for t in TYPES])
    value = float((T / p.cost_per_hour * X).sum())
    assert value == pytest.approx(ref.min_cost(p, slos=False).value, rel=1e-5)


def test_empty_throughputs_return_none_like_gavel():
    assert get_policy("max_min_fairness_perf").get_allocation({}, {}, {}, {"v100": 1}) is None


def test_unknown_gavel_policy_and_wrong_arguments_are_clear_errors():
    with pytest.raises(PolicyError, match="unknown Gavel policy"):
        get_policy("max_min_fairness_perf_typo")
    with pytest.raises(TypeError):
        get_policy("isolated").get_allocation({"a": {"v100": 1.0}}, {"a": 1}, {"v100": 1}, "extra")

"""max_min_fairness at cluster scale: 2,000 jobs on 3 GPU types with HiGHS."""

from __future__ import annotations

import numpy as np

import gavel_reference as ref
from schedopt.api import solve
from schedopt.backends import Status
from schedopt.core.problem import ThroughputProblem


def test_max_min_fairness_on_2000_jobs_and_3_types_satisfies_the_base_constraints():
    rng = np.random.default_rng(2024)
    M, J = 2000, 3
    T = rng.uniform(0.1, 10.0, (M, J))
    T[rng.random((M, J)) < 0.1] = 0.0
    T[np.arange(M), rng.integers(0, J, M)] = rng.uniform(0.1, 10.0, M)  # every job runs somewhere
    p = ThroughputProblem.from_arrays(T, scale_factor=rng.choice([1, 2, 4], M),
                                      weight=rng.choice([1, 2, 3], M), capacity=[512, 256, 128])
    result = solve(p, policy="max_min_fairness", solver="highs")
    assert result.status is Status.OPTIMAL
    ref.assert_base_constraints(p, result.X)
    eq = ref.equal_share_throughput(p.throughput, p.capacity)
    normalized = p.scale_factor * ref.thr(p.throughput, result.X) / (p.weight * eq)
    assert abs(result.objective - normalized.min()) <= 1e-12 * result.objective
    assert result.objective > 0
    assert abs(result.bound - result.objective) <= 1e-6 * result.objective
    # at least as fair as the equal share scaled to fit (a feasible point of the LP)
    fit = min(1.0, p.capacity.sum() / p.scale_factor.sum())
    X_eq = np.tile(p.capacity / p.capacity.sum() * fit, (M, 1)) * ref.runnable(p)
    ref.assert_base_constraints(p, X_eq)
    assert result.objective >= (p.scale_factor * ref.thr(p.throughput, X_eq) / (p.weight * eq)).min()

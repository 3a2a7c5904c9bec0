"""Shared by the Chronus tests (test helpers): hypothesis drawing of random lease-job arrays and
small lease problems, exhaustive enumeration of the optimum, a plan feasibility check."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import strategies as st

from schedopt.backends import Status
from schedopt.policies.chronus.lease_milp import LeaseProblem, plan_objective


def draw_lease_jobs(draw, num_jobs: int, num_leases: int, max_options: int, max_capacity: int):
    """(gpus, leases needed, option job, option value, option horizon, capacity per lease) for
    `num_jobs` jobs on `num_leases` leases: GPUs from {1, 2, 4}, 1..max_options options each,
    horizons up to num_leases + 1, capacity 0..max_capacity GPUs per lease."""
    n, H = num_jobs, num_leases
    gpus = draw(st.lists(st.sampled_from([1, 2, 4]), min_size=n, max_size=n))
    needed = draw(st.lists(st.integers(1, H), min_size=n, max_size=n))
    num_options = draw(st.lists(st.integers(1, max_options), min_size=n, max_size=n))
    job = np.repeat(np.arange(n), num_options).astype(np.int64)
    value = draw(st.lists(st.integers(1, 10), min_size=job.size, max_size=job.size))
    horizon = draw(st.lists(st.integers(1, H + 1), min_size=job.size, max_size=job.size))
    capacity = draw(st.lists(st.integers(0, max_capacity), min_size=H, max_size=H))
    return gpus, needed, job, value, horizon, capacity


def draw_options_and_capacity(draw, n: int, H: int):
    """(option job, value, horizon, capacity per lease, admitted) for `n` jobs on `H` leases of a
    windowed problem: 1-2 deadline options per job, values from {1, 2, 3.5}, horizons 1..H,
    capacity from {2, 4, 5} GPUs per lease, each job admitted or not."""
    option_job, value, horizon = [], [], []
    for j in range(n):
        for _ in range(draw(st.integers(1, 2))):
            option_job.append(j)
            value.append(draw(st.sampled_from([1.0, 2.0, 3.5])))
            horizon.append(draw(st.integers(1, H)))
    capacity = draw(st.lists(st.sampled_from([2, 4, 5]), min_size=H, max_size=H))
    admitted = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    return option_job, value, horizon, capacity, admitted


def enumerate_optimum(problem: LeaseProblem) -> float | None:
    """Best objective over every option choice per job and every lease subset, or None."""
    H = problem.num_leases
    per_job = []
    for j in range(problem.num_jobs):
        choices = [] if problem.admitted[j] else [(-1, ())]
        for k in np.flatnonzero(problem.option_job == j):
            for held in itertools.combinations(range(min(problem.option_horizon[k], H)),
                                               problem.leases_needed[j]):
                choices.append((int(k), held))
        per_job.append(choices)
    best = None
    for combo in itertools.product(*per_job):
        used = np.zeros(H, dtype=np.int64)
        for j, (_, held) in enumerate(combo):
            used[list(held)] += problem.gpus[j]
        if np.any(used > problem.capacity):
            continue
        chosen = np.array([k for k, _ in combo], dtype=np.int64)
        value = plan_objective(problem, chosen, {j: held for j, (_, held) in enumerate(combo)})
        best = value if best is None else max(best, value)
    return best


@st.composite
def lease_problems(draw):
    """(gpus, needed, job, value, horizon, capacity, admitted) of 1-4 jobs on 1-4 leases."""
    n = draw(st.integers(1, 4))
    H = draw(st.integers(1, 4))
    gpus, needed, job, value, horizon, capacity = draw_lease_jobs(draw, n, H, max_options=2,
                                                                  max_capacity=6)
    admitted = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    return gpus, needed, job, value, horizon, capacity, admitted


def assert_feasible(problem: LeaseProblem, plan) -> None:
    """Capacity per lease, horizons, lease counts, one option per scheduled job."""
    used = np.zeros(problem.num_leases, dtype=np.int64)
    for j in range(problem.num_jobs):
        k = plan.chosen[j]
        held = plan.leases.get(j, ())
        if k < 0:
            assert held == ()
            assert not problem.admitted[j] or plan.status is Status.INFEASIBLE
            continue
        assert problem.option_job[k] == j
        assert len(set(held)) == len(held) == problem.leases_needed[j]
        assert all(0 <= t < min(problem.option_horizon[k], problem.num_leases) for t in held)
        used[list(held)] += problem.gpus[j]
    assert np.all(used <= problem.capacity)

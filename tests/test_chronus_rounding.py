"""LP-guided rounding of the Chronus lease MILP (schedopt.policies.chronus.rounding)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from lease_strategies import assert_feasible, draw_lease_jobs

from schedopt.backends import Status, solve_lp
from schedopt.policies.chronus import rounding as chronus_rounding
from schedopt.policies.chronus.lease_milp import LeaseProblem, _lp_values, lease_relaxation
from schedopt.policies.chronus.admission import latest_fit_packing


@st.composite
def rounding_cases(draw):
    """A lease problem (up to 8 jobs, 6 leases, admitted or not) and LP-like values (s, x): the
    relaxation's optimum, all zeros, or random numbers in [0, 1]."""
    n = draw(st.integers(1, 8))
    H = draw(st.integers(1, 6))
    gpus, needed, job, value, horizon, capacity = draw_lease_jobs(draw, n, H, max_options=3,
                                                                  max_capacity=8)
    admitted = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    problem = LeaseProblem.from_arrays(gpus, needed, job, value, horizon, capacity,
                                       sigma=draw(st.sampled_from([1.0, -1.0])), admitted=admitted)
    kind = draw(st.sampled_from(["lp", "zeros", "random"]))
    K = problem.num_options
    if kind == "lp":
        relaxation = solve_lp(lease_relaxation(problem), "highs")
        if relaxation.status is Status.OPTIMAL:
            return problem, *_lp_values(problem, relaxation.x)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    scale = 0.0 if kind == "zeros" else 1.0
    return problem, scale * rng.random(K), scale * rng.random((K, H))


def admitted_pack_latest_fit(problem: LeaseProblem) -> bool:
    """Chronus admission's invariant: the admitted jobs alone, at their loosest horizons, pack."""
    loosest = np.zeros(problem.num_jobs, dtype=np.int64)
    np.maximum.at(loosest, problem.option_job, problem.option_horizon)
    a = np.flatnonzero(problem.admitted)
    _, unplaced, _ = latest_fit_packing(problem.gpus[a], problem.leases_needed[a], loosest[a],
                                        problem.capacity)
    return not unplaced


def as_plan(chosen: np.ndarray, held: np.ndarray, status: Status) -> SimpleNamespace:
    assert not held[chosen < 0].any()
    leases = {int(j): tuple(np.flatnonzero(held[j]).tolist()) for j in np.flatnonzero(chosen >= 0)}
    return SimpleNamespace(chosen=chosen, leases=leases, status=status)


@settings(max_examples=300, deadline=None)
@given(rounding_cases())
def test_rounding_is_feasible_and_places_admitted_jobs_that_pack(case):
    problem, s, x = case
    packs = admitted_pack_latest_fit(problem)
    plans = chronus_rounding.lp_roundings(problem, s, x)
    assert len(plans) == len(chronus_rounding.LP_FIRST)
    for chosen, held in plans:
        # Status INFEASIBLE lets assert_feasible accept unscheduled admitted jobs.
        assert_feasible(problem, as_plan(chosen, held,
                                         Status.FEASIBLE if packs else Status.INFEASIBLE))
        if packs:
            assert np.all(chosen[problem.admitted] >= 0)


@settings(max_examples=300, deadline=None)
@given(rounding_cases())
def test_admission_pass_is_the_latest_fit_packing_when_that_places_every_admitted_job(case):
    problem, _, x = case
    loosest = chronus_rounding._best_per_job(problem, problem.option_horizon.astype(float))
    chosen, held = chronus_rounding._admission_pass(problem, loosest, x)
    assert_feasible(problem, as_plan(chosen, held, Status.INFEASIBLE))
    assert np.all(chosen[~problem.admitted] == -1)
    a = np.flatnonzero(problem.admitted)
    leases, unplaced, _ = latest_fit_packing(problem.gpus[a], problem.leases_needed[a],
                                             problem.option_horizon[loosest[a]], problem.capacity)
    if unplaced:
        return  # the pass promises nothing then (a doomed job may hold leases others needed)
    assert chosen[a].tolist() == loosest[a].tolist()
    for i, held_leases in leases.items():
        assert np.flatnonzero(held[a[i]]).tolist() == list(held_leases)


def test_rounding_follows_the_lp_and_fills_free_capacity():
    # Job 0: 2 GPUs x 2 leases, options (D=2, u=5) and (D=4, u=3); job 1: 2 GPUs x 1 lease
    # (D=4, u=1), not admitted; job 2: 4 GPUs x 1 lease (D=1, u=4). C_t = 4.
    problem = LeaseProblem.from_arrays(
        gpus=[2, 2, 4], leases_needed=[2, 1, 1], option_job=[0, 0, 1, 2],
        option_value=[5, 3, 1, 4], option_horizon=[2, 4, 4, 1], capacity=[4, 4, 4, 4],
        admitted=[True, False, False])
    s = np.array([0.0, 1.0, 0.0, 1.0])  # the LP picks job 0's loose option and job 2
    x = np.zeros((4, 4))
    x[1, [2, 3]] = 1.0
    x[3, 0] = 1.0
    (chosen, held), other = chronus_rounding.lp_roundings(problem, s, x)
    assert chosen.tolist() == other[0].tolist() and np.array_equal(held, other[1])
    # Job 0 cannot move up to D=2 (job 2 fills lease 0, so only lease 1 is free before it): it
    # keeps the LP's leases 2, 3. Job 1 (s = 0, not tried) is inserted into the latest lease
    # with 2 GPUs free.
    assert chosen.tolist() == [1, 2, 3]
    assert np.flatnonzero(held[0]).tolist() == [2, 3]
    assert np.flatnonzero(held[1]).tolist() == [3]
    assert np.flatnonzero(held[2]).tolist() == [0]


def test_take_while_fits_equals_the_sequential_greedy():
    rng = np.random.default_rng(7)
    for _ in range(500):
        width = rng.choice([1, 2, 4, 8, 3], rng.integers(0, 12))
        free = int(rng.integers(0, 20))
        left, expected = free, []
        for i, w in enumerate(width):
            if w <= left:
                expected.append(i)
                left -= w
        assert chronus_rounding._take_while_fits(width, free).tolist() == expected


def test_next_looser_option_is_by_horizon_then_value():
    # Job 0: options 0 (D=4, u=3), 1 (D=2, u=5), 2 (D=4, u=4); job 1: option 3 (D=1).
    problem = LeaseProblem.from_arrays(gpus=[1, 1], leases_needed=[1, 1], option_job=[0, 0, 0, 1],
                                       option_value=[3, 5, 4, 1], option_horizon=[4, 2, 4, 1],
                                       capacity=[1, 1, 1, 1])
    assert chronus_rounding._next_looser(problem).tolist() == [-1, 2, 0, -1]


def test_problems_without_options_or_jobs_round_to_empty_plans():
    no_options = LeaseProblem.from_arrays(gpus=[1, 2], leases_needed=[1, 1], option_job=[],
                                          option_value=[], option_horizon=[], capacity=[4, 4],
                                          admitted=[False, False])
    no_jobs = LeaseProblem.from_arrays(gpus=[], leases_needed=[], option_job=[], option_value=[],
                                       option_horizon=[], capacity=[4, 4])
    for problem in (no_options, no_jobs):
        for chosen, held in chronus_rounding.lp_roundings(problem, np.zeros(0), np.zeros((0, 2))):
            assert chosen.tolist() == [-1] * problem.num_jobs
            assert held.shape == (problem.num_jobs, 2) and not held.any()

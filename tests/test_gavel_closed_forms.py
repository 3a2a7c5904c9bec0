"""Gavel LPs on instances whose optimum is known in closed form (no solver reference)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gavel_reference as ref
from schedopt.api import solve
from schedopt.backends import Status
from schedopt.core.problem import ThroughputProblem

SOLVERS = ["highs", "highs-ipm", "glop", "pdlp", "cbc", "clarabel", "cvxpy:CLARABEL"]


# ------------------------------------------------------------------ max-min fairness

@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("policy", ["max_min_fairness", "max_min_fairness_agnostic"])
@pytest.mark.parametrize("M,c,T", [(4, 2, 3.0), (7, 3, 0.5), (5, 5, 1.0), (12, 1, 10.0), (9, 8, 2.5)])
def test_max_min_identical_single_gpu_jobs_each_get_c_over_M(solver, policy, M, c, T):
    p = ThroughputProblem.from_arrays(np.full((M, 1), T), capacity=[c])
    result = solve(p, policy=policy, solver=solver)
    assert result.status is Status.OPTIMAL
    assert result.objective == pytest.approx(c / M, rel=1e-6)
    # the sum of shares is at most c and each is >= c/M, so every share is exactly c/M
    np.testing.assert_allclose(result.X[:, 0], c / M, rtol=1e-5)


@pytest.mark.parametrize("solver", SOLVERS)
def test_max_min_single_job_runs_on_its_fastest_type(solver):
    # thr_eq = (2*4 + 5*2 + 3*8) / 14 = 3; objective = s * 5 / (w * 3) = 2*5/(3*3)
    p = ThroughputProblem.from_arrays([[2.0, 5.0, 3.0]], scale_factor=[2], weight=[3],
                                      capacity=[4, 2, 8])
    result = solve(p, policy="max_min_fairness", solver=solver)
    assert result.objective == pytest.approx(10 / 9, rel=1e-6)
    np.testing.assert_allclose(result.X, [[0, 1, 0]], atol=1e-6)


def test_max_min_single_job_skips_a_fastest_type_too_small_for_it():
    # type 1 (fastest) has 1 GPU < s = 2; thr_eq still counts it (Gavel's normalizer):
    # thr_eq = (2*4 + 5*1 + 3*8) / 13 = 37/13; objective = 2 * 3 / (3 * 37/13) = 26/37
    p = ThroughputProblem.from_arrays([[2.0, 5.0, 3.0]], scale_factor=[2], weight=[3],
                                      capacity=[4, 1, 8])
    result = solve(p, policy="max_min_fairness")
    assert result.objective == pytest.approx(26 / 37, rel=1e-6)
    np.testing.assert_allclose(result.X, [[0, 0, 1]], atol=1e-6)


@settings(max_examples=40, deadline=None)
@given(T=st.lists(st.floats(0.1, 10.0), min_size=1, max_size=4),
       caps=st.lists(st.integers(1, 8), min_size=4, max_size=4),
       s=st.sampled_from([1, 2, 4]), w=st.sampled_from([1, 2, 3]))
def test_max_min_single_job_objective_is_best_over_equal_share(T, caps, s, w):
    T = np.array(T)
    c = np.maximum(np.array(caps[: T.size], dtype=float), s)  # every type fits the job
    p = ThroughputProblem.from_arrays(T[None, :], scale_factor=[s], weight=[w], capacity=c)
    result = solve(p, policy="max_min_fairness")
    thr_eq = T @ c / c.sum()
    assert result.objective == pytest.approx(s * T.max() / (w * thr_eq), rel=1e-6)
    assert ref.thr(T[None, :], result.X)[0] == pytest.approx(T.max(), rel=1e-6)


# ------------------------------------------------------------------ makespan

def mcnaughton(R, T, c):
    p = np.asarray(R) / np.asarray(T)
    return max(p.sum() / c, p.max())


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("policy", ["min_makespan", "min_makespan_agnostic"])
@pytest.mark.parametrize("R,T,c", [
    ([1e4, 2e4, 3e4, 4e4], [1.0, 2.0, 0.5, 4.0], 2),      # sum p / c = 85000/2 > max p = 60000
    ([1e6, 1e3, 2e3], [1.0, 1.0, 1.0], 2),                # max p = 1e6 dominates
    ([5e5, 5e5, 5e5], [2.0, 2.0, 2.0], 3),                # one job per GPU
    ([3e3, 7e5, 2e5, 9e4, 5e5], [0.3, 9.0, 1.7, 4.4, 6.1], 3),
])
def test_makespan_one_type_single_gpu_jobs_is_mcnaughtons_bound(solver, policy, R, T, c):
    p = ThroughputProblem.from_arrays(np.array(T)[:, None], capacity=[c], remaining_steps=R)
    result = solve(p, policy=policy, solver=solver)
    assert result.status is Status.OPTIMAL
    assert result.objective == pytest.approx(mcnaughton(R, T, c), rel=1e-6)


@settings(max_examples=40, deadline=None)
@given(jobs=st.lists(st.tuples(st.floats(1e3, 1e6), st.floats(0.1, 10.0)), min_size=1, max_size=12),
       c=st.integers(1, 8))
def test_makespan_matches_mcnaughton_on_random_single_type_instances(jobs, c):
    R, T = map(np.array, zip(*jobs))
    p = ThroughputProblem.from_arrays(T[:, None], capacity=[c], remaining_steps=R)
    result = solve(p, policy="min_makespan")
    assert result.objective == pytest.approx(mcnaughton(R, T, c), rel=1e-6)
    assert result.bound == pytest.approx(mcnaughton(R, T, c), rel=1e-6)


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("RA,TA", [(1e7, 0.1), (1e6, 0.1)])
def test_makespan_with_a_nearly_finished_job_is_still_mcnaughtons_bound(solver, RA, TA):
    # one GPU; A has 1e7 (or 1e6) steps left at 0.1 steps/s, B has 1 step left at 10 steps/s.
    # Optimum: RA/TA + 0.1 s with B getting a 1e-9 (1e-8) share. B's row in the LP then has a
    # right-hand side below solver tolerances, and an allocation giving B nothing (makespan inf)
    # comes back as "optimal".
    p = ThroughputProblem.from_arrays([[TA], [10.0]], capacity=[1], remaining_steps=[RA, 1.0],
                                      job_ids=["A", "B"])
    result = solve(p, policy="min_makespan", solver=solver)
    exact = RA / TA + 0.1
    if solver == "pdlp" and result.status is not Status.OPTIMAL:
        # PDLP (first order) cannot resolve a 1e-9 share; it must then say so, not return inf.
        assert result.status in (Status.ERROR, Status.FEASIBLE)
        return
    assert result.status is Status.OPTIMAL
    assert result.effective_throughput["B"] > 0, f"B gets nothing: makespan {result.objective}"
    assert result.objective == pytest.approx(exact, rel=1e-6)


def test_makespan_ignores_jobs_with_no_remaining_work():
    p = ThroughputProblem.from_arrays([[1.0], [1.0]], capacity=[1], remaining_steps=[100.0, 0.0])
    result = solve(p, policy="min_makespan")
    assert result.objective == pytest.approx(100.0, rel=1e-6)
    assert result.X[1, 0] == 0.0


# ------------------------------------------------------------------ finish-time fairness

@pytest.mark.parametrize("M,c", [(4, 2), (6, 6), (9, 4), (3, 1)])
def test_ftf_identical_single_gpu_jobs_from_scratch_have_rho_one(M, c):
    p = ThroughputProblem.from_arrays(np.full((M, 1), 2.0), capacity=[c],
                                      remaining_steps=np.full(M, 1e5))
    result = solve(p, policy="finish_time_fairness")
    assert result.status is Status.OPTIMAL
    assert result.objective == pytest.approx(1.0, rel=1e-5)
    np.testing.assert_allclose(result.X[:, 0], c / M, rtol=1e-4)


def test_ftf_single_job_with_history_on_its_best_type():
    # one job: X^iso = c/s row-scaled -> [4, 2]/2 = [2, 1] -> scaled to [2/3, 1/3];
    # thr_iso = 3*2/3 + 6*1/3 = 4; best: X = [0, 1], thr = 6.
    # rho = (t + R/6) / (t_iso + R/4) with R = 1200, t = 100, t_iso = 50 -> 300/350
    p = ThroughputProblem.from_arrays([[3.0, 6.0]], scale_factor=[2], capacity=[4, 2],
                                      remaining_steps=[1200.0], time_since_arrival=[100.0],
                                      isolated_time=[50.0])
    result = solve(p, policy="finish_time_fairness")
    assert result.objective == pytest.approx(300 / 350, rel=1e-6)
    np.testing.assert_allclose(result.X, [[0, 1]], atol=1e-6)


# ------------------------------------------------------------------ throughput and cost

@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("T,c", [([3, 1, 4, 1, 5, 9, 2, 6], 3), ([0.5, 0.7], 2), ([2.0, 8.0, 1.0], 1)])
def test_max_total_throughput_one_type_is_sum_of_c_largest(solver, T, c):
    T = np.array(T, dtype=float)
    p = ThroughputProblem.from_arrays(T[:, None], capacity=[c])
    result = solve(p, policy="max_total_throughput", solver=solver)
    top = np.sort(T)[::-1][:c]
    assert result.objective == pytest.approx(top.sum(), rel=1e-6)


@pytest.mark.parametrize("T,cost,best", [([4.0, 10.0], [1.0, 3.0], 0), ([4.0, 10.0], [1.0, 2.0], 1),
                                          ([0.2, 7.5], [0.9, 4.0], 1)])
def test_min_cost_single_job_picks_best_throughput_per_dollar(T, cost, best):
    p = ThroughputProblem.from_arrays([T], capacity=[1, 1], cost_per_hour=cost)
    result = solve(p, policy="min_cost")
    ratio = np.array(T) / np.array(cost)
    assert result.objective == pytest.approx(ratio.max(), rel=1e-6)
    expected = np.zeros((1, 2))
    expected[0, best] = 1.0
    np.testing.assert_allclose(result.X, expected, atol=1e-6)

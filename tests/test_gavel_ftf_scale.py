"""Finish-time fairness by the price decomposition (method decomposition, the default without a
named solver): the same optimum as the bisection over whole LPs and as the conic reference,
a proven lower bound, and a few level solves instead of a bisection."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import gavel_reference as ref
from schedopt.api import solve
from schedopt.backends import Status
from schedopt.core.problem import ThroughputProblem
from schedopt.policies.gavel import lp
from schedopt.policies.gavel.finish_time import FinishTimeJobs, price_lower_bound


def random_problem(jobs: int, gpus_per_job: float, seed: int, types: int = 3,
                   waited: bool = True) -> ThroughputProblem:
    """Random rows 0.2-5 steps/s, scale factors 1/2/4, `gpus_per_job` GPUs per job in all
    (0.1: the GPUs bind; 2: they do not)."""
    rng = np.random.default_rng(seed)
    return ThroughputProblem.from_arrays(
        rng.uniform(0.2, 5.0, (jobs, types)), rng.choice([1, 2, 4], jobs, p=[0.7, 0.2, 0.1]),
        np.ones(jobs), np.full(types, max(4.0, jobs * gpus_per_job / types)),
        remaining_steps=rng.uniform(1e4, 1e6, jobs),
        time_since_arrival=rng.uniform(0, 3600, jobs) if waited else np.zeros(jobs),
        isolated_time=rng.uniform(0, 1800, jobs) if waited else np.zeros(jobs))


def ratios(p: ThroughputProblem, X: np.ndarray, agnostic: bool = False) -> np.ndarray:
    T = ref.agnostic_best_throughput(p) if agnostic else p.throughput
    return ref.finish_time_ratio(T, p.scale_factor, p.capacity, p.remaining_steps,
                                 p.time_since_arrival, p.isolated_time, X)


CASES = [(300, 0.1, 0), (1_000, 0.1, 1), (500, 0.3, 2), (200, 2.0, 3), (400, 0.05, 4)]


@pytest.mark.parametrize("agnostic", [False, True])
@pytest.mark.parametrize("jobs, gpus_per_job, seed", CASES)
def test_decomposition_matches_the_bisection_over_whole_lps(jobs, gpus_per_job, seed, agnostic):
    p = random_problem(jobs, gpus_per_job, seed)
    ours = lp.finish_time_fairness(p, agnostic=agnostic, method="decomposition")
    whole = lp.finish_time_fairness(p, "highs", agnostic=agnostic, method="lp")
    assert ours.status is Status.OPTIMAL and whole.status is Status.OPTIMAL
    assert ours.solver == "decomposition" and whole.solver == "highs"
    ref.assert_base_constraints(p, ours.allocation)
    rho = ratios(p, ours.allocation, agnostic)
    assert ours.objective == pytest.approx(rho.max(), rel=1e-12)
    # both are proven to 1e-6: each one's bound is below the other's objective
    assert ours.bound <= ours.objective <= ours.bound * (1 + 1e-6)
    assert ours.bound <= whole.objective * (1 + 1e-12)
    assert whole.bound <= ours.objective * (1 + 1e-12)
    assert ours.objective == pytest.approx(whole.objective, rel=2e-6)
    assert ours.details["level_solves"] <= min(6, whole.details["lp_solves"])


@pytest.mark.parametrize("agnostic", [False, True])
@pytest.mark.parametrize("seed", [5, 6])
def test_decomposition_matches_the_conic_reference(seed, agnostic):
    p = random_problem(40, 0.2, seed)
    ours = solve(p, "finish_time_fairness", agnostic=agnostic)
    reference = ref.finish_time_fairness(p, agnostic=agnostic)
    assert reference.status == "optimal"
    assert ours.objective == pytest.approx(reference.value, rel=1e-4)
    assert ours.bound <= reference.value * (1 + 1e-6)


def test_without_waiting_one_probe_at_the_price_bound_is_enough():
    # t_m = 0: need_m(rho) = need_m(1) / rho, so the level z at any probe gives rho* = probe / z
    # and the first probe's prices certify it
    p = random_problem(2_000, 0.1, 7, waited=False)
    ours = lp.finish_time_fairness(p)
    assert ours.status is Status.OPTIMAL and ours.details["level_solves"] <= 2
    assert ours.objective == pytest.approx(
        lp.finish_time_fairness(p, "highs", method="lp").objective, rel=2e-6)


def test_the_price_certificate_never_exceeds_the_optimum_and_is_tight_at_its_prices():
    p = random_problem(300, 0.1, 8)
    whole = lp.finish_time_fairness(p, "highs", method="lp", tolerance=1e-9)
    T = p.throughput * p.runnable
    best = T.max(axis=1)
    jobs = FinishTimeJobs(T / best[:, None], best, p.scale_factor, p.remaining_steps,
                          p.time_since_arrival, lp.isolated_finish_time(p), p.capacity)
    rng = np.random.default_rng(0)
    low = float(ratios(p, np.eye(3)[np.argmax(T, axis=1)]).max())
    for _ in range(20):  # any prices >= 0 give a valid lower bound
        bound = price_lower_bound(jobs, rng.uniform(0, 1, 3), low, 10 * whole.objective)
        assert low <= bound <= whole.objective * (1 + 1e-9)
    # the optimum's own GPU prices (the feasibility LP's duals) certify it
    ours = lp.finish_time_fairness(p)
    assert ours.bound == pytest.approx(whole.objective, rel=1e-6)


def test_auto_picks_the_decomposition_without_a_solver_and_the_lp_with_one():
    p = random_problem(100, 0.1, 9)
    assert solve(p, "finish_time_fairness").solver == "decomposition"
    named = solve(p, "finish_time_fairness", solver="highs")
    assert named.solver == "highs" and "level_solves" not in named.details
    forced = solve(p, "finish_time_fairness", method="lp")
    assert forced.solver == "highs"


def test_jobs_without_steps_left_get_nothing_and_do_not_count():
    p = random_problem(60, 0.1, 10)
    p = dataclasses.replace(p, remaining_steps=np.where(np.arange(60) % 3 == 0, 0.0,
                                                        p.remaining_steps))
    ours = lp.finish_time_fairness(p)
    whole = lp.finish_time_fairness(p, "highs", method="lp")
    assert np.all(ours.allocation[::3] == 0.0)
    assert ours.objective == pytest.approx(whole.objective, rel=2e-6)


def test_a_job_one_step_from_done_next_to_long_ones():
    # needs of very different sizes: the level problem's gains span six orders of magnitude
    p = random_problem(200, 0.1, 11)
    steps = p.remaining_steps.copy()
    steps[:3] = [1.0, 5.0, 20.0]
    p = dataclasses.replace(p, remaining_steps=steps)
    ours = lp.finish_time_fairness(p)
    whole = lp.finish_time_fairness(p, "highs", method="lp")
    assert ours.status is Status.OPTIMAL
    assert ours.objective == pytest.approx(whole.objective, rel=2e-6)
    assert ours.bound <= whole.objective * (1 + 1e-12)


def test_a_time_limit_stops_the_search_with_a_feasible_allocation_and_a_proven_bound():
    p = random_problem(3_000, 0.1, 12)
    exact = lp.finish_time_fairness(p)
    cut = solve(p, "finish_time_fairness", time_limit=1e-4)
    assert cut.status is Status.FEASIBLE and cut.termination.value == "time_limit"
    ref.assert_base_constraints(p, cut.allocation)
    assert cut.bound <= exact.objective * (1 + 1e-12) and cut.objective >= exact.bound
    generous = solve(p, "finish_time_fairness", time_limit=600)
    assert generous.status is Status.OPTIMAL
    assert generous.objective == pytest.approx(exact.objective, rel=1e-12)

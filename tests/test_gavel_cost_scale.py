"""min_cost (with and without SLOs) by the price decomposition (method decomposition, the
default without a named solver): each job's best vertex against scipy's linprog, the dual
bound against the LP optimum, and the whole policy against the whole LP on HiGHS and scipy."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy.optimize import linprog

import gavel_reference as ref
from schedopt.api import solve
from schedopt.backends import Status
from schedopt.core.problem import ThroughputProblem
from schedopt.policies.gavel import cost, lp
from schedopt.policies.gavel.models import best_type_fraction


def slo_problem(jobs: int, gpus_per_job: float, slo_share: float, tightness: float,
                seed: int, types: int = 3) -> ThroughputProblem:
    """Random rows 0.2-5 steps/s, `gpus_per_job` GPUs per job in all; a share `slo_share` of
    the jobs has a deadline asking `tightness` x (0.2-1) of an even split of the GPUs."""
    rng = np.random.default_rng(seed)
    T = rng.uniform(0.2, 5.0, (jobs, types))
    scale = rng.choice([1, 2, 4], jobs, p=[0.7, 0.2, 0.1])
    capacity = np.full(types, max(4.0, jobs * gpus_per_job / types))
    remaining = rng.uniform(1e4, 1e6, jobs)
    even = min(capacity.sum() / scale.sum(), 1.0)  # a job's time share, at most all of it
    need = tightness * rng.uniform(0.2, 1.0, jobs) * even * T.mean(axis=1)  # steps/s
    deadline = np.where(rng.random(jobs) < slo_share, remaining / need, np.nan)
    return ThroughputProblem.from_arrays(T, scale, np.ones(jobs), capacity,
                                         remaining_steps=remaining, time_to_deadline=deadline,
                                         cost_per_hour=np.linspace(2.5, 0.5, types))


def classes_of(p: ThroughputProblem, slos: bool = True) -> cost.CostClasses:
    best = (p.throughput * p.runnable).max(axis=1)
    has = np.isfinite(p.time_to_deadline) & slos
    tau = np.where(has, p.remaining_steps / np.where(has, p.time_to_deadline, 1.0) / best, 0.0)
    w = p.throughput / p.cost_per_hour * p.runnable
    return cost.merge(w, best_type_fraction(p), p.scale_factor, tau, p.runnable, p.capacity)[0]


def test_each_jobs_best_vertex_is_its_own_lp_optimum():
    # max v @ x s.t. sum x <= 1, f @ x >= tau, x >= 0, by scipy, job by job
    rng = np.random.default_rng(0)
    K, J = 300, 4
    f = rng.uniform(0, 1, (K, J))
    f[rng.random((K, J)) < 0.2] = 0.0
    f[np.arange(K), rng.integers(0, J, K)] = 1.0
    allowed = f > 0
    tau = np.where(rng.random(K) < 0.7, rng.uniform(0, 1, K), 0.0)
    cls = cost.CostClasses(rng.uniform(0, 3, (K, J)) * allowed, f, rng.choice([1.0, 2.0], K),
                           tau, np.ones(K), allowed, np.ones(J))
    prices = rng.uniform(0, 1.5, J)
    vertices = cost._vertices(cls, prices)
    choice = np.argmax(vertices.values, axis=1)
    X = cost._allocation(cls, vertices, choice)
    v = cls.weight - cls.gpus[:, None] * prices
    for k in range(K):
        bounds = [(0, None if allowed[k, j] else 0) for j in range(J)]
        res = linprog(-v[k], A_ub=np.vstack([np.ones(J), -f[k]]), b_ub=[1.0, -tau[k]],
                      bounds=bounds, method="highs")
        assert res.status == 0
        assert vertices.values[k, choice[k]] == pytest.approx(-res.fun, abs=1e-9)
        assert v[k] @ X[k] == pytest.approx(-res.fun, abs=1e-9)
        assert X[k].sum() <= 1 + 1e-12 and f[k] @ X[k] >= tau[k] - 1e-12


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_any_prices_bound_the_optimum_from_above(seed):
    p = slo_problem(200, 0.3, 0.5, 1.0, seed)
    optimum = lp.min_cost(p, "highs", method="lp")
    assert optimum.status is Status.OPTIMAL
    cls = classes_of(p)
    rng = np.random.default_rng(seed)
    for _ in range(20):
        assert cost.dual_bound(cls, rng.uniform(0, 10, 3)) >= optimum.objective * (1 - 1e-9)


CASES = [  # jobs, GPUs per job, share of jobs with an SLO, tightness, seed
    (300, 0.3, 0.5, 1.0, 4),
    (1_000, 0.3, 0.5, 1.0, 13),     # one LP over all of them (DIRECT_CLASSES)
    (2_500, 0.3, 0.5, 1.0, 5),      # > DIRECT_CLASSES: prices from a sample, then fix and free
    (2_500, 0.1, 1.0, 0.8, 6),      # every job has an SLO, GPUs scarce
    (2_500, 0.1, 1.0, 2.3, 11),     # SLOs that barely fit: fixed choices overfill GPU types
    (2_500, 2.0, 0.3, 1.0, 7),      # GPUs do not bind
    (1_500, 0.3, 0.0, 1.0, 8),      # no deadlines at all
]


@pytest.mark.parametrize("jobs, per_job, share, tightness, seed", CASES)
def test_decomposition_matches_the_whole_lp(jobs, per_job, share, tightness, seed):
    p = slo_problem(jobs, per_job, share, tightness, seed)
    ours = lp.min_cost(p, method="decomposition")
    whole = lp.min_cost(p, "highs", method="lp")
    assert ours.status is Status.OPTIMAL and whole.status is Status.OPTIMAL
    assert ours.solver == "decomposition"
    X = ours.allocation
    ref.assert_base_constraints(p, X)
    need = ref.slo_need(p)
    has = np.isfinite(need)
    assert np.all((p.throughput * X).sum(axis=1)[has] >= need[has] * (1 - 1e-7))
    assert ours.objective == pytest.approx(lp.cost_objective(p, X), rel=1e-12)
    assert ours.bound >= ours.objective * (1 - 1e-9)
    assert ours.details["gap"] <= 1e-6
    assert ours.bound >= whole.objective * (1 - 1e-7)  # proven: above every feasible value
    assert ours.objective == pytest.approx(whole.objective, rel=1e-6)


def test_slos_off_and_the_cvxpy_reference():
    p = slo_problem(60, 0.3, 0.5, 1.0, 9)
    for slos in (True, False):
        ours = solve(p, "min_cost", slos=slos)
        reference = ref.min_cost(p, slos=slos)
        assert reference.status == "optimal"
        assert ours.objective == pytest.approx(reference.value, rel=1e-5)


def test_identical_jobs_merge_into_classes():
    p = slo_problem(50, 0.3, 0.5, 1.0, 10)
    copies = np.repeat(np.arange(50), 40)
    many = ThroughputProblem.from_arrays(
        p.throughput[copies], p.scale_factor[copies], np.ones(2000), p.capacity * 40,
        remaining_steps=p.remaining_steps[copies], time_to_deadline=p.time_to_deadline[copies],
        cost_per_hour=p.cost_per_hour)
    ours = lp.min_cost(many)
    assert ours.details["classes"] == 50
    assert ours.objective == pytest.approx(40 * lp.min_cost(p, "highs", method="lp").objective,
                                           rel=1e-6)


def test_slos_that_do_not_fit_still_report_the_shortfall():
    p = slo_problem(300, 0.05, 1.0, 6.0, 11)
    ours = solve(p, "min_cost")
    whole = solve(p, "min_cost", method="lp")
    assert ours.status is Status.INFEASIBLE and whole.status is Status.INFEASIBLE
    assert ours.details["infeasible_slos"] == whole.details["infeasible_slos"]


def test_auto_picks_the_decomposition_without_a_solver_and_the_lp_with_one():
    p = slo_problem(100, 0.3, 0.5, 1.0, 12)
    assert solve(p, "min_cost").solver == "decomposition"
    assert solve(p, "min_cost", solver="highs").solver == "highs"
    assert solve(p, "min_cost", method="lp").solver == "highs-ipm"
    assert dataclasses.replace(p).num_jobs == 100


def test_a_time_limit_returns_what_it_has_with_a_proven_bound():
    p = slo_problem(20_000, 0.3, 0.5, 1.0, 14)
    exact = lp.min_cost(p)
    assert exact.status is Status.OPTIMAL
    cut = solve(p, "min_cost", time_limit=1e-4)
    assert cut.termination.value == "time_limit"
    if cut.allocation is not None:
        ref.assert_base_constraints(p, cut.allocation)
        assert cut.objective <= exact.bound * (1 + 1e-9)
        assert cut.bound >= exact.objective * (1 - 1e-7)
    generous = solve(p, "min_cost", time_limit=600)
    assert generous.status is Status.OPTIMAL
    assert generous.objective == pytest.approx(exact.objective, rel=1e-9)

"""SMD's large-neighbourhood search over the exact MILP (schedopt.policies.smd.neighbourhood) and
smd_exact's symmetry breaking, checked against brute force, smd_exact and the paper's method."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from smd_strategies import ps_instances, regime_instances
from test_smd import assert_valid, brute_force
from schedopt.api import solve
from schedopt.policies.smd.algorithm import smd
from schedopt.policies.smd.exact import smd_exact
from schedopt.policies.smd.model import Placement, SmdProblem
from schedopt.policies.smd.bound import relaxation
from schedopt.policies.smd.neighbourhood import _guided, improve
from schedopt.policies.smd.milp import exact_program
from schedopt.policies.smd.packing import _search, minimal_packing
from schedopt.policies.smd.repair import place
from schedopt.traces.parameter_server import parameter_server_instance


def _objective(problem: SmdProblem, placement: Placement) -> float:
    return float(problem.completion_time(placement.total_workers, placement.total_ps).sum())


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(regime_instances(max_jobs=10, max_machines=4), st.integers(0, 3))
def test_restricted_problem_has_the_parent_rows_and_the_given_capacity(instance, pick):
    problem = SmdProblem.from_instance(instance)
    rng = np.random.default_rng(pick)
    jobs = np.sort(rng.choice(problem.num_jobs, size=max(1, problem.num_jobs // 2), replace=False))
    machines = np.arange(problem.num_machines)[pick % problem.num_machines:]
    capacity = problem.capacity[machines] / 2
    sub = problem.restrict(jobs, machines, capacity)
    assert sub.job_ids == tuple(problem.job_ids[i] for i in jobs)
    assert sub.machine_ids == tuple(problem.machine_ids[h] for h in machines)
    np.testing.assert_array_equal(sub.capacity, capacity)
    w, p = rng.integers(1, 5, size=(2, jobs.size))
    full_w, full_p = np.ones(problem.num_jobs, int), np.ones(problem.num_jobs, int)
    full_w[jobs], full_p[jobs] = w, p
    np.testing.assert_allclose(sub.completion_time(w, p),
                               problem.completion_time(full_w, full_p)[jobs], rtol=1e-12)
    np.testing.assert_array_equal(sub.worker_demand, problem.worker_demand[jobs])
    np.testing.assert_array_equal(sub.ps_demand, problem.ps_demand[jobs])


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ps_instances(max_jobs=3, max_machines=2, max_workers=3, max_ps=2, tight=True))
def test_one_step_on_two_machines_reaches_brute_force_from_one_worker_and_ps_per_job(instance):
    # with at most 2 machines and 8 jobs a step frees every job: its sub-problem is the whole
    # problem, which CP-SAT solves exactly
    problem = SmdProblem.from_instance(instance)
    start = minimal_packing(problem)
    expected = brute_force(instance)
    if start is None or expected is None:
        return
    placed, stats = improve(problem, Placement(start.workers, start.ps), steps=1,
                            step_work=30.0, target=expected)
    assert placed.violations(problem) == []
    assert _objective(problem, placed) == pytest.approx(expected, rel=1e-9)
    assert stats["steps"] >= (_objective(problem, Placement(start.workers, start.ps))
                              > expected * (1 + 1e-9))


def _lp_guide(problem: SmdProblem) -> tuple[np.ndarray, np.ndarray]:
    program = exact_program(problem, problem.configurations(), symmetry=False)
    _, values = relaxation(program)
    return (values[program.x.columns].reshape(program.x.shape),
            values[program.y.columns].reshape(program.y.shape))


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(regime_instances(max_jobs=12, max_machines=5), st.integers(0, 100), st.booleans())
def test_lns_is_feasible_never_worse_than_its_start_nor_better_than_the_optimum(instance, seed,
                                                                               guided):
    problem = SmdProblem.from_instance(instance)
    start = smd(problem, place_limit=0, search_steps=0, beyond=False)
    guide = _lp_guide(problem) if guided else None
    placed, stats = improve(problem, start.placement, steps=6, seed=seed, guide=guide)
    exact = smd_exact(problem, warm_start=False)
    assert placed.violations(problem) == []
    assert _objective(problem, placed) <= start.objective * (1 + 1e-12)
    assert _objective(problem, placed) >= exact.objective * (1 - 1e-9)
    assert stats["improved"] <= stats["steps"]


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 8), st.integers(1, 6), st.integers(0, 2**32 - 1), st.integers(1, 5))
def test_guided_steps_free_the_job_placed_unlike_the_lp_and_its_neighbours(n, H, pick, max_jobs):
    # the guide equals the placement except for one job d: d is the only job a guided step can
    # draw first, so every step frees d and otherwise only jobs sharing a machine where d is
    # now or where the guide puts it (checked job by job, not through the sampler)
    rng = np.random.default_rng(pick)
    X, Y = rng.integers(0, 3, size=(2, n, H))
    d = int(rng.integers(n))
    gx, gy = X.astype(float), Y.astype(float)
    gx[d], gy[d] = rng.uniform(0, 2, size=(2, H))
    assume = np.abs(X[d] - gx[d]).sum() + np.abs(Y[d] - gy[d]).sum() > 0
    near = (X[d] + Y[d] > 0) | (gx[d] + gy[d] > 0.5)
    for seed in range(5):
        jobs = _guided(X, Y, (gx, gy), np.random.default_rng(seed), max_jobs)
        if not assume:
            assert jobs.size == 0
            continue
        assert d in jobs and jobs.size <= max_jobs and np.unique(jobs).size == jobs.size
        for j in jobs.tolist():
            assert j == d or ((X[j] + Y[j] > 0) & near).any()
    same = _guided(X, Y, (X.astype(float), Y.astype(float)), np.random.default_rng(0), max_jobs)
    assert same.size == 0


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(regime_instances(max_jobs=14, max_machines=5))
def test_smd_is_never_worse_than_the_paper_method_and_its_bound_holds(instance):
    problem = SmdProblem.from_instance(instance)
    ours, paper = smd(problem), smd(problem, beyond=False)
    exact = smd_exact(problem, warm_start=False)
    assert_valid(problem, ours)
    assert ours.objective <= paper.objective * (1 + 1e-12)
    assert ours.bound <= exact.objective * (1 + 1e-9)
    assert exact.objective <= ours.objective * (1 + 1e-9)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ps_instances(max_jobs=4, max_machines=3, max_workers=4, max_ps=2, tight=True),
       st.integers(0, 2**32 - 1))
def test_placement_search_places_exactly_what_cp_sat_can_place(instance, pick):
    # the depth-first search's cuts must never cut off a placement: on instances this small it
    # ends well within its node limit, so it finds one exactly when CP-SAT does
    problem = SmdProblem.from_instance(instance)
    cfg = problem.configurations()
    rng = np.random.default_rng(pick)
    choice = np.array([rng.choice(np.flatnonzero(row)) for row in cfg.valid])
    rows = np.arange(problem.num_jobs)
    w, p = cfg.workers[rows, choice], cfg.ps[rows, choice]
    found = _search(problem, w, p)
    placed, why = place(exact_program(problem, cfg, symmetry=False), choice, 30.0)
    event(why)
    assert why in ("placed", "infeasible")
    assert (found is not None) == (why == "placed")
    if found is not None:
        assert Placement(found.workers, found.ps).violations(problem) == []
        np.testing.assert_array_equal(found.w, w)
        np.testing.assert_array_equal(found.p, p)


def test_lns_closes_most_of_the_gap_the_numpy_search_leaves_on_a_binding_instance():
    # a 20-job mixed-regime instance where the numpy search, without the LP relaxation's start,
    # stops 12% above the optimum (the optimum proven by smd_exact below, independently of the
    # search)
    problem = SmdProblem.from_instance(parameter_server_instance(20, 6, seed=2, regime="mixed"))
    numpy_only = smd(problem, place_limit=0, lns_steps=0, lp_start=False)
    exact = smd_exact(problem, warm_start=False)
    assert exact.status.value == "optimal"
    assert numpy_only.objective > exact.objective * 1.005
    # each step given time to finish: the same steps under any load
    placed, stats = improve(problem, numpy_only.placement, steps=60, step_work=30.0,
                            target=exact.objective)
    assert stats["solved"] == stats["steps"]
    assert placed.violations(problem) == []
    assert exact.objective * (1 - 1e-9) <= _objective(problem, placed) <= exact.objective * 1.005


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(regime_instances(max_jobs=8, max_machines=4))
def test_symmetry_breaking_does_not_change_the_optimum(instance):
    problem = SmdProblem.from_instance(instance)
    plain = smd_exact(problem, warm_start=False, symmetry=False)
    broken = smd_exact(problem, warm_start=False, symmetry=True)
    assert plain.status.value == broken.status.value == "optimal"
    assert broken.objective == pytest.approx(plain.objective, rel=1e-6)
    assert_valid(problem, broken)


def test_lns_steps_reach_smd_through_the_policy():
    instance = parameter_server_instance(12, 4, seed=2, regime="nic")
    with pytest.raises(Exception, match="lns_steps must be an integer >= 0"):
        solve(instance, "smd", lns_steps=-1)
    outcome = solve(instance, "smd", lns_steps=3)
    assert 1 <= outcome.details["lns"]["steps"] <= 3 or outcome.status.value == "optimal"
    assert "lns" not in solve(instance, "smd", lns_steps=0).details

"""Chronus lease MILP (docs/formulations.md §3): worked example, exhaustive enumeration, fallback."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from lease_strategies import assert_feasible, enumerate_optimum, lease_problems

from schedopt.backends import SolveResult, Status
from schedopt.backends.session import Solver
from schedopt.errors import PolicyError
from schedopt.policies.chronus import lease_milp as chronus
from schedopt.policies.chronus.lease_milp import (
    LeaseProblem,
    chronus_lease_milp,
    latest_fit_greedy,
    lease_milp,
)

MILP_SOLVERS = ("scip", "cbc", "cpsat")

# Job A (0): 4 GPUs, 2 leases, options (D=2, u=10), (D=3, u=8); job B (1): 8 GPUs, 1 lease,
# (D=2, u=10); C_t = 8 for t = 0..2.
EXAMPLE = {"gpus": [4, 8], "leases_needed": [2, 1], "option_job": [0, 0, 1],
           "option_value": [10, 8, 10], "option_horizon": [2, 3, 2], "capacity": [8, 8, 8]}


@pytest.mark.parametrize("solver", MILP_SOLVERS)
def test_worked_example_runs_guaranteed_jobs_early_with_sigma_plus_one(solver):
    plan = chronus_lease_milp(**EXAMPLE, sigma=1.0, solver=solver)
    assert plan.status is Status.OPTIMAL and not plan.used_fallback
    assert plan.objective == pytest.approx(19.0, abs=1e-9)
    assert plan.bound == pytest.approx(19.0, abs=1e-6)
    assert plan.leases == {0: (1, 2), 1: (0,)}
    assert plan.chosen.tolist() == [1, 2]  # A takes its second option (D=3, u=8)


@pytest.mark.parametrize("solver", MILP_SOLVERS)
def test_worked_example_runs_guaranteed_jobs_late_with_sigma_minus_one(solver):
    plan = chronus_lease_milp(**EXAMPLE, sigma=-1.0, solver=solver)
    assert plan.status is Status.OPTIMAL
    assert plan.objective == pytest.approx(17.5, abs=1e-9)
    assert plan.leases == {0: (0, 2), 1: (1,)}
    assert plan.chosen.tolist() == [1, 2]


def test_worked_example_model_is_sparse_without_columns_past_the_horizon():
    problem = LeaseProblem.from_arrays(**EXAMPLE)
    lp = lease_milp(problem)
    assert lp.num_cols == (2 + 3 + 2) + 3  # x columns t < D_k, then s_k
    assert lp.num_rows == 3 + 3 + 2  # lease_count, capacity, one_option
    assert lp.A.nnz == 7 + 3 + 7 + 3


def test_invalid_inputs_raise_policy_errors():
    with pytest.raises(PolicyError, match="gpus"):
        chronus_lease_milp(**{**EXAMPLE, "gpus": [4.5, 8]})
    with pytest.raises(PolicyError, match="job 5"):
        chronus_lease_milp(**{**EXAMPLE, "option_job": [0, 0, 5]})
    with pytest.raises(PolicyError, match="no deadline option"):
        chronus_lease_milp(**{**EXAMPLE, "option_job": [0, 0, 0]})


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lease_problems())
def test_milp_optimum_matches_exhaustive_enumeration_and_backends_agree(data):
    gpus, needed, job, value, horizon, capacity, admitted = data
    for sigma in (1.0, -1.0):
        problem = LeaseProblem.from_arrays(gpus, needed, job, value, horizon, capacity,
                                           sigma=sigma, admitted=admitted)
        expected = enumerate_optimum(problem)
        for solver in MILP_SOLVERS:
            plan = chronus.solve_lease_problem(problem, solver=solver, mip_gap=0.0)
            assert_feasible(problem, plan)
            if expected is None:
                assert plan.status is Status.INFEASIBLE and plan.used_fallback
                assert plan.unplaced
            else:
                assert plan.status is Status.OPTIMAL, (solver, plan.termination)
                assert plan.objective == pytest.approx(expected, abs=1e-6), solver


def _no_incumbent(solver, lp):
    """`Solver.solve` of a backend that stops before any solution."""
    return SolveResult(status=Status.ERROR, objective=None, bound=None, x=None, solve_seconds=0.0,
                       backend=solver.name, termination="TIME_LIMIT before any solution")


def test_fallback_takes_latest_feasible_leases_when_the_solver_has_no_incumbent(monkeypatch):
    monkeypatch.setattr(Solver, "solve", _no_incumbent)
    # A has only its D=3 option: latest fit gives leases (1, 2); B then fits in lease 0.
    plan = chronus_lease_milp(gpus=[4, 8], leases_needed=[2, 1], option_job=[0, 1],
                              option_value=[8, 10], option_horizon=[3, 2], capacity=[8, 8, 8])
    assert plan.used_fallback and plan.status is Status.FEASIBLE and plan.bound is None
    assert plan.leases == {0: (1, 2), 1: (0,)}
    assert plan.objective == pytest.approx(19.0, abs=1e-9)
    assert plan.termination == "TIME_LIMIT before any solution"


def test_fallback_reports_jobs_the_greedy_cannot_place_with_its_partial_plan(monkeypatch):
    monkeypatch.setattr(Solver, "solve", _no_incumbent)
    # The worked example in option order: A's first option (D=2) takes leases (0, 1), then B
    # (8 GPUs, D=2) fits nowhere, although the MILP would place both.
    plan = chronus_lease_milp(**EXAMPLE)
    assert plan.used_fallback and plan.status is Status.INFEASIBLE
    assert plan.unplaced == (1,)
    assert plan.leases == {0: (0, 1)}
    assert plan.chosen.tolist() == [0, -1]
    assert plan.objective == pytest.approx(10.0 + 4 / 8, abs=1e-9)


def test_tiny_time_limit_returns_a_feasible_plan_either_way():
    rng = np.random.default_rng(3)
    n, H = 120, 24
    gpus = rng.choice([1, 2, 4, 8], n)
    needed = rng.integers(1, 5, n)
    job = np.repeat(np.arange(n), 2)
    horizon = np.minimum(needed[job] + rng.integers(0, 20, 2 * n), H)
    value = np.tile([5.0, 2.0], n)
    capacity = np.full(H, 32)
    candidate = LeaseProblem.from_arrays(gpus, needed, job, value, horizon, capacity,
                                         admitted=np.zeros(n, dtype=bool))
    admitted = latest_fit_greedy(candidate)[0] >= 0
    problem = LeaseProblem.from_arrays(gpus, needed, job, value, horizon, capacity,
                                       admitted=admitted)
    plan = chronus.solve_lease_problem(problem, solver="scip", time_limit=1e-3)
    assert plan.status in (Status.OPTIMAL, Status.FEASIBLE)
    assert_feasible(problem, plan)
    assert plan.used_fallback == (plan.bound is None)
    assert np.all(plan.chosen[admitted] >= 0)


def test_a_job_turned_away_is_admitted_at_a_later_boundary_once_it_fits():
    from schedopt.backends.session import Solver
    from schedopt.core.events import LeaseBoundary
    from schedopt.policies.chronus.boundary import LeaseJobs
    from schedopt.policies.chronus.policy import ChronusOptions, chronus_online

    # 1 GPU, leases of 100 s, no overhead. At 0: a (200 s, due 200) is admitted on leases 0-1;
    # b (100 s, due 200) cannot fit and is turned away. At 100 a is gone (say it ended
    # early) and b, no longer arriving, fits lease 1: admitted only when turned-away jobs try
    # again.
    ids = np.array(["a", "b"], dtype=object)
    first = LeaseJobs(np.array([1, 1]), np.array([200.0, 100.0]), np.array([0, 1]),
                      np.array([200.0, 200.0]), np.ones(2))
    later = LeaseJobs(np.array([1]), np.array([100.0]), np.array([0]), np.array([200.0]),
                      np.ones(1))
    for readmit, expect in ((True, ["b"]), (False, [])):
        options = ChronusOptions(lease_seconds=100.0, resume_overhead_s=0.0, readmit=readmit)
        memory: dict = {}
        solver = Solver("cpsat")
        out = chronus_online(LeaseBoundary(ids, np.zeros(2), np.array([200.0, 200.0]), first, 1,
                                           "v100", 0.0, 100.0, np.zeros(2, dtype=bool),
                                           np.ones(2, dtype=bool), np.arange(2), memory),
                             options, solver)
        assert out.decision.admitted == ["a"] and out.decision.running == ["a"]
        out = chronus_online(LeaseBoundary(ids[1:], np.zeros(1), np.array([200.0]), later, 1,
                                           "v100", 100.0, 100.0, np.zeros(1, dtype=bool),
                                           np.zeros(1, dtype=bool), np.array([1]), memory),
                             options, solver)
        assert out.decision.admitted == expect and out.decision.running == ["b"]

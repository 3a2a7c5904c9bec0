"""The Chronus lease solve pipeline: LP bound, rounding, restricted and full MILP, MIP starts."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from lease_strategies import assert_feasible, enumerate_optimum, lease_problems

from schedopt.backends import SolveOptions, SolveResult, Status, solve_lp
from schedopt.backends.session import Solver
from schedopt.policies.chronus import lease_milp as chronus
from schedopt.policies.chronus.lease_milp import (
    LeaseProblem,
    _lp_values,
    _plan_vector,
    lease_milp,
    lease_relaxation,
)
from schedopt.policies.chronus.rounding import lp_roundings

# Job A (0): 4 GPUs, 2 leases, options (D=2, u=10), (D=3, u=8); job B (1): 8 GPUs, 1 lease,
# (D=2, u=10); C_t = 8. Optimum 19 (A late on D=3, B in lease 0); the LP bound is 21.
EXAMPLE = LeaseProblem.from_arrays(gpus=[4, 8], leases_needed=[2, 1], option_job=[0, 0, 1],
                                   option_value=[10, 8, 10], option_horizon=[2, 3, 2],
                                   capacity=[8, 8, 8])


def problems(data):
    gpus, needed, job, value, horizon, capacity, admitted = data
    for sigma in (1.0, -1.0):
        yield LeaseProblem.from_arrays(gpus, needed, job, value, horizon, capacity, sigma=sigma,
                                       admitted=admitted)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lease_problems())
def test_lp_bound_is_valid_and_at_least_as_tight_as_the_plain_relaxation(data):
    for problem in problems(data):
        expected = enumerate_optimum(problem)
        tightened = solve_lp(lease_relaxation(problem), "highs")
        plain = solve_lp(replace(lease_milp(problem), integer=None), "highs")
        assert tightened.status in (Status.OPTIMAL, Status.INFEASIBLE)
        if plain.status is Status.INFEASIBLE:  # the tightened rows can only cut more
            assert tightened.status is Status.INFEASIBLE
        elif tightened.status is Status.OPTIMAL:
            assert tightened.objective <= plain.objective + 1e-7
        if expected is not None:
            assert tightened.status is Status.OPTIMAL
            assert tightened.objective >= expected - 1e-7
            plan = chronus.solve_lease_problem(problem, time_limit=None)
            assert plan.status is Status.OPTIMAL and not plan.used_fallback
            assert plan.objective == pytest.approx(expected, abs=1e-6)
            assert plan.details["lp_bound"] == pytest.approx(tightened.objective, abs=1e-9)
            assert expected - 1e-6 <= plan.bound <= tightened.objective + 1e-9
            assert plan.details["incumbent_from"] in ("lp", "lp_rounding", "restricted", "solver")
            assert_feasible(problem, plan)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lease_problems())
def test_milp_with_a_start_has_the_optimum_of_the_milp_without(data):
    rng = np.random.default_rng(0)
    for problem in problems(data):
        milp = lease_milp(problem)
        relaxation = solve_lp(lease_relaxation(problem), "highs")
        if relaxation.status is not Status.OPTIMAL:
            continue
        rounded = _plan_vector(problem, *lp_roundings(problem, *_lp_values(problem,
                                                                          relaxation.x))[0])
        for solver in ("cpsat", "scip"):
            plain = solve_lp(milp, solver, SolveOptions(mip_gap=0.0))
            for start in (rounded, rng.integers(0, 2, milp.num_cols).astype(float)):
                hinted = solve_lp(milp, solver, SolveOptions(mip_gap=0.0, start=start))
                assert hinted.status is plain.status
                if plain.status is Status.OPTIMAL:
                    assert hinted.objective == pytest.approx(plain.objective, abs=1e-6)


class Spy:
    """Records (solver, options) of every solve through a `Solver` session (installed by
    `spy_on`); solvers in `fail` return no solution."""

    def __init__(self, fail=()):
        self.calls = []
        self.fail = fail

    def __call__(self, lp, solver, options):
        self.calls.append((solver, options))
        if solver in self.fail:
            return SolveResult(status=Status.ERROR, objective=None, bound=None, x=None,
                               solve_seconds=0.0, backend=solver, termination="no solution")
        return solve_lp(lp, solver, options)


def spy_on(monkeypatch, spy):
    """Send every `Solver.solve(lp)` to spy(lp, backend name, settings) (the session still
    records the program)."""
    def solve(self, lp):
        self.record(lp)
        return spy(lp, self.name, self.settings)

    monkeypatch.setattr(Solver, "solve", solve)


def test_an_integral_lp_solution_is_the_plan_without_any_milp(monkeypatch):
    spy = Spy()
    spy_on(monkeypatch, spy)
    # Both jobs fit: the LP optimum is integral (A in leases 0-1, B in lease 0 of 12 GPUs).
    plan = chronus.chronus_lease_milp(gpus=[4, 8], leases_needed=[2, 1], option_job=[0, 1],
                                      option_value=[10, 10], option_horizon=[2, 2],
                                      capacity=[12, 12])
    assert [solver for solver, _ in spy.calls] == ["highs"]
    assert plan.status is Status.OPTIMAL and plan.details["incumbent_from"] == "lp"
    assert plan.objective == pytest.approx(20.0 + 12 / 12, abs=1e-9)
    assert plan.bound == pytest.approx(plan.objective, abs=1e-9)
    assert plan.leases == {0: (0, 1), 1: (0,)}
    assert plan.termination == "optimal: the plan attains the LP bound"


def test_the_rounded_plan_is_kept_when_the_milp_solver_finds_nothing(monkeypatch):
    spy = Spy(fail=("cpsat",))
    spy_on(monkeypatch, spy)
    plan = chronus.solve_lease_problem(EXAMPLE, solver="cpsat")
    assert [solver for solver, _ in spy.calls] == ["highs", "cpsat", "cpsat"]
    assert not plan.used_fallback and plan.details["incumbent_from"] == "lp_rounding"
    assert plan.status is Status.FEASIBLE
    assert plan.bound == pytest.approx(21.0, abs=1e-7) == plan.details["lp_bound"]
    assert plan.details["solver_bound"] is None
    assert_feasible(EXAMPLE, plan)
    relaxation = solve_lp(lease_relaxation(EXAMPLE), "highs")
    values = [chronus._objective(EXAMPLE, *rounded)
              for rounded in lp_roundings(EXAMPLE, *_lp_values(EXAMPLE, relaxation.x))]
    assert plan.objective == max(values)


def test_milp_stages_start_from_the_best_plan_and_leave_time_to_stop(monkeypatch):
    spy = Spy()
    spy_on(monkeypatch, spy)
    plan = chronus.solve_lease_problem(EXAMPLE, solver="scip", time_limit=5.0)
    assert plan.status is Status.OPTIMAL and plan.objective == pytest.approx(19.0, abs=1e-9)
    (lp_solver, lp_options), *milp_calls = spy.calls
    assert lp_solver == "highs" and lp_options.start is None and lp_options.time_limit <= 5.0
    assert [solver for solver, _ in milp_calls] == ["scip", "scip"]
    cols = lease_milp(EXAMPLE).num_cols
    for _, options in milp_calls:
        assert options.start.shape == (cols,)
        assert set(np.unique(options.start)) <= {0.0, 1.0}
        assert options.start[cols - EXAMPLE.num_options:].sum() == EXAMPLE.num_jobs
        assert options.time_limit <= 5.0 - chronus.STOP_SECONDS


def test_a_mip_gap_met_by_the_rounded_plan_skips_the_milp(monkeypatch):
    spy = Spy()
    spy_on(monkeypatch, spy)
    plan = chronus.solve_lease_problem(EXAMPLE, mip_gap=0.5)
    assert [solver for solver, _ in spy.calls] == ["highs"]
    assert plan.status is Status.FEASIBLE and plan.gap <= 0.5
    assert plan.details["incumbent_from"] == "lp_rounding"
    assert plan.termination.startswith("gap ") and "mip_gap 0.5" in plan.termination


def test_without_a_plan_the_fallback_keeps_the_lp_bound_unless_it_is_infeasible(monkeypatch):
    # Every MILP finds nothing and the rounding (replaced) schedules nothing: the plan is the
    # latest-fit greedy's. In option order it puts A in leases (0, 1), then B fits nowhere.
    spy_on(monkeypatch, Spy(fail=("cpsat",)))
    monkeypatch.setattr(chronus, "lp_roundings",
                        lambda problem, s, x: [(np.full(problem.num_jobs, -1),
                                                np.zeros((problem.num_jobs, problem.num_leases),
                                                         dtype=bool))])
    plan = chronus.solve_lease_problem(EXAMPLE, solver="cpsat")
    assert plan.used_fallback and plan.details["incumbent_from"] == ""
    assert plan.status is Status.INFEASIBLE and plan.unplaced == (1,) and plan.bound is None
    assert plan.leases == {0: (0, 1)}
    # B optional: the same greedy plan is feasible, and the LP bound (21, fractional LP) stays.
    optional = replace(EXAMPLE, admitted=np.array([True, False]))
    plan = chronus.solve_lease_problem(optional, solver="cpsat")
    assert plan.used_fallback and plan.status is Status.FEASIBLE and plan.unplaced == ()
    assert plan.objective == pytest.approx(10.0 + 4 / 8, abs=1e-9)
    assert plan.bound == pytest.approx(21.0, abs=1e-7) == plan.details["lp_bound"]


def test_problems_without_options_or_jobs_are_optimal_with_nothing_scheduled():
    for gpus, admitted in (([1, 2], [False, False]), ([], None)):
        problem = LeaseProblem.from_arrays(gpus=gpus, leases_needed=[1] * len(gpus),
                                           option_job=[], option_value=[], option_horizon=[],
                                           capacity=[4, 4], admitted=admitted)
        plan = chronus.solve_lease_problem(problem)
        assert plan.status is Status.OPTIMAL and plan.objective == 0.0 and plan.bound == 0.0
        assert plan.leases == {} and plan.chosen.tolist() == [-1] * len(gpus)


def test_the_chronus_policy_solves_on_the_solver_session_it_receives(monkeypatch):
    import schedopt
    from schedopt.instance import load_instance

    spy = Spy()
    spy_on(monkeypatch, spy)
    instance = load_instance(Path(__file__).resolve().parents[1] / "instances" /
                             "chronus-leases.json")
    session = Solver("scip", SolveOptions(time_limit=3.0, threads=1), keep_programs=True)
    # search=True: the solver stages run (by default only the LP and its roundings).
    result = schedopt.solve(instance, "chronus", solver=session, search=True)
    assert result.solver == "scip"
    # The LP stage on HiGHS, then (if any) the MILP stages on scip, all with the session's
    # thread count, within its time limit, and the record ends with the lease MILP.
    assert spy.calls and spy.calls[0][0] == "highs"
    assert {name for name, _ in spy.calls[1:]} <= {"scip"}
    assert all(options.threads == 1 and options.time_limit <= 3.0 for _, options in spy.calls)
    milp = session.last_program
    assert milp is not None and milp.integer is not None and milp.integer.all()
    assert session.programs[0].integer is None  # the LP relaxation, solved first
    assert session.programs[0].num_cols == milp.num_cols

"""What shrinks smd_exact's MILP before CP-SAT starts (schedopt.policies.smd.exact): column bounds
from the LP's reduced costs (checked against every integer point of small programs, enumerated),
smd's placement permuted to satisfy the symmetry rows (checked row by row), and smd_exact with
both against smd_exact without them and brute force."""

from __future__ import annotations

import copy
import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smd_strategies import ps_instances, regime_instances
from test_smd import assert_valid, brute_force
from schedopt.backends import LinearProgram
from schedopt.instance import parse_instance
from schedopt.policies.smd.algorithm import smd
from schedopt.policies.smd.bound import dual_bound, reduced_cost_bounds, solve_relaxation
from schedopt.policies.smd.exact import smd_exact
from schedopt.policies.smd.milp import exact_program
from schedopt.policies.smd.model import Placement, SmdProblem
from schedopt.traces.parameter_server import parameter_server_document


def test_reduced_cost_bounds_of_a_hand_worked_program():
    # min x0 + 2 x1  s.t.  x0 + x1 >= 3,  0 <= x <= 5 integer.  At y = 1: L = 3, reduced costs
    # (0, 1), so a point of objective <= 4 has x1 <= (4 - 3) / 1: the points are (3, 0), (4, 0)
    # and (2, 1); x0 has reduced cost 0 and keeps its bounds
    lp = LinearProgram(c=np.array([1.0, 2.0]), A=sp.csr_matrix([[1.0, 1.0]]),
                       row_lower=np.array([3.0]), row_upper=np.array([np.inf]),
                       col_lower=np.zeros(2), col_upper=np.full(2, 5.0),
                       integer=np.ones(2, dtype=bool))
    lower, upper = reduced_cost_bounds(lp, np.array([1.0]), 4.0)
    assert lower.tolist() == [0.0, 0.0] and upper.tolist() == [5.0, 1.0]
    # below the bound L nothing qualifies
    assert reduced_cost_bounds(lp, np.array([1.0]), 2.5) is None


@st.composite
def small_programs(draw):
    """min c x s.t. rl <= A x <= ru, integer 0 <= x <= u, 2-4 columns, 1-3 rows."""
    n, m = draw(st.integers(2, 4)), draw(st.integers(1, 3))
    num = st.integers(-4, 6)
    A = np.array([[draw(num) for _ in range(n)] for _ in range(m)], dtype=float)
    c = np.array([draw(st.integers(-3, 9)) for _ in range(n)], dtype=float)
    lo = np.array([draw(st.sampled_from([-np.inf, -2.0, 0.0, 1.0])) for _ in range(m)])
    hi = np.array([draw(st.sampled_from([np.inf, 3.0, 6.0, 10.0])) for _ in range(m)])
    upper = np.array([draw(st.integers(1, 3)) for _ in range(n)], dtype=float)
    return LinearProgram(c=c, A=sp.csr_matrix(A), row_lower=np.minimum(lo, hi), row_upper=hi,
                         col_lower=np.zeros(n), col_upper=upper, integer=np.ones(n, dtype=bool))


@settings(max_examples=150, deadline=None)
@given(small_programs(), st.integers(0, 2**31 - 1), st.floats(0, 12))
def test_reduced_cost_bounds_keep_every_integer_point_below_the_limit(lp, seed, extra):
    points = np.array(list(itertools.product(*[range(int(u) + 1) for u in lp.col_upper])),
                      dtype=float)
    Ax = points @ lp.A.toarray().T
    feasible = points[((Ax >= lp.row_lower - 1e-9) & (Ax <= lp.row_upper + 1e-9)).all(axis=1)]
    values = feasible @ lp.c
    rng = np.random.default_rng(seed)
    relaxed, _, duals = solve_relaxation(lp)
    multipliers = [rng.normal(scale=3.0, size=lp.num_rows) for _ in range(3)]
    multipliers += [] if duals is None else [duals]
    best = values.min() if values.size else 0.0
    for limit in (best, best + extra):
        for y in multipliers:
            out = reduced_cost_bounds(lp, y, limit)
            kept = feasible[values <= limit + 1e-9]
            if out is None:  # only when the bound shows nothing reaches the limit
                assert kept.size == 0 and dual_bound(lp, y) > limit
                continue
            lower, upper = out
            assert (kept >= lower - 1e-9).all() and (kept <= upper + 1e-9).all()
            assert (lower >= lp.col_lower).all() and (upper <= lp.col_upper).all()


def _rows_hold(program, vector) -> bool:
    Ax = program.lp.A @ vector
    return bool(np.all(Ax >= program.lp.row_lower - 1e-9)
                and np.all(Ax <= program.lp.row_upper + 1e-9))


def _twins(jobs: int, machines: int, seed: int, regime: str) -> SmdProblem:
    """A drawn instance with its last three jobs replaced by copies of the first two (identical
    jobs) and identical machines (the regimes' template copies)."""
    doc = parameter_server_document(jobs, machines, seed=seed, regime=regime)
    for k, source in zip(range(jobs - 3, jobs), (0, 0, 1)):
        doc["jobs"][k] = {**copy.deepcopy(doc["jobs"][source]), "id": f"twin{k}"}
    return SmdProblem.from_instance(parse_instance(doc))


@pytest.mark.parametrize("regime,seed",
                         [("nic", 0), ("nic", 4), ("mixed", 5), ("loose", 2), ("cpu", 3)])
def test_the_start_satisfies_the_symmetry_rows_and_keeps_the_placement(regime, seed):
    problem = _twins(12, 8, seed, regime)
    cfg = problem.configurations()
    program = exact_program(problem, cfg)
    assert program.machine_groups and program.job_groups
    placement = smd(problem, lns_steps=0, place_limit=0).placement
    rng = np.random.default_rng(seed)
    # also with identical machines and identical jobs shuffled, which breaks the order rows
    machines, jobs = np.arange(problem.num_machines), np.arange(problem.num_jobs)
    for group in program.machine_groups:
        machines[group] = rng.permutation(group)
    for group in program.job_groups:
        jobs[group] = rng.permutation(group)
    shuffled = Placement(placement.workers[jobs][:, machines], placement.ps[jobs][:, machines])
    for original in (placement, shuffled):
        canonical = program.canonical(cfg, original)
        assert canonical.violations(problem) == []
        vector = program.start(cfg, canonical)
        assert vector is not None and _rows_hold(program, vector)
        # the same multiset of (w, p) per group of identical jobs, same sum of completion times
        assert problem.completion_time(canonical.total_workers, canonical.total_ps).sum() == \
            pytest.approx(problem.completion_time(original.total_workers, original.total_ps).sum())
        # each machine's load is one of the original machines' (a permutation within groups)
        assert sorted(map(tuple, problem.usage(canonical.workers, canonical.ps).round(9))) == \
            sorted(map(tuple, problem.usage(original.workers, original.ps).round(9)))


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(regime_instances(max_jobs=9, max_machines=4))
def test_smd_exact_shrunk_equals_smd_exact_without(instance):
    problem = SmdProblem.from_instance(instance)
    start = smd(problem, lns_steps=0, place_limit=0)  # the same start for both
    shrunk = smd_exact(problem, start=start)
    plain = smd_exact(problem, reduced_cost=False, canonical_start=False, start=start)
    assert shrunk.status.value == plain.status.value == "optimal"
    assert_valid(problem, shrunk)
    assert shrunk.objective == pytest.approx(plain.objective, rel=1e-6)
    relaxed = shrunk.details["relaxation"]
    assert relaxed is None or relaxed <= shrunk.bound * (1 + 1e-9)
    assert shrunk.bound <= shrunk.objective * (1 + 1e-9)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ps_instances(max_jobs=3, max_machines=2, max_workers=3, max_ps=2, tight=True))
def test_smd_exact_shrunk_equals_brute_force(instance):
    problem = SmdProblem.from_instance(instance)
    expected = brute_force(instance)
    result = smd_exact(problem)
    if expected is None:
        assert result.placement is None
        return
    assert result.status.value == "optimal"
    assert result.objective == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("seed", [3, 4])
def test_placing_the_relaxations_configurations_proves_what_cpsat_proves(seed, monkeypatch):
    # 12 jobs on 6 NIC-bound machines: the relaxation with integer configurations chooses
    # configurations that the tabu search places, so smd_exact answers without CP-SAT (its
    # short first run left out here: it proves these small instances itself); CP-SAT run to
    # optimality without that step finds the same optimum, below smd's answer
    import schedopt.policies.smd.exact as exact
    from schedopt.backends import Status

    problem = SmdProblem.from_instance(parse_instance(
        parameter_server_document(12, 6, seed=seed, regime="nic")))
    start = smd(problem)
    solved = smd_exact(problem, start=start, place_relaxation=False)
    default = smd_exact(problem, start=start)
    monkeypatch.setattr(exact, "QUICK_WORK", 0.0)
    placed = smd_exact(problem, start=start)
    assert placed.details["relaxation_placed"] is True
    assert "termination" not in placed.details  # CP-SAT did not run
    assert placed.status is Status.OPTIMAL and solved.status is Status.OPTIMAL
    assert default.status is Status.OPTIMAL
    assert_valid(problem, placed)
    assert placed.objective == pytest.approx(solved.objective, rel=1e-9)
    assert default.objective == pytest.approx(solved.objective, rel=1e-9)
    assert placed.objective < start.objective * (1 - 1e-4)
    assert placed.bound == pytest.approx(placed.objective, rel=1e-9)
    assert placed.details["configurations"] == pytest.approx(placed.objective, rel=1e-9)


def test_without_a_placement_the_relaxations_bound_is_kept(monkeypatch):
    # the relaxation's configurations given no tries: smd_exact goes on to CP-SAT, and its
    # bound is at least that relaxation's and at most the optimum
    import schedopt.policies.smd.exact as exact

    problem = SmdProblem.from_instance(parse_instance(
        parameter_server_document(12, 6, seed=3, regime="nic")))
    monkeypatch.setattr(exact, "PROOF_TRIES", 0)
    monkeypatch.setattr(exact, "QUICK_WORK", 0.0)
    result = smd_exact(problem, start=smd(problem))
    assert result.details["relaxation_placed"] is False
    assert result.status.value == "optimal"
    assert result.details["configurations"] <= result.objective * (1 + 1e-9)
    assert result.details["configurations"] > result.details["relaxation"]

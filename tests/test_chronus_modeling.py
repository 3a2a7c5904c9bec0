"""Chronus' lease MILP stated with `schedopt.modeling` compiles to the program the hand-built
scipy.sparse builder made (kept below as the reference), and both solve to one optimum."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp

from schedopt.backends import SolveOptions, Status, solve_lp
from schedopt.backends.base import LinearProgram
from schedopt.policies.chronus.lease_milp import (
    LeaseProblem,
    lease_milp,
    lease_programs,
    lease_relaxation,
)


def _option_columns(problem):
    length = np.minimum(problem.option_horizon, problem.num_leases)
    start = np.concatenate(([0], np.cumsum(length)))
    option = np.repeat(np.arange(problem.num_options), length)
    lease = np.arange(start[-1]) - start[option]
    return option, lease, start


def reference_milp(problem: LeaseProblem) -> LinearProgram:
    """The lease MILP as schedopt built it by hand with scipy.sparse, before the modelling
    layer (rows: lease_count, capacity, one_option, overfill)."""
    K, H, J = problem.num_options, problem.num_leases, problem.num_jobs
    option, lease, _ = _option_columns(problem)
    X = option.shape[0]
    n_cols = X + K
    g_opt = problem.gpus[problem.option_job]
    n_opt = problem.leases_needed[problem.option_job]
    width = problem.width[lease].astype(float)
    lease_count = sp.csr_matrix(
        (np.concatenate((width, -n_opt.astype(float))),
         (np.concatenate((option, np.arange(K))), np.arange(n_cols))), shape=(K, n_cols))
    widest = np.zeros(K)
    np.maximum.at(widest, option, width)
    over = np.flatnonzero(widest > 1)
    in_over = np.full(K, -1)
    in_over[over] = np.arange(over.size)
    on = in_over[option] >= 0
    overfill = sp.csr_matrix(
        (np.concatenate((width[on], -(n_opt[over] + widest[over] - 1))),
         (np.concatenate((in_over[option[on]], np.arange(over.size))),
          np.concatenate((np.flatnonzero(on), X + over)))), shape=(over.size, n_cols))
    capacity = sp.csr_matrix((g_opt[option].astype(float), (lease, np.arange(X))), shape=(H, n_cols))
    one_option = sp.csr_matrix((np.ones(K), (problem.option_job, X + np.arange(K))),
                               shape=(J, n_cols))
    A = sp.vstack([lease_count, capacity, one_option, overfill], format="csr")
    row_lower = np.concatenate((np.zeros(K), np.full(H, -np.inf), problem.admitted.astype(float),
                                np.full(over.size, -np.inf)))
    row_upper = np.concatenate((np.where(widest > 1, np.inf, 0.0),
                                problem.capacity.astype(float), np.ones(J), np.zeros(over.size)))
    c = np.zeros(n_cols)
    c[X:] = problem.option_value
    first = lease == 0
    c[np.flatnonzero(first)] = problem.sigma * g_opt[option[first]] / max(problem.capacity.max(), 1)
    col_upper = np.ones(n_cols)
    col_upper[:X] = (g_opt[option] <= problem.capacity[lease]).astype(float)
    col_upper[X:] = (problem.leases_within(problem.option_horizon) >= n_opt).astype(float)
    return LinearProgram(c=c, A=A, row_lower=row_lower, row_upper=row_upper,
                         col_lower=np.zeros(n_cols), col_upper=col_upper, maximize=True,
                         integer=np.ones(n_cols, dtype=bool))


def reference_relaxation(problem: LeaseProblem) -> LinearProgram:
    milp = reference_milp(problem)
    option, _, _ = _option_columns(problem)
    X = option.shape[0]
    rows = np.arange(X)
    vub = sp.csr_matrix((np.concatenate((np.ones(X), -np.ones(X))),
                         (np.concatenate((rows, rows)), np.concatenate((rows, X + option)))),
                        shape=(X, milp.num_cols))
    return replace(milp, A=sp.vstack([milp.A, vub], format="csr"),
                   row_lower=np.concatenate((milp.row_lower, np.full(X, -np.inf))),
                   row_upper=np.concatenate((milp.row_upper, np.zeros(X))), integer=None)


def random_problem(seed: int, jobs: int = 6, slots: int = 5, coarse: bool = True) -> LeaseProblem:
    """Random jobs (1-3 options each, in shuffled order) on `slots` slots; widths 1, 2, 4... past
    the first slots when `coarse`."""
    rng = np.random.default_rng(seed)
    options = rng.integers(1, 4, jobs)
    job = rng.permutation(np.repeat(np.arange(jobs), options))
    width = 2 ** np.clip(np.arange(slots) - 1, 0, 3) if coarse else None
    return LeaseProblem.from_arrays(
        gpus=rng.choice([1, 2, 4, 8], jobs), leases_needed=rng.integers(1, 6, jobs),
        option_job=job, option_value=rng.integers(1, 10, job.size).astype(float),
        option_horizon=rng.integers(1, slots + 2, job.size),
        capacity=rng.integers(0, 12, slots), sigma=float(rng.choice([1.0, -1.0])),
        admitted=rng.random(jobs) < 0.3, width=width)


def assert_same_program(ours: LinearProgram, reference: LinearProgram):
    assert ours.A.shape == reference.A.shape
    difference = (ours.A - reference.A).tocsr()
    difference.eliminate_zeros()
    assert difference.nnz == 0
    reference_A = reference.A.copy()
    reference_A.eliminate_zeros()
    assert ours.A.nnz == reference_A.nnz
    for field in ("c", "row_lower", "row_upper", "col_lower", "col_upper"):
        np.testing.assert_array_equal(getattr(ours, field), getattr(reference, field), err_msg=field)
    assert ours.maximize == reference.maximize
    if reference.integer is None:
        assert ours.integer is None
    else:
        np.testing.assert_array_equal(ours.integer, reference.integer)


@pytest.mark.parametrize("coarse", [False, True])
@pytest.mark.parametrize("seed", range(30))
def test_lease_milp_and_relaxation_compile_to_the_hand_built_programs(seed, coarse):
    problem = random_problem(seed, jobs=1 + seed % 9, slots=1 + seed % 7, coarse=coarse)
    assert_same_program(lease_milp(problem), reference_milp(problem))
    assert_same_program(lease_relaxation(problem), reference_relaxation(problem))


def test_a_large_problem_compiles_to_the_hand_built_program():
    problem = random_problem(7, jobs=400, slots=40)
    assert_same_program(lease_milp(problem), reference_milp(problem))
    assert_same_program(lease_relaxation(problem), reference_relaxation(problem))


@pytest.mark.parametrize("solver", ["cpsat", "scip"])
@pytest.mark.parametrize("seed", range(12))
def test_both_programs_have_one_optimum_on_a_highs_free_milp_backend(seed, solver):
    problem = random_problem(100 + seed, jobs=5, slots=6)
    options = SolveOptions(mip_gap=0.0)
    ours = solve_lp(lease_milp(problem), solver, options)
    reference = solve_lp(reference_milp(problem), solver, options)
    assert ours.status is reference.status
    assert ours.status in (Status.OPTIMAL, Status.INFEASIBLE)
    if ours.status is Status.OPTIMAL:
        assert ours.objective == pytest.approx(reference.objective, abs=1e-6)


@pytest.mark.parametrize("seed", range(10))
def test_the_pair_from_one_compile_is_the_milp_and_its_relaxation(seed):
    problem = random_problem(200 + seed, jobs=1 + seed, slots=2 + seed)
    milp, relaxation = lease_programs(problem)
    assert_same_program(milp, reference_milp(problem))
    assert_same_program(relaxation, reference_relaxation(problem))

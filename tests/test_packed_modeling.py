"""The space-sharing LP stated with `schedopt.modeling` (`master.space_sharing_model`) is the
program the hand-built sparse blocks gave (a copy of that builder is kept here as the
reference), and its optimum is the one scipy's linprog finds on the reference program."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog

from schedopt.backends.base import LinearProgram
from schedopt.backends.session import Solver
from schedopt.core.problem import ThroughputProblem
from schedopt.policies.packed.master import (Candidates, master_lp, max_min_fairness_packed,
                                             pair_columns, scaling, space_sharing_model)
from schedopt.policies.packed import seed as seed_module
from test_packed import random_case, typed_case


# ------------------------------------------------ the hand-built builder, as it was (reference)

def old_per_job_rows(coeffs, extra_cols=0):
    M, J = coeffs.shape
    indptr = np.arange(0, M * J + 1, J)
    return sp.csr_matrix((coeffs.ravel(), np.arange(M * J), indptr), shape=(M, M * J + extra_cols))


def old_per_type_rows(coeffs, extra_cols=0):
    M, J = coeffs.shape
    rows = np.tile(np.arange(J), M)
    return sp.csr_matrix((coeffs.ravel(), (rows, np.arange(M * J))), shape=(J, M * J + extra_cols))


def old_column(values, col, num_cols):
    n = values.shape[0]
    return sp.csr_matrix((values, (np.arange(n), np.full(n, col))), shape=(n, num_cols))


def old_base_rows(problem, extra_cols=0):
    M, J = problem.num_jobs, problem.num_types
    time_rows = old_per_job_rows(np.ones((M, J)), extra_cols)
    share = problem.scale_factor[:, None] / np.maximum(problem.capacity, 1e-300)[None, :]
    A = sp.vstack([time_rows, old_per_type_rows(share, extra_cols)], format="csr")
    return A, np.full(M + J, -np.inf), np.ones(M + J)


def old_master_lp(problem: ThroughputProblem) -> LinearProgram:
    M, J = problem.num_jobs, problem.num_types
    Tmax, k = scaling(problem)
    base, base_lo, base_hi = old_base_rows(problem, extra_cols=1)
    fair = old_per_job_rows(problem.throughput * problem.runnable / Tmax[:, None], 1) \
        - old_column(k, M * J, M * J + 1)
    col_hi = np.where(problem.runnable, np.inf, 0.0).ravel()
    return LinearProgram(
        c=np.concatenate([np.zeros(M * J), [1.0]]), A=sp.vstack([base, fair], format="csr"),
        row_lower=np.concatenate([base_lo, np.zeros(M)]),
        row_upper=np.concatenate([base_hi, np.full(M, np.inf)]),
        col_lower=np.zeros(M * J + 1), col_upper=np.concatenate([col_hi, [np.inf]]),
        maximize=True)


def old_pair_columns(problem, cand, pj, pm, pq):
    M, J = problem.num_jobs, problem.num_types
    Tmax, _ = scaling(problem)
    n = pj.shape[0]
    rows = np.stack([pm, pq, M + pj, M + J + pm, M + J + pq], axis=1)
    values = np.stack([np.ones(n), np.ones(n), problem.scale_factor[pm] / problem.capacity[pj],
                       cand.Q[pj, pm, pq] / Tmax[pm], cand.Q[pj, pq, pm] / Tmax[pq]], axis=1)
    A = sp.csc_matrix((values.ravel(), (rows.ravel(), np.repeat(np.arange(n), 5))),
                      shape=(2 * M + J, n))
    A.eliminate_zeros()
    A.sort_indices()
    return A


def old_class_lp(problem, cand, cls, size, rep, partner, pj, c1, c2) -> LinearProgram:
    C, J, n, M = size.size, problem.num_types, pj.size, problem.num_jobs
    mean = sp.csr_matrix((1.0 / size[cls], (cls, np.arange(M))), shape=(C, M))
    Tmax, k = scaling(problem)
    T = mean @ (problem.throughput * problem.runnable / Tmax[:, None])
    k = mean @ k
    share = problem.scale_factor[rep, None] / problem.capacity[None, :]
    a, b = rep[c1], partner[c1, c2]
    solo_c, solo_j = np.divmod(np.arange(C * J), J)
    y_col = C * J + 1 + np.arange(n)
    rows = np.concatenate([solo_c, C + solo_j, C + J + solo_c, C + J + np.arange(C),
                           c1, c2, C + pj, C + J + c1, C + J + c2])
    cols = np.concatenate([np.arange(C * J)] * 3 + [np.full(C, C * J)] + [y_col] * 5)
    vals = np.concatenate([np.ones(C * J), (size[:, None] * share).ravel(), T.ravel(), -k,
                           1.0 / size[c1], 1.0 / size[c2], share[c1, pj],
                           cand.Q[pj, a, b] / Tmax[a] / size[c1], cand.Q[pj, b, a] / Tmax[b] / size[c2]])
    A = sp.csr_matrix((vals, (rows, cols)), shape=(2 * C + J, C * J + 1 + n))  # sums c1 == c2
    upper = np.concatenate([np.where(T > 0, np.inf, 0.0).ravel(), [np.inf], np.full(n, np.inf)])
    return LinearProgram(np.concatenate([np.zeros(C * J), [1.0], np.zeros(n)]), A,
                         np.concatenate([np.full(C + J, -np.inf), np.zeros(C)]),
                         np.concatenate([np.ones(C + J), np.full(C, np.inf)]),
                         np.zeros(C * J + 1 + n), upper, maximize=True)


def old_with_pairs(master, pairs):
    n = pairs.shape[1]
    return LinearProgram(np.concatenate([master.c, np.zeros(n)]),
                         sp.hstack([master.A.tocsc(), pairs], format="csr"), master.row_lower,
                         master.row_upper, np.concatenate([master.col_lower, np.zeros(n)]),
                         np.concatenate([master.col_upper, np.full(n, np.inf)]), maximize=True)


# ------------------------------------------------------------------------------------ checks

def same_matrix(a, b) -> None:
    """Equal entry by entry, explicit zeros aside."""
    a, b = sp.csr_matrix(a), sp.csr_matrix(b)
    assert a.shape == b.shape
    diff = (a - b).tocsr()
    diff.eliminate_zeros()
    assert diff.nnz == 0 or abs(diff).max() == 0.0


def same_program(new: LinearProgram, old: LinearProgram) -> None:
    same_matrix(new.A, old.A)
    for field in ("c", "row_lower", "row_upper", "col_lower", "col_upper"):
        np.testing.assert_array_equal(getattr(new, field), getattr(old, field), err_msg=field)
    assert new.maximize and old.maximize and new.integer is None
    assert new.objective_offset == 0.0


def cases():
    for seed in range(30):
        yield random_case(seed)
    for seed in range(4):
        yield typed_case(seed, jobs=24)


@pytest.mark.parametrize("case", range(34))
def test_master_and_dense_lp_are_the_hand_built_programs(case):
    problem, table = list(cases())[case]
    same_program(master_lp(problem), old_master_lp(problem))
    for prune in (True, False):
        cand = Candidates.build(problem, table, prune)
        pj, pm, pq = cand.upper_pairs()
        old = old_with_pairs(old_master_lp(problem), old_pair_columns(problem, cand, pj, pm, pq))
        model, X, t = space_sharing_model(problem, cand, (pj, pm, pq))
        same_program(model.compile(), old)
        assert X.shape == (problem.num_jobs, problem.num_types) and t.offset == X.size
        new_cols = pair_columns(problem, cand, pj, pm, pq)
        assert new_cols.format == "csc" and new_cols.has_sorted_indices
        same_matrix(new_cols, old_pair_columns(problem, cand, pj, pm, pq))
        # a subset of the pairs, in an order of their own (what column generation adds)
        pick = np.random.default_rng(case).permutation(pj.size)[: pj.size // 2]
        same_matrix(pair_columns(problem, cand, pj[pick], pm[pick], pq[pick]),
                    old_pair_columns(problem, cand, pj[pick], pm[pick], pq[pick]))


def linprog_optimum(lp: LinearProgram) -> float:
    """The optimum of `lp` by scipy's linprog (HiGHS inside scipy, a separate code path from
    schedopt's backends), rows split into <= and >= parts."""
    A = sp.csr_matrix(lp.A)
    upper, lower = np.isfinite(lp.row_upper), np.isfinite(lp.row_lower)
    A_ub = sp.vstack([A[upper], -A[lower]])
    b_ub = np.concatenate([lp.row_upper[upper], -lp.row_lower[lower]])
    sign = -1.0 if lp.maximize else 1.0
    res = linprog(sign * lp.c, A_ub=A_ub, b_ub=b_ub,
                  bounds=list(zip(lp.col_lower, np.where(np.isfinite(lp.col_upper),
                                                         lp.col_upper, None))), method="highs")
    assert res.status == 0
    return sign * res.fun


@pytest.mark.parametrize("seed", range(8))
def test_the_dense_model_solves_to_the_optimum_linprog_finds_on_the_reference(seed):
    problem, table = random_case(seed)
    cand = Candidates.build(problem, table, prune=False)
    pj, pm, pq = cand.upper_pairs()
    old = old_with_pairs(old_master_lp(problem), old_pair_columns(problem, cand, pj, pm, pq))
    expected = linprog_optimum(old)
    for method in ("dense", "columns"):
        outcome = max_min_fairness_packed(problem, table, method=method, prune=False)
        assert outcome.objective == pytest.approx(expected, abs=1e-7)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("noisy", [False, True])
def test_class_lp_is_the_hand_built_program(seed, noisy, monkeypatch):
    """The seed's class-level LP (exact classes, and coarse ones when every job has its own
    solo row) compiles to the program the hand-built triplets gave."""
    problem, table = typed_case(seed, jobs=30)
    if noisy:
        problem = dataclasses.replace(problem, throughput=problem.throughput * np.random.default_rng(
            seed).uniform(0.9, 1.1, problem.throughput.shape))
    built = []
    real = seed_module.class_model

    def recording(*args):
        model, y = real(*args)
        built.append((args, model.compile(), y))
        return model, y

    monkeypatch.setattr(seed_module, "class_model", recording)
    cand = Candidates.build(problem, table)
    seed_module.class_seed(problem, cand, table.job_type, Solver("highs"))
    assert len(built) == 1
    args, lp, y = built[0]
    same_program(lp, old_class_lp(*args))
    assert y.offset == lp.c.size - y.size and y.size == args[6].size

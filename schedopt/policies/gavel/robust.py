"""Robust max-min fairness: the level guaranteed for every true throughput matrix within a
relative box around the one the policy sees (issue 9; docs/perf-error.md).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import scipy.sparse as sp

from schedopt.backends.session import Solver
from schedopt.errors import PolicyError
from schedopt.core.outcome import Outcome
from schedopt.policies.gavel.blocks import (fill_leftover, per_job_rows,
                                          solve_allocation_lp)
from schedopt.policies.gavel.lp import (_lp_with_aux, _outcome, max_min_objective,
                                         normalized_throughput)
from schedopt.policies.gavel.solving import as_solver, lp_solver
from schedopt.core.problem import ThroughputProblem


def _box_check(robust: float) -> None:
    if not 0.0 <= robust < 1.0:
        raise PolicyError(f"robust is the relative half-width of the throughput box, in [0, 1); "
                          f"got {robust}")


def robust_max_min_fairness(problem: ThroughputProblem, robust: float,
                            solver: Solver | str | None = None) -> Outcome:
    """Max-min fairness guaranteed for every true matrix T' in the box (1-r) T <= T' <= (1+r) T.

    Job m's realized level under T' is s_m (T'[m] @ X[m]) / (w_m T'[m] @ q), q_j = c_j / sum(c)
    (numerator and equal-share normalizer both move with T'). It is >= t for every T' in the
    box iff sum_j min over d in [-r, r] of (1+d) T[m,j] (X[m,j] - t (w_m/s_m) q_j) >= 0, which
    is linear with one free u[m,j] per entry. Divided by w_m/s_m thr^eq_m it reads, with
    a = `normalized_throughput` and p[m,j] = T[m,j] q_j / thr^eq_m (sum_j p[m,j] = 1):

        max t  s.t.  u[m,j] <= (1 -+ r) (a[m,j] X[m,j] - p[m,j] t)   (both signs),
                     sum_j u[m,j] >= 0,   base constraints on X.

    r = 0 is the nominal LP. objective: the guaranteed level, the exact worst case over the
    box of the returned X (`worst_case_levels`, after idle GPUs are handed out, which can only
    raise it); details: guaranteed_level (the same), nominal_level (the objective at T), robust.
    """
    _box_check(robust)
    solver = lp_solver(as_solver(solver))
    a = normalized_throughput(problem) * problem.runnable
    p = problem.throughput * (problem.capacity / problem.capacity.sum())[None, :]
    p = p / p.sum(axis=1, keepdims=True)
    M, J = a.shape
    K = M * J  # columns [X (K), u (K), t (1)]
    eye = sp.identity(K, format="csr")
    corner_rows = [sp.hstack([sp.diags(-factor * a.ravel()), eye,
                              sp.csr_matrix(factor * p.reshape(K, 1))], format="csr")
                   for factor in (1.0 - robust, 1.0 + robust)]
    sum_rows = sp.hstack([sp.csr_matrix((M, K)), per_job_rows(np.ones((M, J))),
                          sp.csr_matrix((M, 1))], format="csr")
    rows = sp.vstack(corner_rows + [sum_rows], format="csr")
    lower = np.concatenate([np.full(2 * K, -np.inf), np.zeros(M)])
    upper = np.concatenate([np.zeros(2 * K), np.full(M, np.inf)])
    lp = _lp_with_aux(problem, rows, lower, upper, aux_cost=np.r_[np.zeros(K), 1.0],
                      aux_upper=np.full(K + 1, np.inf))
    lp = dataclasses.replace(lp, col_lower=np.concatenate([lp.col_lower[:K], np.full(K, -np.inf),
                                                           np.zeros(1)]))
    result, X = solve_allocation_lp(problem, lp, solver)
    if X is None:
        return _outcome(result, None, None, None, solver.name)
    X = fill_leftover(problem, X)
    guaranteed = float(np.min(worst_case_levels(problem, X, robust)))
    outcome = _outcome(result, X, guaranteed, result.bound, solver.name)
    outcome.details.update(guaranteed_level=guaranteed, nominal_level=max_min_objective(problem, X),
                           robust=robust)
    return outcome


def worst_case_levels(problem: ThroughputProblem, X: np.ndarray, robust: float) -> np.ndarray:
    """(M,) each job's smallest normalized throughput s_m (T'[m] @ X[m]) / (w_m T'[m] @ q) over
    every T' in the box [(1-r) T, (1+r) T], exactly.

    A ratio of linear functions of T' over a box: Dinkelbach's iteration, at level t every
    entry goes to the corner that lowers T'[m,j] (X[m,j] - t q_j w_m/s_m), i.e. low where the
    job holds more than t times its equal share, high elsewhere; the level falls each step
    and stops at the exact minimum after at most J + 1 steps."""
    _box_check(robust)
    T = problem.throughput
    q = problem.capacity / problem.capacity.sum()
    g = (problem.weight / problem.scale_factor)[:, None]
    X = X * problem.runnable

    def level(D):
        return np.einsum("mj,mj->m", D, X) / (g[:, 0] * (D @ q))

    t = level(T)
    for _ in range(problem.num_types + 2):
        corner = T * np.where(X - t[:, None] * g * q[None, :] > 0, 1.0 - robust, 1.0 + robust)
        new = level(corner)
        if np.all(new >= t - 1e-15 * np.abs(t)):
            return np.minimum(new, t)
        t = np.minimum(new, t)
    return t

"""Robust max-min fairness: the level guaranteed for every true throughput matrix within a
relative box around the one the policy sees (docs/perf-error.md).
"""

from __future__ import annotations

import numpy as np

from schedopt.backends.session import Solver
from schedopt.errors import PolicyError
from schedopt.core.outcome import Outcome
from schedopt.policies.gavel.blocks import fill_leftover, solve_allocation
from schedopt.policies.gavel.models import normalized_throughput, robust_model
from schedopt.policies.gavel.solving import as_solver, lp_outcome, lp_solver
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
    a = `normalized_throughput` and p[m,j] = T[m,j] q_j / thr^eq_m (sum_j p[m,j] = 1)
    (`models.robust_model`):

        max t  s.t.  u[m,j] <= (1 -+ r) (a[m,j] X[m,j] - p[m,j] t)   (both signs),
                     sum_j u[m,j] >= 0,   base constraints on X.

    r = 0 is the nominal LP. objective: the guaranteed level, the exact worst case over the
    box of the returned X (`worst_case_levels`, after idle GPUs are handed out, which can only
    raise it); details: guaranteed_level (the same), nominal_level (the objective at T), robust.
    """
    _box_check(robust)
    solver = lp_solver(as_solver(solver))
    solution, X = solve_allocation(problem, *robust_model(problem, robust), solver)
    result = solution.result
    if X is None:
        return lp_outcome(result, None, None, None, solver.name)
    X = fill_leftover(problem, X)
    guaranteed = float(np.min(worst_case_levels(problem, X, robust)))
    outcome = lp_outcome(result, X, guaranteed, result.bound, solver.name)
    nominal = np.einsum("mj,mj->m", normalized_throughput(problem) * problem.runnable, X)
    outcome.details.update(guaranteed_level=guaranteed, nominal_level=float(np.min(nominal)),
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
